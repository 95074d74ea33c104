//! Timestamps as RFC 3339 UTC text with milliseconds: `2024-05-01T12:34:56.789Z`.
//!
//! Written by hand rather than with a date crate: formatting one fixed layout from a
//! `SystemTime` is a few lines of arithmetic (Howard Hinnant's `civil_from_days`), and toolgate
//! needs no time zones, parsing or calendar maths. `humantime` would do the same job, but it is
//! one more dependency for one function.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

/// Formats `time` as `YYYY-MM-DDTHH:MM:SS.mmmZ`, rounding down to the millisecond.
pub(crate) fn format(time: SystemTime) -> String {
    let millis: i128 = match time.duration_since(UNIX_EPOCH) {
        Ok(after) => after.as_millis() as i128,
        // Before 1970: round towards the past, like the post-epoch branch does.
        Err(before) => -(before.duration().as_nanos().div_ceil(1_000_000) as i128),
    };
    let seconds = millis.div_euclid(1000);
    let millis = millis.rem_euclid(1000);
    let days = seconds.div_euclid(86_400);
    let of_day = seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let mut text = String::with_capacity(24);
    write!(
        text,
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60,
    )
    .expect("writing to a String must not fail");
    text
}

/// The proleptic Gregorian date `days` after 1970-01-01.
fn civil_from_days(days: i128) -> (i128, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i128::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests;
