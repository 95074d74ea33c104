//! Servers pinned to one replica (`[servers.NAME] replica = "a"`): a stateful server (a
//! memory, a browser, a database session) runs on the replica `[state] replica` names `a`
//! only, and every other replica reaches it through the shared state, so any replica still
//! answers any request.
//!
//! - [`host`]: the replica that runs it says so (a key it renews), publishes what the server
//!   offers, and runs the requests the others send it;
//! - [`remote`]: every other replica serves it as a server inside the process, listing what
//!   was published and relaying each request;
//! - [`wire`]: the keys and channels between them.
//!
//! Nothing here elects or moves anything: which replica runs a server is the config's word.
//! While that replica is down, the others keep listing what it last offered, and its server's
//! requests fail at once, saying which replica to wait for.

mod host;
mod remote;
mod wire;

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::{CancellationToken, DropGuard};
use toolgate_config::{InProcessConfig, ServerConfig, TransportConfig};
use toolgate_state::{SharedState, Subscription};

use crate::InProcess;
use crate::gateway::Gateway;

/// How often things happen between the replicas (the defaults unless a test says).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// How often the running replica renews its alive key (and checks its offer).
    pub heartbeat: Duration,
    /// How long the alive key lives unless renewed: how soon the others notice a replica
    /// that died.
    pub alive_ttl: Duration,
    /// How long the published offer lives unless rewritten.
    pub offer_ttl: Duration,
    /// How often the other replicas read the alive key, and look for an answer whose
    /// message the bus lost.
    pub poll: Duration,
    /// How long an answer waits to be read.
    pub answer_ttl: Duration,
}

impl Default for Timing {
    fn default() -> Timing {
        Timing {
            heartbeat: Duration::from_secs(2),
            alive_ttl: Duration::from_secs(8),
            offer_ttl: Duration::from_secs(60),
            poll: Duration::from_secs(1),
            answer_ttl: Duration::from_secs(120),
        }
    }
}

/// This replica's share of the pinned servers: which configured servers it starts, which it
/// reaches on another replica, and the tasks that do it (stopped when this is dropped).
pub struct Pins {
    /// Servers this replica starts: every enabled server not pinned elsewhere.
    local: Vec<ServerConfig>,
    /// Servers pinned here.
    hosted: Vec<String>,
    /// Servers pinned to another replica.
    remote: Vec<(ServerConfig, Arc<remote::Remote>)>,
    /// This replica's name.
    replica: Option<String>,
    state: Option<SharedState>,
    timing: Timing,
    shutdown: CancellationToken,
    _stop: DropGuard,
}

impl std::fmt::Debug for Pins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pins")
            .field("hosted", &self.hosted)
            .field("remote", &self.remote.iter().map(|(c, _)| &c.name).collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Pins {
    /// Divides `servers` for the replica named `replica`, sharing `state`. Without a shared
    /// state every server is started here, pinned or not (one process: the config check
    /// refuses pins without a shared backend, so this is a program that built its config by
    /// hand).
    pub fn new(
        servers: &[ServerConfig],
        replica: Option<&str>,
        state: Option<SharedState>,
        timing: Timing,
    ) -> Pins {
        let shutdown = CancellationToken::new();
        let mut pins = Pins {
            local: Vec::new(),
            hosted: Vec::new(),
            remote: Vec::new(),
            replica: replica.map(str::to_owned),
            state: state.clone(),
            timing,
            _stop: shutdown.clone().drop_guard(),
            shutdown,
        };
        for server in servers.iter().filter(|server| server.enabled) {
            match (&server.replica, &state) {
                (Some(owner), Some(state)) if Some(owner.as_str()) != replica => {
                    let remote = remote::Remote::start(
                        server,
                        owner.clone(),
                        state.clone(),
                        timing,
                        pins.shutdown.clone(),
                    );
                    pins.remote.push((reached_through(server, owner), remote));
                }
                (Some(_), Some(_)) => {
                    pins.hosted.push(server.name.clone());
                    pins.local.push(server.clone());
                }
                _ => pins.local.push(server.clone()),
            }
        }
        pins
    }

    /// The configured servers this replica starts itself.
    pub fn local_servers(&self) -> &[ServerConfig] {
        &self.local
    }

    /// The servers pinned to other replicas, as servers inside this process to start beside
    /// the configured ones.
    pub fn remote_servers(&self) -> Vec<InProcess> {
        self.remote
            .iter()
            .map(|(config, remote)| {
                let served: Arc<dyn toolgate_upstream::InProcessServer> =
                    Arc::new(remote::Served(remote.clone()));
                (config.clone(), served)
            })
            .collect()
    }

    /// Starts running the servers pinned here (upstreams of `gateway`) for the other
    /// replicas.
    pub fn attach(&self, gateway: &Arc<Gateway>) {
        let (Some(state), Some(replica)) = (&self.state, &self.replica) else { return };
        for server in &self.hosted {
            host::start(
                gateway,
                server.clone(),
                replica.clone(),
                state.clone(),
                self.timing,
                self.shutdown.clone(),
            );
        }
    }

    /// Stops every task (the running replica's alive key is deleted, so that the others stop
    /// waiting for it at once).
    pub fn stop(&self) {
        self.shutdown.cancel();
    }
}

/// `server` as this replica starts it: inside the process, served by the relay to `owner`.
/// `required` holds on the replica that runs it: this one does not refuse to start while that
/// one is not up yet.
fn reached_through(server: &ServerConfig, owner: &str) -> ServerConfig {
    ServerConfig {
        transport: TransportConfig::InProcess(InProcessConfig {
            origin: format!("replica {owner}").into(),
        }),
        required: false,
        ..server.clone()
    }
}

/// Subscribes to `channel`, trying again while the state is unavailable, until `shutdown`.
async fn subscribe(
    state: &SharedState,
    channel: &str,
    shutdown: &CancellationToken,
) -> Option<Subscription> {
    let mut pause = Duration::from_millis(100);
    loop {
        match state.subscribe(channel).await {
            Ok(subscription) => return Some(subscription),
            Err(error) => {
                tracing::debug!(channel, %error, "cannot listen on the shared state yet");
            }
        }
        tokio::select! {
            () = shutdown.cancelled() => return None,
            () = tokio::time::sleep(pause) => {}
        }
        pause = (pause * 2).min(Duration::from_secs(5));
    }
}

#[cfg(test)]
mod tests;
