//! The HTTP front as a client sees it, in raw HTTP: one JSON body for a request whose stream
//! would hold only its answer, an event stream for anything else, resumable after a lost
//! connection; sessions ended, bounded in all and per client (loopback is one client), idle
//! ones making room, standing streams ending at their age; listen streams following only what
//! an upstream offers; CORS.

use serde_json::{Value, json};

use crate::support::*;

pub(crate) const ACCEPT: &str = "application/json, text/event-stream";

/// A 2025-11-25 session in raw HTTP (also the replica tests').
pub(crate) struct RawSession {
    pub(crate) http: reqwest::Client,
    pub(crate) url: String,
    pub(crate) session: String,
}

impl RawSession {
    /// Opens a 2025-11-25 session; the `initialize` answer must come as JSON.
    async fn open(url: &str) -> RawSession {
        RawSession::open_with(url, json!({})).await
    }

    /// Opens a 2025-11-25 session declaring `capabilities`; it never opens the standalone GET
    /// stream.
    pub(crate) async fn open_with(url: &str, capabilities: Value) -> RawSession {
        let http = reqwest::Client::new();
        let response = initialize(&http, url, capabilities).await;
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

    /// Opens the session's standalone GET stream (which keeps the session busy while read);
    /// the response, its body unread.
    pub(crate) async fn watch(&self) -> reqwest::Response {
        let response = self
            .http
            .get(&self.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &self.session)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
            .await
            .expect("answered");
        assert_eq!(response.status(), 200);
        response
    }

    /// POSTs `message` in the session: status, content type, body.
    pub(crate) async fn post(&self, message: Value) -> (u16, String, String) {
        let response = self.send(message).await;
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().expect("ascii").to_owned())
            .unwrap_or_default();
        (status, content_type, response.text().await.expect("body"))
    }

    /// POSTs `message` in the session; the response, its body unread.
    pub(crate) async fn send(&self, message: Value) -> reqwest::Response {
        self.http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", ACCEPT)
            .header("mcp-session-id", &self.session)
            .header("mcp-protocol-version", "2025-11-25")
            .body(message.to_string())
            .send()
            .await
            .expect("answered")
    }
}

/// POSTs a 2025-11-25 `initialize` declaring `capabilities`, outside any session; the
/// response, its body unread.
pub(crate) async fn initialize(
    http: &reqwest::Client,
    url: &str,
    capabilities: Value,
) -> reqwest::Response {
    let initialize = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": {"name": "raw", "version": "1"}
        }
    });
    http.post(url)
        .header("content-type", "application/json")
        .header("accept", ACCEPT)
        .body(initialize.to_string())
        .send()
        .await
        .expect("answered")
}

/// An SSE body read as it arrives, message by message.
pub(crate) struct EventReader {
    body: futures::stream::BoxStream<'static, reqwest::Result<Vec<u8>>>,
    buffer: String,
}

impl EventReader {
    pub(crate) fn new(response: reqwest::Response) -> Self {
        use futures::StreamExt as _;
        let body = response.bytes_stream().map(|chunk| chunk.map(|bytes| bytes.to_vec()));
        EventReader { body: body.boxed(), buffer: String::new() }
    }

    /// The next JSON message of the stream; `None` when it ended.
    pub(crate) async fn next(&mut self) -> Option<Value> {
        self.next_with_id().await.map(|(_, message)| message)
    }

    /// The next JSON message of the stream and its event id; `None` when it ended.
    pub(crate) async fn next_with_id(&mut self) -> Option<(Option<String>, Value)> {
        use futures::StreamExt as _;
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..end + 2).collect();
                if let Some(message) = event_messages(&event).into_iter().next() {
                    let id = event
                        .lines()
                        .find_map(|line| line.strip_prefix("id:"))
                        .map(|id| id.trim().to_owned());
                    return Some((id, message));
                }
            }
            let chunk = self.body.next().await?.expect("the stream reads");
            self.buffer.push_str(std::str::from_utf8(&chunk).expect("UTF-8"));
        }
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

/// An upstream's question during a call comes on that call's own response stream (SEP-2260),
/// not on the session's standalone GET stream, which this client never opens: it is answered
/// there, and the call's answer follows on the same stream.
#[tokio::test]
async fn an_upstream_question_comes_on_the_stream_of_the_call_that_caused_it() {
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let gateway = HttpGateway::start(&config.path()).await;
    let raw = RawSession::open_with(&gateway.url, json!({"elicitation": {"form": {}}})).await;

    let call = json!({
        "jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "fx__test_elicitation", "arguments": {"message": "who are you?"}}
    });
    let response = raw.send(call).await;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut stream = EventReader::new(response);
    let question = tokio::time::timeout(std::time::Duration::from_secs(20), stream.next())
        .await
        .expect("the question arrives on the call's stream (not only on a GET stream)")
        .expect("the stream is open");
    assert_eq!(question["method"], "elicitation/create", "{question}");
    assert_eq!(question["params"]["message"], "who are you?", "{question}");

    let answer = json!({
        "jsonrpc": "2.0", "id": question["id"],
        "result": {"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}
    });
    let (status, _, body) = raw.post(answer).await;
    assert_eq!(status, 202, "{body}");
    let result = stream.next().await.expect("the call's answer on the same stream");
    assert_eq!(result["id"], 9, "{result}");
    let text = result["result"]["content"][0]["text"].as_str().expect("text");
    assert!(text.contains("ada"), "the upstream got the answer: {result}");
}

/// `DELETE` ends a session with `204 No Content` (the Python SDK takes only 200 or 204 as
/// success and warns on anything else); the session is gone after it, and deleting an unknown
/// session is `404`.
#[tokio::test]
async fn deleting_a_session_ends_it_and_says_so_plainly() {
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let gateway = HttpGateway::start(&config.path()).await;
    let raw = RawSession::open(&gateway.url).await;
    let delete = |session: &str| {
        raw.http
            .delete(&raw.url)
            .header("mcp-session-id", session.to_owned())
            .header("mcp-protocol-version", "2025-11-25")
            .send()
    };
    let deleted = delete(&raw.session).await.expect("answered");
    assert_eq!(deleted.status().as_u16(), 204);
    assert_eq!(deleted.text().await.expect("body"), "", "no content");

    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let after = raw.send(ping).await;
    assert_eq!(after.status().as_u16(), 404, "the session is gone");
    let again = delete(&raw.session).await.expect("answered");
    assert_eq!(again.status().as_u16(), 404, "an unknown session");
    assert!(gateway.terminate().await.success());
}

/// A page on a loopback origin can reach the gateway: its preflight is answered with what it
/// may send, and the answers let it read `Mcp-Session-Id`. Another origin gets no CORS
/// headers (and is refused by the origin check).
#[tokio::test]
async fn a_browser_page_on_a_loopback_origin_passes_cors_and_another_origin_does_not() {
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let gateway = HttpGateway::start(&config.path()).await;
    let http = reqwest::Client::new();
    let page = "http://127.0.0.1:5173";
    let preflight = http
        .request(reqwest::Method::OPTIONS, &gateway.url)
        .header("origin", page)
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "content-type, mcp-session-id, mcp-protocol-version",
        )
        .send()
        .await
        .expect("preflight");
    assert!(preflight.status().is_success(), "{}", preflight.status());
    let header = |response: &reqwest::Response, name: &str| {
        response.headers().get(name).map(|v| v.to_str().expect("ascii").to_ascii_lowercase())
    };
    assert_eq!(header(&preflight, "access-control-allow-origin").as_deref(), Some(page));
    let methods = header(&preflight, "access-control-allow-methods").expect("methods");
    assert!(methods.contains("post") && methods.contains("delete"), "{methods}");
    let allowed = header(&preflight, "access-control-allow-headers").expect("headers");
    for name in ["content-type", "mcp-session-id", "mcp-protocol-version"] {
        assert!(allowed.contains(name), "{name} in {allowed}");
    }

    let initialize = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "page", "version": "1"}}
    });
    let answer = http
        .post(&gateway.url)
        .header("origin", page)
        .header("content-type", "application/json")
        .header("accept", ACCEPT)
        .body(initialize.to_string())
        .send()
        .await
        .expect("initialize");
    assert_eq!(answer.status().as_u16(), 200);
    assert_eq!(header(&answer, "access-control-allow-origin").as_deref(), Some(page));
    let exposed = header(&answer, "access-control-expose-headers").expect("exposed");
    assert!(exposed.contains("mcp-session-id") && exposed.contains("mcp-protocol-version"));
    assert!(answer.headers().contains_key("mcp-session-id"));

    let elsewhere = http
        .request(reqwest::Method::OPTIONS, &gateway.url)
        .header("origin", "https://evil.example")
        .header("access-control-request-method", "POST")
        .send()
        .await
        .expect("preflight");
    assert_eq!(header(&elsewhere, "access-control-allow-origin"), None);
    let refused = http
        .post(&gateway.url)
        .header("origin", "https://evil.example")
        .header("content-type", "application/json")
        .header("accept", ACCEPT)
        .body(initialize.to_string())
        .send()
        .await
        .expect("answered");
    assert_eq!(refused.status().as_u16(), 403, "the origin check still refuses it");
    assert!(gateway.terminate().await.success());
}

/// `[gateway] max_sessions` bounds the open sessions: one more is refused with `503` while
/// none of them is idle (each has its GET stream open), and ending one makes room again.
#[tokio::test]
async fn the_configured_session_limit_holds_and_a_deleted_session_makes_room() {
    let config = ConfigDir::new(&format!(
        "[gateway]\nmax_sessions = 2\nsession_idle = \"10m\"\n\n{}",
        fixture_server("fx", "stdio", None)
    ));
    let gateway = HttpGateway::start(&config.path()).await;
    let first = RawSession::open(&gateway.url).await;
    let _first_stream = first.watch().await;
    let second = RawSession::open(&gateway.url).await;
    let _second_stream = second.watch().await;
    let third = || initialize(&first.http, &gateway.url, json!({}));
    let refused = third().await;
    assert_eq!(refused.status().as_u16(), 503);
    let body: Value = refused.json().await.expect("a JSON-RPC error");
    assert!(body["error"]["message"].as_str().unwrap_or("").contains("2 open sessions"), "{body}");

    let deleted = first
        .http
        .delete(&gateway.url)
        .header("mcp-session-id", &first.session)
        .send()
        .await
        .expect("answered");
    assert_eq!(deleted.status().as_u16(), 204);
    let admitted = third().await;
    assert_eq!(admitted.status().as_u16(), 200, "room again after the delete");
    assert!(gateway.terminate().await.success());
}

/// `[gateway] max_sessions_per_client` bounds the sessions one client holds: one more is
/// refused with `429`, saying why, while the gateway as a whole has room and none of that
/// client's sessions is idle.
#[tokio::test]
async fn a_client_holds_at_most_its_share_of_sessions() {
    let config = ConfigDir::new(&format!(
        "[gateway]\nmax_sessions = 100\nmax_sessions_per_client = 2\n\n{}",
        fixture_server("fx", "stdio", None)
    ));
    let gateway = HttpGateway::start(&config.path()).await;
    let first = RawSession::open(&gateway.url).await;
    let _first_stream = first.watch().await;
    let second = RawSession::open(&gateway.url).await;
    let _second_stream = second.watch().await;
    let refused = initialize(&first.http, &gateway.url, json!({})).await;
    assert_eq!(refused.status().as_u16(), 429);
    let body: Value = refused.json().await.expect("a JSON-RPC error");
    let message = body["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("client") && message.contains("2 open sessions"), "{body}");
    assert!(gateway.terminate().await.success());
}

/// Every loopback address is one client (127.0.0.2 is refused once 127.0.0.1 holds its
/// share); a GET stream ends at `[gateway] stream_max_age`, so a session that holds one does
/// not stay busy for ever; and then a new session takes the place of the least recently used
/// idle one instead of being refused.
#[tokio::test]
async fn loopback_is_one_client_streams_age_and_idle_sessions_make_room() {
    let config = ConfigDir::new(&format!(
        "[gateway]\nmax_sessions_per_client = 2\nstream_max_age = \"2s\"\n\
         session_idle = \"10m\"\n\n{}",
        fixture_server("fx", "stdio", None)
    ));
    let gateway = HttpGateway::start(&config.path()).await;
    let first = RawSession::open(&gateway.url).await;
    let second = RawSession::open(&gateway.url).await;
    let started = tokio::time::Instant::now();
    let streams = [first.watch().await, second.watch().await];
    let elsewhere = reqwest::Client::builder()
        .local_address("127.0.0.2".parse::<std::net::IpAddr>().expect("an address"))
        .build()
        .expect("a client");
    let refused = initialize(&elsewhere, &gateway.url, json!({})).await;
    assert_eq!(refused.status().as_u16(), 429, "127.0.0.2 is the same client as 127.0.0.1");

    for stream in streams {
        tokio::time::timeout(std::time::Duration::from_secs(20), stream.bytes())
            .await
            .expect("a GET stream ends at its age")
            .expect("read");
    }
    assert!(started.elapsed() >= std::time::Duration::from_millis(1900));
    let (status, _, _) = second.post(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).await;
    assert_eq!(status, 200);
    let admitted = initialize(&elsewhere, &gateway.url, json!({})).await;
    assert_eq!(admitted.status().as_u16(), 200, "an idle session made room");
    let (status, _, _) = first.post(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"})).await;
    assert_eq!(status, 404, "the least recently used one");
    let (status, _, _) = second.post(json!({"jsonrpc": "2.0", "id": 3, "method": "ping"})).await;
    assert_eq!(status, 200, "the other one stays");
    assert!(gateway.terminate().await.success());
}

/// A 2026-07-28 `subscriptions/listen` stream follows only the resources an upstream offers
/// (listed, or matching a template), acknowledges just those, and ends with its result at
/// `[gateway] stream_max_age`.
#[tokio::test]
async fn a_listen_stream_follows_what_upstreams_offer_and_ends_at_its_age() {
    let config = ConfigDir::new(&format!(
        "[gateway]\nstream_max_age = \"2s\"\n\n{}",
        fixture_server("fx", "stdio", None)
    ));
    let gateway = HttpGateway::start(&config.path()).await;
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let uris = ["test://watched-resource", "test://template/5/data", "test://no-such-resource"];
    let request = json!({
        "jsonrpc": "2.0", "id": 4, "method": "subscriptions/listen",
        "params": {"notifications": {"resourceSubscriptions": uris}, "_meta": meta},
    });
    let response = reqwest::Client::new()
        .post(&gateway.url)
        .header("content-type", "application/json")
        .header("accept", ACCEPT)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(request.to_string())
        .send()
        .await
        .expect("answered");
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut events = EventReader::new(response);
    let acknowledged = events.next().await.expect("the acknowledgment");
    assert_eq!(acknowledged["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        acknowledged["params"]["notifications"]["resourceSubscriptions"],
        json!(["test://template/5/data", "test://watched-resource"]),
        "{acknowledged}"
    );
    let ended = tokio::time::timeout(std::time::Duration::from_secs(20), events.next())
        .await
        .expect("it ends at its age")
        .expect("with its result");
    assert_eq!(ended["id"], 4, "{ended}");
    assert!(ended.get("result").is_some(), "{ended}");
    assert!(events.next().await.is_none(), "and nothing after it");
    assert!(gateway.terminate().await.success());
}

/// A client that loses a call's event stream (its connection drops after the first progress)
/// gets the rest with `GET` and `Last-Event-ID`: the progress it missed, then the answer. The
/// call went on meanwhile; a disconnection is not a cancellation.
#[tokio::test]
async fn a_stream_lost_mid_call_is_resumed_from_the_last_event_seen() {
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let gateway = HttpGateway::start(&config.path()).await;
    let session = RawSession::open(&gateway.url).await;
    let call = json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "fx__slow", "arguments": {"steps": 3, "step_ms": 150},
                   "_meta": {"progressToken": "p"}}
    });
    let response = session.send(call).await;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut events = EventReader::new(response);
    let (id, first) = events.next_with_id().await.expect("a first event");
    assert_eq!(first["method"], "notifications/progress", "{first}");
    assert_eq!(first["params"]["progress"].as_f64(), Some(1.0));
    let id = id.expect("events of a session's stream have ids");
    drop(events);

    let resumed = session
        .http
        .get(&gateway.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session.session)
        .header("mcp-protocol-version", "2025-11-25")
        .header("last-event-id", &id)
        .send()
        .await
        .expect("resumed");
    assert_eq!(resumed.status().as_u16(), 200);
    let mut events = EventReader::new(resumed);
    let mut progress = Vec::new();
    let answer = loop {
        let message = events.next().await.expect("the stream goes on to the answer");
        if message["method"] == "notifications/progress" {
            progress.push(message["params"]["progress"].as_f64().expect("a number"));
        } else {
            break message;
        }
    };
    assert_eq!(progress, [2.0, 3.0], "the events after the last one seen, once each");
    assert_eq!(answer["id"], 7, "{answer}");
    assert!(answer["result"]["content"][0]["text"].is_string(), "{answer}");
    assert!(events.next().await.is_none(), "the stream ends after the answer");

    // An id toolgate does not keep: an empty stream that ends at once.
    let unknown = session
        .http
        .get(&gateway.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session.session)
        .header("last-event-id", "999/1")
        .send()
        .await
        .expect("answered");
    assert_eq!(unknown.status().as_u16(), 200);
    assert_eq!(unknown.text().await.expect("body"), "");
    assert!(gateway.terminate().await.success());
}
