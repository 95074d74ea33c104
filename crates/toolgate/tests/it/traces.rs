//! OpenTelemetry traces (`[telemetry]`), received by an OTLP/HTTP receiver in this test (the
//! spans decoded with the `opentelemetry-proto` definitions), with a Python SDK server
//! (`tests/servers/py_trace_server.py`) as the upstream, over stdio and streamable HTTP: it
//! answers with the trace context it received in `_meta`, and the parent the SDK's own
//! OpenTelemetry middleware continued from it.
//!
//! One call from the official Python SDK client with a `traceparent` in its `_meta` is one
//! trace: the gateway's SERVER span, the `policy` interceptor's span and the upstream CLIENT
//! span, and the upstream receives toolgate's own context, its CLIENT span as parent, never
//! the client's span. Sampling is a ratio for new traces and follows the parent otherwise: a
//! sampled-out request sends no span but still passes its context on, unsampled. `cli.rs`:
//! the same spans when toolgate itself is the client (`toolgate call`, `toolgate run`).

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;

use axum::body::Bytes;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message as _;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use crate::deps;
use crate::support::*;

mod cli;

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

    /// The spans received so far (all of them, once the exporting process has exited: it
    /// sends what is left before it does, and waits for each answer).
    fn received(&mut self) -> Vec<Span> {
        let mut spans = Vec::new();
        while let Ok(span) = self.spans.try_recv() {
            spans.push(span);
        }
        spans
    }
}

/// `tests/servers/py_trace_server.py` over streamable HTTP on 127.0.0.1.
struct PythonHttpServer {
    _child: Child,
    url: String,
}

impl PythonHttpServer {
    async fn start() -> PythonHttpServer {
        let mut child = Command::new(deps::python())
            .arg(py_trace_server())
            .arg("http")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("start the Python SDK server");
        let stdout = child.stdout.take().expect("stdout");
        let line = tokio::time::timeout(Duration::from_secs(30), async {
            BufReader::new(stdout).lines().next_line().await
        })
        .await
        .expect("the Python SDK server listens in time")
        .expect("read its stdout")
        .expect("it prints where it listens");
        let url = line.strip_prefix("listening ").expect("a listening line").to_owned();
        PythonHttpServer { _child: child, url }
    }
}

/// The Python SDK server, a script of the repository.
fn py_trace_server() -> std::path::PathBuf {
    let path = deps::repo_root().join("tests/servers/py_trace_server.py");
    assert!(path.is_file(), "{} is missing from the repository", path.display());
    path
}

/// The Python SDK server as upstream `py`: over stdio, or at `url` over streamable HTTP.
fn python_server(url: Option<&str>) -> String {
    match url {
        None => format!(
            "[servers.py]\ncommand = {}\nargs = [{}, \"stdio\"]\nrequired = true\n",
            toml_str(&deps::python().to_string_lossy()),
            toml_str(&py_trace_server().to_string_lossy()),
        ),
        Some(url) => fixture_server("py", "http", Some(url)),
    }
}

/// `upstream` (a `[servers.py]` table), a `policy` that allows everything, and tracing to
/// `receiver` with `sampling`.
fn config(receiver: &Receiver, upstream: &str, sampling: f64) -> ConfigDir {
    ConfigDir::new(&format!(
        "{upstream}\n[[pipeline]]\nkind = \"policy\"\ndefault = \"allow\"\n\n\
         [telemetry]\notlp_endpoint = {}\nsampling = {sampling}\nservice_name = \"toolgate-test\"\n",
        toml_str(&receiver.url),
    ))
}

/// What the Python SDK server answered `trace_context` with, from a tool result's JSON.
fn received_context(result: &Value) -> Value {
    let text = result["content"][0]["text"].as_str().unwrap_or_else(|| {
        panic!("trace_context answered: {result}");
    });
    serde_json::from_str(text).expect("trace_context returns JSON")
}

/// The official Python SDK client's `steps` against `gateway`; its report.
async fn python_client(gateway: &HttpGateway, steps: Value) -> Value {
    let output = Command::new(deps::python())
        .arg(deps::client_script("py_client.py"))
        .args(["--mode", "legacy", "--timeout", "60", "--script"])
        .arg(steps.to_string())
        .args(["http", &gateway.url])
        .output()
        .await
        .expect("run the Python SDK client");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("the client prints JSON")
}

/// One `tools/call` of `py__trace_context` from the Python SDK client with `traceparent`
/// (and `tracestate` `client=1`) in its `_meta`; what the upstream received.
async fn call_from_python(gateway: &HttpGateway, traceparent: &str) -> Value {
    let steps = json!([{
        "op": "call_tool", "name": "py__trace_context", "arguments": {},
        "meta": {"traceparent": traceparent, "tracestate": "client=1"}
    }]);
    let report = python_client(gateway, steps).await;
    received_context(&report["steps"][0]["result"])
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

/// The span named `name`, failing with the names there are.
fn find<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    spans.iter().find(|span| span.name == name).unwrap_or_else(|| {
        let names: Vec<&str> = spans.iter().map(|span| span.name.as_str()).collect();
        panic!("no span {name} in {names:?}")
    })
}

/// The three spans of one traced `tools/call` of `py__trace_context` (gateway, `policy`,
/// upstream), checked for what every front and toolgate's own clients give them alike; the
/// upstream's `received` context names the CLIENT span as its parent, in the same trace.
fn one_call<'a>(spans: &'a [Span], received: &Value) -> [&'a Span; 3] {
    let server = find(spans, "tools/call py__trace_context");
    let client = find(spans, "tools/call trace_context");
    // The call's own `policy` run (other requests have theirs).
    let policy = spans
        .iter()
        .find(|span| span.name == "policy" && span.parent_span_id == server.span_id)
        .unwrap_or_else(|| panic!("no policy span under the call's: {spans:?}"));
    let trace_id = hex(&server.trace_id);
    for span in [policy, client] {
        assert_eq!(hex(&span.trace_id), trace_id, "{} is in the gateway's trace", span.name);
    }
    assert_eq!(server.kind, SpanKind::Server as i32);
    assert_eq!(attribute(server, "mcp.method.name").as_deref(), Some("tools/call"));
    assert_eq!(attribute(server, "gen_ai.tool.name").as_deref(), Some("py__trace_context"));
    assert_eq!(attribute(server, "gen_ai.operation.name").as_deref(), Some("execute_tool"));
    assert_eq!(attribute(server, "gen_ai.tool.call.arguments"), None, "not opted in");

    assert_eq!(attribute(policy, "toolgate.interceptor.decision").as_deref(), Some("continued"));

    assert_eq!(client.kind, SpanKind::Client as i32);
    assert_eq!(hex(&client.parent_span_id), hex(&server.span_id));
    assert_eq!(attribute(client, "toolgate.upstream").as_deref(), Some("py"));
    assert_eq!(attribute(client, "gen_ai.tool.name").as_deref(), Some("trace_context"));

    // The upstream saw toolgate's CLIENT span as its parent, in `_meta` and as the Python
    // SDK's own middleware read it.
    let parent = format!("00-{trace_id}-{}-01", hex(&client.span_id));
    assert_eq!(received["traceparent"], json!(parent), "{received}");
    assert_eq!(
        received["sdk_parent"],
        json!({"trace_id": trace_id, "span_id": hex(&client.span_id)}),
        "{received}"
    );
    [server, policy, client]
}

/// The Python SDK client calls through toolgate into the Python SDK server at `upstream`:
/// one trace, continuing the client's.
async fn one_trace_from_client_to_upstream(upstream: &str, transport: &str) {
    let mut receiver = Receiver::start().await;
    let config = config(&receiver, upstream, 1.0);
    let gateway = HttpGateway::start(&config.path()).await;
    let received = call_from_python(&gateway, &format!("00-{TRACE_ID}-{CLIENT_SPAN}-01")).await;
    // The spans are sent in a batch; ending the gateway sends what is left.
    assert!(gateway.terminate().await.success());

    let spans = receiver.received();
    let [server, _, client] = one_call(&spans, &received);
    assert_eq!(hex(&server.trace_id), TRACE_ID, "the client's trace continues");
    assert_eq!(hex(&server.parent_span_id), CLIENT_SPAN, "the client's span is the parent");
    assert_eq!(attribute(server, "network.transport").as_deref(), Some("tcp"));
    assert!(attribute(server, "mcp.session.id").is_some(), "a legacy client has a session");
    assert!(attribute(server, "jsonrpc.request.id").is_some());
    assert_eq!(attribute(client, "network.transport").as_deref(), Some(transport));

    // The client's own span id never reaches the upstream; its tracestate travels with the
    // trace, as W3C asks.
    assert!(!received.to_string().contains(CLIENT_SPAN), "{received}");
    assert_eq!(received["tracestate"], "client=1", "{received}");
}

#[tokio::test]
async fn one_call_is_one_trace_from_the_python_client_into_a_python_stdio_upstream() {
    one_trace_from_client_to_upstream(&python_server(None), "pipe").await;
}

#[tokio::test]
async fn one_call_is_one_trace_from_the_python_client_into_a_python_http_upstream() {
    let upstream = PythonHttpServer::start().await;
    one_trace_from_client_to_upstream(&python_server(Some(&upstream.url)), "tcp").await;
}

#[tokio::test]
async fn a_sampled_out_request_sends_no_span_but_passes_its_context_on_unsampled() {
    let mut receiver = Receiver::start().await;
    let config = config(&receiver, &python_server(None), 0.0);
    let gateway = HttpGateway::start(&config.path()).await;
    // The client's span is not sampled; a new trace (`tools/list`) is not at sampling 0.
    let steps = json!([{
        "op": "call_tool", "name": "py__trace_context", "arguments": {},
        "meta": {"traceparent": format!("00-{TRACE_ID}-{CLIENT_SPAN}-00")}
    }, {"op": "list_tools"}]);
    let report = python_client(&gateway, steps).await;
    let received = received_context(&report["steps"][0]["result"]);
    // Still passed on, unsampled, under a span of toolgate's.
    let parent = received["traceparent"].as_str().expect("a traceparent");
    assert!(parent.starts_with(&format!("00-{TRACE_ID}-")) && parent.ends_with("-00"), "{parent}");
    assert!(!parent.contains(CLIENT_SPAN), "{parent}");
    assert_eq!(received["sdk_parent"]["trace_id"], TRACE_ID, "{received}");
    assert!(gateway.terminate().await.success());
    assert_eq!(receiver.received(), Vec::new(), "no span was sent");
}

#[tokio::test]
async fn a_sampled_parent_is_traced_whatever_the_ratio() {
    let mut receiver = Receiver::start().await;
    let config = config(&receiver, &python_server(None), 0.0);
    let gateway = HttpGateway::start(&config.path()).await;
    let received = call_from_python(&gateway, &format!("00-{TRACE_ID}-{CLIENT_SPAN}-01")).await;
    assert!(gateway.terminate().await.success());
    let spans = receiver.received();
    let [server, _, _] = one_call(&spans, &received);
    assert_eq!(hex(&server.parent_span_id), CLIENT_SPAN);
    // Only that call's: the client's other requests (`initialize`, new traces) are dropped.
    assert!(spans.iter().all(|span| hex(&span.trace_id) == TRACE_ID), "{spans:?}");
}
