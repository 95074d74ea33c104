//! Hostile clients cannot grow the gateway's memory: N requests, each with a new name, progress
//! token, subscription or session, leave its resident memory where the first N/10 of them (at
//! least 2000) left it; so do listen streams held open past their bounds, and a flood of
//! progress to a client that never reads it.
//!
//! N is `$TOOLGATE_TEST_HOSTILE_N` (default 100,000).

#![allow(deprecated)] // resources/subscribe is legacy-only in 2026-07-28, and still spoken

use std::time::Duration;

use futures::StreamExt as _;
use rmcp::model::{CallToolRequestParams, SubscribeRequestParams};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::json;
use tokio::process::Command;

use crate::support::*;

/// How much the resident memory may grow between the warm-up and the end.
const SLACK_KIB: u64 = 4 * 1024;

/// The least warm-up: past the caps (1000 sessions, 1000 subscriptions per session), so
/// that what is measured after it is what the gateway does once full.
const WARM_UP_AT_LEAST: usize = 2_000;

/// Requests in flight at once.
const CONCURRENCY: usize = 32;

fn hostile_n() -> usize {
    std::env::var("TOOLGATE_TEST_HOSTILE_N").ok().and_then(|n| n.parse().ok()).unwrap_or(100_000)
}

/// The resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("process status");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("a VmRSS line");
    line.split_whitespace().nth(1).and_then(|kib| kib.parse().ok()).expect("VmRSS in kB")
}

/// Runs `request(i)` for `range`, `CONCURRENCY` at a time; what they answer does not matter.
async fn flood<F, Fut>(range: std::ops::Range<usize>, request: F)
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    futures::stream::iter(range).map(request).buffer_unordered(CONCURRENCY).collect::<()>().await;
}

/// Floods with `request` from 0 to N, and checks the memory after N/10 and after N.
async fn assert_flat<F, Fut>(what: &str, pid: u32, request: F)
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let n = hostile_n();
    let warm_up = (n / 10).max(WARM_UP_AT_LEAST).min(n);
    flood(0..warm_up, &request).await;
    let warm = rss_kib(pid);
    flood(warm_up..n, &request).await;
    let end = rss_kib(pid);
    eprintln!("{what}: {warm} KiB after {warm_up}, {end} KiB after {n}");
    assert!(
        end <= warm + SLACK_KIB,
        "{what}: the gateway grew from {warm} KiB to {end} KiB over {} more requests",
        n - warm_up
    );
}

/// `toolgate serve --stdio` in front of a passthrough fixture (prefix ""), with a `limits`
/// glob over every tool name: the client, and toolgate's pid.
async fn passthrough_gateway(
    config: &ConfigDir,
) -> (rmcp::service::RunningService<RoleClient, ()>, u32) {
    let mut command = Command::new(toolgate_bin());
    command.args(["serve", "--stdio", "--config"]).arg(config.path());
    let transport = TokioChildProcess::new(command).expect("spawn toolgate --stdio");
    let pid = transport.id().expect("toolgate pid");
    let client = ().serve(transport).await.expect("client connects over stdio");
    (client, pid)
}

fn passthrough_config() -> ConfigDir {
    ConfigDir::new(&format!(
        "{}prefix = \"\"\n\n[[pipeline]]\nkind = \"limits\"\ntool.\"*\" = {{ concurrency = 1000, rate = \"1000000/s\" }}\n",
        fixture_server("fx", "stdio", None)
    ))
}

#[tokio::test]
async fn made_up_tool_names_progress_tokens_and_subscriptions_leave_memory_flat() {
    let config = passthrough_config();
    let (client, pid) = passthrough_gateway(&config).await;
    let peer = client.peer().clone();

    assert_flat("made-up tool names", pid, |i| {
        let peer = peer.clone();
        async move {
            let call = CallToolRequestParams::new(format!("made_up_{i}"));
            let _ = peer.call_tool(call).await;
        }
    })
    .await;

    assert_flat("progress tokens", pid, |i| {
        let peer = peer.clone();
        async move {
            // Each call with a token of its own (rmcp mints one per request as well).
            let call: CallToolRequestParams = serde_json::from_value(json!({
                "name": "echo",
                "arguments": { "text": "x" },
                "_meta": { "progressToken": format!("token-{i}") },
            }))
            .expect("valid params");
            let _ = peer.call_tool(call).await;
        }
    })
    .await;

    let refused = std::sync::atomic::AtomicUsize::new(0);
    assert_flat("subscriptions", pid, |i| {
        let (peer, refused) = (peer.clone(), &refused);
        async move {
            let uri = format!("test://made-up/{i}");
            if let Err(error) = peer.subscribe(SubscribeRequestParams::new(uri)).await {
                let message = error.to_string();
                assert!(message.contains("at most 1000 resources"), "{message}");
                refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    })
    .await;
    let refused = refused.into_inner();
    assert_eq!(refused, hostile_n() - 1000, "one session follows at most 1000 resources");
    client.cancel().await.expect("close");
}

/// Sessions opened and never used again: past the most one client may hold, each new one
/// takes the place of the least recently used (idle sessions make room before anyone is
/// refused), so the gateway holds at most that many and its memory stays flat.
#[tokio::test]
async fn sessions_never_closed_leave_memory_flat() {
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let gateway = HttpGateway::start(&config.path()).await;
    let http = reqwest::Client::new();
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": { "name": "hostile", "version": "1" },
        },
    });
    let open = async || {
        http.post(&gateway.url)
            .header("accept", "application/json, text/event-stream")
            .json(&initialize)
            .timeout(Duration::from_secs(30))
            .send()
            .await
            .expect("the gateway answers")
    };
    let first = open().await;
    let first = first.headers()["mcp-session-id"].to_str().expect("ascii").to_owned();
    let refused = std::sync::atomic::AtomicUsize::new(0);
    assert_flat("sessions", gateway.pid(), |_| {
        let (open, refused) = (&open, &refused);
        async move {
            let status = open().await.status();
            if status != reqwest::StatusCode::OK {
                refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    })
    .await;
    assert_eq!(refused.into_inner(), 0, "idle sessions make room for new ones");
    let gone = http
        .post(&gateway.url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &first)
        .header("mcp-protocol-version", "2025-06-18")
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
        .send()
        .await
        .expect("answered");
    assert_eq!(gone.status(), 404, "the least recently used session made room");
    assert!(gateway.terminate().await.success());
}

/// A raw 2026-07-28 `subscriptions/listen` request following `uris`: its response (the stream,
/// or a refusal), its body unread.
async fn listen(
    http: &reqwest::Client,
    url: &str,
    id: usize,
    uris: &[String],
) -> reqwest::Response {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "hostile", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let request = json!({
        "jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": true, "resourceSubscriptions": uris},
                   "_meta": meta},
    });
    http.post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(request.to_string())
        .timeout(Duration::from_secs(60))
        .send()
        .await
        .expect("the gateway answers")
}

/// `count` URIs the fixture's template (`test://template/{id}/data`) offers, each about 700
/// bytes long, different for each `stream`.
fn long_uris(stream: usize, count: usize) -> Vec<String> {
    let padding = "x".repeat(660);
    (0..count).map(|i| format!("test://template/{padding}-{stream}-{i}/data")).collect()
}

/// Listen streams held open by one client, each following as many long URIs as it may, then
/// hundreds more held open past the bounds (too many streams, too many bytes of URIs): the
/// first take a bounded amount of memory, the others none. (Before the bounds, 60 such
/// streams naming 1000 URIs each took the gateway from 21 MB to 763 MB.)
#[tokio::test]
async fn listen_streams_past_their_bounds_leave_memory_flat() {
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let gateway = HttpGateway::start(&config.path()).await;
    let pid = gateway.pid();
    let http = reqwest::Client::new();
    let most = toolgate_server::DEFAULT_MAX_LISTEN_STREAMS_PER_CLIENT;
    // As many URIs as the bytes allow.
    let fits = toolgate_gateway::MOST_SUBSCRIBED_BYTES / long_uris(0, 1)[0].len();
    let before = rss_kib(pid);
    let mut held = Vec::new();
    for stream in 0..most - 1 {
        let response = listen(&http, &gateway.url, stream, &long_uris(stream, fits)).await;
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        held.push(response);
    }
    let within = rss_kib(pid);
    eprintln!("{} listen streams: {before} KiB, then {within} KiB", most - 1);
    assert!(within < before + 48 * 1024, "the streams within bounds took {} KiB", within - before);

    // One place is left: each stream naming more than the bytes allow is refused in it (held
    // open all the same)...
    let attempts = (hostile_n() / 100).clamp(100, 400);
    let too_long = async |range: std::ops::Range<usize>| {
        let responses = futures::stream::iter(range)
            .map(|i| {
                let (http, url) = (&http, &gateway.url);
                async move { listen(http, url, most + i, &long_uris(most + i, 1000)).await }
            })
            .buffer_unordered(8)
            .collect::<Vec<_>>()
            .await;
        for response in &responses {
            assert_eq!(response.headers()["content-type"], "application/json", "refused");
        }
        responses
    };
    // (The first of them reach the most memory that reading such requests takes.)
    let mut past = too_long(0..attempts / 4).await;
    let warm = rss_kib(pid);
    past.extend(too_long(attempts / 4..attempts).await);
    // ...then it is taken, and every stream more is refused, however small.
    held.push(listen(&http, &gateway.url, 0, &long_uris(0, fits)).await);
    for i in 0..attempts {
        let response = listen(&http, &gateway.url, i, &long_uris(i, 10)).await;
        assert_eq!(response.status(), 429, "past the most one client may hold");
        past.push(response);
    }
    let end = rss_kib(pid);
    eprintln!("listen streams: {warm} KiB, then {end} KiB after {} refused", past.len());
    assert!(end <= warm + SLACK_KIB, "the gateway grew from {warm} KiB to {end} KiB");
    drop((held, past));
    assert!(gateway.terminate().await.success());
}

/// A stdio MCP server whose `flood` tool sends `count` progress notifications of `size` bytes
/// each as fast as it can, then its answer (`done <count>`), then tells the test it is done
/// on a TCP connection to the port given as its argument.
const FLOOD_SERVER: &str = r#"
import json, socket, sys

def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()

for line in sys.stdin:
    message = json.loads(line)
    ident, method = message.get("id"), message.get("method")
    if ident is None or method is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": ident, "result": {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}}, "serverInfo": {"name": "flood", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": [
            {"name": "flood", "inputSchema": {"type": "object"}}]}})
    elif method == "tools/call":
        arguments = message["params"]["arguments"]
        token = message["params"]["_meta"]["progressToken"]
        text = "x" * arguments["size"]
        for step in range(arguments["count"]):
            send({"jsonrpc": "2.0", "method": "notifications/progress",
                  "params": {"progressToken": token, "progress": step, "message": text}})
        send({"jsonrpc": "2.0", "id": ident, "result": {
            "content": [{"type": "text", "text": "done %d" % arguments["count"]}]}})
        socket.create_connection(("127.0.0.1", int(sys.argv[1]))).close()
    else:
        send({"jsonrpc": "2.0", "id": ident,
              "error": {"code": -32601, "message": "Method not found"}})
"#;

/// A call whose upstream floods progress, to a client that never reads its answer's stream:
/// what waits for the client is bounded (progress past half the queue is dropped), and the
/// answer still arrives once the client reads. (Before, such a call took the gateway from 24
/// MB to 391 MB.)
#[tokio::test]
async fn a_client_that_does_not_read_its_stream_leaves_memory_flat() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    let done = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = done.local_addr().expect("address").port();
    let server = ConfigDir::with_file("flood.py", FLOOD_SERVER);
    let config = ConfigDir::new(&format!(
        "[servers.flood]\ncommand = {}\nargs = [{}, \"{port}\"]\n",
        toml_str(&crate::deps::python().to_string_lossy()),
        toml_str(&server.path().to_string_lossy()),
    ));
    let gateway = HttpGateway::start(&config.path()).await;
    let http = reqwest::Client::new();
    let initialize = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "hostile", "version": "1"}},
    });
    let response = http
        .post(&gateway.url)
        .header("accept", "application/json, text/event-stream")
        .json(&initialize)
        .send()
        .await
        .expect("initialize");
    let session = response.headers()["mcp-session-id"].to_str().expect("ascii").to_owned();
    let address = gateway.url.strip_prefix("http://").and_then(|r| r.split('/').next()).unwrap();
    // A call on a connection of its own whose answer is not read until the end; it returns
    // once the upstream has sent everything (toolgate read all but a pipe's worth of it).
    let call = async |id: usize, count: usize| {
        let body = json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "flood__flood", "arguments": {"count": count, "size": 4096},
                       "_meta": {"progressToken": id}},
        })
        .to_string();
        let mut tcp = tokio::net::TcpStream::connect(address).await.expect("connect");
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\n\
             Mcp-Protocol-Version: 2025-11-25\r\nConnection: close\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        tcp.write_all(head.as_bytes()).await.expect("write");
        tokio::time::timeout(Duration::from_secs(120), done.accept())
            .await
            .expect("the upstream finishes")
            .expect("accept");
        tcp
    };
    let n = (hostile_n() / 2).max(5_000);
    let mut first = call(1, n / 10).await;
    let warm = rss_kib(gateway.pid());
    let mut second = call(2, n).await;
    let end = rss_kib(gateway.pid());
    eprintln!("progress nobody reads: {warm} KiB after {}, {end} KiB after {n} more", n / 10);
    assert!(end <= warm + SLACK_KIB, "the gateway grew from {warm} KiB to {end} KiB");
    for (stream, count) in [(&mut first, n / 10), (&mut second, n)] {
        let mut answer = Vec::new();
        tokio::time::timeout(Duration::from_secs(60), stream.read_to_end(&mut answer))
            .await
            .expect("the stream ends")
            .expect("read");
        let answer = String::from_utf8_lossy(&answer);
        let tail = &answer[answer.len().saturating_sub(300)..];
        assert!(answer.contains(&format!("done {count}")), "the answer arrives: {tail}");
    }
    assert!(gateway.terminate().await.success());
}

/// Resources no upstream offers cost no upstream anything: a session may follow made-up URIs
/// (within its bounds), but only a resource an upstream lists, or whose URI matches one of its
/// templates, is followed upstream. (Before, made-up URIs each became an upstream
/// subscription: 60 listen streams naming 1000 each made 60,000.)
#[tokio::test]
async fn only_resources_an_upstream_offers_are_followed_upstream() {
    let upstream = crate::recording_upstream::RecordingUpstream::start().await;
    let config = ConfigDir::new(&fixture_server("fx", "http", Some(&upstream.url)));
    let client = stdio_client(&config.path()).await;
    for i in 0..50 {
        let made_up = SubscribeRequestParams::new(format!("test://made-up/{i}"));
        client.subscribe(made_up).await.expect("followed by the session");
    }
    let offered = ["test://watched-resource", "test://template/7/data"];
    for uri in offered {
        client.subscribe(SubscribeRequestParams::new(uri)).await.expect("an offered resource");
    }
    // The upstream (of the 2026-07-28 era) is asked again with every resource followed.
    upstream.wait_for_resources(&offered).await;
    let named = upstream.resources_named();
    assert!(!named.iter().any(|uri| uri.contains("made-up")), "{named:?}");
    client.cancel().await.expect("close");
}

/// A listen stream naming many resources costs a 2026-07-28 upstream one new listen stream of
/// its own, not one per resource. (Before, each resource reopened the upstream's stream with
/// every resource so far, and waited for it: 31 streams of 93 resources took minutes.)
#[tokio::test]
async fn a_listen_stream_of_many_resources_reopens_the_upstreams_stream_once() {
    let upstream = crate::recording_upstream::RecordingUpstream::start().await;
    let config = ConfigDir::new(&fixture_server("fx", "http", Some(&upstream.url)));
    let gateway = HttpGateway::start(&config.path()).await;
    let http = reqwest::Client::new();
    let listens = |upstream: &crate::recording_upstream::RecordingUpstream| {
        upstream.received().iter().filter(|r| r.method == "subscriptions/listen").count()
    };
    // The gateway's own listen stream (list changes) is open before it is counted.
    upstream.wait_for_method("subscriptions/listen", 1).await;
    let before = listens(&upstream);
    let uris: Vec<String> = (0..60).map(|i| format!("test://template/{i}/data")).collect();
    let response = listen(&http, &gateway.url, 1, &uris).await;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let named: Vec<&str> = uris.iter().map(String::as_str).collect();
    upstream.wait_for_resources(&named).await;
    // The upstream's stream was reopened once for the whole filter; one or two more may come
    // from changes racing it (the gateway's first listings after connecting).
    let reopened = listens(&upstream) - before;
    assert!((1..=3).contains(&reopened), "{reopened} upstream listen streams for one filter");
    drop(response);
    assert!(gateway.terminate().await.success());
}
