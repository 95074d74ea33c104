//! Property tests of `test_filter`: any text, however much of it looks like a runner's output
//! (lines of every runner shuffled, colour codes, overdraws), is filtered without a panic into
//! a shorter text that says what ran, or left alone; and in a generated run of `cargo test`,
//! `go test` or pytest, with any number of passing and failing tests among other output, every
//! failing test's name, message and place, and the summary, are kept.

use proptest::prelude::*;

use super::{Settings, filter};

/// Lines of every runner, and others.
const LINES: &[&str] = &[
    "running 3 tests",
    "test a::b ... ok",
    "test a::c ... FAILED",
    "failures:",
    "---- a::c stdout ----",
    "thread 'a::c' (12) panicked at src/lib.rs:1:2:",
    "assertion `left == right` failed",
    "  left: 1",
    "test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s",
    "error: test failed, to rerun pass `--lib`",
    "   Compiling x v0.1.0 (/tmp/x)",
    "error[E0308]: mismatched types",
    "  --> src/lib.rs:3:5",
    "        FAIL [   0.003s] x a::c",
    "     Summary [   0.010s] 2 tests run: 1 passed, 1 failed, 0 skipped",
    "============================= test session starts ==============================",
    "=================================== FAILURES ===================================",
    "___________________________ test_x ____________________________",
    ">       assert 1 == 2",
    "E       assert 1 == 2",
    "t.py:3: AssertionError",
    "========================= 1 failed, 2 passed in 0.01s ==========================",
    "--- FAIL: TestX (0.00s)",
    "    x_test.go:3: want 1",
    "FAIL\texample.com/x\t0.003s",
    "ok  \texample.com/y\t0.002s",
    "FAIL",
    " FAIL  src/a.test.ts > a > b",
    " ❯ src/a.test.ts:3:5",
    "FAIL src/a.test.js",
    "  ● a › b",
    "Tests:       1 failed, 1 passed, 2 total",
    " Test Files  1 failed (1)",
    "\u{1b}[31mred\u{1b}[0m",
    "progress 1\rprogress 2",
    "",
];

/// A text made of runners' lines and any others.
fn text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        4 => prop::sample::select(LINES).prop_map(str::to_owned),
        1 => "\\PC{0,20}",
        1 => "[ \t]{0,8}[a-zA-Z0-9_:>●❯|.-]{0,12}[ \t]{0,4}",
    ];
    (prop::collection::vec(line, 0..60), prop::sample::select(&["\n", "\r\n"][..]))
        .prop_map(|(lines, ending)| lines.join(ending))
}

fn settings() -> impl Strategy<Value = Settings> {
    (1usize..40, any::<bool>(), any::<bool>()).prop_map(|(max, passed, output)| Settings {
        max_lines_per_failure: max,
        keep_passed_names: passed,
        keep_output: output,
        ..Settings::default()
    })
}

/// One test of a generated run: its name, and its failure message when it fails.
#[derive(Debug, Clone)]
struct Test {
    name: String,
    failure: Option<String>,
}

fn tests() -> impl Strategy<Value = Vec<Test>> {
    prop::collection::vec(
        ("[a-z][a-z0-9_]{2,12}", prop::option::weighted(0.3, "[a-zA-Z][a-zA-Z0-9 ,.=]{4,30}")),
        1..30,
    )
    .prop_map(|tests| {
        let mut seen = std::collections::HashSet::new();
        tests
            .into_iter()
            .filter(|(name, _)| seen.insert(name.clone()))
            .map(|(name, failure)| Test { name, failure })
            .collect()
    })
}

/// What a run prints, and the lines of it that must be kept.
fn cargo(tests: &[Test]) -> (String, Vec<String>) {
    let mut out = format!(
        "     Running unittests src/lib.rs (target/debug/deps/x-0)\n\nrunning {} tests\n",
        tests.len()
    );
    let mut kept = Vec::new();
    for test in tests {
        let status = if test.failure.is_some() { "FAILED" } else { "ok" };
        out.push_str(&format!("test m::{} ... {status}\n", test.name));
    }
    out.push_str("\nfailures:\n\n");
    for (line, test) in tests.iter().enumerate() {
        let Some(message) = &test.failure else { continue };
        let header = format!("---- m::{} stdout ----", test.name);
        let place = format!("thread 'm::{}' (7) panicked at src/lib.rs:{}:9:", test.name, line + 1);
        out.push_str(&format!("{header}\n\n{place}\n{message}\n\n"));
        kept.extend([header, place, message.clone()]);
    }
    let failed = tests.iter().filter(|t| t.failure.is_some()).count();
    let result = format!(
        "test result: {}. {} passed; {failed} failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s",
        if failed > 0 { "FAILED" } else { "ok" },
        tests.len() - failed
    );
    out.push_str(&format!(
        "\nfailures:\n{}\n{result}\n\n",
        tests
            .iter()
            .filter(|t| t.failure.is_some())
            .map(|t| format!("    m::{}\n", t.name))
            .collect::<String>()
    ));
    kept.push(result);
    (out, kept)
}

fn go(tests: &[Test]) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut kept = Vec::new();
    for (line, test) in tests.iter().enumerate() {
        let Some(message) = &test.failure else { continue };
        // Go runs `TestXxx` functions, `Xxx` not starting with a lower-case letter.
        let mut name = test.name.clone();
        name[..1].make_ascii_uppercase();
        let header = format!("--- FAIL: Test{name} (0.00s)");
        let place = format!("    x_test.go:{}: {message}", line + 1);
        out.push_str(&format!("{header}\n{place}\n"));
        kept.extend([header, place]);
    }
    let failed = tests.iter().any(|t| t.failure.is_some());
    let summary =
        if failed { "FAIL\texample.com/x\t0.003s" } else { "ok  \texample.com/x\t0.003s" };
    if failed {
        out.push_str("FAIL\n");
    }
    out.push_str(summary);
    out.push('\n');
    kept.push(summary.to_owned());
    (out, kept)
}

fn pytest(tests: &[Test]) -> (String, Vec<String>) {
    let mut out = format!(
        "============================= test session starts ==============================\n\
         platform linux -- Python 3.11.7, pytest-9.2.0, pluggy-1.7.0\nrootdir: /tmp/p\n\
         collected {} items\n\ntest_x.py {}\n\n",
        tests.len(),
        tests.iter().map(|t| if t.failure.is_some() { 'F' } else { '.' }).collect::<String>()
    );
    let mut kept = Vec::new();
    let failed = tests.iter().filter(|t| t.failure.is_some()).count();
    if failed > 0 {
        out.push_str(
            "=================================== FAILURES ===================================\n",
        );
    }
    for (line, test) in tests.iter().enumerate() {
        let Some(message) = &test.failure else { continue };
        let header = format!("____________________ test_{} ____________________", test.name);
        let assertion = format!("E       AssertionError: {message}");
        let place = format!("test_x.py:{}: AssertionError", line + 1);
        out.push_str(&format!(
            "{header}\n\n    def test_{}():\n>       check()\n{assertion}\n\n{place}\n",
            test.name
        ));
        kept.extend([header, assertion, place]);
    }
    let summary = match failed {
        0 => format!(
            "============================== {} passed in 0.01s ==============================",
            tests.len()
        ),
        _ => format!(
            "========================= {failed} failed, {} passed in 0.01s =========================",
            tests.len() - failed
        ),
    };
    out.push_str(&summary);
    out.push('\n');
    kept.push(summary);
    (out, kept)
}

proptest! {
    #[test]
    fn any_text_is_shortened_or_left_alone(text in text(), settings in settings()) {
        if let Some(filtered) = filter(&text, &settings) {
            prop_assert!(filtered.text.len() < text.len());
            prop_assert!(filtered.text.starts_with("[test_filter: "), "{:?}", filtered.text);
            prop_assert!(!filtered.runs.is_empty());
        }
    }

    #[test]
    fn every_failure_is_kept(
        tests in tests(),
        runner in 0usize..3,
        before in prop::collection::vec("[a-z ]{0,30}", 0..4),
        after in prop::collection::vec("[a-z ]{0,30}", 0..4),
    ) {
        let (run, kept) = [cargo, go, pytest][runner](&tests);
        let text = format!("$ make test\n{}\n{run}{}\n", before.join("\n"), after.join("\n"));
        let Some(filtered) = filter(&text, &Settings::default()) else {
            // Left alone only when shortening could not save much: the note (about 80 bytes)
            // and the lines to keep are nearly all of it.
            let least = 80 + kept.iter().map(|line| line.len() + 1).sum::<usize>();
            prop_assert!(text.len() < least + 160, "not recognised: {:?}", text);
            return Ok(());
        };
        let lines: Vec<&str> = filtered.text.lines().map(str::trim_end).collect();
        for line in kept {
            prop_assert!(lines.contains(&line.trim_end()), "{:?} left out of {:?}", line, filtered.text);
        }
        let failed: u64 = filtered.runs.iter().map(|r| r.failed).sum();
        let failing = tests.iter().filter(|t| t.failure.is_some()).count() as u64;
        prop_assert_eq!(failed, failing);
    }
}
