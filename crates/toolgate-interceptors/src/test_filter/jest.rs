//! jest: `PASS`/`FAIL` per file (with each test under it when one file runs), `console.*`
//! blocks, one `●` block per failing test (its message, the expected/received or the diff,
//! the code frame's failing line and the project's stack lines), the summary.

use std::sync::LazyLock;

use regex::Regex;

use super::region::{Block, Kind, Region, Runner};
use super::text::Lines;

/// `PASS ./cart.test.js` or `FAIL src/a.test.ts (5.2 s)` (with colours, the word is on a
/// badge: ` FAIL  ./cart.test.js`).
static FILE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^ ?(PASS|FAIL) +\S").expect("a valid pattern"));
/// `  ● cart › totals with a discount`.
static FAILURE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^ *● \S").expect("a valid pattern"));
/// `    console.log` (the start of what a test wrote to the console).
static CONSOLE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^ +console\.(?:log|info|warn|error|debug|trace)$").expect("a valid pattern")
});
/// `    > 22 |     expect(...)` (the failing line) or `      21 |   });`.
static FRAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^ *(>)? *\d+ \|").expect("a valid pattern"));
/// `Tests:       3 failed, 27 passed, 30 total`.
static TESTS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^Tests: +(.+)$").expect("a valid pattern"));

/// Where a jest stretch may start.
pub(crate) fn begins(lines: &Lines<'_>, i: usize) -> bool {
    let line = lines.plain(i);
    FILE.is_match(line)
        || CONSOLE.is_match(line)
        || line.starts_with("Test Suites: ")
        || line.starts_with("Determining test suites to run")
}

/// A stack line of a library or of node itself.
fn library_stack(line: &str) -> bool {
    line.contains("node_modules/")
        || line.contains("(node:")
        || line.contains("at node:")
        || line.contains("<anonymous>")
}

fn counts(summary: &str) -> (u64, u64) {
    let (mut passed, mut failed) = (0, 0);
    for part in summary.split(", ") {
        let mut it = part.split(' ');
        let (Some(n), Some(word)) = (it.next(), it.next()) else { continue };
        let Ok(n) = n.parse::<u64>() else { continue };
        match word {
            "passed" => passed = n,
            "failed" => failed = n,
            _ => {}
        }
    }
    (passed, failed)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Files,
    Console,
    Failure,
    /// `Summary of all failing tests`: the failures once more.
    Repeat,
    Summary,
}

/// The stretch of jest's output that starts at `start`.
pub(crate) fn parse(lines: &Lines<'_>, start: usize) -> Region {
    let mut region = Region::new(Runner::Jest, start);
    let mut state = State::Files;
    let mut block: Option<Block> = None;
    let mut last = start;
    let mut i = start;
    while i < lines.len() {
        let line = lines.plain(i);
        i += 1;
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        let at = i - 1;
        if state == State::Summary {
            if line.starts_with("Snapshots:") {
                if line.contains("failed") || line.contains("obsolete") {
                    region.line(at, Kind::Keep);
                }
            } else if line.starts_with("Time:") || line.starts_with("Ran all test suites") {
            } else if let Some(captures) = TESTS.captures(line) {
                (region.passed, region.failed) = counts(&captures[1]);
                region.line(at, Kind::Keep);
            } else {
                break;
            }
            last = i;
            if line.starts_with("Ran all test suites") {
                break;
            }
            continue;
        }
        last = i;
        if line.starts_with("Test Suites: ") {
            if let Some(block) = block.take() {
                region.block(block);
            }
            region.tests = true;
            region.line(at, Kind::Keep);
            state = State::Summary;
            continue;
        }
        if state == State::Repeat {
            continue;
        }
        if line.starts_with("Summary of all failing tests") {
            if let Some(block) = block.take() {
                region.block(block);
            }
            state = State::Repeat;
            continue;
        }
        if let Some(captures) = FILE.captures(line) {
            if let Some(block) = block.take() {
                region.block(block);
            }
            let kind = if &captures[1] == "PASS" { Kind::Passed } else { Kind::Keep };
            region.line(at, kind);
            state = State::Files;
            continue;
        }
        if trimmed == "● Console" || CONSOLE.is_match(line) {
            if let Some(block) = block.take() {
                region.block(block);
            }
            region.line(at, Kind::Output);
            state = State::Console;
            continue;
        }
        if FAILURE.is_match(line) {
            if let Some(block) = block.take() {
                region.block(block);
            }
            // A `●` block is jest's beyond doubt; a `PASS` line alone may be prose.
            region.tests = true;
            block = Some(Block::failure(at));
            state = State::Failure;
            continue;
        }
        match state {
            State::Files => {
                // One file run alone lists its tests: `✓ name (2 ms)`, `✕ name`, groups.
                if trimmed.starts_with('✓') || trimmed.starts_with('√') {
                    region.line(at, Kind::Passed);
                } else if !(trimmed.starts_with('✕')
                    || trimmed.starts_with('×')
                    || trimmed.starts_with('○')
                    || trimmed.starts_with('✎')
                    || line.starts_with("  "))
                {
                    // Not jest's: the stretch ends here.
                    last = at;
                    break;
                }
            }
            State::Console => region.line(at, Kind::Output),
            State::Failure => {
                let Some(block) = &mut block else { continue };
                if let Some(captures) = FRAME.captures(line) {
                    if captures.get(1).is_some() {
                        block.push(at, Kind::Keep);
                    }
                } else if trimmed.starts_with('|')
                    && trimmed.trim_start_matches(['|', ' ']).starts_with('^')
                {
                    // The caret under the failing line.
                } else if trimmed.starts_with("at ") {
                    if !library_stack(trimmed) {
                        block.push(at, Kind::Keep);
                    }
                } else {
                    block.push(at, Kind::Keep);
                }
            }
            State::Repeat | State::Summary => {}
        }
    }
    if let Some(block) = block.take() {
        region.block(block);
    }
    region.end = last;
    region
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summarys_counts_are_read() {
        assert_eq!(counts("3 failed, 27 passed, 30 total"), (27, 3));
        assert_eq!(counts("1 failed, 2 skipped, 1 todo, 4 passed, 8 total"), (4, 1));
        assert_eq!(counts("8 passed, 8 total"), (8, 0));
    }

    #[test]
    fn a_stretch_may_start_at_the_summary() {
        // What `| tail -n 5` leaves of a run: no file line, no failure, only the summary.
        let lines = Lines::new(
            "Test Suites: 1 failed, 5 passed, 6 total
Tests:       3 failed, 57 passed, 60 total
Snapshots:   0 total
Time:        1.122 s
Ran all test suites.
",
        );
        assert!(begins(&lines, 0));
        let region = parse(&lines, 0);
        assert_eq!((region.passed, region.failed, region.end), (57, 3, 5));
    }
}
