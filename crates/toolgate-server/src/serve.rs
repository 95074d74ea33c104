//! Serving the gateway to downstream clients: stdio for desktop clients, streamable HTTP for
//! teams. Each takes what it listens on and a shutdown token, so tests can run many at once.

use std::sync::Arc;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::connections::{self, ConnectionLimits};
use crate::cors;
use toolgate_gateway::{Dispatcher, Gateway};

use crate::http::{
    self, Authenticator, DEFAULT_MAX_LISTEN_STREAMS, DEFAULT_MAX_LISTEN_STREAMS_PER_CLIENT,
    DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_CLIENT, DEFAULT_SESSION_IDLE,
    DEFAULT_STREAM_MAX_AGE, DEFAULT_STREAM_QUEUE,
};
use crate::jsonrpc::DEFAULT_MAX_MESSAGE_BYTES;
use crate::stdio;

/// Path of the MCP endpoint.
pub const MCP_PATH: &str = "/mcp";

/// Hosts always accepted in the `Host` header (besides `[gateway] allowed_hosts`).
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];
/// Browser origins always accepted (besides `[gateway] allowed_origins`).
const LOOPBACK_ORIGINS: [&str; 3] = ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"];

/// Why serving stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// Writing to stdout failed at the end (what was written could not be flushed).
    #[error("the stdio front failed")]
    Stdio(#[source] std::io::Error),
    /// The HTTP server failed.
    #[error("HTTP server failed")]
    Http(#[source] std::io::Error),
}

/// Options of the HTTP endpoint.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Extra accepted `Host` values.
    pub allowed_hosts: Vec<String>,
    /// Extra accepted `Origin` values.
    pub allowed_origins: Vec<String>,
    /// Largest accepted request body; `None` = [`DEFAULT_MAX_MESSAGE_BYTES`] (4 MiB).
    pub max_body_bytes: Option<usize>,
    /// On shutdown, how long requests in flight may take to finish.
    pub grace: std::time::Duration,
    /// How many sessions may be open at once ([`DEFAULT_MAX_SESSIONS`]); a client that would
    /// open one more gets `503`.
    pub max_sessions: usize,
    /// How many sessions one client address may hold at once
    /// ([`DEFAULT_MAX_SESSIONS_PER_CLIENT`]); one more gets `429`.
    pub max_sessions_per_client: usize,
    /// How long a session may go without a request before it is closed
    /// ([`DEFAULT_SESSION_IDLE`]).
    pub session_idle: std::time::Duration,
    /// Connections at once, and how long a client has to send a request.
    pub connections: ConnectionLimits,
    /// How many `subscriptions/listen` streams may be open at once
    /// ([`DEFAULT_MAX_LISTEN_STREAMS`]); one more gets `503`.
    pub max_listen_streams: usize,
    /// How many of them one client may hold ([`DEFAULT_MAX_LISTEN_STREAMS_PER_CLIENT`]); one
    /// more gets `429`.
    pub max_listen_streams_per_client: usize,
    /// How many events a stream holds for a client that reads them slowly
    /// ([`DEFAULT_STREAM_QUEUE`]): past half of them progress is dropped, past all of them the
    /// stream ends (a session's client resumes it with `Last-Event-ID`).
    pub stream_queue: usize,
    /// How long a GET or `subscriptions/listen` stream lasts before it ends
    /// ([`DEFAULT_STREAM_MAX_AGE`]); clients open another.
    pub stream_max_age: std::time::Duration,
    /// Who may call (`[auth]`); `None`: every client is `anonymous:anonymous`.
    pub auth: Option<Arc<Authenticator>>,
    /// More routes served beside `/mcp` (the OpenAI-compatible endpoint), behind the same
    /// `Host` and `Origin` checks; they authenticate their callers themselves.
    pub routes: Option<axum::Router>,
    /// `[state] shared_key`: session ids are sealed with it, so that every replica that has
    /// the same key serves every session (see [`crate::seal`]); `None`: random ids, each
    /// session on the replica that opened it.
    pub shared_key: Option<toolgate_config::Secret>,
    /// The state replicas share (`[state] backend` Redis or PostgreSQL): with it, answers and
    /// notifications that reach the wrong replica are relayed to the right one, and changes of
    /// one replica's lists reach every replica's sessions (see the README, "Running several
    /// replicas"); `None`: each replica on its own.
    pub shared: Option<toolgate_state::SharedState>,
}

/// Serves one MCP client on stdin/stdout until the client closes stdin (requests still
/// running then get [`DEFAULT_GRACE`] to finish) or `shutdown` fires (those still running are
/// cancelled).
pub async fn serve_stdio(
    gateway: Arc<Gateway>,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let dispatcher = Arc::new(Dispatcher::new(gateway));
    stdio::serve(
        dispatcher,
        stdio::streams::stdin(),
        stdio::streams::stdout(),
        DEFAULT_MAX_MESSAGE_BYTES,
        DEFAULT_GRACE,
        shutdown,
    )
    .await
    .map_err(ServeError::Stdio)
}

/// The HTTP application: the MCP endpoint at [`MCP_PATH`], `/healthz`, the redirect of
/// callers' sign-ins to servers that sign in each caller (`/oauth/callback`), and with an issuer in
/// `[auth]` the protected resource metadata (RFC 9728) at its two well-known paths. `shutdown`
/// ends every session and stream.
pub fn http_router(
    gateway: Arc<Gateway>,
    options: &HttpOptions,
    shutdown: CancellationToken,
) -> axum::Router {
    let gateway_for_callback = gateway.clone();
    let hosts: Vec<String> =
        LOOPBACK_HOSTS.iter().map(|h| h.to_string()).chain(options.allowed_hosts.clone()).collect();
    let origins: Vec<String> = LOOPBACK_ORIGINS
        .iter()
        .map(|o| o.to_string())
        .chain(options.allowed_origins.clone())
        .collect();
    let mcp = {
        let guard =
            http::Guard::new(hosts.iter().map(String::as_str), origins.iter().map(String::as_str));
        let bounds = http::Bounds {
            most: options.max_sessions,
            most_per_client: options.max_sessions_per_client,
            idle: options.session_idle,
            queue: options.stream_queue,
        };
        let listen = http::ListenBounds {
            most: options.max_listen_streams,
            most_per_client: options.max_listen_streams_per_client,
        };
        let limit = options.max_body_bytes.unwrap_or(DEFAULT_MAX_MESSAGE_BYTES);
        let limits = http::Limits {
            sessions: bounds,
            listen,
            stream_max_age: options.stream_max_age,
            body_limit: limit,
        };
        let seal = options
            .shared_key
            .as_ref()
            .map(|key| crate::seal::SessionSeal::new(key.expose().as_bytes()));
        let front = http::Front::new(
            Arc::new(Dispatcher::new(gateway.clone())),
            guard,
            options.auth.clone(),
            limits,
            (seal, options.shared.clone()),
            shutdown,
        );
        front.keep_tidy();
        axum::Router::new()
            .route("/", axum::routing::any(http::endpoint))
            .with_state(front)
            .layer(cors::layer(origins.clone()))
    };
    let callback_gateway = gateway_for_callback.clone();
    let mut router = axum::Router::new()
        .nest_service(MCP_PATH, mcp)
        .route("/healthz", axum::routing::get(|| async { "ok\n" }))
        .route(
            crate::oauth_callback::PATH,
            axum::routing::get(move |query| crate::oauth_callback::finish(callback_gateway, query)),
        );
    if let Some(routes) = options.routes.clone() {
        let guard =
            http::Guard::new(hosts.iter().map(String::as_str), origins.iter().map(String::as_str));
        let guarded = routes.layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                let checked = guard.check(request.uri(), request.headers());
                async move {
                    match checked {
                        Ok(()) => next.run(request).await,
                        Err(refusal) => refusal,
                    }
                }
            },
        ));
        router = router.merge(guarded);
    }
    if let Some(document) = options.auth.as_ref().and_then(|auth| auth.metadata()).cloned() {
        // Where a client that got a 401 finds the authorization server: at the path the
        // challenge names (the well-known prefix before `/mcp`), and at the bare prefix, where
        // clients that ignore the challenge look. Public, as the 401 that points to it.
        let document = Arc::new(document);
        let metadata = axum::routing::get(move || {
            let document = document.clone();
            async move { axum::Json((*document).clone()) }
        })
        .layer(cors::layer(origins));
        let root = toolgate_auth::challenge::METADATA_PATH;
        router = router.route(&format!("{root}{MCP_PATH}"), metadata.clone()).route(root, metadata);
    }
    router
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_body_bytes: None,
            grace: DEFAULT_GRACE,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_sessions_per_client: DEFAULT_MAX_SESSIONS_PER_CLIENT,
            session_idle: DEFAULT_SESSION_IDLE,
            connections: ConnectionLimits::default(),
            max_listen_streams: DEFAULT_MAX_LISTEN_STREAMS,
            max_listen_streams_per_client: DEFAULT_MAX_LISTEN_STREAMS_PER_CLIENT,
            stream_queue: DEFAULT_STREAM_QUEUE,
            stream_max_age: DEFAULT_STREAM_MAX_AGE,
            auth: None,
            routes: None,
            shared_key: None,
            shared: None,
        }
    }
}

/// Time the last answers get to reach their clients before sessions close on shutdown.
pub const RESPONSE_FLUSH: std::time::Duration = std::time::Duration::from_millis(250);

/// Default time in-flight requests get to finish on shutdown.
pub const DEFAULT_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// After the sessions closed at shutdown, how long the connections still open get to write
/// what they were writing; what is left then is a client too slow to send or to read.
pub(crate) const LAST_WRITES: std::time::Duration = std::time::Duration::from_secs(1);

/// Serves streamable HTTP on `listener` until `shutdown` fires. Then it stops accepting
/// connections, lets requests in flight finish for up to `options.grace`, closes every session
/// and, [`RESPONSE_FLUSH`] and [`LAST_WRITES`] later, every connection still open, so that a
/// client that sent half a request cannot hold the shutdown.
pub async fn serve_http(
    listener: TcpListener,
    gateway: Arc<Gateway>,
    options: &HttpOptions,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let sessions = CancellationToken::new();
    let app = http_router(gateway.clone(), options, sessions.clone());
    let grace = options.grace;
    let closing = shutdown.clone();
    let kill = CancellationToken::new();
    let killing = kill.clone();
    tokio::spawn(async move {
        closing.cancelled().await;
        let left = gateway.drain(grace).await;
        if left > 0 {
            tracing::warn!(
                requests = left,
                "shutdown grace period over; ending requests in flight"
            );
        }
        // The last answers were handed to their sessions; give them a moment to be written.
        tokio::time::sleep(RESPONSE_FLUSH).await;
        sessions.cancel();
        tokio::time::sleep(LAST_WRITES).await;
        killing.cancel();
    });
    connections::serve(listener, app, options.connections, shutdown, kill).await;
    Ok(())
}

/// Serves `router` on `listener` (another listener of the process, such as the admin API), its
/// connections bounded by `limits`, until `shutdown` fires; the connections still open `grace`
/// later (a stream, a client that sent half a request) are closed then.
pub async fn serve_router(
    listener: TcpListener,
    router: axum::Router,
    limits: ConnectionLimits,
    grace: std::time::Duration,
    shutdown: CancellationToken,
) {
    let kill = CancellationToken::new();
    let deadline = async {
        shutdown.cancelled().await;
        tokio::time::sleep(grace).await;
        kill.cancel();
        std::future::pending::<()>().await;
    };
    tokio::select! {
        () = connections::serve(listener, router, limits, shutdown.clone(), kill.clone()) => {}
        () = deadline => {}
    }
}
