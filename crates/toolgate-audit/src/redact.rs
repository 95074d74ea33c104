//! Tool arguments as the audit log keeps them: a hash of the exact arguments, and a copy with
//! the secret fields masked (by path) and the secrets the detectors find in the strings left
//! replaced by `[REDACTED:<kind>]`.
//!
//! The hash is taken over canonical JSON ([`canonical_json`]), so the same arguments hash the
//! same whatever order their keys arrived in.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;
use serde_json::Value;

use toolgate_core::canonical::canonical_json;
use toolgate_core::hash::{hmac_sha256_hex, sha256_hex};

/// What a redacted field is replaced with.
pub const REDACTED: &str = "***";

/// A tool call's arguments, ready to be recorded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArgumentRecord {
    /// The SHA-256 (lowercase hex) of the arguments as canonical JSON, before redaction; with
    /// [`keyed`](Self::keyed), their HMAC-SHA256.
    ///
    /// Unkeyed, anyone who can guess a redacted value can check the guess against this hash,
    /// so fields holding short secrets (passwords, PINs) are only as hidden as they are hard
    /// to guess. A key (`[audit] hash_key`) closes that.
    pub sha256: String,
    /// The arguments with every field named by the redaction paths replaced by `"***"`
    /// (and, after [`detect`](Self::detect), every secret found in them by a detector
    /// replaced by `"[REDACTED:<kind>]"`).
    pub redacted: Value,
}

impl ArgumentRecord {
    /// Hashes `arguments` and copies them with the fields at `redact` masked. Paths that match
    /// nothing are ignored.
    pub fn new(arguments: &Value, redact: &[FieldPath]) -> ArgumentRecord {
        let sha256 = sha256_hex(canonical_json(arguments).as_bytes());
        ArgumentRecord { sha256, redacted: redacted(arguments, redact) }
    }

    /// As [`new`](Self::new), but the hash is an HMAC-SHA256 under `key`: whoever reads the
    /// log without the key cannot test guesses of a redacted value against it.
    pub fn keyed(arguments: &Value, redact: &[FieldPath], key: &[u8]) -> ArgumentRecord {
        let sha256 = hmac_sha256_hex(key, canonical_json(arguments).as_bytes());
        ArgumentRecord { sha256, redacted: redacted(arguments, redact) }
    }

    /// The same record with every secret `detector` finds in the redacted copy (in strings
    /// and object keys, and card numbers written as numbers) replaced by
    /// `[REDACTED:<kind>]`. Fields already masked by path stay `"***"`; the hash is unchanged
    /// (it is of the arguments as they were).
    pub fn detect(mut self, detector: &toolgate_secrets::Detector) -> ArgumentRecord {
        detector.redact_json(&mut self.redacted);
        self
    }
}

/// `arguments` with the fields at `redact` masked.
fn redacted(arguments: &Value, redact: &[FieldPath]) -> Value {
    let mut redacted = arguments.clone();
    for path in redact {
        mask(&mut redacted, &path.segments);
    }
    redacted
}

fn mask(value: &mut Value, path: &[PathSegment]) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    let children: Vec<&mut Value> = match (first, value) {
        (PathSegment::Key(key), Value::Object(map)) => map.get_mut(key).into_iter().collect(),
        (PathSegment::Any, Value::Object(map)) => map.values_mut().collect(),
        (PathSegment::Any, Value::Array(items)) => items.iter_mut().collect(),
        _ => Vec::new(),
    };
    for child in children {
        if rest.is_empty() {
            *child = Value::String(REDACTED.to_owned());
        } else {
            mask(child, rest);
        }
    }
}

/// A field to redact, as a dotted path: `password`, `auth.token`, `items.*.secret`.
///
/// Each segment names an object key; `*` stands for every element of an array or every value
/// of an object. Keys that contain `.` or are exactly `*` cannot be named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPath {
    text: String,
    segments: Vec<PathSegment>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum PathSegment {
    Key(String),
    Any,
}

/// A field path that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid field path `{path}`: {reason}")]
pub struct FieldPathError {
    /// The path as given.
    pub path: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

// === impl FieldPath ===

impl FieldPath {
    /// Parses a dotted path (see the type docs).
    pub fn parse(text: &str) -> Result<FieldPath, FieldPathError> {
        let error = |reason| FieldPathError { path: text.to_owned(), reason };
        if text.is_empty() {
            return Err(error("it is empty"));
        }
        let segments = text
            .split('.')
            .map(|segment| match segment {
                "" => Err(error("it has an empty segment (`..`, or `.` at an end)")),
                "*" => Ok(PathSegment::Any),
                key => Ok(PathSegment::Key(key.to_owned())),
            })
            .collect::<Result<_, _>>()?;
        Ok(FieldPath { text: text.to_owned(), segments })
    }
}

impl FromStr for FieldPath {
    type Err = FieldPathError;

    fn from_str(text: &str) -> Result<FieldPath, FieldPathError> {
        FieldPath::parse(text)
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests;
