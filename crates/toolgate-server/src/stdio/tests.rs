//! Tests of the stdio front over in-memory pipes, against a gateway with no upstream: the
//! lifecycle of both eras, cancellation, listen streams, the bounds, and the end of input.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines as TextLines};
use toolgate_audit::EventBus;
use toolgate_gateway::{Gateway, Recorder, StartupWait};
use toolgate_intercept::Pipeline;

use super::*;

/// A client of a front serving an empty gateway.
struct TestClient {
    input: DuplexStream,
    output: TextLines<BufReader<DuplexStream>>,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
    shutdown: CancellationToken,
}

async fn client() -> TestClient {
    let gateway = Gateway::start(
        &[],
        StartupWait::All,
        Pipeline::new(Vec::new()).expect("an empty pipeline"),
        Recorder::new(EventBus::new(), Vec::new()),
    )
    .await;
    let (input, front_in) = tokio::io::duplex(1 << 16);
    let (front_out, output) = tokio::io::duplex(1 << 16);
    let shutdown = CancellationToken::new();
    let served = tokio::spawn(serve(
        Arc::new(Dispatcher::new(gateway)),
        front_in,
        front_out,
        1 << 20,
        Duration::from_secs(10),
        shutdown.clone(),
    ));
    TestClient { input, output: BufReader::new(output).lines(), served, shutdown }
}

impl TestClient {
    async fn send(&mut self, message: Value) {
        let line = format!("{message}\n");
        self.input.write_all(line.as_bytes()).await.expect("write");
    }

    async fn next(&mut self) -> Value {
        let line = self.output.next_line().await.expect("read").expect("a line");
        serde_json::from_str(&line).expect("one JSON message per line")
    }

    async fn initialize(&mut self) {
        self.send(json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}
            }
        }))
        .await;
        let answer = self.next().await;
        assert_eq!(answer["result"]["protocolVersion"], "2025-11-25", "{answer}");
    }
}

fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

#[tokio::test]
async fn a_session_is_opened_once_and_served_in_its_era() {
    let mut client = client().await;
    client.initialize().await;
    client.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    client.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).await;
    let listed = client.next().await;
    assert_eq!(listed["id"], 1);
    assert_eq!(listed["result"]["tools"], json!([]));
    assert!(listed["result"].get("resultType").is_none(), "no 2026-07-28 fields: {listed}");

    client
        .send(json!({
            "jsonrpc": "2.0", "id": 2, "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}
            }
        }))
        .await;
    let again = client.next().await;
    assert_eq!(again["id"], 2);
    assert_eq!(again["error"]["code"], -32600, "{again}");
}

#[tokio::test]
async fn before_initialize_only_ping_discover_and_self_contained_requests_are_served() {
    let mut client = client().await;
    client.send(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).await;
    assert_eq!(client.next().await["result"], json!({}));

    client.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await;
    let refused = client.next().await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let missing = refused["error"]["data"]["missing"].as_array().expect("what is missing");
    assert!(!missing.is_empty(), "{refused}");

    client
        .send(json!({
            "jsonrpc": "2.0", "id": 3, "method": "tools/list",
            "params": {"_meta": modern_meta()}
        }))
        .await;
    let listed = client.next().await;
    assert_eq!(listed["result"]["resultType"], "complete", "{listed}");
}

#[tokio::test]
async fn a_listen_stream_is_acknowledged_and_ends_when_cancelled_or_at_the_end() {
    let mut client = client().await;
    client
        .send(json!({
            "jsonrpc": "2.0", "id": "l1", "method": "subscriptions/listen",
            "params": {
                "_meta": modern_meta(),
                "notifications": {"toolsListChanged": true}
            }
        }))
        .await;
    let acknowledged = client.next().await;
    assert_eq!(
        acknowledged["method"], "notifications/subscriptions/acknowledged",
        "{acknowledged}"
    );
    assert_eq!(acknowledged["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "l1");
    client
        .send(json!({
            "jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": "l1"}
        }))
        .await;
    client.send(json!({"jsonrpc": "2.0", "id": 9, "method": "ping"})).await;
    assert_eq!(client.next().await["id"], 9, "a cancelled stream ends without a result");

    client
        .send(json!({
            "jsonrpc": "2.0", "id": "l2", "method": "subscriptions/listen",
            "params": {"_meta": modern_meta(), "notifications": {"toolsListChanged": true}}
        }))
        .await;
    assert_eq!(client.next().await["method"], "notifications/subscriptions/acknowledged");
    client.input.shutdown().await.expect("end the input");
    let ended = client.next().await;
    assert_eq!(ended["id"], "l2", "the stream ends with its result: {ended}");
    assert!(client.served.await.expect("joined").is_ok());
}

#[tokio::test]
async fn a_handshake_era_session_cannot_listen() {
    let mut client = client().await;
    client.initialize().await;
    client
        .send(json!({
            "jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
            "params": {"notifications": {"toolsListChanged": true}}
        }))
        .await;
    let refused = client.next().await;
    assert_eq!(refused["error"]["code"], -32601, "{refused}");
}

#[tokio::test]
async fn listen_streams_are_bounded() {
    let mut client = client().await;
    for n in 0..MOST_LISTENING {
        client
            .send(json!({
                "jsonrpc": "2.0", "id": n, "method": "subscriptions/listen",
                "params": {"_meta": modern_meta(), "notifications": {"toolsListChanged": true}}
            }))
            .await;
        assert_eq!(client.next().await["method"], "notifications/subscriptions/acknowledged");
    }
    client
        .send(json!({
            "jsonrpc": "2.0", "id": "one-more", "method": "subscriptions/listen",
            "params": {"_meta": modern_meta(), "notifications": {"toolsListChanged": true}}
        }))
        .await;
    let refused = client.next().await;
    assert_eq!(refused["id"], "one-more");
    assert!(
        refused["error"]["message"].as_str().is_some_and(|m| m.contains("the most it may hold")),
        "{refused}"
    );
}

#[tokio::test]
async fn what_was_sent_before_the_input_ended_is_answered() {
    let mut client = client().await;
    client.initialize().await;
    for id in 1..=20 {
        client.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"})).await;
    }
    client.input.shutdown().await.expect("end the input");
    let mut answered = Vec::new();
    while let Some(line) = client.output.next_line().await.expect("read") {
        let answer: Value = serde_json::from_str(&line).expect("JSON");
        answered.push(answer["id"].as_i64().expect("an id"));
    }
    answered.sort_unstable();
    assert_eq!(answered, (1..=20).collect::<Vec<_>>());
    assert!(client.served.await.expect("joined").is_ok());
}

#[tokio::test]
async fn shutdown_ends_the_front() {
    let client = client().await;
    client.shutdown.cancel();
    assert!(client.served.await.expect("joined").is_ok());
}

#[test]
fn a_raw_answer_with_line_breaks_stays_one_line() {
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let output = Output::for_test(sender);
    assert!(output.send_json(b"{\n  \"a\": \"x\\ny\"\r\n}".to_vec()));
    let line = receiver.try_recv().expect("sent");
    assert!(!line.contains(&b'\n') && !line.contains(&b'\r'));
    let value: Value = serde_json::from_slice(&line).expect("still JSON");
    assert_eq!(value["a"], "x\ny", "escaped line breaks inside strings are kept");
}
