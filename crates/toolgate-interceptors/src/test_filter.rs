//! `test_filter`: shortens what test runners print, in the results of the tools it applies to
//! (a shell, a test-runner tool), to what a model needs to fix a failure: each failing test's
//! name, its assertion message and the lines that place it, and the summary.
//!
//! ```toml
//! [[pipeline]]
//! kind = "test_filter"
//! servers = ["shell"]
//! tools = ["run_command", "run_tests"]
//! max_lines_per_failure = 30   # per failing test, and per compile error
//! keep_passed_names = false    # true: list the passing tests too
//! keep_output = false          # true: keep what the tests printed (captured stdout, console.log)
//! runners = ["cargo", "pytest", "jest", "vitest", "go"]
//! ```
//!
//! - **Hook**: `tools/call`, response phase. **Type**: mutation. **Fails open**. Use the common
//!   `servers` and `tools` globs to say which tools print test output: the filter itself only
//!   changes text it recognises, but a tool that never runs tests need not pay for the look.
//! - **What is read**: every text block of the result and the text of every embedded text
//!   resource, each on its own (`structuredContent`, images and other blocks are left as they
//!   are). A result that is an error (`isError`) is filtered too: a failing test run is one.
//! - **Unrecognised output passes byte for byte**: a text none of the runners' parsers
//!   recognises is not touched. In a text that holds more (a `make` log around a test run,
//!   several runners one after the other), the lines outside the runners' output are kept as
//!   they were, and each run is shortened on its own.
//! - **Never longer**: when the shortened text would not be shorter than the original, the
//!   original is kept.
//!
//! # What is kept
//!
//! The shortened text starts with one line saying what was run and counted, for example
//! `[test_filter: cargo test: 5 failed, 27 passed (passing tests and runner noise left out)]`.
//! Then, for each run, in the order the runner printed them, the lines below, as the runner
//! wrote them; everything else of the run (progress, passing tests, timings, backtraces of the
//! standard library, code frames, the runner's hints) is left out.
//!
//! | runner | a failure | the summary |
//! |---|---|---|
//! | `cargo test` (libtest) | `---- name stdout ----`, the `thread '…' panicked at file:line:col:` line and the message (with `left:`/`right:` of `assert_eq!`), `note: test did not panic as expected`, the project's own frames of a backtrace (not `core`, `std`, closures, dependencies); a test that failed without a panic (it returned an `Err`) keeps all it printed; with `--nocapture`, the panic as it was printed, of the tests libtest reports FAILED (a passing `should_panic` test panics too) | each `test result:` line of a binary that has tests, cargo's `error: test failed…` |
//! | compile errors (`cargo test`, `cargo nextest`) | each `error[E…]` (or located `error:`) with its snippet, notes and help, as a failure; warnings are left out | `error: could not compile …` |
//! | `cargo nextest run` | the `FAIL` (or `SIGSEGV`, `TIMEOUT`, …) status line and, of the output under it, what libtest's row says | `Summary […] N tests run: …`, `error: test run failed` |
//! | pytest (default, `-v`, `-q`; `--tb=long`, `short`, `native`) | `____ test_name ____`, the `>` line of each frame, the `E` lines (without pytest's hints such as `Use -v to get more diff`), each frame's `file:line:` line; with `--tb=native` every line but the source | the final count (`5 failed, 30 passed in 0.06s`), `!!! Interrupted … !!!`; the `FAILED …` lines of the short summary only when no failure was shown above (`--tb=no`) |
//! | jest | `FAIL file`, `● describe › test` with its message, `Expected`/`Received` or the diff, the code frame's failing line (`> 22 \| …`), the project's stack lines | `Test Suites:`, `Tests:`, `Snapshots:` when something failed |
//! | vitest | ` FAIL  file > describe > test`, the error and its diff, the `❯ file:line:col` places, the code frame's failing line; `Unhandled Errors` | `Test Files`, `Tests`, `Errors` |
//! | `go test` (plain and `-v`) | `--- FAIL: TestX (…)` with the test's log lines (`file_test.go:17: …`, printed under it, or before it with `-v`), failing subtests, `panic:` with the project's frames, a package's build errors (`# pkg` and the lines under it) | `ok`/`FAIL` per package (`?` packages without tests are left out) |
//!
//! Output where every test passed becomes the note and the summary. A failure's lines are
//! capped at `max_lines_per_failure`, with a line saying how many more there were. Colour
//! codes (ANSI escapes) are removed from the lines of a recognised run, since a model reads no
//! colour, and so are the overdraws of carriage returns; lines outside the runs keep theirs.
//!
//! The parsers are checked on logs of the real runners, made by `scripts/make-test-logs` on
//! small generated projects (committed under `test_filter/fixtures/`, and made afresh by the
//! test `tests/real_runners.rs`). There is no Go toolchain where this was written: the go
//! logs in the fixtures are written by hand after `go help test` and the `testing` package's
//! documentation; the script makes real ones where `go` is installed.
//!
//! Each text is read once, line by line, and each line is looked at by a bounded number of
//! patterns (the `regex` crate, linear in the line): the cost is linear in the text's length.
//! The criterion bench `test_filter` measures about 25 ms for 1 MiB of failing runs and 9 ms
//! for 1 MiB of text that is no test output (on the 2-core machine it was written on).
//!
//! # Options
//!
//! | option | values | default | meaning |
//! |---|---|---|---|
//! | `max_lines_per_failure` | integer ≥ 1 | `30` | most lines kept of one failure or compile error |
//! | `keep_passed_names` | boolean | `false` | keep the lines naming passing tests (`test x ... ok`, `PASS`, `✓`, `PASSED`, `--- PASS`) |
//! | `keep_output` | boolean | `false` | keep what tests printed: captured stdout and logs, `console.log` blocks, a Go test's `fmt.Println` |
//! | `runners` | array of `"cargo"`, `"pytest"`, `"jest"`, `"vitest"`, `"go"` | all | the runners recognised (`"cargo"` is `cargo test` and `cargo nextest`) |
//! | `encoding` | `"o200k_base"`, `"cl100k_base"` | `"o200k_base"` | how the event counts tokens |
//!
//! # Option errors
//!
//! ```text
//! pipeline[0].max_lines_per_failure: expected an integer of at least 1, found 0
//! pipeline[0].keep_output: expected true or false, found "yes"
//! pipeline[0].runners[1]: unknown runner "mocha" (known: cargo, pytest, jest, vitest, go)
//! pipeline[0].encoding: unknown encoding "p50k_base" (known: o200k_base, cl100k_base)
//! ```
//!
//! # Events
//!
//! `transform/applied` (see `transform`) with `runner` (the runners recognised, such as
//! `"cargo test"` or `"cargo nextest, pytest"`), `failed` and `passed` (tests, over every run
//! in the result; `passed` leaves out plain `go test`, which does not count them) and `errors`
//! (compile and collection errors).

mod cargo;
mod gotest;
mod jest;
mod libtest;
mod nextest;
mod pytest;
mod region;
mod text;
mod vitest;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use toolgate_audit::EventBus;
use toolgate_config::InterceptorConfig;
use toolgate_core::mcp;
use toolgate_intercept::{
    CallContext, Descriptor, InterceptError, InterceptionEvent, Interceptor, Message, Outcome,
    Phase,
};
use toolgate_llm::tokens::Encoding;

pub use region::Runner;

use crate::Services;
use crate::options::{OptionError, Options};
use crate::transform::{self, Applied};
use region::{Keep, Region};
use text::Lines;

/// The config `kind`.
pub const KIND: &str = "test_filter";

/// The runner families `runners` can name, in the order their parsers are tried.
const FAMILIES: &[&str] = &["cargo", "pytest", "jest", "vitest", "go"];

/// How the filter shortens.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Most lines kept of one failure (or compile error).
    pub max_lines_per_failure: usize,
    /// Keep the lines naming passing tests.
    pub keep_passed_names: bool,
    /// Keep what the tests printed.
    pub keep_output: bool,
    /// The runner families recognised (names of [`FAMILIES`]).
    pub runners: Vec<String>,
    /// How the event counts tokens.
    pub encoding: Encoding,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            max_lines_per_failure: 30,
            keep_passed_names: false,
            keep_output: false,
            runners: FAMILIES.iter().map(|f| (*f).to_owned()).collect(),
            encoding: Encoding::O200kBase,
        }
    }
}

/// One run the filter recognised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub runner: Runner,
    pub failed: u64,
    /// `None` when the runner does not say (plain `go test`).
    pub passed: Option<u64>,
    /// Compile and collection errors.
    pub errors: u64,
}

/// A shortened text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filtered {
    pub text: String,
    /// The runs found, in order.
    pub runs: Vec<Run>,
}

/// `text` shortened, or `None` when it holds no test output the filter recognises or the
/// shortened text would not be shorter.
pub fn filter(text: &str, settings: &Settings) -> Option<Filtered> {
    let lines = Lines::new(text);
    let enabled = |family: &str| settings.runners.iter().any(|r| r == family);
    type Parse = fn(&Lines<'_>, usize) -> Region;
    type Begins = fn(&Lines<'_>, usize) -> bool;
    let parsers: Vec<(Begins, Parse)> = [
        ("cargo", cargo::begins as Begins, cargo::parse as Parse),
        ("pytest", pytest::begins, pytest::parse),
        ("vitest", vitest::begins, vitest::parse),
        ("jest", jest::begins, jest::parse),
        ("go", gotest::begins, gotest::parse),
    ]
    .into_iter()
    .filter(|(family, _, _)| enabled(family))
    .map(|(_, begins, parse)| (begins, parse))
    .collect();

    let mut regions: Vec<(usize, Region)> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let found =
            parsers.iter().find(|(begins, _)| begins(&lines, i)).map(|(_, parse)| parse(&lines, i));
        match found {
            Some(region) if region.end > i => {
                let end = region.end;
                regions.push((i, region));
                i = end;
            }
            _ => i += 1,
        }
    }
    if !regions.iter().any(|(_, region)| region.tests) {
        return None;
    }

    let keep = Keep {
        max_lines_per_failure: settings.max_lines_per_failure.max(1),
        passed_names: settings.keep_passed_names,
        output: settings.keep_output,
    };
    let runs: Vec<Run> = regions
        .iter()
        .filter(|(_, region)| region.tests)
        .map(|(_, region)| Run {
            runner: region.runner,
            failed: region.failed,
            passed: region.passed_known.then_some(region.passed),
            errors: region.errors,
        })
        .collect();
    let mut out = String::with_capacity(text.len() / 4);
    out.push_str(&note(&runs));
    let mut cursor = 0;
    for (start, region) in &regions {
        pass_through(&lines, cursor, *start, &mut out);
        if region.tests {
            region::render(region, &lines, keep, &mut out);
        } else {
            for j in *start..region.end {
                out.push_str(lines.raw(j));
            }
        }
        cursor = region.end;
    }
    pass_through(&lines, cursor, lines.len(), &mut out);
    if !text.ends_with('\n') && out.ends_with('\n') {
        out.pop();
    }
    (out.len() < text.len()).then_some(Filtered { text: out, runs })
}

/// Copies the lines `from..to` outside any run as they were written, unless they are all
/// blank (what separated a run from the rest).
fn pass_through(lines: &Lines<'_>, from: usize, to: usize, out: &mut String) {
    if (from..to).all(|j| lines.blank(j)) {
        return;
    }
    for j in from..to {
        out.push_str(lines.raw(j));
    }
}

/// The first line of a shortened text: what was run and counted.
fn note(runs: &[Run]) -> String {
    let described: Vec<String> = runs
        .iter()
        .map(|run| {
            let mut parts = Vec::new();
            if run.errors > 0 {
                let s = if run.errors == 1 { "" } else { "s" };
                parts.push(format!("{} error{s}", run.errors));
            }
            if run.failed > 0 || run.errors == 0 {
                parts.push(format!("{} failed", run.failed));
            }
            if let Some(passed) = run.passed
                && (passed > 0 || run.errors == 0)
            {
                parts.push(format!("{passed} passed"));
            }
            format!("{}: {}", run.runner.name(), parts.join(", "))
        })
        .collect();
    format!("[test_filter: {} (passing tests and runner noise left out)]\n", described.join("; "))
}

/// The `test_filter` interceptor.
#[derive(Debug)]
pub struct TestFilter {
    descriptor: Descriptor,
    settings: Settings,
    events: EventBus,
}

impl TestFilter {
    /// Builds it from its `[[pipeline]]` entry.
    pub fn from_config(
        entry: &InterceptorConfig,
        services: &Services,
    ) -> Result<TestFilter, Vec<OptionError>> {
        let mut options = Options::new(entry.path.clone(), &entry.options);
        options.only(&[
            "max_lines_per_failure",
            "keep_passed_names",
            "keep_output",
            "runners",
            "encoding",
        ]);
        let mut settings = Settings::default();
        if let Some(n) = options.integer("max_lines_per_failure", 1) {
            settings.max_lines_per_failure = n;
        }
        settings.keep_passed_names = options.boolean("keep_passed_names", false);
        settings.keep_output = options.boolean("keep_output", false);
        if options.get("runners").is_some() {
            let runners = options.strings("runners");
            for (n, runner) in runners.iter().enumerate() {
                if !FAMILIES.contains(&runner.as_str()) {
                    let path = format!("{}[{n}]", options.at("runners"));
                    options.error(
                        &path,
                        format!("unknown runner {runner:?} (known: {})", FAMILIES.join(", ")),
                    );
                }
            }
            settings.runners = runners;
        }
        if let Some(name) = options.string("encoding") {
            match name.parse::<Encoding>() {
                Ok(encoding) => settings.encoding = encoding,
                Err(_) => {
                    let path = options.at("encoding");
                    let known: Vec<&str> = Encoding::ALL.iter().map(|e| e.name()).collect();
                    options.error(
                        &path,
                        format!("unknown encoding {name:?} (known: {})", known.join(", ")),
                    );
                }
            }
        }
        let descriptor =
            options.configure(transform::descriptor(KIND, &[InterceptionEvent::ToolsCall]), entry);
        options.finish(descriptor, |descriptor| TestFilter {
            descriptor,
            settings,
            events: services.events.clone(),
        })
    }

    /// How it shortens.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// `result` with its test output shortened, and the runs found; `None` when nothing
    /// changed.
    pub fn shorten(&self, result: &mcp::CallToolResult) -> Option<(mcp::CallToolResult, Vec<Run>)> {
        let mut runs = Vec::new();
        let mut changed: Vec<(usize, String)> = Vec::new();
        for (n, block) in result.content.iter().enumerate() {
            let text = match block {
                mcp::ContentBlock::Text(t) => &t.text,
                mcp::ContentBlock::Resource(r) => match &r.resource {
                    mcp::ResourceContents::TextResourceContents { text, .. } => text,
                    _ => continue,
                },
                _ => continue,
            };
            if let Some(filtered) = filter(text, &self.settings) {
                runs.extend(filtered.runs);
                changed.push((n, filtered.text));
            }
        }
        if changed.is_empty() {
            return None;
        }
        let mut shortened = result.clone();
        for (n, text) in changed {
            match &mut shortened.content[n] {
                mcp::ContentBlock::Text(t) => t.text = text,
                mcp::ContentBlock::Resource(r) => {
                    if let mcp::ResourceContents::TextResourceContents { text: t, .. } =
                        &mut r.resource
                    {
                        *t = text;
                    }
                }
                _ => {}
            }
        }
        Some((shortened, runs))
    }
}

/// The event's details of `runs`.
fn details(runs: &[Run]) -> Vec<(&'static str, Value)> {
    let mut names: Vec<&str> = Vec::new();
    for run in runs {
        if !names.contains(&run.runner.name()) {
            names.push(run.runner.name());
        }
    }
    vec![
        ("runner", json!(names.join(", "))),
        ("failed", json!(runs.iter().map(|r| r.failed).sum::<u64>())),
        ("passed", json!(runs.iter().filter_map(|r| r.passed).sum::<u64>())),
        ("errors", json!(runs.iter().map(|r| r.errors).sum::<u64>())),
    ]
}

impl Interceptor for TestFilter {
    fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    fn intercept<'a>(
        &'a self,
        _event: InterceptionEvent,
        _phase: Phase,
        message: &'a Message,
        ctx: &'a mut CallContext,
    ) -> BoxFuture<'a, Result<Outcome, InterceptError>> {
        Box::pin(async move {
            let Message::ToolResult(result) = message else { return Ok(Outcome::Continue) };
            let Some((shortened, runs)) = self.shorten(result) else {
                return Ok(Outcome::Continue);
            };
            if self.events.wants(transform::APPLIED) {
                let before = transform::model_text(result);
                let after = transform::model_text(&shortened);
                Applied {
                    interceptor: &self.descriptor.name,
                    kind: KIND,
                    before: &before,
                    after: &after,
                    encoding: self.settings.encoding,
                    details: details(&runs),
                }
                .publish(&self.events, ctx);
            }
            Ok(Outcome::Rewrite(Message::ToolResult(shortened)))
        })
    }
}

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;
