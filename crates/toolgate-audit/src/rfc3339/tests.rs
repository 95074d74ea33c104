//! Tests of the RFC 3339 formatter against known instants, including before the epoch.

use std::time::{Duration, UNIX_EPOCH};

use super::format;

fn at(millis: i64) -> String {
    let time = if millis >= 0 {
        UNIX_EPOCH + Duration::from_millis(millis as u64)
    } else {
        UNIX_EPOCH - Duration::from_millis(millis.unsigned_abs())
    };
    format(time)
}

#[test]
fn epoch() {
    assert_eq!(at(0), "1970-01-01T00:00:00.000Z");
}

#[test]
fn known_instants() {
    // `date -u -d @1714566896 +%FT%T`
    assert_eq!(at(1_714_566_896_789), "2024-05-01T12:34:56.789Z");
    // A leap day, and the last millisecond of a year.
    assert_eq!(at(951_782_400_000), "2000-02-29T00:00:00.000Z");
    assert_eq!(at(1_704_067_199_999), "2023-12-31T23:59:59.999Z");
    assert_eq!(at(4_102_444_800_000), "2100-01-01T00:00:00.000Z");
}

#[test]
fn sub_millisecond_precision_is_cut() {
    assert_eq!(format(UNIX_EPOCH + Duration::from_nanos(1_999_999)), "1970-01-01T00:00:00.001Z");
}

#[test]
fn before_the_epoch() {
    assert_eq!(at(-1), "1969-12-31T23:59:59.999Z");
    assert_eq!(at(-86_400_000), "1969-12-31T00:00:00.000Z");
}
