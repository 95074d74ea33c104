//! Whether a transformed result is still a valid `CallToolResult` for its tool, as a client
//! would judge it: it survives a JSON round trip, its `structuredContent` is an object, and
//! when the tool declares an `outputSchema` the structured content is still there and valid
//! against it (the TypeScript SDK's client refuses a result of such a tool without it).

use jsonschema::Draft;
use serde_json::Value;
use toolgate_core::mcp;

/// What is wrong with `after`, the transformed `before`, a result of `tool`; empty when
/// nothing is.
pub(crate) fn problems(
    tool: &mcp::Tool,
    before: &mcp::CallToolResult,
    after: &mcp::CallToolResult,
) -> Vec<String> {
    let mut problems = Vec::new();
    match serde_json::to_value(after) {
        Err(error) => problems.push(format!("does not serialize: {error}")),
        Ok(json) => match serde_json::from_value::<mcp::CallToolResult>(json.clone()) {
            Err(error) => {
                problems.push(format!("does not parse back as a CallToolResult: {error}"))
            }
            Ok(back) if serde_json::to_value(&back).ok().as_ref() != Some(&json) => {
                problems.push("changes in a JSON round trip".into());
            }
            Ok(_) => {}
        },
    }
    if let Some(structured) = &after.structured_content
        && !structured.is_object()
    {
        problems.push("structuredContent is not an object".into());
    }
    if let Some(schema) = &tool.output_schema
        && after.is_error != Some(true)
    {
        match &after.structured_content {
            None if before.structured_content.is_some() => problems.push(
                "structuredContent was dropped, but the tool declares an outputSchema".into(),
            ),
            None => {}
            Some(structured) => problems.extend(invalid(schema, structured)),
        }
    }
    problems
}

/// Why `value` is not valid against `schema`, if it is not.
fn invalid(schema: &mcp::JsonObject, value: &Value) -> Vec<String> {
    let mut options = jsonschema::options().offline();
    if !schema.contains_key("$schema") {
        options = options.with_draft(Draft::Draft202012);
    }
    match options.build(&Value::Object(schema.clone())) {
        Err(error) => vec![format!("the outputSchema does not compile: {error}")],
        Ok(validator) => validator
            .iter_errors(value)
            .take(3)
            .map(|error| {
                format!("not valid against the outputSchema at {}: {error}", error.instance_path())
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool_with_schema() -> mcp::Tool {
        let mut tool = mcp::Tool::new("t", "d", serde_json::Map::new());
        let schema =
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        tool.output_schema = Some(std::sync::Arc::new(schema.as_object().cloned().unwrap()));
        tool
    }

    fn structured(value: Value) -> mcp::CallToolResult {
        let mut result = mcp::CallToolResult::success(vec![mcp::ContentBlock::text("x")]);
        result.structured_content = Some(value);
        result
    }

    #[test]
    fn a_result_valid_against_the_schema_has_no_problem() {
        let before = structured(json!({"n": 1}));
        assert!(problems(&tool_with_schema(), &before, &before).is_empty());
    }

    #[test]
    fn dropped_or_invalid_structured_content_is_a_problem() {
        let before = structured(json!({"n": 1}));
        let mut dropped = before.clone();
        dropped.structured_content = None;
        assert_eq!(problems(&tool_with_schema(), &before, &dropped).len(), 1);
        let wrong = structured(json!({"n": "one"}));
        assert_eq!(problems(&tool_with_schema(), &before, &wrong).len(), 1);
        let not_an_object = structured(json!([1]));
        assert!(!problems(&tool_with_schema(), &before, &not_an_object).is_empty());
    }
}
