//! The fixture on streamable HTTP: rmcp's `StreamableHttpService` with stateful sessions,
//! mounted at `/mcp`.
//!
//! rmcp builds a [`Fixture`] per handshake-era session and per 2026-07-28 request (that era
//! is stateless); all of them share one [`FixtureHub`].

use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::fixture::{Fixture, FixtureOptions};
use crate::hub::FixtureHub;

/// Serves `http://<listener>/mcp` until `shutdown` is cancelled.
///
/// Waits `opts.startup_delay` before accepting connections (they queue meanwhile).
pub async fn serve_http(
    listener: TcpListener,
    shutdown: CancellationToken,
    opts: FixtureOptions,
) -> anyhow::Result<()> {
    if !delay_start(&opts, &shutdown).await {
        return Ok(());
    }
    let nagle = opts.nagle;
    let opts = Arc::new(opts);
    let hub = FixtureHub::new();
    let config =
        StreamableHttpServerConfig::default().with_cancellation_token(shutdown.child_token());
    let service = StreamableHttpService::new(
        move || Ok(Fixture::with_hub(opts.clone(), hub.clone())),
        LocalSessionManager::default().into(),
        config,
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    axum::serve(no_delay(listener, nagle), app)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await?;
    Ok(())
}

/// Sleeps `opts.startup_delay`; `false` if `shutdown` came first.
pub(crate) async fn delay_start(opts: &FixtureOptions, shutdown: &CancellationToken) -> bool {
    tokio::select! {
        () = shutdown.cancelled() => false,
        () = tokio::time::sleep(opts.startup_delay) => true,
    }
}

/// `listener` with Nagle's algorithm off on every accepted connection, so that a client that
/// keeps its connection open does not wait for its delayed ACK on every answer; unless `nagle`
/// asks for it to stay on ([`FixtureOptions::nagle`]).
pub(crate) fn no_delay(
    listener: tokio::net::TcpListener,
    nagle: bool,
) -> impl axum::serve::Listener<Addr = std::net::SocketAddr> {
    use axum::serve::ListenerExt as _;
    listener.tap_io(move |tcp| {
        if !nagle {
            let _ = tcp.set_nodelay(true);
        }
    })
}
