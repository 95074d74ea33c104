//! Answers made up from JSON Schemas, the way a user who accepts everything would give them:
//! elicitations are accepted with the requested schema's `default`s, and tools are called with
//! each property's default or a plain example value of its type.

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use toolgate_core::mcp;
use toolgate_upstream::Caller;

#[cfg(test)]
mod tests;

/// A [`Caller`] that accepts every form elicitation with the defaults of its schema and
/// declines URL elicitations (there is nobody to open the page).
#[derive(Debug, Default)]
pub(crate) struct AcceptDefaults;

impl Caller for AcceptDefaults {
    fn create_elicitation(
        &self,
        params: mcp::ElicitRequestParams,
    ) -> BoxFuture<'static, Result<mcp::ElicitResult, mcp::ErrorData>> {
        let answer = answer_elicitation(&params);
        Box::pin(async move { answer })
    }
}

/// The answer [`AcceptDefaults`] gives to `params`.
fn answer_elicitation(
    params: &mcp::ElicitRequestParams,
) -> Result<mcp::ElicitResult, mcp::ErrorData> {
    let mcp::ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } = params
    else {
        tracing::info!("declining a URL elicitation");
        return Ok(mcp::ElicitResult::new(mcp::ElicitationAction::Decline));
    };
    let schema = serde_json::to_value(requested_schema).map_err(|error| {
        mcp::ErrorData::internal_error(format!("cannot read the requested schema: {error}"), None)
    })?;
    let content = Value::Object(schema_defaults(&schema));
    tracing::info!(%message, %content, "accepting an elicitation with its defaults");
    Ok(mcp::ElicitResult::new(mcp::ElicitationAction::Accept).with_content(content))
}

/// `{property: default}` for every property of an object schema that has a `default`.
pub(crate) fn schema_defaults(schema: &Value) -> Map<String, Value> {
    properties(schema)
        .filter_map(|(name, property)| Some((name.clone(), property.get("default")?.clone())))
        .collect()
}

/// Arguments for a tool whose `inputSchema` is `schema`: every property's default, and for
/// required properties without one an example value of their type.
pub(crate) fn tool_arguments(schema: &Value) -> Map<String, Value> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    properties(schema)
        .filter_map(|(name, property)| {
            let value = match property.get("default") {
                Some(default) => default.clone(),
                None if required.contains(&name.as_str()) => example(property),
                None => return None,
            };
            Some((name.clone(), value))
        })
        .collect()
}

/// A value valid for the simple schemas tools use: the first `enum` member, the `const`, or
/// something of the (first non-null) `type`.
fn example(schema: &Value) -> Value {
    if let Some(constant) = schema.get("const") {
        return constant.clone();
    }
    if let Some(first) = schema.get("enum").and_then(Value::as_array).and_then(|e| e.first()) {
        return first.clone();
    }
    let kind = match schema.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        Some(Value::Array(kinds)) => {
            kinds.iter().filter_map(Value::as_str).find(|k| *k != "null").unwrap_or("null")
        }
        _ => "null",
    };
    match kind {
        "integer" | "number" => json!(1),
        "string" => json!("test"),
        "boolean" => json!(true),
        "array" => json!([]),
        "object" => Value::Object(tool_arguments(schema)),
        _ => Value::Null,
    }
}

fn properties(schema: &Value) -> impl Iterator<Item = (&String, &Value)> {
    schema.get("properties").and_then(Value::as_object).into_iter().flatten()
}
