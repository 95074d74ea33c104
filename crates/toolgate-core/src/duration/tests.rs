//! Tests of the one duration parser and formatter: forms, errors, and formatting that parses back.

use std::time::Duration;

use super::{DurationError, Precision, format, format_with, parse};

fn ok(text: &str) -> Duration {
    parse(text).expect("duration must parse")
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

#[test]
fn single_terms() {
    assert_eq!(ok("500ms"), ms(500));
    assert_eq!(ok("30s"), secs(30));
    assert_eq!(ok("2m"), secs(120));
    assert_eq!(ok("1h"), secs(3600));
    assert_eq!(ok("1d"), secs(86_400));
    assert_eq!(ok("0s"), Duration::ZERO);
    assert_eq!(ok("0"), Duration::ZERO);
}

#[test]
fn long_unit_names_and_spaces() {
    assert_eq!(ok("10 seconds"), secs(10));
    assert_eq!(ok("2 min"), secs(120));
    assert_eq!(ok("  3hours "), secs(3 * 3600));
    assert_eq!(ok("250 msec"), ms(250));
}

#[test]
fn several_terms_add_up() {
    assert_eq!(ok("1m30s"), secs(90));
    assert_eq!(ok("1h 30m"), secs(5400));
    assert_eq!(ok("1h 2m"), secs(3720));
    assert_eq!(ok("1s 500ms"), ms(1500));
}

#[test]
fn fractions() {
    assert_eq!(ok("1.5s"), ms(1500));
    assert_eq!(ok("0.1s"), ms(100));
}

#[test]
fn errors() {
    assert_eq!(parse(""), Err(DurationError::Empty));
    assert_eq!(parse("   "), Err(DurationError::Empty));
    assert_eq!(parse("10"), Err(DurationError::MissingUnit(10)));
    assert_eq!(parse("5"), Err(DurationError::MissingUnit(5)));
    assert_eq!(parse("s"), Err(DurationError::ExpectedNumber(1)));
    assert_eq!(parse("fast"), Err(DurationError::ExpectedNumber(1)));
    assert_eq!(parse("10s x"), Err(DurationError::ExpectedNumber(5)));
    assert_eq!(parse("-5s"), Err(DurationError::ExpectedNumber(1)));
    assert_eq!(parse("-1s"), Err(DurationError::ExpectedNumber(1)));
    assert_eq!(parse("1,5s"), Err(DurationError::Unexpected { at: 2, found: ',' }));
    assert_eq!(parse("10 parsecs"), Err(DurationError::UnknownUnit("parsecs".to_owned())));
    assert_eq!(parse("99999999999999999999s"), Err(DurationError::Overflow));
    assert_eq!(parse("18446744073709551615d"), Err(DurationError::Overflow));
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
    assert_eq!(DurationError::ExpectedNumber(1).to_string(), "expected a number at character 1");
    assert_eq!(
        DurationError::Unexpected { at: 2, found: ',' }.to_string(),
        "unexpected ',' at character 2"
    );
}

#[test]
fn exact_forms() {
    assert_eq!(format(Duration::ZERO), "0s");
    assert_eq!(format(ms(500)), "500ms");
    assert_eq!(format(ms(300)), "300ms");
    assert_eq!(format(Duration::from_micros(1500)), "1.5ms");
    assert_eq!(format(ms(1500)), "1.5s");
    assert_eq!(format(secs(1)), "1s");
    assert_eq!(format(secs(3)), "3s");
    assert_eq!(format(secs(90)), "1m 30s");
    assert_eq!(format(secs(120)), "2m");
    assert_eq!(format(secs(3600)), "1h");
    assert_eq!(format(secs(5400)), "1h 30m");
    assert_eq!(format(secs(86_400 + 3600 + 1)), "1d 1h 1s");
    assert_eq!(format(Duration::from_nanos(1)), "0.000001ms");
    assert_eq!(format(ms(60_250)), "1m 0.25s");
}

#[test]
fn exact_forms_parse_back() {
    for duration in [
        Duration::from_nanos(1),
        ms(1),
        ms(500),
        ms(1500),
        secs(59),
        secs(90),
        secs(3601),
        secs(200_000),
    ] {
        assert_eq!(parse(&format(duration)), Ok(duration), "{}", format(duration));
    }
}

#[test]
fn waits_are_rounded_up() {
    let wait = |d: Duration| format_with(d, Precision::WaitRoundedUp);
    assert_eq!(wait(ms(4150)), "4.2s");
    assert_eq!(wait(ms(4200)), "4.2s");
    assert_eq!(wait(secs(1)), "1.0s");
    assert_eq!(wait(Duration::from_nanos(1)), "0.1s");
    assert_eq!(wait(ms(59_900)), "59.9s");
    assert_eq!(wait(ms(59_950)), "1m");
    assert_eq!(wait(secs(60)), "1m");
    assert_eq!(wait(ms(125_500)), "2m 6s");
    assert_eq!(wait(secs(3600)), "1h");
    assert_eq!(wait(secs(3600 + 600 + 5)), "1h 11m");
    assert_eq!(wait(secs(2 * 3600)), "2h");
}
