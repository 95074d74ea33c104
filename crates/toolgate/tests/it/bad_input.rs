//! Bad input, one case per test: each gets its precise answer, and afterwards a normal call
//! through the same toolgate still succeeds. Clients are raw (bytes on stdin, HTTP bodies),
//! since a well-behaved SDK client cannot send most of this.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::recorder::{all_gone, children_of};
use crate::support::*;

/// How long one answer may take.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);
/// One more byte than toolgate accepts in one message.
const OVER_LIMIT: usize = toolgate_server::DEFAULT_MAX_MESSAGE_BYTES + 1;

/// `toolgate serve --stdio` driven line by line.
struct RawStdio {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    /// Answers read while looking for another one.
    unclaimed: Vec<Value>,
}

impl RawStdio {
    /// Starts toolgate over `config` and completes the handshake.
    async fn start(config: &ConfigDir) -> RawStdio {
        let mut child = Command::new(toolgate_bin())
            .args(["serve", "--stdio", "--config"])
            .arg(config.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn toolgate --stdio");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut raw = RawStdio { child, stdin, stdout, unclaimed: Vec::new() };
        raw.send(json!({
            "jsonrpc": "2.0", "id": "init", "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"}
            }
        }))
        .await;
        let init = raw.answer_to(&json!("init")).await;
        assert!(init["result"]["serverInfo"].is_object(), "{init}");
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        raw
    }

    async fn write(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).await.expect("write to toolgate");
        stdin.flush().await.expect("flush");
    }

    async fn send(&mut self, message: Value) {
        let mut line = serde_json::to_vec(&message).expect("serialize");
        line.push(b'\n');
        self.write(&line).await;
    }

    /// The next answer with this `id` (`null` for refusals of unreadable input), keeping
    /// others for later.
    async fn answer_to(&mut self, id: &Value) -> Value {
        if let Some(at) = self.unclaimed.iter().position(|m| &m["id"] == id) {
            return self.unclaimed.remove(at);
        }
        tokio::time::timeout(ANSWER_TIMEOUT, async {
            loop {
                let line = self.stdout.next_line().await.expect("read").expect("toolgate answers");
                let message: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("toolgate wrote a line that is not JSON ({e}): {line}")
                });
                if message.get("method").is_some() {
                    continue; // a notification
                }
                if &message["id"] == id {
                    return message;
                }
                self.unclaimed.push(message);
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no answer to id {id} within {ANSWER_TIMEOUT:?}"))
    }

    /// The error code of the answer to `id`.
    async fn error_code(&mut self, id: &Value) -> i64 {
        let answer = self.answer_to(id).await;
        assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
        answer["error"]["code"].as_i64().unwrap_or_else(|| panic!("an error answer: {answer}"))
    }

    /// A normal call, which must still succeed.
    async fn assert_healthy(&mut self, id: i64) {
        self.send(json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "fx__echo", "arguments": {"text": format!("still here {id}")}}
        }))
        .await;
        let answer = self.answer_to(&json!(id)).await;
        assert_eq!(answer["result"]["content"][0]["text"], format!("still here {id}"), "{answer}");
    }
}

fn fixture_config() -> ConfigDir {
    ConfigDir::new(&fixture_server("fx", "stdio", None))
}

#[tokio::test]
async fn malformed_json_is_a_parse_error_with_a_null_id() {
    let config = fixture_config();
    let mut raw = RawStdio::start(&config).await;
    raw.write(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \n").await;
    assert_eq!(raw.error_code(&Value::Null).await, -32700);
    raw.assert_healthy(2).await;
    // The same over HTTP: a JSON-RPC error body, status 400.
    let gateway = HttpGateway::start(&config.path()).await;
    let (status, answer) = post_raw(&gateway.url, b"{not json".to_vec()).await;
    assert_eq!((status, answer["error"]["code"].as_i64()), (400, Some(-32700)), "{answer}");
    assert_eq!(answer["id"], Value::Null);
    assert_http_healthy(&gateway.url).await;
}

#[tokio::test]
async fn json_that_is_not_json_rpc_is_an_invalid_request() {
    let config = fixture_config();
    let mut raw = RawStdio::start(&config).await;
    for (n, line) in [r#"{"hello": "world"}"#, "[1, 2]", "42", r#"{"jsonrpc": "1.0", "id": 7}"#]
        .into_iter()
        .enumerate()
    {
        raw.write(format!("{line}\n").as_bytes()).await;
        let id = if line.contains("\"id\": 7") { json!(7) } else { Value::Null };
        assert_eq!(raw.error_code(&id).await, -32600, "{line}");
        raw.assert_healthy(100 + n as i64).await;
    }
    let gateway = HttpGateway::start(&config.path()).await;
    let (status, answer) = post_raw(&gateway.url, br#"{"hello": "world"}"#.to_vec()).await;
    assert_eq!((status, answer["error"]["code"].as_i64()), (400, Some(-32600)), "{answer}");
    assert_http_healthy(&gateway.url).await;
}

#[tokio::test]
async fn unknown_methods_are_method_not_found_with_the_request_id() {
    let config = fixture_config();
    let mut raw = RawStdio::start(&config).await;
    raw.send(json!({"jsonrpc": "2.0", "id": "u1", "method": "tools/teleport", "params": {}})).await;
    let answer = raw.answer_to(&json!("u1")).await;
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    assert!(answer["error"]["message"].as_str().is_some_and(|m| m.contains("tools/teleport")));
    raw.assert_healthy(2).await;
    // An unknown notification is ignored, as JSON-RPC asks: no answer, nothing breaks.
    raw.send(json!({"jsonrpc": "2.0", "method": "notifications/teleported"})).await;
    raw.assert_healthy(3).await;
}

#[tokio::test]
async fn wrong_parameter_types_are_invalid_params_with_the_request_id() {
    let config = fixture_config();
    let mut raw = RawStdio::start(&config).await;
    let cases = [
        json!({"name": 5}),
        json!("a string"),
        json!({"name": "fx__echo", "arguments": "not an object"}),
    ];
    for (n, params) in cases.into_iter().enumerate() {
        let id = json!(format!("p{n}"));
        raw.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}))
            .await;
        let answer = raw.answer_to(&id).await;
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        assert!(answer["error"]["message"].as_str().is_some_and(|m| m.contains("tools/call")));
        raw.assert_healthy(10 + n as i64).await;
    }
    raw.send(json!({"jsonrpc": "2.0", "id": "r", "method": "resources/read", "params": {}})).await;
    assert_eq!(raw.error_code(&json!("r")).await, -32602);
    raw.assert_healthy(20).await;
}

#[tokio::test]
async fn a_message_over_the_limit_is_refused_and_skipped() {
    let config = fixture_config();
    let mut raw = RawStdio::start(&config).await;
    // A request whose argument alone is over the limit: refused without being parsed, and
    // the rest of its line is skipped, however it is split into writes.
    let mut huge = br#"{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"fx__echo","arguments":{"text":""#.to_vec();
    huge.resize(OVER_LIMIT + 1024, b'x');
    huge.extend_from_slice(b"\"}}}\n");
    for chunk in huge.chunks(1 << 20) {
        raw.write(chunk).await;
    }
    let answer = raw.answer_to(&Value::Null).await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert!(answer["error"]["message"].as_str().is_some_and(|m| m.contains("larger than")));
    raw.assert_healthy(2).await;
    // Just under the limit is fine.
    let text = "y".repeat(1024 * 1024);
    raw.send(json!({
        "jsonrpc": "2.0", "id": "1mib", "method": "tools/call",
        "params": {"name": "fx__echo", "arguments": {"text": text}}
    }))
    .await;
    let answer = raw.answer_to(&json!("1mib")).await;
    assert_eq!(answer["result"]["content"][0]["text"].as_str().map(str::len), Some(1024 * 1024));

    let gateway = HttpGateway::start(&config.path()).await;
    let (status, answer) = post_raw(&gateway.url, vec![b' '; OVER_LIMIT]).await;
    assert_eq!((status, answer["error"]["code"].as_i64()), (413, Some(-32600)), "{answer}");
    assert_http_healthy(&gateway.url).await;
}

#[tokio::test]
async fn a_client_that_disconnects_mid_call_leaves_toolgate_healthy() {
    let config = fixture_config();
    // Over HTTP: the client sends a slow call, reads the start of the answer, and hangs up.
    let gateway = HttpGateway::start(&config.path()).await;
    let http = reqwest::Client::new();
    let session = http_session(&http, &gateway.url).await;
    let call = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "fx__slow", "arguments": {"steps": 20, "step_ms": 100}}
    });
    let mut response = http
        .post(&gateway.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .body(call.to_string())
        .send()
        .await
        .expect("the call is accepted");
    assert_eq!(response.status(), 200);
    let _start = response.chunk().await.expect("the answer starts");
    drop(response);
    assert_http_healthy(&gateway.url).await;
    assert!(gateway.terminate().await.success());

    // Over stdio: the client closes stdin with a call in flight; toolgate ends, and so does
    // its upstream.
    let mut raw = RawStdio::start(&config).await;
    let children = children_of(raw.child.id().expect("running"));
    assert!(!children.is_empty(), "the upstream runs as a child");
    raw.send(json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "fx__slow", "arguments": {"steps": 600, "step_ms": 100}}
    }))
    .await;
    raw.stdin = None;
    let status = tokio::time::timeout(ANSWER_TIMEOUT, raw.child.wait())
        .await
        .expect("toolgate ends when its client leaves")
        .expect("wait");
    assert!(status.success(), "{status}");
    all_gone(&children).await;
}

#[tokio::test]
async fn an_upstream_that_writes_garbage_stays_usable() {
    // The fixture's every line is followed by two that are not JSON-RPC (one not even JSON),
    // and it starts with such noise before its handshake.
    let script = format!(
        "echo 'starting up...'; echo '{{\"level\":\"info\",\"msg\":\"json noise\"}}'; \
         '{}' | while IFS= read -r line; do \
           printf '%s\\n' \"$line\"; echo '}}{{ not json'; echo '{{\"msg\":\"more noise\"}}'; \
         done",
        fixture_bin().to_string_lossy()
    );
    let config = ConfigDir::new(&format!(
        "[servers.fx]\ncommand = \"sh\"\nargs = [\"-c\", {}]\n",
        toml_str(&script)
    ));
    let mut raw = RawStdio::start(&config).await;
    for id in 1..=3 {
        raw.assert_healthy(id).await;
    }
}

#[tokio::test]
async fn an_upstream_that_never_answers_initialize_does_not_hold_up_the_others() {
    // `cat` reads the handshake and never answers it.
    let config = ConfigDir::new(&format!(
        "{}\n[servers.mute]\ncommand = \"cat\"\nstartup_timeout = \"1s\"\n",
        fixture_server("fx", "stdio", None)
    ));
    let mut raw = RawStdio::start(&config).await;
    raw.send(json!({"jsonrpc": "2.0", "id": "list", "method": "tools/list"})).await;
    let tools = raw.answer_to(&json!("list")).await;
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"fx__echo") && names.iter().all(|n| !n.starts_with("mute__")));
    raw.assert_healthy(1).await;
    raw.send(json!({
        "jsonrpc": "2.0", "id": "m", "method": "tools/call", "params": {"name": "mute__anything"}
    }))
    .await;
    let answer = raw.answer_to(&json!("m")).await;
    assert_eq!(answer["error"]["code"], -32602, "unknown while it is not up: {answer}");
    raw.assert_healthy(2).await;
}

/// Starts a 2025-11-25 session over HTTP by hand; returns its id.
async fn http_session(http: &reqwest::Client, url: &str) -> String {
    let response = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(
            json!({
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"}
                }
            })
            .to_string(),
        )
        .send()
        .await
        .expect("initialize");
    let session = response.headers()["mcp-session-id"].to_str().expect("ascii").to_owned();
    let _ = response.bytes().await;
    http.post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .body(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string())
        .send()
        .await
        .expect("initialized");
    session
}

/// POSTs `body` as JSON; returns the status and the JSON answer.
async fn post_raw(url: &str, body: Vec<u8>) -> (u16, Value) {
    // No connection reuse: the server may close a connection after refusing a huge body.
    let http = reqwest::Client::builder().pool_max_idle_per_host(0).build().expect("client");
    let response = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body)
        .send()
        .await
        .expect("answered");
    let status = response.status().as_u16();
    let text = response.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or_else(|e| panic!("JSON ({e}): {text}")))
}
