//! A script's own tools: what its `tools()` lists, read once when a version compiles, and
//! what a `call_<name>` returns, made an MCP `CallToolResult`.
//!
//! ```rune
//! pub fn tools() {
//!     [#{
//!         name: "greet",
//!         description: "Says hello to someone",
//!         input_schema: #{ type: "object", properties: #{ who: #{ type: "string" } }, required: ["who"] },
//!     }]
//! }
//!
//! pub async fn call_greet(args, ctx) {
//!     `Hello, ${args.who}!`
//! }
//! ```
//!
//! Each tool is an object with `name` (letters, digits, `_` and `-`, at most 64), and
//! optionally `description`, `title`, `input_schema` (an object schema; `{"type": "object"}`
//! when left out), `output_schema` and `annotations` (MCP's `ToolAnnotations`); the camel-case
//! MCP spellings (`inputSchema`, `outputSchema`) are taken too. The function a tool runs is
//! `call_` followed by its name with `-` written as `_`; a tool without one does not compile.
//!
//! What `call_<name>(args, ctx)` returns becomes the result: a string is one text block; an
//! object with a `content` list is taken as a `CallToolResult` as it is (`isError`,
//! `structuredContent` and `_meta` included); `()` is an empty result; any other value is
//! its JSON as text, and an object is also the `structuredContent`. Returning `Err(reason)`
//! answers with an error result saying `reason`.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use toolgate_core::mcp;

/// One tool a script defines.
#[derive(Debug, Clone)]
pub struct ScriptTool {
    /// Its definition as listed.
    pub tool: Arc<mcp::Tool>,
    /// The function that runs it (`call_<name>`).
    pub function: String,
}

/// The keys a tool's object may have.
const KEYS: &[&str] = &[
    "name",
    "title",
    "description",
    "input_schema",
    "inputSchema",
    "output_schema",
    "outputSchema",
    "annotations",
];

/// The function that runs the tool `name`.
pub fn function_of(name: &str) -> String {
    format!("call_{}", name.replace('-', "_"))
}

/// Reads what `tools()` returned; `defines` says whether the script has a function. Every
/// problem is reported, each naming its tool.
pub(crate) fn read(
    value: &Value,
    defines: impl Fn(&str) -> bool,
) -> Result<Vec<ScriptTool>, Vec<String>> {
    let Value::Array(items) = value else {
        return Err(vec![format!("tools() must return a list of tools, not {value}")]);
    };
    let mut problems = Vec::new();
    let mut tools = Vec::with_capacity(items.len());
    let mut functions = BTreeMap::new();
    for (index, item) in items.iter().enumerate() {
        match read_one(item, index) {
            Ok(tool) => {
                let name = tool.name.to_string();
                let function = function_of(&name);
                if let Some(other) = functions.insert(function.clone(), name.clone()) {
                    problems.push(if other == name {
                        format!("tools(): the tool {name:?} is listed twice")
                    } else {
                        format!(
                            "tools(): the tools {other:?} and {name:?} would both run {function}"
                        )
                    });
                } else if !defines(&function) {
                    problems.push(format!(
                        "tools(): the tool {name:?} has no function to run it (pub async fn {function}(args, ctx))"
                    ));
                } else {
                    tools.push(ScriptTool { tool: Arc::new(tool), function });
                }
            }
            Err(problem) => problems.push(problem),
        }
    }
    if problems.is_empty() { Ok(tools) } else { Err(problems) }
}

fn read_one(item: &Value, index: usize) -> Result<mcp::Tool, String> {
    let at = |problem: String| format!("tools()[{index}]: {problem}");
    let Value::Object(object) = item else {
        return Err(at(format!("a tool is an object with a name, not {item}")));
    };
    if let Some(key) = object.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(at(format!(
            "unknown key {key:?} (known: name, title, description, input_schema, output_schema, annotations)"
        )));
    }
    let name = match object.get("name") {
        Some(Value::String(name)) if is_tool_name(name) => name.clone(),
        Some(Value::String(name)) => {
            return Err(at(format!(
                "the name {name:?} must be 1 to 64 letters, digits, `_` or `-`"
            )));
        }
        _ => return Err(at("missing `name` (a string)".to_owned())),
    };
    let at = |problem: String| format!("tools(): the tool {name:?}: {problem}");
    let pick = |snake: &str, camel: &str| object.get(snake).or_else(|| object.get(camel));
    let mut tool = Map::new();
    tool.insert("name".into(), Value::String(name.clone()));
    for key in ["title", "description"] {
        match object.get(key) {
            None | Some(Value::Null) => {}
            Some(text @ Value::String(_)) => {
                tool.insert(key.into(), text.clone());
            }
            Some(other) => return Err(at(format!("{key} must be a string, not {other}"))),
        }
    }
    let input = match pick("input_schema", "inputSchema") {
        None | Some(Value::Null) => json!({"type": "object"}),
        Some(Value::Object(schema)) => {
            let mut schema = schema.clone();
            match schema.get("type") {
                None => {
                    schema.insert("type".into(), json!("object"));
                }
                Some(Value::String(kind)) if kind == "object" => {}
                Some(other) => {
                    return Err(at(format!(
                        "input_schema must describe an object (\"type\": \"object\"), not {other}"
                    )));
                }
            }
            Value::Object(schema)
        }
        Some(other) => return Err(at(format!("input_schema must be an object, not {other}"))),
    };
    tool.insert("inputSchema".into(), input);
    match pick("output_schema", "outputSchema") {
        None | Some(Value::Null) => {}
        Some(schema @ Value::Object(_)) => {
            tool.insert("outputSchema".into(), schema.clone());
        }
        Some(other) => return Err(at(format!("output_schema must be an object, not {other}"))),
    }
    match object.get("annotations") {
        None | Some(Value::Null) => {}
        Some(annotations @ Value::Object(_)) => {
            tool.insert("annotations".into(), annotations.clone());
        }
        Some(other) => return Err(at(format!("annotations must be an object, not {other}"))),
    }
    serde_json::from_value(Value::Object(tool)).map_err(|e| at(e.to_string()))
}

/// Whether `name` may name a tool: 1 to 64 of `[A-Za-z0-9_-]`.
fn is_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// What a `call_<name>` returned, as the tool's result.
pub fn result_of(value: Value) -> mcp::CallToolResult {
    match value {
        Value::Null => mcp::CallToolResult::success(Vec::new()),
        Value::String(text) => mcp::CallToolResult::success(vec![mcp::ContentBlock::text(text)]),
        Value::Object(object) if object.get("content").is_some_and(Value::is_array) => {
            let value = Value::Object(object);
            match serde_json::from_value::<mcp::CallToolResult>(value.clone()) {
                Ok(result) => result,
                Err(error) => error_result(format!(
                    "the script tool returned a result that is not a CallToolResult ({error}): {value}"
                )),
            }
        }
        Value::Object(object) => {
            let text = Value::Object(object.clone()).to_string();
            let mut result = mcp::CallToolResult::success(vec![mcp::ContentBlock::text(text)]);
            result.structured_content = Some(Value::Object(object));
            result
        }
        other => mcp::CallToolResult::success(vec![mcp::ContentBlock::text(other.to_string())]),
    }
}

/// An error result saying `message`.
pub fn error_result(message: impl Into<String>) -> mcp::CallToolResult {
    mcp::CallToolResult::error(vec![mcp::ContentBlock::text(message.into())])
}

/// The text blocks of `result`, one per line.
pub fn text_of(result: &mcp::CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(_: &str) -> bool {
        true
    }

    #[test]
    fn a_tool_is_read_with_defaults_and_either_spelling() {
        let tools = read(
            &json!([
                {"name": "greet", "description": "Says hello",
                 "input_schema": {"properties": {"who": {"type": "string"}}}},
                {"name": "add-up", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
                {"name": "bare"}
            ]),
            all,
        )
        .expect("tools");
        assert_eq!(tools.len(), 3);
        assert_eq!(tools[0].function, "call_greet");
        assert_eq!(tools[0].tool.description.as_deref(), Some("Says hello"));
        assert_eq!(
            Value::Object(tools[0].tool.input_schema.as_ref().clone()),
            json!({"type": "object", "properties": {"who": {"type": "string"}}})
        );
        assert_eq!(tools[1].function, "call_add_up");
        assert_eq!(tools[1].tool.annotations.as_ref().and_then(|a| a.read_only_hint), Some(true));
        assert_eq!(
            Value::Object(tools[2].tool.input_schema.as_ref().clone()),
            json!({"type": "object"})
        );
    }

    #[test]
    fn every_problem_is_reported_with_its_tool() {
        let problems = read(
            &json!([
                {"name": "ok"},
                {"name": "ok"},
                {"name": "a-b"},
                {"name": "a_b"},
                {"name": "has space"},
                {"description": "no name"},
                {"name": "typo", "input_shema": {}},
                {"name": "array", "input_schema": {"type": "array"}},
                "text",
            ]),
            |f| f != "call_missing",
        )
        .expect_err("problems");
        let text = problems.join("\n");
        for expected in [
            "the tool \"ok\" is listed twice",
            "the tools \"a-b\" and \"a_b\" would both run call_a_b",
            "tools()[4]: the name \"has space\"",
            "tools()[5]: missing `name`",
            "tools()[6]: unknown key \"input_shema\"",
            "the tool \"array\": input_schema must describe an object",
            "tools()[8]: a tool is an object",
        ] {
            assert!(text.contains(expected), "{expected:?} missing from:\n{text}");
        }
        let missing = read(&json!([{"name": "missing"}]), |f| f != "call_missing").unwrap_err();
        assert!(missing[0].contains("pub async fn call_missing(args, ctx)"), "{missing:?}");
        assert!(read(&json!({}), all).is_err());
    }

    #[test]
    fn what_a_tool_returns_becomes_its_result() {
        assert_eq!(text_of(&result_of(json!("hi"))), "hi");
        assert!(result_of(Value::Null).content.is_empty());
        let object = result_of(json!({"sum": 3}));
        assert_eq!(object.structured_content, Some(json!({"sum": 3})));
        assert_eq!(text_of(&object), r#"{"sum":3}"#);
        assert_eq!(text_of(&result_of(json!([1, 2]))), "[1,2]");
        let whole = result_of(json!({"content": [{"type": "text", "text": "x"}], "isError": true}));
        assert_eq!(whole.is_error, Some(true));
        assert_eq!(text_of(&whole), "x");
        let bad = result_of(json!({"content": [{"type": "nonsense"}]}));
        assert_eq!(bad.is_error, Some(true));
    }
}
