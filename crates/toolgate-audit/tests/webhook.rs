//! The webhook sink against a real HTTP server on 127.0.0.1 that records what it receives and
//! answers as each test scripts it.

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;
use toolgate_audit::{
    Event, EventBus, EventPattern, WebhookError, WebhookOptions, kind, spawn_webhook_sink,
};

/// Longest a test waits for something that should happen at once.
const PATIENCE: Duration = Duration::from_secs(10);

/// How the test server answers one request.
#[derive(Clone)]
enum Reply {
    Status(u16),
    /// Never answers (until the client gives up).
    Hang,
    /// Answers 200 once the test notifies.
    After(Arc<Notify>),
}

/// What the test server received in one request.
#[derive(Debug)]
struct Received {
    path: String,
    headers: HeaderMap,
    body: Value,
}

impl Received {
    fn n(&self) -> u64 {
        self.body["n"].as_u64().expect("test events carry `n`")
    }
}

struct Script {
    /// Answers to the first requests, in order.
    first: Mutex<VecDeque<Reply>>,
    /// The answer to every request after those.
    then: Reply,
    received: mpsc::UnboundedSender<Received>,
}

/// A webhook endpoint on 127.0.0.1 that answers the first requests with `first`, the rest with
/// `then`.
struct TestServer {
    url: url::Url,
    received: mpsc::UnboundedReceiver<Received>,
}

impl TestServer {
    async fn start(first: Vec<Reply>, then: Reply) -> TestServer {
        let (sender, received) = mpsc::unbounded_channel();
        let script = Arc::new(Script { first: Mutex::new(first.into()), then, received: sender });
        let app = axum::Router::new().fallback(answer).with_state(script);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("bound address");
        tokio::spawn(async move { axum::serve(listener, app).await.expect("test server") });
        // The path and query stand for the secrets real webhook URLs carry.
        let url = format!("http://{address}/hooks/s3cret-path?token=t0ken").parse().unwrap();
        TestServer { url, received }
    }

    /// The next request the server received.
    async fn next(&mut self) -> Received {
        tokio::time::timeout(PATIENCE, self.received.recv())
            .await
            .expect("the webhook must receive a request in time")
            .expect("the test server is running")
    }

    /// The `n` of the next `count` requests.
    async fn next_ns(&mut self, count: usize) -> Vec<u64> {
        let mut ns = Vec::new();
        for _ in 0..count {
            ns.push(self.next().await.n());
        }
        ns
    }

    fn options(&self) -> WebhookOptions {
        let mut options = WebhookOptions::new(self.url.clone());
        options.backoff_base = Duration::from_millis(1);
        options.backoff_max = Duration::from_millis(5);
        options
    }
}

async fn answer(
    State(script): State<Arc<Script>>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let reply = script.first.lock().unwrap().pop_front().unwrap_or_else(|| script.then.clone());
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let _ = script.received.send(Received { path: uri.to_string(), headers, body });
    match reply {
        Reply::Status(code) => StatusCode::from_u16(code).expect("valid test status"),
        Reply::Hang => std::future::pending().await,
        Reply::After(go) => {
            go.notified().await;
            StatusCode::OK
        }
    }
}

fn event(n: u64) -> Event {
    Event::new(kind::TOOLS_CALL_FINISHED).with("n", n).with("tool", "files__read")
}

/// Drops the bus and waits for the sink to finish what is queued.
async fn finish(bus: EventBus, sink: JoinHandle<()>) {
    drop(bus);
    tokio::time::timeout(PATIENCE, sink)
        .await
        .expect("the sink must finish once the bus is gone")
        .expect("the sink must not panic");
}

/// Collects what a `tracing` subscriber on this thread writes (the tests run on one thread,
/// the sink's task included).
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    fn install(&self) -> tracing::subscriber::DefaultGuard {
        let captured = self.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_max_level(tracing::Level::DEBUG)
            .with_writer(move || captured.clone())
            .finish();
        tracing::subscriber::set_default(subscriber)
    }

    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Logs must never show the URL's path or query, nor a header value.
fn assert_no_secrets(text: &str) {
    for secret in ["s3cret-path", "t0ken", "hunter2"] {
        assert!(!text.contains(secret), "`{secret}` leaked into the logs:\n{text}");
    }
}

#[tokio::test]
async fn events_are_posted_in_order_as_json() {
    let mut server = TestServer::start(Vec::new(), Reply::Status(200)).await;
    let options = server.options().header("Authorization", "Bearer hunter2");
    let stats = options.stats();
    let bus = EventBus::new();
    let sink = spawn_webhook_sink(&bus, "tools/call/*".parse().unwrap(), options).unwrap();

    let time = std::time::UNIX_EPOCH + Duration::from_millis(1_714_566_896_789);
    bus.publish(event(1).at(time).with("server", "files"));
    bus.publish(Event::new(kind::UPSTREAM_CONNECTED).with("n", 99));
    bus.publish(event(2));
    bus.publish(event(3));

    let first = server.next().await;
    assert_eq!(first.path, "/hooks/s3cret-path?token=t0ken");
    assert_eq!(first.headers["content-type"], "application/json");
    assert_eq!(first.headers["authorization"], "Bearer hunter2");
    assert_eq!(
        first.body,
        json!({
            "time": "2024-05-01T12:34:56.789Z",
            "kind": "tools/call/finished",
            "n": 1,
            "tool": "files__read",
            "server": "files",
        })
    );
    assert_eq!(server.next_ns(2).await, [2, 3], "only matching events, in order");
    finish(bus, sink).await;
    assert_eq!((stats.delivered(), stats.failed(), stats.dropped()), (3, 0, 0));
}

#[tokio::test]
async fn failed_deliveries_are_retried_until_one_succeeds() {
    let first = [503, 429, 500].map(Reply::Status).to_vec();
    let mut server = TestServer::start(first, Reply::Status(204)).await;
    let options = server.options();
    let stats = options.stats();
    let bus = EventBus::new();
    let sink = spawn_webhook_sink(&bus, EventPattern::all(), options).unwrap();

    bus.publish(event(1));
    bus.publish(event(2));
    assert_eq!(server.next_ns(5).await, [1, 1, 1, 1, 2], "event 2 waits for event 1");
    finish(bus, sink).await;
    assert_eq!((stats.delivered(), stats.failed()), (2, 0));
}

#[tokio::test]
async fn a_request_that_times_out_is_retried() {
    let mut server = TestServer::start(vec![Reply::Hang], Reply::Status(200)).await;
    let mut options = server.options();
    options.timeout = Duration::from_millis(200);
    let stats = options.stats();
    let bus = EventBus::new();
    let sink = spawn_webhook_sink(&bus, EventPattern::all(), options).unwrap();

    bus.publish(event(1));
    assert_eq!(server.next_ns(2).await, [1, 1]);
    finish(bus, sink).await;
    assert_eq!((stats.delivered(), stats.failed()), (1, 0));
}

#[tokio::test]
async fn a_client_error_is_not_retried() {
    let captured = Captured::default();
    let _guard = captured.install();
    let mut server = TestServer::start(vec![Reply::Status(400)], Reply::Status(200)).await;
    let options = server.options().header("Authorization", "Bearer hunter2");
    let stats = options.stats();
    let bus = EventBus::new();
    let sink = spawn_webhook_sink(&bus, EventPattern::all(), options).unwrap();

    bus.publish(event(1));
    bus.publish(event(2));
    assert_eq!(server.next_ns(2).await, [1, 2], "the refused event is not sent again");
    finish(bus, sink).await;
    assert_eq!((stats.delivered(), stats.failed()), (1, 1));

    let text = captured.text();
    assert!(text.contains("WARN"), "{text}");
    assert!(text.contains("webhook refused the event"), "{text}");
    assert!(text.contains(&format!("host={}", endpoint(&server.url))), "{text}");
    assert!(text.contains("400 Bad Request"), "{text}");
    assert_no_secrets(&text);
}

#[tokio::test]
async fn a_webhook_that_never_succeeds_loses_each_event_and_moves_on() {
    let captured = Captured::default();
    let _guard = captured.install();
    let mut server = TestServer::start(Vec::new(), Reply::Status(503)).await;
    let mut options = server.options().header("X-Api-Key", "hunter2");
    options.retries = 2;
    let stats = options.stats();
    let bus = EventBus::new();
    let sink = spawn_webhook_sink(&bus, EventPattern::all(), options).unwrap();

    bus.publish(event(1));
    bus.publish(event(2));
    assert_eq!(server.next_ns(6).await, [1, 1, 1, 2, 2, 2], "one try and two retries each");
    finish(bus, sink).await;
    assert_eq!((stats.delivered(), stats.failed()), (0, 2));

    let text = captured.text();
    let warnings: Vec<&str> = text.lines().filter(|line| line.contains("WARN")).collect();
    assert_eq!(warnings.len(), 2, "{text}");
    assert!(warnings[1].contains("failed after every retry; dropping the event"), "{text}");
    assert!(warnings[1].contains("attempts=3"), "{text}");
    assert!(warnings[1].contains("503 Service Unavailable"), "{text}");
    assert!(warnings[1].contains(&format!("host={}", endpoint(&server.url))), "{text}");
    assert_no_secrets(&text);
}

#[tokio::test]
async fn an_unreachable_webhook_is_retried_then_given_up() {
    let captured = Captured::default();
    let _guard = captured.install();
    // Bound but not listening: connecting is refused, and the port stays this test's (one
    // freed again could be taken by another test meanwhile).
    let closed = tokio::net::TcpSocket::new_v4().unwrap();
    closed.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let address = closed.local_addr().unwrap();
    let url = format!("http://{address}/hooks/s3cret-path?token=t0ken").parse().unwrap();
    let mut options = WebhookOptions::new(url);
    options.retries = 3;
    options.backoff_base = Duration::from_millis(1);
    options.backoff_max = Duration::from_millis(5);
    let stats = options.stats();
    let bus = EventBus::new();
    let sink = spawn_webhook_sink(&bus, EventPattern::all(), options).unwrap();

    bus.publish(event(1));
    finish(bus, sink).await;
    assert_eq!((stats.delivered(), stats.failed()), (0, 1));

    let text = captured.text();
    assert_eq!(text.matches("retrying").count(), 3, "{text}");
    assert!(text.contains("attempts=4"), "{text}");
    assert!(text.contains(&format!("host={address}")), "{text}");
    assert_no_secrets(&text);
}

#[tokio::test]
async fn a_flood_into_a_small_queue_never_blocks_publishing() {
    let go = Arc::new(Notify::new());
    let mut server = TestServer::start(vec![Reply::After(go.clone())], Reply::Status(200)).await;
    let mut options = server.options();
    options.queue = 4;
    let stats = options.stats();
    let bus = EventBus::new();
    let sink = spawn_webhook_sink(&bus, EventPattern::all(), options).unwrap();

    bus.publish(event(0));
    // The sink is now stuck on event 0, which the server holds.
    assert_eq!(server.next().await.n(), 0);
    for n in 1..=1000 {
        bus.publish(event(n));
    }
    assert_eq!(bus.dropped(), 996, "4 fit in the queue, the rest are dropped");
    assert_eq!(stats.dropped(), 996);

    go.notify_one();
    assert_eq!(server.next_ns(4).await, [1, 2, 3, 4]);
    finish(bus, sink).await;
    assert_eq!((stats.delivered(), stats.failed(), stats.dropped()), (5, 0, 996));
}

#[tokio::test]
async fn a_bad_url_or_header_is_refused_at_start() {
    let bus = EventBus::new();
    let start = |options| spawn_webhook_sink(&bus, EventPattern::all(), options).map(|_| ());
    let url: url::Url = "https://hooks.example.com/s3cret-path".parse().unwrap();

    let ftp = WebhookOptions::new("ftp://hooks.example.com/x".parse().unwrap());
    assert!(matches!(start(ftp), Err(WebhookError::Scheme { .. })));

    let bad_name = WebhookOptions::new(url.clone()).header("Bad Header", "x");
    let error = start(bad_name).unwrap_err();
    assert!(matches!(error, WebhookError::HeaderName { .. }), "{error:?}");

    let bad_value = WebhookOptions::new(url).header("Authorization", "Bearer hunter2\n");
    let error = start(bad_value).unwrap_err();
    assert!(matches!(error, WebhookError::HeaderValue { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "webhook hooks.example.com: the value of header `Authorization` is not a valid header value"
    );
    assert_no_secrets(&format!("{error:?}"));
    assert_eq!(bus.subscriber_count(), 0, "nothing subscribes when the sink cannot start");
}

fn endpoint(url: &url::Url) -> String {
    format!("{}:{}", url.host_str().unwrap(), url.port().unwrap())
}
