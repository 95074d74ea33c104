//! One upstream server: its supervised connection and what it offers. Requests to it are in
//! `requests`, the supervisor that connects and reconnects it in `supervise`.

use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use toolgate_config::ServerConfig;

use crate::catalog::Catalog;
use crate::connect::{Link, UpstreamInfo};
use crate::error::{ConnectError, UpstreamError};
use crate::event::EventSender;
use crate::shared::Shared;

mod refresh;
mod requests;
mod supervise;

pub use refresh::UNKNOWN_TOOL_GAP;

/// One upstream server, supervised: it is connected in the background and reconnected with
/// backoff when its process dies or its connection drops. While it reconnects its last
/// catalog stays listed and calls wait for it (up to its `restart_wait`); when a reconnection
/// fails, its catalog is emptied.
pub struct Upstream {
    config: ServerConfig,
    shared: Arc<Shared>,
    link: watch::Sender<LinkState>,
    last_error: Mutex<Option<String>>,
    first_attempt: watch::Receiver<Option<Result<(), ConnectError>>>,
    shutdown: CancellationToken,
    stopped: tokio::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Resources subscribed to; on 2026-07-28 connections they are part of the listen filter.
    subscribed: Mutex<std::collections::BTreeSet<String>>,
    /// Wakes the listen loop to reopen its stream with a new filter.
    refilter: tokio::sync::Notify,
    /// Counts changes of `subscribed`; the listen loop builds its filter from a generation.
    filter_generation: std::sync::atomic::AtomicU64,
    /// The generation of the filter whose listen stream is open now.
    listening: watch::Sender<u64>,
    /// Counts the restarts asked for ([`Upstream::restart`]); the supervisor follows it.
    restarts: watch::Sender<u64>,
    /// The outcome of the last connection attempt, and the restarts it answers (those
    /// counted when it ended).
    settled: watch::Sender<Settled>,
}

/// How a connection attempt ended, for the restarts waiting on it.
#[derive(Clone, Default)]
pub(crate) struct Settled {
    /// [`Upstream::restarts`] when it ended: the restarts up to this one are answered.
    pub(crate) restarts: u64,
    /// Why it failed, if it did.
    pub(crate) failed: Option<String>,
}

/// Whether an upstream can take requests now.
#[derive(Clone, Default)]
pub(crate) enum LinkState {
    /// The first connection attempt is under way.
    #[default]
    Starting,
    /// Connected.
    Up(Arc<Link>),
    /// The connection was lost and a new one is being made; the catalog is kept.
    Restarting,
    /// Not connected, nor about to be: the last attempt failed, or it was shut down.
    Down,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream").field("name", &self.config.name).finish_non_exhaustive()
    }
}

impl Upstream {
    /// Starts supervising the server `config` describes. Connection happens in the
    /// background; [`Upstream::ready`] waits for the first attempt.
    pub fn start(config: ServerConfig, events: Option<EventSender>) -> Arc<Upstream> {
        Upstream::start_with(config, events, None)
    }

    /// [`Upstream::start`], signing in to the server through `logins` when it asks for
    /// OAuth (an HTTP server whose config neither turns `oauth` off nor sends its own
    /// `Authorization` header). Without `logins`, a `401` is only an error.
    pub fn start_with(
        config: ServerConfig,
        events: Option<EventSender>,
        logins: Option<&toolgate_oauth::Logins>,
    ) -> Arc<Upstream> {
        let mut shared = Shared::new(config.name.clone(), events);
        shared.login = logins.and_then(|logins| crate::signin::login_for(&config, logins));
        Upstream::supervised(config, shared)
    }

    /// Starts supervising `server`, a server inside toolgate, as [`Upstream::start`] does a
    /// configured one; `config`'s transport says what it is
    /// ([`toolgate_config::TransportConfig::InProcess`]).
    pub fn start_in_process(
        config: ServerConfig,
        server: Arc<dyn crate::InProcessServer>,
        events: Option<EventSender>,
    ) -> Arc<Upstream> {
        let mut shared = Shared::new(config.name.clone(), events);
        shared.in_process = Some(server);
        Upstream::supervised(config, shared)
    }

    fn supervised(config: ServerConfig, shared: Shared) -> Arc<Upstream> {
        let (first_tx, first_attempt) = watch::channel(None);
        let upstream = Arc::new(Upstream {
            shared: Arc::new(shared),
            config,
            link: watch::Sender::new(LinkState::Starting),
            last_error: Mutex::new(None),
            first_attempt,
            shutdown: CancellationToken::new(),
            stopped: tokio::sync::Mutex::new(None),
            subscribed: Mutex::default(),
            refilter: tokio::sync::Notify::new(),
            filter_generation: std::sync::atomic::AtomicU64::new(0),
            listening: watch::Sender::new(0),
            restarts: watch::Sender::new(0),
            settled: watch::Sender::new(Settled::default()),
        });
        let task = tokio::spawn(upstream.clone().supervise(first_tx));
        if let Ok(mut stopped) = upstream.stopped.try_lock() {
            *stopped = Some(task);
        }
        refresh::start(&upstream);
        upstream
    }

    /// Connects once, without an event stream: for one-shot uses such as tests and clients.
    /// Fails with the reason of the first attempt; it is not retried.
    pub async fn connect(config: &ServerConfig) -> Result<Arc<Upstream>, UpstreamError> {
        Upstream::connect_with(config, None).await
    }

    /// [`Upstream::connect`], signing in through `logins` (see [`Upstream::start_with`]).
    pub async fn connect_with(
        config: &ServerConfig,
        logins: Option<&toolgate_oauth::Logins>,
    ) -> Result<Arc<Upstream>, UpstreamError> {
        let upstream = Upstream::start_with(config.clone(), None, logins);
        match upstream.ready().await {
            Ok(()) => Ok(upstream),
            Err(error) => {
                upstream.shutdown().await;
                Err(error)
            }
        }
    }

    /// Waits for the outcome of the first connection attempt.
    pub async fn ready(&self) -> Result<(), UpstreamError> {
        let mut first = self.first_attempt.clone();
        let outcome = match first.wait_for(Option::is_some).await {
            Ok(outcome) => outcome.clone(),
            Err(_) => Some(Err(ConnectError::Stopped)),
        };
        match outcome {
            Some(Ok(())) => Ok(()),
            Some(Err(error)) => {
                Err(UpstreamError::Connect { upstream: self.config.name.clone(), error })
            }
            None => Err(UpstreamError::Disconnected { upstream: self.config.name.clone() }),
        }
    }

    /// Whether it is a server inside toolgate ([`Upstream::start_in_process`]).
    pub fn is_in_process(&self) -> bool {
        self.shared.in_process.is_some()
    }

    /// The configured name.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// Its configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// What it said about itself when it last connected; `None` while it is down.
    pub fn info(&self) -> Option<UpstreamInfo> {
        self.current_link().map(|link| link.info.clone())
    }

    /// Why it is down, when it is.
    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().expect("last error lock").clone()
    }

    /// Whether its last connection attempt failed because it wants a login that toolgate has
    /// not got (`toolgate login NAME` mends it).
    pub fn needs_login(&self) -> bool {
        self.shared.needs_login.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether it is connected now.
    pub fn is_connected(&self) -> bool {
        self.current_link().is_some()
    }

    /// What it offers now (empty while it is down).
    pub fn catalog(&self) -> Arc<Catalog> {
        self.shared.catalog()
    }

    /// The tool it lists as `name` (its own name), as it lists it now.
    pub fn tool(&self, name: &str) -> Option<Arc<toolgate_core::mcp::Tool>> {
        self.shared.tool(name)
    }

    /// Drops the connection now and connects again at once, through the supervisor, as after
    /// a lost connection: a child process gets its input closed, is reaped, and its process
    /// group killed; requests in flight on the old connection fail with
    /// [`UpstreamError::Restarted`]; requests that come meanwhile wait for the new one (up to
    /// `restart_wait`); the catalog is listed again, and the events of any reconnection are
    /// sent. A server that is down is tried again now, without waiting out its backoff.
    ///
    /// Returns once a connection made since the call is up, or with why the attempt failed
    /// (the supervisor goes on trying, with backoff).
    pub async fn restart(&self) -> Result<(), UpstreamError> {
        let name = self.config.name.clone();
        let mut asked = 0;
        self.restarts.send_modify(|restarts| {
            *restarts += 1;
            asked = *restarts;
        });
        tracing::info!(upstream = %name, "restart asked for");
        let mut settled = self.settled.subscribe();
        // Time to close the old connection, and one attempt to end (it started before, at
        // worst) and then another.
        let limit = self.config.startup_timeout.saturating_mul(2) + RESTART_CLOSE_LIMIT;
        let outcome = tokio::select! {
            outcome = tokio::time::timeout(limit, settled.wait_for(|s| s.restarts >= asked)) => outcome,
            () = self.shutdown.cancelled() => return Err(UpstreamError::Disconnected { upstream: name }),
        };
        match outcome {
            Ok(Ok(settled)) => match settled.failed.clone() {
                None => Ok(()),
                Some(reason) => Err(UpstreamError::NotBack { upstream: name, reason }),
            },
            Ok(Err(_)) => Err(UpstreamError::Disconnected { upstream: name }),
            Err(_) => Err(UpstreamError::NotBack {
                upstream: name,
                reason: format!("no connection within {}", toolgate_core::duration::format(limit)),
            }),
        }
    }

    /// Stops supervising: ends the connection, and a child process and everything it started.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        if let Some(task) = self.stopped.lock().await.take() {
            let _ = task.await;
        }
    }

    fn current_link(&self) -> Option<Arc<Link>> {
        match &*self.link.borrow() {
            LinkState::Up(link) => Some(link.clone()),
            _ => None,
        }
    }

    /// Whether it is reconnecting now (its last catalog is still listed).
    pub fn is_restarting(&self) -> bool {
        matches!(*self.link.borrow(), LinkState::Restarting)
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// What a restart allows for closing the old connection (the supervisor's grace, and the
/// child's exit), beyond the connection attempts.
const RESTART_CLOSE_LIMIT: std::time::Duration = std::time::Duration::from_secs(15);

/// A request may run this many times its `timeout` in all, however much progress it reports.
pub const HARD_TIMEOUT_FACTOR: u32 = 10;
