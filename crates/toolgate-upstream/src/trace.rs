//! The CLIENT span of each request toolgate sends an upstream (`{mcp.method.name} {target}`,
//! as the OpenTelemetry MCP conventions name it), and its context written into the request's
//! `_meta`, so that the upstream continues toolgate's trace under this span.

use opentelemetry::trace::{SpanKind, Status, TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, KeyValue};
use rmcp::model::GetMeta as _;
use toolgate_config::{ServerConfig, TransportConfig};
use toolgate_core::{mcp, trace};

use crate::error::UpstreamError;

/// Starts the span of `operation` on `target` to `server`, as a child of the current context,
/// and writes it into `request`'s `_meta` (replacing any trace context the client sent);
/// `None`, and `request` untouched, when tracing is off.
pub(crate) fn client_span(
    server: &ServerConfig,
    operation: &'static str,
    target: &str,
    request: &mut mcp::ClientRequest,
) -> Option<Context> {
    if !trace::enabled() {
        return None;
    }
    let transport = match &server.transport {
        TransportConfig::Stdio(_) => "pipe",
        TransportConfig::Http(_) => "tcp",
        TransportConfig::InProcess(_) => "inproc",
    };
    let mut attributes = vec![
        KeyValue::new("mcp.method.name", operation),
        KeyValue::new("network.transport", transport),
        KeyValue::new("toolgate.upstream", server.name.clone()),
    ];
    if let TransportConfig::Http(http) = &server.transport
        && let Some(host) = http.url.host_str()
    {
        attributes.push(KeyValue::new("server.address", host.to_owned()));
        if let Some(port) = http.url.port_or_known_default() {
            attributes.push(KeyValue::new("server.port", i64::from(port)));
        }
    }
    let named = match operation {
        "tools/call" => {
            attributes.push(KeyValue::new("gen_ai.tool.name", target.to_owned()));
            attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
            true
        }
        "prompts/get" => {
            attributes.push(KeyValue::new("gen_ai.prompt.name", target.to_owned()));
            true
        }
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
            attributes.push(KeyValue::new("mcp.resource.uri", target.to_owned()));
            false
        }
        _ => false,
    };
    let name = if named { format!("{operation} {target}") } else { operation.to_owned() };
    let tracer = trace::tracer();
    let parent = Context::current();
    let span = tracer
        .span_builder(name)
        .with_kind(SpanKind::Client)
        .with_attributes(attributes)
        .start_with_context(&tracer, &parent);
    let cx = parent.with_span(span);
    trace::inject(&cx, &mut request.get_meta_mut().0.0);
    Some(cx)
}

/// Ends the span of `cx` with the error, if the request failed.
pub(crate) fn end<T>(cx: &Context, sent: &Result<T, UpstreamError>) {
    let span = cx.span();
    if let Err(error) = sent {
        span.set_attribute(KeyValue::new("error.type", error_type(error)));
        span.set_status(Status::error(error.to_string()));
    }
    span.end();
}

/// A short, low-cardinality name for what went wrong.
fn error_type(error: &UpstreamError) -> &'static str {
    match error {
        UpstreamError::Timeout { .. } => "timeout",
        UpstreamError::Cancelled { .. } => "cancelled",
        UpstreamError::ConnectionLost { .. } => "connection_lost",
        UpstreamError::Restarted { .. } => "restarted",
        _ => "error",
    }
}
