//! The JSON items of the corpus in three encodings (compact JSON, pretty JSON with two-space
//! indents, TOON from `toon-format` with its defaults), and the shape of their data, which
//! decides what TOON can gain.

use serde::Serialize;
use serde_json::Value;
use toolgate_core::mcp;
use toolgate_llm::tokens::Encoding;

/// The shape of a JSON value, as far as TOON cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Shape {
    /// Arrays of at least two objects with the same keys and only scalar values (TOON's
    /// tables), alone or as the members of an object.
    Tabular,
    /// Arrays of objects with the same keys, some values arrays or objects.
    UniformNested,
    /// Anything else with arrays or objects inside.
    Nested,
    /// An object of scalars.
    Flat,
}

impl Shape {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Shape::Tabular => "uniform array of objects (tabular)",
            Shape::UniformNested => "uniform array of objects (nested values)",
            Shape::Nested => "nested",
            Shape::Flat => "flat object",
        }
    }
}

/// An item's JSON in each encoding, in tokens.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Formats {
    pub(crate) shape: Shape,
    pub(crate) compact: usize,
    pub(crate) pretty: usize,
    /// `None` when `toon-format` cannot encode it.
    pub(crate) toon: Option<usize>,
}

/// The JSON data of a result: its first text block, when that is a JSON object or array
/// (what the model reads; the `structuredContent` beside it, when there is one, holds the
/// same data or the same text).
pub(crate) fn json_of(result: &mcp::CallToolResult) -> Option<Value> {
    let text = result.content.iter().find_map(|block| match block {
        mcp::ContentBlock::Text(text) => Some(text.text.trim()),
        _ => None,
    })?;
    serde_json::from_str::<Value>(text).ok().filter(|value| value.is_object() || value.is_array())
}

/// `value` in each encoding.
pub(crate) fn measure(value: &Value, encoding: Encoding) -> Formats {
    let compact = serde_json::to_string(value).unwrap_or_default();
    let pretty = serde_json::to_string_pretty(value).unwrap_or_default();
    let toon = toon_format::encode(value, &toon_format::EncodeOptions::default()).ok();
    Formats {
        shape: shape(value),
        compact: encoding.count(&compact),
        pretty: encoding.count(&pretty),
        toon: toon.map(|toon| encoding.count(&toon)),
    }
}

/// The shape of `value`.
pub(crate) fn shape(value: &Value) -> Shape {
    let arrays: Vec<&Vec<Value>> = match value {
        Value::Array(items) => vec![items],
        Value::Object(members) if members.values().all(Value::is_array) => {
            members.values().filter_map(Value::as_array).collect()
        }
        Value::Object(members) if members.values().all(is_scalar) => return Shape::Flat,
        _ => return Shape::Nested,
    };
    let uniform: Vec<Option<bool>> = arrays.iter().map(|items| uniform(items)).collect();
    if uniform.iter().all(|u| *u == Some(true)) {
        Shape::Tabular
    } else if uniform.iter().all(Option::is_some) {
        Shape::UniformNested
    } else {
        Shape::Nested
    }
}

/// For an array of at least two objects with the same keys: whether every value is a scalar.
/// `None` for any other array.
fn uniform(items: &[Value]) -> Option<bool> {
    let first = items.first()?.as_object()?;
    if items.len() < 2 {
        return None;
    }
    let mut scalars = true;
    for item in items {
        let object = item.as_object()?;
        if object.len() != first.len() || !object.keys().all(|k| first.contains_key(k)) {
            return None;
        }
        scalars &= object.values().all(is_scalar);
    }
    Some(scalars)
}

fn is_scalar(value: &Value) -> bool {
    !(value.is_array() || value.is_object())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn shapes() {
        let row = |n: i64| json!({"a": n, "b": "x"});
        assert_eq!(shape(&json!([row(1), row(2)])), Shape::Tabular);
        assert_eq!(
            shape(&json!({"rows": [row(1), row(2)], "more": [row(3), row(4)]})),
            Shape::Tabular
        );
        assert_eq!(shape(&json!({"rows": [{"a": [1]}, {"a": [2]}]})), Shape::UniformNested);
        assert_eq!(shape(&json!({"rows": [row(1), {"c": 1}]})), Shape::Nested);
        assert_eq!(shape(&json!({"rows": [row(1)]})), Shape::Nested);
        assert_eq!(shape(&json!({"a": 1, "b": "two"})), Shape::Flat);
        assert_eq!(shape(&json!({"a": {"b": 1}})), Shape::Nested);
    }

    #[test]
    fn toon_is_fewer_tokens_than_json_on_a_table() {
        let rows: Vec<Value> = (0..20)
            .map(|n| json!({"id": n, "name": format!("item {n}"), "ok": n % 2 == 0}))
            .collect();
        let formats = measure(&json!({ "rows": rows }), Encoding::O200kBase);
        assert!(formats.toon.unwrap() < formats.compact, "{formats:?}");
        assert!(formats.compact < formats.pretty, "{formats:?}");
    }
}
