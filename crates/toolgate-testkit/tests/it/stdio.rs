//! The fixture handler over an in-memory stdio-like pipe.

use rmcp::ServiceExt as _;
use toolgate_testkit::{Fixture, FixtureOptions};

use crate::support::{self, Client, TestClient};

/// Serves `opts` on one end of a duplex pipe and connects `client` to the other.
async fn connect(opts: FixtureOptions, client: TestClient) -> Client {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        let running = Fixture::new(opts).serve(server_io).await?;
        running.waiting().await?;
        anyhow::Ok(())
    });
    support::connect(client, client_io).await
}

#[tokio::test]
async fn standard_assertions() {
    let (opts, client, mut observed) = support::setup();
    let client = connect(opts, client).await;
    support::standard_assertions(&client, &mut observed).await;
    client.cancel().await.expect("the client must shut down");
}

#[tokio::test]
async fn reports_configured_server_info() {
    let (opts, client, _observed) = support::setup();
    let opts =
        FixtureOptions { name: "upstream-a".to_owned(), version: "9.9.9".to_owned(), ..opts };
    let client = connect(opts, client).await;
    let info = client.peer_info().expect("server info");
    let server = info.server_info.as_ref().expect("serverInfo");
    assert_eq!((server.name.as_str(), server.version.as_str()), ("upstream-a", "9.9.9"));
}

#[tokio::test]
async fn spawn_child_returns_a_live_pid() {
    let (opts, client, _observed) = support::setup();
    let client = connect(opts, client).await;
    let result = support::call(&client, "spawn_child", serde_json::json!({})).await;
    let pid: u32 = support::only_text(&result).parse().expect("a pid");
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists(), "pid {pid} must be alive");
    let status = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("kill must run");
    assert!(status.success());
}

#[tokio::test]
async fn extra_tools_are_listed_and_answered() {
    let (opts, client, _observed) = support::setup();
    let client = connect(FixtureOptions { extra_tools: 120, ..opts }, client).await;
    let tools = support::within("tools/list", client.list_all_tools()).await.expect("tools/list");
    let extra: Vec<&str> = tools
        .iter()
        .map(|tool| tool.name.as_ref())
        .filter(|name| name.len() == 5 && name.starts_with('t'))
        .collect();
    assert_eq!(extra.len(), 120, "extra tools listed: {extra:?}");
    assert!(extra.contains(&"t0000") && extra.contains(&"t0119"), "{extra:?}");
    assert!(tools.iter().any(|tool| tool.name == "echo"), "the fixture's own tools stay");
    let result = support::call(&client, "t0042", serde_json::json!({})).await;
    assert_eq!(support::only_text(&result), "t0042 called");
    assert_ne!(result.is_error, Some(true));
}
