//! An upstream's log message about a call reaches that call's caller, and no other: over
//! streamable HTTP by the response stream it came on (both protocol eras), and a message about
//! no call goes to the gateway's event channel. The fixture is served in this process.

#![allow(deprecated)] // logging is deprecated in 2026-07-28 (SEP-2577) but still spoken

use std::path::Path;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use toolgate_config::{FixedEnvironment, Format, ServerConfig};
use toolgate_core::mcp;
use toolgate_testkit::FixtureOptions;
use toolgate_upstream::{CallOptions, Caller, Upstream, UpstreamEvent};

/// A caller that keeps the data of the log messages it is given, and tells when progress
/// came.
#[derive(Default)]
struct Hears {
    logs: Mutex<Vec<Value>>,
    progressed: tokio::sync::Notify,
}

impl Caller for Hears {
    fn log(&self, params: mcp::LoggingMessageNotificationParam) -> BoxFuture<'static, ()> {
        self.logs.lock().expect("lock").push(params.data);
        Box::pin(async {})
    }

    fn progress(&self, _params: mcp::ProgressNotificationParam) -> BoxFuture<'static, ()> {
        self.progressed.notify_one();
        Box::pin(async {})
    }
}

impl Hears {
    fn heard(&self) -> Vec<Value> {
        self.logs.lock().expect("lock").clone()
    }
}

/// The fixture over streamable HTTP (`sse` false; it speaks 2026-07-28, which logs only on a
/// request's own stream) or legacy SSE (of the handshake era, with one stream for everything).
async fn fixture(stop: &CancellationToken, sse: bool) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let shutdown = stop.clone();
    tokio::spawn(async move {
        let options = FixtureOptions::default();
        let _ = if sse {
            toolgate_testkit::serve_sse(listener, shutdown, options).await
        } else {
            toolgate_testkit::serve_http(listener, shutdown, options).await
        };
    });
    if sse { format!("http://{address}/sse") } else { format!("http://{address}/mcp") }
}

fn config(url: &str) -> ServerConfig {
    let transport = if url.ends_with("/sse") { "sse" } else { "streamable-http" };
    let text = format!("[servers.fx]\nurl = \"{url}\"\ntransport = \"{transport}\"\n");
    let config =
        toolgate_config::parse_str(&text, Format::Toml, Path::new("."), &FixedEnvironment::new())
            .expect("a valid config");
    config.servers.into_iter().next().expect("one server")
}

async fn notes(upstream: &Upstream, caller: &Arc<Hears>, args: Value) {
    let params = mcp::CallToolRequestParams::new("notes")
        .with_arguments(args.as_object().cloned().expect("an object"));
    let options = CallOptions { caller: Some(caller.clone()), ..Default::default() };
    let result = upstream.call_tool(params, &options).await.expect("notes answers");
    assert_ne!(result.is_error, Some(true), "{result:?}");
}

#[tokio::test]
async fn a_log_about_a_call_reaches_its_caller_only() {
    let stop = CancellationToken::new();
    let url = fixture(&stop, false).await;
    let (events, _received) = tokio::sync::mpsc::unbounded_channel();
    let upstream = Upstream::start(config(&url), Some(events));
    upstream.ready().await.expect("connects");
    let (a, b) = (Arc::new(Hears::default()), Arc::new(Hears::default()));
    notes(&upstream, &a, json!({ "text": "for a" })).await;
    notes(&upstream, &b, json!({ "text": "for b" })).await;
    assert_eq!(a.heard(), [json!("for a")]);
    assert_eq!(b.heard(), [json!("for b")]);

    upstream.shutdown().await;
    stop.cancel();
}

#[tokio::test]
async fn a_log_about_a_call_reaches_its_caller_while_another_call_runs() {
    let stop = CancellationToken::new();
    let url = fixture(&stop, false).await;
    let upstream = Upstream::start(config(&url), None);
    upstream.ready().await.expect("connects");
    let (a, b) = (Arc::new(Hears::default()), Arc::new(Hears::default()));
    let slow = {
        let upstream = upstream.clone();
        let a = a.clone();
        tokio::spawn(async move {
            let params = mcp::CallToolRequestParams::new("slow").with_arguments(
                json!({ "steps": 3, "step_ms": 200 }).as_object().cloned().expect("an object"),
            );
            let options = CallOptions { caller: Some(a), ..Default::default() };
            upstream.call_tool(params, &options).await.expect("slow answers");
        })
    };
    // a's call is at the server once it reports progress.
    a.progressed.notified().await;
    notes(&upstream, &b, json!({ "text": "during a's call" })).await;
    slow.await.expect("joined");
    assert_eq!(a.heard(), Vec::<Value>::new());
    assert_eq!(b.heard(), [json!("during a's call")]);
    upstream.shutdown().await;
    stop.cancel();
}

#[tokio::test]
async fn a_log_about_no_call_goes_to_the_gateway_with_its_server_named() {
    let stop = CancellationToken::new();
    let url = fixture(&stop, true).await;
    let (events, mut received) = tokio::sync::mpsc::unbounded_channel();
    let upstream = Upstream::start(config(&url), Some(events));
    upstream.ready().await.expect("connects");
    let a = Arc::new(Hears::default());
    notes(&upstream, &a, json!({ "text": "for a" })).await;
    notes(&upstream, &a, json!({ "text": "of its own", "after_ms": 50 })).await;
    let (server, log) = loop {
        match received.recv().await.expect("the upstream's events") {
            UpstreamEvent::Log { upstream, params } => break (upstream, params),
            _ => continue,
        }
    };
    assert_eq!(server, "fx");
    assert_eq!(log.data, json!("of its own"));
    assert_eq!(log.logger.as_deref(), Some("fx/toolgate-fixture"), "prefixed with the server");
    assert_eq!(a.heard(), [json!("for a")], "a heard only about its call");
    upstream.shutdown().await;
    stop.cancel();
}
