//! Checking what a downstream client sends before rmcp sees it, so that bad input gets the
//! precise JSON-RPC answer: `-32700` for text that is not JSON, `-32600` for JSON that is not
//! a JSON-RPC message, `-32602` for a known method with parameters of the wrong shape, and
//! `-32601` for a method nobody serves. rmcp alone drops some of these silently or answers
//! them without an `id`.

#![allow(deprecated)] // legacy-era request types are still served

use serde_json::{Value, json};
use toolgate_core::mcp;
use toolgate_gateway::unrecognised::params_problem;

/// The largest message accepted, on stdio and (unless configured) over HTTP: rmcp's default.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// A message refused before it reached the server, and the error answer it gets.
#[derive(Debug, Clone)]
pub(crate) struct Rejection {
    /// The request's id when one could be read, else `null` (as JSON-RPC asks).
    pub id: Value,
    pub code: mcp::ErrorCode,
    pub message: String,
}

impl Rejection {
    fn new(id: Value, code: mcp::ErrorCode, message: String) -> Rejection {
        Rejection { id, code, message }
    }

    /// Text that is too long to be read as one message.
    pub(crate) fn too_large(limit: usize) -> Rejection {
        Rejection::new(
            Value::Null,
            mcp::ErrorCode::INVALID_REQUEST,
            format!("Invalid request: message larger than {limit} bytes"),
        )
    }

    /// The JSON-RPC error response.
    pub(crate) fn to_json(&self) -> Value {
        let error = mcp::ErrorData::new(self.code, self.message.clone(), None);
        json!({ "jsonrpc": "2.0", "id": self.id, "error": error })
    }
}

/// Reads one message, or says precisely why it is not one.
pub(crate) fn parse_message(bytes: &[u8]) -> Result<mcp::ClientJsonRpcMessage, Rejection> {
    // The common case, read once. (rmcp's types accept only `"jsonrpc": "2.0"` objects, so
    // what passes here would pass every check below.)
    if let Ok(message) = serde_json::from_slice::<mcp::ClientJsonRpcMessage>(bytes) {
        return Ok(message);
    }
    let value: Value = serde_json::from_slice(bytes).map_err(|error| {
        Rejection::new(Value::Null, mcp::ErrorCode::PARSE_ERROR, format!("Parse error: {error}"))
    })?;
    let invalid = |id: Value, why: &str| {
        Rejection::new(id, mcp::ErrorCode::INVALID_REQUEST, format!("Invalid request: {why}"))
    };
    let Value::Object(object) = &value else {
        let why = if value.is_array() {
            "batches are not part of MCP; send one message at a time"
        } else {
            "a message is a JSON object"
        };
        return Err(invalid(Value::Null, why));
    };
    // Only a string or number id can be echoed back.
    let id = object.get("id").filter(|id| id.is_string() || id.is_number()).cloned();
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(id.unwrap_or(Value::Null), "`jsonrpc` must be \"2.0\""));
    }
    match serde_json::from_value::<mcp::ClientJsonRpcMessage>(value.clone()) {
        Ok(message) => Ok(message),
        Err(error) => {
            let method = object.get("method").and_then(Value::as_str);
            match (id, method) {
                // An id no client could match its answer to (`1.5`, a number past 64 bits):
                // the request, not its parameters, is at fault.
                (Some(id), Some(_))
                    if serde_json::from_value::<mcp::RequestId>(id.clone()).is_err() =>
                {
                    Err(invalid(id, "`id` must be a string or an integer"))
                }
                // A request that names its id and method but cannot be read: its parameters
                // (any method rmcp does not know parses, with parameters of any object shape).
                (Some(id), Some(method)) => {
                    let problem = params_problem(method, object.get("params"))
                        .unwrap_or_else(|| "parameters must be an object".to_owned());
                    Err(Rejection::new(
                        id,
                        mcp::ErrorCode::INVALID_PARAMS,
                        format!("Invalid params for `{method}`: {problem}"),
                    ))
                }
                (id, _) => Err(invalid(id.unwrap_or(Value::Null), &error.to_string())),
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod props;
#[cfg(test)]
mod tests;
