//! toolgate's connections to upstream MCP servers (see ARCHITECTURE.md, `toolgate-upstream`).
//!
//! - [`Upstream`]: one connected server (stdio child, streamable HTTP, or legacy SSE) and
//!   calls to it;
//! - [`connect_all`]: every configured server, concurrently, each with its own start-up timeout;
//! - [`Inventory`]: what they offer, merged under the names clients see.

mod error;
mod handler;
pub mod inventory;
mod sse;
mod stdio;
mod upstream;

use std::sync::Arc;

use toolgate_config::ServerConfig;

pub use error::{BothTransportsFailed, StderrTail, UpstreamError};
pub use inventory::{Collision, Contribution, Inventory, Route};
pub use sse::{SseError, SseTransport};
pub use upstream::{Catalog, Upstream, UpstreamInfo};

/// The outcome of starting every enabled server.
#[derive(Debug, Default)]
pub struct Connected {
    /// Servers that are up, in config order.
    pub upstreams: Vec<Arc<Upstream>>,
    /// Servers that failed, with why.
    pub failed: Vec<UpstreamError>,
}

/// Connects to every enabled server at once. Start-up costs about the slowest server, not the
/// sum; each server has its own `startup_timeout`.
pub async fn connect_all(servers: &[ServerConfig]) -> Connected {
    let attempts = servers.iter().filter(|s| s.enabled).map(|server| async move {
        let result = Upstream::connect(server).await;
        match &result {
            Ok(up) => tracing::info!(
                upstream = %server.name,
                transport = up.info().transport,
                protocol = %up.info().protocol_version,
                tools = up.catalog().tools.len(),
                startup_ms = up.info().startup.as_millis() as u64,
                "upstream connected"
            ),
            Err(error) => tracing::warn!(
                upstream = %server.name,
                error = %toolgate_core::ErrorChain(error),
                "upstream failed to start"
            ),
        }
        result
    });
    let mut connected = Connected::default();
    for result in futures::future::join_all(attempts).await {
        match result {
            Ok(upstream) => connected.upstreams.push(Arc::new(upstream)),
            Err(error) => connected.failed.push(error),
        }
    }
    connected
}
