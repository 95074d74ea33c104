//! The SERVER span of each request a front hands the [`Dispatcher`](crate::Dispatcher), named
//! and attributed as the OpenTelemetry MCP conventions say (`{mcp.method.name} {target}`).
//! Its parent is the trace context in the request's `_meta`, else the one the front made
//! current (an HTTP `traceparent` header). Arguments and results go in only when
//! `[telemetry] record_arguments` is on.

use opentelemetry::trace::{SpanKind, Status, TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, KeyValue};
use rmcp::model::GetMeta as _;
use toolgate_core::{mcp, trace};

use crate::answer::Answer;

/// Who sent a request, as its SERVER span names them.
pub(crate) struct Peer<'a> {
    /// The client's session, if it has one.
    pub(crate) session_id: Option<&'a str>,
    /// The address it connected from, if it came over the network.
    pub(crate) address: Option<std::net::IpAddr>,
    /// The protocol version the request is served under.
    pub(crate) version: Option<&'a mcp::ProtocolVersion>,
}

/// Starts the SERVER span of `request`, as the context to serve it in; `None` when tracing is
/// off.
pub(crate) fn server_span(
    request: &mcp::ClientRequest,
    id: &mcp::RequestId,
    client: &Peer<'_>,
) -> Option<Context> {
    if !trace::enabled() {
        return None;
    }
    let parent = trace::extract(&request.get_meta().0.0).unwrap_or_else(Context::current);
    let method = request.method().to_owned();
    let mut attributes = vec![
        KeyValue::new("mcp.method.name", method.clone()),
        KeyValue::new("jsonrpc.request.id", id.to_string()),
        KeyValue::new("network.transport", if client.address.is_some() { "tcp" } else { "pipe" }),
    ];
    if let Some(session) = client.session_id {
        attributes.push(KeyValue::new("mcp.session.id", session.to_owned()));
    }
    if let Some(version) = client.version {
        attributes.push(KeyValue::new("mcp.protocol.version", version.to_string()));
    }
    if let Some(address) = client.address {
        attributes.push(KeyValue::new("client.address", address.to_string()));
    }
    let target = match request {
        mcp::ClientRequest::CallToolRequest(call) => {
            attributes.push(KeyValue::new("gen_ai.tool.name", call.params.name.to_string()));
            attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
            if trace::records_arguments()
                && let Some(arguments) = &call.params.arguments
            {
                let arguments = serde_json::Value::Object(arguments.clone()).to_string();
                attributes.push(KeyValue::new("gen_ai.tool.call.arguments", arguments));
            }
            Some(call.params.name.to_string())
        }
        mcp::ClientRequest::GetPromptRequest(get) => {
            attributes.push(KeyValue::new("gen_ai.prompt.name", get.params.name.clone()));
            Some(get.params.name.clone())
        }
        mcp::ClientRequest::ReadResourceRequest(read) => {
            attributes.push(KeyValue::new("mcp.resource.uri", read.params.uri.clone()));
            None
        }
        _ => None,
    };
    let name = match target {
        Some(target) => format!("{method} {target}"),
        None => method,
    };
    let span = trace::tracer()
        .span_builder(name)
        .with_kind(SpanKind::Server)
        .with_attributes(attributes)
        .start_with_context(&trace::tracer(), &parent);
    Some(parent.with_span(span))
}

/// Ends the span of `cx` with what `answered` says: an error's code, a tool's error result,
/// and the result itself when arguments are recorded.
pub(crate) fn end(cx: &Context, answered: &Result<Answer, mcp::ErrorData>) {
    let span = cx.span();
    match answered {
        Err(error) => {
            span.set_attribute(KeyValue::new("error.type", error.code.0.to_string()));
            span.set_attribute(KeyValue::new("rpc.response.status_code", error.code.0.to_string()));
            span.set_status(Status::error(error.message.to_string()));
        }
        Ok(Answer::Result(mcp::ServerResult::CallToolResult(result))) => {
            if result.is_error == Some(true) {
                span.set_attribute(KeyValue::new("error.type", "tool_error"));
                span.set_status(Status::error("the tool reported an error"));
            }
            if trace::records_arguments() {
                let result = serde_json::to_string(result).unwrap_or_default();
                span.set_attribute(KeyValue::new("gen_ai.tool.call.result", result));
            }
        }
        Ok(_) => {}
    }
    span.end();
}
