//! The legacy HTTP+SSE transport, in process: the raw protocol with a hand-rolled client, and
//! the standard assertions through an rmcp client over a small SSE client transport.

use std::pin::Pin;

use futures::{Sink, Stream, StreamExt as _};
use reqwest::StatusCode;
use rmcp::model as mcp;
use sse_stream::{Sse, SseStream};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolgate_testkit::{FixtureEvent, FixtureOptions, serve_sse};

use crate::support::{self, within};

type Events = Pin<Box<dyn Stream<Item = Result<Sse, sse_stream::Error>> + Send>>;

/// Starts the server on 127.0.0.1:0; returns its base URL and the server task.
async fn start(
    opts: FixtureOptions,
    shutdown: CancellationToken,
) -> (String, tokio::task::JoinHandle<anyhow::Result<()>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    let server = tokio::spawn(serve_sse(listener, shutdown, opts));
    (format!("http://{addr}"), server)
}

/// `GET /sse`; returns the event stream and the absolute message endpoint.
async fn open(http: &reqwest::Client, base: &str) -> (Events, String) {
    let response = within("GET /sse", http.get(format!("{base}/sse")).send())
        .await
        .expect("GET /sse")
        .error_for_status()
        .expect("GET /sse must succeed");
    let content_type = response.headers().get("content-type").expect("a content type");
    assert_eq!(content_type, "text/event-stream");
    let mut events: Events = Box::pin(SseStream::from_bytes_stream(response.bytes_stream()));
    let first = next_event(&mut events).await;
    assert_eq!(first.event.as_deref(), Some("endpoint"));
    let path = first.data.expect("the endpoint event has data");
    assert!(path.starts_with("/message?sessionId="), "{path}");
    (events, format!("{base}{path}"))
}

/// The next event that is not a keep-alive comment.
async fn next_event(events: &mut Events) -> Sse {
    loop {
        let event = within("an SSE event", events.next()).await;
        let event = event.expect("the stream must stay open").expect("a well-formed event");
        if event.event.is_some() || event.data.is_some() {
            return event;
        }
    }
}

async fn post(http: &reqwest::Client, url: &str, body: impl Into<reqwest::Body>) -> StatusCode {
    let request = http.post(url).header("content-type", "application/json").body(body);
    within("POST /message", request.send()).await.expect("POST /message").status()
}

fn initialize(id: u32) -> String {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "initialize",
        "params": {
            "protocolVersion": "2024-11-05",
            "capabilities": {},
            "clientInfo": { "name": "raw-sse", "version": "0" },
        },
    })
    .to_string()
}

#[tokio::test]
async fn raw_protocol() {
    let (opts, _client, mut observed) = support::setup();
    let shutdown = CancellationToken::new();
    let (base, server) = start(opts, shutdown.clone()).await;
    let http = reqwest::Client::new();
    let (mut events, endpoint) = open(&http, &base).await;

    assert_eq!(post(&http, &endpoint, "{\"hello\": 1}").await, StatusCode::BAD_REQUEST);
    assert_eq!(post(&http, &endpoint, "not json").await, StatusCode::BAD_REQUEST);
    let unknown = format!("{base}/message?sessionId=nope");
    assert_eq!(post(&http, &unknown, initialize(1)).await, StatusCode::NOT_FOUND);

    assert_eq!(post(&http, &endpoint, initialize(7)).await, StatusCode::ACCEPTED);
    let event = next_event(&mut events).await;
    assert_eq!(event.event.as_deref(), Some("message"));
    let response: serde_json::Value =
        serde_json::from_str(&event.data.expect("data")).expect("JSON data");
    assert_eq!(response["id"], 7);
    assert_eq!(response["result"]["protocolVersion"], "2024-11-05");
    assert_eq!(response["result"]["serverInfo"]["name"], "toolgate-fixture");

    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(post(&http, &endpoint, initialized).await, StatusCode::ACCEPTED);
    let event = within("initialized", observed.events.recv()).await;
    assert_eq!(event, Some(FixtureEvent::Initialized { client: "raw-sse".to_owned() }));

    let call = r#"{"jsonrpc":"2.0","id":8,"method":"tools/call",
        "params":{"name":"echo","arguments":{"text":"over sse"}}}"#;
    assert_eq!(post(&http, &endpoint, call).await, StatusCode::ACCEPTED);
    let event = next_event(&mut events).await;
    let response: serde_json::Value =
        serde_json::from_str(&event.data.expect("data")).expect("JSON data");
    assert_eq!(response["id"], 8);
    assert_eq!(response["result"]["content"][0]["text"], "over sse");

    // Closing the GET ends the session.
    drop(events);
    assert_eq!(
        within("session end", observed.events.recv()).await,
        Some(FixtureEvent::SessionEnded)
    );
    assert_eq!(post(&http, &endpoint, call).await, StatusCode::NOT_FOUND);

    shutdown.cancel();
    within("server shutdown", server).await.expect("no panic").expect("clean shutdown");
}

#[tokio::test]
async fn shutdown_ends_open_streams() {
    let (opts, _client, mut observed) = support::setup();
    let shutdown = CancellationToken::new();
    let (base, server) = start(opts, shutdown.clone()).await;
    let http = reqwest::Client::new();
    let (mut events, _endpoint) = open(&http, &base).await;

    shutdown.cancel();
    within("server shutdown", server).await.expect("no panic").expect("clean shutdown");
    let end = within("end of stream", events.next()).await;
    assert!(end.as_ref().is_none_or(|event| event.is_err()), "the stream must end: {end:?}");
    assert_eq!(
        within("session end", observed.events.recv()).await,
        Some(FixtureEvent::SessionEnded)
    );
}

#[tokio::test]
async fn standard_assertions() {
    let (opts, client, mut observed) = support::setup();
    let shutdown = CancellationToken::new();
    let (base, server) = start(opts, shutdown.clone()).await;
    let transport = client_transport(&base).await;
    let client = support::connect(client, transport).await;
    support::standard_assertions(&client, &mut observed).await;

    client.cancel().await.expect("the client must shut down");
    shutdown.cancel();
    within("server shutdown", server).await.expect("no panic").expect("clean shutdown");
}

/// A minimal legacy-SSE client transport for rmcp: posts each message to the endpoint and
/// yields every `message` event.
async fn client_transport(
    base: &str,
) -> (
    impl Sink<mcp::ClientJsonRpcMessage, Error = std::io::Error> + Send + Unpin + 'static,
    impl Stream<Item = mcp::ServerJsonRpcMessage> + Send + Unpin + 'static,
) {
    let http = reqwest::Client::new();
    let (mut events, endpoint) = open(&http, base).await;
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        while let Some(Ok(event)) = events.next().await {
            let Some(data) = event.data.filter(|_| event.event.as_deref() == Some("message"))
            else {
                continue;
            };
            let message = serde_json::from_str(&data).expect("the server sends JSON-RPC");
            if tx.send(message).await.is_err() {
                break;
            }
        }
    });
    let sink = futures::sink::unfold((http, endpoint), |(http, endpoint), message| async move {
        let body = serde_json::to_vec(&message).map_err(std::io::Error::other)?;
        let response = http
            .post(&endpoint)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .map_err(std::io::Error::other)?;
        if response.status() != StatusCode::ACCEPTED {
            return Err(std::io::Error::other(format!("POST answered {}", response.status())));
        }
        Ok((http, endpoint))
    });
    (Box::pin(sink), tokio_stream::wrappers::ReceiverStream::new(rx))
}
