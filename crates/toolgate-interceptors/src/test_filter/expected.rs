//! What the test filter must make of each log `scripts/make-test-logs` writes: the runner and
//! counts it reports, the lines it must keep (every failing test's name, its message, the
//! place and the diff, the summary) and what must be gone, and the least share of tokens it
//! saves. Shared by the unit tests (on the committed fixtures) and `tests/real_runners.rs`
//! (on logs made afresh by the runners installed), so a runner whose format changes fails
//! both the same way.

#![allow(dead_code, unreachable_pub)]

/// One log's expectations.
pub struct Expected {
    /// The file's name (`cargo-fail.txt`).
    pub log: &'static str,
    /// `None`: the log must pass unchanged.
    pub outcome: Option<Outcome>,
}

/// What the filter reports and keeps.
pub struct Outcome {
    /// `Runner::name` of the one run in the log.
    pub runner: &'static str,
    pub failed: u64,
    pub passed: Option<u64>,
    pub errors: u64,
    /// Parts of lines that must be in the shortened text.
    pub kept: &'static [&'static str],
    /// Parts that must not.
    pub gone: &'static [&'static str],
    /// The least share of o200k_base tokens saved (0.8: at least 80 % fewer).
    pub saved: f64,
}

const CARGO_KEPT: &[&str] = &[
    "---- tests::opens_an_account stdout ----",
    "panicked at src/lib.rs:308:9:",
    "assertion `left == right` failed",
    "  left: Account { owner: \"ada\", balance: 0, tags: [\"new\"] }",
    " right: Account { owner: \"ada\", balance: 0, tags: [\"fresh\"] }",
    "---- tests::reads_a_port_with_spaces stdout ----",
    "called `Result::unwrap()` on an `Err` value: ParseIntError { kind: InvalidDigit }",
    "---- tests::refuses_one_part stdout ----",
    "note: test did not panic as expected at src/lib.rs:324:8",
    "---- tests::rounds_shares stdout ----",
    "7 shared by 2 should round up",
    "---- tests::totals_with_refunds stdout ----",
    "assertion `left == right` failed: refunds are subtracted once",
    "  left: 12\n right: 13",
    "test result: FAILED. 83 passed; 5 failed;",
];
const CARGO_GONE: &[&str] = &[
    "test tests::shares_evenly_1 ... ok",
    "test rates::tests::converts_at_rate_1 ... ok",
    "Compiling ledger",
    "Running unittests",
    "refund run: 3 entries",
    "RUST_BACKTRACE",
    "failures:",
    "\u{1b}[",
];
const NEXTEST_KEPT: &[&str] = &[
    "FAIL [",
    "ledger tests::opens_an_account",
    " right: Account { owner: \"ada\", balance: 0, tags: [\"fresh\"] }",
    "ledger tests::reads_a_port_with_spaces",
    "called `Result::unwrap()` on an `Err` value: ParseIntError { kind: InvalidDigit }",
    "ledger tests::refuses_one_part",
    "note: test did not panic as expected at src/lib.rs:324:8",
    "ledger tests::rounds_shares",
    "7 shared by 2 should round up",
    "ledger tests::totals_with_refunds",
    "assertion `left == right` failed: refunds are subtracted once",
    "ledger::api shares_among_nobody",
    "cannot share 1 into zero parts",
    "92 tests run: 86 passed, 6 failed",
    "error: test run failed",
];
const NEXTEST_GONE: &[&str] = &[
    "PASS [",
    "running 1 test",
    "test result:",
    "Nextest run ID",
    "────",
    "stdout ───",
    "about to share",
    "\u{1b}[",
];
const PYTEST_KEPT: &[&str] = &[
    "test_total_with_returns",
    "E       assert 12 == 13",
    "E        +  where 12 = total([10, 5, -3])",
    "test_inventory.py:37: AssertionError",
    "test_label_of_pears",
    "E         {'tags': ['new']} != {'tags': ['fresh']}",
    "test_odd_numbers[3-True]",
    "E       assert False is True",
    "test_inventory.py:47: AssertionError",
    "test_ships_a_mixed_order",
    ">       shipped = warehouse.ship(order)",
    "test_warehouse.py:25:",
    "inventory.py:55: in ship",
    "E       KeyError: 'quinces'",
    "inventory.py:60: KeyError",
    "test_report_after_shipping",
    "E         Left contains one more item: 'plums: 2'",
    "test_warehouse.py:40: AssertionError",
    "5 failed, 140 passed in ",
];
const PYTEST_GONE: &[&str] = &[
    "platform linux",
    "rootdir:",
    "test_pricing.py ....",
    "PASSED",
    "Captured log",
    "INFO     inventory",
    "counting returns",
    "shipping 6 items from north",
    "def test_total_with_returns",
    "Use -v to get more diff",
    "warehouse = <inventory.Warehouse",
    "^^^^",
    "short test summary info",
    "\u{1b}[",
];
const JEST_KEPT: &[&str] = &[
    "FAIL",
    "cart.test.js",
    "● cart › totals with a discount",
    "Expected: 13",
    "Received: 12",
    "> 22 |     expect(total([...prices, ...refunds])).toBe(13);",
    "at Object.toBe (cart.test.js:22:44)",
    "● cart › checks out a basket",
    "-   \"shipping\": \"express\",",
    "+   \"shipping\": \"standard\",",
    "● cart › parses a written quantity",
    "not a quantity: three",
    "at parseQuantity (cart.js:13:11)",
    "Test Suites: 1 failed, 5 passed, 6 total",
    "Tests:       3 failed, 57 passed, 60 total",
];
const JEST_GONE: &[&str] = &[
    "PASS",
    "console.log",
    "checkout of",
    "● Console",
    "Time:",
    "Ran all test suites",
    "21 |",
    "\u{1b}[",
];
const VITEST_KEPT: &[&str] = &[
    " FAIL  cart.test.js > cart > totals with a discount",
    "AssertionError: expected 12 to be 13 // Object.is equality",
    "- 13\n+ 12",
    "❯ cart.test.js:22:44",
    "22|     expect(total([...prices, ...refunds])).toBe(13);",
    " FAIL  cart.test.js > cart > checks out a basket",
    "+   \"shipping\": \"standard\",",
    " FAIL  cart.test.js > cart > parses a written quantity",
    "Error: not a quantity: three",
    "❯ parseQuantity cart.js:13:11",
    "Test Files  1 failed | 5 passed (6)",
    "Tests  3 failed | 57 passed (60)",
];
const VITEST_GONE: &[&str] =
    &[" RUN ", "stdout |", "checkout of", "✓", "Start at", "Duration", "21|", "\u{1b}["];

/// Every log the script writes (and the go logs written by hand), with what is expected.
pub const LOGS: &[Expected] = &[
    Expected {
        log: "cargo-fail.txt",
        outcome: Some(Outcome {
            runner: "cargo test",
            failed: 5,
            passed: Some(83),
            errors: 0,
            kept: CARGO_KEPT,
            gone: CARGO_GONE,
            saved: 0.75,
        }),
    },
    Expected {
        log: "cargo-fail-color.txt",
        outcome: Some(Outcome {
            runner: "cargo test",
            failed: 5,
            passed: Some(83),
            errors: 0,
            kept: CARGO_KEPT,
            gone: CARGO_GONE,
            saved: 0.8,
        }),
    },
    Expected {
        log: "cargo-fail-nocapture.txt",
        outcome: Some(Outcome {
            runner: "cargo test",
            failed: 5,
            passed: Some(83),
            errors: 0,
            kept: &[
                "thread 'tests::opens_an_account'",
                " right: Account { owner: \"ada\", balance: 0, tags: [\"fresh\"] }",
                "called `Result::unwrap()` on an `Err` value: ParseIntError { kind: InvalidDigit }",
                "---- tests::refuses_one_part stdout ----",
                "note: test did not panic as expected at src/lib.rs:324:8",
                "7 shared by 2 should round up",
                "assertion `left == right` failed: refunds are subtracted once",
                "test result: FAILED. 83 passed; 5 failed;",
            ],
            gone: &[
                // The panic of a should_panic test that passed.
                "cannot share 10 into zero parts",
                "reading port=8080",
                "refund run: 3 entries",
                "test tests::shares_evenly_1 ... ok",
                "RUST_BACKTRACE",
            ],
            saved: 0.75,
        }),
    },
    Expected {
        log: "cargo-fail-backtrace.txt",
        outcome: Some(Outcome {
            runner: "cargo test",
            failed: 6,
            passed: Some(87),
            errors: 0,
            kept: &[
                "---- tests::opens_an_account stdout ----",
                " right: Account { owner: \"ada\", balance: 0, tags: [\"fresh\"] }",
                "ledger::tests::opens_an_account\n             at ./src/lib.rs:308:9",
                "called `Result::unwrap()` on an `Err` value: ParseIntError { kind: InvalidDigit }",
                "note: test did not panic as expected at src/lib.rs:324:8",
                "7 shared by 2 should round up",
                "assertion `left == right` failed: refunds are subtracted once",
                "---- shares_among_nobody stdout ----",
                "cannot share 1 into zero parts",
                "ledger::share\n             at ./src/lib.rs:22:9",
                "api::split_evenly\n             at ./tests/api.rs:19:5",
                "test result: FAILED. 3 passed; 1 failed;",
                "error: 2 targets failed:",
            ],
            gone: &[
                "core::panicking",
                "/rustc/",
                "{{closure}}",
                "stack backtrace:",
                "about to share",
                "Some details are omitted",
                "test tests::shares_evenly_1 ... ok",
            ],
            saved: 0.8,
        }),
    },
    Expected {
        log: "cargo-pass.txt",
        outcome: Some(Outcome {
            runner: "cargo test",
            failed: 0,
            passed: Some(87),
            errors: 0,
            kept: &["test result: ok. 83 passed;", "test result: ok. 3 passed;"],
            gone: &["test tests::", "Compiling", "Doc-tests", "running 83 tests"],
            saved: 0.85,
        }),
    },
    Expected {
        log: "cargo-compile-fail.txt",
        outcome: Some(Outcome {
            runner: "cargo test",
            failed: 0,
            passed: Some(0),
            errors: 3,
            kept: &[
                "error[E0308]: mismatched types\n --> src/lib.rs:4:5",
                "expected `i64`, found `String`",
                "help: try removing the method call",
                " --> src/lib.rs:9:22",
                "error[E0277]: cannot divide `i64` by `usize`",
                "error: could not compile `broken` (lib test) due to 3 previous errors",
            ],
            gone: &["warning: unused variable", "Compiling broken", "For more information"],
            saved: 0.1,
        }),
    },
    Expected {
        log: "nextest-fail.txt",
        outcome: Some(Outcome {
            runner: "cargo nextest",
            failed: 6,
            passed: Some(86),
            errors: 0,
            kept: NEXTEST_KEPT,
            gone: NEXTEST_GONE,
            saved: 0.85,
        }),
    },
    Expected {
        log: "nextest-fail-color.txt",
        outcome: Some(Outcome {
            runner: "cargo nextest",
            failed: 6,
            passed: Some(86),
            errors: 0,
            kept: NEXTEST_KEPT,
            gone: NEXTEST_GONE,
            saved: 0.85,
        }),
    },
    Expected {
        log: "nextest-pass.txt",
        outcome: Some(Outcome {
            runner: "cargo nextest",
            failed: 0,
            passed: Some(86),
            errors: 0,
            kept: &["86 tests run: 86 passed"],
            gone: &["PASS [", "Starting"],
            saved: 0.9,
        }),
    },
    Expected {
        log: "pytest-fail.txt",
        outcome: Some(Outcome {
            runner: "pytest",
            failed: 5,
            passed: Some(140),
            errors: 0,
            kept: PYTEST_KEPT,
            gone: PYTEST_GONE,
            saved: 0.65,
        }),
    },
    Expected {
        log: "pytest-fail-color.txt",
        outcome: Some(Outcome {
            runner: "pytest",
            failed: 5,
            passed: Some(140),
            errors: 0,
            kept: PYTEST_KEPT,
            gone: PYTEST_GONE,
            saved: 0.9,
        }),
    },
    Expected {
        log: "pytest-fail-quiet.txt",
        outcome: Some(Outcome {
            runner: "pytest",
            failed: 5,
            passed: Some(140),
            errors: 0,
            kept: PYTEST_KEPT,
            gone: PYTEST_GONE,
            saved: 0.65,
        }),
    },
    Expected {
        log: "pytest-fail-verbose.txt",
        outcome: Some(Outcome {
            runner: "pytest",
            failed: 5,
            passed: Some(140),
            errors: 0,
            kept: PYTEST_KEPT,
            gone: PYTEST_GONE,
            saved: 0.85,
        }),
    },
    Expected {
        log: "pytest-pass.txt",
        outcome: Some(Outcome {
            runner: "pytest",
            failed: 0,
            passed: Some(138),
            errors: 0,
            kept: &["138 passed in "],
            gone: &["test session starts", "test_pricing.py"],
            saved: 0.6,
        }),
    },
    Expected {
        log: "jest-fail.txt",
        outcome: Some(Outcome {
            runner: "jest",
            failed: 3,
            passed: Some(57),
            errors: 0,
            kept: JEST_KEPT,
            gone: JEST_GONE,
            saved: 0.55,
        }),
    },
    Expected {
        log: "jest-fail-color.txt",
        outcome: Some(Outcome {
            runner: "jest",
            failed: 3,
            passed: Some(57),
            errors: 0,
            kept: JEST_KEPT,
            gone: JEST_GONE,
            saved: 0.85,
        }),
    },
    Expected {
        log: "jest-pass.txt",
        outcome: Some(Outcome {
            runner: "jest",
            failed: 0,
            passed: Some(57),
            errors: 0,
            kept: &["Test Suites: 6 passed, 6 total", "Tests:       57 passed, 57 total"],
            gone: &["PASS", "console.log"],
            saved: 0.8,
        }),
    },
    Expected {
        log: "vitest-fail.txt",
        outcome: Some(Outcome {
            runner: "vitest",
            failed: 3,
            passed: Some(57),
            errors: 0,
            kept: VITEST_KEPT,
            gone: VITEST_GONE,
            saved: 0.7,
        }),
    },
    Expected {
        log: "vitest-fail-color.txt",
        outcome: Some(Outcome {
            runner: "vitest",
            failed: 3,
            passed: Some(57),
            errors: 0,
            kept: VITEST_KEPT,
            gone: VITEST_GONE,
            saved: 0.85,
        }),
    },
    Expected {
        log: "vitest-pass.txt",
        outcome: Some(Outcome {
            runner: "vitest",
            failed: 0,
            passed: Some(57),
            errors: 0,
            kept: &["Test Files  6 passed (6)", "Tests  57 passed (57)"],
            gone: &["✓", "stdout |"],
            saved: 0.8,
        }),
    },
];

/// The go logs, written by hand (no Go toolchain where they were written); the script writes
/// `go-pass.txt`, `go-fail.txt` and `go-fail-verbose.txt` where `go` is installed, from a
/// module whose tests fail the same way.
pub const GO_LOGS: &[Expected] = &[
    Expected {
        log: "go-fail-verbose.txt",
        outcome: Some(Outcome {
            runner: "go test",
            failed: 2,
            passed: Some(2),
            errors: 0,
            kept: &[
                "--- FAIL: TestTotalReturns (0.00s)",
                "stock_test.go:18: Total = 12, want 13",
                "--- FAIL: TestTotalTable (0.00s)",
                "--- FAIL: TestTotalTable/negative (0.00s)",
                "stock_test.go:30: Total([-1]) = -1, want 1",
                "FAIL\texample.com/stock\t",
                "ok  \texample.com/stock/report\t",
            ],
            gone: &["=== RUN", "--- PASS", "report: 2 lines", "[no test files]", "exit status"],
            saved: 0.3,
        }),
    },
    Expected {
        log: "go-panic-build-fail.txt",
        outcome: Some(Outcome {
            runner: "go test",
            failed: 1,
            passed: None,
            errors: 1,
            kept: &[
                "--- FAIL: TestPick (0.00s)",
                "panic: runtime error: index out of range [3] with length 3",
                "example.com/stock.Pick(...)\n\t/src/stock/stock.go:12",
                "/src/stock/stock_test.go:40",
                "# example.com/stock/report [example.com/stock/report.test]",
                "report/report_test.go:12:9: undefined: Totl",
                "FAIL\texample.com/stock/report [build failed]",
            ],
            gone: &["goroutine 7", "testing.tRunner", "/usr/local/go/src"],
            saved: 0.3,
        }),
    },
    // Plain `go test` prints little besides the failures: shortening it would not pay.
    Expected { log: "go-fail.txt", outcome: None },
    Expected { log: "go-pass.txt", outcome: None },
];

/// What the filter made of one log: the text and (runner name, failed, passed, errors) per run.
pub struct Made {
    pub text: String,
    pub runs: Vec<(&'static str, u64, Option<u64>, u64)>,
}

/// Every way `made` (the filter's answer for `log` = `original`) falls short of `expected`,
/// with `tokens` counting o200k_base tokens.
pub fn problems(
    expected: &Expected,
    original: &str,
    made: Option<Made>,
    tokens: impl Fn(&str) -> usize,
) -> Vec<String> {
    let log = expected.log;
    let mut problems = Vec::new();
    let (outcome, made) = match (&expected.outcome, made) {
        (None, None) => return problems,
        (None, Some(_)) => return vec![format!("{log}: should pass unchanged")],
        (Some(_), None) => return vec![format!("{log}: not recognised")],
        (Some(outcome), Some(made)) => (outcome, made),
    };
    let runs = vec![(outcome.runner, outcome.failed, outcome.passed, outcome.errors)];
    if made.runs != runs {
        problems.push(format!("{log}: runs {:?}, expected {runs:?}", made.runs));
    }
    for kept in outcome.kept {
        if !made.text.contains(kept) {
            problems.push(format!("{log}: lost {kept:?}"));
        }
    }
    for gone in outcome.gone {
        if made.text.contains(gone) {
            problems.push(format!("{log}: kept {gone:?}"));
        }
    }
    let before = tokens(original);
    let after = tokens(&made.text);
    let saved = 1.0 - after as f64 / before as f64;
    if saved < outcome.saved {
        problems.push(format!(
            "{log}: {before} -> {after} tokens saves {:.0} %, expected at least {:.0} %",
            saved * 100.0,
            outcome.saved * 100.0
        ));
    }
    problems
}
