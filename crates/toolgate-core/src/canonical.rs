//! Canonical JSON: one text for one JSON value, whatever order its object keys arrived in and
//! however its numbers were written, so that hashes of the same value agree. Every hash
//! toolgate takes of JSON (audit records, approval digests, tool contracts) goes through here.
//!
//! The form is RFC 8785, the JSON Canonicalization Scheme (JCS): no whitespace, object keys
//! sorted by their UTF-16 code units, numbers as ECMAScript writes an IEEE 754 double
//! (`4.50` is `4.5`, `1E30` is `1e+30`, an integer beyond 2^53 is rounded like a double), and
//! strings with only the escapes JSON requires. The work is done by `serde_json_canonicalizer`,
//! checked here on the RFC's own examples.

use serde_json::Value;

/// `value` as RFC 8785 canonical JSON.
pub fn canonical_json(value: &Value) -> String {
    // A `Value` has string keys and finite numbers only, the two things JCS can refuse.
    serde_json_canonicalizer::to_string(value)
        .expect("a serde_json Value is always canonicalizable")
}

#[cfg(test)]
mod tests;
