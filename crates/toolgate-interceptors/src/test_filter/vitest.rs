//! vitest's default reporter: ` RUN  v4.1.12 /path`, `stdout | file > test` blocks, one line
//! per file (with its tests under it when one fails), `Failed Tests N`, one ` FAIL ` block per
//! failing test (the error, the diff, the `❯ file:line:col` places and the code frame's
//! failing line), the summary (`Test Files`, `Tests`, `Errors`).

use std::sync::LazyLock;

use regex::Regex;

use super::region::{Block, Kind, Region, Runner};
use super::text::Lines;

/// ` RUN  v4.1.12 /tmp/project`.
static RUN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^ ?RUN +v\d+\.\d+").expect("a valid pattern"));
/// ` ✓ cart.test.js (8 tests) 5ms` or ` ❯ cart.test.js (11 tests | 3 failed) 14ms`.
static FILE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^ ?[✓❯×↓] \S.* \(\d+ tests?(?: \| [^)]*)?\)").expect("a valid pattern")
});
/// `      Tests  3 failed | 8 passed (11)`.
static TESTS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^ +Tests +(.+)$").expect("a valid pattern"));
/// `     22|     expect(...)`: a line of a code frame.
static FRAME: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^ +\d+\|").expect("a valid pattern"));

/// Where a vitest stretch may start.
pub(crate) fn begins(lines: &Lines<'_>, i: usize) -> bool {
    let line = lines.plain(i);
    RUN.is_match(line)
        || FILE.is_match(line)
        || failure(line)
        || line.starts_with(" Test Files  ")
        || (line.starts_with('⎯') && line.contains(" Failed Tests "))
}

fn counts(summary: &str) -> (u64, u64) {
    let (mut passed, mut failed) = (0, 0);
    let summary = summary.split(" (").next().unwrap_or_default();
    for part in summary.split(" | ") {
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

/// ` FAIL  cart.test.js > cart > totals` (jest's coloured ` FAIL  ./cart.test.js` has no `>`).
fn failure(line: &str) -> bool {
    line.starts_with(" FAIL ") && line.contains(" > ")
}

/// A `⎯⎯⎯` rule: a section's title (`Failed Tests 3`), or the end of a failure (`[1/3]`).
fn rule(line: &str) -> bool {
    line.starts_with('⎯')
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Files,
    Output,
    Failure,
    Summary,
}

/// The stretch of vitest's output that starts at `start`.
pub(crate) fn parse(lines: &Lines<'_>, start: usize) -> Region {
    let mut region = Region::new(Runner::Vitest, start);
    let mut state = State::Files;
    let mut block: Option<Block> = None;
    // The last line of a code frame, kept when a caret points at it.
    let mut frame: Option<usize> = None;
    let mut last = start;
    let mut i = start;
    while i < lines.len() {
        let line = lines.plain(i);
        i += 1;
        let at = i - 1;
        let trimmed = line.trim();
        if trimmed.is_empty() {
            if state == State::Output {
                state = State::Files;
            }
            continue;
        }
        if state == State::Summary {
            if let Some(captures) = TESTS.captures(line) {
                (region.passed, region.failed) = counts(&captures[1]);
                region.line(at, Kind::Keep);
            } else if trimmed.starts_with("Test Files ") || trimmed.starts_with("Errors ") {
                region.line(at, Kind::Keep);
            } else if trimmed.starts_with("Start at ") || trimmed.starts_with("Duration ") {
            } else {
                break;
            }
            last = i;
            if trimmed.starts_with("Duration ") {
                break;
            }
            continue;
        }
        last = i;
        if line.starts_with(" Test Files ") {
            if let Some(block) = block.take() {
                region.block(block);
            }
            region.tests = true;
            region.line(at, Kind::Keep);
            state = State::Summary;
            continue;
        }
        if RUN.is_match(line) {
            continue;
        }
        if line.starts_with("stdout | ") || line.starts_with("stderr | ") {
            region.line(at, Kind::Output);
            state = State::Output;
            continue;
        }
        if failure(line) {
            if let Some(block) = block.take() {
                region.block(block);
            }
            region.tests = true;
            block = Some(Block::failure(at));
            frame = None;
            state = State::Failure;
            continue;
        }
        if rule(line) {
            if let Some(block) = block.take() {
                region.block(block);
            }
            if line.contains("Unhandled") {
                // `⎯⎯ Unhandled Errors ⎯⎯`: what follows is a failure of the run.
                block = Some(Block::failure(at));
                state = State::Failure;
            } else {
                state = State::Files;
            }
            continue;
        }
        match state {
            State::Output => region.line(at, Kind::Output),
            State::Files => {
                if FILE.is_match(line) {
                    if line.trim_start().starts_with('✓') {
                        region.line(at, Kind::Passed);
                    }
                } else if trimmed.starts_with('✓') {
                    region.line(at, Kind::Passed);
                } else if !(trimmed.starts_with('×')
                    || trimmed.starts_with('↓')
                    || line.starts_with("  "))
                {
                    last = at;
                    break;
                }
            }
            State::Failure => {
                let Some(block) = &mut block else { continue };
                if FRAME.is_match(line) {
                    frame = Some(at);
                } else if trimmed.starts_with('|')
                    && trimmed.trim_start_matches(['|', ' ']).starts_with('^')
                {
                    if let Some(frame) = frame.take() {
                        block.push(frame, Kind::Keep);
                    }
                } else if trimmed.starts_with('❯') && trimmed.contains("node_modules/") {
                    // A library's place in the stack.
                } else {
                    frame = None;
                    block.push(at, Kind::Keep);
                }
            }
            State::Summary => {}
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
        assert_eq!(counts("3 failed | 8 passed (11)"), (8, 3));
        assert_eq!(counts("8 passed (8)"), (8, 0));
        assert_eq!(counts("1 failed | 2 skipped | 5 passed (8)"), (5, 1));
    }

    #[test]
    fn file_lines_are_recognised() {
        assert!(FILE.is_match(" ✓ cart.test.js (8 tests) 5ms"));
        assert!(FILE.is_match(" ❯ cart.test.js (11 tests | 3 failed) 14ms"));
        assert!(!FILE.is_match(" ✓ totals prices 1ms"));
    }
}
