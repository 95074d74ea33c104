//! Tests of event patterns: what `*` matches at each position, alternatives, and invalid patterns.

use super::EventPattern;

/// Checks `pattern` against each kind: `+kind` must match, `-kind` must not.
#[track_caller]
fn check(pattern: &str, cases: &[&str]) {
    let parsed: EventPattern = pattern.parse().expect("pattern must parse");
    for case in cases {
        let (expected, kind) = match case.split_at(1) {
            ("+", kind) => (true, kind),
            ("-", kind) => (false, kind),
            _ => panic!("case {case:?} must start with + or -"),
        };
        assert_eq!(parsed.matches(kind), expected, "`{pattern}` against `{kind}`");
    }
}

#[test]
fn trailing_star_matches_one_or_more_segments() {
    check(
        "tools/*",
        &[
            "+tools/call",
            "+tools/call/denied",
            "+tools/list/changed",
            "-tools",
            "-approval/granted",
        ],
    );
}

#[test]
fn leading_star_matches_one_or_more_segments() {
    check("*/denied", &["+tools/call/denied", "+x/denied", "-denied", "-tools/call/denied/more"]);
}

#[test]
fn nested_prefix() {
    check(
        "tools/call/*",
        &["+tools/call/started", "+tools/call/denied", "-tools/call", "-tools/list/changed"],
    );
}

#[test]
fn star_alone_matches_everything() {
    check("*", &["+tools", "+tools/call/denied", "+upstream/failed"]);
    assert!(EventPattern::all().matches("a/b/c"));
    assert_eq!(EventPattern::all().to_string(), "*");
}

#[test]
fn literal_matches_only_itself() {
    check(
        "upstream/failed",
        &["+upstream/failed", "-upstream/failed/x", "-upstream", "-upstream/f"],
    );
}

#[test]
fn star_in_the_middle() {
    check("tools/*/denied", &["+tools/call/denied", "+tools/a/b/denied", "-tools/denied"]);
}

#[test]
fn lists_match_any_entry() {
    check(
        "tools/call/*, approval/* ,upstream/failed",
        &["+tools/call/denied", "+approval/granted", "+upstream/failed", "-upstream/connected"],
    );
    let parsed: EventPattern = "tools/call/*, approval/* ,upstream/failed".parse().unwrap();
    assert_eq!(parsed.to_string(), "tools/call/*,approval/*,upstream/failed");
}

#[test]
fn invalid_patterns_name_the_pattern() {
    for (pattern, reason) in [
        ("", "it is empty"),
        ("  ", "it is empty"),
        ("tools//call", "empty segment"),
        ("/tools", "empty segment"),
        ("tools/", "empty segment"),
        ("tools/*,", "empty entry"),
        ("tools/ca*", "whole segment"),
    ] {
        let error = EventPattern::parse(pattern).expect_err(pattern);
        assert_eq!(error.pattern, pattern);
        let message = error.to_string();
        assert!(message.contains(&format!("`{pattern}`")), "{message}");
        assert!(message.contains(reason), "`{pattern}`: {message}");
    }
}
