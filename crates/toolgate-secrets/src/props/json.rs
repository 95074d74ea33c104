//! JSON stays JSON: a JSON object or array written as text (compact or pretty) and redacted as
//! text is still JSON, and holds nothing a detector finds in any of its strings or keys;
//! `redact_json` leaves no string or key with a finding either.

use proptest::prelude::*;
use serde_json::Value;

use super::text;
use crate::Detector;

/// A JSON value of at most three levels whose strings and keys are [`text`]s.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        // Card numbers written as JSON numbers are redacted too.
        (4_000_000_000_000_000u64..4_999_999_999_999_999).prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::vec((text(), inner), 0..6)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

/// Every finding left in the strings and keys of `value`.
fn left_in(detector: &Detector, value: &Value) -> Vec<String> {
    match value {
        Value::String(s) => {
            detector.find(s).iter().map(|f| format!("{} in {s:?}", f.kind)).collect()
        }
        Value::Array(items) => items.iter().flat_map(|v| left_in(detector, v)).collect(),
        Value::Object(members) => members
            .iter()
            .flat_map(|(k, v)| {
                let key = detector.find(k).into_iter().map(|f| format!("{} in key {k:?}", f.kind));
                key.collect::<Vec<_>>().into_iter().chain(left_in(detector, v))
            })
            .collect(),
        _ => Vec::new(),
    }
}

proptest! {
    #[test]
    fn redacted_json_text_is_json_with_nothing_left(value in value(), pretty in any::<bool>()) {
        // What is kept JSON: an object or array (a number alone is text like any other).
        let value = if value.is_object() || value.is_array() { value } else { Value::from(vec![value]) };
        let detector = super::builtin();
        let text = if pretty {
            serde_json::to_string_pretty(&value).expect("JSON")
        } else {
            value.to_string()
        };
        let redacted = detector.redact_text(&text);
        let parsed: Result<Value, _> = serde_json::from_str(&redacted.text);
        prop_assert!(parsed.is_ok(), "not JSON any more: {:?}", redacted.text);
        let left = left_in(detector, &parsed.expect("checked"));
        prop_assert!(left.is_empty(), "left: {:?}", left);
    }

    #[test]
    fn redacted_json_has_nothing_left(mut value in value()) {
        let detector = super::builtin();
        let before = value.clone();
        let counts = detector.redact_json(&mut value);
        let left = left_in(detector, &value);
        prop_assert!(left.is_empty(), "left: {:?}", left);
        // Nothing found, nothing changed; and no member is lost to a key that became another's.
        prop_assert_eq!(counts.is_empty(), value == before);
        prop_assert_eq!(size(&value), size(&before));
    }
}

/// How many values and members `value` holds.
fn size(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(size).sum::<usize>(),
        Value::Object(members) => 1 + members.values().map(size).sum::<usize>(),
        _ => 1,
    }
}
