//! The one place where errors become MCP answers.

use rmcp::ServiceError;
use toolgate_core::mcp;
use toolgate_upstream::UpstreamError;

use crate::gateway::GatewayError;

/// How a failed request is answered: a protocol error, or (for tool calls) a tool error result
/// the model can read.
pub(crate) enum Answer {
    /// A JSON-RPC error.
    Error(mcp::ErrorData),
    /// A `CallToolResult` with `isError: true`.
    ToolError(String),
}

/// Turns a gateway error into what the client sees. An error the upstream itself answered
/// passes through unchanged, so a client sees what it would see talking to it directly.
pub(crate) fn answer(error: GatewayError) -> Answer {
    match error {
        GatewayError::UnknownTool(name) => {
            Answer::Error(mcp::ErrorData::invalid_params(format!("Unknown tool: {name}"), None))
        }
        GatewayError::UnknownPrompt(name) => {
            Answer::Error(mcp::ErrorData::invalid_params(format!("Unknown prompt: {name}"), None))
        }
        GatewayError::UnknownResource(uri) => Answer::Error(mcp::ErrorData::resource_not_found(
            format!("Resource not found: {uri}"),
            Some(serde_json::json!({ "uri": uri })),
        )),
        GatewayError::Upstream(UpstreamError::Request { upstream, operation, source }) => {
            match *source {
                ServiceError::McpError(error) => Answer::Error(error),
                other => {
                    let error =
                        UpstreamError::Request { upstream, operation, source: Box::new(other) };
                    Answer::ToolError(toolgate_core::ErrorChain(&error).to_string())
                }
            }
        }
        GatewayError::Upstream(error) => {
            Answer::ToolError(toolgate_core::ErrorChain(&error).to_string())
        }
        // A refusal is the model's to read: who refused and why.
        GatewayError::Refused(refusal) => Answer::ToolError(refusal.to_string()),
        GatewayError::Interceptor(error) => Answer::Error(mcp::ErrorData::internal_error(
            format!("interceptor error: {error}"),
            None,
        )),
        #[allow(unreachable_patterns)]
        other => Answer::Error(mcp::ErrorData::internal_error(other.to_string(), None)),
    }
}

/// For requests other than tool calls: every failure is a JSON-RPC error.
pub(crate) fn to_mcp_error(error: GatewayError) -> mcp::ErrorData {
    if let GatewayError::Refused(refusal) = &error {
        return mcp::ErrorData::invalid_request(
            refusal.to_string(),
            Some(serde_json::json!({ "interceptor": refusal.interceptor })),
        );
    }
    match answer(error) {
        Answer::Error(error) => error,
        Answer::ToolError(message) => mcp::ErrorData::internal_error(message, None),
    }
}
