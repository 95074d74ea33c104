//! `toolgate-bench replicas --quick` end to end: every deployment (one replica called
//! directly; 1, 2 and 4 behind HAProxy; 2 sharing a Redis) started, real calls through each,
//! sane JSON, nothing left running.
//!
//! `toolgate` and `toolgate-fixture` must sit next to `toolgate-bench`
//! (`cargo build --workspace --bins`, which CI runs before the tests); HAProxy and Redis come
//! from scripts/install-test-deps.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

#[test]
fn quick_run_measures_every_deployment_against_direct() {
    let bench = PathBuf::from(env!("CARGO_BIN_EXE_toolgate-bench"));
    for name in ["toolgate", "toolgate-fixture"] {
        let binary = bench.with_file_name(name);
        assert!(binary.is_file(), "{} is missing: run `cargo build --workspace --bins`", name);
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("replicas.json");
    let output = Command::new(&bench)
        .args(["replicas", "--quick", "--concurrency", "1,4", "--json"])
        .arg(&json)
        .output()
        .expect("run toolgate-bench");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "exit {}\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("vs direct"), "the table:\n{stdout}");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json written")).expect("json");
    let results = report["results"].as_array().expect("results");
    let deployments = [("direct", 1), ("lb-1", 1), ("lb-2", 2), ("lb-4", 4), ("lb-2-redis", 2)];
    for (name, replicas) in deployments {
        for concurrency in [1, 4] {
            let row = results
                .iter()
                .find(|r| r["deployment"]["name"] == name && r["concurrency"] == concurrency)
                .unwrap_or_else(|| panic!("no row for {name} with {concurrency} sessions"));
            assert_eq!(row["deployment"]["replicas"], replicas, "{row}");
            assert_eq!(row["calls"], 20, "{row}");
            let number = |key: &str| row[key].as_f64().unwrap_or_else(|| panic!("{key}: {row}"));
            assert!(number("p50_ms") > 0.0 && number("p50_ms") <= number("p99_ms"), "{row}");
            assert!(number("calls_per_s") > 0.0, "{row}");
        }
    }
    assert_eq!(results.len(), deployments.len() * 2, "no other rows");
    let versus = report["versus_direct"].as_array().expect("versus_direct");
    assert_eq!(versus.len(), 8, "four deployments against direct, at 1 and 4 sessions");
    // Every replica's memory was read.
    let rss = report["settings"]["peak_rss_kib"].as_array().expect("peak RSS");
    assert!(rss.iter().all(|pair| pair[1].as_u64().is_some_and(|kib| kib > 0)), "{rss:?}");
}
