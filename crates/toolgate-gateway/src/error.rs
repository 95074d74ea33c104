//! Why the gateway could not serve a request, and the one place where that becomes an MCP
//! answer.

use rmcp::ServiceError;
use toolgate_core::mcp;
use toolgate_intercept::{InterceptionEvent, Phase, Refusal};
use toolgate_upstream::UpstreamError;

/// Why the gateway could not serve a request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// No exposed tool has this name.
    #[error("unknown tool: {0}")]
    UnknownTool(String),
    /// No exposed prompt has this name.
    #[error("unknown prompt: {0}")]
    UnknownPrompt(String),
    /// No upstream offers this resource.
    #[error("resource not found: {0}")]
    UnknownResource(String),
    /// The upstream failed.
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    /// An interceptor refused the request (or its answer).
    #[error("{0}")]
    Refused(Refusal),
    /// The downstream client answered a request an upstream sent it (sampling, elicitation,
    /// roots) with an error, or cannot answer it; the upstream gets that error unchanged.
    #[error("the client declined: {}", .0.message)]
    Declined(mcp::ErrorData),
    /// The server signs in each caller with their own account, and this caller has not (or
    /// cannot): `how` says what to do (the link to sign in at).
    #[error("server {server}: {how}")]
    SignIn {
        /// The server.
        server: String,
        /// What the caller should do.
        how: String,
    },
    /// A server a request names by URL cannot be reached as named (its URL, label or
    /// headers), or its connection is another caller's. `reason` names no credential.
    #[error("server {label}: {reason}")]
    DynamicServer {
        /// The request's label for it.
        label: String,
        /// Why.
        reason: String,
    },
    /// A tool the gateway serves itself (`toolgate__read_result`) failed.
    #[error("{tool} failed: {reason}")]
    OwnTool {
        /// Its exposed name.
        tool: String,
        /// What went wrong.
        reason: String,
    },
    /// A session (or a listen stream) asked to follow more resources than one may.
    #[error(
        "a session may follow at most {most} resources; unsubscribe from some before \
         subscribing to more"
    )]
    TooManySubscriptions {
        /// The most one session may follow.
        most: usize,
    },
    /// A session (or a listen stream) asked to follow resources whose URIs are longer in all
    /// than one may follow.
    #[error(
        "the URIs of the resources one session follows may take at most {most_bytes} bytes in \
         all; unsubscribe from some before subscribing to more"
    )]
    SubscriptionsTooLong {
        /// The most bytes.
        most_bytes: usize,
    },
    /// An interceptor turned a message into one of another kind (a tool call into a prompt
    /// request, say), which nothing downstream of it can use.
    #[error("an interceptor turned the {event} {} into a message of another kind", phase_noun(*.phase))]
    MessageChanged {
        /// The request's event.
        event: InterceptionEvent,
        /// Where it happened: a rewritten request, or an answer of the wrong kind in the
        /// request phase, or a rewritten answer in the response phase.
        phase: Phase,
    },
    /// `[audit] required`: the call's `tools/call/started` record is not in the audit log, so
    /// the call was not run.
    #[error(
        "the call was not run: {0} ([audit] required = true refuses the calls the audit log \
         cannot record)"
    )]
    NotAudited(toolgate_audit::NotWritten),
}

impl GatewayError {
    /// Whether the caller gave up on the request before it was answered (it was cancelled).
    pub fn is_cancelled(&self) -> bool {
        matches!(self, GatewayError::Upstream(UpstreamError::Cancelled { .. }))
    }

    /// Whether the upstream did not answer in time.
    pub fn is_timeout(&self) -> bool {
        matches!(self, GatewayError::Upstream(UpstreamError::Timeout { .. }))
    }
}

fn phase_noun(phase: Phase) -> &'static str {
    match phase {
        Phase::Request => "request",
        Phase::Response => "answer",
    }
}

/// How a failed request is answered: a protocol error, or (for tool calls) a tool error result
/// the model can read.
pub enum ErrorReply {
    /// A JSON-RPC error.
    Protocol(mcp::ErrorData),
    /// A `CallToolResult` with `isError: true`.
    ToolError(String),
}

/// Turns a gateway error into what the client sees. An error the upstream itself answered
/// passes through unchanged, so a client sees what it would see talking to it directly.
pub fn reply(error: GatewayError) -> ErrorReply {
    reply_to(&error)
}

/// [`reply`], leaving the error to the caller (a span records what the client would see).
///
/// Every variant is mapped here, without a catch-all: a new [`GatewayError`] does not compile
/// until it is given its answer.
pub(crate) fn reply_to(error: &GatewayError) -> ErrorReply {
    match error {
        GatewayError::UnknownTool(name) => ErrorReply::Protocol(mcp::ErrorData::invalid_params(
            format!("Unknown tool: {name}"),
            None,
        )),
        GatewayError::UnknownPrompt(name) => ErrorReply::Protocol(mcp::ErrorData::invalid_params(
            format!("Unknown prompt: {name}"),
            None,
        )),
        GatewayError::UnknownResource(uri) => {
            ErrorReply::Protocol(mcp::ErrorData::resource_not_found(
                format!("Resource not found: {uri}"),
                Some(serde_json::json!({ "uri": uri })),
            ))
        }
        GatewayError::Upstream(upstream @ UpstreamError::Request { source, .. }) => {
            match source.as_ref() {
                ServiceError::McpError(error) => ErrorReply::Protocol(error.clone()),
                _ => ErrorReply::ToolError(toolgate_core::ErrorChain(upstream).to_string()),
            }
        }
        GatewayError::Upstream(error) => {
            ErrorReply::ToolError(toolgate_core::ErrorChain(error).to_string())
        }
        // A refusal is the model's to read: who refused and why.
        GatewayError::Refused(refusal) => ErrorReply::ToolError(refusal.to_string()),
        GatewayError::Declined(error) => ErrorReply::Protocol(error.clone()),
        error @ GatewayError::OwnTool { .. } => ErrorReply::ToolError(error.to_string()),
        error @ GatewayError::DynamicServer { .. } => {
            ErrorReply::Protocol(mcp::ErrorData::invalid_params(error.to_string(), None))
        }
        // The model reads it and tells the person, who opens the link.
        error @ GatewayError::SignIn { .. } => ErrorReply::ToolError(error.to_string()),
        error @ GatewayError::TooManySubscriptions { most } => {
            ErrorReply::Protocol(mcp::ErrorData::invalid_request(
                error.to_string(),
                Some(serde_json::json!({ "most": most })),
            ))
        }
        error @ GatewayError::SubscriptionsTooLong { most_bytes } => {
            ErrorReply::Protocol(mcp::ErrorData::invalid_request(
                error.to_string(),
                Some(serde_json::json!({ "mostBytes": most_bytes })),
            ))
        }
        error @ GatewayError::MessageChanged { .. } => {
            ErrorReply::Protocol(mcp::ErrorData::internal_error(error.to_string(), None))
        }
        // The model reads why, and may try again once the log can be written.
        error @ GatewayError::NotAudited(_) => ErrorReply::ToolError(error.to_string()),
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
    match reply(error) {
        ErrorReply::Protocol(error) => error,
        ErrorReply::ToolError(message) => mcp::ErrorData::internal_error(message, None),
    }
}
