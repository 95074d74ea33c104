//! `toolgate-bench corpus` and `tokens` end to end, and issue 12's targets on what they
//! measure: the corpus is made afresh in a temporary folder from the real servers
//! (server-filesystem, server-memory, mcp-server-git, mcp-server-time) and real test runners
//! (scripts/make-test-logs), then every transform runs over it; each output is checked here,
//! apart from the harness's own checks.
//!
//! Needs the peers of scripts/install-test-deps (`toolgate_testkit::deps`: the npm servers and
//! jest and vitest, the Python servers' venv, pytest in the Python venv), where scripts/test's
//! `TOOLGATE_TEST_*` say or in `tests/deps/`; without one the test fails, naming it.

#[path = "tokens/failures.rs"]
mod failures;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::process::Command;
use toolgate_core::mcp;
use toolgate_interceptors::transform::model_text;
use toolgate_llm::tokens::Encoding;
use toolgate_testkit::deps;

/// Records a missed target instead of stopping at the first, so that one run shows them all.
macro_rules! check {
    ($misses:expr, $cond:expr, $($message:tt)+) => {
        let met: bool = $cond;
        if !met {
            $misses.push(format!($($message)+));
        }
    };
}

/// Making the corpus takes about 20 s on 2 cores; this is the limit before the test fails.
const LIMIT: Duration = Duration::from_secs(150);

fn bench_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_toolgate-bench"))
}

/// Where the servers and test runners are, each checked to be there.
struct Peers {
    node: PathBuf,
    npm_dir: PathBuf,
    python: PathBuf,
    python_servers: PathBuf,
}

impl Peers {
    fn required() -> Peers {
        for bin in ["mcp-server-filesystem", "mcp-server-memory", "jest", "vitest"] {
            deps::npm_bin(bin);
        }
        for bin in ["mcp-server-git", "mcp-server-time"] {
            deps::python_server_bin(bin);
        }
        Peers {
            node: deps::node(),
            npm_dir: deps::npm_dir(),
            python: deps::python(),
            python_servers: deps::python_servers(),
        }
    }
}

/// Runs `toolgate-bench ARGS` (and through it scripts/make-test-logs) with `peers`, failing the
/// test when it fails; returns its stdout.
async fn bench(peers: &Peers, args: &[&std::ffi::OsStr]) -> String {
    let child = Command::new(bench_bin())
        .args(args)
        .env("TOOLGATE_TEST_NODE", &peers.node)
        .env("TOOLGATE_TEST_NPM_DIR", &peers.npm_dir)
        .env("TOOLGATE_TEST_PYTHON", &peers.python)
        .env("TOOLGATE_TEST_PYTHON_SERVERS", &peers.python_servers)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn toolgate-bench");
    let output = tokio::time::timeout(LIMIT, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("toolgate-bench {args:?} took more than {LIMIT:?}"))
        .expect("wait for toolgate-bench");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "toolgate-bench {args:?} failed:\n{stdout}\n{stderr}");
    stdout
}

/// One corpus item as written (only what the test reads).
#[derive(Debug, serde::Deserialize)]
struct Item {
    name: String,
    server: String,
    tool: mcp::Tool,
    result: mcp::CallToolResult,
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

fn read_corpus(dir: &Path) -> BTreeMap<String, Item> {
    let mut items = BTreeMap::new();
    for entry in std::fs::read_dir(dir).expect("the corpus folder") {
        let path = entry.expect("an entry").path();
        let item: Item = serde_json::from_value(read_json(&path))
            .unwrap_or_else(|e| panic!("{} is not a corpus item: {e}", path.display()));
        items.insert(item.name.clone(), item);
    }
    items
}

#[tokio::test]
async fn the_token_economy_targets_hold_on_the_corpus() {
    let peers = Peers::required();
    let script = deps::repo_root().join("scripts/make-test-logs");
    assert!(script.is_file(), "{} is missing", script.display());

    let dir = tempfile::tempdir().expect("temp dir");
    let corpus = dir.path().join("corpus");
    let outputs = dir.path().join("outputs");
    let report = dir.path().join("report.json");
    bench(
        &peers,
        &[
            "corpus".as_ref(),
            "--out".as_ref(),
            corpus.as_os_str(),
            "--make-test-logs".as_ref(),
            script.as_os_str(),
        ],
    )
    .await;
    let stdout = bench(
        &peers,
        &[
            "tokens".as_ref(),
            "--corpus".as_ref(),
            corpus.as_os_str(),
            "--json".as_ref(),
            report.as_os_str(),
            "--outputs".as_ref(),
            outputs.as_os_str(),
        ],
    )
    .await;
    assert!(stdout.contains("| toon |"), "a table on stdout:\n{stdout}");

    let items = read_corpus(&corpus);
    let report = read_json(&report);
    the_corpus_comes_from_every_source(&items);
    let setups = setups(&report);
    for kind in ["truncate-2000", "truncate-500", "toon", "test_filter"] {
        assert!(setups.contains_key(kind), "{kind} was not measured: {report:#}");
    }
    let mut misses = Vec::new();
    for setup in setups.keys() {
        every_output_is_a_valid_result(&items, &outputs.join(setup), setup, &mut misses);
    }
    toon_targets(&items, &report, &outputs.join("toon"), &mut misses);
    test_filter_targets(&items, &outputs.join("test_filter"), &mut misses);
    truncate_keeps_the_budget(&items, &outputs.join("truncate-500"), 500, &mut misses);
    truncate_keeps_the_budget(&items, &outputs.join("truncate-2000"), 2000, &mut misses);
    assert!(misses.is_empty(), "{} targets missed:\n- {}", misses.len(), misses.join("\n- "));
}

fn the_corpus_comes_from_every_source(items: &BTreeMap<String, Item>) {
    for server in ["filesystem", "memory", "git", "time", "shell"] {
        assert!(items.values().any(|i| i.server == server), "no item from {server}");
    }
    for log in ["shell-cargo-fail", "shell-cargo-pass", "shell-pytest-fail", "shell-pytest-pass"] {
        assert!(items.contains_key(log), "{log} is missing from the corpus");
    }
    assert!(
        items
            .values()
            .any(|i| i.tool.output_schema.is_some() && i.result.structured_content.is_some()),
        "some items have an outputSchema and structured content"
    );
}

/// The measured setups by name, with their rows by item.
fn setups(report: &Value) -> BTreeMap<String, BTreeMap<String, Value>> {
    let mut setups = BTreeMap::new();
    for setup in report["setups"].as_array().expect("setups") {
        if !setup["left_out"].is_null() {
            eprintln!("left out: {} ({})", setup["name"], setup["left_out"]);
            continue;
        }
        let rows = setup["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|row| (row["item"].as_str().expect("item").to_owned(), row.clone()))
            .collect();
        setups.insert(setup["name"].as_str().expect("name").to_owned(), rows);
    }
    setups
}

fn output(dir: &Path, item: &str) -> mcp::CallToolResult {
    let path = dir.join(format!("{item}.json"));
    serde_json::from_value(read_json(&path))
        .unwrap_or_else(|e| panic!("{} is not a CallToolResult: {e}", path.display()))
}

/// Each output parses as a `CallToolResult`, keeps `structuredContent` an object, and valid
/// against the tool's `outputSchema` when the tool declares one.
fn every_output_is_a_valid_result(
    items: &BTreeMap<String, Item>,
    dir: &Path,
    setup: &str,
    misses: &mut Vec<String>,
) {
    for item in items.values() {
        let after = output(dir, &item.name);
        let what = format!("{setup} on {}", item.name);
        let json = serde_json::to_value(&after).expect("serializes");
        let back: mcp::CallToolResult = serde_json::from_value(json.clone()).expect("parses back");
        check!(
            misses,
            serde_json::to_value(&back).unwrap() == json,
            "{what}: the JSON round trip changes it"
        );
        if let Some(structured) = &after.structured_content {
            check!(misses, structured.is_object(), "{what}: structuredContent is not an object");
        }
        let Some(schema) = &item.tool.output_schema else { continue };
        if item.result.structured_content.is_none() || after.is_error == Some(true) {
            continue;
        }
        let Some(structured) = &after.structured_content else {
            misses.push(format!(
                "{what}: structuredContent dropped, but the tool declares an outputSchema"
            ));
            continue;
        };
        let validator = jsonschema::options()
            .offline()
            .build(&Value::Object(schema.as_ref().clone()))
            .expect("the outputSchema compiles");
        let errors: Vec<String> =
            validator.iter_errors(structured).map(|e| e.to_string()).collect();
        check!(misses, errors.is_empty(), "{what}: not valid against the outputSchema: {errors:?}");
    }
}

fn tokens(text: &str) -> usize {
    Encoding::O200kBase.count(text)
}

/// TOON at least 30 % fewer tokens than compact JSON on uniform arrays of objects (both the
/// encoding and what the transform puts in the result), never more on anything.
fn toon_targets(
    items: &BTreeMap<String, Item>,
    report: &Value,
    dir: &Path,
    misses: &mut Vec<String>,
) {
    let mut tabular = Vec::new();
    for row in report["items"].as_array().expect("items") {
        if row["json"]["shape"] == "tabular" {
            let name = row["name"].as_str().expect("name");
            let (compact, toon) = (&row["json"]["compact"], &row["json"]["toon"]);
            let (compact, toon) = (compact.as_f64().unwrap(), toon.as_f64().unwrap());
            check!(misses, toon <= 0.7 * compact, "{name}: TOON {toon} vs compact JSON {compact}");
            tabular.push(name.to_owned());
        }
    }
    for expected in ["memory-create_relations", "filesystem-directory_tree-data"] {
        check!(misses, tabular.iter().any(|t| t == expected), "{expected} is tabular: {tabular:?}");
    }
    for name in &tabular {
        let after = output(dir, name);
        let toon: Vec<&str> = after
            .content
            .iter()
            .filter_map(|block| match block {
                mcp::ContentBlock::Text(t)
                    if t.meta.as_ref().and_then(|m| m.get("io.toolgate/format"))
                        == Some(&Value::from("toon")) =>
                {
                    Some(t.text.as_str())
                }
                _ => None,
            })
            .collect();
        if toon.len() != 1 {
            misses.push(format!("{name}: {} TOON blocks instead of one", toon.len()));
            continue;
        }
        let json: Value = serde_json::from_str(first_text(&items[name].result)).unwrap();
        let compact = tokens(&json.to_string());
        check!(
            misses,
            tokens(toon[0]) as f64 <= 0.7 * compact as f64,
            "{name}: the TOON block has {} tokens, compact JSON {compact}",
            tokens(toon[0])
        );
    }
    for item in items.values() {
        let before = tokens(&model_text(&item.result));
        let after = tokens(&model_text(&output(dir, &item.name)));
        check!(misses, after <= before, "toon on {}: {before} -> {after} tokens", item.name);
    }
}

fn first_text(result: &mcp::CallToolResult) -> &str {
    result
        .content
        .iter()
        .find_map(|block| match block {
            mcp::ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .expect("a text block")
}

/// The test filter at least 80 % fewer tokens on failing runs, with every failing test's
/// name and message kept. The 80 % is over all the failing runs of the corpus together: on
/// its smallest logs (a few failures among thirty tests, no colours) the failures themselves
/// are a third of the text or more, and each of those runs is only required to shrink.
/// Passing runs shrink too.
fn test_filter_targets(items: &BTreeMap<String, Item>, dir: &Path, misses: &mut Vec<String>) {
    let (mut failing, mut total_before, mut total_after) = (0, 0, 0);
    for item in items.values().filter(|i| i.server == "shell") {
        let log = first_text(&item.result);
        let after = output(dir, &item.name);
        let kept = failures::plain(&model_text(&after));
        let (before, after_tokens) = (tokens(log), tokens(&model_text(&after)));
        check!(misses, after_tokens < before, "{}: {before} -> {after_tokens} tokens", item.name);
        if item.name.contains("-pass") {
            continue;
        }
        failing += 1;
        total_before += before;
        total_after += after_tokens;
        let expected = failures::of(&item.name, log);
        check!(misses, !expected.is_empty(), "{}: no failure found in the log", item.name);
        for failure in expected {
            check!(
                misses,
                kept.contains(&failure.name),
                "{}: {:?} is missing:\n{kept}",
                item.name,
                failure.name
            );
            check!(
                misses,
                kept.contains(&failure.message),
                "{}: the message {:?} of {} is missing:\n{kept}",
                item.name,
                failure.message,
                failure.name
            );
        }
    }
    check!(misses, failing >= 4, "failing runs of at least cargo, nextest, pytest, jest");
    check!(
        misses,
        total_after as f64 <= 0.2 * total_before as f64,
        "the failing runs: {total_before} -> {total_after} tokens, less than 80 % saved"
    );
}

/// Nothing over the budget comes out of truncate.
fn truncate_keeps_the_budget(
    items: &BTreeMap<String, Item>,
    dir: &Path,
    budget: usize,
    misses: &mut Vec<String>,
) {
    for item in items.values() {
        let after = tokens(&model_text(&output(dir, &item.name)));
        check!(misses, after <= budget, "truncate at {budget} on {}: {after} tokens", item.name);
    }
}
