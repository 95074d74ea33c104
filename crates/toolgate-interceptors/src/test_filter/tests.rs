//! Tests of the test filter on real runners' logs (`fixtures/`, made by
//! `scripts/make-test-logs`; the go logs are written by hand), and of the interceptor.

use std::path::PathBuf;

use serde_json::json;
use toolgate_intercept::Principal;

use super::*;

#[path = "expected.rs"]
mod expected;
#[path = "option_tests.rs"]
mod options;
#[path = "runner_tests.rs"]
mod runners;

fn fixture(name: &str) -> String {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/test_filter/fixtures").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn made(text: &str, settings: &Settings) -> Option<expected::Made> {
    filter(text, settings).map(|f| expected::Made {
        text: f.text,
        runs: f.runs.iter().map(|r| (r.runner.name(), r.failed, r.passed, r.errors)).collect(),
    })
}

fn tokens(text: &str) -> usize {
    Encoding::O200kBase.count(text)
}

#[test]
fn every_log_keeps_each_failures_name_message_and_place_and_the_summary() {
    let mut problems = Vec::new();
    for expected in expected::LOGS.iter().chain(expected::GO_LOGS) {
        let text = fixture(expected.log);
        problems.extend(expected::problems(
            expected,
            &text,
            made(&text, &Settings::default()),
            tokens,
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The target, over the failing runs without colours (colour codes only make the
/// saving larger); each log's own least saving is in `expected.rs`.
#[test]
fn failing_runs_cost_at_least_80_percent_fewer_tokens_together() {
    let (mut before, mut after) = (0, 0);
    for expected in expected::LOGS {
        let log = expected.log;
        if !log.contains("-fail") || log.contains("compile") || log.contains("-color") {
            continue;
        }
        let text = fixture(expected.log);
        before += tokens(&text);
        after += tokens(&filter(&text, &Settings::default()).expect("recognised").text);
    }
    let saved = 1.0 - after as f64 / before as f64;
    assert!(saved >= 0.8, "{before} -> {after} tokens: {:.1} % saved", saved * 100.0);
}

#[test]
fn a_shortened_log_starts_with_what_ran_and_is_plain_text() {
    let shortened = filter(&fixture("nextest-fail-color.txt"), &Settings::default()).unwrap();
    assert!(shortened.text.starts_with(
        "[test_filter: cargo nextest: 6 failed, 86 passed (passing tests and runner noise left out)]\n"
    ));
    assert!(!shortened.text.contains('\u{1b}'));
    let compile = filter(&fixture("cargo-compile-fail.txt"), &Settings::default()).unwrap();
    assert!(compile.text.starts_with("[test_filter: cargo test: 3 errors (passing"));
}

#[test]
fn a_nextest_log_cut_at_both_ends_is_counted_from_its_status_lines() {
    // What a tool that keeps only part of the output gives: no header, no summary.
    let log = fixture("nextest-fail.txt");
    let lines: Vec<&str> = log.lines().collect();
    let first = lines.iter().position(|l| l.trim_start().starts_with("PASS [")).unwrap();
    let summary = lines.iter().position(|l| l.trim_start().starts_with("Summary [")).unwrap();
    let cut = lines[first..summary - 1].join("\n");
    let shortened = filter(&cut, &Settings::default()).expect("recognised");
    let run = Run { runner: Runner::Nextest, failed: 6, passed: Some(86), errors: 0 };
    assert_eq!(shortened.runs, [run]);
}

#[test]
fn a_jest_failure_keeps_the_projects_stack_lines_and_leaves_out_the_libraries() {
    let library = [
        "      at Promise.then.completed (node_modules/jest-circus/build/utils.js:298:28)",
        "      at processTicksAndRejections (node:internal/process/task_queues:95:5)",
        "      at node:internal/main/run_main_module:28:49",
        "      at new Promise (<anonymous>)",
    ];
    let own = "      at Object.toBe (cart.test.js:22:44)\n";
    let log = fixture("jest-fail.txt").replacen(own, &format!("{own}{}\n", library.join("\n")), 1);
    let shortened = filter(&log, &Settings::default()).expect("recognised").text;
    assert!(shortened.contains(own), "{shortened}");
    for line in library {
        assert!(!shortened.contains(line.trim()), "{line} kept:\n{shortened}");
    }
}

#[test]
fn plain_go_test_counts_each_failing_test_after_another() {
    let mut log = "--- FAIL: TestA (0.00s)\n    a_test.go:10: a is wrong\n\
                   --- FAIL: TestB (0.00s)\n    b_test.go:20: b is wrong\n\
                   FAIL\nFAIL\texample.com/ab\t0.002s\n"
        .to_owned();
    for n in 0..20 {
        log.push_str(&format!("?   \texample.com/ab/cmd{n}\t[no test files]\n"));
    }
    log.push_str("FAIL\n");
    let shortened = filter(&log, &Settings::default()).expect("recognised");
    assert_eq!(shortened.runs[0].failed, 2, "{}", shortened.text);
}

#[test]
fn pytest_keeps_what_a_test_printed_only_when_asked_and_never_the_header() {
    // `pytest -s`: a test printed a line as the run began.
    let log = fixture("pytest-fail.txt").replacen(
        "collected 145 items\n\n",
        "collected 145 items\n\nloading the price table\n",
        1,
    );
    let output = Settings { keep_output: true, ..Settings::default() };
    let kept = filter(&log, &output).unwrap().text;
    assert!(kept.contains("\nloading the price table\n"), "{kept}");
    assert!(!kept.contains("rootdir:") && !kept.contains("platform linux"), "{kept}");
    let left_out = filter(&log, &Settings::default()).unwrap().text;
    assert!(!left_out.contains("loading the price table"), "{left_out}");
}

#[test]
fn pytest_keeps_the_line_that_says_the_run_was_interrupted() {
    let interrupted =
        "!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!";
    let log = fixture("pytest-fail.txt");
    let last = log.trim_end().rfind('\n').unwrap() + 1;
    let log = format!("{}{interrupted}\n{}", &log[..last], &log[last..]);
    let shortened = filter(&log, &Settings::default()).unwrap().text;
    assert!(shortened.contains(interrupted), "{shortened}");
}

#[test]
fn a_nextest_retry_passes_only_when_it_says_pass() {
    use super::nextest::{Status, status};
    let line = |word: &str| format!("        {word} [   0.010s] ( 1/92) ledger tests::flaky");
    assert_eq!(status(&line("TRY 2 PASS")), Some(Status::Passed));
    assert_eq!(status(&line("TRY 2 FAIL")), Some(Status::Other), "a later try may pass");
    assert_eq!(status(&line("FLAKY")), Some(Status::Passed));
    assert_eq!(status(&line("SIGSEGV")), Some(Status::Failed));
}

#[test]
fn the_note_counts_what_each_run_says() {
    let run = |runner, failed, passed, errors| Run { runner, failed, passed, errors };
    let cases = [
        (run(Runner::CargoTest, 0, Some(12), 0), "cargo test: 0 failed, 12 passed"),
        (run(Runner::CargoTest, 2, Some(3), 1), "cargo test: 1 error, 2 failed, 3 passed"),
        (run(Runner::Pytest, 0, Some(0), 2), "pytest: 2 errors"),
        (run(Runner::GoTest, 1, None, 0), "go test: 1 failed"),
    ];
    for (run, said) in cases {
        assert_eq!(
            note(&[run]),
            format!("[test_filter: {said} (passing tests and runner noise left out)]\n")
        );
    }
}

#[test]
fn output_that_is_no_test_run_passes_unchanged() {
    let settings = Settings::default();
    for text in [
        "",
        "hello\nworld\n",
        "total 8\ndrwxr-xr-x 2 root root 4096 .\n-rw-r--r-- 1 root root   12 a.txt\n",
        // A build, and a lint run: warnings are all they have to say.
        "   Compiling ledger v0.1.0 (/src/ledger)\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 0.40s\n",
        "    Checking ledger v0.1.0\nwarning: unused variable: `x`\n --> src/lib.rs:2:9\n  |\n2 |     let x = 1;\n  |         ^ help: prefix it with an underscore: `_x`\n\nwarning: `ledger` (lib) generated 1 warning\n    Finished `dev` profile in 0.1s\n",
        "FAIL is a word; PASS too\n=== not a banner\n",
    ] {
        assert_eq!(filter(text, &settings), None, "{text:?}");
    }
    // Lines that look like a runner's, in a long text that is none: nothing to shorten.
    let prose = format!(
        "PASS the salt, please\n  said the cook\nFAIL  at cooking > again\nok  \tfine\n{}",
        "and then the story goes on\n".repeat(200)
    );
    assert_eq!(filter(&prose, &settings), None);
}

#[test]
fn what_surrounds_a_run_is_kept_and_each_run_is_shortened() {
    let cargo = fixture("cargo-fail.txt");
    let pytest = fixture("pytest-fail.txt");
    let vitest = fixture("vitest-fail.txt");
    let jest = fixture("jest-fail.txt");
    let text = format!(
        "$ cargo test\n{cargo}$ pytest\n{pytest}$ npx vitest run\n{vitest}$ npx jest\n{jest}exit status 1\n"
    );
    let shortened = filter(&text, &Settings::default()).expect("recognised");
    let runs: Vec<(&str, u64)> =
        shortened.runs.iter().map(|r| (r.runner.name(), r.failed)).collect();
    assert_eq!(runs, vec![("cargo test", 5), ("pytest", 5), ("vitest", 3), ("jest", 3)]);
    for kept in [
        "$ cargo test\n",
        "$ pytest\n",
        "$ npx vitest run\n",
        "$ npx jest\n",
        "exit status 1\n",
        "7 shared by 2 should round up",
        "E       KeyError: 'quinces'",
        "Error: not a quantity: three",
        "● cart › checks out a basket",
    ] {
        assert!(shortened.text.contains(kept), "lost {kept:?}:\n{}", shortened.text);
    }
    assert!(shortened.text.starts_with(
        "[test_filter: cargo test: 5 failed, 83 passed; pytest: 5 failed, 140 passed; vitest: 3 failed, 57 passed; jest: 3 failed, 57 passed"
    ));
    let each: usize = [cargo, pytest, vitest, jest]
        .iter()
        .map(|t| filter(t, &Settings::default()).unwrap().text.len())
        .sum();
    assert!(shortened.text.len() < each, "one note instead of four");
}

#[test]
fn the_options_keep_more_or_less() {
    let text = fixture("cargo-fail.txt");
    let capped = Settings { max_lines_per_failure: 2, ..Settings::default() };
    let shortened = filter(&text, &capped).unwrap().text;
    assert!(shortened.contains(
        "---- tests::totals_with_refunds stdout ----\nthread 'tests::totals_with_refunds'"
    ));
    assert!(shortened.contains("[test_filter: 3 more lines of this failure left out]"));
    assert!(!shortened.contains(" right: 13"));

    let names = Settings { keep_passed_names: true, ..Settings::default() };
    let shortened = filter(&text, &names).unwrap().text;
    assert!(shortened.contains("test tests::shares_evenly_1 ... ok\n"));
    assert!(!shortened.contains("refund run: 3 entries"));

    let output = Settings { keep_output: true, ..Settings::default() };
    let shortened = filter(&text, &output).unwrap().text;
    assert!(shortened.contains("refund run: 3 entries\n"));
    assert!(!shortened.contains("test tests::shares_evenly_1 ... ok"));
    let shortened = filter(&fixture("jest-fail.txt"), &output).unwrap().text;
    assert!(shortened.contains("checkout of 2 items"));
    let shortened = filter(&fixture("pytest-fail.txt"), &output).unwrap().text;
    assert!(shortened.contains("INFO     inventory:inventory.py:48 north: received 10 apples"));

    let only_pytest = Settings { runners: vec!["pytest".into()], ..Settings::default() };
    assert_eq!(filter(&text, &only_pytest), None);
    assert!(filter(&fixture("pytest-fail.txt"), &only_pytest).is_some());
}

#[test]
fn a_shortened_text_is_never_longer() {
    // Plain `go test` is nearly all failure already: the note would make it longer.
    let text = fixture("go-fail.txt");
    assert_eq!(filter(&text, &Settings::default()), None);
    let tiny = "============================= test session starts ==============================\n1 passed in 0.01s\n";
    let shortened = filter(tiny, &Settings::default()).map(|f| f.text);
    assert!(shortened.is_none_or(|s| s.len() < tiny.len()));
}

#[test]
fn a_very_long_log_is_shortened_to_its_failures() {
    // 100,000 passing tests around the real failing run.
    let real = fixture("cargo-fail.txt");
    let (head, tail) = real.split_once("test tests::totals_small_lists ... ok\n").unwrap();
    let mut text = String::from(head);
    for n in 0..100_000 {
        text.push_str(&format!("test generated::case_{n} ... ok\n"));
    }
    text.push_str(tail);
    let shortened = filter(&text, &Settings::default()).unwrap();
    assert!(shortened.text.len() < 2_000, "{}", shortened.text.len());
    assert!(shortened.text.contains("7 shared by 2 should round up"));
}

/// One test of a `cargo test -- --nocapture` run with several threads, as its thread and
/// libtest's main thread write it: what it prints, its panic (one write: the panic hook
/// writes the message whole), and the status line libtest writes once it has ended.
struct Threaded {
    name: &'static str,
    printed: &'static [&'static str],
    panic: &'static [&'static str],
    status: &'static str,
}

const THREADED: &[Threaded] = &[
    Threaded {
        name: "tests::opens_an_account",
        printed: &[],
        panic: &[
            "thread 'tests::opens_an_account' (4101) panicked at src/lib.rs:308:9:",
            "assertion `left == right` failed",
            "  left: Account { owner: \"ada\", balance: 0, tags: [\"new\"] }",
            " right: Account { owner: \"ada\", balance: 0, tags: [\"fresh\"] }",
        ],
        status: "FAILED",
    },
    Threaded {
        name: "tests::reads_a_port",
        printed: &["reading port=8080"],
        panic: &[],
        status: "ok",
    },
    Threaded {
        name: "tests::reads_a_port_with_spaces",
        printed: &[],
        panic: &[
            "thread 'tests::reads_a_port_with_spaces' (4103) panicked at src/lib.rs:313:37:",
            "called `Result::unwrap()` on an `Err` value: ParseIntError { kind: InvalidDigit }",
        ],
        status: "FAILED",
    },
    Threaded {
        name: "tests::refuses_one_part - should panic",
        printed: &[],
        panic: &[],
        status: "FAILED",
    },
    Threaded {
        name: "tests::refuses_zero_parts - should panic",
        printed: &[],
        panic: &[
            "thread 'tests::refuses_zero_parts' (4105) panicked at src/lib.rs:22:9:",
            "cannot share 10 into zero parts",
        ],
        status: "ok",
    },
    Threaded {
        name: "tests::rounds_shares",
        printed: &[],
        panic: &[
            "thread 'tests::rounds_shares' (4106) panicked at src/lib.rs:319:9:",
            "7 shared by 2 should round up",
        ],
        status: "FAILED",
    },
    Threaded {
        name: "tests::totals_with_refunds",
        printed: &["refund run: 3 entries"],
        panic: &[
            "thread 'tests::totals_with_refunds' (4107) panicked at src/lib.rs:302:9:",
            "assertion `left == right` failed: refunds are subtracted once",
            "  left: 12",
            " right: 13",
        ],
        status: "FAILED",
    },
    Threaded { name: "tests::shares_evenly_1", printed: &[], panic: &[], status: "ok" },
    Threaded { name: "tests::shares_evenly_2", printed: &[], panic: &[], status: "ok" },
    Threaded { name: "tests::shares_evenly_3", printed: &[], panic: &[], status: "ok" },
    Threaded { name: "rates::tests::converts_at_rate_1", printed: &[], panic: &[], status: "ok" },
    Threaded { name: "rates::tests::converts_at_rate_2", printed: &[], panic: &[], status: "ok" },
];

/// One interleaving of [`THREADED`]: each test's lines stay in their order (what it printed,
/// its panic, then its status), the tests' lines are shuffled among each other by `seed`
/// (xorshift, so every seed gives the same log on every machine), and the first panic is
/// followed by the hook's note, as libtest's output is.
fn interleaved(seed: u64) -> String {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = move |bound: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        usize::try_from(state % bound as u64).unwrap_or(0)
    };
    // Each test as the writes it makes, in order; a panic is one write.
    let mut queues: Vec<std::collections::VecDeque<Vec<String>>> = THREADED
        .iter()
        .map(|test| {
            let mut writes: std::collections::VecDeque<Vec<String>> =
                test.printed.iter().map(|line| vec![(*line).to_owned()]).collect();
            if !test.panic.is_empty() {
                let mut panic = vec![String::new()];
                panic.extend(test.panic.iter().map(|line| (*line).to_owned()));
                writes.push_back(panic);
            }
            writes.push_back(vec![format!("test {} ... {}", test.name, test.status)]);
            writes
        })
        .collect();
    let mut text = format!("\nrunning {} tests\n", THREADED.len());
    let mut noted = false;
    while queues.iter().any(|queue| !queue.is_empty()) {
        let open: Vec<usize> = (0..queues.len()).filter(|&i| !queues[i].is_empty()).collect();
        let write = queues[open[next(open.len())]].pop_front().unwrap_or_default();
        let panic = write.len() > 1;
        for line in write {
            text.push_str(&line);
            text.push('\n');
        }
        if panic && !noted {
            text.push_str(
                "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n",
            );
            noted = true;
        }
    }
    text.push_str(
        "\nfailures:\n\n---- tests::refuses_one_part stdout ----\n\
         note: test did not panic as expected at src/lib.rs:324:8\n\nfailures:\n    \
         tests::opens_an_account\n    tests::reads_a_port_with_spaces\n    \
         tests::refuses_one_part\n    tests::rounds_shares\n    tests::totals_with_refunds\n\n\
         test result: FAILED. 7 passed; 5 failed; 0 ignored; 0 measured; 0 filtered out; \
         finished in 0.01s\n\nerror: test failed, to rerun pass `--lib`\n",
    );
    text
}

/// `cargo test -- --nocapture` with several threads interleaves what the tests print with
/// libtest's lines differently in every run (the real log of such a run is
/// `fixtures/cargo-fail-nocapture-interleaved.txt`; `scripts/make-test-logs` runs one
/// thread, so that its logs are the same every time). Whatever the order, every failure keeps
/// its name, message and place, the counts are right, and no passing test's line or
/// passing `should_panic` test's panic is kept. What cannot hold for every order: a line
/// another test prints between a panic's message and libtest's next line reads as more of
/// that message, so it is kept with it.
#[test]
fn nocapture_output_in_any_interleaving_keeps_every_failure_and_drops_the_passes() {
    let kept = [
        "thread 'tests::opens_an_account'",
        "panicked at src/lib.rs:308:9:",
        " right: Account { owner: \"ada\", balance: 0, tags: [\"fresh\"] }",
        "called `Result::unwrap()` on an `Err` value: ParseIntError { kind: InvalidDigit }",
        "---- tests::refuses_one_part stdout ----",
        "note: test did not panic as expected at src/lib.rs:324:8",
        "panicked at src/lib.rs:319:9:\n7 shared by 2 should round up",
        "assertion `left == right` failed: refunds are subtracted once",
        "passed; 5 failed;",
    ];
    let gone = ["cannot share 10 into zero parts", "... ok", "running ", "RUST_BACKTRACE"];
    let real = fixture("cargo-fail-nocapture-interleaved.txt");
    let mut orders = std::collections::HashSet::new();
    for (seed, text) in (1..=500).map(|seed| (seed, interleaved(seed))).chain([(0, real)]) {
        orders.insert(text.clone());
        let shortened = filter(&text, &Settings::default()).expect("recognised");
        let runs: Vec<(&str, u64, Option<u64>)> =
            shortened.runs.iter().map(|r| (r.runner.name(), r.failed, r.passed)).collect();
        let passed = if seed == 0 { 83 } else { 7 };
        assert_eq!(runs, vec![("cargo test", 5, Some(passed))], "seed {seed}:\n{text}");
        let shortened = shortened.text;
        for part in kept {
            assert!(shortened.contains(part), "seed {seed}: lost {part:?}\n{text}=>\n{shortened}");
        }
        for part in gone {
            assert!(!shortened.contains(part), "seed {seed}: kept {part:?}\n{text}=>\n{shortened}");
        }
    }
    assert!(orders.len() > 400, "the seeds make different orders: {}", orders.len());
}

/// With one test thread and `--nocapture`, libtest names a test before it runs and writes its
/// status on a line of its own after what the test printed: the status ends the panic's
/// message, and a test whose name line carries its output is a pass or a failure like any.
#[test]
fn one_thread_nocapture_statuses_on_their_own_lines_are_read() {
    let text = fixture("cargo-fail-nocapture.txt");
    let shortened = filter(&text, &Settings::default()).expect("recognised").text;
    assert!(
        shortened.contains(" right: Account { owner: \"ada\", balance: 0, tags: [\"fresh\"] }\n"),
        "{shortened}"
    );
    assert!(!shortened.lines().any(|line| line == "FAILED" || line == "ok"), "{shortened}");
    let names = Settings { keep_passed_names: true, ..Settings::default() };
    let shortened = filter(&text, &names).unwrap().text;
    assert!(shortened.contains("test tests::reads_a_port ... reading port=8080\n"), "{shortened}");
}

// Tests for the survivors of test_filter's second and third mutation samples
// (docs/mutants.md): each checks a behaviour no other test checked.

#[test]
fn a_shortened_text_exactly_as_long_as_the_original_is_not_used() {
    // The passing test's line is left out, so the shortened text is the same whatever the
    // length of its name: names are chosen to make the log exactly as long, and one longer.
    let log = |name: &str| {
        format!(
            "running 1 test\ntest {name} ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n\n"
        )
    };
    let shortened = filter(&log(&"x".repeat(200)), &Settings::default()).expect("shorter").text;
    let name = shortened.len() - log("").len();
    let same = log(&"x".repeat(name));
    assert_eq!(same.len(), shortened.len());
    assert_eq!(filter(&same, &Settings::default()), None, "not shorter: kept as it was");
    let longer = log(&"x".repeat(name + 1));
    assert_eq!(filter(&longer, &Settings::default()).expect("one byte shorter").text, shortened);
}

#[test]
fn a_line_where_a_run_may_start_but_does_not_is_stepped_over() {
    // jest's stretch may start at `Determining test suites to run...`, but its parser takes
    // nothing there (the line is not one of a run's): the filter goes on at the next line.
    let log = format!("Determining test suites to run...\n{}", fixture("jest-fail.txt"));
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(filter(&log, &Settings::default()));
    });
    let shortened = receive
        .recv_timeout(std::time::Duration::from_secs(5))
        .expect("the filter ends")
        .expect("recognised");
    assert!(shortened.text.contains("\nDetermining test suites to run...\n"), "{}", shortened.text);
    let run = Run { runner: Runner::Jest, failed: 3, passed: Some(57), errors: 0 };
    assert_eq!(shortened.runs, [run]);
}
