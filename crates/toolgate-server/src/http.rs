//! The HTTP front: toolgate's own streamable HTTP server at `/mcp`, both protocol eras.
//!
//! A request is served from the task hyper runs it on: the body is read and parsed once
//! (`post`), the gateway is called from that task, and the answer goes back as one JSON body
//! unless something must come before it (`reply`). Sessions (2025-11-25 and before) are plain
//! data in a table (`sessions`, `session`): no task or channel per session, so an idle one
//! costs a few hundred bytes. 2026-07-28 requests have no session (`stateless`); their
//! `subscriptions/listen` streams are in `listen`. GET and DELETE are in `stream`, the events
//! of a stream and their resumption in `sse`. Who may talk to it at all is `guard`; what the
//! MCP headers must say, `headers`; who counts as one client for the bounds per client,
//! `client`. Who is calling is `auth`. With `[state] shared_key`, session ids are sealed
//! (`seal`), so that any replica behind a load balancer serves any session; with shared state
//! on a bus as well, `relay` carries between replicas the answers and notifications that
//! reach the wrong one, and changes of the lists.
//!
//! Everything a client can make it hold is bounded: sessions (in all and per client, idle ones
//! making room), listen streams (in all and per client), what each stream holds for a slow
//! reader, and how long a standing stream lasts (see README, "Security defaults"). The
//! connections themselves are bounded in `crate::connections`.

// A refusal is the HTTP response that says so, built on a cold path and returned as it is.
#![allow(clippy::result_large_err)]

mod auth;
mod client;
mod guard;
mod headers;
mod listen;
mod outbox;
mod post;
mod relay;
mod reply;
pub mod seal;
mod session;
mod sessions;
mod sse;
mod stateless;
mod stream;

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::response::Response;
use tokio_util::sync::CancellationToken;

use toolgate_gateway::{Dispatcher, Gateway};
use toolgate_intercept::Principal;

pub use auth::{AuthSetupError, Authenticator};
pub use listen::{DEFAULT_MAX_LISTEN_STREAMS, DEFAULT_MAX_LISTEN_STREAMS_PER_CLIENT};
pub use sessions::{DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_CLIENT, DEFAULT_SESSION_IDLE};

pub(crate) use guard::Guard;
pub(crate) use listen::ListenBounds;
pub(crate) use sessions::Bounds;

/// How many events a stream holds by default for a client that reads them slowly.
pub const DEFAULT_STREAM_QUEUE: usize = 16;

/// How long a GET or `subscriptions/listen` stream lasts by default.
pub const DEFAULT_STREAM_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(30 * 60);

/// Everything the front's handlers share.
#[derive(Debug)]
pub(crate) struct Front {
    /// The one dispatcher (this front's: its rounds and written tool lists are its own).
    dispatcher: Arc<Dispatcher>,
    sessions: sessions::HttpSessions,
    guard: Guard,
    /// The largest body read.
    body_limit: usize,
    /// The `subscriptions/listen` streams open.
    listening: Arc<listen::ListenStreams>,
    /// Events a stream holds for a client that reads them slowly.
    stream_queue: usize,
    /// How long a GET or listen stream lasts.
    stream_max_age: std::time::Duration,
    /// Fired at shutdown: every stream ends.
    shutdown: CancellationToken,
    /// Who may call; `None`: everyone, as `anonymous:anonymous` (loopback without `[auth]`).
    auth: Option<Arc<Authenticator>>,
    /// The relay between replicas, with shared state on a bus.
    relay: Option<Arc<relay::Relay>>,
}

/// What a front holds for its clients at most, and for how long.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Sessions, in all and per client, and how long an idle one lasts.
    pub(crate) sessions: Bounds,
    /// `subscriptions/listen` streams, in all and per client.
    pub(crate) listen: ListenBounds,
    /// How long a GET or listen stream lasts.
    pub(crate) stream_max_age: std::time::Duration,
    /// The largest body read.
    pub(crate) body_limit: usize,
}

impl Front {
    /// A front over `dispatcher`, letting in what `guard` and `auth` let in, its session ids
    /// sealed by `seal` when there is one, relaying between replicas over `shared` when given.
    pub(crate) fn new(
        dispatcher: Arc<Dispatcher>,
        guard: Guard,
        auth: Option<Arc<Authenticator>>,
        limits: Limits,
        (seal, shared): (Option<seal::SessionSeal>, Option<toolgate_state::SharedState>),
        shutdown: CancellationToken,
    ) -> Arc<Front> {
        let relay = shared.map(|state| relay::Relay::start(state, shutdown.clone()));
        let front = Arc::new(Front {
            dispatcher,
            sessions: sessions::HttpSessions::sealed(limits.sessions, seal).relayed(relay.clone()),
            guard,
            body_limit: limits.body_limit,
            listening: Arc::new(listen::ListenStreams::new(limits.listen)),
            stream_queue: limits.sessions.queue,
            stream_max_age: limits.stream_max_age,
            shutdown,
            auth,
            relay,
        });
        if let Some(relay) = &front.relay {
            relay.listen(Arc::downgrade(&front), front.gateway(), front.shutdown.clone());
        }
        front
    }

    /// The gateway.
    pub(crate) fn gateway(&self) -> &Arc<Gateway> {
        self.dispatcher.gateway()
    }

    /// Closes idle sessions now and then, until shutdown; then closes every session.
    pub(crate) fn keep_tidy(self: &Arc<Self>) {
        let front = Arc::downgrade(self);
        let every = self.sessions.sweep_every();
        let shutdown = self.shutdown.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = ticks.tick() => {}
                    () = shutdown.cancelled() => break,
                }
                let Some(front) = front.upgrade() else { return };
                front.sessions.close_idle();
            }
            if let Some(front) = front.upgrade() {
                front.sessions.close_all();
            }
        });
    }
}

/// The `/mcp` endpoint: every method, behind the guard, then as the principal its
/// credential proves (in the request's extensions for the handlers).
pub(crate) async fn endpoint(State(front): State<Arc<Front>>, mut request: Request) -> Response {
    if let Err(refused) = front.guard.check(request.uri(), request.headers()) {
        return refused;
    }
    let principal = match &front.auth {
        Some(auth) => match auth.authenticate(request.headers()).await {
            Ok(principal) => principal,
            Err(refused) => return refused,
        },
        None => Principal::anonymous(),
    };
    request.extensions_mut().insert(principal);
    match *request.method() {
        http::Method::POST => post::post(front, request).await,
        http::Method::GET => stream::get(front, request).await,
        http::Method::DELETE => stream::delete(front, request).await,
        _ => stream::not_allowed(),
    }
}
