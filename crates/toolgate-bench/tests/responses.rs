//! `toolgate-bench responses --quick` end to end: toolgate's `/v1/responses` and the fake
//! model called directly, with and without a hosted MCP call, real processes, sane JSON.
//!
//! `toolgate` and `toolgate-fixture` must sit next to `toolgate-bench`
//! (`cargo build --workspace --bins`, which CI runs before the tests).

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

#[test]
fn quick_run_measures_every_cell_and_what_toolgate_adds() {
    let bench = PathBuf::from(env!("CARGO_BIN_EXE_toolgate-bench"));
    for name in ["toolgate", "toolgate-fixture"] {
        let binary = bench.with_file_name(name);
        assert!(
            binary.is_file(),
            "{} is missing: run `cargo build --workspace --bins` first",
            binary.display()
        );
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("responses.json");
    let started = Instant::now();
    let output = Command::new(&bench)
        .args(["responses", "--quick", "--json"])
        .arg(&json)
        .output()
        .expect("run toolgate-bench");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "exit {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    assert!(started.elapsed() < Duration::from_secs(60), "took {:?}", started.elapsed());
    assert!(stdout.contains("added by toolgate"), "the table:\n{stdout}");

    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json written")).expect("json");
    let settings = &report["settings"];
    assert_eq!(settings["model_dialect"], "openai-responses", "{settings}");
    assert!(settings["toolgate_peak_rss_kib"].as_u64().is_some_and(|kib| kib > 0), "{settings}");
    let results = report["results"].as_array().expect("results");
    let cells = ["direct", "toolgate", "toolgate+store", "direct+mcp", "toolgate+mcp"];
    for cell in cells {
        for concurrency in [1, 8] {
            let row = results
                .iter()
                .find(|r| r["cell"] == cell && r["concurrency"] == concurrency)
                .unwrap_or_else(|| panic!("no row for {cell} with {concurrency} callers"));
            assert_eq!(row["calls"], 20, "{row}");
            let number = |key: &str| row[key].as_f64().unwrap_or_else(|| panic!("{key}: {row}"));
            assert!(number("p50_ms") > 0.0, "{row}");
            assert!(number("p50_ms") <= number("p99_ms"), "{row}");
            assert!(number("p99_ms") <= number("max_ms"), "{row}");
            assert!(number("calls_per_s") > 0.0, "{row}");
            let mcp = if cell.ends_with("+mcp") { 1 } else { 0 };
            assert_eq!(row["mcp_calls_per_request"], mcp, "{row}");
            assert_eq!(row["model_calls_per_request"], mcp + 1, "{row}");
            if cell.starts_with("toolgate") {
                let gateway = number("gateway_cpu_us_per_call");
                assert!(gateway >= 0.0 && gateway <= number("server_cpu_us_per_call"), "{row}");
            } else {
                assert!(row.get("gateway_cpu_us_per_call").is_none(), "no gateway: {row}");
            }
        }
    }
    assert_eq!(results.len(), cells.len() * 2, "no other rows");
    // Every request reached the model as often as its cell says (checked by the harness too).
    let warmups: u64 = results.iter().map(|r| r["warmup_requests"].as_u64().expect("w")).sum();
    assert!(warmups > 0, "warm-ups ran");
    let expected: u64 = results
        .iter()
        .map(|r| {
            let requests =
                r["calls"].as_u64().expect("calls") + r["warmup_requests"].as_u64().expect("w");
            requests * r["model_calls_per_request"].as_u64().expect("model calls")
        })
        .sum();
    assert_eq!(settings["model_requests"], expected, "{settings}");
    let added = report["added"].as_array().expect("added");
    let pairs: Vec<(&str, &str)> = added
        .iter()
        .filter(|a| a["concurrency"] == 1)
        .map(|a| (a["cell"].as_str().expect("cell"), a["baseline"].as_str().expect("baseline")))
        .collect();
    assert_eq!(
        pairs,
        [
            ("toolgate", "direct"),
            ("toolgate+store", "direct"),
            ("toolgate+store", "toolgate"),
            ("toolgate+mcp", "direct+mcp")
        ]
    );
    assert_eq!(added.len(), 8, "each pair at 1 and 8 callers");
    assert!(report["legend"]["added"].is_string(), "{}", report["legend"]);
}
