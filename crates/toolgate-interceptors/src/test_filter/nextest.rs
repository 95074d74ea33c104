//! cargo-nextest's lines: the run's start, one status line per test, the output it shows
//! under a failing test, the summary.

use std::sync::LazyLock;

use regex::Regex;

static STATUS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*([A-Z][A-Z0-9/ -]*?) +\[[> ]*[\d.]+s\] ").expect("a valid pattern")
});
static SUMMARY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*Summary \[ *[\d.]+s\] (?:(\d+)/)?(\d+) tests? run: (\d+) passed(?:.*?, (\d+) failed)?")
        .expect("a valid pattern")
});
static STARTING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*Starting \d+ tests? across \d+ binar(?:y|ies)").expect("a valid pattern")
});

/// A test's status in a status line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Passed,
    Failed,
    /// Skipped, slow, started, retried: says nothing final.
    Other,
}

/// The status of a status line (`        FAIL [   0.078s] ( 2/18) ledger tests::x`).
pub(crate) fn status(line: &str) -> Option<Status> {
    let word = STATUS.captures(line)?.get(1)?.as_str();
    Some(match word {
        "PASS" | "FLAKY" => Status::Passed,
        "FAIL" | "TIMEOUT" | "LEAK-FAIL" | "ABORT" => Status::Failed,
        _ if word.starts_with("SIG") => Status::Failed,
        _ if word.starts_with("TRY ") && !word.ends_with("PASS") => Status::Other,
        _ if word.starts_with("TRY ") => Status::Passed,
        _ => Status::Other,
    })
}

/// The summary line: (passed, failed).
pub(crate) fn summary(line: &str) -> Option<(u64, u64)> {
    let captures = SUMMARY.captures(line)?;
    let passed = captures.get(3)?.as_str().parse().ok()?;
    let failed = captures.get(4).map_or(Some(0), |m| m.as_str().parse().ok())?;
    Some((passed, failed))
}

/// `    Starting N tests across M binaries`.
pub(crate) fn starting(line: &str) -> bool {
    STARTING.is_match(line)
}

/// The lines nextest draws around a run, and its run id.
pub(crate) fn decoration(line: &str) -> bool {
    let trimmed = line.trim();
    (!trimmed.is_empty() && trimmed.chars().all(|c| c == '─' || c == '-'))
        || trimmed.starts_with("Nextest run ID ")
        || trimmed.starts_with("Cancelling due to test failure")
}

/// A header above a failing test's output: `  stdout ───` (recent versions) or
/// `--- STDOUT:              ledger tests::x ---` (older ones: the output below it is not
/// indented).
pub(crate) fn output_header(line: &str) -> Option<bool> {
    let trimmed = line.trim();
    if ["stdout", "stderr", "output"].iter().any(|name| {
        trimmed.strip_prefix(name).is_some_and(|rest| rest.trim_start().starts_with('─'))
    }) {
        return Some(false);
    }
    if trimmed.starts_with("--- STDOUT:") || trimmed.starts_with("--- STDERR:") {
        return Some(true);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_and_summary_lines_are_read() {
        assert_eq!(
            status("        PASS [   0.005s] ( 1/18) ledger tests::a"),
            Some(Status::Passed)
        );
        assert_eq!(status("        FAIL [   0.078s] ledger tests::a"), Some(Status::Failed));
        assert_eq!(status("     SIGSEGV [   0.078s] ledger tests::a"), Some(Status::Failed));
        assert_eq!(status("     TIMEOUT [  60.001s] ledger tests::a"), Some(Status::Failed));
        assert_eq!(status("        SLOW [> 60.000s] ledger tests::a"), Some(Status::Other));
        assert_eq!(status("PASS ./cart.test.js"), None);
        assert_eq!(
            summary("     Summary [   0.267s] 18 tests run: 12 passed, 6 failed, 0 skipped"),
            Some((12, 6))
        );
        assert_eq!(
            summary("     Summary [   0.077s] 12 tests run: 12 passed, 0 skipped"),
            Some((12, 0))
        );
        assert_eq!(
            summary("     Summary [   0.100s] 3/18 tests run: 2 passed, 1 failed, 0 skipped"),
            Some((2, 1))
        );
        assert!(starting("    Starting 18 tests across 2 binaries (1 test skipped)"));
        assert!(decoration("────────────"));
        assert_eq!(output_header("  stdout ───"), Some(false));
        assert_eq!(output_header("--- STDERR:              ledger tests::a ---"), Some(true));
    }
}
