//! What can go wrong with shared state: the backend (cannot be reached, or refused), or the
//! caller's request (a key, channel, value or TTL out of bounds). No error holds a backend's
//! password: every cause from a client library passes the backend's redactor first.

use std::fmt;
use std::time::Duration;

/// A shared-state operation that did not happen.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The backend cannot be reached, or did not answer within the operation's timeout: the
    /// operation may be tried again later (it did not happen, or, for a write whose answer was
    /// lost, may have).
    #[error("the {backend} state backend is unavailable")]
    Unavailable {
        /// `redis` or `postgres`.
        backend: &'static str,
        /// Why, without secrets.
        #[source]
        source: Cause,
    },
    /// The backend answered with an error: a refused password, a statement that failed.
    /// Trying again does not help.
    #[error("the {backend} state backend failed")]
    Failed {
        /// `redis` or `postgres`.
        backend: &'static str,
        /// What it said, without secrets.
        #[source]
        source: Cause,
    },
    /// `[state] backend` cannot be used as written (the URL, its TLS settings).
    #[error("[state] backend: {reason}")]
    Config {
        /// What is wrong, without secrets.
        reason: String,
    },
    /// A key that is empty, too long or holds a control character.
    #[error("state key {key:?}: {reason}")]
    InvalidKey {
        /// The key (at most its first 64 characters).
        key: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A channel name that is empty, too long or holds a control character.
    #[error("state channel {channel:?}: {reason}")]
    InvalidChannel {
        /// The channel (at most its first 64 characters).
        channel: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A TTL of zero (every key expires; nothing lives forever), or longer than the most.
    #[error("state key {key:?}: a TTL of {ttl:?}; it must be more than zero and at most {max:?}")]
    InvalidTtl {
        /// The key.
        key: String,
        /// The TTL asked for.
        ttl: Duration,
        /// [`crate::MAX_TTL`].
        max: Duration,
    },
    /// A value over [`crate::MAX_VALUE_BYTES`], refused before it reaches the backend.
    #[error("state key {key:?}: a value of {len} bytes; at most {max} can be stored")]
    ValueTooLarge {
        /// The key.
        key: String,
        /// The value's length.
        len: usize,
        /// [`crate::MAX_VALUE_BYTES`].
        max: usize,
    },
    /// A message over [`crate::MAX_PAYLOAD_BYTES`], refused before it reaches the backend.
    #[error("state channel {channel:?}: a message of {len} bytes; at most {max} can be published")]
    PayloadTooLarge {
        /// The channel.
        channel: String,
        /// The payload's length.
        len: usize,
        /// [`crate::MAX_PAYLOAD_BYTES`].
        max: usize,
    },
    /// `incr` on a key whose value is not a decimal integer (one `put` wrote), or an increment
    /// past the range of an `i64`. The value is left as it was.
    #[error("state key {key:?}: {reason}")]
    NotACounter {
        /// The key.
        key: String,
        /// `holds a value that is not a decimal integer`, or `the increment would overflow`.
        reason: &'static str,
    },
}

/// Why a backend failed, in words with every secret of its URL taken out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause(String);

impl Cause {
    /// Made only from redacted text (see `redact.rs`) or from words of our own.
    pub(crate) fn new(text: impl Into<String>) -> Cause {
        Cause(text.into())
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Cause {}

/// The text of a key or channel for a message: at most 64 characters.
pub(crate) fn shown(text: &str) -> String {
    match text.char_indices().nth(64) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_key_is_shown_cut() {
        assert_eq!(shown("short"), "short");
        let long = "é".repeat(100);
        assert_eq!(shown(&long), format!("{}...", "é".repeat(64)));
    }

    #[test]
    fn the_cause_is_the_source_not_the_message() {
        let error =
            StateError::Unavailable { backend: "redis", source: Cause::new("connection refused") };
        assert_eq!(error.to_string(), "the redis state backend is unavailable");
        assert_eq!(
            toolgate_core::ErrorChain(&error).to_string(),
            "the redis state backend is unavailable: connection refused"
        );
    }
}
