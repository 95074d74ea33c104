//! Servers a request names by URL, through the gateway's pool: the fixture over streamable
//! HTTP, served in this process behind a layer that records the requests it is sent and a
//! listener that follows the connections open to it, and the real `policy` and `integrity`
//! interceptors.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use toolgate_audit::{Event, EventBus, EventPattern, Subscription};
use toolgate_config::InterceptorConfig;
use toolgate_core::mcp;
use toolgate_gateway::{
    DynamicHandle, DynamicServer, Gateway, GatewayError, PoolSettings, Recorder,
};
use toolgate_intercept::{CallContext, Principal};
use toolgate_testkit::{Fixture, FixtureHub, FixtureOptions};
use toolgate_upstream::{CallOptions, StartupWait};

const TOKEN: &str = "tok-7f3a9c-never-shown";
const API_KEY: &str = "key-51d2e8-never-shown";

/// One request the fixture was sent: its `Authorization` header, and the client's
/// address (which tells its connection).
#[derive(Debug, Clone)]
struct Sent {
    authorization: Option<String>,
    peer: SocketAddr,
}

type Seen = Arc<Mutex<Vec<Sent>>>;

/// The fixture at `http://127.0.0.1:PORT/mcp`, recording what it is sent and which
/// connections are open to it (by the client's address); stops when dropped.
struct Served {
    url: url::Url,
    seen: Seen,
    open: watch::Receiver<HashSet<SocketAddr>>,
    stop: CancellationToken,
}

impl Served {
    /// The clients' addresses of the requests sent so far.
    fn peers(&self) -> HashSet<SocketAddr> {
        self.seen.lock().unwrap().iter().map(|sent| sent.peer).collect()
    }

    /// Waits until no connection from `peers` is open.
    async fn closed(&self, peers: &HashSet<SocketAddr>) {
        let mut open = self.open.clone();
        let none = open.wait_for(|open| open.is_disjoint(peers));
        tokio::time::timeout(Duration::from_secs(10), none)
            .await
            .expect("the connections close")
            .expect("the fixture runs");
    }
}

/// A listener that keeps the set of connections open.
struct Followed {
    listener: TcpListener,
    open: watch::Sender<HashSet<SocketAddr>>,
}

impl axum::serve::Listener for Followed {
    type Io = Connection;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Connection, SocketAddr) {
        loop {
            let Ok((tcp, peer)) = self.listener.accept().await else { continue };
            let _ = tcp.set_nodelay(true);
            self.open.send_modify(|open| {
                open.insert(peer);
            });
            return (Connection { tcp, peer, open: self.open.clone() }, peer);
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

/// The client's address, for the layer.
#[derive(Clone, Copy)]
struct Peer(SocketAddr);

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, Followed>> for Peer {
    fn connect_info(stream: axum::serve::IncomingStream<'_, Followed>) -> Peer {
        Peer(*stream.remote_addr())
    }
}

/// An accepted connection, which leaves the set when the server drops it.
struct Connection {
    tcp: TcpStream,
    peer: SocketAddr,
    open: watch::Sender<HashSet<SocketAddr>>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.open.send_modify(|open| {
            open.remove(&self.peer);
        });
    }
}

impl AsyncRead for Connection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.tcp).poll_read(cx, buf)
    }
}

impl AsyncWrite for Connection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn serve_fixture() -> Served {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let stop = CancellationToken::new();
    let opts = Arc::new(FixtureOptions::default());
    let hub = FixtureHub::new();
    let config = StreamableHttpServerConfig::default().with_cancellation_token(stop.child_token());
    let service = StreamableHttpService::new(
        move || Ok(Fixture::with_hub(opts.clone(), hub.clone())),
        LocalSessionManager::default().into(),
        config,
    );
    let seen = Seen::default();
    let record = seen.clone();
    let app = axum::Router::new().nest_service("/mcp", service).layer(axum::middleware::from_fn(
        move |request: axum::extract::Request, next: axum::middleware::Next| {
            let authorization = request
                .headers()
                .get("authorization")
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned);
            let key = request.headers().get("x-api-key").and_then(|v| v.to_str().ok());
            assert_eq!(key, Some(API_KEY), "every request carries the request's header");
            let axum::extract::ConnectInfo(Peer(peer)) =
                *request.extensions().get().expect("the client's address");
            record.lock().unwrap().push(Sent { authorization, peer });
            next.run(request)
        },
    ));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
    let (open, watching) = watch::channel(HashSet::new());
    let shutdown = stop.clone();
    tokio::spawn(async move {
        let app = app.into_make_service_with_connect_info::<Peer>();
        axum::serve(Followed { listener, open }, app)
            .with_graceful_shutdown(shutdown.cancelled_owned())
            .await
    });
    Served { url: url.parse().expect("a URL"), seen, open: watching, stop }
}

fn entry(kind: &str, options: serde_json::Value) -> InterceptorConfig {
    let options = options.as_object().cloned().expect("options are a table");
    InterceptorConfig::new(format!("pipeline[{kind}]"), kind, options)
}

/// A gateway without configured servers, with `entries` as its pipeline, and every event it
/// publishes.
async fn gateway(entries: &[InterceptorConfig]) -> (Arc<Gateway>, Subscription) {
    let bus = EventBus::new();
    let events = bus.subscribe(EventPattern::all(), 4096);
    let services = toolgate_interceptors::Services::new(bus.clone());
    let pipeline = toolgate_interceptors::build_pipeline(entries, &services).expect("pipeline");
    let recorder = Recorder::new(bus, Vec::new());
    (Gateway::start(&[], StartupWait::All, pipeline, recorder).await, events)
}

fn dynamic(url: &url::Url) -> DynamicServer {
    DynamicServer {
        url: url.clone(),
        label: "dyn".into(),
        headers: vec![("X-Api-Key".into(), API_KEY.into())],
        authorization: Some(TOKEN.into()),
    }
}

fn caller(id: &str, tenant: &str) -> CallContext {
    CallContext::new(Principal::new("key", id).with_tenant(Some(tenant.to_owned())))
}

fn echo(text: &str) -> mcp::CallToolRequestParams {
    mcp::CallToolRequestParams::new("dyn__echo")
        .with_arguments(json!({ "text": text }).as_object().cloned().expect("an object"))
}

fn text(result: &mcp::CallToolResult) -> String {
    result.content.iter().filter_map(|c| c.as_text()).map(|t| t.text.clone()).collect()
}

fn drain(events: &mut Subscription) -> Vec<Event> {
    std::iter::from_fn(|| events.try_recv()).collect()
}

/// Waits for the event of `kind` (every event before it is kept in `seen`).
async fn next_of(events: &mut Subscription, kind: &str, seen: &mut Vec<Event>) -> Event {
    let found = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let event = events.recv().await.expect("the bus is open");
            seen.push(event.clone());
            if event.kind == kind {
                return event;
            }
        }
    });
    found.await.unwrap_or_else(|_| panic!("no {kind} event"))
}

#[tokio::test]
async fn a_dynamic_server_is_listed_and_called_through_the_pipeline_per_tenant() {
    let fixture = serve_fixture().await;
    let policy = entry(
        "policy",
        json!({ "rules": [{ "servers": ["dyn"], "tools": ["fail"], "decision": "deny",
                            "reason": "no failing here" }] }),
    );
    let (gateway, mut events) = gateway(&[policy]).await;
    let server = dynamic(&fixture.url);
    let mut acme = caller("alice", "acme");
    let handle = gateway.dynamic(&server, &acme).await.expect("connects");
    assert_eq!(handle.label(), "dyn");

    // Its tools under its label, as the policy lets the caller see them.
    let tools = handle.list_tools(&mut acme).await.expect("lists");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(names.contains(&"dyn__echo"), "{names:?}");
    assert!(!names.contains(&"dyn__fail"), "the policy hides what it denies: {names:?}");
    // Nobody else sees them: they are not in the shared inventory.
    let shared = gateway.list_tools(&mut caller("bob", "globex")).await.expect("lists");
    assert!(shared.iter().all(|t| !t.name.starts_with("dyn__")), "{shared:?}");
    let unknown =
        gateway.call_tool(echo("x"), &CallOptions::default(), &mut caller("alice", "acme")).await;
    assert!(matches!(unknown, Err(GatewayError::UnknownTool(_))), "{unknown:?}");

    // A call through the whole pipeline, recorded like any other.
    let mut ctx = caller("alice", "acme");
    let result = handle.call_tool(echo("hello"), &CallOptions::default(), &mut ctx).await;
    assert_eq!(text(&result.expect("echoes")), "hello");
    let mut seen = Vec::new();
    let finished = next_of(&mut events, "tools/call/finished", &mut seen).await;
    assert_eq!(finished.get("server"), Some(&json!("dyn")));
    assert_eq!(finished.get("tool"), Some(&json!("echo")));
    assert_eq!(finished.get("tenant"), Some(&json!("acme")));

    // The policy refuses a tool of it by its label.
    let fail = mcp::CallToolRequestParams::new("dyn__fail")
        .with_arguments(json!({ "message": "boom" }).as_object().cloned().expect("an object"));
    let refused =
        handle.call_tool(fail, &CallOptions::default(), &mut caller("alice", "acme")).await;
    match refused {
        Err(GatewayError::Refused(refusal)) => {
            assert_eq!(refusal.interceptor, "policy");
            assert!(refusal.reason.contains("no failing here"), "{}", refusal.reason);
        }
        other => panic!("expected the policy's refusal, got {other:?}"),
    }
    next_of(&mut events, "tools/call/denied", &mut seen).await;

    // The bearer token and the header reached the server (the layer checks the header).
    let sent = fixture.seen.lock().unwrap().clone();
    assert!(!sent.is_empty());
    let bearer = format!("Bearer {TOKEN}");
    assert!(sent.iter().all(|s| s.authorization.as_deref() == Some(&*bearer)), "{sent:?}");
    let acme_peers = fixture.peers();

    // The same tenant again: the same connection. Another tenant: one of its own.
    let again = gateway.dynamic(&server, &caller("carol", "acme")).await.expect("pooled");
    assert!(again.is_connected());
    let mut globex = caller("bob", "globex");
    let theirs = gateway.dynamic(&server, &globex).await.expect("connects");
    let stats = gateway.dynamic_stats();
    assert_eq!((stats.size, stats.misses, stats.hits, stats.evictions), (2, 2, 1, 0));
    // A handle serves its own caller only.
    let stolen = theirs.call_tool(echo("x"), &CallOptions::default(), &mut acme).await;
    assert!(matches!(stolen, Err(GatewayError::DynamicServer { .. })), "{stolen:?}");
    let result = theirs.call_tool(echo("theirs"), &CallOptions::default(), &mut globex).await;
    assert_eq!(text(&result.expect("echoes")), "theirs");

    // A bound of one closes the least recently used connection: acme's.
    assert!(!fixture.open.borrow().is_disjoint(&acme_peers), "acme's is open");
    gateway.set_pool_settings(PoolSettings { max_connections: 1, ..PoolSettings::default() });
    let closed = next_of(&mut events, "upstream/closed", &mut seen).await;
    assert_eq!(closed.get("server"), Some(&json!("dyn")));
    assert_eq!(closed.get("reason"), Some(&json!("least_recently_used")));
    assert!(!handle.is_connected() && theirs.is_connected());
    let mut ctx = caller("alice", "acme");
    let late = handle.call_tool(echo("x"), &CallOptions::default(), &mut ctx).await;
    assert!(late.is_err(), "a handle past its eviction fails its calls");
    assert!(handle.list_tools(&mut ctx).await.is_err(), "and its tools are gone");
    let stats = gateway.dynamic_stats();
    assert_eq!((stats.size, stats.evictions), (1, 1));
    // Its connections to the server closed; globex's stay.
    fixture.closed(&acme_peers).await;
    let globex_peers: HashSet<_> = fixture.peers().difference(&acme_peers).copied().collect();
    assert!(!fixture.open.borrow().is_disjoint(&globex_peers), "globex's is open");

    // No event carries a credential (the audit log records these events), and shutting down
    // leaves no connection open.
    gateway.shutdown().await;
    fixture.closed(&fixture.peers()).await;
    seen.extend(drain(&mut events));
    assert!(
        seen.iter()
            .any(|e| e.kind == "upstream/connected" && e.get("dynamic") == Some(&json!(true)))
    );
    for event in &seen {
        let shown = format!("{event:?}");
        assert!(!shown.contains(TOKEN) && !shown.contains(API_KEY), "{shown}");
    }
}

#[tokio::test]
async fn integrity_pins_a_dynamic_server_by_its_label() {
    let fixture = serve_fixture().await;
    // No lock file: every tool is unknown, and this server's unknown tools are withheld.
    let lock =
        std::env::temp_dir().join(format!("toolgate-dynamic-{}/none.lock", std::process::id()));
    let integrity = entry(
        "integrity",
        json!({ "lock": lock.to_string_lossy(), "server": { "dyn": { "unknown": "block" } } }),
    );
    let (gateway, _events) = gateway(&[integrity]).await;
    let mut ctx = caller("alice", "acme");
    let handle = gateway.dynamic(&dynamic(&fixture.url), &ctx).await.expect("connects");
    let tools = handle.list_tools(&mut ctx).await.expect("lists");
    assert!(tools.is_empty(), "unpinned tools are withheld: {tools:?}");
    let refused = handle.call_tool(echo("x"), &CallOptions::default(), &mut ctx).await;
    match refused {
        Err(GatewayError::Refused(refusal)) => {
            assert_eq!(refusal.interceptor, "integrity");
            assert!(refusal.reason.contains("--server dyn"), "{}", refusal.reason);
        }
        other => panic!("expected integrity's refusal, got {other:?}"),
    }
    gateway.shutdown().await;
}

#[tokio::test]
async fn urls_labels_and_headers_that_may_not_be_used_are_refused() {
    let (gateway, _events) = gateway(&[]).await;
    let ctx = caller("alice", "acme");
    let base: url::Url = "http://127.0.0.1:9/mcp".parse().expect("a URL");
    let mut cases = Vec::new();
    for url in ["file:///etc/passwd", "ftp://127.0.0.1/mcp", "http://user:pw@127.0.0.1:9/mcp"] {
        cases.push(DynamicServer { url: url.parse().expect("a URL"), ..dynamic(&base) });
    }
    for label in ["", "toolgate", "a b", "x".repeat(65).as_str()] {
        cases.push(DynamicServer { label: label.to_owned(), ..dynamic(&base) });
    }
    for name in ["Host", "Content-Length", "mcp-session-id"] {
        let headers = vec![(name.to_owned(), API_KEY.to_owned())];
        cases.push(DynamicServer { headers, ..dynamic(&base) });
    }
    for server in cases {
        let refused = gateway.dynamic(&server, &ctx).await;
        match refused {
            Err(error @ GatewayError::DynamicServer { .. }) => {
                let shown = error.to_string();
                assert!(!shown.contains(API_KEY) && !shown.contains(TOKEN), "{shown}");
            }
            other => panic!("{server:?} should be refused, got {other:?}"),
        }
    }
    assert_eq!(gateway.dynamic_stats().misses, 0, "nothing was connected");
    // A server that does not answer: an error naming it, and nothing pooled.
    let failed = gateway.dynamic(&dynamic(&base), &ctx).await;
    let error = failed.expect_err("nothing listens there");
    let shown = toolgate_core::ErrorChain(&error).to_string();
    assert!(shown.contains("dyn") && !shown.contains(TOKEN) && !shown.contains(API_KEY), "{shown}");
    let stats = gateway.dynamic_stats();
    assert_eq!((stats.size, stats.misses), (0, 1));
}

/// The endpoint awaits these in its handlers' tasks: their futures must be `Send`.
#[allow(dead_code)]
fn the_futures_are_send(
    gateway: &Gateway,
    server: &DynamicServer,
    handle: &DynamicHandle,
    ctx: &mut CallContext,
) {
    fn send<T: Send>(_: T) {}
    send(gateway.dynamic(server, ctx));
    send(gateway.warm(std::slice::from_ref(server), ctx));
    send(handle.list_tools(ctx));
    send(handle.call_tool(echo("x"), &CallOptions::default(), ctx));
}
