//! The gateway: one per process. It owns the upstream connections, the merged inventory and
//! the pipeline, and turns a request in exposed names into a request to the right upstream.
//!
//! Every path to an upstream (the MCP server on stdio or HTTP, `toolgate call`) goes through
//! its methods, and every method runs the pipeline: `dispatch` has the requests clients make,
//! `relay` the requests upstreams send back, `subscriptions` and `log_level` what clients ask
//! to follow, and `events` what the upstreams report.

#![allow(deprecated)] // logging is deprecated in 2026-07-28 (SEP-2577) but still spoken

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use toolgate_config::ServerConfig;
use toolgate_core::mcp;
use toolgate_intercept::Pipeline;
use toolgate_upstream::{Connected, Contribution, Inventory, StartupWait, Upstream, UpstreamError};

use crate::error::GatewayError;
use crate::record::Recorder;
use crate::session::Sessions;

mod dispatch;
mod events;
pub(crate) mod exchange;
mod log_level;
mod relay;
mod subscriptions;
mod tool_json;

use subscriptions::ResourceSubscriptions;

/// A server whose first connection attempt failed (it keeps retrying in the background).
#[derive(Debug, Clone)]
pub struct FailedUpstream {
    /// Its name.
    pub name: String,
    /// Why, with its whole cause chain.
    pub reason: String,
}

/// Upstreams, inventory, sessions, and dispatch.
#[derive(Debug)]
pub struct Gateway {
    upstreams: Arc<HashMap<Arc<str>, Arc<Upstream>>>,
    ordered: Vec<Arc<Upstream>>,
    failed: Vec<FailedUpstream>,
    /// Servers still starting when the gateway began serving.
    starting: Vec<String>,
    inventory: RwLock<Arc<Inventory>>,
    sessions: Sessions,
    /// Downstream subscriptions per upstream resource: the upstream is subscribed once.
    subscriptions: ResourceSubscriptions,
    pipeline: Pipeline,
    /// Where events go.
    recorder: Arc<Recorder>,
    /// The log level last sent to the upstreams.
    upstream_log_level: Mutex<Option<mcp::LoggingLevel>>,
    /// Requests being relayed now, for a graceful shutdown.
    in_flight: tokio::sync::watch::Sender<usize>,
    /// Calls of 2026-07-28 clients waiting for their answers to `input_required` rounds.
    rounds: crate::mrtr::Rounds,
    /// The tools of the inventory, written as JSON once.
    tool_json: tool_json::ToolJson,
}

/// Counts a request as in flight until dropped.
struct InFlightGuard<'a>(&'a tokio::sync::watch::Sender<usize>);

impl<'a> InFlightGuard<'a> {
    fn new(counter: &'a tokio::sync::watch::Sender<usize>) -> Self {
        counter.send_modify(|n| *n += 1);
        InFlightGuard(counter)
    }
}

impl Drop for InFlightGuard<'_> {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}

impl Gateway {
    /// Starts every enabled server in `servers`, waits for their first attempts as `wait`
    /// says, and starts following their events (servers still starting join when they
    /// connect, with `list_changed`). Every request passes `pipeline`; what happens is
    /// published through `recorder`.
    pub async fn start(
        servers: &[ServerConfig],
        wait: StartupWait,
        pipeline: Pipeline,
        recorder: Recorder,
    ) -> Arc<Gateway> {
        let (events, receiver) = tokio::sync::mpsc::unbounded_channel();
        let connected = toolgate_upstream::connect_all(servers, Some(events), wait).await;
        let gateway = Arc::new(Gateway::new(connected, pipeline, recorder));
        events::follow(Arc::downgrade(&gateway), receiver);
        gateway
    }

    fn new(connected: Connected, pipeline: Pipeline, recorder: Recorder) -> Gateway {
        let failed = connected
            .failed
            .iter()
            .map(|error| FailedUpstream {
                name: error.upstream().to_owned(),
                reason: toolgate_core::ErrorChain(error).to_string(),
            })
            .collect();
        let inventory = Arc::new(merge(&connected.upstreams));
        Gateway {
            upstreams: Arc::new(
                connected
                    .upstreams
                    .iter()
                    .map(|u| (Arc::<str>::from(u.name()), u.clone()))
                    .collect(),
            ),
            ordered: connected.upstreams,
            failed,
            starting: connected.starting,
            inventory: RwLock::new(inventory),
            sessions: Sessions::default(),
            subscriptions: ResourceSubscriptions::default(),
            pipeline,
            recorder: Arc::new(recorder),
            upstream_log_level: Mutex::default(),
            in_flight: tokio::sync::watch::Sender::new(0),
            rounds: crate::mrtr::Rounds::default(),
            tool_json: tool_json::ToolJson::default(),
        }
    }

    /// The current inventory snapshot.
    pub fn inventory(&self) -> Arc<Inventory> {
        self.inventory.read().expect("inventory lock must not be poisoned").clone()
    }

    /// Every enabled upstream, connected or not, in config order.
    pub fn upstreams(&self) -> &[Arc<Upstream>] {
        &self.ordered
    }

    /// Servers whose first connection attempt failed.
    pub fn failed(&self) -> &[FailedUpstream] {
        &self.failed
    }

    /// Servers whose first connection attempt had not ended when the gateway began serving
    /// (only when it did not wait for all; see [`StartupWait`]).
    pub fn starting(&self) -> &[String] {
        &self.starting
    }

    /// The downstream sessions.
    pub(crate) fn sessions(&self) -> &Sessions {
        &self.sessions
    }

    /// The interceptors every request passes.
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// Calls waiting for their clients' answers to `input_required` rounds.
    pub(crate) fn rounds(&self) -> &crate::mrtr::Rounds {
        &self.rounds
    }

    /// Where the gateway's events go.
    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    /// Waits until no request is being relayed, or `grace` has passed. Returns how many
    /// were still running.
    pub async fn drain(&self, grace: std::time::Duration) -> usize {
        let mut in_flight = self.in_flight.subscribe();
        let _ = tokio::time::timeout(grace, in_flight.wait_for(|n| *n == 0)).await;
        *in_flight.borrow()
    }

    /// Ends every upstream connection and child process.
    pub async fn shutdown(&self) {
        futures::future::join_all(self.ordered.iter().map(|u| u.shutdown())).await;
    }

    /// The upstream named `server`.
    fn upstream(&self, server: &str) -> Result<Arc<Upstream>, GatewayError> {
        self.upstreams.get(server).cloned().ok_or_else(|| {
            GatewayError::Upstream(UpstreamError::Disconnected { upstream: server.to_owned() })
        })
    }

    fn in_flight(&self) -> InFlightGuard<'_> {
        InFlightGuard::new(&self.in_flight)
    }
}

fn merge(upstreams: &[Arc<Upstream>]) -> Inventory {
    let catalogs: Vec<_> = upstreams.iter().map(|u| u.catalog()).collect();
    Inventory::build(upstreams.iter().zip(&catalogs).map(|(u, catalog)| Contribution {
        upstream: u.name(),
        prefix: &u.config().prefix,
        filter: &u.config().tools,
        catalog,
    }))
}

fn supports_subscriptions(upstream: &Upstream) -> bool {
    upstream
        .info()
        .and_then(|info| info.capabilities.resources)
        .is_some_and(|resources| resources.subscribe == Some(true))
}
