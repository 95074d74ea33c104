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
