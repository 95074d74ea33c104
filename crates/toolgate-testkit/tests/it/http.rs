//! The fixture on streamable HTTP, in process.

use rmcp::transport::StreamableHttpClientTransport;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use toolgate_testkit::{FixtureOptions, serve_http};

use crate::support;

/// Starts the server on 127.0.0.1:0; returns its URL and the server task.
pub(crate) async fn start(
    opts: FixtureOptions,
    shutdown: CancellationToken,
) -> (String, tokio::task::JoinHandle<anyhow::Result<()>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    let server = tokio::spawn(serve_http(listener, shutdown, opts));
    (format!("http://{addr}/mcp"), server)
}

#[tokio::test]
async fn standard_assertions() {
    let (opts, client, mut observed) = support::setup();
    let shutdown = CancellationToken::new();
    let (url, server) = start(opts, shutdown.clone()).await;
    let client = support::connect(client, StreamableHttpClientTransport::from_uri(url)).await;
    support::standard_assertions(&client, &mut observed).await;

    client.cancel().await.expect("the client must shut down");
    shutdown.cancel();
    let result = support::within("server shutdown", server).await;
    result.expect("the server task must not panic").expect("the server must shut down cleanly");
}

#[tokio::test]
async fn shutdown_closes_open_sessions() {
    let (opts, client, _observed) = support::setup();
    let shutdown = CancellationToken::new();
    let (url, server) = start(opts, shutdown.clone()).await;
    let client = support::connect(client, StreamableHttpClientTransport::from_uri(url)).await;

    shutdown.cancel();
    let result = support::within("server shutdown", server).await;
    result.expect("the server task must not panic").expect("the server must shut down cleanly");
    drop(client);
}
