//! `Upstream::restart` on a connected server (the fixture on streamable HTTP, in this
//! process): a call in flight fails saying the server was restarted, the events of a
//! reconnection are sent, the catalog is listed again and calls work; a server that is down is
//! tried again, and the failure returned.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::json;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use toolgate_config::{FixedEnvironment, Format, ServerConfig};
use toolgate_core::mcp;
use toolgate_testkit::FixtureOptions;
use toolgate_upstream::{CallOptions, Caller, Upstream, UpstreamError, UpstreamEvent};

fn config(url: &str) -> ServerConfig {
    let text = format!("[servers.fx]\nurl = \"{url}\"\nstartup_timeout = \"5s\"\n");
    let config =
        toolgate_config::parse_str(&text, Format::Toml, Path::new("."), &FixedEnvironment::new())
            .expect("a valid config");
    config.servers.into_iter().next().expect("one server")
}

/// A caller that says when its call reports progress: then the server is running it.
struct Progressing(Arc<tokio::sync::Notify>);

impl Caller for Progressing {
    fn progress(&self, _: mcp::ProgressNotificationParam) -> BoxFuture<'static, ()> {
        self.0.notify_one();
        Box::pin(async {})
    }
}

fn call(name: &str, arguments: serde_json::Value) -> mcp::CallToolRequestParams {
    mcp::CallToolRequestParams::new(name.to_owned())
        .with_arguments(arguments.as_object().cloned().expect("an object"))
}

/// The next connection event (others skipped).
async fn next_link_event(
    events: &mut tokio::sync::mpsc::UnboundedReceiver<UpstreamEvent>,
) -> UpstreamEvent {
    loop {
        let event = tokio::time::timeout(Duration::from_secs(20), events.recv())
            .await
            .expect("an event in time")
            .expect("the channel is open");
        if matches!(event, UpstreamEvent::Connected { .. } | UpstreamEvent::Disconnected { .. }) {
            return event;
        }
    }
}

#[tokio::test]
async fn a_restart_drops_the_connection_fails_calls_in_flight_and_connects_again() {
    let stop = CancellationToken::new();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
    let shutdown = stop.clone();
    tokio::spawn(async move {
        toolgate_testkit::serve_http(listener, shutdown, FixtureOptions::default()).await
    });
    let (sender, mut events) = tokio::sync::mpsc::unbounded_channel();
    let upstream = Upstream::start(config(&url), Some(sender));
    upstream.ready().await.expect("connects");
    assert!(matches!(next_link_event(&mut events).await, UpstreamEvent::Connected { .. }));

    let running = Arc::new(tokio::sync::Notify::new());
    let slow = {
        let upstream = upstream.clone();
        let caller: Arc<dyn Caller> = Arc::new(Progressing(running.clone()));
        tokio::spawn(async move {
            let params = call("slow", json!({"steps": 100, "step_ms": 100}));
            let options = CallOptions { caller: Some(caller), ..CallOptions::default() };
            upstream.call_tool(params, &options).await
        })
    };
    running.notified().await;
    upstream.restart().await.expect("back after the restart");
    let failed = tokio::time::timeout(Duration::from_secs(10), slow)
        .await
        .expect("the call in flight ends at once")
        .expect("joined")
        .expect_err("the call in flight fails");
    assert!(matches!(failed, UpstreamError::Restarted { .. }), "{failed:?}");
    let said = failed.to_string();
    assert!(said.contains("upstream fx: the server was restarted during"), "{said}");
    assert!(said.contains("`slow`"), "{said}");

    match next_link_event(&mut events).await {
        UpstreamEvent::Disconnected { reason, .. } => assert_eq!(reason, "restarted on request"),
        other => panic!("expected a disconnection, got {other:?}"),
    }
    assert!(matches!(next_link_event(&mut events).await, UpstreamEvent::Connected { .. }));
    assert!(upstream.is_connected());
    assert!(upstream.catalog().tools.iter().any(|t| t.name == "echo"), "listed again");
    let echo = upstream
        .call_tool(call("echo", json!({"text": "after"})), &CallOptions::default())
        .await
        .expect("echo answers after the restart");
    let text = echo.content.first().and_then(|b| b.as_text()).map(|t| t.text.clone());
    assert_eq!(text.as_deref(), Some("after"));

    // The server goes away: a restart tries again and says why it failed (what is not asserted
    // here: that it does not wait out the backoff first).
    stop.cancel();
    let down = tokio::time::timeout(Duration::from_secs(30), upstream.restart())
        .await
        .expect("a restart of a server that is gone ends")
        .expect_err("it does not come back");
    assert!(matches!(down, UpstreamError::NotBack { .. }), "{down:?}");
    assert!(!upstream.is_connected());
    let again = tokio::time::timeout(Duration::from_secs(10), upstream.restart())
        .await
        .expect("tried again")
        .expect_err("still gone");
    assert!(again.to_string().starts_with("upstream fx: restarted, but it did not come back:"));
    upstream.shutdown().await;
}
