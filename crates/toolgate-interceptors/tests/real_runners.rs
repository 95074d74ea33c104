//! The test filter on logs the real runners write now: `scripts/make-test-logs` runs cargo
//! test, cargo nextest, pytest, jest, vitest (and go test where Go is installed) on small
//! projects it generates, and each fresh log must be shortened as the committed fixtures are
//! (`src/test_filter/expected.rs`), so that a runner whose new version prints differently is
//! caught here.
//!
//! A runner that is not installed is skipped with a note, except under CI (`CI` set), where
//! cargo, nextest, pytest, jest and vitest must all be there (scripts/install-test-deps
//! installs the last three). pytest comes from `$TOOLGATE_TEST_PYTHON`, jest and vitest from
//! `$TOOLGATE_TEST_NPM_DIR`, as for the other tests.

use std::path::{Path, PathBuf};
use std::process::Command;

use toolgate_interceptors::test_filter::{Settings, filter};
use toolgate_llm::tokens::Encoding;

#[path = "../src/test_filter/expected.rs"]
mod expected;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The runners whose logs CI must have: every one but go.
const REQUIRED: &[&str] = &["cargo", "nextest", "pytest", "jest", "vitest"];

/// Runs the script into `out`, and returns the runners it skipped, with why.
fn make_logs(out: &Path) -> Vec<(String, String)> {
    let root = repo_root();
    let mut command = Command::new("bash");
    command.arg(root.join("scripts/make-test-logs")).arg(out);
    let output = command.output().expect("bash runs scripts/make-test-logs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "scripts/make-test-logs failed:\n{stderr}");
    stderr
        .lines()
        .filter_map(|line| line.strip_prefix("make-test-logs: skipped "))
        .filter_map(|rest| rest.split_once(": "))
        .map(|(runner, why)| (runner.to_owned(), why.to_owned()))
        .collect()
}

fn made(text: &str) -> Option<expected::Made> {
    filter(text, &Settings::default()).map(|f| expected::Made {
        text: f.text,
        runs: f.runs.iter().map(|r| (r.runner.name(), r.failed, r.passed, r.errors)).collect(),
    })
}

/// The runner a log is named after (`cargo-fail.txt`: `cargo`).
fn runner_of(log: &str) -> &str {
    log.split(['-', '.']).next().unwrap_or_default()
}

#[test]
fn fresh_logs_of_the_installed_runners_are_shortened_like_the_fixtures() {
    let out = tempfile::tempdir().expect("a temporary folder");
    let skipped = make_logs(out.path());
    for (runner, why) in &skipped {
        println!("note: {runner} not checked: {why}");
    }
    if std::env::var_os("CI").is_some() {
        let missing: Vec<&str> = skipped
            .iter()
            .map(|(runner, _)| runner.as_str())
            .filter(|runner| REQUIRED.contains(runner))
            .collect();
        assert!(missing.is_empty(), "CI must have every runner; missing: {missing:?}");
    }
    let mut problems = Vec::new();
    let mut checked = 0;
    for expected in expected::LOGS {
        let path = out.path().join(expected.log);
        let Ok(text) = std::fs::read_to_string(&path) else {
            let runner = runner_of(expected.log);
            assert!(
                skipped.iter().any(|(name, _)| name == runner),
                "{} was not written, and {runner} was not said to be skipped",
                expected.log
            );
            continue;
        };
        checked += 1;
        problems.extend(expected::problems(expected, &text, made(&text), |t| {
            Encoding::O200kBase.count(t)
        }));
    }
    // Go's logs, where Go is installed: the failures of the script's module, without the
    // line numbers of the hand-written fixtures.
    if let Ok(text) = std::fs::read_to_string(out.path().join("go-fail-verbose.txt")) {
        checked += 1;
        match made(&text) {
            None => problems.push("go-fail-verbose.txt: not recognised".to_owned()),
            Some(made) => {
                if made.runs.iter().map(|run| run.1).sum::<u64>() != 2 {
                    problems.push(format!("go-fail-verbose.txt: runs {:?}", made.runs));
                }
                for kept in [
                    "--- FAIL: TestTotalReturns",
                    "Total = 12, want 13",
                    "--- FAIL: TestTotalTable/negative",
                    "Total([-1]) = -1, want 1",
                ] {
                    if !made.text.contains(kept) {
                        problems.push(format!("go-fail-verbose.txt: lost {kept:?}"));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(checked > 0 || skipped.len() >= REQUIRED.len(), "nothing was checked");
    println!("checked {checked} fresh logs");
}
