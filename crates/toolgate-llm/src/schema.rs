//! An MCP tool's `inputSchema` made acceptable as a function's parameters in each dialect.
//!
//! toolgate sends tools with `strict: false` (OpenAI) and without strict tool use (Anthropic):
//! strict mode demands schemas MCP servers rarely write (every property required,
//! `additionalProperties: false`, a subset of keywords). What the non-strict APIs still refuse,
//! and what is changed for both OpenAI dialects and for Anthropic alike:
//!
//! - the top level must be `"type": "object"`: a schema that is not a JSON object (`true`,
//!   `null`, missing) becomes `{"type": "object", "properties": {}}`; a missing `type`, or a
//!   list of types holding `"object"` (`["object", "null"]`), becomes `"object"`; another type
//!   (which MCP does not allow for `inputSchema`) becomes `"object"` too, with no properties:
//!   wrapping the value in an object would change the arguments the tool receives;
//! - `properties` is added (empty) when missing, since some compatible servers require it;
//! - `$schema` and `$id` at the top level are dropped (OpenAI rejects some `$schema` values, and
//!   a `$id` changes how `$ref`s resolve);
//! - `oneOf`, `anyOf`, `allOf`, `enum` and `not` at the top level are dropped: OpenAI refuses
//!   them there ("schema must have type 'object' and not have 'oneOf'/'anyOf'/'allOf'/'enum'/
//!   'not' at the top level"), Anthropic refuses the first three. So that the model still sees
//!   the arguments, the `properties` of their object branches are merged into the top-level
//!   `properties` (a name already there keeps its schema), and for `allOf`, whose branches all
//!   apply, their `required` names are added too.
//!
//! Everything else (nested schemas, `$defs`, `$ref`, `required`, `additionalProperties`,
//! descriptions, formats) is kept as the server wrote it.

use serde_json::{Map, Value, json};

use crate::provider::Dialect;

/// Top-level keywords dropped (see the module doc).
const DROPPED: [&str; 7] = ["$schema", "$id", "oneOf", "anyOf", "allOf", "enum", "not"];

/// `schema` adapted to `dialect` (the same rules for every dialect today; see the module doc).
pub fn adapt(dialect: Dialect, schema: &Value) -> Value {
    let _ = dialect;
    let Some(object) = schema.as_object() else {
        return json!({"type": "object", "properties": {}});
    };
    let mut adapted = object.clone();
    let mut merged = Map::new();
    let mut required: Vec<Value> = Vec::new();
    for keyword in ["oneOf", "anyOf", "allOf"] {
        let branches = object.get(keyword).and_then(Value::as_array);
        for branch in branches.into_iter().flatten() {
            if let Some(properties) = branch.get("properties").and_then(Value::as_object) {
                for (name, property) in properties {
                    merged.entry(name.clone()).or_insert_with(|| property.clone());
                }
            }
            if keyword == "allOf" {
                let names = branch.get("required").and_then(Value::as_array);
                required.extend(names.into_iter().flatten().cloned());
            }
        }
    }
    for keyword in DROPPED {
        adapted.remove(keyword);
    }
    adapted.insert("type".into(), "object".into());
    let properties = adapted.entry("properties").or_insert_with(|| json!({}));
    if !properties.is_object() {
        *properties = json!({});
    }
    if let Some(properties) = properties.as_object_mut() {
        for (name, property) in merged {
            properties.entry(name).or_insert(property);
        }
    }
    if !required.is_empty() {
        let list = adapted.entry("required").or_insert_with(|| json!([]));
        if let Some(list) = list.as_array_mut() {
            for name in required {
                if !list.contains(&name) {
                    list.push(name);
                }
            }
        }
    }
    Value::Object(adapted)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Dialect; 3] = [Dialect::OpenaiChat, Dialect::OpenaiResponses, Dialect::Anthropic];

    #[test]
    fn an_ordinary_schema_is_kept_but_for_schema_and_id() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "urn:tool",
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Where"}},
            "required": ["path"],
            "additionalProperties": false,
            "$defs": {"x": {"enum": [1, 2]}}
        });
        for dialect in ALL {
            assert_eq!(
                adapt(dialect, &schema),
                json!({
                    "type": "object",
                    "properties": {"path": {"type": "string", "description": "Where"}},
                    "required": ["path"],
                    "additionalProperties": false,
                    "$defs": {"x": {"enum": [1, 2]}}
                })
            );
        }
    }

    #[test]
    fn the_top_level_is_always_an_object_with_properties() {
        for (schema, expected) in [
            (json!(true), json!({"type": "object", "properties": {}})),
            (Value::Null, json!({"type": "object", "properties": {}})),
            (json!({}), json!({"type": "object", "properties": {}})),
            (json!({"type": ["object", "null"]}), json!({"type": "object", "properties": {}})),
            (
                json!({"type": "string", "minLength": 1}),
                json!({"type": "object", "minLength": 1, "properties": {}}),
            ),
            (json!({"properties": {"a": {}}}), json!({"properties": {"a": {}}, "type": "object"})),
        ] {
            assert_eq!(adapt(Dialect::OpenaiChat, &schema), expected, "{schema}");
        }
    }

    #[test]
    fn top_level_combinators_are_dropped_and_their_properties_kept() {
        let schema = json!({
            "type": "object",
            "properties": {"mode": {"type": "string"}},
            "anyOf": [
                {"properties": {"id": {"type": "integer"}}, "required": ["id"]},
                {"properties": {"name": {"type": "string"}, "mode": {"enum": ["x"]}}}
            ],
            "allOf": [{"properties": {"force": {"type": "boolean"}}, "required": ["force"]}],
            "not": {"required": ["both"]},
            "enum": [{"id": 1}]
        });
        for dialect in ALL {
            assert_eq!(
                adapt(dialect, &schema),
                json!({
                    "type": "object",
                    "properties": {
                        "mode": {"type": "string"},
                        "id": {"type": "integer"},
                        "name": {"type": "string"},
                        "force": {"type": "boolean"}
                    },
                    "required": ["force"]
                })
            );
        }
    }

    #[test]
    fn nested_combinators_are_kept() {
        let schema = json!({
            "type": "object",
            "properties": {"v": {"oneOf": [{"type": "string"}, {"type": "number"}]}}
        });
        assert_eq!(adapt(Dialect::Anthropic, &schema), schema);
    }
}
