//! The gateway: one per process. It owns the upstream connections, the merged inventory and
//! the pipeline, and turns a request in exposed names into a request to the right upstream.
//!
//! Every path to an upstream (the MCP server on stdio or HTTP, `toolgate call`) goes through
//! its methods, and every method runs the pipeline: `dispatch` has the requests clients make,
//! `relay` the requests upstreams send back, `subscriptions` and `log_level` what clients ask
//! to follow, and `events` what the upstreams report.

#![allow(deprecated)] // logging is deprecated in 2026-07-28 (SEP-2577) but still spoken

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock, Weak};

use toolgate_config::ServerConfig;
use toolgate_core::mcp;
use toolgate_intercept::Pipeline;
use toolgate_upstream::{
    Connected, Contribution, EventSender, InProcessServer, Inventory, StartupWait, Upstream,
    UpstreamError,
};

use crate::error::GatewayError;
use crate::record::Recorder;
use crate::session::Sessions;

mod dispatch;
mod dynamic;
mod events;
pub(crate) mod exchange;
mod freshness;
mod log_level;
mod notification;
mod per_caller;
mod relay;
mod subscriptions;
pub(crate) mod tool_json;

pub use crate::session::SubscriptionBounds;
pub use dispatch::{INTERCEPTORS_LIST, interceptors_list};
pub use dynamic::{DynamicHandle, DynamicServer, PoolSettings, PoolStats};
use subscriptions::ResourceSubscriptions;

/// A server whose first connection attempt failed (it keeps retrying in the background).
#[derive(Debug, Clone)]
pub struct FailedUpstream {
    /// Its name.
    pub name: String,
    /// Why, with its whole cause chain.
    pub reason: String,
}

/// The upstreams, by name and in order; swapped whole when one joins or leaves.
#[derive(Debug, Default)]
struct Upstreams {
    by_name: HashMap<Arc<str>, Arc<Upstream>>,
    /// Config order, then those that joined later in the order they joined.
    ordered: Vec<Arc<Upstream>>,
}

impl Upstreams {
    fn new(ordered: Vec<Arc<Upstream>>) -> Upstreams {
        let by_name = ordered.iter().map(|u| (Arc::<str>::from(u.name()), u.clone())).collect();
        Upstreams { by_name, ordered }
    }
}

pub use toolgate_upstream::InProcess;

/// Upstreams, inventory, sessions, and dispatch.
#[derive(Debug)]
pub struct Gateway {
    upstreams: RwLock<Arc<Upstreams>>,
    /// Where upstreams report, for those that join later.
    upstream_events: EventSender,
    failed: Vec<FailedUpstream>,
    /// Servers still starting when the gateway began serving.
    starting: Vec<String>,
    inventory: RwLock<Arc<Inventory>>,
    sessions: Sessions,
    /// Downstream subscriptions per upstream resource: the upstream is subscribed once.
    subscriptions: ResourceSubscriptions,
    /// How much one session or listen stream may follow.
    subscription_bounds: RwLock<SubscriptionBounds>,
    pipeline: Pipeline,
    /// Where events go.
    recorder: Arc<Recorder>,
    /// The log level last sent to the upstreams.
    upstream_log_level: Mutex<Option<mcp::LoggingLevel>>,
    /// Requests being relayed now, for a graceful shutdown.
    in_flight: tokio::sync::watch::Sender<usize>,
    /// The people at the clients of script tool calls now running.
    askers: crate::askers::Askers,
    /// Which servers each caller reaches (`[tenants]`).
    tenants: RwLock<Arc<crate::Tenants>>,
    /// The per-caller connections to servers that sign in each caller, when any does.
    per_caller: Option<per_caller::PerCaller>,
    /// The servers requests name by URL, connected for their callers.
    dynamic: dynamic::DynamicPool,
    /// Itself, for the handles of dynamic servers.
    me: Weak<Gateway>,
    /// Each change of the inventory's lists, for whoever tells other replicas
    /// ([`Gateway::watch_lists`]).
    lists: tokio::sync::broadcast::Sender<crate::session::Changed>,
}

/// Changes of the lists a watcher may fall behind by before it loses the oldest.
const LISTS_BACKLOG: usize = 16;

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
        Gateway::start_with(servers, Vec::new(), wait, pipeline, recorder, None).await
    }

    /// [`Gateway::start`] with servers inside the process beside the configured ones, after
    /// them (their first connection is always waited for: it takes no time), signing in to
    /// servers that ask for OAuth through `logins`.
    pub async fn start_with(
        servers: &[ServerConfig],
        in_process: Vec<InProcess>,
        wait: StartupWait,
        pipeline: Pipeline,
        recorder: Recorder,
        logins: Option<&toolgate_upstream::Logins>,
    ) -> Arc<Gateway> {
        let (events, receiver) = tokio::sync::mpsc::unbounded_channel();
        let mut connected =
            toolgate_upstream::connect_all_with(servers, Some(events.clone()), wait, logins).await;
        let local = toolgate_upstream::connect_in_process(in_process, Some(events.clone())).await;
        for error in &local.failed {
            tracing::warn!(%error, "an in-process server did not start");
        }
        connected.upstreams.extend(local.upstreams);
        connected.failed.extend(local.failed);
        let per_caller = logins
            .filter(|_| servers.iter().any(per_caller::signs_in_each_caller))
            .map(|logins| per_caller::PerCaller::new(logins.clone()));
        let mut gateway = Gateway::new(connected, events, pipeline, recorder);
        gateway.per_caller = per_caller;
        let gateway = Arc::new_cyclic(|me| Gateway { me: me.clone(), ..gateway });
        events::follow(Arc::downgrade(&gateway), receiver);
        gateway
    }

    fn new(
        connected: Connected,
        upstream_events: EventSender,
        pipeline: Pipeline,
        recorder: Recorder,
    ) -> Gateway {
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
            upstreams: RwLock::new(Arc::new(Upstreams::new(connected.upstreams))),
            upstream_events,
            failed,
            starting: connected.starting,
            inventory: RwLock::new(inventory),
            sessions: Sessions::default(),
            subscriptions: ResourceSubscriptions::default(),
            subscription_bounds: RwLock::default(),
            pipeline,
            recorder: Arc::new(recorder),
            upstream_log_level: Mutex::default(),
            in_flight: tokio::sync::watch::Sender::new(0),
            askers: crate::askers::Askers::default(),
            tenants: RwLock::default(),
            per_caller: None,
            dynamic: dynamic::DynamicPool::default(),
            me: Weak::new(),
            lists: tokio::sync::broadcast::channel(LISTS_BACKLOG).0,
        }
    }

    /// Sets the URL clients reach the gateway at (`[gateway] public_url`): authorization
    /// servers send the callers of servers that sign in each caller back to its
    /// `/oauth/callback`.
    pub fn set_public_url(&self, url: Option<&url::Url>) {
        if let Some(per_caller) = &self.per_caller {
            per_caller.set_public_url(url);
        }
    }

    /// Finishes a caller's sign-in to a server that signs in each caller, from the query of
    /// the redirect to `/oauth/callback`. Returns the server signed in to.
    pub async fn complete_sign_in(
        &self,
        query: &[(String, String)],
    ) -> Result<toolgate_oauth::Finished, toolgate_oauth::LoginError> {
        match &self.per_caller {
            Some(per_caller) => per_caller.complete(query).await,
            None => Err(toolgate_oauth::LoginError::Refused {
                error: "unknown_sign_in".into(),
                description: "no server of this gateway signs in each caller".into(),
            }),
        }
    }

    /// Deletes the upstream tokens of `principal` (as `kind:id@tenant`) for `server` and
    /// closes their connection: an administrator's revocation. Returns whether there were
    /// tokens.
    pub fn revoke_sign_in(
        &self,
        server: &str,
        principal: &str,
    ) -> Result<bool, toolgate_oauth::VaultError> {
        match &self.per_caller {
            Some(per_caller) => per_caller.revoke(server, principal),
            None => Ok(false),
        }
    }

    /// Sets which servers each caller reaches (`[tenants]`); none set: every caller reaches
    /// every server.
    pub fn set_tenants(&self, tenants: crate::Tenants) {
        *self.tenants.write().expect("tenants lock must not be poisoned") = Arc::new(tenants);
    }

    /// Which servers each caller reaches.
    pub fn tenants(&self) -> Arc<crate::Tenants> {
        self.tenants.read().expect("tenants lock must not be poisoned").clone()
    }

    /// The current inventory snapshot.
    pub fn inventory(&self) -> Arc<Inventory> {
        self.inventory.read().expect("inventory lock must not be poisoned").clone()
    }

    /// Every enabled upstream, connected or not, in config order (then those that joined
    /// later, as they joined).
    pub fn upstreams(&self) -> Vec<Arc<Upstream>> {
        self.upstream_set().ordered.clone()
    }

    fn upstream_set(&self) -> Arc<Upstreams> {
        self.upstreams.read().expect("upstreams lock must not be poisoned").clone()
    }

    /// Starts `server`, a server inside the process, as an upstream named as `config` says,
    /// and waits for its first connection; its offer is in the inventory when this returns
    /// (with `list_changed` to the sessions). Refused when an upstream of that name exists.
    pub async fn add_in_process(
        &self,
        config: ServerConfig,
        server: Arc<dyn InProcessServer>,
    ) -> Result<(), UpstreamError> {
        let name = config.name.clone();
        let upstream = {
            let mut upstreams =
                self.upstreams.write().expect("upstreams lock must not be poisoned");
            if upstreams.by_name.contains_key(name.as_str()) {
                return Err(UpstreamError::Connect {
                    upstream: name,
                    error: toolgate_upstream::ConnectError::Duplicate,
                });
            }
            let upstream =
                Upstream::start_in_process(config, server, Some(self.upstream_events.clone()));
            let mut ordered = upstreams.ordered.clone();
            ordered.push(upstream.clone());
            *upstreams = Arc::new(Upstreams::new(ordered));
            upstream
        };
        let ready = upstream.ready().await;
        match &ready {
            // In the inventory before this returns (the event of its connection rebuilds it
            // too, later, and then finds nothing changed), so that whoever added it may call
            // its tools at once.
            Ok(()) => {
                let every = crate::session::Changed { tools: true, prompts: true, resources: true };
                self.rebuild(every).await;
            }
            Err(_) => {
                self.remove_upstream(&name).await;
            }
        }
        ready
    }

    /// Stops the upstream `name` and takes it out of the inventory (with `list_changed` to
    /// the sessions); false when there is none.
    pub async fn remove_upstream(&self, name: &str) -> bool {
        let removed = {
            let mut upstreams =
                self.upstreams.write().expect("upstreams lock must not be poisoned");
            let Some(removed) = upstreams.by_name.get(name).cloned() else { return false };
            let ordered =
                upstreams.ordered.iter().filter(|u| !Arc::ptr_eq(u, &removed)).cloned().collect();
            *upstreams = Arc::new(Upstreams::new(ordered));
            removed
        };
        removed.shutdown().await;
        self.rebuild(crate::session::Changed { tools: true, prompts: true, resources: true }).await;
        true
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

    /// The downstream sessions: a front adds each session it opens, and each
    /// `subscriptions/listen` stream.
    pub fn sessions(&self) -> &Sessions {
        &self.sessions
    }

    /// The interceptors every request passes.
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// The people at the clients of script tool calls now running.
    pub(crate) fn askers(&self) -> &crate::askers::Askers {
        &self.askers
    }

    /// Each change of the inventory's lists from now on, as the sessions are told of it (a
    /// watcher that falls more than a few changes behind loses the oldest).
    pub fn watch_lists(&self) -> tokio::sync::broadcast::Receiver<crate::session::Changed> {
        self.lists.subscribe()
    }

    /// Tells every session and listen stream that `changed` changed somewhere else (another
    /// replica's inventory): not recorded, and not passed to [`Gateway::watch_lists`].
    pub async fn notify_lists_changed(&self, changed: crate::session::Changed) {
        if changed.any() {
            self.sessions.notify_changed(changed).await;
        }
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

    /// Ends every upstream connection and child process, the dynamic servers' too.
    pub async fn shutdown(&self) {
        let upstreams = self.upstream_set();
        let configured = futures::future::join_all(upstreams.ordered.iter().map(|u| u.shutdown()));
        futures::future::join(configured, self.dynamic.close_everything()).await;
    }

    /// The upstream named `server`.
    pub(crate) fn upstream(&self, server: &str) -> Result<Arc<Upstream>, GatewayError> {
        self.upstream_set().by_name.get(server).cloned().ok_or_else(|| {
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
