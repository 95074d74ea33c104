//! A change of contract shown so that a person can judge it: descriptions and titles as a word
//! diff (`[-removed-]{+added+}`), annotations one by one (`destructiveHint: true → false`),
//! schemas and everything else path by path (`inputSchema.properties.path.type: "string" →
//! "number"`). `lines` shows the same change as a line diff of each field, for a page.

use std::fmt;

use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use crate::contract::Contract;

mod lines;

pub use lines::{FieldDiff, Line, LineTag, line_diff};

/// One difference between two contracts of the same item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A text field (`description`, `title`) rewritten: the word diff.
    Text { field: String, diff: String },
    /// One annotation set, unset or changed.
    Annotation { key: String, before: Option<Value>, after: Option<Value> },
    /// One value somewhere else (a schema, a prompt's arguments, a name) set, unset or changed.
    Path { path: String, before: Option<Value>, after: Option<Value> },
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::Text { field, diff } => write!(f, "{field}: {diff}"),
            Change::Annotation { key, before, after } => {
                write!(f, "annotations.{key}: {} → {}", shown(before), shown(after))
            }
            Change::Path { path, before, after } => {
                write!(f, "{path}: {} → {}", shown(before), shown(after))
            }
        }
    }
}

fn shown(value: &Option<Value>) -> String {
    value.as_ref().map_or_else(|| "(absent)".to_owned(), Value::to_string)
}

/// The fields shown as a word diff.
const TEXT_FIELDS: [&str; 2] = ["description", "title"];

/// What changed from `before` to `after`, field by field in key order.
pub fn changes(before: &Contract, after: &Contract) -> Vec<Change> {
    let empty = serde_json::Map::new();
    let old = before.value.as_object().unwrap_or(&empty);
    let new = after.value.as_object().unwrap_or(&empty);
    let mut out = Vec::new();
    for field in union_of_keys(old, new) {
        let (was, is) = (old.get(field), new.get(field));
        if was == is {
            continue;
        }
        if TEXT_FIELDS.contains(&field)
            && was.is_none_or(Value::is_string)
            && is.is_none_or(Value::is_string)
        {
            let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_owned();
            out.push(Change::Text {
                field: field.to_owned(),
                diff: word_diff(&text(was), &text(is)),
            });
        } else if field == "annotations" {
            let none = serde_json::Map::new();
            let was = was.and_then(Value::as_object).unwrap_or(&none);
            let is = is.and_then(Value::as_object).unwrap_or(&none);
            for key in union_of_keys(was, is) {
                if was.get(key) != is.get(key) {
                    out.push(Change::Annotation {
                        key: key.to_owned(),
                        before: was.get(key).cloned(),
                        after: is.get(key).cloned(),
                    });
                }
            }
        } else {
            paths(&mut out, &path_step("", field), was, is);
        }
    }
    out
}

/// `before` → `after` as one text: `[-…-]` around removed words, `{+…+}` around added ones.
pub fn word_diff(before: &str, after: &str) -> String {
    let diff = TextDiff::from_words(before, after);
    let mut out = String::new();
    let mut open: Option<ChangeTag> = None;
    for change in diff.iter_all_changes() {
        let tag = change.tag();
        if open != Some(tag) {
            close(&mut out, open);
            match tag {
                ChangeTag::Delete => out.push_str("[-"),
                ChangeTag::Insert => out.push_str("{+"),
                ChangeTag::Equal => {}
            }
            open = Some(tag);
        }
        out.push_str(change.value());
    }
    close(&mut out, open);
    out
}

fn close(out: &mut String, open: Option<ChangeTag>) {
    match open {
        Some(ChangeTag::Delete) => out.push_str("-]"),
        Some(ChangeTag::Insert) => out.push_str("+}"),
        _ => {}
    }
}

/// Every leaf that differs between `before` and `after` under `path`.
fn paths(out: &mut Vec<Change>, path: &str, before: Option<&Value>, after: Option<&Value>) {
    match (before, after) {
        (Some(Value::Object(was)), Some(Value::Object(is))) => {
            for key in union_of_keys(was, is) {
                paths(out, &path_step(path, key), was.get(key), is.get(key));
            }
        }
        (Some(Value::Array(was)), Some(Value::Array(is))) => {
            for index in 0..was.len().max(is.len()) {
                paths(out, &format!("{path}[{index}]"), was.get(index), is.get(index));
            }
        }
        (was, is) if was != is => out.push(Change::Path {
            path: path.to_owned(),
            before: was.cloned(),
            after: is.cloned(),
        }),
        _ => {}
    }
}

/// `path` extended by the object key `key`: `.key`, or `["key"]` when the key is not a plain
/// word.
fn path_step(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '$');
    match (path.is_empty(), plain) {
        (true, true) => key.to_owned(),
        (false, true) => format!("{path}.{key}"),
        (_, false) => format!("{path}[{}]", Value::String(key.to_owned())),
    }
}

/// The keys of both objects, sorted, each once.
fn union_of_keys<'a>(
    a: &'a serde_json::Map<String, Value>,
    b: &'a serde_json::Map<String, Value>,
) -> Vec<&'a str> {
    let mut keys: Vec<&str> = a.keys().chain(b.keys()).map(String::as_str).collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

#[cfg(test)]
mod tests;
