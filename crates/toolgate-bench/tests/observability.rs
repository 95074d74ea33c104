//! `toolgate-bench observability --quick` end to end: four toolgates (plain, metrics, traces
//! at sampling 1 and 0.01), real calls, metrics that counted them, a sink that received the
//! traces, sane JSON.
//!
//! `toolgate` and `toolgate-fixture` must sit next to `toolgate-bench`
//! (`cargo build --workspace --bins`, which CI runs before the tests).

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

#[test]
fn quick_run_measures_each_cell_and_what_it_adds_over_plain() {
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
    let json = dir.path().join("observability.json");
    let started = Instant::now();
    let output = Command::new(&bench)
        .args(["observability", "--quick", "--json"])
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
    assert!(stdout.contains("added over plain"), "the table:\n{stdout}");

    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json written")).expect("json");
    let results = report["results"].as_array().expect("results");
    let cells = ["plain", "metrics", "traces-1", "traces-0.01"];
    for cell in cells {
        for concurrency in [1, 8] {
            let row = results
                .iter()
                .find(|r| r["cell"] == cell && r["concurrency"] == concurrency)
                .unwrap_or_else(|| panic!("no row for {cell} with {concurrency} sessions"));
            assert_eq!(row["calls"], 20, "{row}");
            let number = |key: &str| row[key].as_f64().unwrap_or_else(|| panic!("{key}: {row}"));
            assert!(number("p50_ms") > 0.0, "{row}");
            assert!(number("p50_ms") <= number("p99_ms"), "{row}");
            assert!(number("calls_per_s") > 0.0, "{row}");
            let gateway = number("gateway_cpu_us_per_call");
            assert!(gateway >= 0.0 && gateway <= number("server_cpu_us_per_call"), "{row}");
        }
    }
    assert_eq!(results.len(), cells.len() * 2, "no other rows");
    // Every call the metrics toolgate was sent, warm-ups included (checked by the harness too).
    let sent: u64 = results
        .iter()
        .filter(|r| r["cell"] == "metrics")
        .map(|r| r["calls"].as_u64().expect("calls") + r["warmup_calls"].as_u64().expect("w"))
        .sum();
    assert_eq!(report["settings"]["counted_by_metrics"], sent, "{}", report["settings"]);
    let exports = report["exports"].as_array().expect("exports");
    let traced = |cell: &str| {
        exports.iter().find(|e| e["cell"] == cell).unwrap_or_else(|| panic!("{cell}: {exports:?}"))
    };
    assert!(traced("traces-1")["exports"].as_u64().is_some_and(|n| n > 0), "{exports:?}");
    assert_eq!(traced("traces-1")["calls"], sent, "{exports:?}");
    let _ = traced("traces-0.01");
    let added = report["added"].as_array().expect("added");
    assert_eq!(added.len(), 6, "three cells against plain, at 1 and 8 sessions: {added:?}");
    assert!(added.iter().all(|a| a["cell"] != "plain"), "{added:?}");
}
