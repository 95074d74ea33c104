//! A streamable HTTP upstream is ready only once the server has answered its session's
//! standalone GET stream, so that nothing the server sends outside a request right after the
//! handshake finds no stream to carry it, and a request's answer that the server sends on a
//! GET (as the conformance suite's `sse-retry` server does after closing the request's own
//! stream) never meets the standalone GET before the request. A server that answers the GET
//! with 405 has no such stream; one that never answers it is used without it.
//!
//! The server here is a small one of the test's own (axum), speaking just enough of the
//! protocol: `initialize` with a session id, `tools/list`, and a GET whose answer it holds
//! for a while, or forever.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use toolgate_config::{FixedEnvironment, Format, ServerConfig};
use toolgate_upstream::Upstream;

/// How the server answers the GET.
#[derive(Clone, Copy)]
enum Get {
    /// With the stream's headers, after this long.
    After(Duration),
    /// 405: no standalone stream.
    NotAllowed,
    /// Never.
    Never,
}

#[derive(Clone)]
struct Server {
    get: Get,
    /// Set just before the GET's headers go out.
    answered: Arc<AtomicBool>,
    stop: CancellationToken,
}

const SESSION: &str = "s-standalone";

async fn post_message(State(_): State<Server>, body: axum::body::Bytes) -> Response {
    let message: Value = serde_json::from_slice(&body).unwrap_or_default();
    let id = message.get("id").cloned();
    let result = match message.get("method").and_then(Value::as_str) {
        Some("initialize") => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": { "tools": {} },
            "serverInfo": { "name": "standalone-test", "version": "1.0.0" },
        }),
        Some("tools/list") => json!({ "tools": [] }),
        Some(_) if id.is_some() => {
            let error = json!({ "code": -32601, "message": "Method not found" });
            let answer = json!({ "jsonrpc": "2.0", "id": id, "error": error });
            return answered(answer);
        }
        // A notification.
        _ => return (StatusCode::ACCEPTED, [("mcp-session-id", SESSION)]).into_response(),
    };
    answered(json!({ "jsonrpc": "2.0", "id": id, "result": result }))
}

fn answered(answer: Value) -> Response {
    let headers = [("content-type", "application/json"), ("mcp-session-id", SESSION)];
    (headers, answer.to_string()).into_response()
}

async fn get_stream(State(server): State<Server>, headers: HeaderMap) -> Response {
    assert!(headers.get("last-event-id").is_none(), "nothing to resume here");
    match server.get {
        Get::NotAllowed => {
            server.answered.store(true, Ordering::SeqCst);
            StatusCode::METHOD_NOT_ALLOWED.into_response()
        }
        Get::Never => {
            server.stop.cancelled().await;
            StatusCode::SERVICE_UNAVAILABLE.into_response()
        }
        Get::After(delay) => {
            // The server's own slowness, which the client must wait out.
            tokio::time::sleep(delay).await;
            server.answered.store(true, Ordering::SeqCst);
            let stream = futures::stream::pending::<Result<String, std::convert::Infallible>>();
            let headers = [
                ("content-type", "text/event-stream"),
                ("cache-control", "no-cache"),
                ("mcp-session-id", SESSION),
            ];
            (headers, axum::body::Body::from_stream(stream)).into_response()
        }
    }
}

/// Serves until dropped; returns the server's state and its config.
async fn serve(get: Get) -> (Server, ServerConfig) {
    let server =
        Server { get, answered: Arc::new(AtomicBool::new(false)), stop: CancellationToken::new() };
    let app =
        Router::new().route("/mcp", post(post_message).get(get_stream)).with_state(server.clone());
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let stop = server.stop.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).with_graceful_shutdown(stop.cancelled_owned()).await;
    });
    let text = format!(
        "[servers.s]\nurl = \"http://{address}/mcp\"\ntransport = \"streamable-http\"\nstartup_timeout = \"20s\"\n"
    );
    let config =
        toolgate_config::parse_str(&text, Format::Toml, Path::new("."), &FixedEnvironment::new())
            .expect("a valid config");
    (server, config.servers.into_iter().next().expect("one server"))
}

#[tokio::test]
async fn an_upstream_is_ready_once_its_session_stream_is_answered() {
    let (server, config) = serve(Get::After(Duration::from_millis(400))).await;
    let upstream = Upstream::connect(&config).await.expect("connects");
    assert!(server.answered.load(Ordering::SeqCst), "ready before the GET was answered");
    upstream.shutdown().await;
    server.stop.cancel();
}

#[tokio::test]
async fn a_server_without_a_standalone_stream_is_ready_at_once() {
    let (server, config) = serve(Get::NotAllowed).await;
    let upstream = tokio::time::timeout(Duration::from_secs(15), Upstream::connect(&config))
        .await
        .expect("no wait for a stream the server refused")
        .expect("connects");
    assert!(server.answered.load(Ordering::SeqCst));
    upstream.shutdown().await;
    server.stop.cancel();
}

#[tokio::test]
async fn a_server_that_never_answers_the_get_is_used_without_it() {
    let (server, config) = serve(Get::Never).await;
    let upstream = Upstream::connect(&config).await.expect("connects all the same");
    assert!(!server.answered.load(Ordering::SeqCst));
    assert_eq!(upstream.catalog().tools.len(), 0);
    upstream.shutdown().await;
    server.stop.cancel();
}
