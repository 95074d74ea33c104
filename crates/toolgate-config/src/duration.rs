//! Durations written as text: `"500ms"`, `"30s"`, `"2m"`, `"1h 30m"`, `"1m30s"`.
//!
//! A duration is one or more `<integer><unit>` terms, optionally separated by spaces. Units:
//! `ms`, `s`, `m`, `h`, `d` and their long forms (`msec`, `sec`, `min`, `hour`, `day`, ...).

use std::time::Duration;

use thiserror::Error;

/// Why a duration did not parse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DurationError {
    #[error("empty duration")]
    Empty,
    #[error("expected a number at character {0}")]
    ExpectedNumber(usize),
    #[error("missing unit after {0} (for example {0}s)")]
    MissingUnit(u64),
    #[error("unknown unit {0:?} (expected ms, s, m, h or d)")]
    UnknownUnit(String),
    #[error("fractions are not supported (write 1500ms rather than 1.5s)")]
    Fraction,
    #[error("too large")]
    Overflow,
}

/// Parses `text` as a sum of `<integer><unit>` terms.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(DurationError::Empty);
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return Err(DurationError::ExpectedNumber(text.len() - rest.len() + 1));
        }
        let number: u64 = rest[..digits].parse().map_err(|_| DurationError::Overflow)?;
        rest = &rest[digits..];
        if rest.starts_with(['.', ',']) {
            return Err(DurationError::Fraction);
        }
        rest = rest.trim_start();
        let letters = rest.len() - rest.trim_start_matches(|c: char| c.is_alphabetic()).len();
        if letters == 0 {
            return Err(DurationError::MissingUnit(number));
        }
        let unit = &rest[..letters];
        rest = rest[letters..].trim_start();
        let term = match unit {
            "ms" | "msec" | "msecs" | "millis" | "millisecond" | "milliseconds" => {
                Some(Duration::from_millis(number))
            }
            "s" | "sec" | "secs" | "second" | "seconds" => Some(Duration::from_secs(number)),
            "m" | "min" | "mins" | "minute" | "minutes" => {
                number.checked_mul(60).map(Duration::from_secs)
            }
            "h" | "hr" | "hrs" | "hour" | "hours" => {
                number.checked_mul(3600).map(Duration::from_secs)
            }
            "d" | "day" | "days" => number.checked_mul(86_400).map(Duration::from_secs),
            _ => return Err(DurationError::UnknownUnit(unit.to_owned())),
        };
        total = term.and_then(|term| total.checked_add(term)).ok_or(DurationError::Overflow)?;
    }
    Ok(total)
}

#[cfg(test)]
mod tests;
