//! OpenTelemetry traces (`[telemetry]`): one call from the official Python SDK client with a
//! `traceparent` in its `_meta` reaches an OTLP/HTTP receiver in this test (the spans decoded
//! with the `opentelemetry-proto` definitions) as one trace: the gateway's SERVER span, the
//! `policy` interceptor's span and the upstream CLIENT span; and the upstream (the fixture's
//! `meta_echo`) receives toolgate's own context, its CLIENT span as parent. With sampling 0
//! nothing is sent.

use std::net::SocketAddr;

use axum::body::Bytes;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message as _;
use serde_json::{Value, json};
use tokio::process::Command;
use tokio::sync::mpsc;

use crate::deps;
use crate::support::*;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

/// An OTLP/HTTP receiver on 127.0.0.1: every span of every export, in order.
struct Receiver {
    url: String,
    spans: mpsc::UnboundedReceiver<Span>,
}

impl Receiver {
    async fn start() -> Receiver {
        let (sender, spans) = mpsc::unbounded_channel();
        let app = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(move |body: Bytes| {
                let sender = sender.clone();
                async move {
                    let request = ExportTraceServiceRequest::decode(body).expect("an OTLP export");
                    for resource in request.resource_spans {
                        for scope in resource.scope_spans {
                            for span in scope.spans {
                                let _ = sender.send(span);
                            }
                        }
                    }
                    // An empty ExportTraceServiceResponse.
                    ([("content-type", "application/x-protobuf")], Vec::<u8>::new())
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address: SocketAddr = listener.local_addr().expect("address");
        tokio::spawn(async move { axum::serve(listener, app).await });
        Receiver { url: format!("http://{address}"), spans }
    }
}

fn config(receiver: &Receiver, sampling: f64) -> ConfigDir {
    ConfigDir::new(&format!(
        "{}\n[[pipeline]]\nkind = \"policy\"\ndefault = \"allow\"\n\n\
         [telemetry]\notlp_endpoint = {}\nsampling = {sampling}\nservice_name = \"toolgate-test\"\n",
        fixture_server("fx", "stdio", None),
        toml_str(&receiver.url),
    ))
}

/// One `tools/call` of `fx__meta_echo` from the Python SDK over HTTP with the client's
/// `traceparent`; the `_meta` the upstream received.
async fn call_from_python(gateway: &HttpGateway) -> Value {
    let steps = json!([{
        "op": "call_tool", "name": "fx__meta_echo", "arguments": {},
        "meta": {"traceparent": format!("00-{TRACE_ID}-{CLIENT_SPAN}-01"), "tracestate": "client=1"}
    }]);
    let output = Command::new(deps::python())
        .arg(deps::client_script("py_client.py"))
        .args(["--mode", "legacy", "--timeout", "60", "--script"])
        .arg(steps.to_string())
        .args(["http", &gateway.url])
        .output()
        .await
        .expect("run the Python SDK client");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_slice(&output.stdout).expect("the client prints JSON");
    let text = report["steps"][0]["result"]["content"][0]["text"].as_str().unwrap_or_else(|| {
        panic!("meta_echo answered: {report}");
    });
    serde_json::from_str(text).expect("meta_echo returns JSON")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn attribute(span: &Span, key: &str) -> Option<String> {
    let value = span.attributes.iter().find(|kv| kv.key == key)?.value.as_ref()?.value.as_ref()?;
    Some(match value {
        AnyValue::StringValue(text) => text.clone(),
        AnyValue::IntValue(n) => n.to_string(),
        other => format!("{other:?}"),
    })
}

#[tokio::test]
async fn one_call_is_one_trace_from_the_client_through_toolgate_into_the_upstream() {
    let mut receiver = Receiver::start().await;
    let config = config(&receiver, 1.0);
    let gateway = HttpGateway::start(&config.path()).await;
    let meta = call_from_python(&gateway).await;
    // The spans are sent in a batch; ending the gateway sends what is left.
    assert!(gateway.terminate().await.success());

    let mut spans = Vec::new();
    while let Ok(span) = receiver.spans.try_recv() {
        spans.push(span);
    }
    let names: Vec<&str> = spans.iter().map(|span| span.name.as_str()).collect();
    let find = |name: &str| {
        spans.iter().find(|span| span.name == name).unwrap_or_else(|| panic!("{name} in {names:?}"))
    };
    let server = find("tools/call fx__meta_echo");
    let policy = find("policy");
    let client = find("tools/call meta_echo");
    for span in [server, policy, client] {
        assert_eq!(hex(&span.trace_id), TRACE_ID, "{} continues the client's trace", span.name);
    }
    assert_eq!(server.kind, SpanKind::Server as i32);
    assert_eq!(hex(&server.parent_span_id), CLIENT_SPAN, "the client's span is the parent");
    assert_eq!(attribute(server, "mcp.method.name").as_deref(), Some("tools/call"));
    assert_eq!(attribute(server, "gen_ai.tool.name").as_deref(), Some("fx__meta_echo"));
    assert_eq!(attribute(server, "network.transport").as_deref(), Some("tcp"));
    assert!(attribute(server, "mcp.session.id").is_some(), "a legacy client has a session");
    assert!(attribute(server, "jsonrpc.request.id").is_some());
    assert_eq!(attribute(server, "gen_ai.tool.call.arguments"), None, "not opted in");

    assert_eq!(hex(&policy.parent_span_id), hex(&server.span_id));
    assert_eq!(attribute(policy, "toolgate.interceptor.decision").as_deref(), Some("continued"));

    assert_eq!(client.kind, SpanKind::Client as i32);
    assert_eq!(hex(&client.parent_span_id), hex(&server.span_id));
    assert_eq!(attribute(client, "toolgate.upstream").as_deref(), Some("fx"));
    assert_eq!(attribute(client, "network.transport").as_deref(), Some("pipe"));

    // The upstream saw toolgate's CLIENT span as its parent, not the client's span; the
    // client's tracestate travels with the trace, as W3C asks.
    let expected = format!("00-{TRACE_ID}-{}-01", hex(&client.span_id));
    assert_eq!(meta["traceparent"], json!(expected), "{meta}");
    assert_eq!(meta["tracestate"], "client=1", "{meta}");
}

#[tokio::test]
async fn with_sampling_zero_nothing_is_sent() {
    let mut receiver = Receiver::start().await;
    let config = config(&receiver, 0.0);
    let gateway = HttpGateway::start(&config.path()).await;
    // The client's span is sampled; a new trace (the HTTP front's own requests) is not, and
    // neither is a request whose parent is not sampled.
    let steps = json!([{
        "op": "call_tool", "name": "fx__meta_echo", "arguments": {},
        "meta": {"traceparent": format!("00-{TRACE_ID}-{CLIENT_SPAN}-00")}
    }, {"op": "list_tools"}]);
    let output = Command::new(deps::python())
        .arg(deps::client_script("py_client.py"))
        .args(["--mode", "legacy", "--timeout", "60", "--script"])
        .arg(steps.to_string())
        .args(["http", &gateway.url])
        .output()
        .await
        .expect("run the Python SDK client");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let text = report["steps"][0]["result"]["content"][0]["text"].as_str().expect("meta_echo");
    let meta: Value = serde_json::from_str(text).expect("JSON");
    // Still passed on, unsampled, under toolgate's span.
    let parent = meta["traceparent"].as_str().expect("a traceparent");
    assert!(parent.starts_with(&format!("00-{TRACE_ID}-")) && parent.ends_with("-00"), "{parent}");
    assert!(!parent.contains(CLIENT_SPAN), "{parent}");
    assert!(gateway.terminate().await.success());
    assert!(receiver.spans.try_recv().is_err(), "no span was sent");
}
