//! pytest, in its default, `-v` and `-q` forms: the session header, the progress lines, the
//! `FAILURES` and `ERRORS` sections (one block per test: its name, the failing source line
//! `>`, the `E` lines and each frame's `file:line`), the short summary, the final count.

use std::sync::LazyLock;

use regex::Regex;

use super::region::{Block, Kind, Region, Runner};
use super::text::Lines;

/// `==== title ====` (`title` may be a count: the final summary).
static BANNER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^={3,} (.+?) ={3,}$").expect("a valid pattern"));
/// `____ test_name ____`: a failing test's section.
static HEADER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^_{3,} (.+?) _{3,}$").expect("a valid pattern"));
/// `---- Captured stdout call ----` and the like, inside a test's section.
static CAPTURED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^-{3,} (.+?) -{3,}$").expect("a valid pattern"));
/// `test_x.py ..F.s   [ 45%]` (default) or `..F.s   [ 45%]` (`-q`).
static PROGRESS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:\S+ )?[.FEsxXpP]+ *\[ *\d+%\]$").expect("a valid pattern"));
/// `test_x.py::test_y PASSED   [ 10%]` (`-v`).
static VERBOSE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\S+::\S.*? (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)(?: .*)?(?: +\[ *\d+%\])?$")
        .expect("a valid pattern")
});
/// The final count: `5 failed, 30 passed in 0.06s`, `no tests ran in 0.01s`.
static COUNTS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:\d+ [a-z]+(?:, \d+ [a-z]+)*|no tests ran) in [\d.]+s(?: \([^)]*\))?$")
        .expect("a valid pattern")
});
/// `test_x.py:37: AssertionError` or `test_x.py:22: in test_total`: a frame's place.
static LOCATION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[^\s:][^:]*:\d+:(?: .*)?$").expect("a valid pattern"));
/// `stock = {'apples': 1}, item = 'pears'`: a frame's local variables.
static LOCALS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[A-Za-z_]\w* = ").expect("a valid pattern"));

/// Where a pytest stretch may start.
pub(crate) fn begins(lines: &Lines<'_>, i: usize) -> bool {
    let line = lines.plain(i);
    if let Some(captures) = BANNER.captures(line) {
        return matches!(&captures[1], "test session starts" | "FAILURES" | "ERRORS");
    }
    PROGRESS.is_match(line) || VERBOSE.is_match(line)
}

/// The counts of the final summary, if `text` is one: (passed, failed, errors).
fn counts(text: &str) -> Option<(u64, u64, u64)> {
    if !COUNTS.is_match(text) {
        return None;
    }
    let (mut passed, mut failed, mut errors) = (0, 0, 0);
    let words = text.split(" in ").next().unwrap_or_default();
    for part in words.split(", ") {
        let mut it = part.split(' ');
        let (Some(n), Some(word)) = (it.next(), it.next()) else { continue };
        let Ok(n) = n.parse::<u64>() else { continue };
        match word {
            "passed" => passed += n,
            "failed" => failed += n,
            "error" | "errors" => errors += n,
            _ => {}
        }
    }
    Some((passed, failed, errors))
}

/// A hint pytest adds to its explanations (`Use -v to get more diff`), or an empty `E`.
fn hint(rest: &str) -> bool {
    let rest = rest.trim();
    rest.is_empty()
        || rest.starts_with("Use -v to get")
        || rest.starts_with("Omitting ") && rest.ends_with("use -vv to show")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// The header, the progress lines.
    Run,
    /// `FAILURES` or `ERRORS`: test sections.
    Failures,
    /// A captured stream inside a test's section.
    Captured,
    /// `short test summary info`.
    Short,
    /// Another section (warnings summary, durations, passes): left out.
    Other,
}

/// The stretch of pytest's output that starts at `start`.
pub(crate) fn parse(lines: &Lines<'_>, start: usize) -> Region {
    let mut region = Region::new(Runner::Pytest, start);
    let mut state = State::Run;
    let mut block: Option<Block> = None;
    let mut failures = 0;
    let mut last = start;
    let mut i = start;
    while i < lines.len() {
        let line = lines.plain(i);
        i += 1;
        if line.trim().is_empty() {
            continue;
        }
        last = i;
        let banner = BANNER.captures(line).map(|c| c.get(1).map_or("", |m| m.as_str()));
        let title = banner.or_else(|| COUNTS.is_match(line).then_some(line));
        if let Some(title) = title {
            if let Some(block) = block.take() {
                region.block(block);
            }
            if let Some((passed, failed, errors)) = counts(title) {
                region.tests = true;
                region.passed = passed;
                region.failed = failed;
                region.errors = errors;
                region.line(i - 1, Kind::Keep);
                break;
            }
            state = match title {
                "FAILURES" | "ERRORS" => State::Failures,
                "short test summary info" => State::Short,
                "test session starts" => State::Run,
                _ => State::Other,
            };
            continue;
        }
        if line.starts_with("!!!!") {
            // `!!!! Interrupted: 1 error during collection !!!!`
            region.line(i - 1, Kind::Keep);
            continue;
        }
        match state {
            State::Run => {
                if let Some(captures) = VERBOSE.captures(line) {
                    if &captures[1] == "PASSED" {
                        region.line(i - 1, Kind::Passed);
                    }
                } else if !PROGRESS.is_match(line) && !header_line(line) {
                    // Printed by a test as it ran (`-s`).
                    region.line(i - 1, Kind::Output);
                }
            }
            State::Failures | State::Captured => {
                if HEADER.is_match(line) {
                    if let Some(block) = block.take() {
                        region.block(block);
                    }
                    failures += 1;
                    region.tests = true;
                    block = Some(Block::failure(i - 1));
                    state = State::Failures;
                    continue;
                }
                let Some(block) = &mut block else { continue };
                if CAPTURED.is_match(line) {
                    state = State::Captured;
                    block.push(i - 1, Kind::Output);
                    continue;
                }
                if state == State::Captured {
                    block.push(i - 1, Kind::Output);
                    continue;
                }
                if let Some(rest) = line.strip_prefix('E') {
                    if !hint(rest) {
                        block.push(i - 1, Kind::Keep);
                    }
                } else if line.starts_with('>') || LOCATION.is_match(line) {
                    block.push(i - 1, Kind::Keep);
                } else if line.starts_with(' ') || line.starts_with('\t') {
                    // The frame's source (and the carets under it).
                } else if line.starts_with("_ _") || LOCALS.is_match(line) {
                    // A separator between frames; a frame's local variables.
                } else {
                    // `--tb=native` and the like: keep what is not recognised.
                    block.push(i - 1, Kind::Keep);
                }
            }
            State::Short => {
                // Each failure's name and message are shown above already; without a
                // section (`--tb=no`), this is all there is about them.
                if failures == 0 && (line.starts_with("FAILED ") || line.starts_with("ERROR ")) {
                    region.block(Block { lines: vec![(i - 1, Kind::Keep)], failure: true });
                }
            }
            State::Other => {}
        }
    }
    if let Some(block) = block.take() {
        region.block(block);
    }
    region.end = last;
    region
}

/// A line of the session's header.
fn header_line(line: &str) -> bool {
    const HEADER: &[&str] = &[
        "platform ",
        "cachedir:",
        "rootdir:",
        "configfile:",
        "inifile:",
        "testpaths:",
        "plugins:",
        "collected ",
        "collecting ",
        "created:",
        "asyncio:",
        "anyio:",
        "hypothesis profile",
        "django:",
        "Using --randomly-seed",
        "benchmark:",
        "metadata:",
        "timeout:",
        "xdist-",
        "[gw",
        "bringing up nodes",
    ];
    HEADER.iter().any(|start| line.starts_with(start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_final_counts_are_read() {
        assert_eq!(counts("5 failed, 30 passed in 0.06s"), Some((30, 5, 0)));
        assert_eq!(
            counts("1 failed, 2 passed, 1 skipped, 2 errors in 1.20s (0:00:01)"),
            Some((2, 1, 2))
        );
        assert_eq!(counts("no tests ran in 0.01s"), Some((0, 0, 0)));
        assert_eq!(counts("test session starts"), None);
    }

    #[test]
    fn progress_and_verbose_lines_are_recognised() {
        assert!(PROGRESS.is_match(
            "test_inventory.py ..........FFF.F.                                       [ 45%]"
        ));
        assert!(PROGRESS.is_match("..........FFF.F.                                       [100%]"));
        assert!(VERBOSE.is_match("test_a.py::test_b[1-2] PASSED                        [ 10%]"));
        assert!(VERBOSE.is_match("test_a.py::TestX::test_y FAILED"));
        assert!(!PROGRESS.is_match("loading [ 45%]"));
        assert!(LOCATION.is_match("test_inventory.py:37: AssertionError"));
        assert!(LOCATION.is_match("inventory.py:14: "));
        assert!(!LOCATION.is_match("    def test_x():"));
    }
}
