//! The fixture over streamable HTTP in this test process, behind a recorder that writes down
//! every JSON-RPC message POSTed to it: what an upstream really received, for tests that must
//! show that something did *not* reach it.

#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use toolgate_testkit::{Fixture, FixtureHub, FixtureOptions};

/// The largest body the recorder reads (the fixture's messages are small).
const BODY_LIMIT: usize = 4 * 1024 * 1024;

/// One message the upstream received: its method, and for `tools/call` the tool's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    pub method: String,
    pub tool: Option<String>,
}

/// The resources a message asks to follow (`resources/subscribe`, `subscriptions/listen`).
fn resources_named(message: &Value) -> Vec<String> {
    let named = match message["method"].as_str() {
        Some("resources/subscribe") => Value::Array(vec![message["params"]["uri"].clone()]),
        Some("subscriptions/listen") => {
            message["params"]["notifications"]["resourceSubscriptions"].clone()
        }
        _ => Value::Null,
    };
    named
        .as_array()
        .map(|uris| uris.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

impl Received {
    fn of(message: &Value) -> Option<Received> {
        let method = message.get("method")?.as_str()?.to_owned();
        let tool = (method == "tools/call")
            .then(|| message["params"]["name"].as_str().map(str::to_owned))
            .flatten();
        Some(Received { method, tool })
    }
}

/// The fixture at `url`, recording; stops when dropped.
pub struct RecordingUpstream {
    pub url: String,
    log: watch::Sender<Vec<Received>>,
    /// Every resource the upstream was asked to follow, in order (repeated when asked again).
    resources: watch::Sender<Vec<String>>,
    /// The `Authorization` header of every request, when it had one.
    authorizations: watch::Sender<Vec<String>>,
    stop: CancellationToken,
}

/// What the recorder writes down.
#[derive(Clone)]
struct Logs {
    received: watch::Sender<Vec<Received>>,
    resources: watch::Sender<Vec<String>>,
    authorizations: watch::Sender<Vec<String>>,
}

impl RecordingUpstream {
    pub async fn start() -> RecordingUpstream {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address");
        let stop = CancellationToken::new();
        let (log, _) = watch::channel(Vec::new());
        let (resources, _) = watch::channel(Vec::new());
        let (authorizations, _) = watch::channel(Vec::new());
        let logs = Logs {
            received: log.clone(),
            resources: resources.clone(),
            authorizations: authorizations.clone(),
        };
        let hub = FixtureHub::new();
        let options = Arc::new(FixtureOptions::default());
        let service = StreamableHttpService::new(
            move || Ok(Fixture::with_hub(options.clone(), hub.clone())),
            LocalSessionManager::default().into(),
            StreamableHttpServerConfig::default().with_cancellation_token(stop.child_token()),
        );
        let app = axum::Router::new()
            .nest_service("/mcp", service)
            .layer(axum::middleware::from_fn_with_state(logs, record));
        let shutdown = stop.clone();
        tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(shutdown.cancelled_owned())
                .await
                .expect("the recording upstream serves");
        });
        RecordingUpstream {
            url: format!("http://{address}/mcp"),
            log,
            resources,
            authorizations,
            stop,
        }
    }

    /// The `Authorization` headers of every request so far, in order.
    pub fn authorizations(&self) -> Vec<String> {
        self.authorizations.borrow().clone()
    }

    /// Everything received so far, in order.
    pub fn received(&self) -> Vec<Received> {
        self.log.borrow().clone()
    }

    /// The tools called so far, in order.
    pub fn tools_called(&self) -> Vec<String> {
        self.received().into_iter().filter_map(|r| r.tool).collect()
    }

    /// Every resource the upstream was asked to follow so far.
    pub fn resources_named(&self) -> Vec<String> {
        self.resources.borrow().clone()
    }

    /// Waits (bounded) until the upstream was asked to follow every one of `uris`.
    pub async fn wait_for_resources(&self, uris: &[&str]) {
        let mut named = self.resources.subscribe();
        let reached = |named: &Vec<String>| uris.iter().all(|uri| named.iter().any(|n| n == uri));
        tokio::time::timeout(std::time::Duration::from_secs(30), named.wait_for(reached))
            .await
            .unwrap_or_else(|_| panic!("never asked to follow {uris:?}: {:?}", self.received()))
            .expect("the recorder lives as long as the upstream");
    }

    /// Waits (bounded) until `method` has been received `times` times in all.
    pub async fn wait_for_method(&self, method: &str, times: usize) {
        let mut log = self.log.subscribe();
        let reached =
            |log: &Vec<Received>| log.iter().filter(|r| r.method == method).count() >= times;
        tokio::time::timeout(std::time::Duration::from_secs(30), log.wait_for(reached))
            .await
            .unwrap_or_else(|_| {
                panic!("{method} was not received {times} times: {:?}", self.received())
            })
            .expect("the recorder lives as long as the upstream");
    }

    /// Waits (bounded) until `tool` has been called `times` times in all.
    pub async fn wait_for_calls(&self, tool: &str, times: usize) {
        let mut log = self.log.subscribe();
        let reached = |log: &Vec<Received>| {
            log.iter().filter(|r| r.tool.as_deref() == Some(tool)).count() >= times
        };
        tokio::time::timeout(std::time::Duration::from_secs(30), log.wait_for(reached))
            .await
            .unwrap_or_else(|_| {
                panic!("{tool} was not called {times} times: {:?}", self.received())
            })
            .expect("the recorder lives as long as the upstream");
    }
}

impl Drop for RecordingUpstream {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Writes down each JSON-RPC message of a POST body (one message or a batch), then hands the
/// request on unchanged.
async fn record(State(logs): State<Logs>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    if let Some(value) = parts.headers.get(axum::http::header::AUTHORIZATION) {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        logs.authorizations.send_modify(|seen| seen.push(value));
    }
    let bytes = axum::body::to_bytes(body, BODY_LIMIT).await.expect("a body within the limit");
    if let Ok(json) = serde_json::from_slice::<Value>(&bytes) {
        let messages = match json {
            Value::Array(batch) => batch,
            one => vec![one],
        };
        logs.resources.send_modify(|named| named.extend(messages.iter().flat_map(resources_named)));
        logs.received.send_modify(|log| log.extend(messages.iter().filter_map(Received::of)));
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}
