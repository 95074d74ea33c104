//! toolgate's connections to upstream MCP servers (see ARCHITECTURE.md, `toolgate-upstream`).
//!
//! - [`Upstream`]: one connected server (stdio child, streamable HTTP, or legacy SSE) and
//!   calls to it;
//! - [`connect_all`]: every configured server, concurrently, each with its own start-up timeout;
//! - [`Inventory`]: what they offer, merged under the names clients see.

mod call;
mod call_table;
mod catalog;
mod cause;
mod connect;
mod error;
mod event;
mod handler;
mod http_client;
pub mod inventory;
mod progress;
mod shared;
mod sse;
mod stdio;
mod upstream;

use std::sync::Arc;

use toolgate_config::ServerConfig;

pub use call::{CallOptions, Caller, unsupported};
pub use catalog::Catalog;
pub use connect::UpstreamInfo;
pub use error::{ConnectError, Endpoint, StderrTail, UpstreamError};
pub use event::{ChangedLists, EventSender, UpstreamEvent};
pub use inventory::{Collision, Contribution, Inventory, Route};
pub use sse::{SseError, SseTransport};
pub use upstream::{HARD_TIMEOUT_FACTOR, Upstream};

/// The outcome of starting every enabled server.
#[derive(Debug, Default)]
pub struct Connected {
    /// Every enabled server, in config order, connected or not: those that failed keep
    /// retrying in the background.
    pub upstreams: Vec<Arc<Upstream>>,
    /// Servers whose first attempt failed, with why.
    pub failed: Vec<UpstreamError>,
}

/// Starts every enabled server at once and waits for each one's first attempt. Start-up costs
/// about the slowest server, not the sum; each server has its own `startup_timeout`.
pub async fn connect_all(servers: &[ServerConfig], events: Option<EventSender>) -> Connected {
    let upstreams: Vec<_> = servers
        .iter()
        .filter(|s| s.enabled)
        .map(|server| Upstream::start(server.clone(), events.clone()))
        .collect();
    let outcomes = futures::future::join_all(upstreams.iter().map(|u| u.ready())).await;
    Connected { failed: outcomes.into_iter().filter_map(Result::err).collect(), upstreams }
}
