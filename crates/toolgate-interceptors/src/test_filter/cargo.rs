//! What `cargo test` and `cargo nextest run` print: cargo's own status lines and the
//! compiler's diagnostics (errors kept whole: a test run that does not compile failed),
//! then libtest's binaries ([`super::libtest`]) or nextest's status lines
//! ([`super::nextest`]).

use std::collections::HashSet;

use super::libtest;
use super::nextest::{self, Status};
use super::region::{Block, Kind, Region, Runner};
use super::text::Lines;

/// cargo's status words, right-aligned to twelve columns (`   Compiling ledger v0.1.0`).
fn cargo_status(line: &str) -> bool {
    const VERBS: &[&str] = &[
        "Compiling",
        "Checking",
        "Finished",
        "Running",
        "Doc-tests",
        "Fresh",
        "Downloaded",
        "Downloading",
        "Updating",
        "Locking",
        "Blocking",
        "Building",
        "Adding",
        "Documenting",
        "Removing",
        "Packaging",
        "Verifying",
        "Unpacking",
        "Waiting",
        "Dirty",
        "Scraping",
    ];
    let trimmed = line.trim_start();
    let indent = line.len() - trimmed.len();
    let word = trimmed.split(' ').next().unwrap_or_default();
    indent + word.len() == 12 && trimmed.len() > word.len() && VERBS.contains(&word)
}

/// Where a cargo stretch may start.
pub(crate) fn begins(lines: &Lines<'_>, i: usize) -> bool {
    let line = lines.plain(i);
    cargo_status(line)
        || libtest::is_running(line)
        || line.starts_with("error[E")
        || nextest::starting(line)
        || nextest::status(line).is_some()
        || line.trim_start().starts_with("Nextest run ID ")
}

/// A diagnostic's first line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Diagnostic {
    Error,
    Warning,
}

fn diagnostic(line: &str) -> Option<Diagnostic> {
    if line.starts_with("error[") || line.starts_with("error:") {
        Some(Diagnostic::Error)
    } else if line.starts_with("warning[") || line.starts_with("warning:") {
        Some(Diagnostic::Warning)
    } else {
        None
    }
}

/// A line that goes on a diagnostic: its snippet, gutter, notes and help.
fn continuation(line: &str) -> bool {
    !cargo_status(line)
        && nextest::status(line).is_none()
        && (line.starts_with([' ', '\t', '|'])
            || line.starts_with(|c: char| c.is_ascii_digit())
            || line.starts_with("help:")
            || line.starts_with("note:")
            || line.starts_with("= "))
}

/// What the compiler adds after its errors, pointing at `rustc --explain`.
fn explain_hint(line: &str) -> bool {
    line.starts_with("Some errors have detailed explanations")
        || line.starts_with("For more information about this error")
        || line.starts_with("For more information about an error")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Outside,
    /// Between `running N tests` and `test result:`.
    Binary,
    /// A panic printed as it happened, in a binary: its message.
    Panic,
    /// After the first `failures:`: the failing tests' sections.
    Sections,
    /// After the second `failures:`: the list of their names.
    List,
    /// In a diagnostic: kept (an error) or not (a warning).
    Diagnostic {
        keep: bool,
    },
    /// Under a failing test's status line; `flat`: the older nextest format, whose output is
    /// not indented.
    NextestFailure {
        flat: bool,
    },
    /// After nextest's summary: the failing tests listed once more.
    NextestSummary,
}

/// The stretch of cargo's output that starts at `start`.
pub(crate) fn parse(lines: &Lines<'_>, start: usize) -> Region {
    Parser::new(lines, start).run()
}

struct Parser<'l, 'a> {
    lines: &'l Lines<'a>,
    region: Region,
    state: State,
    /// The open block: a diagnostic, or a nextest failure.
    block: Option<Block>,
    /// The open libtest section: its header and its lines.
    section: Option<(usize, Vec<usize>)>,
    /// Lines of the output nextest shows under the open failure.
    output: Vec<usize>,
    /// The binary's tests reported FAILED (the line that names each, and its name), and
    /// those whose failure was shown.
    failed: Vec<(usize, &'l str)>,
    /// The test that one-thread `--nocapture` named and whose status has not come yet: the
    /// line that names it, and its name.
    running: Option<(usize, &'l str)>,
    explained: HashSet<String>,
    nextest: bool,
    /// Counts from nextest's status lines, for a run cut before its summary.
    nextest_counts: Option<(u64, u64)>,
    nextest_seen: (u64, u64),
    /// Panics printed as they happened (`--nocapture`), by thread: a test's failure only if
    /// libtest reports it FAILED (a `should_panic` test that passes panics too).
    panics: Vec<(String, Block)>,
}

impl<'l, 'a> Parser<'l, 'a> {
    fn new(lines: &'l Lines<'a>, start: usize) -> Parser<'l, 'a> {
        Parser {
            lines,
            region: Region::new(Runner::CargoTest, start),
            state: State::Outside,
            block: None,
            section: None,
            output: Vec::new(),
            failed: Vec::new(),
            running: None,
            explained: HashSet::new(),
            nextest: false,
            nextest_counts: None,
            nextest_seen: (0, 0),
            panics: Vec::new(),
        }
    }

    fn run(mut self) -> Region {
        let lines = self.lines;
        let mut i = self.region.end;
        let mut last = i;
        while i < lines.len() {
            match self.step(i) {
                Step::Took => {
                    i += 1;
                    last = i;
                }
                Step::Blank => i += 1,
                Step::Again => {}
                Step::End => break,
            }
        }
        self.close();
        if self.nextest {
            self.region.runner = Runner::Nextest;
            let (passed, failed) = self.nextest_counts.unwrap_or(self.nextest_seen);
            self.region.passed += passed;
            self.region.failed += failed;
        }
        self.region.end = last;
        self.region
    }

    /// Ends whatever is open.
    fn close(&mut self) {
        // A binary cut short: its panics may be its failures.
        for (_, block) in std::mem::take(&mut self.panics) {
            self.region.block(block);
        }
        self.close_section();
        if matches!(self.state, State::NextestFailure { .. }) {
            self.close_nextest_failure();
        }
        if let Some(block) = self.block.take() {
            self.region.block(block);
        }
        self.state = State::Outside;
    }

    fn close_section(&mut self) {
        if let Some((header, output)) = self.section.take() {
            let mut block = Block::failure(header);
            libtest::detail(self.lines, &output, &mut block);
            self.region.block(block);
        }
    }

    fn close_nextest_failure(&mut self) {
        let mut block = self.block.take().unwrap_or_default();
        libtest::detail(self.lines, &self.output, &mut block);
        self.output.clear();
        self.region.block(block);
    }

    /// The end of a binary: its failures that showed nothing, then its result.
    fn end_binary(&mut self, i: usize, counts: [u64; 5]) {
        let failed = std::mem::take(&mut self.failed);
        self.running = None;
        for (name, block) in std::mem::take(&mut self.panics) {
            if failed.iter().any(|(_, failed)| *failed == name) {
                self.explained.insert(name);
                self.region.block(block);
            }
        }
        for (line, name) in failed {
            if !self.explained.contains(name) {
                self.region.block(Block::failure(line));
            }
        }
        self.explained.clear();
        self.region.passed += counts[0];
        self.region.failed += counts[1];
        // A binary without tests says nothing worth a line.
        if counts.iter().any(|n| *n > 0) {
            self.region.line(i, Kind::Keep);
        }
        self.state = State::Outside;
    }

    fn step(&mut self, i: usize) -> Step {
        let lines = self.lines;
        let line = lines.plain(i);
        let blank = line.trim().is_empty();
        match self.state {
            State::Outside => {}
            State::Binary => {
                if let Some(counts) = libtest::result(line) {
                    self.end_binary(i, counts);
                } else if let Some((name, status)) = libtest::test_line(line) {
                    if status == "ok" {
                        self.region.line(i, Kind::Passed);
                    } else if status == "FAILED" {
                        self.failed.push((i, name));
                    }
                } else if let Some(status) = self.running.and_then(|_| libtest::status_alone(line))
                {
                    let (named, name) = self.running.take().unwrap_or_default();
                    if status == "ok" {
                        self.region.line(named, Kind::Passed);
                    } else if status == "FAILED" {
                        self.failed.push((named, name));
                    }
                } else if let Some((name, _)) = libtest::started(line) {
                    self.running = Some((i, name));
                } else if line == "failures:" {
                    self.state = State::Sections;
                } else if let Some(name) = libtest::panic(line) {
                    // Printed as it happened (`--nocapture`): the panic and its message.
                    self.panics.push((name.to_owned(), Block::failure(i)));
                    self.state = State::Panic;
                } else if !blank {
                    self.region.line(i, Kind::Output);
                }
                return Step::Took;
            }
            State::Panic => {
                // The message goes on until a blank line or libtest's next line.
                if blank || line.starts_with("note: ") {
                    self.state = State::Binary;
                    return Step::Took;
                }
                if libtest::test_line(line).is_some()
                    || (self.running.is_some() && libtest::status_alone(line).is_some())
                    || libtest::panic(line).is_some()
                    || libtest::result(line).is_some()
                    || line == "failures:"
                {
                    self.state = State::Binary;
                    return Step::Again;
                }
                if let Some((_, block)) = self.panics.last_mut() {
                    block.push(i, Kind::Keep);
                }
                return Step::Took;
            }
            State::Sections => {
                if let Some(name) = libtest::section(line) {
                    self.close_section();
                    self.explained.insert(name.to_owned());
                    self.section = Some((i, Vec::new()));
                } else if line == "failures:" {
                    self.close_section();
                    self.state = State::List;
                } else if libtest::result(line).is_some() {
                    self.close_section();
                    self.state = State::Binary;
                    return Step::Again;
                } else if let Some((_, output)) = &mut self.section {
                    output.push(i);
                }
                return Step::Took;
            }
            State::List => {
                if libtest::result(line).is_some() {
                    self.state = State::Binary;
                    return Step::Again;
                }
                if blank || line.starts_with("    ") {
                    return Step::Took;
                }
                self.state = State::Outside;
                return Step::Again;
            }
            State::Diagnostic { keep } => {
                if !blank && continuation(line) {
                    if keep && let Some(block) = &mut self.block {
                        block.push(i, Kind::Keep);
                    }
                    return Step::Took;
                }
                if let Some(block) = self.block.take() {
                    self.region.block(block);
                }
                self.state = State::Outside;
                if blank {
                    return Step::Took;
                }
                return Step::Again;
            }
            State::NextestFailure { flat } => {
                if let Some(flat) = nextest::output_header(line) {
                    self.state = State::NextestFailure { flat };
                    return Step::Took;
                }
                let ends = !blank
                    && (nextest::status(line).is_some()
                        || nextest::decoration(line)
                        || nextest::summary(line).is_some()
                        || (!flat && !line.starts_with("    ")));
                if !ends {
                    self.output.push(i);
                    return if blank { Step::Blank } else { Step::Took };
                }
                self.close_nextest_failure();
                self.state = State::Outside;
                return Step::Again;
            }
            State::NextestSummary => {
                if nextest::status(line).is_some() {
                    return Step::Took;
                }
                self.state = State::Outside;
                return Step::Again;
            }
        }
        self.outside(i, line, blank)
    }

    fn outside(&mut self, i: usize, line: &str, blank: bool) -> Step {
        if blank {
            return Step::Blank;
        }
        if cargo_status(line) || explain_hint(line) {
            return Step::Took;
        }
        if libtest::is_running(line) {
            self.region.tests = true;
            self.state = State::Binary;
            return Step::Took;
        }
        if let Some(status) = nextest::status(line) {
            self.region.tests = true;
            self.nextest = true;
            match status {
                Status::Passed => {
                    self.nextest_seen.0 += 1;
                    self.region.line(i, Kind::Passed);
                }
                Status::Failed => {
                    self.nextest_seen.1 += 1;
                    self.block = Some(Block::failure(i));
                    self.output.clear();
                    self.state = State::NextestFailure { flat: false };
                }
                Status::Other => {}
            }
            return Step::Took;
        }
        if nextest::starting(line) || nextest::decoration(line) {
            self.nextest = true;
            self.region.tests = true;
            return Step::Took;
        }
        if let Some(counts) = nextest::summary(line) {
            self.nextest = true;
            self.region.tests = true;
            self.nextest_counts = Some(counts);
            self.region.line(i, Kind::Keep);
            self.state = State::NextestSummary;
            return Step::Took;
        }
        match diagnostic(line) {
            Some(Diagnostic::Warning) => {
                self.state = State::Diagnostic { keep: false };
                Step::Took
            }
            Some(Diagnostic::Error) => {
                let located = line.starts_with("error[")
                    || (i + 1 < self.lines.len()
                        && self.lines.plain(i + 1).trim_start().starts_with("--> "));
                if located {
                    self.region.errors += 1;
                    self.block = Some(Block::failure(i));
                } else {
                    if line.starts_with("error: test failed")
                        || line.starts_with("error: test run failed")
                        || (line.starts_with("error: could not compile")
                            && (line.contains(" test)") || line.contains("(test ")))
                    {
                        self.region.tests = true;
                    }
                    let mut block = Block::default();
                    block.push(i, Kind::Keep);
                    self.block = Some(block);
                }
                self.state = State::Diagnostic { keep: true };
                Step::Took
            }
            None => Step::End,
        }
    }
}

/// What one line did to the walk.
enum Step {
    /// The line belongs to the stretch.
    Took,
    /// A blank line: it belongs only if more of the stretch follows.
    Blank,
    /// The state changed: look at the same line again.
    Again,
    /// The stretch ended before this line.
    End,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_line_is_a_verb_right_aligned_to_twelve_columns_and_what_it_acts_on() {
        assert!(cargo_status("   Compiling ledger v0.1.0 (/src/ledger)"));
        assert!(cargo_status(
            "    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.52s"
        ));
        // A log cut after the verb (at a byte limit), or the verb out of its column.
        assert!(!cargo_status("    Finished"));
        assert!(!cargo_status("Compiling ledger v0.1.0 (/src/ledger)"));
    }
}
