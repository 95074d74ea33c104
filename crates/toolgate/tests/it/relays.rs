//! Server-to-client requests relayed to a client that can answer them: an upstream's
//! `sampling/createMessage`, `elicitation/create` and `roots/list` reach the client that made
//! the call, and its answers come back to the upstream, for every pairing of downstream
//! (stdio, HTTP) and upstream (stdio, a handshake-era session; streamable HTTP, a 2026-07-28
//! connection, where the upstream asks through `input_required` rounds instead), with an rmcp
//! client and with the Python SDK's. And what happens when a stdio upstream asks while two
//! calls are in flight on it, or asks a 2026-07-28 client.

#![allow(deprecated)]

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest,
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    Implementation, ListRootsResult, ProgressNotificationParam, Root, SamplingMessage,
    ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RequestContext, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::process::Command;
use tokio::sync::mpsc;

use crate::support::*;

/// A client with sampling, elicitation and roots, answering each in a fixed way and writing
/// down what it was asked; progress goes to a channel.
#[derive(Clone)]
struct Assistant {
    asked: Arc<Mutex<Vec<String>>>,
    progress: mpsc::UnboundedSender<ProgressNotificationParam>,
}

const ROOT_URI: &str = "file:///home/ada/project";

impl ClientHandler for Assistant {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities = serde_json::from_value(json!({
            "sampling": {},
            "elicitation": {"form": {}},
            "roots": {"listChanged": false},
        }))
        .expect("valid capabilities");
        ClientConfig::new(capabilities, Implementation::new("assistant", "1"))
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let asked = serde_json::to_value(&params.messages).expect("serializes");
        let prompt = asked[0]["content"]["text"].as_str().unwrap_or_default().to_owned();
        self.asked.lock().unwrap().push(format!("sampling: {prompt}"));
        let message = SamplingMessage::assistant_text(format!("the model says {prompt:?}"));
        Ok(CreateMessageResult::new(message, "test-model".into()))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let asked = serde_json::to_value(&request).expect("serializes");
        let message = asked["message"].as_str().unwrap_or_default();
        self.asked.lock().unwrap().push(format!("elicitation: {message}"));
        Ok(serde_json::from_value(json!({
            "action": "accept",
            "content": {"username": "ada", "email": "ada@example.com"}
        }))
        .expect("a valid result"))
    }

    async fn list_roots(
        &self,
        _: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        self.asked.lock().unwrap().push("roots".into());
        let mut root = Root::new(ROOT_URI);
        root.name = Some("project".into());
        Ok(ListRootsResult::new(vec![root]))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params);
    }
}

type AssistantClient = RunningService<RoleClient, Assistant>;

fn assistant() -> (Assistant, mpsc::UnboundedReceiver<ProgressNotificationParam>) {
    let (progress, receiver) = mpsc::unbounded_channel();
    (Assistant { asked: Arc::default(), progress }, receiver)
}

async fn over_stdio(assistant: Assistant, config: &std::path::Path) -> AssistantClient {
    let mut command = Command::new(toolgate_bin());
    command.args(["serve", "--stdio", "--config"]).arg(config);
    let transport = TokioChildProcess::new(command).expect("spawn toolgate --stdio");
    assistant.serve(transport).await.expect("connects over stdio")
}

async fn over_http(assistant: Assistant, url: &str) -> AssistantClient {
    let transport = StreamableHttpClientTransport::from_uri(url);
    assistant.serve(transport).await.expect("connects over HTTP")
}

async fn call(client: &AssistantClient, tool: &str, args: Value) -> rmcp::model::CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(object(args)))
        .await
        .expect("a tool result")
}

/// Each kind of question reaches the client, and its answer reaches the upstream's tool.
async fn assert_questions_answered(client: &AssistantClient, assistant: &Assistant) {
    let sampled = call(client, "fx__test_sampling", json!({"prompt": "two plus two"})).await;
    assert_eq!(first_text(&sampled), "LLM response: the model says \"two plus two\"");

    let elicited = call(client, "fx__test_elicitation", json!({"message": "Who are you?"})).await;
    assert_eq!(
        first_text(&elicited),
        r#"User response: action=accept, content={"username":"ada","email":"ada@example.com"}"#
    );

    let roots = call(client, "fx__list_roots", json!({})).await;
    assert_ne!(roots.is_error, Some(true), "{roots:?}");
    let roots: Value = serde_json::from_str(&first_text(&roots)).expect("JSON roots");
    assert_eq!(roots, json!({"roots": [{"uri": ROOT_URI, "name": "project"}]}));

    let asked = assistant.asked.lock().unwrap().clone();
    assert_eq!(asked, ["sampling: two plus two", "elicitation: Who are you?", "roots"]);
}

/// The fixture as upstream `fx` over `upstream`, and the process serving it, if any.
/// `"stdio"` is the fixture over stdio in the handshake era, as most stdio servers speak (it
/// would answer `server/discover`); `"stdio-2026"` the same in 2026-07-28, as toolgate finds
/// it by default; over streamable HTTP it speaks 2026-07-28.
async fn fixture_config(upstream: &str) -> (ConfigDir, Option<FixtureUpstream>) {
    let table = match upstream {
        "stdio" => format!("{}protocol = \"2025-11-25\"\n", fixture_server("fx", "stdio", None)),
        "stdio-2026" => {
            format!("{}protocol = \"2026-07-28\"\n", fixture_server("fx", "stdio", None))
        }
        other => {
            let fixture = FixtureUpstream::start(other).await;
            let table = fixture_server("fx", other, Some(&fixture.url));
            return (ConfigDir::new(&table), Some(fixture));
        }
    };
    (ConfigDir::new(&table), None)
}

async fn relays_over_stdio_front(upstream: &str) {
    let (config, _fixture) = fixture_config(upstream).await;
    let (assistant, _progress) = assistant();
    let client = over_stdio(assistant.clone(), &config.path()).await;
    assert_questions_answered(&client, &assistant).await;
    client.cancel().await.expect("close");
}

async fn relays_over_http_front(upstream: &str) {
    let (config, _fixture) = fixture_config(upstream).await;
    let gateway = HttpGateway::start(&config.path()).await;
    let (assistant, _progress) = assistant();
    let client = over_http(assistant.clone(), &gateway.url).await;
    assert_questions_answered(&client, &assistant).await;
    client.cancel().await.expect("close");
    assert!(gateway.terminate().await.success());
}

#[tokio::test]
async fn questions_are_relayed_stdio_front_stdio_upstream() {
    relays_over_stdio_front("stdio").await;
}

#[tokio::test]
async fn questions_are_relayed_stdio_front_2026_07_28_stdio_upstream() {
    relays_over_stdio_front("stdio-2026").await;
}

#[tokio::test]
async fn questions_are_relayed_http_front_2026_07_28_stdio_upstream() {
    relays_over_http_front("stdio-2026").await;
}

#[tokio::test]
async fn questions_are_relayed_stdio_front_http_upstream() {
    relays_over_stdio_front("http").await;
}

#[tokio::test]
async fn questions_are_relayed_http_front_stdio_upstream() {
    relays_over_http_front("stdio").await;
}

#[tokio::test]
async fn questions_are_relayed_http_front_http_upstream() {
    relays_over_http_front("http").await;
}

/// Starts `fx__slow` (long enough to outlast what follows) and returns once the upstream
/// is working on it: its first progress notification has arrived.
async fn slow_call_in_flight(
    client: &AssistantClient,
    progress: &mut mpsc::UnboundedReceiver<ProgressNotificationParam>,
) -> rmcp::service::RequestHandle<RoleClient> {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("fx__slow")
            .with_arguments(object(json!({"steps": 40, "step_ms": 100}))),
    ));
    let handle = client
        .peer()
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .expect("send slow");
    let first = tokio::time::timeout(std::time::Duration::from_secs(30), progress.recv())
        .await
        .expect("slow reports progress in time")
        .expect("progress channel open");
    assert_eq!(first.progress_token, handle.progress_token);
    handle
}

async fn slow_result(handle: rmcp::service::RequestHandle<RoleClient>) -> String {
    match handle.await_response().await.expect("slow answered") {
        ServerResult::CallToolResult(result) => first_text(&result),
        other => panic!("unexpected {other:?}"),
    }
}

/// On stdio nothing tells which call a server→client request belongs to: with one call in
/// flight it is that call's; with two, toolgate cannot tell, refuses the request, and the
/// upstream's tool reports that refusal. The other call is unaffected, and once it is over
/// the same question is relayed again.
#[tokio::test]
async fn a_stdio_upstream_asking_during_two_calls_gets_a_clear_refusal() {
    let (config, _fixture) = fixture_config("stdio").await;
    let (assistant, mut progress) = assistant();
    let client = over_stdio(assistant.clone(), &config.path()).await;

    let slow = slow_call_in_flight(&client, &mut progress).await;
    let sampled = call(&client, "fx__test_sampling", json!({"prompt": "during slow"})).await;
    assert_eq!(sampled.is_error, Some(true), "{sampled:?}");
    let text = first_text(&sampled);
    assert!(text.starts_with("sampling failed:"), "{text}");
    assert!(
        text.contains("toolgate cannot tell which client call this request belongs to"),
        "the refusal says why: {text}"
    );
    assert!(assistant.asked.lock().unwrap().is_empty(), "the client was not asked");
    assert_eq!(slow_result(slow).await, "done 40", "the other call is unaffected");

    let alone = call(&client, "fx__test_sampling", json!({"prompt": "alone"})).await;
    assert_eq!(first_text(&alone), "LLM response: the model says \"alone\"");
    client.cancel().await.expect("close");
}

/// Over streamable HTTP each question is tied to the call it belongs to, so a second call in
/// flight changes nothing.
#[tokio::test]
async fn an_http_upstream_asking_during_two_calls_is_answered() {
    let (config, _fixture) = fixture_config("http").await;
    let (assistant, mut progress) = assistant();
    let client = over_stdio(assistant.clone(), &config.path()).await;

    let slow = slow_call_in_flight(&client, &mut progress).await;
    let sampled = call(&client, "fx__test_sampling", json!({"prompt": "during slow"})).await;
    assert_eq!(first_text(&sampled), "LLM response: the model says \"during slow\"");
    assert_eq!(slow_result(slow).await, "done 40");
    client.cancel().await.expect("close");
}

/// Runs the Python SDK's client (`--answer-input` in `tests/clients/py_client.py`: it declares
/// sampling, elicitation and roots and answers each as [`Assistant`] does) in `mode` over
/// toolgate's stdio front, asking each question once; its JSON report.
async fn python_client_asked(mode: &str) -> Value {
    let (config, _fixture) = fixture_config("stdio").await;
    let script = json!([
        {"op": "call_tool", "name": "fx__test_sampling", "arguments": {"prompt": "two plus two"}},
        {"op": "call_tool", "name": "fx__test_elicitation", "arguments": {"message": "Who are you?"}},
        {"op": "call_tool", "name": "fx__list_roots", "arguments": {}},
    ]);
    let output = Command::new(crate::deps::python())
        .arg(crate::deps::client_script("py_client.py"))
        .args(["--answer-input", "--mode", mode, "--timeout", "60", "--script"])
        .arg(script.to_string())
        .args(["stdio", &toolgate_bin().to_string_lossy(), "serve", "--stdio", "--config"])
        .arg(config.path())
        .output()
        .await
        .expect("run the Python client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_str(&stdout).expect("the client prints JSON")
}

/// The result of step `step` of a Python client report: (isError, first text).
fn python_step(report: &Value, step: usize) -> (bool, String) {
    let result = &report["steps"][step]["result"];
    let text = result["content"][0]["text"].as_str().unwrap_or_default().to_owned();
    (result["isError"] == true, text)
}

#[tokio::test]
async fn python_sdk_client_answers_questions_in_a_2025_11_25_session() {
    let report = python_client_asked("legacy").await;
    assert_eq!(report["protocolVersion"], "2025-11-25", "{report}");
    assert_answered_every_question(&report);
}

/// The Python client's report shows it answered each question the upstream asked.
fn assert_answered_every_question(report: &Value) {
    let answered = |step| {
        let (failed, text) = python_step(report, step);
        assert!(!failed, "step {step}: {report}");
        text
    };
    assert_eq!(answered(0), "LLM response: the model says \"two plus two\"");
    assert_eq!(
        answered(1),
        r#"User response: action=accept, content={"username":"ada","email":"ada@example.com"}"#
    );
    let roots: Value = serde_json::from_str(&answered(2)).expect("JSON roots");
    assert_eq!(roots, json!({"roots": [{"uri": ROOT_URI, "name": "project"}]}));
    assert_eq!(
        report["asked"],
        json!(["sampling: two plus two", "elicitation: Who are you?", "roots"]),
        "{report}"
    );
}

/// A 2026-07-28 client declares its capabilities in each request's `_meta` and can only be
/// asked through an `input_required` result (MRTR): there is no session to send it a request
/// on. Over the stdio front, whose requests go to the one dispatcher, it is asked that way and
/// answers as the 2025-11-25 client does. (Before the stdio front was toolgate's own, rmcp's
/// read capabilities from the handshake only, and such a client was never asked.)
#[tokio::test]
async fn python_sdk_client_answers_questions_in_2026_07_28_rounds() {
    let report = python_client_asked("auto").await;
    assert_eq!(report["protocolVersion"], "2026-07-28", "{report}");
    assert_answered_every_question(&report);
}
