//! Unit tests of answers made up from schemas.

use serde_json::json;

use super::*;

/// The schema of the suite's `elicitation-sep1034-client-defaults` scenario.
fn sep1034_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "enum": ["active", "inactive", "pending"],
                "default": "active"
            },
            "verified": {"type": "boolean", "default": true},
            "nickname": {"type": "string"}
        },
        "required": []
    })
}

#[test]
fn defaults_are_taken_and_properties_without_one_left_out() {
    let defaults = schema_defaults(&sep1034_schema());
    assert_eq!(
        Value::Object(defaults),
        json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true})
    );
}

#[test]
fn form_elicitation_is_accepted_with_the_defaults_after_a_round_trip_through_rmcp() {
    let params: mcp::ElicitRequestParams = serde_json::from_value(json!({
        "mode": "form",
        "message": "please accept with defaults",
        "requestedSchema": sep1034_schema(),
    }))
    .expect("the scenario's request must parse");
    let result = answer_elicitation(&params).expect("answered");
    assert_eq!(result.action, mcp::ElicitationAction::Accept);
    assert_eq!(
        result.content,
        Some(json!({
            "name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true
        }))
    );
}

#[test]
fn url_elicitation_is_declined() {
    let params: mcp::ElicitRequestParams = serde_json::from_value(json!({
        "mode": "url",
        "message": "open this",
        "url": "https://example.com/form",
        "elicitationId": "e-1",
    }))
    .expect("parses");
    let result = answer_elicitation(&params).expect("answered");
    assert_eq!(result.action, mcp::ElicitationAction::Decline);
    assert_eq!(result.content, None);
}

#[test]
fn tool_arguments_fill_required_properties_and_defaults_only() {
    let schema = json!({
        "type": "object",
        "properties": {
            "a": {"type": "number"},
            "b": {"type": "integer"},
            "mode": {"type": "string", "enum": ["fast", "slow"]},
            "flag": {"type": ["null", "boolean"]},
            "nested": {
                "type": "object",
                "properties": {"x": {"type": "string"}},
                "required": ["x"]
            },
            "with_default": {"type": "string", "default": "d"},
            "optional": {"type": "string"}
        },
        "required": ["a", "b", "mode", "flag", "nested"]
    });
    assert_eq!(
        Value::Object(tool_arguments(&schema)),
        json!({
            "a": 1, "b": 1, "mode": "fast", "flag": true, "nested": {"x": "test"},
            "with_default": "d"
        })
    );
}

#[test]
fn tool_without_properties_gets_no_arguments() {
    assert!(tool_arguments(&json!({"type": "object"})).is_empty());
    assert!(tool_arguments(&json!({})).is_empty());
}
