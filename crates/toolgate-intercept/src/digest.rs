//! The digest an approval is bound to: SHA-256 over the tool's identity (server, original
//! name, and its definition as listed) and the call's arguments, all as canonical JSON. Any
//! change to the tool's definition or to the arguments gives another digest.

use serde_json::{Value, json};
use toolgate_core::canonical::canonical_json;
use toolgate_core::hash::sha256_hex;
use toolgate_core::mcp;

/// The lowercase hex SHA-256 of (tool identity, canonical arguments).
pub fn call_digest(
    server: &str,
    original: &str,
    definition: Option<&mcp::Tool>,
    arguments: Option<&mcp::JsonObject>,
) -> String {
    let definition = definition
        .map(|tool| serde_json::to_value(tool).unwrap_or(Value::Null))
        .unwrap_or(Value::Null);
    let arguments = arguments.map(|a| Value::Object(a.clone())).unwrap_or(Value::Null);
    let identity = json!({
        "server": server,
        "tool": original,
        "definition": definition,
        "arguments": arguments,
    });
    sha256_hex(canonical_json(&identity).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(value: Value) -> mcp::JsonObject {
        value.as_object().cloned().expect("an object")
    }

    #[test]
    fn key_order_does_not_matter_but_every_value_does() {
        let a = call_digest("s", "t", None, Some(&args(json!({"a": 1, "b": [1, 2]}))));
        let b = call_digest("s", "t", None, Some(&args(json!({"b": [1, 2], "a": 1}))));
        assert_eq!(a, b);
        assert_eq!(a.len(), 64);
        let other_value = call_digest("s", "t", None, Some(&args(json!({"a": 2, "b": [1, 2]}))));
        let other_tool = call_digest("s", "u", None, Some(&args(json!({"a": 1, "b": [1, 2]}))));
        let other_server = call_digest("r", "t", None, Some(&args(json!({"a": 1, "b": [1, 2]}))));
        assert_ne!(a, other_value);
        assert_ne!(a, other_tool);
        assert_ne!(a, other_server);
    }

    #[test]
    fn a_changed_definition_changes_the_digest() {
        let schema = |description: &str| {
            let input = args(json!({"type": "object"}));
            mcp::Tool::new("t", description.to_owned(), std::sync::Arc::new(input))
        };
        let before = call_digest("s", "t", Some(&schema("reads a file")), None);
        let after = call_digest("s", "t", Some(&schema("reads a file and mails it")), None);
        assert_ne!(before, after);
    }
}
