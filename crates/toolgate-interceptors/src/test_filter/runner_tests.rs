//! Tests of what each runner's log holds in particular (cargo and nextest, go, jest, vitest,
//! pytest), often on logs cut short or edited to show one case.

use super::*;

/// `cargo build` output of the project's dependencies, for logs that must be long enough
/// to be shortened.
fn compiling(lines: usize) -> String {
    (0..lines).map(|n| format!("   Compiling dependency{n} v1.0.{n}\n")).collect()
}

#[test]
fn an_error_with_a_place_is_a_compile_error_though_it_has_no_code() {
    // `-D warnings` makes a lint an error: `error:` and no `[E…]`, but a `-->` line.
    let log = format!(
        "{}   Compiling ledger v0.1.0 (/src/ledger)\n\
error: unused variable: `count`\n  \
--> src/lib.rs:14:9\n   \
|\n\
14 |     let count = items.len();\n   \
|         ^^^^^ help: if this is intentional, prefix it with an underscore: `_count`\n   \
|\n   \
= note: `-D unused-variables` implied by `-D warnings`\n   \
= help: to override `-D warnings` add `#[allow(unused_variables)]`\n\
\n\
error: could not compile `ledger` (lib test) due to 1 previous error\n",
        compiling(10)
    );
    let shortened = filter(&log, &Settings::default()).expect("recognised");
    let run = Run { runner: Runner::CargoTest, failed: 0, passed: Some(0), errors: 1 };
    assert_eq!(shortened.runs, [run], "{}", shortened.text);
    assert!(shortened.text.contains("error: unused variable: `count`\n  --> src/lib.rs:14:9\n"));
}

#[test]
fn a_cargo_log_cut_before_its_first_error_is_still_recognised() {
    // What a tool that keeps only the end of the output gives: no `Compiling` line.
    let log = fixture("cargo-compile-fail.txt");
    let cut = &log[log.find("error[E0308]").unwrap()..];
    let shortened = filter(cut, &Settings::default()).expect("recognised");
    let run = Run { runner: Runner::CargoTest, failed: 0, passed: Some(0), errors: 3 };
    assert_eq!(shortened.runs, [run]);
    assert!(!shortened.text.contains("unused variable"), "{}", shortened.text);
}

#[test]
fn the_cap_on_a_failures_lines_leaves_other_errors_whole() {
    // A linker's error is none of the code's (no place in it): it is kept as it is, whatever
    // `max_lines_per_failure`.
    let linker = "error: linking with `cc` failed: exit status: 1\n  \
|\n  \
= note: LC_ALL=\"C\" PATH=\"/usr/bin\" \"cc\" \"-m64\" \"/tmp/rustcQ1/symbols.o\" \"-lsqlite3\"\n  \
= note: /usr/bin/ld: cannot find -lsqlite3: No such file or directory\n          \
collect2: error: ld returned 1 exit status\n  \
= note: some `extern` functions couldn't be found; some native libraries may need to be installed or have their path specified\n  \
= note: use the `-l` flag to specify native libraries to link\n";
    let log = format!(
        "{}   Compiling ledger v0.1.0 (/src/ledger)\n{linker}\n\
error: could not compile `ledger` (lib test) due to 1 previous error\n",
        compiling(10)
    );
    let capped = Settings { max_lines_per_failure: 2, ..Settings::default() };
    let shortened = filter(&log, &capped).expect("recognised").text;
    assert!(shortened.contains(linker), "{shortened}");
    assert!(!shortened.contains("left out]"), "{shortened}");
}

#[test]
fn a_passing_subtests_log_is_left_out_of_its_failing_parent() {
    let mut log = "--- FAIL: TestTotals (0.00s)\n    \
--- PASS: TestTotals/empty (0.00s)\n        \
totals_test.go:12: an empty basket totals 0\n    \
--- FAIL: TestTotals/refund (0.00s)\n        \
totals_test.go:20: Total = 12, want 13\n\
FAIL\nFAIL\texample.com/shop\t0.003s\n"
        .to_owned();
    for n in 0..20 {
        log.push_str(&format!("?   \texample.com/shop/cmd{n}\t[no test files]\n"));
    }
    log.push_str("FAIL\n");
    let shortened = filter(&log, &Settings::default()).expect("recognised").text;
    assert!(
        shortened.contains(
            "--- FAIL: TestTotals (0.00s)\n    --- FAIL: TestTotals/refund (0.00s)\n        totals_test.go:20: Total = 12, want 13\n"
        ),
        "{shortened}"
    );
    assert!(!shortened.contains("an empty basket"), "{shortened}");
}

/// jest on one file: it lists the file's tests under it, grouped by `describe`.
const JEST_ONE_FILE: &str = "FAIL ./cart.test.js
  cart
    ✓ adds an item (2 ms)
    ✓ removes an item (1 ms)
    ✕ totals with a discount (4 ms)
    ○ skipped checks out later

  ● cart › totals with a discount

    expect(received).toBe(expected) // Object.is equality

    Expected: 90
    Received: 100

      20 |   test('totals with a discount', () => {
      21 |     cart.add(apple, 10);
    > 22 |     expect(cart.total({ discount: 0.1 })).toBe(90);
         |                                           ^
      23 |   });
      24 |

      at Object.toBe (cart.test.js:22:43)

Test Suites: 1 failed, 1 total
Tests:       1 failed, 1 skipped, 2 passed, 4 total
Snapshots:   1 failed, 2 passed, 3 total
Time:        0.512 s
Ran all test suites.
";

#[test]
fn jest_on_one_file_leaves_out_its_list_of_tests() {
    let shortened = filter(JEST_ONE_FILE, &Settings::default()).expect("recognised");
    let run = Run { runner: Runner::Jest, failed: 1, passed: Some(2), errors: 0 };
    assert_eq!(shortened.runs, [run]);
    let text = shortened.text;
    assert!(text.contains("FAIL ./cart.test.js\n  ● cart › totals with a discount\n"), "{text}");
    for left_out in ["  cart\n", "adds an item", "✕ totals", "○ skipped"] {
        assert!(!text.contains(left_out), "{left_out:?} kept:\n{text}");
    }
}

#[test]
fn jest_keeps_the_snapshots_line_when_one_failed_or_is_obsolete() {
    let failed = filter(JEST_ONE_FILE, &Settings::default()).expect("recognised").text;
    assert!(failed.contains("\nSnapshots:   1 failed, 2 passed, 3 total\n"), "{failed}");
    let obsolete =
        JEST_ONE_FILE.replace("1 failed, 2 passed, 3 total", "1 obsolete, 3 passed, 3 total");
    let kept = filter(&obsolete, &Settings::default()).expect("recognised").text;
    assert!(kept.contains("\nSnapshots:   1 obsolete, 3 passed, 3 total\n"), "{kept}");
    let fine = JEST_ONE_FILE.replace("1 failed, 2 passed, 3 total", "3 passed, 3 total");
    let left_out = filter(&fine, &Settings::default()).expect("recognised").text;
    assert!(!left_out.contains("Snapshots:"), "{left_out}");
}

#[test]
fn a_vitest_log_cut_before_its_header_is_shortened_the_same() {
    let log = fixture("vitest-fail.txt");
    let whole = filter(&log, &Settings::default()).expect("recognised");
    for start in
        [" ❯ cart.test.js (11 tests", " FAIL  cart.test.js > cart > totals with a discount"]
    {
        let cut = &log[log.find(start).unwrap()..];
        assert_eq!(filter(cut, &Settings::default()).as_ref(), Some(&whole), "from {start:?}");
    }
}

#[test]
fn a_vitest_log_cut_before_its_duration_is_read_to_its_end() {
    let log = fixture("vitest-fail.txt");
    let cut = &log[..log.find("   Start at ").unwrap()];
    let shortened = filter(cut, &Settings::default()).expect("recognised");
    let run = Run { runner: Runner::Vitest, failed: 3, passed: Some(57), errors: 0 };
    assert_eq!(shortened.runs, [run]);
    assert!(
        shortened.text.ends_with("      Tests  3 failed | 57 passed (60)\n"),
        "{}",
        shortened.text
    );
}

/// vitest's section on errors outside the tests, as it prints it before the summary.
const VITEST_UNHANDLED: &str = "⎯⎯⎯⎯⎯⎯ Unhandled Errors ⎯⎯⎯⎯⎯⎯

Vitest caught 1 unhandled error during the test run.
This might cause false positive tests. Resolve unhandled errors to make sure your tests are not affected.

⎯⎯⎯⎯ Unhandled Rejection ⎯⎯⎯⎯⎯
Error: the stock service did not answer
 ❯ stock.js:8:11

⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯

";

#[test]
fn vitest_keeps_its_unhandled_errors_and_their_count() {
    let log = fixture("vitest-fail.txt")
        .replacen("\n Test Files ", &format!("\n{VITEST_UNHANDLED} Test Files "), 1)
        .replacen("57 passed (60)\n", "57 passed (60)\n     Errors  1 error\n", 1);
    let shortened = filter(&log, &Settings::default()).expect("recognised").text;
    assert!(shortened.contains("Error: the stock service did not answer\n"), "{shortened}");
    assert!(
        shortened.ends_with("      Tests  3 failed | 57 passed (60)\n     Errors  1 error\n"),
        "{shortened}"
    );
}

#[test]
fn pytest_verbose_keeps_the_passing_tests_lines_only_when_asked() {
    let log = fixture("pytest-fail-verbose.txt");
    let passed = "test_inventory.py::test_total_of_small_counts PASSED";
    let failed = "test_inventory.py::test_total_with_returns FAILED";
    let names = Settings { keep_passed_names: true, ..Settings::default() };
    let kept = filter(&log, &names).expect("recognised").text;
    assert!(kept.contains(passed), "{kept}");
    assert!(!kept.contains(failed), "{kept}");
    let left_out = filter(&log, &Settings::default()).expect("recognised").text;
    assert!(!left_out.contains(passed) && !left_out.contains(failed), "{left_out}");
}

#[test]
fn a_vitest_log_cut_at_its_unhandled_errors_keeps_them_as_written() {
    // Only the `Failed Tests` rule starts a stretch, not vitest's other rules: from the
    // `Unhandled Errors` rule on, the section is passed through as written up to the summary.
    let log = fixture("vitest-fail.txt").replacen(
        "\n Test Files ",
        &format!("\n{VITEST_UNHANDLED} Test Files "),
        1,
    );
    let cut = &log[log.find("⎯⎯⎯⎯⎯⎯ Unhandled Errors").unwrap()..];
    let shortened = filter(cut, &Settings::default()).expect("recognised").text;
    assert!(shortened.contains(VITEST_UNHANDLED), "{shortened}");
    assert!(shortened.ends_with("      Tests  3 failed | 57 passed (60)\n"), "{shortened}");
}

#[test]
fn a_jest_log_cut_before_its_snapshots_line_is_read_to_its_end() {
    let log = fixture("jest-fail.txt");
    let cut = &log[..log.find("Snapshots:").unwrap()];
    let shortened = filter(cut, &Settings::default()).expect("recognised");
    let run = Run { runner: Runner::Jest, failed: 3, passed: Some(57), errors: 0 };
    assert_eq!(shortened.runs, [run]);
    assert!(
        shortened.text.ends_with("Tests:       3 failed, 57 passed, 60 total\n"),
        "{}",
        shortened.text
    );
}

#[test]
fn a_pytest_log_cut_before_its_header_is_shortened_the_same() {
    // The header is left out anyway: a log that starts at its first progress line, or at
    // its first `-v` line, is read as the whole log is.
    for (name, first) in [
        ("pytest-fail.txt", "test_inventory.py ....."),
        ("pytest-fail-verbose.txt", "test_inventory.py::test_total_of_small_counts PASSED"),
    ] {
        let log = fixture(name);
        let whole = filter(&log, &Settings::default()).expect("recognised");
        let cut = &log[log.find(first).unwrap()..];
        assert_eq!(filter(cut, &Settings::default()).as_ref(), Some(&whole), "{name}");
    }
}

#[test]
fn pytest_leaves_out_its_own_hints_but_not_a_message_that_starts_like_one() {
    let own = "E         Omitting the member discount: the card has expired";
    let log = fixture("pytest-fail.txt").replacen(
        "E       assert 12 == 13\n",
        &format!("E       assert 12 == 13\n{own}\n"),
        1,
    );
    let shortened = filter(&log, &Settings::default()).expect("recognised").text;
    assert!(shortened.contains(&format!("{own}\n")), "{shortened}");
    assert!(!shortened.contains("Omitting 2 identical items"), "{shortened}");
}

#[test]
fn pytest_native_tracebacks_keep_their_first_and_last_lines() {
    // `--tb=native`: Python's own traceback, whose lines pytest does not mark.
    let native = "__________________________________ test_total __________________________________
Traceback (most recent call last):
  File \"/src/shop/test_cart.py\", line 31, in test_total
    assert total([1, 2]) == 4
AssertionError: assert 3 == 4
 +  where 3 = total([1, 2])
";
    let log = format!(
        "============================= test session starts ==============================
platform linux -- Python 3.12.3, pytest-8.3.4, pluggy-1.5.0
rootdir: /src/shop
collected 12 items

test_cart.py ...F........                                                [100%]

=================================== FAILURES ===================================
{native}=========================== short test summary info ============================
FAILED test_cart.py::test_total - AssertionError: assert 3 == 4
========================= 1 failed, 11 passed in 0.03s =========================
"
    );
    let shortened = filter(&log, &Settings::default()).expect("recognised").text;
    for kept in ["\nTraceback (most recent call last):\n", "\nAssertionError: assert 3 == 4\n"] {
        assert!(shortened.contains(kept), "{kept:?} left out:\n{shortened}");
    }
    assert!(!shortened.contains("+  where"), "{shortened}");
}

#[test]
fn a_nextest_failures_output_ends_where_nextest_cancels_the_run() {
    // Older nextest (`--- STDOUT: … ---`, the output not indented) with fail-fast, its
    // default: the line that says so follows the failure's output and is none of it, even
    // with `keep_output`.
    let passes: String = (0..20)
        .map(|n| format!("        PASS [   0.004s] ledger tests::shares_evenly_{n}\n"))
        .collect();
    let log = format!(
        "    Starting 22 tests across 1 binary
{passes}        FAIL [   0.005s] ledger tests::rounds_shares

--- STDOUT:              ledger tests::rounds_shares ---

running 1 test
test tests::rounds_shares ... FAILED

failures:

failures:
    tests::rounds_shares

test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 21 filtered out; finished in 0.00s


--- STDERR:              ledger tests::rounds_shares ---
thread 'tests::rounds_shares' panicked at src/lib.rs:319:9:
7 shared by 2 should round up
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace

  Cancelling due to test failure: 1 test still running
        PASS [   0.006s] ledger tests::refuses_zero_parts
------------
     Summary [   0.031s] 22 tests run: 21 passed, 1 failed, 0 skipped
        FAIL [   0.005s] ledger tests::rounds_shares
error: test run failed
"
    );
    let output = Settings { keep_output: true, ..Settings::default() };
    let shortened = filter(&log, &output).expect("recognised");
    let run = Run { runner: Runner::Nextest, failed: 1, passed: Some(21), errors: 0 };
    assert_eq!(shortened.runs, [run], "{}", shortened.text);
    assert!(shortened.text.contains("7 shared by 2 should round up\n"), "{}", shortened.text);
    assert!(!shortened.text.contains("Cancelling"), "{}", shortened.text);
}

#[test]
fn a_nextest_failures_output_ends_at_a_line_that_is_not_nextests() {
    // A run stopped in a failure's output (here a CI job cancelled): the CI's line after it
    // is no output of the test, and is kept as it is.
    let log = fixture("nextest-fail.txt");
    let stop = log.find("        PASS [   0.013s] (47/92) ledger tests::shares_evenly_10").unwrap();
    let log = format!("{}##[error]The operation was canceled.\n", &log[..stop]);
    let shortened = filter(&log, &Settings::default()).expect("recognised").text;
    assert!(shortened.contains("7 shared by 2 should round up\n"), "{shortened}");
    assert!(shortened.ends_with("\n##[error]The operation was canceled.\n"), "{shortened}");
}

#[test]
fn a_cargo_binary_without_tests_leaves_no_line() {
    let empty = "     Running unittests src/main.rs (target/debug/deps/ledger_cli-5d1c2b3a4e6f7081)\n\n\
running 0 tests\n\n\
test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n\n";
    let log = fixture("cargo-pass.txt").replacen(
        "   Doc-tests ledger\n",
        &format!("{empty}   Doc-tests ledger\n"),
        1,
    );
    let shortened = filter(&log, &Settings::default()).expect("recognised").text;
    assert!(!shortened.contains("0 passed; 0 failed"), "{shortened}");
    assert!(shortened.contains("test result: ok. 83 passed; 0 failed; 0 ignored;"), "{shortened}");
}

#[test]
fn a_go_test_timeout_is_one_failure_with_its_message() {
    // The testing package's alarm panics outside the test: no `--- FAIL` line before it.
    let mut log = "=== RUN   TestTotals
--- PASS: TestTotals (0.00s)
=== RUN   TestSlowImport
panic: test timed out after 2s
\trunning tests:
\t\tTestSlowImport (2s)

goroutine 21 [running]:
testing.(*M).startAlarm.func1()
\t/usr/local/go/src/testing/testing.go:2373 +0x265
created by time.goFunc
\t/usr/local/go/src/time/sleep.go:215 +0x2d

goroutine 1 [chan receive]:
testing.(*T).Run(0xc000003a00, {0x5c1b2e?, 0x0?}, 0x5d3f40)
\t/usr/local/go/src/testing/testing.go:1751 +0x3ab
testing.runTests.func1(0xc000003a00)
\t/usr/local/go/src/testing/testing.go:2168 +0x37
testing.tRunner(0xc000003a00, 0xc00011fc70)
\t/usr/local/go/src/testing/testing.go:1690 +0xf4
FAIL\texample.com/stock\t2.004s
"
    .to_owned();
    for n in 0..5 {
        log.push_str(&format!("?   \texample.com/stock/cmd{n}\t[no test files]\n"));
    }
    log.push_str("FAIL\n");
    let shortened = filter(&log, &Settings::default()).expect("recognised");
    let run = Run { runner: Runner::GoTest, failed: 1, passed: Some(1), errors: 0 };
    assert_eq!(shortened.runs, [run], "{}", shortened.text);
    assert!(shortened.text.contains("panic: test timed out after 2s\n"), "{}", shortened.text);
    assert!(shortened.text.contains("TestSlowImport (2s)\n"), "{}", shortened.text);
}

#[test]
fn plain_go_test_keeps_what_a_later_test_printed_out_of_a_failure() {
    // Plain `go test` prints a test's `fmt.Println` as it comes, unindented, and its log
    // only with its result: a line after a failure's log is a later test's, not the failure's.
    let mut log = "--- FAIL: TestA (0.00s)\n    a_test.go:10: a is wrong\n\
                   loading the price table\n\
                   --- FAIL: TestB (0.00s)\n    b_test.go:20: b is wrong\n\
                   FAIL\nFAIL\texample.com/ab\t0.002s\n"
        .to_owned();
    for n in 0..20 {
        log.push_str(&format!("?   \texample.com/ab/cmd{n}\t[no test files]\n"));
    }
    log.push_str("FAIL\n");
    let shortened = filter(&log, &Settings::default()).expect("recognised").text;
    assert!(
        shortened.contains("a_test.go:10: a is wrong\nloading the price table\n--- FAIL: TestB"),
        "{shortened}"
    );
}

#[test]
fn a_warning_is_left_out_with_its_snippet_and_notes() {
    let shortened =
        filter(&fixture("cargo-compile-fail.txt"), &Settings::default()).expect("recognised").text;
    for line in
        ["let unused = 2;", "prefix it with an underscore: `_unused`", "#[warn(unused_variables)]"]
    {
        assert!(!shortened.contains(line), "{line:?} kept:\n{shortened}");
    }
}

#[test]
fn cargo_nocapture_keeps_what_a_test_printed_only_when_asked() {
    let log = fixture("cargo-fail-nocapture.txt").replacen(
        "running 88 tests\n",
        "running 88 tests\nloading the rate table\n",
        1,
    );
    let output = Settings { keep_output: true, ..Settings::default() };
    let kept = filter(&log, &output).expect("recognised").text;
    assert!(kept.contains("\nloading the rate table\n"), "{kept}");
    let left_out = filter(&log, &Settings::default()).expect("recognised").text;
    assert!(!left_out.contains("loading the rate table"), "{left_out}");
}

#[test]
fn a_go_panic_keeps_the_projects_frames_and_leaves_out_the_runtimes() {
    let shortened =
        filter(&fixture("go-panic-build-fail.txt"), &Settings::default()).expect("recognised").text;
    for kept in [
        "example.com/stock.Pick(...)\n",
        "/src/stock/stock.go:12\n",
        "/src/stock/stock_test.go:40 +0x1d\n",
    ] {
        assert!(shortened.contains(kept), "{kept:?} left out:\n{shortened}");
    }
    for left_out in
        ["testing.tRunner", "panic({0x5123a0", "created by testing.(*T).Run", "runtime/panic.go"]
    {
        assert!(!shortened.contains(left_out), "{left_out:?} kept:\n{shortened}");
    }
}

#[test]
fn vitest_leaves_out_a_failed_tests_message_in_the_list_of_tests() {
    // Under a failed test in the list, vitest may show its message (`→ …`): the list is
    // left out with it, and the run is read on to its failures, as without it.
    let log = fixture("vitest-fail.txt");
    let with_message = log.replacen(
        "     × totals with a discount 7ms\n",
        "     × totals with a discount 7ms\n       → expected 100 to be 90\n",
        1,
    );
    assert_ne!(with_message, log);
    assert_eq!(filter(&with_message, &Settings::default()), filter(&log, &Settings::default()));
}

#[test]
fn a_compile_errors_note_with_its_own_place_is_kept_with_it() {
    // `#![deny(...)]`: rustc adds where the lint level was set, as a `note:` with a `-->`.
    let log = format!(
        "{}   Compiling ledger v0.1.0 (/src/ledger)\n\
error: unused variable: `count`\n  \
--> src/lib.rs:14:9\n   \
|\n\
14 |     let count = items.len();\n   \
|         ^^^^^ help: if this is intentional, prefix it with an underscore: `_count`\n   \
|\n\
note: the lint level is defined here\n  \
--> src/lib.rs:1:9\n   \
|\n\
1  | #![deny(unused_variables)]\n   \
|         ^^^^^^^^^^^^^^^^\n\
\n\
error: could not compile `ledger` (lib test) due to 1 previous error\n",
        compiling(10)
    );
    let shortened = filter(&log, &Settings::default()).expect("recognised");
    let run = Run { runner: Runner::CargoTest, failed: 0, passed: Some(0), errors: 1 };
    assert_eq!(shortened.runs, [run], "{}", shortened.text);
    assert!(
        shortened.text.contains("note: the lint level is defined here\n  --> src/lib.rs:1:9\n"),
        "{}",
        shortened.text
    );
}

#[test]
fn cargos_stderr_alone_is_a_failed_test_run() {
    // A tool that returns the two streams apart: libtest's report is on stdout, and what
    // cargo says on stderr names no test. Here the test binary crashed.
    let stderr = format!(
        "{}   Compiling ledger v0.1.0 (/src/ledger)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 2.31s
     Running unittests src/lib.rs (target/debug/deps/ledger-1a2b3c4d5e6f7a8b)
error: test failed, to rerun pass `--lib`

Caused by:
  process didn't exit successfully: `/src/ledger/target/debug/deps/ledger-1a2b3c4d5e6f7a8b` (signal: 11, SIGSEGV: invalid memory reference)
",
        compiling(10)
    );
    let shortened = filter(&stderr, &Settings::default()).expect("recognised");
    let runners: Vec<Runner> = shortened.runs.iter().map(|run| run.runner).collect();
    assert_eq!(runners, [Runner::CargoTest], "{}", shortened.text);
    assert!(
        shortened.text.contains("\nerror: test failed, to rerun pass `--lib`\nCaused by:\n"),
        "{}",
        shortened.text
    );
    assert!(!shortened.text.contains("Compiling"), "{}", shortened.text);
}

#[test]
fn jest_keeps_nodes_caret_under_a_line_it_could_not_parse() {
    // A dependency jest did not transform: node shows the line it could not parse and a
    // caret under the token, which are kept; the code frame's own caret (`| ^`) is not.
    let node = "    ({\"Object.<anonymous>\":function(module,exports,require,__dirname,__filename,jest){import { webcrypto as crypto } from 'node:crypto'
                                                                                      ^^^^^^
";
    let log = format!(
        "FAIL src/ids.test.js
  ● Test suite failed to run

    Jest encountered an unexpected token

    Jest failed to parse a file. This happens e.g. when your code or its dependencies use non-standard JavaScript syntax, or when Jest is not configured to support such syntax.

    Out of the box Jest supports Babel, which will be used to transform your files into valid JS based on your Babel configuration.

    By default \"node_modules\" folder is ignored by transformers.

    Details:

    /src/shop/node_modules/nanoid/index.js:1
{node}
    SyntaxError: Cannot use import statement outside a module

    > 1 | import {{ nanoid }} from 'nanoid';
        | ^
      2 |
      3 | test('ids are 21 characters', () => {{
      4 |   expect(nanoid()).toHaveLength(21);

      at Runtime.createScriptFromCode (node_modules/jest-runtime/build/index.js:1505:14)
      at Object.<anonymous> (src/ids.test.js:1:1)

Test Suites: 1 failed, 1 total
Tests:       0 total
Snapshots:   0 total
Time:        0.412 s
Ran all test suites.
"
    );
    let shortened = filter(&log, &Settings::default()).expect("recognised").text;
    assert!(shortened.contains(node), "{shortened}");
    assert!(shortened.contains("\n    > 1 | import { nanoid } from 'nanoid';\n"), "{shortened}");
    assert!(!shortened.contains("| ^"), "{shortened}");
}

#[test]
fn pytest_without_tracebacks_keeps_the_short_summarys_failures() {
    // `--tb=no`: no FAILURES section, so the short summary's `FAILED` lines are all there is
    // about each failure.
    let log = fixture("pytest-fail.txt");
    let from = log.find("=================================== FAILURES").unwrap();
    let to = log.find("=========================== short test summary info").unwrap();
    let log = format!("{}{}", &log[..from], &log[to..]);
    let shortened = filter(&log, &Settings::default()).expect("recognised");
    let run = Run { runner: Runner::Pytest, failed: 5, passed: Some(140), errors: 0 };
    assert_eq!(shortened.runs, [run], "{}", shortened.text);
    let failed: Vec<&str> = log.lines().filter(|line| line.starts_with("FAILED ")).collect();
    assert_eq!(failed.len(), 5);
    for line in failed {
        assert!(shortened.text.contains(&format!("\n{line}\n")), "{line:?} left out");
    }
}

#[test]
fn pytest_keeps_a_failures_captured_output_under_its_titles_only_when_asked() {
    let log = fixture("pytest-fail.txt");
    // The last failure's place, then its captured log and stdout, each under its title.
    let from = log.find("test_warehouse.py:40: AssertionError\n").unwrap();
    let to = log.find("=========================== short test summary info").unwrap();
    let captured = &log[from..to];
    assert!(captured.contains("Captured stdout call") && captured.contains("reporting plums"));
    let output = Settings { keep_output: true, ..Settings::default() };
    let kept = filter(&log, &output).expect("recognised").text;
    assert!(kept.contains(captured), "{kept}");
    let left_out = filter(&log, &Settings::default()).expect("recognised").text;
    assert!(!left_out.contains("Captured") && !left_out.contains("reporting"), "{left_out}");
}

#[test]
fn a_cargo_build_that_does_not_compile_is_no_test_run() {
    // `cargo build`: its errors are the build's, not a test run's, and pass as they are.
    let build = format!(
        "{}   Compiling ledger v0.1.0 (/src/ledger)
error[E0308]: mismatched types
 --> src/lib.rs:3:5
  |
2 | pub fn total() -> u32 {{
  |                   --- expected `u32` because of return type
3 |     \"zero\"
  |     ^^^^^^ expected `u32`, found `&str`

For more information about this error, try `rustc --explain E0308`.
error: could not compile `ledger` (lib) due to 1 previous error
",
        compiling(10)
    );
    assert_eq!(filter(&build, &Settings::default()), None);
    // The same errors when `cargo test` builds the tests are a failed test run.
    let test = build.replace("(lib)", "(lib test)");
    let shortened = filter(&test, &Settings::default()).expect("recognised");
    let run = Run { runner: Runner::CargoTest, failed: 0, passed: Some(0), errors: 1 };
    assert_eq!(shortened.runs, [run], "{}", shortened.text);
}

#[test]
fn plain_go_test_counts_a_failure_after_one_with_failing_subtests() {
    let mut log = "--- FAIL: TestShip (0.00s)
    --- FAIL: TestShip/mixed_order (0.00s)
        ship_test.go:31: shipped 5 items, want 6
    --- FAIL: TestShip/empty_order (0.00s)
        ship_test.go:31: shipped 1 items, want 0
--- FAIL: TestTotal (0.00s)
    stock_test.go:17: Total = 12, want 13
FAIL
FAIL\texample.com/stock\t0.004s
"
    .to_owned();
    for n in 0..20 {
        log.push_str(&format!("?   \texample.com/stock/cmd{n}\t[no test files]\n"));
    }
    log.push_str("FAIL\n");
    let shortened = filter(&log, &Settings::default()).expect("recognised");
    let run = Run { runner: Runner::GoTest, failed: 2, passed: None, errors: 0 };
    assert_eq!(shortened.runs, [run], "{}", shortened.text);
    assert!(
        shortened
            .text
            .contains("--- FAIL: TestTotal (0.00s)\n    stock_test.go:17: Total = 12, want 13\n"),
        "{}",
        shortened.text
    );
}

#[test]
fn a_failing_parents_own_log_after_a_passing_subtest_is_kept() {
    // `go test -v` before Go 1.14 printed each test's log under its result line: the
    // parent's, after the subtest it ran first, is the parent's, not that subtest's.
    let mut log = "=== RUN   TestTotals
=== RUN   TestTotals/empty
=== RUN   TestTotals/refund
--- FAIL: TestTotals (0.00s)
    --- PASS: TestTotals/empty (0.00s)
        totals_test.go:12: an empty basket totals 0
    totals_test.go:16: checked the empty basket
    --- FAIL: TestTotals/refund (0.00s)
        totals_test.go:20: Total = 12, want 13
FAIL
FAIL\texample.com/shop\t0.003s
"
    .to_owned();
    for n in 0..20 {
        log.push_str(&format!("?   \texample.com/shop/cmd{n}\t[no test files]\n"));
    }
    log.push_str("FAIL\n");
    let shortened = filter(&log, &Settings::default()).expect("recognised").text;
    assert!(
        shortened.contains(
            "--- FAIL: TestTotals (0.00s)\n    totals_test.go:16: checked the empty basket\n    --- FAIL: TestTotals/refund (0.00s)\n"
        ),
        "{shortened}"
    );
    assert!(!shortened.contains("an empty basket totals 0"), "{shortened}");
}

#[test]
fn vitest_keeps_a_diffs_lines_that_start_with_a_bar() {
    // A markdown table compared: the diff's lines start with `|` once trimmed. Only a code
    // frame's caret line (`|   ^`) is left out.
    let table = "AssertionError: expected '| item | qty |\\n| pear | 4 |' to be '| item | qty |\\n| pear | 3 |' // Object.is equality

- Expected
+ Received

  | item | qty |
- | pear | 3 |
+ | pear | 4 |
";
    let log = fixture("vitest-fail.txt");
    let number = "AssertionError: expected 12 to be 13 // Object.is equality

- Expected
+ Received

- 13
+ 12
";
    assert!(log.contains(number));
    let log = log.replacen(number, table, 1);
    let shortened = filter(&log, &Settings::default()).expect("recognised").text;
    assert!(
        shortened.contains("\n+ Received\n  | item | qty |\n- | pear | 3 |\n+ | pear | 4 |\n"),
        "{shortened}"
    );
    assert!(
        shortened.contains("expect(total([...prices, ...refunds])).toBe(13);\n"),
        "{shortened}"
    );
    assert!(!shortened.contains("^\n"), "{shortened}");
}
