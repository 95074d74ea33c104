//! Connections to HTTP upstreams are kept alive and reused unless `pool = false`, on both HTTP
//! transports: the fixture is served in this process behind a relay that counts the TCP
//! connections the upstream client opens.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use toolgate_config::{FixedEnvironment, Format, ServerConfig};
use toolgate_core::mcp;
use toolgate_testkit::FixtureOptions;
use toolgate_upstream::{CallOptions, Upstream};

/// Calls made in each test, one after the other.
const CALLS: usize = 20;

/// A fixture server and, in front of it, a relay counting the connections made to it (see
/// [`relay_to`]); both stop when this is dropped.
struct CountedFixture {
    /// The relay's URL of the fixture's endpoint.
    url: String,
    accepted: Arc<AtomicUsize>,
    stop: CancellationToken,
}

impl CountedFixture {
    /// The fixture on streamable HTTP (`sse = false`) or legacy SSE.
    async fn start(sse: bool) -> CountedFixture {
        let stop = CancellationToken::new();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the fixture");
        let fixture = listener.local_addr().expect("the fixture's address");
        let shutdown = stop.clone();
        tokio::spawn(async move {
            let served = if sse {
                toolgate_testkit::serve_sse(listener, shutdown, FixtureOptions::default()).await
            } else {
                toolgate_testkit::serve_http(listener, shutdown, FixtureOptions::default()).await
            };
            served.expect("the fixture serves");
        });
        let relay = TcpListener::bind("127.0.0.1:0").await.expect("bind the relay");
        let address = relay.local_addr().expect("the relay's address");
        let accepted = Arc::new(AtomicUsize::new(0));
        tokio::spawn(relay_to(relay, fixture, accepted.clone(), stop.clone()));
        let path = if sse { "sse" } else { "mcp" };
        CountedFixture { url: format!("http://{address}/{path}"), accepted, stop }
    }

    /// Connections opened so far for messages (event streams not counted).
    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for CountedFixture {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Accepts connections on `relay` and joins each to a connection of its own to `target`,
/// until `stop`; counts those whose first request is a message, not an event stream (the
/// legacy SSE stream's `GET`, or a `subscriptions/listen` POST, which the client opens in the
/// background and keeps open).
async fn relay_to(
    relay: TcpListener,
    target: SocketAddr,
    accepted: Arc<AtomicUsize>,
    stop: CancellationToken,
) {
    loop {
        let (client, _) = tokio::select! {
            () = stop.cancelled() => return,
            connection = relay.accept() => connection.expect("accept"),
        };
        let (accepted, stop) = (accepted.clone(), stop.clone());
        tokio::spawn(async move {
            tokio::select! {
                () = stop.cancelled() => {}
                () = relay_one(client, target, &accepted) => {}
            }
        });
    }
}

/// Relays one connection: reads its first request's head, counts it unless it opens an event
/// stream, then copies both ways until either side closes.
async fn relay_one(mut client: TcpStream, target: SocketAddr, accepted: &AtomicUsize) {
    let mut head = Vec::new();
    let mut chunk = [0; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match client.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&chunk[..n]),
        }
    }
    let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
    let stream =
        text.starts_with("get ") || text.contains("\r\nmcp-method: subscriptions/listen\r\n");
    if !stream {
        accepted.fetch_add(1, Ordering::SeqCst);
    }
    let mut server = TcpStream::connect(target).await.expect("connect to the fixture");
    for side in [&client, &server] {
        side.set_nodelay(true).expect("TCP_NODELAY");
    }
    if server.write_all(&head).await.is_ok() {
        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
    }
}

/// The upstream `[servers.fx]` with `url` and `extra` (`transport`, `pool`), through the
/// config loader as a user would write it.
fn config(url: &str, extra: &str) -> ServerConfig {
    let text = format!("[servers.fx]\nurl = \"{url}\"\n{extra}\n");
    let config =
        toolgate_config::parse_str(&text, Format::Toml, Path::new("."), &FixedEnvironment::new())
            .expect("a valid config");
    config.servers.into_iter().next().expect("one server")
}

/// Connects, makes [`CALLS`] calls one after the other and returns how many connections the
/// calls opened (those of the handshake and the listing before them not counted).
async fn connections_per_calls(fixture: &CountedFixture, config: &ServerConfig) -> usize {
    let upstream = Upstream::connect(config).await.expect("the upstream connects");
    let before = fixture.accepted();
    for i in 0..CALLS {
        let text = format!("call {i}");
        let arguments = json!({ "text": text }).as_object().cloned().expect("an object");
        let params = mcp::CallToolRequestParams::new("echo").with_arguments(arguments);
        let result =
            upstream.call_tool(params, &CallOptions::default()).await.expect("echo answers");
        let echoed = result.content.first().and_then(|block| block.as_text()).map(|t| &t.text);
        assert_eq!(echoed, Some(&text), "{result:?}");
    }
    let opened = fixture.accepted() - before;
    upstream.shutdown().await;
    opened
}

#[tokio::test]
async fn streamable_http_calls_reuse_a_connection_by_default() {
    let fixture = CountedFixture::start(false).await;
    let opened =
        connections_per_calls(&fixture, &config(&fixture.url, "transport = \"streamable-http\""))
            .await;
    // Each call may find the connection of the last one still reading its answer's end and
    // open another, but most share: one connection per call is what `pool = false` does.
    assert!(opened < CALLS / 2, "{opened} connections for {CALLS} calls");
}

#[tokio::test]
async fn streamable_http_with_pool_false_opens_a_connection_per_call() {
    let fixture = CountedFixture::start(false).await;
    let config = config(&fixture.url, "transport = \"streamable-http\"\npool = false");
    assert_eq!(connections_per_calls(&fixture, &config).await, CALLS);
}

#[tokio::test]
async fn legacy_sse_messages_reuse_a_connection_by_default() {
    let fixture = CountedFixture::start(true).await;
    let opened =
        connections_per_calls(&fixture, &config(&fixture.url, "transport = \"sse\"")).await;
    assert!(opened < CALLS / 2, "{opened} connections for {CALLS} calls");
}

#[tokio::test]
async fn legacy_sse_with_pool_false_opens_a_connection_per_message() {
    let fixture = CountedFixture::start(true).await;
    let config = config(&fixture.url, "transport = \"sse\"\npool = false");
    assert_eq!(connections_per_calls(&fixture, &config).await, CALLS);
}
