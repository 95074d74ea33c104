//! `toolgate-bench corpus --out DIR`: the token economy corpus, made from real things (see
//! docs/token-economy.md): what real MCP servers answer when asked about a directory tree, a
//! knowledge graph, a git repository and the time, and what real test runners print. Each
//! item is one JSON file, `{name, source, server, tool, arguments, result}`: `tool` is the
//! tool's definition as its server lists it (with its `outputSchema` when it declares one),
//! `result` the `CallToolResult` as toolgate received it.
//!
//! - [`servers`]: `server-filesystem`, `server-memory`, `mcp-server-git`, `mcp-server-time`,
//!   reached through toolgate's upstream layer;
//! - [`tree`], [`repo`], [`graph`]: what they are asked about, made fresh in a temporary
//!   folder;
//! - [`logs`]: test-runner logs from `scripts/make-test-logs`, as a pretend shell tool's
//!   results.

mod graph;
pub(crate) mod logs;
mod repo;
mod servers;
mod tree;

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};
use toolgate_core::mcp;

/// Options of `corpus`.
#[derive(Debug, clap::Args)]
pub(crate) struct CorpusArgs {
    /// Where to write the items (created if missing; the `*.json` files already there are
    /// removed first).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    #[command(flatten)]
    sources: Sources,
}

/// Where the servers and the test-runner logs come from (shared with `tokens`, which makes a
/// corpus when it is given none).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Sources {
    /// tests/deps/npm, where scripts/install-test-deps put server-filesystem and
    /// server-memory.
    #[arg(long, env = "TOOLGATE_TEST_NPM_DIR", value_name = "DIR")]
    npm_dir: Option<PathBuf>,
    /// tests/deps/python-servers/venv, where scripts/install-test-deps put mcp-server-git and
    /// mcp-server-time.
    #[arg(long, env = "TOOLGATE_TEST_PYTHON_SERVERS", value_name = "DIR")]
    python_servers: Option<PathBuf>,
    /// The node that runs the npm servers.
    #[arg(long, env = "TOOLGATE_TEST_NODE", default_value = "node", value_name = "PATH")]
    node: PathBuf,
    /// Take the test-runner logs (`<runner>-<pass|fail>[-variant].txt`) from DIR instead of
    /// making them.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["make_test_logs", "no_test_logs"])]
    test_logs: Option<PathBuf>,
    /// The script that makes the test-runner logs by running real test runners [default:
    /// scripts/make-test-logs of the repository around the current folder, if there is one]
    #[arg(long, value_name = "PATH", conflicts_with = "no_test_logs")]
    make_test_logs: Option<PathBuf>,
    /// Leave the test-runner logs out.
    #[arg(long)]
    no_test_logs: bool,
}

/// One corpus item: a tool's result and where it came from.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Item {
    /// Unique in the corpus: `<server>-<call>`.
    pub(crate) name: String,
    /// The program that answered, its version, and the tool.
    pub(crate) source: String,
    /// The server's name in the corpus (`filesystem`, `memory`, `git`, `time`, `shell`).
    pub(crate) server: String,
    /// The tool's definition, as listed.
    pub(crate) tool: mcp::Tool,
    /// The arguments it was called with.
    pub(crate) arguments: mcp::JsonObject,
    /// What it answered.
    pub(crate) result: mcp::CallToolResult,
}

pub(crate) async fn run(args: CorpusArgs) -> anyhow::Result<()> {
    let items = make(&args.sources).await?;
    write(&args.out, &items)?;
    println!("{} items in {}", items.len(), args.out.display());
    for item in &items {
        let bytes = serde_json::to_string(&item.result)?.len();
        println!("  {:<40} {:>8} B  {}", item.name, bytes, item.source);
    }
    Ok(())
}

/// Makes the corpus: starts the servers, asks them, makes (or reads) the test-runner logs.
pub(crate) async fn make(sources: &Sources) -> anyhow::Result<Vec<Item>> {
    let needed = |value: &Option<PathBuf>, option: &str, var: &str| {
        value.clone().with_context(|| {
            format!("{option} (or ${var}) is needed: run scripts/install-test-deps and give it")
        })
    };
    let installed = servers::Installed {
        node: sources.node.clone(),
        npm_dir: needed(&sources.npm_dir, "--npm-dir", "TOOLGATE_TEST_NPM_DIR")?,
        python_servers: needed(
            &sources.python_servers,
            "--python-servers",
            "TOOLGATE_TEST_PYTHON_SERVERS",
        )?,
    };
    let work = tempfile::Builder::new()
        .prefix("toolgate-corpus-")
        .tempdir()
        .context("cannot make a temporary folder")?;
    let tree_root = work.path().join("bench");
    let repo_root = work.path().join("units");
    for dir in [&tree_root, &repo_root] {
        std::fs::create_dir(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    tree::write(&tree_root)?;
    repo::write(&repo_root).await?;

    let logs = async {
        match test_logs(sources, work.path()).await? {
            Some(dir) => logs::read(&dir),
            None => Ok(Vec::new()),
        }
    };
    let memory = work.path().join("memory.jsonl");
    let answers = servers::run(&installed, &tree_root, &repo_root, &memory);
    let (logs, answers) = tokio::join!(logs, answers);
    let mut items = answers?;
    let logs = logs?;
    if logs.is_empty() && !sources.no_test_logs {
        eprintln!("toolgate-bench corpus: no test-runner logs (no scripts/make-test-logs found)");
    }
    items.extend(logs);
    Ok(items)
}

/// The folder with the test-runner logs: as given, or made by the script in `work`; `None`
/// when there are none to have.
async fn test_logs(args: &Sources, work: &Path) -> anyhow::Result<Option<PathBuf>> {
    if args.no_test_logs {
        return Ok(None);
    }
    if let Some(dir) = &args.test_logs {
        return Ok(Some(dir.clone()));
    }
    let script = match &args.make_test_logs {
        Some(script) => script.clone(),
        None => {
            let here = std::env::current_dir().context("cannot read the current folder")?;
            match logs::find_script(&here) {
                Some(script) => script,
                None => return Ok(None),
            }
        }
    };
    let out = work.join("logs");
    std::fs::create_dir(&out).with_context(|| format!("cannot create {}", out.display()))?;
    logs::make(&script, &out).await?;
    Ok(Some(out))
}

/// Writes `items` into `out`, one file each, after removing the `*.json` already there.
fn write(out: &Path, items: &[Item]) -> anyhow::Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    for entry in std::fs::read_dir(out)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "json") {
            std::fs::remove_file(&path)
                .with_context(|| format!("cannot remove {}", path.display()))?;
        }
    }
    for item in items {
        let path = out.join(format!("{}.json", item.name));
        let text = serde_json::to_string_pretty(item)?;
        std::fs::write(&path, text + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// Every item in `dir`, by name.
pub(crate) fn read(dir: &Path) -> anyhow::Result<Vec<Item>> {
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read the corpus in {}", dir.display()))?;
    let mut items = Vec::new();
    for entry in entries {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let item: Item = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a corpus item", path.display()))?;
        items.push(item);
    }
    if items.is_empty() {
        bail!(
            "no corpus items in {} (make them with `toolgate-bench corpus --out DIR`)",
            dir.display()
        );
    }
    items.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(items)
}

/// Writes `text` at `path` under `root`, making the folders it needs.
fn put(root: &Path, path: &str, text: &str) -> anyhow::Result<()> {
    let path = root.join(path);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
}
