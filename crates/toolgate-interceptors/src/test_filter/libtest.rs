//! libtest, the harness behind `cargo test`: its lines, and what to keep of what a failing
//! test printed (also used for the output nextest shows under a failing test).

use std::sync::LazyLock;

use regex::Regex;

use super::region::{Block, Kind};
use super::text::Lines;

static RUNNING: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^running \d+ tests?$").expect("a valid pattern"));
static TEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^test (.+?)(?: - should panic)? \.\.\. (ok|FAILED|ignored.*|bench:.*)$")
        .expect("a valid pattern")
});
static STARTED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^test (.+?)(?: - should panic)? \.\.\. ?(.*)$").expect("a valid pattern")
});
static ALONE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(ok|FAILED|ignored.*)$").expect("a valid pattern"));
static RESULT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored; (\d+) measured; (\d+) filtered out")
        .expect("a valid pattern")
});
static SECTION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^---- (.+) std(?:out|err) ----$").expect("a valid pattern"));
static PANIC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^thread '([^']*)'(?: \(\d+\))? panicked at ").expect("a valid pattern")
});
static FRAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*\d+: (.+)$").expect("a valid pattern"));

/// `running N tests`: a test binary starts.
pub(crate) fn is_running(line: &str) -> bool {
    RUNNING.is_match(line)
}

/// `test NAME ... STATUS`: (name, status).
pub(crate) fn test_line(line: &str) -> Option<(&str, &str)> {
    let captures = TEST.captures(line)?;
    Some((captures.get(1)?.as_str(), captures.get(2)?.as_str()))
}

/// `test NAME ... ` and no status: (name, what the test printed after it). With one test
/// thread and `--nocapture`, libtest names a test before it runs, so what the test prints
/// follows, and its status comes later on a line of its own ([`status_alone`]).
pub(crate) fn started(line: &str) -> Option<(&str, &str)> {
    if test_line(line).is_some() {
        return None;
    }
    let captures = STARTED.captures(line)?;
    Some((captures.get(1)?.as_str(), captures.get(2)?.as_str()))
}

/// `ok`, `FAILED` or `ignored` alone: the status of the test [`started`] last.
pub(crate) fn status_alone(line: &str) -> Option<&str> {
    Some(ALONE.captures(line)?.get(1)?.as_str())
}

/// `test result: ...`: (passed, failed, ignored, measured, filtered out).
pub(crate) fn result(line: &str) -> Option<[u64; 5]> {
    let captures = RESULT.captures(line)?;
    let mut counts = [0; 5];
    for (n, count) in counts.iter_mut().enumerate() {
        *count = captures.get(n + 1)?.as_str().parse().ok()?;
    }
    Some(counts)
}

/// `---- NAME stdout ----`: a failing test's captured output follows.
pub(crate) fn section(line: &str) -> Option<&str> {
    Some(SECTION.captures(line)?.get(1)?.as_str())
}

/// `thread 'NAME' panicked at ...`: the thread's name.
pub(crate) fn panic(line: &str) -> Option<&str> {
    Some(PANIC.captures(line)?.get(1)?.as_str())
}

/// Whether `line` is libtest talking about the run rather than a test talking.
fn chatter(line: &str) -> bool {
    is_running(line)
        || line == "failures:"
        || line.starts_with("test result: ")
        || test_line(line).is_some()
        || section(line).is_some()
}

/// A frame of the standard library, the test harness or the C runtime.
fn library_frame(symbol: &str) -> bool {
    const LIBRARY: &[&str] = &[
        "core::",
        "std::",
        "alloc::",
        "test::",
        "__rustc::",
        "rust_begin_unwind",
        "__libc_",
        "_start",
        "start_thread",
        "clone",
        "__GI_",
        "<core::",
        "<std::",
        "<alloc::",
    ];
    LIBRARY.iter().any(|prefix| symbol.starts_with(prefix))
        || symbol.ends_with("{{closure}}")
        || (symbol.starts_with('<')
            && (symbol.contains(" as core::") || symbol.contains(" as std::")))
}

/// A path outside the project: the toolchain's sources or a dependency's.
fn library_path(path: &str) -> bool {
    path.contains("/rustc/")
        || path.contains("/.cargo/registry/")
        || path.contains("/.cargo/git/")
        || path.contains("/.rustup/")
}

/// What to keep of a failing test's captured output (`lines[i]` for `i` in `output`):
/// the panic's location and message (with the left/right of a failed `assert_eq!`), the
/// project's own frames of a backtrace, libtest's notes (`test did not panic as expected`);
/// what the test printed before it panicked is output. Without a panic everything but
/// libtest's own chatter is kept: it is all there is (an `Err` a test returned, say).
pub(crate) fn detail(lines: &Lines<'_>, output: &[usize], block: &mut Block) {
    #[derive(PartialEq)]
    enum Mode {
        /// Before a panic: the test's own output.
        Printed,
        /// The panic's message, or a note, until a blank line.
        Message,
        Backtrace,
        /// No panic at all: keep everything.
        Everything,
    }
    let panicked = output.iter().any(|&i| panic(lines.plain(i).trim_start()).is_some());
    let mut mode = if panicked { Mode::Printed } else { Mode::Everything };
    // A frame line waiting for its `at` line: (line, whether its symbol is the project's).
    let mut frame: Option<(usize, bool)> = None;
    // The second `failures:` (in what nextest shows) starts the list of names.
    let mut failures = 0;
    for &i in output {
        let line = lines.plain(i).trim_start();
        if line == "failures:" {
            failures += 1;
        } else if line.starts_with("test result: ") {
            failures = 0;
        }
        if failures >= 2 {
            continue;
        }
        if line.is_empty() {
            if mode == Mode::Message {
                mode = Mode::Printed;
            }
            continue;
        }
        if chatter(line) {
            continue;
        }
        if mode == Mode::Backtrace {
            if let Some(path) = line.strip_prefix("at ") {
                if let Some((symbol_line, ours)) = frame.take()
                    && ours
                    && !library_path(path)
                {
                    block.push(symbol_line, Kind::Keep);
                    block.push(i, Kind::Keep);
                }
                continue;
            }
            if let Some(captures) = FRAME.captures(line) {
                if let Some((symbol_line, true)) = frame.take() {
                    // The previous frame had no `at` line (no debug info).
                    block.push(symbol_line, Kind::Keep);
                }
                frame = Some((i, !library_frame(&captures[1])));
                continue;
            }
            if let Some((symbol_line, true)) = frame.take() {
                block.push(symbol_line, Kind::Keep);
            }
            mode = Mode::Printed;
        }
        if panic(line).is_some() {
            block.push(i, Kind::Keep);
            mode = Mode::Message;
        } else if line == "stack backtrace:" {
            mode = Mode::Backtrace;
        } else if line.starts_with("note: run with `RUST_BACKTRACE")
            || line.starts_with("note: Some details are omitted")
        {
        } else if line.starts_with("note: ") {
            block.push(i, Kind::Keep);
            if mode != Mode::Everything {
                mode = Mode::Message;
            }
        } else {
            let kind = match mode {
                Mode::Message | Mode::Everything => Kind::Keep,
                Mode::Printed | Mode::Backtrace => Kind::Output,
            };
            block.push(i, kind);
        }
    }
    if let Some((symbol_line, true)) = frame {
        block.push(symbol_line, Kind::Keep);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_the_harness_are_recognised() {
        assert!(is_running("running 1 test"));
        assert!(is_running("running 32 tests"));
        assert_eq!(test_line("test a::b ... ok"), Some(("a::b", "ok")));
        assert_eq!(
            test_line("test tests::refuses_one_part - should panic ... FAILED"),
            Some(("tests::refuses_one_part", "FAILED"))
        );
        assert_eq!(test_line("test x ... ignored, slow"), Some(("x", "ignored, slow")));
        assert_eq!(
            result(
                "test result: FAILED. 27 passed; 5 failed; 1 ignored; 0 measured; 2 filtered out; finished in 0.00s"
            ),
            Some([27, 5, 1, 0, 2])
        );
        assert_eq!(section("---- tests::a stdout ----"), Some("tests::a"));
        assert_eq!(panic("thread 'a::b' (2250) panicked at src/lib.rs:1:2:"), Some("a::b"));
        assert_eq!(panic("thread 'main' panicked at 'boom', src/main.rs:2:5"), Some("main"));
    }

    #[test]
    fn a_backtrace_keeps_the_projects_frames_only() {
        let text = "printed first\n\
thread 't' (1) panicked at src/lib.rs:20:9:\n\
cannot share 1 into zero parts\n\
stack backtrace:\n\
   0: __rustc::rust_begin_unwind\n\
             at /rustc/abc/library/std/src/panicking.rs:689:5\n\
   1: ledger::share\n\
             at ./src/lib.rs:20:9\n\
   2: api::shares::{{closure}}\n\
             at ./tests/api.rs:9:20\n\
   3: serde::de::thing\n\
             at /home/u/.cargo/registry/src/x/serde/src/de.rs:1:1\n\
   4: no_debug_info\n\
note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.\n";
        let lines = Lines::new(text);
        let all: Vec<usize> = (0..lines.len()).collect();
        let mut block = Block::default();
        detail(&lines, &all, &mut block);
        let kept: Vec<(&str, Kind)> =
            block.lines.iter().map(|(i, kind)| (lines.plain(*i).trim(), *kind)).collect();
        assert_eq!(
            kept,
            vec![
                ("printed first", Kind::Output),
                ("thread 't' (1) panicked at src/lib.rs:20:9:", Kind::Keep),
                ("cannot share 1 into zero parts", Kind::Keep),
                ("1: ledger::share", Kind::Keep),
                ("at ./src/lib.rs:20:9", Kind::Keep),
                ("4: no_debug_info", Kind::Keep),
            ]
        );
    }

    #[test]
    fn without_a_panic_everything_but_the_chatter_is_kept() {
        let lines = Lines::new(
            "running 1 test\nError: Custom { kind: Other }\n\ntest result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n",
        );
        let all: Vec<usize> = (0..lines.len()).collect();
        let mut block = Block::default();
        detail(&lines, &all, &mut block);
        assert_eq!(block.lines, vec![(1, Kind::Keep)]);
    }

    fn kept(text: &str) -> Vec<(String, Kind)> {
        let lines = Lines::new(text);
        let all: Vec<usize> = (0..lines.len()).collect();
        let mut block = Block::default();
        detail(&lines, &all, &mut block);
        block.lines.iter().map(|(i, kind)| (lines.plain(*i).trim().to_owned(), *kind)).collect()
    }

    #[test]
    fn frames_of_git_dependencies_and_of_the_toolchain_are_left_out() {
        let text = "thread 't' (1) panicked at src/lib.rs:20:9:\n\
cannot share 1 into zero parts\n\
stack backtrace:\n\
   0: ledger::share\n\
             at ./src/lib.rs:20:9\n\
   1: money::Amount::split\n\
             at /home/u/.cargo/git/checkouts/money-3f2a1b0c9d8e7f6a/9c4d2e1/src/amount.rs:88:13\n\
   2: hashbrown::raw::RawTable<T,A>::reserve_rehash\n\
             at /home/u/.rustup/toolchains/1.93.0-x86_64-unknown-linux-gnu/lib/rustlib/src/rust/library/hashbrown/src/raw/mod.rs:1096:9\n\
   3: ledger::tests::shares\n\
             at ./src/lib.rs:40:5\n";
        let frames: Vec<String> = kept(text).into_iter().skip(2).map(|(line, _)| line).collect();
        assert_eq!(
            frames,
            [
                "0: ledger::share",
                "at ./src/lib.rs:20:9",
                "3: ledger::tests::shares",
                "at ./src/lib.rs:40:5"
            ]
        );
    }

    #[test]
    fn without_a_panic_a_blank_line_ends_nothing() {
        // A test that returned an `Err` (libtest captures stdout and stderr together).
        let text = "reading ledger.csv\n\nError: ParseError { line: 3 }\n\
note: the test returned a termination value with a non-zero status code (1) which indicates a failure\n";
        let all_kept = kept(text).iter().all(|(_, kind)| *kind == Kind::Keep);
        assert!(all_kept, "{:?}", kept(text));
        assert_eq!(kept(text).len(), 3);
    }

    #[test]
    fn a_note_without_a_panic_does_not_start_a_message() {
        // What nextest shows under a test that returned an `Err`: libtest's note in stdout,
        // then (under `stderr ───`) the error the test returned.
        let text = "    running 1 test\n    test tests::loads_the_ledger ... FAILED\n\n    failures:\n\n\
    ---- tests::loads_the_ledger stdout ----\n\
    note: the test returned a termination value with a non-zero status code (1) which indicates a failure\n\n\n\
    failures:\n        tests::loads_the_ledger\n\n\
    test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 91 filtered out; finished in 0.00s\n\n\
    Error: ParseError { line: 3 }\n";
        let lines: Vec<(String, Kind)> = kept(text);
        assert_eq!(
            lines,
            [
                (
                    "note: the test returned a termination value with a non-zero status code (1) which indicates a failure".to_owned(),
                    Kind::Keep
                ),
                ("Error: ParseError { line: 3 }".to_owned(), Kind::Keep),
            ]
        );
    }

    #[test]
    fn the_projects_trait_impls_are_its_own_frames() {
        // `<Type as Trait>::method`: the project's when neither is core's or std's.
        let text = "thread 't' (1) panicked at src/lib.rs:20:9:\n\
cannot share 1 into zero parts\n\
stack backtrace:\n\
   0: <ledger::Shares as ledger::Split>::split\n\
             at ./src/lib.rs:20:9\n\
   1: <ledger::Shares as core::iter::traits::iterator::Iterator>::next\n\
             at ./src/lib.rs:31:5\n";
        let frames: Vec<String> = kept(text).into_iter().skip(2).map(|(line, _)| line).collect();
        assert_eq!(frames, ["0: <ledger::Shares as ledger::Split>::split", "at ./src/lib.rs:20:9"]);
    }
}
