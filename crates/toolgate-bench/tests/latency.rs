//! `toolgate-bench latency --quick` end to end: real processes, real calls, sane JSON.
//!
//! The `toolgate` binary must sit next to `toolgate-bench` (`cargo build --workspace --bins`,
//! which CI runs before the tests).

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use tokio::time::Instant;

use serde_json::Value;

#[test]
fn quick_run_measures_every_path() {
    let bench = PathBuf::from(env!("CARGO_BIN_EXE_toolgate-bench"));
    let toolgate = bench.with_file_name("toolgate");
    assert!(
        toolgate.is_file(),
        "{} is missing: run `cargo build --workspace --bins` first",
        toolgate.display()
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("latency.json");
    let started = Instant::now();
    let output = Command::new(&bench)
        .args(["latency", "--quick", "--skip-peers", "--json"])
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
    assert!(stdout.contains("toolgate-http-stdio-full"), "the table:\n{stdout}");

    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json written")).expect("json");
    assert!(report["machine"]["cores"].as_u64().is_some_and(|n| n > 0), "{}", report["machine"]);
    let results = report["results"].as_array().expect("results");
    let mut expected = vec!["direct-stdio".to_owned(), "direct-http".to_owned()];
    for transports in ["http-stdio", "http-http", "stdio-stdio", "stdio-http"] {
        for pipeline in ["bare", "default", "full"] {
            expected.push(format!("toolgate-{transports}-{pipeline}"));
        }
    }
    for path in &expected {
        for concurrency in [1, 8] {
            let row = results
                .iter()
                .find(|r| r["path"] == path.as_str() && r["concurrency"] == concurrency)
                .unwrap_or_else(|| panic!("no row for {path} with {concurrency} sessions"));
            assert_eq!(row["payload"], "small");
            assert_eq!(row["calls"], 20, "{row}");
            let number = |key: &str| row[key].as_f64().unwrap_or_else(|| panic!("{key}: {row}"));
            assert!(number("p50_ms") > 0.0, "{row}");
            assert!(number("p50_ms") <= number("p90_ms"), "{row}");
            assert!(number("p99_ms") <= number("max_ms"), "{row}");
            assert!(number("max_ms") < 10_000.0, "{row}");
            assert!(number("calls_per_s") > 0.0, "{row}");
            if let Some(rest) = path.strip_prefix("toolgate-") {
                // toolgate-<front>-<upstream>-<pipeline>: compared with direct-<upstream>.
                let upstream = rest.split('-').nth(1).expect("an upstream transport");
                assert_eq!(row["vs_direct"]["baseline"], format!("direct-{upstream}"), "{row}");
                // The gateway's own CPU: part of what every serving process used.
                let gateway = number("gateway_cpu_us_per_call");
                assert!(gateway >= 0.0 && gateway <= number("server_cpu_us_per_call"), "{row}");
            } else {
                assert!(row.get("gateway_cpu_us_per_call").is_none(), "no gateway: {row}");
            }
        }
    }
    assert_eq!(results.len(), expected.len() * 2, "no other rows");
    let paths = report["paths"].as_array().expect("paths");
    assert!(
        paths.iter().all(|p| p["peak_rss_kib"].as_u64().is_some_and(|kib| kib > 0)),
        "every front's peak memory: {paths:?}"
    );
    assert!(stdout.contains("gw µs"), "the gateway's CPU column:\n{stdout}");
    assert!(report["legend"]["gateway_cpu_us_per_call"].is_string(), "{}", report["legend"]);
    assert!(report.get("pinning").is_none(), "not pinned without --pin");
}

#[test]
fn pinning_puts_each_side_on_its_cpus_or_says_why_not() {
    let bench = PathBuf::from(env!("CARGO_BIN_EXE_toolgate-bench"));
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("latency.json");
    let output = Command::new(&bench)
        .args(["latency", "--quick", "--pin", "--keep-alive", "--concurrency", "1,2"])
        .args(["--only", "direct-stdio,direct-http,toolgate-http-stdio-default", "--json"])
        .arg(&json)
        .output()
        .expect("run toolgate-bench");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "exit {}\n{stdout}\n{stderr}", output.status);
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json written")).expect("json");
    // On a machine (or a cpuset) of one CPU, nothing is measured and the report says why.
    if let Some(why) = report["pinning"]["skipped"].as_str() {
        assert!(why.contains("one CPU only"), "{why}");
        assert!(stdout.contains("pinned section skipped: "), "{stdout}");
        return;
    }
    let pinning = &report["pinning"];
    assert_eq!(pinning["client_cpus"].as_array().map(Vec::len), Some(1), "{pinning}");
    assert!(!stdout.contains("NOT as planned"), "{stdout}");
    for side in ["client_seen", "servers_seen"] {
        assert_eq!(pinning[side].as_array().map(Vec::len), Some(1), "one CPU list: {pinning}");
    }
    assert_eq!(pinning["target_sessions"], 2, "32 not measured: the most that were");
    let throughput = pinning["throughput"].as_array().expect("throughput");
    assert_eq!(throughput.len(), 1, "{pinning}");
    assert_eq!(throughput[0]["path"], "toolgate-http-stdio-default");
    assert_eq!(throughput[0]["baseline"], "direct-stdio");
    assert!(stdout.contains("pinned throughput at 2 session(s)"), "{stdout}");
}

#[test]
fn the_discover_era_is_measured_where_offered_and_said_so() {
    let bench = PathBuf::from(env!("CARGO_BIN_EXE_toolgate-bench"));
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("latency.json");
    let output = Command::new(&bench)
        .args(["latency", "--quick", "--concurrency", "1", "--era", "discover"])
        .args(["--only", "direct-http,toolgate-http-stdio-bare", "--json"])
        .arg(&json)
        .output()
        .expect("run toolgate-bench");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "exit {}\n{stdout}\n{stderr}", output.status);
    assert!(stdout.contains("server/discover (2026-07-28)"), "the header:\n{stdout}");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json written")).expect("json");
    let paths = report["paths"].as_array().expect("paths");
    assert_eq!(paths.len(), 2, "{paths:?}");
    for path in paths {
        assert_eq!(path["protocol"], "2026-07-28", "{path}");
    }
    assert!(
        stdout.contains(
            "protocol per path: direct-http 2026-07-28, toolgate-http-stdio-bare 2026-07-28"
        ),
        "{stdout}"
    );
}
