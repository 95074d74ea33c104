//! The failing tests of a test-runner log, read here without the test filter's code: each
//! one's name and the first line of its message, as each runner prints them, so that the
//! test can check the filter kept them.

use regex::Regex;

/// A failing test, as the log shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Failure {
    /// Its name (for jest and vitest the test's own title, without its describe blocks).
    pub(crate) name: String,
    /// The first line of its message, trimmed (for a cargo build error, the error line).
    pub(crate) message: String,
}

/// `text` without ANSI escape sequences (colours `ESC [ .. m`, character sets `ESC ( B`, and
/// the like).
pub(crate) fn plain(text: &str) -> String {
    let ansi =
        Regex::new(r"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|[()][0-9A-Za-z]|\][^\x07\x1b]*(?:\x07|\x1b\\))")
            .unwrap();
    ansi.replace_all(text, "").into_owned()
}

/// The failures in the log of corpus item `item` (`shell-<runner>-...`).
pub(crate) fn of(item: &str, log: &str) -> Vec<Failure> {
    let log = plain(log);
    let lines: Vec<&str> = log.lines().collect();
    let runner = item.trim_start_matches("shell-").split('-').next().unwrap_or_default();
    match runner {
        "cargo" | "nextest" => rust(&lines),
        "pytest" => pytest(&lines),
        "jest" => jest(&lines),
        "vitest" => vitest(&lines),
        "go" => go(&lines),
        other => panic!("no reader for {other} logs"),
    }
}

/// The next non-empty line after `index`, trimmed.
fn next_line(lines: &[&str], index: usize) -> String {
    lines[index + 1..]
        .iter()
        .map(|l| l.trim())
        .find(|l| !l.is_empty())
        .unwrap_or_default()
        .to_owned()
}

/// libtest (cargo test, and inside nextest's output): `test NAME ... FAILED`; the message is
/// the line after `panicked at`, or the `did not panic` note, in the test's own section
/// (`---- NAME stdout ----`, or nextest's block after `FAIL [..] crate NAME`). A build that
/// failed has no tests: its `error[E..]` lines are the messages.
fn rust(lines: &[&str]) -> Vec<Failure> {
    let test = Regex::new(r"^\s*test (\S+)(?: - should panic)? \.\.\. FAILED$").unwrap();
    let mut names: Vec<String> =
        lines.iter().filter_map(|l| test.captures(l).map(|c| c[1].to_owned())).collect();
    names.dedup();
    if names.is_empty() {
        let nextest = Regex::new(r"^\s*FAIL \[[^\]]*\] (?:\(\s*\d+/\d+\) )?\S+ (\S+)$").unwrap();
        names = lines.iter().filter_map(|l| nextest.captures(l).map(|c| c[1].to_owned())).collect();
        names.dedup();
    }
    let mut failures = Vec::new();
    for name in names {
        if failures.iter().any(|f: &Failure| f.name == name) {
            continue;
        }
        let message = lines
            .iter()
            .enumerate()
            .find_map(|(i, l)| {
                let panicked = l.contains(&format!("thread '{name}'")) && l.contains("panicked at");
                panicked.then(|| next_line(lines, i))
            })
            .or_else(|| {
                let section =
                    lines.iter().position(|l| l.trim() == format!("---- {name} stdout ----"))?;
                lines[section..]
                    .iter()
                    .find(|l| l.contains("did not panic"))
                    .map(|l| l.trim().to_owned())
            })
            .or_else(|| {
                // nextest: the section of the test's FAIL line.
                let start = lines
                    .iter()
                    .position(|l| l.contains("FAIL [") && l.ends_with(&format!(" {name}")))?;
                lines[start..]
                    .iter()
                    .find(|l| l.contains("did not panic"))
                    .map(|l| l.trim().to_owned())
            })
            .unwrap_or_else(|| panic!("no message found for {name}"));
        failures.push(Failure { name, message });
    }
    if failures.is_empty() {
        for line in lines.iter().filter(|l| l.starts_with("error[E")) {
            failures
                .push(Failure { name: line.trim().to_owned(), message: line.trim().to_owned() });
        }
    }
    failures
}

/// pytest's short summary: `FAILED path::NAME - MESSAGE` (the message cut with `...` when
/// long: the part before is what must be kept).
fn pytest(lines: &[&str]) -> Vec<Failure> {
    let failed = Regex::new(r"^FAILED \S+::(\S+)(?: - (.*))?$").unwrap();
    lines
        .iter()
        .filter_map(|l| failed.captures(l))
        .map(|c| {
            let message = c.get(2).map_or("", |m| m.as_str());
            // A message cut inside a quoted value: keep the part before the cut value.
            let message = match message.strip_suffix("...") {
                Some(cut) => cut.rsplit_once(['\'', '"']).map_or(cut, |(head, _)| head),
                None => message,
            };
            Failure { name: c[1].to_owned(), message: message.trim().to_owned() }
        })
        .collect()
}

/// jest: `● describe › title`, the message on the next non-empty line.
fn jest(lines: &[&str]) -> Vec<Failure> {
    let header = Regex::new(r"^\s*● (.+)$").unwrap();
    lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| {
            let title = header.captures(l)?[1].trim().to_owned();
            (title != "Console").then(|| Failure {
                name: title.rsplit(" › ").next().unwrap_or(&title).to_owned(),
                message: next_line(lines, i),
            })
        })
        .collect()
}

/// vitest: ` FAIL  file > describe > title`, the message on the next line.
fn vitest(lines: &[&str]) -> Vec<Failure> {
    let header = Regex::new(r"^\s*FAIL\s+\S+ > (.+)$").unwrap();
    lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| {
            let title = header.captures(l)?[1].trim().to_owned();
            Some(Failure {
                name: title.rsplit(" > ").next().unwrap_or(&title).to_owned(),
                message: next_line(lines, i),
            })
        })
        .collect()
}

/// go test: `--- FAIL: NAME (..)`, the message on the next `file_test.go:N: ...` line.
fn go(lines: &[&str]) -> Vec<Failure> {
    let header = Regex::new(r"^\s*--- FAIL: (\S+)").unwrap();
    lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| {
            let name = header.captures(l)?[1].to_owned();
            Some(Failure { name, message: next_line(lines, i) })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_libtest_failures() {
        let log = "test tests::a ... FAILED\ntest tests::b - should panic ... FAILED\n\nfailures:\n\n\
                   ---- tests::a stdout ----\n\nthread 'tests::a' (12) panicked at src/lib.rs:1:1:\n\
                   assertion failed: x\n\n---- tests::b stdout ----\nnote: test did not panic as expected at src/lib.rs:2:2\n";
        assert_eq!(
            of("shell-cargo-fail", log),
            vec![
                Failure { name: "tests::a".into(), message: "assertion failed: x".into() },
                Failure {
                    name: "tests::b".into(),
                    message: "note: test did not panic as expected at src/lib.rs:2:2".into()
                },
            ]
        );
    }

    #[test]
    fn reads_pytest_jest_and_vitest_failures() {
        let pytest = "FAILED t.py::test_a - assert 1 == 2\nFAILED t.py::test_b - AssertionError: assert {'name...\n";
        assert_eq!(of("shell-pytest-fail", pytest)[1].message, "AssertionError: assert {");
        let jest = "  ● Console\n\n  ● cart › totals\n\n    expect(x).toBe(y)\n";
        assert_eq!(
            of("shell-jest-fail", jest),
            vec![Failure { name: "totals".into(), message: "expect(x).toBe(y)".into() }]
        );
        let vitest = " FAIL  cart.test.js > cart > totals\nAssertionError: expected 1 to be 2\n";
        assert_eq!(of("shell-vitest-fail", vitest)[0].name, "totals");
    }
}
