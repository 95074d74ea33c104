//! The HTTP front's choice of body: one JSON body for a request whose stream would hold only its
//! answer, the SSE stream as rmcp writes it for anything else. Raw HTTP, so the bodies are seen
//! as a client receives them.

use serde_json::{Value, json};

use crate::support::*;

const ACCEPT: &str = "application/json, text/event-stream";

struct RawSession {
    http: reqwest::Client,
    url: String,
    session: String,
}

impl RawSession {
    /// Opens a 2025-11-25 session; the `initialize` answer must come as JSON.
    async fn open(url: &str) -> RawSession {
        let http = reqwest::Client::new();
        let initialize = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"}
            }
        });
        let response = http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", ACCEPT)
            .body(initialize.to_string())
            .send()
            .await
            .expect("initialize");
        assert_eq!(response.headers()["content-type"], "application/json");
        let session = response.headers()["mcp-session-id"].to_str().expect("ascii").to_owned();
        let answer: Value = response.json().await.expect("a JSON body");
        assert_eq!(answer["result"]["protocolVersion"], "2025-11-25", "{answer}");
        let raw = RawSession { http, url: url.to_owned(), session };
        let (status, _, _) =
            raw.post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        assert_eq!(status, 202);
        raw
    }

    /// POSTs `message` in the session: status, content type, body.
    async fn post(&self, message: Value) -> (u16, String, String) {
        let response = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", ACCEPT)
            .header("mcp-session-id", &self.session)
            .header("mcp-protocol-version", "2025-11-25")
            .body(message.to_string())
            .send()
            .await
            .expect("answered");
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().expect("ascii").to_owned())
            .unwrap_or_default();
        (status, content_type, response.text().await.expect("body"))
    }
}

/// The JSON messages of an SSE body, in order (events without data left out).
fn event_messages(body: &str) -> Vec<Value> {
    body.split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            let data = data.join("\n");
            (!data.is_empty()).then(|| serde_json::from_str(&data).expect("JSON data"))
        })
        .collect()
}

#[tokio::test]
async fn a_quick_answer_is_one_json_body_and_a_call_with_progress_keeps_its_stream() {
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let gateway = HttpGateway::start(&config.path()).await;
    let raw = RawSession::open(&gateway.url).await;

    let call = json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "fx__echo", "arguments": {"text": "straight"}}
    });
    let (status, content_type, body) = raw.post(call).await;
    assert_eq!((status, content_type.as_str()), (200, "application/json"), "{body}");
    let answer: Value = serde_json::from_str(&body).expect("one JSON message");
    assert_eq!(answer["id"], 7);
    assert_eq!(answer["result"]["content"][0]["text"], "straight", "{answer}");

    // Errors are answers too.
    let unknown = json!({
        "jsonrpc": "2.0", "id": "u", "method": "tools/call",
        "params": {"name": "fx__nope", "arguments": {}}
    });
    let (status, content_type, body) = raw.post(unknown).await;
    assert_eq!((status, content_type.as_str()), (200, "application/json"), "{body}");
    let answer: Value = serde_json::from_str(&body).expect("one JSON message");
    assert_eq!(answer["id"], "u");
    assert!(answer["error"]["code"].is_i64(), "{answer}");

    // Progress comes before the answer: the stream is passed on whole, in order.
    let with_progress = json!({
        "jsonrpc": "2.0", "id": 8, "method": "tools/call",
        "params": {
            "name": "fx__test_tool_with_progress", "arguments": {},
            "_meta": {"progressToken": "p8"}
        }
    });
    let (status, content_type, body) = raw.post(with_progress).await;
    assert_eq!((status, content_type.as_str()), (200, "text/event-stream"), "{body}");
    let messages = event_messages(&body);
    let progress: Vec<f64> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| {
            assert_eq!(m["params"]["progressToken"], "p8", "{m}");
            m["params"]["progress"].as_f64().expect("a number")
        })
        .collect();
    assert_eq!(progress, [0.0, 50.0, 100.0], "{body}");
    let last = messages.last().expect("messages");
    assert_eq!(last["id"], 8, "the answer comes last: {body}");
    assert_eq!(last["result"]["content"][0]["text"], "Progress test completed", "{body}");
}
