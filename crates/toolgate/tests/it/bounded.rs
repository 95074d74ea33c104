//! Hostile clients cannot grow the gateway's memory: N requests, each with a new name, progress
//! token, subscription or session, leave its resident memory where the first N/10 of them (at
//! least 2000) left it.
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
    let refused = std::sync::atomic::AtomicUsize::new(0);
    assert_flat("sessions", gateway.pid(), |_| {
        let (http, url, initialize, refused) = (&http, &gateway.url, &initialize, &refused);
        async move {
            let response = http
                .post(url)
                .header("accept", "application/json, text/event-stream")
                .json(initialize)
                .timeout(Duration::from_secs(30))
                .send()
                .await
                .expect("the gateway answers");
            // 429 past the most one client address may hold (all of these come from one), 503
            // past the most the gateway keeps.
            let status = response.status();
            if status == reqwest::StatusCode::SERVICE_UNAVAILABLE
                || status == reqwest::StatusCode::TOO_MANY_REQUESTS
            {
                let body = response.text().await.unwrap_or_default();
                assert!(body.contains("open sessions"), "{body}");
                refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    })
    .await;
    assert!(
        refused.load(std::sync::atomic::Ordering::Relaxed) > 0,
        "past the most sessions, new ones are refused"
    );
    assert!(gateway.terminate().await.success());
}
