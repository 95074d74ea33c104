//! Serving the gateway to downstream clients: stdio for desktop clients, streamable HTTP for
//! teams. Each takes what it listens on and a shutdown token, so tests can run many at once.

use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::gateway::Gateway;
use crate::handler::GatewayHandler;

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
    /// The stdio session could not start (the client never sent a valid handshake).
    #[error("stdio session failed to start")]
    Stdio(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The HTTP server failed.
    #[error("HTTP server failed")]
    Http(#[source] std::io::Error),
}

/// Options of the HTTP endpoint.
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    /// Extra accepted `Host` values.
    pub allowed_hosts: Vec<String>,
    /// Extra accepted `Origin` values.
    pub allowed_origins: Vec<String>,
    /// Largest accepted request body; `None` = rmcp's default (4 MiB).
    pub max_body_bytes: Option<usize>,
}

/// Serves one MCP session on stdin/stdout until the client closes stdin or `shutdown` fires.
pub async fn serve_stdio(
    gateway: Arc<Gateway>,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let running = GatewayHandler::new(gateway)
        .serve_with_ct(rmcp::transport::stdio(), shutdown)
        .await
        .map_err(|e| ServeError::Stdio(Box::new(e)))?;
    running.waiting().await.map_err(|e| ServeError::Stdio(Box::new(e)))?;
    Ok(())
}

/// The HTTP application: the MCP endpoint at [`MCP_PATH`] and `/healthz`.
pub fn http_router(
    gateway: Arc<Gateway>,
    options: &HttpOptions,
    shutdown: CancellationToken,
) -> axum::Router {
    let hosts = LOOPBACK_HOSTS.iter().map(|h| h.to_string()).chain(options.allowed_hosts.clone());
    let origins =
        LOOPBACK_ORIGINS.iter().map(|o| o.to_string()).chain(options.allowed_origins.clone());
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        .with_cancellation_token(shutdown);
    if let Some(bytes) = options.max_body_bytes {
        config = config.with_max_request_body_bytes(bytes);
    }
    let service = StreamableHttpService::new(
        move || Ok(GatewayHandler::new(gateway.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    axum::Router::new()
        .nest_service(MCP_PATH, service)
        .route("/healthz", axum::routing::get(|| async { "ok\n" }))
}

/// Serves streamable HTTP on `listener` until `shutdown` fires.
pub async fn serve_http(
    listener: TcpListener,
    gateway: Arc<Gateway>,
    options: &HttpOptions,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let app = http_router(gateway, options, shutdown.child_token());
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
        .map_err(ServeError::Http)
}
