//! The MCP servers of the corpus and what each is asked: `server-filesystem` and
//! `server-memory` (npm, run with node), `mcp-server-git` and `mcp-server-time` (PyPI, from
//! their venv). Each is reached through toolgate's own upstream layer
//! ([`toolgate_upstream::Upstream`]), as the gateway reaches it, and every call's result is
//! one corpus item.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};
use toolgate_config::{FixedEnvironment, Format, ServerConfig};
use toolgate_core::mcp;
use toolgate_upstream::{CallOptions, Upstream};

use super::{Item, graph, tree};

/// Where the servers are installed.
#[derive(Debug, Clone)]
pub(crate) struct Installed {
    /// `node`.
    pub(crate) node: PathBuf,
    /// tests/deps/npm (its node_modules has the npm servers).
    pub(crate) npm_dir: PathBuf,
    /// tests/deps/python-servers/venv (its bin has mcp-server-git and mcp-server-time).
    pub(crate) python_servers: PathBuf,
}

/// One server and the calls the corpus makes to it.
struct Script {
    /// Its name in the corpus (the `server` of its items).
    server: &'static str,
    /// How it is started.
    config: ServerConfig,
    /// (item name, tool, arguments), in order (later calls can depend on earlier ones).
    calls: Vec<(&'static str, &'static str, Value)>,
}

/// Calls every server as its script says; `tree` is the folder `server-filesystem` may
/// read, `repo` the git repository, `memory` the file `server-memory` keeps its graph in.
pub(crate) async fn run(
    installed: &Installed,
    tree_root: &Path,
    repo: &Path,
    memory: &Path,
) -> anyhow::Result<Vec<Item>> {
    let scripts = [
        filesystem(installed, tree_root)?,
        memory_script(installed, memory)?,
        git(installed, repo)?,
        time(installed)?,
    ];
    let mut items = Vec::new();
    for script in scripts {
        items.extend(play(script).await?);
    }
    Ok(items)
}

async fn play(script: Script) -> anyhow::Result<Vec<Item>> {
    let upstream = Upstream::connect(&script.config)
        .await
        .with_context(|| format!("cannot start the {} server", script.server))?;
    let outcome = calls(&upstream, &script).await;
    upstream.shutdown().await;
    outcome
}

async fn calls(upstream: &Upstream, script: &Script) -> anyhow::Result<Vec<Item>> {
    let source = match upstream.info().and_then(|info| info.server) {
        Some(server) => format!("{} {}", server.name, server.version),
        None => script.server.to_owned(),
    };
    let mut items = Vec::new();
    for (name, tool, arguments) in &script.calls {
        let definition = upstream
            .tool(tool)
            .with_context(|| format!("the {} server lists no tool {tool}", script.server))?;
        let arguments = arguments.as_object().cloned().unwrap_or_default();
        let params =
            mcp::CallToolRequestParams::new(tool.to_string()).with_arguments(arguments.clone());
        let result = upstream
            .call_tool(params, &CallOptions::default())
            .await
            .with_context(|| format!("{} {tool} failed", script.server))?;
        if result.is_error == Some(true) {
            bail!(
                "{} {tool} answered with an error: {}",
                script.server,
                toolgate_interceptors::transform::model_text(&result)
            );
        }
        items.push(Item {
            name: format!("{}-{name}", script.server),
            source: format!("{source}, {tool}"),
            server: script.server.to_owned(),
            tool: definition.as_ref().clone(),
            arguments,
            result,
        });
    }
    Ok(items)
}

/// A stdio server as a `[servers.NAME]` table of `toolgate.toml` would have it, through
/// toolgate's own config loader.
fn stdio(
    name: &str,
    command: &Path,
    args: Vec<String>,
    env: &[(&str, String)],
) -> anyhow::Result<ServerConfig> {
    let mut table = toml::Table::new();
    table.insert("command".into(), command.display().to_string().into());
    table.insert("args".into(), args.into());
    let env: toml::Table = env.iter().map(|(k, v)| (k.to_string(), v.clone().into())).collect();
    table.insert("env".into(), env.into());
    table.insert("startup_timeout".into(), "30s".into());
    table.insert("timeout".into(), "30s".into());
    let mut servers = toml::Table::new();
    servers.insert(name.to_owned(), table.into());
    let mut document = toml::Table::new();
    document.insert("servers".into(), servers.into());
    let text = toml::to_string(&document)?;
    let config =
        toolgate_config::parse_str(&text, Format::Toml, Path::new("."), &FixedEnvironment::new())
            .map_err(|errors| anyhow::anyhow!("the {name} server's config: {errors}"))?;
    config.servers.into_iter().next().context("the config has the server")
}

/// The entry point of an npm server, checked to exist.
fn npm_server(installed: &Installed, package: &str) -> anyhow::Result<String> {
    let path = installed
        .npm_dir
        .join("node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    if !path.is_file() {
        bail!("{} is missing: run scripts/install-test-deps", path.display());
    }
    Ok(path.display().to_string())
}

fn filesystem(installed: &Installed, root: &Path) -> anyhow::Result<Script> {
    let server = npm_server(installed, "server-filesystem")?;
    let at = |path: &str| {
        if path.is_empty() {
            root.display().to_string()
        } else {
            root.join(path).display().to_string()
        }
    };
    Ok(Script {
        server: "filesystem",
        config: stdio("filesystem", &installed.node, vec![server, at("")], &[])?,
        calls: vec![
            ("list_directory", "list_directory", json!({"path": at("src")})),
            ("list_directory-data", "list_directory", json!({"path": at("data/2025")})),
            (
                "list_directory_with_sizes",
                "list_directory_with_sizes",
                json!({"path": at("data/2024"), "sortBy": "size"}),
            ),
            ("directory_tree", "directory_tree", json!({"path": at("")})),
            // A folder of files only: a uniform array of {name, type}.
            ("directory_tree-data", "directory_tree", json!({"path": at("data/2024")})),
            ("search_files", "search_files", json!({"path": at(""), "pattern": "**/*.rs"})),
            ("read_text_file", "read_text_file", json!({"path": at(tree::LARGE_SOURCE)})),
            (
                "read_text_file-small",
                "read_text_file",
                json!({"path": at("src/latency/machine.rs")}),
            ),
            ("get_file_info", "get_file_info", json!({"path": at("Cargo.toml")})),
        ],
    })
}

fn memory_script(installed: &Installed, memory: &Path) -> anyhow::Result<Script> {
    let server = npm_server(installed, "server-memory")?;
    let env = [("MEMORY_FILE_PATH", memory.display().to_string())];
    Ok(Script {
        server: "memory",
        config: stdio("memory", &installed.node, vec![server], &env)?,
        calls: vec![
            ("create_entities", "create_entities", graph::entities()),
            ("create_relations", "create_relations", graph::relations()),
            ("read_graph", "read_graph", json!({})),
            ("search_nodes", "search_nodes", json!({"query": "toolgate"})),
            (
                "open_nodes",
                "open_nodes",
                json!({"names": ["toolgate-upstream", "toolgate-interceptors", "rmcp", "policy"]}),
            ),
        ],
    })
}

fn git(installed: &Installed, repo: &Path) -> anyhow::Result<Script> {
    let command = installed.python_servers.join("bin/mcp-server-git");
    let repo = repo.display().to_string();
    Ok(Script {
        server: "git",
        config: stdio("git", &command, Vec::new(), &[])?,
        calls: vec![
            ("git_status", "git_status", json!({"repo_path": repo})),
            ("git_log", "git_log", json!({"repo_path": repo, "max_count": 20})),
            ("git_diff", "git_diff", json!({"repo_path": repo, "target": "HEAD~4"})),
            ("git_diff_staged", "git_diff_staged", json!({"repo_path": repo})),
            ("git_show", "git_show", json!({"repo_path": repo, "revision": "HEAD"})),
        ],
    })
}

fn time(installed: &Installed) -> anyhow::Result<Script> {
    let command = installed.python_servers.join("bin/mcp-server-time");
    Ok(Script {
        server: "time",
        config: stdio("time", &command, vec!["--local-timezone".into(), "Etc/UTC".into()], &[])?,
        calls: vec![
            ("get_current_time", "get_current_time", json!({"timezone": "Europe/Paris"})),
            (
                "convert_time",
                "convert_time",
                json!({"source_timezone": "America/New_York", "time": "16:30", "target_timezone": "Asia/Tokyo"}),
            ),
        ],
    })
}
