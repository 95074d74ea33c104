//! `go test`, plain and `-v`, as `go help test` and the `testing` package document it:
//! `=== RUN`/`=== PAUSE`/`=== CONT`/`=== NAME` lines (`-v`), `--- FAIL: Name (0.00s)` and
//! `--- PASS:` (subtests indented by four more spaces), the test's log lines indented under
//! it (plain) or before it (`-v`, where they are printed as they happen), `panic:` with its
//! goroutine dump, the build errors of a package (`# pkg` then `file.go:5:2: msg`), and one
//! line per package: `ok  \tpkg\t0.01s`, `FAIL\tpkg\t0.01s`, `?   \tpkg\t[no test files]`.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

use super::region::{Block, Kind, Region, Runner};
use super::text::Lines;

/// `=== RUN   TestX`, `=== CONT  TestX`, `=== NAME  TestX`, `=== PAUSE TestX`.
static EVENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^=== (RUN|PAUSE|CONT|NAME) +(\S+)").expect("a valid pattern"));
/// `--- FAIL: TestX (0.00s)`, indented for subtests.
static RESULT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^( *)--- (FAIL|PASS|SKIP): (\S+) \(").expect("a valid pattern"));
/// `ok  \tpkg\t0.01s`, `FAIL\tpkg\t0.01s`, `FAIL\tpkg [build failed]`, `?   \tpkg\t[no test files]`:
/// the word padded to four columns, then a tab.
static PACKAGE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(ok  |FAIL|\?   )\t\S+").expect("a valid pattern"));

/// Where a go test stretch may start.
pub(crate) fn begins(lines: &Lines<'_>, i: usize) -> bool {
    let line = lines.plain(i);
    EVENT.is_match(line) || RESULT.is_match(line) || package(line).is_some()
}

fn package(line: &str) -> Option<&str> {
    Some(PACKAGE.captures(line)?.get(1)?.as_str().trim_end())
}

/// A frame of a goroutine dump in the runtime or the testing package.
fn library_frame(line: &str) -> bool {
    let trimmed = line.trim();
    trimmed.starts_with("testing.")
        || trimmed.starts_with("runtime.")
        || trimmed.starts_with("panic(")
        || trimmed.starts_with("created by ")
        || trimmed.contains("/src/testing/")
        || trimmed.contains("/src/runtime/")
        || trimmed.starts_with("goroutine ")
}

/// The stretch of `go test`'s output that starts at `start`.
pub(crate) fn parse(lines: &Lines<'_>, start: usize) -> Region {
    let mut region = Region::new(Runner::GoTest, start);
    region.tests = true;
    region.passed_known = false;
    // `-v`: what each test printed since it (re)started, kept for its result line.
    let mut printed: HashMap<String, Vec<usize>> = HashMap::new();
    let mut current: Option<String> = None;
    // The open failure, and how deep its `--- FAIL` line is indented.
    let mut block: Option<(Block, usize)> = None;
    // Inside a `--- PASS` of a subtest (plain output): its indented log is left out.
    let mut passing: Option<usize> = None;
    let mut panicking = false;
    let mut last = start;
    let mut i = start;
    while i < lines.len() {
        let line = lines.plain(i);
        i += 1;
        let at = i - 1;
        if line.trim().is_empty() {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        if let Some(captures) = EVENT.captures(line) {
            last = i;
            // What follows is this test's: the open failure is complete.
            if let Some((open, _)) = block.take() {
                region.block(open);
            }
            passing = None;
            current = Some(captures[2].to_owned());
            if &captures[1] == "RUN" {
                printed.insert(captures[2].to_owned(), Vec::new());
            }
            continue;
        }
        if let Some(captures) = RESULT.captures(line) {
            last = i;
            let depth = captures[1].len();
            let name = &captures[3];
            let earlier = printed.remove(name).unwrap_or_default();
            match &captures[2] {
                "FAIL" => {
                    passing = None;
                    if let Some((open, open_depth)) = &mut block
                        && depth > *open_depth
                    {
                        // A failing subtest under its failing parent.
                        open.push(at, Kind::Keep);
                        for line in earlier {
                            open.push(line, kind_of(lines.plain(line)));
                        }
                        continue;
                    }
                    if let Some((open, _)) = block.take() {
                        region.block(open);
                    }
                    if depth == 0 {
                        region.failed += 1;
                    }
                    let mut open = Block::failure(at);
                    for line in earlier {
                        open.push(line, kind_of(lines.plain(line)));
                    }
                    block = Some((open, depth));
                }
                "PASS" => {
                    if depth == 0 {
                        region.passed += 1;
                        region.passed_known = true;
                        if let Some((open, _)) = block.take() {
                            region.block(open);
                        }
                        region.line(at, Kind::Passed);
                    } else {
                        passing = Some(depth);
                    }
                }
                _ => {}
            }
            continue;
        }
        if let Some(word) = package(line) {
            last = i;
            if let Some((open, _)) = block.take() {
                region.block(open);
            }
            panicking = false;
            passing = None;
            if word != "?" {
                region.line(at, Kind::Keep);
            }
            continue;
        }
        let trimmed = line.trim();
        if trimmed == "PASS" || trimmed == "FAIL" || trimmed.starts_with("exit status ") {
            last = i;
            continue;
        }
        if trimmed.starts_with("panic: ") {
            last = i;
            panicking = true;
            let mut open = match block.take() {
                Some((open, _)) => open,
                None => {
                    region.failed += 1;
                    Block::failure(at)
                }
            };
            if open.lines.first().map(|(line, _)| *line) != Some(at) {
                open.push(at, Kind::Keep);
            }
            block = Some((open, 0));
            continue;
        }
        if line.starts_with("# ") {
            // A package that does not build: its errors follow.
            last = i;
            if let Some((open, _)) = block.take() {
                region.block(open);
            }
            region.errors += 1;
            block = Some((Block::failure(at), usize::MAX));
            continue;
        }
        if panicking {
            last = i;
            if let Some((open, _)) = &mut block
                && !library_frame(line)
                && !trimmed.starts_with("[recovered]")
            {
                open.push(at, Kind::Keep);
            }
            continue;
        }
        if let Some(depth) = passing {
            if indent > depth {
                last = i;
                continue;
            }
            passing = None;
        }
        if let Some((open, depth)) = &mut block
            && (indent > *depth || *depth == usize::MAX)
        {
            last = i;
            open.push(at, kind_of(line));
            continue;
        }
        if let Some(name) = &current
            && let Some(lines) = printed.get_mut(name)
        {
            // `-v`: printed while the test runs, before its result.
            last = i;
            lines.push(at);
            continue;
        }
        break;
    }
    if let Some((open, _)) = block.take() {
        region.block(open);
    }
    region.end = last;
    region
}

/// A test's log line (`    stock_test.go:17: Total = 12, want 13`: `t.Log`, `t.Error`) is
/// kept; anything else it printed (`fmt.Println`) is output.
fn kind_of(line: &str) -> Kind {
    static LOG: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^\s*(?:\./)?\S+\.go:\d+(?::\d+)?: ").expect("a valid pattern")
    });
    if LOG.is_match(line) || line.starts_with("        ") { Kind::Keep } else { Kind::Output }
}
