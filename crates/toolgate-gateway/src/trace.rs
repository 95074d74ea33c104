//! The SERVER span of each request the gateway serves, named and attributed as the
//! OpenTelemetry MCP conventions say (`{mcp.method.name} {target}`): a request a front hands
//! the [`Dispatcher`](crate::Dispatcher), and a tool call from a client inside this process
//! (`toolgate call`, the agent: [`Gateway::call_tool_traced`]). Its parent is the trace
//! context in the request's `_meta`, else the one the front made current (an HTTP
//! `traceparent` header), else none: a new trace. Arguments and results go in only when
//! `[telemetry] record_arguments` is on.

use opentelemetry::trace::{SpanKind, SpanRef, Status, TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, KeyValue};
use rmcp::model::GetMeta as _;
use toolgate_core::{mcp, trace};
use toolgate_intercept::CallContext;
use toolgate_upstream::CallOptions;

use crate::answer::Answer;
use crate::error::{ErrorReply, GatewayError, reply_to};
use crate::gateway::Gateway;

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
    let method = request.method();
    let mut attributes = vec![
        KeyValue::new("mcp.method.name", method.to_owned()),
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
        mcp::ClientRequest::CallToolRequest(call) => Some(tool_call(&call.params, &mut attributes)),
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
    Some(start(&parent, method, target, attributes))
}

/// The attributes of a tool call (its name, and its arguments when they are recorded); its
/// name, the span's target.
fn tool_call(params: &mcp::CallToolRequestParams, attributes: &mut Vec<KeyValue>) -> String {
    attributes.push(KeyValue::new("gen_ai.tool.name", params.name.to_string()));
    attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
    if trace::records_arguments()
        && let Some(arguments) = &params.arguments
    {
        let arguments = serde_json::Value::Object(arguments.clone()).to_string();
        attributes.push(KeyValue::new("gen_ai.tool.call.arguments", arguments));
    }
    params.name.to_string()
}

/// Starts the SERVER span `{method} {target}` under `parent`.
fn start(
    parent: &Context,
    method: &str,
    target: Option<String>,
    attributes: Vec<KeyValue>,
) -> Context {
    let name = match target {
        Some(target) => format!("{method} {target}"),
        None => method.to_owned(),
    };
    let tracer = trace::tracer();
    let span = tracer
        .span_builder(name)
        .with_kind(SpanKind::Server)
        .with_attributes(attributes)
        .start_with_context(&tracer, parent);
    parent.with_span(span)
}

/// Ends the span of `cx` with what `answered` says: an error's code, a tool's error result,
/// and the result itself when arguments are recorded.
pub(crate) fn end(cx: &Context, answered: &Result<Answer, mcp::ErrorData>) {
    let span = cx.span();
    match answered {
        Err(error) => failed(&span, error),
        Ok(Answer::Result(mcp::ServerResult::CallToolResult(result))) => tool_result(&span, result),
        Ok(_) => {}
    }
    span.end();
}

/// A request answered with a JSON-RPC error.
fn failed(span: &SpanRef<'_>, error: &mcp::ErrorData) {
    span.set_attribute(KeyValue::new("error.type", error.code.0.to_string()));
    span.set_attribute(KeyValue::new("rpc.response.status_code", error.code.0.to_string()));
    span.set_status(Status::error(error.message.to_string()));
}

/// A tool call answered with a result (an error result marks the span failed).
fn tool_result(span: &SpanRef<'_>, result: &mcp::CallToolResult) {
    if result.is_error == Some(true) {
        span.set_attribute(KeyValue::new("error.type", "tool_error"));
        span.set_status(Status::error("the tool reported an error"));
    }
    if trace::records_arguments() {
        let result = serde_json::to_string(result).unwrap_or_default();
        span.set_attribute(KeyValue::new("gen_ai.tool.call.result", result));
    }
}

impl Gateway {
    /// [`call_tool`](Self::call_tool) for a client inside this process (`toolgate call`, the
    /// agent). With tracing on, the call is served in a SERVER span as a front's `tools/call`
    /// is, with the same name and attributes, `network.transport = "inproc"` and the model's
    /// call id (`ctx.request_id`) as `gen_ai.tool.call.id`; it continues the trace context
    /// in `params`' `_meta` (the one the process was started in, say), else starts a new
    /// trace. That context is this hop's: the upstream gets toolgate's, as from a front.
    pub async fn call_tool_traced(
        &self,
        mut params: mcp::CallToolRequestParams,
        options: &CallOptions,
        ctx: &mut CallContext,
    ) -> Result<mcp::CallToolResult, GatewayError> {
        use opentelemetry::context::FutureExt as _;
        let meta = params.meta.take().unwrap_or_default();
        params.meta = forwarded_meta(&meta);
        if !trace::enabled() {
            return self.call_tool(params, options, ctx).await;
        }
        let parent = trace::extract(&meta.0.0).unwrap_or_else(Context::current);
        let mut attributes = vec![
            KeyValue::new("mcp.method.name", "tools/call"),
            KeyValue::new("network.transport", "inproc"),
        ];
        if let Some(id) = &ctx.request_id {
            attributes.push(KeyValue::new("gen_ai.tool.call.id", id.clone()));
        }
        let target = tool_call(&params, &mut attributes);
        let cx = start(&parent, "tools/call", Some(target), attributes);
        let outcome = self.call_tool(params, options, ctx).with_context(cx.clone()).await;
        let span = cx.span();
        match &outcome {
            Ok(result) => tool_result(&span, result),
            // What a front would answer: a JSON-RPC error, or an error result.
            Err(error) => match reply_to(error) {
                ErrorReply::Protocol(error) => failed(&span, &error),
                ErrorReply::ToolError(message) => {
                    let result = mcp::CallToolResult::error(vec![mcp::ContentBlock::text(message)]);
                    tool_result(&span, &result);
                }
            },
        }
        span.end();
        outcome
    }
}

/// The downstream request's `_meta`, minus what belongs to this hop (progress tokens and the
/// protocol's own `io.modelcontextprotocol/*` keys, and with tracing on the client's trace
/// context, which the upstream layer replaces with toolgate's), to pass on untouched.
pub fn forwarded_meta(meta: &mcp::RequestMetaObject) -> Option<mcp::RequestMetaObject> {
    let mut object = meta.0.0.clone();
    object.retain(|key, _| key != "progressToken" && !key.starts_with("io.modelcontextprotocol/"));
    if toolgate_core::trace::enabled() {
        object.remove(toolgate_core::trace::TRACEPARENT);
        object.remove(toolgate_core::trace::TRACESTATE);
    }
    (!object.is_empty()).then(|| mcp::RequestMetaObject(mcp::MetaObject(object)))
}
