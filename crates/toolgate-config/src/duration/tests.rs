//! Tests of duration parsing: units, sums of terms, and the error messages.

use std::time::Duration;

use super::{DurationError, parse_duration};

fn ok(text: &str) -> Duration {
    parse_duration(text).expect("duration must parse")
}

#[test]
fn single_terms() {
    assert_eq!(ok("500ms"), Duration::from_millis(500));
    assert_eq!(ok("30s"), Duration::from_secs(30));
    assert_eq!(ok("2m"), Duration::from_secs(120));
    assert_eq!(ok("1h"), Duration::from_secs(3600));
    assert_eq!(ok("1d"), Duration::from_secs(86_400));
    assert_eq!(ok("0s"), Duration::ZERO);
}

#[test]
fn long_unit_names_and_spaces() {
    assert_eq!(ok("10 seconds"), Duration::from_secs(10));
    assert_eq!(ok("2 min"), Duration::from_secs(120));
    assert_eq!(ok("  3hours "), Duration::from_secs(3 * 3600));
    assert_eq!(ok("250 msec"), Duration::from_millis(250));
}

#[test]
fn several_terms_add_up() {
    assert_eq!(ok("1m30s"), Duration::from_secs(90));
    assert_eq!(ok("1h 30m"), Duration::from_secs(5400));
    assert_eq!(ok("1s 500ms"), Duration::from_millis(1500));
}

#[test]
fn errors() {
    assert_eq!(parse_duration(""), Err(DurationError::Empty));
    assert_eq!(parse_duration("   "), Err(DurationError::Empty));
    assert_eq!(parse_duration("10"), Err(DurationError::MissingUnit(10)));
    assert_eq!(parse_duration("s"), Err(DurationError::ExpectedNumber(1)));
    assert_eq!(parse_duration("10s x"), Err(DurationError::ExpectedNumber(5)));
    assert_eq!(parse_duration("-5s"), Err(DurationError::ExpectedNumber(1)));
    assert_eq!(parse_duration("1.5s"), Err(DurationError::Fraction));
    assert_eq!(parse_duration("10 parsecs"), Err(DurationError::UnknownUnit("parsecs".to_owned())));
    assert_eq!(parse_duration("99999999999999999999s"), Err(DurationError::Overflow));
    assert_eq!(parse_duration("18446744073709551615d"), Err(DurationError::Overflow));
}

#[test]
fn messages() {
    assert_eq!(
        DurationError::UnknownUnit("x".to_owned()).to_string(),
        r#"unknown unit "x" (expected ms, s, m, h or d)"#
    );
    assert_eq!(
        DurationError::MissingUnit(10).to_string(),
        "missing unit after 10 (for example 10s)"
    );
}
