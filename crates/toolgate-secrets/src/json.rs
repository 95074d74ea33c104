//! Redacting every string of a JSON value (values and object keys), and numbers that are
//! card numbers.
//!
//! Keys are data often enough (a map keyed by e-mail address or by token) that leaving them
//! out would leak exactly what redaction is for. A key that changes keeps its place; when two
//! keys of one object become the same text, the later ones get `#2`, `#3`, ... after it, so
//! that no entry is lost. Keys that hold nothing to redact (every schema's property names)
//! are left alone, so a result stays valid against its schema unless a key itself was a
//! secret.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::detector::{Counts, Detector};

/// How many distinct clean keys one walk remembers (arrays of records repeat the same few).
const CLEAN_KEYS: usize = 1024;

impl Detector {
    /// Redacts every string in `value`, object keys included (see the crate docs), and says
    /// how many of each kind it replaced.
    pub fn redact_json(&self, value: &mut Value) -> Counts {
        let mut counts = Counts::default();
        redact(self, value, &mut counts);
        counts
    }
}

impl Detector {
    /// Whether anything [`redact_json`](Self::redact_json) would replace is in `value`.
    pub(crate) fn finds_in_json(&self, value: &Value) -> bool {
        match value {
            Value::String(text) => !self.find(text).is_empty(),
            Value::Array(items) => items.iter().any(|item| self.finds_in_json(item)),
            Value::Object(map) => {
                map.iter().any(|(key, item)| !self.find(key).is_empty() || self.finds_in_json(item))
            }
            Value::Number(number) => {
                let text = number.to_string();
                text.len() >= 13 && !self.find(&text).is_empty()
            }
            Value::Null | Value::Bool(_) => false,
        }
    }
}

pub(crate) fn redact(detector: &Detector, value: &mut Value, counts: &mut Counts) {
    walk(detector, value, counts, &mut HashSet::new());
}

fn walk(detector: &Detector, value: &mut Value, counts: &mut Counts, clean: &mut HashSet<String>) {
    match value {
        Value::String(text) => {
            detector.redact_string(text, counts);
        }
        Value::Array(items) => {
            for item in items {
                walk(detector, item, counts, clean);
            }
        }
        Value::Object(map) => {
            for item in map.values_mut() {
                walk(detector, item, counts, clean);
            }
            redact_keys(detector, map, counts, clean);
        }
        Value::Number(number) => {
            // A card number written as a JSON number: the value becomes the marker (a string).
            let text = number.to_string();
            if text.len() >= 13 {
                let redacted = detector.redact(&text);
                if let std::borrow::Cow::Owned(new) = redacted.text {
                    counts.merge(&redacted.counts);
                    *value = Value::String(new);
                }
            }
        }
        Value::Null | Value::Bool(_) => {}
    }
}

fn redact_keys(
    detector: &Detector,
    map: &mut Map<String, Value>,
    counts: &mut Counts,
    clean: &mut HashSet<String>,
) {
    let mut changed = Counts::default();
    let keys: Vec<Option<String>> = map
        .keys()
        .map(|key| {
            if clean.contains(key) {
                return None;
            }
            let redacted = detector.redact(key);
            if matches!(redacted.text, std::borrow::Cow::Borrowed(_)) && clean.len() < CLEAN_KEYS {
                clean.insert(key.clone());
            }
            changed.merge(&redacted.counts);
            match redacted.text {
                std::borrow::Cow::Borrowed(_) => None,
                std::borrow::Cow::Owned(new) => Some(new),
            }
        })
        .collect();
    if keys.iter().all(Option::is_none) {
        return;
    }
    counts.merge(&changed);
    // Keys that stay as they are keep their text; a redacted key yields to them.
    let kept: std::collections::HashSet<String> =
        map.keys().zip(&keys).filter(|(_, new)| new.is_none()).map(|(k, _)| k.clone()).collect();
    let old = std::mem::take(map);
    for ((key, value), new) in old.into_iter().zip(keys) {
        let key = match new {
            None => key,
            Some(new) => {
                let mut unique = new.clone();
                let mut n = 1;
                while map.contains_key(&unique) || kept.contains(&unique) {
                    n += 1;
                    unique = format!("{new}#{n}");
                }
                unique
            }
        };
        map.insert(key, value);
    }
}
