//! Durations as people write and read them: the one parser (config values, option values, the
//! fixture's flags) and the one formatter (messages) of toolgate.
//!
//! [`parse`] is `humantime`'s grammar: one or more `<number><unit>` terms, spaces allowed
//! (`"500ms"`, `"30s"`, `"2m"`, `"1h 30m"`, `"1m30s"`, `"1.5s"`, `"10 seconds"`), units from
//! `ns` to `y` with their long forms, and a bare `"0"`. Its errors are ours, worded for a config
//! file and counted in characters from 1. A bare number of seconds is an integer value, which
//! callers that accept one read themselves (`timeout = 30` in TOML).
//!
//! [`format()`] writes the shortest exact form that [`parse`] reads back.

use std::fmt::Write as _;
use std::time::Duration;

use thiserror::Error;

/// Why a duration did not parse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum DurationError {
    /// Nothing but spaces.
    #[error("empty duration")]
    Empty,
    /// Something other than a number where a term must start (counted from 1).
    #[error("expected a number at character {0}")]
    ExpectedNumber(usize),
    /// A character that belongs to no term (counted from 1).
    #[error("unexpected {found:?} at character {at}")]
    Unexpected {
        /// Where, counted in characters from 1.
        at: usize,
        /// The character.
        found: char,
    },
    /// A number without a unit, such as `"10"`.
    #[error("missing unit after {0} (for example {0}s)")]
    MissingUnit(u64),
    /// A unit nobody knows.
    #[error("unknown unit {0:?} (expected ms, s, m, h or d)")]
    UnknownUnit(String),
    /// More than a `Duration` holds, or finer than a nanosecond.
    #[error("too large")]
    Overflow,
}

/// Parses a duration written as text (see the module documentation for the forms).
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    let text = text.trim();
    // 1-based character position of a byte offset, as an editor shows it.
    let at = |offset: usize| text.get(..offset).map_or(offset, |before| before.chars().count()) + 1;
    humantime::parse_duration(text).map_err(|error| match error {
        humantime::DurationError::Empty => DurationError::Empty,
        humantime::DurationError::NumberExpected(offset) => {
            DurationError::ExpectedNumber(at(offset))
        }
        humantime::DurationError::InvalidCharacter(offset) => {
            match text.get(offset..).and_then(|rest| rest.chars().next()) {
                Some(found) => DurationError::Unexpected { at: at(offset), found },
                None => DurationError::ExpectedNumber(at(offset)),
            }
        }
        humantime::DurationError::UnknownUnit { unit, value, .. } if unit.is_empty() => {
            DurationError::MissingUnit(value)
        }
        humantime::DurationError::UnknownUnit { unit, .. } => DurationError::UnknownUnit(unit),
        humantime::DurationError::NumberOverflow => DurationError::Overflow,
    })
}

/// How exactly [`format_with`] writes a duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// The duration itself: `"300ms"` (under a second), `"1s"`, `"1.5s"`, `"2m 6s"`,
    /// `"1h 30m"`, `"2d 1h"`.
    Exact,
    /// A wait as a caller reads it, rounded up so that trying again then succeeds: always with
    /// tenths under a minute (`"4.2s"`, `"1.0s"`), whole seconds under an hour (`"2m 6s"`), whole
    /// minutes above (`"1h 11m"`).
    WaitRoundedUp,
}

/// The shortest exact form of `duration` that [`parse`] reads back: `"300ms"`, `"1.5s"`,
/// `"90s"` is `"1m 30s"`.
pub fn format(duration: Duration) -> String {
    format_with(duration, Precision::Exact)
}

/// `duration` written at `precision`.
///
/// Written here rather than with `humantime::format_duration`, which spells sub-second parts
/// as separate terms (`"4s 200ms"`) where toolgate's messages say `"4.2s"`.
pub fn format_with(duration: Duration, precision: Precision) -> String {
    const NANOS: u128 = 1_000_000_000;
    let nanos = duration.as_nanos();
    let (nanos, tenths) = match precision {
        Precision::Exact => (nanos, false),
        Precision::WaitRoundedUp => {
            let up_to = |step: u128| nanos.div_ceil(step) * step;
            match up_to(NANOS / 10) {
                under_a_minute if under_a_minute < 60 * NANOS => (under_a_minute, true),
                _ => match up_to(NANOS) {
                    under_an_hour if under_an_hour < 3600 * NANOS => (under_an_hour, false),
                    _ => (up_to(60 * NANOS), false),
                },
            }
        }
    };
    if !tenths && nanos > 0 && nanos < NANOS {
        const PER_MS: u128 = 1_000_000;
        let digits = format!("{:06}", nanos % PER_MS);
        let decimals = digits.trim_end_matches('0');
        let point = if decimals.is_empty() { "" } else { "." };
        return format!("{}{point}{decimals}ms", nanos / PER_MS);
    }
    let (secs, fraction) = (nanos / NANOS, nanos % NANOS);
    let mut out = String::new();
    let parts = [(secs / 86_400, "d"), (secs / 3600 % 24, "h"), (secs / 60 % 60, "m")];
    for (value, unit) in parts.into_iter().filter(|(value, _)| *value > 0) {
        let _ = write!(out, "{}{value}{unit}", if out.is_empty() { "" } else { " " });
    }
    let seconds = secs % 60;
    if seconds > 0 || fraction > 0 || tenths || out.is_empty() {
        let separator = if out.is_empty() { "" } else { " " };
        let digits = format!("{fraction:09}");
        let decimals = if tenths { &digits[..1] } else { digits.trim_end_matches('0') };
        let point = if decimals.is_empty() { "" } else { "." };
        let _ = write!(out, "{separator}{seconds}{point}{decimals}s");
    }
    out
}

#[cfg(test)]
mod tests;
