//! `toolgate-bench upstream --quick` end to end: real servers, real calls through toolgate's
//! upstream client, sane JSON, and fewer connections with `pool` than without.
//!
//! `toolgate-fixture` must sit next to `toolgate-bench` (`cargo build --workspace --bins`).
//! The TypeScript and Python servers come from scripts/install-test-deps
//! (`toolgate_testkit::deps`); without them the test fails, naming what is missing.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;
use toolgate_testkit::deps;

#[test]
fn quick_run_measures_each_server_with_and_without_pool() {
    let bench = PathBuf::from(env!("CARGO_BIN_EXE_toolgate-bench"));
    deps::npm_bin("mcp-server-everything");
    let servers = ["rmcp", "rmcp-nagle", "typescript", "python"];
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("upstream.json");
    let output = Command::new(&bench)
        .args(["upstream", "--quick", "--servers", &servers.join(","), "--json"])
        .arg(&json)
        .arg("--npm-dir")
        .arg(deps::npm_dir())
        .arg("--node")
        .arg(deps::node())
        .arg("--python")
        .arg(deps::python())
        .output()
        .expect("run toolgate-bench");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "exit {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );

    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json written")).expect("json");
    let results = report["results"].as_array().expect("results");
    for server in &servers {
        let row = |pool: bool| {
            results
                .iter()
                .find(|r| r["server"] == *server && r["pool"] == pool && r["tool"] == "echo")
                .unwrap_or_else(|| panic!("no row for {server} with pool = {pool}:\n{stdout}"))
        };
        let (kept, single) = (row(true), row(false));
        for row in [kept, single] {
            assert_eq!(row["calls"], 20, "{row}");
            assert_eq!(row["concurrency"], 1, "{row}");
            let p50 = row["p50_ms"].as_f64().expect("p50");
            assert!(p50 > 0.0 && p50 <= row["max_ms"].as_f64().expect("max"), "{row}");
        }
        let connections = |row: &Value| row["connections"].as_u64().expect("connections");
        assert!(
            connections(kept) < connections(single),
            "{server}: pool kept no connection alive:\n{stdout}"
        );
    }
}
