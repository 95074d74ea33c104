//! toolgate's connections to upstream MCP servers (see ARCHITECTURE.md, `toolgate-upstream`).
//!
//! - [`Upstream`]: one connected server (stdio child, streamable HTTP, or legacy SSE) and
//!   calls to it;
//! - [`connect_all`]: every configured server, concurrently, each with its own start-up timeout,
//!   waiting for all of them or, as [`StartupWait`] says, only for the required ones;
//! - [`Inventory`]: what they offer, merged under the names clients see.

mod call;
mod call_table;
mod catalog;
mod cause;
mod connect;
pub mod egress;
mod error;
mod event;
mod handler;
mod http_client;
mod in_process;
pub mod inventory;
mod progress;
mod progress_ledger;
mod raw;
mod shared;
mod signin;
mod sse;
mod stdio;
mod stream_mark;
mod trace;
mod upstream;

use std::sync::Arc;
use std::time::Duration;

use toolgate_config::ServerConfig;

pub use call::{CallOptions, Caller, RoundRefused, unsupported};
pub use catalog::Catalog;
pub use connect::UpstreamInfo;
pub use egress::EgressError;
pub use error::{ConnectError, Endpoint, ExitReason, StderrTail, UpstreamError};
pub use event::{ChangedLists, EventSender, UpstreamEvent};
pub use in_process::InProcessServer;
pub use inventory::{Collision, Contribution, Inventory, Route};
pub use raw::{RawToolResult, ToolAnswer};
pub use signin::sign_in_target;
pub use sse::{SseError, SseTransport};
pub use stdio::{child_environment, child_environment_names};
pub use toolgate_oauth::Logins;
pub use upstream::{HARD_TIMEOUT_FACTOR, UNKNOWN_TOOL_GAP, Upstream};

/// The outcome of starting every enabled server.
#[derive(Debug, Default)]
pub struct Connected {
    /// Every enabled server, in config order, connected or not: those that failed keep
    /// retrying in the background, and those still starting go on starting.
    pub upstreams: Vec<Arc<Upstream>>,
    /// Servers whose first attempt failed, with why.
    pub failed: Vec<UpstreamError>,
    /// Servers whose first attempt had not ended when [`connect_all`] stopped waiting (only
    /// with [`StartupWait::Bounded`]): they join when they connect.
    pub starting: Vec<String>,
}

/// How long [`connect_all`] waits for the servers' first connection attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartupWait {
    /// Until every server's first attempt has ended (each within its own `startup_timeout`):
    /// for one-shot commands, which want every server.
    All,
    /// Until every `required` server's first attempt has ended, and at most this long for
    /// the others: for `serve`, so that one slow server does not hold up the rest.
    Bounded(Duration),
}

/// Starts every enabled server at once and waits for their first attempts as `wait` says.
/// Start-up costs about the slowest server waited for, not the sum; each server has its own
/// `startup_timeout`.
pub async fn connect_all(
    servers: &[ServerConfig],
    events: Option<EventSender>,
    wait: StartupWait,
) -> Connected {
    connect_all_with(servers, events, wait, None).await
}

/// [`connect_all`], signing in to servers that ask for OAuth through `logins`.
pub async fn connect_all_with(
    servers: &[ServerConfig],
    events: Option<EventSender>,
    wait: StartupWait,
    logins: Option<&toolgate_oauth::Logins>,
) -> Connected {
    let upstreams: Vec<_> = servers
        .iter()
        .filter(|s| s.enabled)
        .map(|server| Upstream::start_with(server.clone(), events.clone(), logins))
        .collect();
    let deadline = match wait {
        StartupWait::All => None,
        StartupWait::Bounded(wait) => Some(tokio::time::Instant::now() + wait),
    };
    let outcomes = futures::future::join_all(upstreams.iter().map(|upstream| async move {
        match deadline {
            Some(deadline) if !upstream.config().required => {
                tokio::time::timeout_at(deadline, upstream.ready()).await.ok()
            }
            _ => Some(upstream.ready().await),
        }
    }))
    .await;
    let mut connected = Connected::default();
    for (upstream, outcome) in upstreams.iter().zip(outcomes) {
        match outcome {
            Some(Ok(())) => {}
            Some(Err(error)) => connected.failed.push(error),
            None => connected.starting.push(upstream.name().to_owned()),
        }
    }
    connected.upstreams = upstreams;
    connected
}

/// A server inside toolgate to start as an upstream: its config (transport
/// [`toolgate_config::TransportConfig::InProcess`]) and the server.
pub type InProcess = (ServerConfig, Arc<dyn InProcessServer>);

/// Starts every server in `servers` as an upstream inside the process and waits for their
/// first connections (they take no time), as [`connect_all`] does with [`StartupWait::All`].
pub async fn connect_in_process(servers: Vec<InProcess>, events: Option<EventSender>) -> Connected {
    let upstreams: Vec<_> = servers
        .into_iter()
        .map(|(config, server)| Upstream::start_in_process(config, server, events.clone()))
        .collect();
    let outcomes = futures::future::join_all(upstreams.iter().map(|u| u.ready())).await;
    let failed = outcomes.into_iter().filter_map(Result::err).collect();
    Connected { upstreams, failed, starting: Vec::new() }
}
