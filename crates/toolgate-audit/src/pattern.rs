//! Which events a subscriber wants: `tools/*`, `*/denied`, `tools/call/*`, `*`, or a
//! comma-separated list of these.
//!
//! Patterns match event kinds segment by segment (segments are separated by `/`). A `*`
//! segment matches one or more whole segments, so `tools/*` matches `tools/call/denied` but not
//! `tools`, and `*` matches every kind. Every other segment matches itself exactly. A list
//! matches when any of its patterns does.

use std::fmt;
use std::str::FromStr;

/// A parsed event pattern (see the module docs for the syntax).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventPattern {
    text: String,
    alternatives: Vec<Vec<Segment>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    /// Exactly this segment.
    Literal(String),
    /// One or more segments.
    Any,
}

/// A pattern that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid event pattern `{pattern}`: {reason}")]
pub struct PatternError {
    /// The whole pattern as given.
    pub pattern: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

// === impl EventPattern ===

impl EventPattern {
    /// Parses `text` (see the module docs). Spaces around commas are ignored.
    pub fn parse(text: &str) -> Result<EventPattern, PatternError> {
        let error = |reason| PatternError { pattern: text.to_owned(), reason };
        if text.trim().is_empty() {
            return Err(error("it is empty"));
        }
        let mut alternatives = Vec::new();
        for alternative in text.split(',') {
            let alternative = alternative.trim();
            if alternative.is_empty() {
                return Err(error("the list has an empty entry"));
            }
            let mut segments = Vec::new();
            for segment in alternative.split('/') {
                segments.push(match segment {
                    "" => return Err(error("it has an empty segment (`//`, or `/` at an end)")),
                    "*" => Segment::Any,
                    s if s.contains('*') => {
                        return Err(error("`*` must be a whole segment, as in `tools/*`"));
                    }
                    s => Segment::Literal(s.to_owned()),
                });
            }
            alternatives.push(segments);
        }
        let text = text.split(',').map(str::trim).collect::<Vec<_>>().join(",");
        Ok(EventPattern { text, alternatives })
    }

    /// The pattern `*`, which matches every event.
    pub fn all() -> EventPattern {
        EventPattern { text: "*".to_owned(), alternatives: vec![vec![Segment::Any]] }
    }

    /// Whether an event of `kind` is selected.
    pub fn matches(&self, kind: &str) -> bool {
        let segments: Vec<&str> = kind.split('/').collect();
        self.matches_segments(&segments)
    }

    /// [`matches`](Self::matches) on a kind already split at `/`, so that the bus splits each
    /// event once however many subscribers it has.
    pub(crate) fn matches_segments(&self, kind: &[&str]) -> bool {
        self.alternatives.iter().any(|pattern| match_segments(pattern, kind))
    }
}

fn match_segments(pattern: &[Segment], kind: &[&str]) -> bool {
    match pattern.split_first() {
        None => kind.is_empty(),
        Some((Segment::Literal(literal), rest)) => {
            kind.first() == Some(&literal.as_str()) && match_segments(rest, &kind[1..])
        }
        // One or more: try every split, shortest first. Patterns are a few segments long.
        Some((Segment::Any, rest)) => (1..=kind.len()).any(|n| match_segments(rest, &kind[n..])),
    }
}

impl FromStr for EventPattern {
    type Err = PatternError;

    fn from_str(text: &str) -> Result<EventPattern, PatternError> {
        EventPattern::parse(text)
    }
}

impl fmt::Display for EventPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests;
