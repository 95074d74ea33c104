//! Connecting to an upstream: spawning a child or reaching a URL, the handshake (both
//! protocol eras; streamable HTTP falling back to legacy SSE), and the first listing.

use std::sync::Arc;
use std::time::{Duration, Instant};

use http::{HeaderName, HeaderValue};
use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientInitializeError, ClientLifecycleMode, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientCacheConfig, Peer, RoleClient};
use tokio_util::sync::CancellationToken;
use toolgate_config::{HttpConfig, HttpTransport, ServerConfig, TransportConfig};
use toolgate_core::{BoxError, mcp};

use crate::catalog::list_catalog;
use crate::error::{BothTransportsFailed, StderrTail, UpstreamError};
use crate::event::ChangedLists;
use crate::handler::UpstreamHandler;
use crate::http_client::SessionAwareClient;
use crate::shared::Shared;
use crate::sse::SseTransport;
use crate::stdio::{self, ProcessGroupHandle, StderrLog};

/// A running client connection to an upstream.
pub(crate) type Service = RunningService<RoleClient, UpstreamHandler>;

/// What an upstream said about itself at connection time.
#[derive(Debug, Clone)]
pub struct UpstreamInfo {
    /// The protocol version agreed on.
    pub protocol_version: String,
    /// The transport actually used (`stdio`, `streamable-http` or `sse`).
    pub transport: &'static str,
    /// `serverInfo.name` and `.version`, when given.
    pub server: Option<mcp::Implementation>,
    /// What it offers.
    pub capabilities: mcp::ServerCapabilities,
    /// Its `instructions`, when given.
    pub instructions: Option<String>,
    /// Time from spawn/connect to a ready catalog.
    pub startup: Duration,
}

/// One live connection.
pub(crate) struct Link {
    pub(crate) peer: Peer<RoleClient>,
    pub(crate) info: UpstreamInfo,
    /// Protocol 2026-07-28: notifications come only on `subscriptions/listen` streams.
    pub(crate) modern: bool,
    /// Cancelled when the connection has ended: requests in flight on it end at once.
    pub(crate) lost: CancellationToken,
    /// Cancelled by a request that found the transport broken: the supervisor reconnects.
    pub(crate) reset: CancellationToken,
}

/// A connection just made: the running service, the link requests use, and the child's
/// process group (stdio).
pub(crate) struct Connection {
    pub(crate) service: Service,
    pub(crate) link: Arc<Link>,
    pub(crate) group: Option<ProcessGroupHandle>,
}

/// Connects once: spawns or reaches the server, does the handshake, and lists its catalog
/// into `shared`, all within the server's `startup_timeout`.
pub(crate) async fn connect(
    config: &ServerConfig,
    shared: &Arc<Shared>,
) -> Result<Connection, UpstreamError> {
    let started = Instant::now();
    let name = config.name.clone();
    let stderr = StderrLog::default();
    let handler = UpstreamHandler::new(shared.clone());
    let connecting = connect_service(config, handler, stderr.clone());
    let timed_out = || UpstreamError::StartupTimeout {
        upstream: name.clone(),
        timeout: config.startup_timeout,
        stderr: stderr.tail(),
    };
    let Ok(connected) = tokio::time::timeout(config.startup_timeout, connecting).await else {
        return Err(timed_out());
    };
    let (service, transport, group) = connected?;
    let peer = service.peer().clone();
    peer.set_response_cache_config(ClientCacheConfig::disabled()).await;
    let remaining = config.startup_timeout.saturating_sub(started.elapsed());
    // Held until the catalog is stored: a `list_changed` that arrives meanwhile re-lists
    // after this listing, not before it.
    let _listing = shared.listing().await;
    let listing = list_catalog(&name, &peer, ChangedLists::ALL);
    let Ok(catalog) = tokio::time::timeout(remaining, listing).await else {
        if let Some(group) = group {
            group.kill();
        }
        return Err(timed_out());
    };
    if peer.is_transport_closed() {
        if let Some(group) = group {
            group.kill();
        }
        return Err(UpstreamError::Connect {
            upstream: name.clone(),
            stderr: stderr.tail(),
            source: "the connection closed while listing its catalog".into(),
        });
    }
    shared.set_catalog(catalog);
    let peer_info = peer.peer_info();
    let info = UpstreamInfo {
        protocol_version: peer_info
            .as_ref()
            .map(|i| i.protocol_version.to_string())
            .unwrap_or_default(),
        transport,
        server: peer_info.as_ref().and_then(|i| i.server_info.clone()),
        capabilities: peer_info.as_ref().map(|i| i.capabilities.clone()).unwrap_or_default(),
        instructions: peer_info.as_ref().and_then(|i| i.instructions.clone()),
        startup: started.elapsed(),
    };
    let modern = info.protocol_version == mcp::ProtocolVersion::V_2026_07_28.to_string();
    let link = Arc::new(Link {
        peer,
        info,
        modern,
        lost: CancellationToken::new(),
        reset: CancellationToken::new(),
    });
    Ok(Connection { service, link, group })
}

async fn connect_service(
    config: &ServerConfig,
    handler: UpstreamHandler,
    stderr: StderrLog,
) -> Result<(Service, &'static str, Option<ProcessGroupHandle>), UpstreamError> {
    let name = &config.name;
    match &config.transport {
        TransportConfig::Stdio(stdio) => {
            let child = stdio::spawn(name, stdio, stderr.clone())?;
            let group = child.group;
            match handler.serve(child.transport, ClientLifecycleMode::Initialize).await {
                Ok(service) => Ok((service, "stdio", Some(group))),
                Err(source) => {
                    // Give the child a moment to finish writing why it failed.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    group.kill();
                    Err(UpstreamError::Connect {
                        upstream: name.clone(),
                        stderr: stderr.tail(),
                        source: Box::new(source),
                    })
                }
            }
        }
        TransportConfig::Http(http) => connect_http(name, http, handler).await,
    }
}

async fn connect_http(
    name: &str,
    config: &HttpConfig,
    handler: UpstreamHandler,
) -> Result<(Service, &'static str, Option<ProcessGroupHandle>), UpstreamError> {
    let connect_error = |source: BoxError| UpstreamError::Connect {
        upstream: name.to_owned(),
        stderr: StderrTail::default(),
        source,
    };
    let headers = header_map(name, config)?;
    match config.transport {
        HttpTransport::StreamableHttp => {
            let service =
                connect_streamable(config, headers, handler).await.map_err(connect_error)?;
            Ok((service, "streamable-http", None))
        }
        HttpTransport::Sse => {
            let service = connect_sse(config, headers, handler).await.map_err(connect_error)?;
            Ok((service, "sse", None))
        }
        HttpTransport::Auto => {
            match connect_streamable(config, headers.clone(), handler.clone()).await {
                Ok(service) => Ok((service, "streamable-http", None)),
                Err(streamable) => {
                    tracing::debug!(upstream = name, error = %streamable, "streamable HTTP failed; trying legacy SSE");
                    match connect_sse(config, headers, handler).await {
                        Ok(service) => Ok((service, "sse", None)),
                        Err(sse) => Err(connect_error(Box::new(BothTransportsFailed {
                            streamable: toolgate_core::ErrorChain(streamable.as_ref()).to_string(),
                            sse: toolgate_core::ErrorChain(sse.as_ref()).to_string(),
                        }))),
                    }
                }
            }
        }
    }
}

async fn connect_streamable(
    config: &HttpConfig,
    headers: Vec<(HeaderName, HeaderValue)>,
    handler: UpstreamHandler,
) -> Result<Service, BoxError> {
    let transport = || {
        StreamableHttpClientTransport::with_client(
            SessionAwareClient::new(),
            StreamableHttpClientTransportConfig::with_uri(config.url.as_str())
                .custom_headers(headers.iter().cloned().collect())
                .reinit_on_expired_session(true),
        )
    };
    let lifecycle = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28, ProtocolVersion::V_2025_11_25],
        legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
    };
    match handler.clone().serve(transport(), lifecycle).await {
        // rmcp falls back to `initialize` when `server/discover` is refused, but not when a
        // server of the older era answers it with a result of the wrong shape (some answer any
        // unknown request with `{}`). Such a server speaks `initialize`: ask again that way.
        Err(ClientInitializeError::ExpectedInitResult(Some(answer))) => {
            tracing::debug!(url = %config.url, ?answer, "server/discover answered oddly; using initialize");
            Ok(handler.serve(transport(), ClientLifecycleMode::Initialize).await?)
        }
        connected => Ok(connected?),
    }
}

async fn connect_sse(
    config: &HttpConfig,
    headers: Vec<(HeaderName, HeaderValue)>,
    handler: UpstreamHandler,
) -> Result<Service, BoxError> {
    let transport = SseTransport::connect(&config.url, headers.into_iter().collect()).await?;
    Ok(handler.serve(transport, ClientLifecycleMode::Initialize).await?)
}

fn header_map(
    upstream: &str,
    config: &HttpConfig,
) -> Result<Vec<(HeaderName, HeaderValue)>, UpstreamError> {
    config
        .headers
        .iter()
        .map(|(name, value)| {
            let bad =
                || UpstreamError::Header { upstream: upstream.to_owned(), name: name.clone() };
            let header = HeaderName::try_from(name.as_str()).map_err(|_| bad())?;
            let mut value = HeaderValue::try_from(value.expose()).map_err(|_| bad())?;
            value.set_sensitive(true);
            Ok((header, value))
        })
        .collect()
}
