//! The fixture on stdio: newline-delimited JSON-RPC on stdin/stdout, nothing else on stdout.

use rmcp::ServiceExt as _;

use crate::fixture::{Fixture, FixtureOptions};

/// Serves one session on this process's stdin/stdout and returns when the client hangs up.
///
/// Waits `opts.startup_delay` before reading the handshake.
pub async fn serve_stdio(opts: FixtureOptions) -> anyhow::Result<()> {
    tokio::time::sleep(opts.startup_delay).await;
    let running = Fixture::new(opts).serve(rmcp::transport::stdio()).await?;
    let reason = running.waiting().await?;
    tracing::debug!(?reason, "stdio session ended");
    Ok(())
}
