//! `toolgate-bench startup --quick` and `scale --quick` end to end, against the `toolgate`
//! binary next to `toolgate-bench` in the target folder (CI builds every binary before the
//! tests; locally: `cargo build -p toolgate`).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;
use tokio::process::Command;

/// A quick run takes a few seconds; this is the limit before the test fails.
const LIMIT: Duration = Duration::from_secs(90);

fn bench_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_toolgate-bench"))
}

fn toolgate_bin() -> PathBuf {
    let path = bench_bin().with_file_name("toolgate");
    assert!(
        path.is_file(),
        "{} is missing: build it first (`cargo build -p toolgate`)",
        path.display()
    );
    path
}

/// Runs `toolgate-bench ARGS --json <tmp> --toolgate <toolgate>` and returns the JSON.
async fn run_bench(args: &[&str]) -> Value {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("report.json");
    let child = Command::new(bench_bin())
        .args(args)
        .arg("--json")
        .arg(&json)
        .arg("--toolgate")
        .arg(toolgate_bin())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn toolgate-bench");
    let pid = Pid::from_raw(child.id().expect("running") as i32);
    let output = match tokio::time::timeout(LIMIT, child.wait_with_output()).await {
        Ok(output) => output.expect("wait for toolgate-bench"),
        Err(_) => {
            // SIGTERM lets the bench stop the gateways it started; kill_on_drop does the rest.
            let _ = kill(pid, Signal::SIGTERM);
            panic!("toolgate-bench {args:?} took more than {LIMIT:?}");
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "toolgate-bench {args:?} failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("| "), "a table on stdout:\n{stdout}");
    read_json(&json)
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("the JSON report is written");
    serde_json::from_str(&text).expect("the report is JSON")
}

fn number(value: &Value, path: &str) -> f64 {
    let mut at = value;
    for key in path.split('.') {
        at = &at[key];
    }
    at.as_f64().unwrap_or_else(|| panic!("{path} is not a number in {value:#}"))
}

#[tokio::test]
async fn startup_quick_reports_sane_times() {
    let report = run_bench(&["startup", "--quick"]).await;
    assert_eq!(report["benchmark"], "startup");
    let cases = report["cases"].as_array().expect("cases");
    let shape: Vec<(u64, u64)> = cases
        .iter()
        .map(|case| {
            (case["upstreams"].as_u64().unwrap(), case["slowest_delay_ms"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(shape, [(1, 100), (5, 180), (1, 0), (5, 0)], "the quick cases");
    for case in cases {
        let serving = number(case, "serving_ms.median");
        let ready = number(case, "ready_ms.median");
        let slowest = number(case, "slowest_delay_ms");
        assert!(serving > 0.0 && serving <= ready, "serving before ready: {case:#}");
        assert!(ready >= slowest, "no server can be skipped: {case:#}");
        assert!(ready < 30_000.0, "ready within 30 s: {case:#}");
        assert_eq!(case["samples"].as_array().map(Vec::len), Some(1), "one run: {case:#}");
        assert!(number(&case["samples"][0], "tools") > 0.0);
    }
    // Whether start-up follows the slowest server rather than the sum is a timing, which a
    // loaded CI machine cannot judge (process start-up alone passed a second there); the
    // harness reports it (`meets_target`, docs/benchmarks.md) and this checks only that the
    // verdict agrees with the numbers it is drawn from.
    for case in cases {
        let overhead = number(case, "overhead_ms.median");
        let delayed = number(case, "slowest_delay_ms") > 0.0;
        let expected = if delayed { Value::Bool(overhead <= 50.0) } else { Value::Null };
        assert_eq!(case["meets_target"], expected, "the verdict of {case:#}");
        assert!(
            (number(case, "ready_ms.median") - number(case, "slowest_delay_ms") - overhead).abs()
                < 0.01,
            "overhead = ready - slowest: {case:#}"
        );
    }
}

#[tokio::test]
async fn scale_quick_reports_sane_numbers() {
    let report = run_bench(&["scale", "--quick"]).await;
    assert_eq!(report["benchmark"], "scale");
    let tools = &report["tools"];
    assert_eq!(number(tools, "tools_exposed"), 1000.0);
    assert!(number(tools, "serving_ms") > 0.0);
    assert!(number(tools, "first_list_ms") > 0.0);
    assert!(number(tools, "list_ms.median") > 0.0);
    assert!(number(tools, "list_bytes") > 1000.0 * 20.0, "a thousand tools take room");
    for rss in ["rss_kib_after_start", "rss_kib_after_listing", "one_upstream_rss_kib"] {
        let kib = number(tools, rss);
        assert!((1024.0..4.0 * 1024.0 * 1024.0).contains(&kib), "{rss} = {kib} KiB");
    }
    for side in ["call_one_upstream", "call_all_upstreams"] {
        assert_eq!(number(&tools[side], "calls"), 50.0, "{side}");
        let median = number(&tools[side], "median_us");
        assert!(median > 0.0 && median < 1e6, "{side}: median {median} µs");
    }
    assert_eq!(tools["call_all_upstreams"]["tool"], "s05__t0050");

    let sessions = &report["sessions"];
    assert_eq!(number(sessions, "target_kib_per_session"), 8.0);
    assert!(number(sessions, "open_files_limit") >= 50.0);
    let runs = sessions["runs"].as_array().expect("runs");
    let counts: Vec<u64> = runs.iter().map(|run| run["sessions"].as_u64().unwrap()).collect();
    assert_eq!(counts, [20, 50], "the quick counts");
    for run in runs {
        for server in ["toolgate", "direct"] {
            let measured = &run[server];
            let per_session = number(measured, "kib_per_session");
            assert!(
                (0.0..10_240.0).contains(&per_session),
                "{server}: {per_session} KiB per session"
            );
            assert!(number(measured, "rss_kib_before") > 1024.0, "{server}");
            assert!(number(measured, "open_s") > 0.0, "{server}");
            assert!(number(measured, "open_ms_per_session") > 0.0, "{server}");
            assert!(measured["checkpoints"].as_array().is_some_and(|c| c.len() >= 2), "{server}");
            // The sessions share a few connections: the server holds no socket per session.
            let files = number(measured, "open_files_after");
            assert!(files < 200.0, "{server}: {files} open files for {} sessions", run["sessions"]);
        }
    }
}
