//! Connecting to an upstream: spawning a child or reaching a URL, the handshake (both
//! protocol eras; streamable HTTP falling back to legacy SSE), and the first listing.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use http::{HeaderName, HeaderValue};
use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientInitializeError, ClientLifecycleMode, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientCacheConfig, Peer, RoleClient};
use tokio_util::sync::CancellationToken;
use toolgate_config::{HttpConfig, HttpTransport, ServerConfig, TransportConfig, UpstreamProtocol};
use toolgate_core::{BoxError, mcp};

use crate::catalog::list_catalog;
use crate::egress;
use crate::error::{ConnectError, Endpoint, StderrTail};
use crate::event::ChangedLists;
use crate::handler::UpstreamHandler;
use crate::http_client::{SessionAwareClient, StandaloneStream};
use crate::shared::Shared;
use crate::sse::SseTransport;
use crate::stdio::{self, ProcessGroupHandle, StderrLog};
use crate::stream_mark::StreamMark;

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
    /// Set when it was dropped by [`crate::Upstream::restart`]: requests in flight on it say
    /// so.
    pub(crate) restarted: std::sync::atomic::AtomicBool,
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
) -> Result<Connection, ConnectError> {
    let started = Instant::now();
    let name = config.name.clone();
    let stderr = StderrLog::default();
    let handler = UpstreamHandler::new(shared.clone());
    let connecting = connect_service(config, handler, stderr.clone(), shared);
    let timed_out = || ConnectError::StartupTimeout {
        endpoint: endpoint(config),
        timeout: config.startup_timeout,
        stderr: stderr.tail(),
    };
    let Ok(connected) = tokio::time::timeout(config.startup_timeout, connecting).await else {
        return Err(timed_out());
    };
    let Served { service, transport, group, standalone } = connected?;
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
        return Err(ConnectError::Failed {
            endpoint: endpoint(config),
            cause: "the connection closed while toolgate listed what the server offers".into(),
            stderr: stderr.tail(),
        });
    }
    shared.set_catalog(catalog);
    if let Some(standalone) = standalone {
        // Listed meanwhile, usually: rmcp opens the stream as the handshake ends.
        let wait = config.startup_timeout.saturating_sub(started.elapsed()).min(STANDALONE_WAIT);
        if tokio::time::timeout(wait, standalone.ready()).await.is_err() {
            tracing::debug!(upstream = %name, ?wait, "the server has not answered the session's GET stream; going on without it");
        }
    }
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
        restarted: std::sync::atomic::AtomicBool::new(false),
    });
    Ok(Connection { service, link, group })
}

/// Where `config`'s server is, for messages: its URL without credentials or query, or its
/// command (without arguments, which may hold secrets).
fn endpoint(config: &ServerConfig) -> Endpoint {
    match &config.transport {
        TransportConfig::Stdio(stdio) => Endpoint::Command(stdio.command.clone()),
        TransportConfig::Http(http) => {
            let mut url = http.url.clone();
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.set_query(None);
            url.set_fragment(None);
            Endpoint::Url(url.to_string())
        }
        TransportConfig::InProcess(in_process) => {
            Endpoint::InProcess(in_process.origin.display().to_string())
        }
    }
}

/// At most how long `connect` waits for a streamable HTTP server to answer the session's
/// standalone GET stream ([`StandaloneStream`]) once the catalog is listed: servers answer it
/// at once (with the stream's headers, or 405); one that holds it unanswered is used without it.
const STANDALONE_WAIT: Duration = Duration::from_secs(3);

/// A connection whose handshake is done.
struct Served {
    service: Service,
    /// The transport used (`stdio`, `streamable-http`, ...).
    transport: &'static str,
    group: Option<ProcessGroupHandle>,
    /// A streamable HTTP session's stream for what the server sends outside requests.
    standalone: Option<Arc<StandaloneStream>>,
}

impl Served {
    fn new(service: Service, transport: &'static str) -> Served {
        Served { service, transport, group: None, standalone: None }
    }
}

async fn connect_service(
    config: &ServerConfig,
    handler: UpstreamHandler,
    stderr: StderrLog,
    shared: &Arc<Shared>,
) -> Result<Served, ConnectError> {
    let name = &config.name;
    match &config.transport {
        TransportConfig::Stdio(stdio) => {
            let child = stdio::spawn(stdio, stderr.clone(), shared)?;
            let mut group = child.group;
            let mut exit = child.exit;
            let mut served =
                handler.clone().serve(child.transport, lifecycle(config.protocol)).await;
            if let Err(error) = &served
                && config.protocol == UpstreamProtocol::Auto
                && probe_went_wrong(error)
            {
                // A server of the handshake era that answers a `server/discover` it does not
                // know with a result of the wrong shape or ends when it reads it, or a slow
                // starter that read the probe only after rmcp had stopped waiting for its
                // answer and gone on to `initialize` on the same pipe: a new process, asked
                // with `initialize`.
                tracing::debug!(upstream = %name, ?error, "server/discover went wrong; asking a new process with initialize");
                group.kill();
                let child = stdio::spawn(stdio, stderr.clone(), shared)?;
                group = child.group;
                exit = child.exit;
                served = handler.serve(child.transport, ClientLifecycleMode::Initialize).await;
            }
            match served {
                Ok(service) => Ok(Served { group: Some(group), ..Served::new(service, "stdio") }),
                Err(source) => {
                    // Its last words on stderr usually say why: wait (briefly) until they are
                    // all read. Once they are, it has usually exited: how, when it did by
                    // itself, is noted as its transport goes.
                    let closed = tokio::time::timeout(STDERR_GRACE, stderr.closed()).await;
                    let mut exit = exit.subscribe();
                    if closed.is_ok() {
                        let noted = exit.wait_for(Option::is_some);
                        let _ = tokio::time::timeout(stdio::EXIT_NOTICE, noted).await;
                    }
                    let exited = *exit.borrow();
                    group.kill();
                    tracing::debug!(upstream = %name, error = ?source, "handshake failed");
                    if let Some(exit) = exited {
                        return Err(ConnectError::Exited {
                            endpoint: endpoint(config),
                            exit,
                            stderr: stderr.tail(),
                        });
                    }
                    Err(ConnectError::Failed {
                        endpoint: endpoint(config),
                        cause: crate::cause::describe(&source, None),
                        stderr: stderr.tail(),
                    })
                }
            }
        }
        TransportConfig::Http(http) => connect_http(config, http, handler, shared).await,
        TransportConfig::InProcess(_) => {
            let failed = |cause: String| ConnectError::Failed {
                endpoint: endpoint(config),
                cause,
                stderr: StderrTail::default(),
            };
            let server = shared.in_process.as_ref().ok_or_else(|| {
                failed("no server was handed over for it (a bug in the caller)".into())
            })?;
            let pipe = crate::in_process::open(server);
            match handler.serve(pipe, ClientLifecycleMode::Initialize).await {
                Ok(service) => Ok(Served::new(service, "in-process")),
                Err(source) => Err(failed(crate::cause::describe(&source, None))),
            }
        }
    }
}

/// How toolgate starts a connection to a server by its `protocol`: with `Auto`,
/// `server/discover` first (2026-07-28), falling back to `initialize` when the server answers
/// it with an error or not within rmcp's 10 s.
fn lifecycle(protocol: UpstreamProtocol) -> ClientLifecycleMode {
    match protocol {
        UpstreamProtocol::Auto => ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28, ProtocolVersion::V_2025_11_25],
            legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
        },
        UpstreamProtocol::Handshake => ClientLifecycleMode::Initialize,
        UpstreamProtocol::Stateless => ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    }
}

/// Whether an `Auto` start failed in a way that a server of the handshake era causes with
/// the `server/discover` probe itself (the pipe is then of no further use), rather than by
/// failing its handshake: a result of the wrong shape, an answer to the probe read where the
/// answer to `initialize` was awaited, or the connection closed.
fn probe_went_wrong(error: &ClientInitializeError) -> bool {
    matches!(
        error,
        ClientInitializeError::ExpectedInitResult(_)
            | ClientInitializeError::ExpectedInitResponse(_)
            | ClientInitializeError::ConflictInitResponseId(..)
            | ClientInitializeError::UncorrelatedErrorResponse { .. }
            | ClientInitializeError::ConnectionClosed(_)
    )
}

/// How long a child that failed its handshake gets to finish writing why.
const STDERR_GRACE: Duration = Duration::from_millis(500);

async fn connect_http(
    server: &ServerConfig,
    config: &HttpConfig,
    handler: UpstreamHandler,
    shared: &Shared,
) -> Result<Served, ConnectError> {
    let name = &server.name;
    let url = config.url.as_str();
    let mark = &shared.stream_mark;
    let login = shared.login.clone();
    // Only a server toolgate can sign in to is said to want a login; for the others (`oauth =
    // false`, their own `Authorization` header) a 401 is described as what it is.
    let signs_in = login.is_some();
    let failed = |error: BoxError| {
        tracing::debug!(upstream = %name, error = ?error, "connection failed");
        if signs_in && crate::signin::wants_login(error.as_ref()) {
            return ConnectError::NeedsLogin { server: name.clone() };
        }
        ConnectError::Failed {
            endpoint: endpoint(server),
            cause: crate::cause::describe(error.as_ref(), Some(url)),
            stderr: StderrTail::default(),
        }
    };
    let headers = header_map(config)?;
    match config.transport {
        HttpTransport::StreamableHttp => {
            connect_streamable(name, config, server.protocol, headers, handler, mark, login)
                .await
                .map_err(failed)
        }
        HttpTransport::Sse => {
            let service =
                connect_sse(name, config, headers, handler, login).await.map_err(failed)?;
            Ok(Served::new(service, "sse"))
        }
        HttpTransport::Auto => {
            match connect_streamable(
                name,
                config,
                server.protocol,
                headers.clone(),
                handler.clone(),
                mark,
                login.clone(),
            )
            .await
            {
                Ok(served) => Ok(served),
                // A server that wants a login is a streamable HTTP server: no SSE fallback.
                Err(streamable) if signs_in && crate::signin::wants_login(streamable.as_ref()) => {
                    Err(failed(streamable))
                }
                Err(streamable) => {
                    tracing::debug!(upstream = %name, error = ?streamable, "streamable HTTP failed; trying legacy SSE");
                    match connect_sse(name, config, headers, handler, login).await {
                        Ok(service) => Ok(Served::new(service, "sse")),
                        Err(sse) => {
                            let streamable = failed(streamable);
                            let sse = failed(sse);
                            Err(both_failed(streamable, sse))
                        }
                    }
                }
            }
        }
    }
}

/// The failure of a server tried as streamable HTTP and then as legacy SSE: one cause when
/// both say the same, else both.
fn both_failed(streamable: ConnectError, sse: ConnectError) -> ConnectError {
    match (streamable, sse) {
        (
            ConnectError::Failed { endpoint, cause: first, stderr },
            ConnectError::Failed { cause: second, .. },
        ) if first != second => ConnectError::Failed {
            endpoint,
            cause: format!("{first} (as streamable HTTP); {second} (as legacy SSE)"),
            stderr,
        },
        (streamable, _) => streamable,
    }
}

async fn connect_streamable(
    name: &str,
    config: &HttpConfig,
    protocol: UpstreamProtocol,
    headers: Vec<(HeaderName, HeaderValue)>,
    handler: UpstreamHandler,
    mark: &StreamMark,
    login: Option<Arc<toolgate_oauth::Login>>,
) -> Result<Served, BoxError> {
    let transport = |client: SessionAwareClient| {
        StreamableHttpClientTransport::with_client(
            toolgate_oauth::Authorized::new(client, login.clone()),
            StreamableHttpClientTransportConfig::with_uri(config.url.as_str())
                .custom_headers(headers.iter().cloned().collect())
                .reinit_on_expired_session(true),
        )
    };
    let client = SessionAwareClient::new(egress::client_builder(name, config)?, mark.clone())?;
    let standalone = client.standalone();
    let served = |service, standalone| Served {
        standalone: Some(standalone),
        ..Served::new(service, "streamable-http")
    };
    match handler.clone().serve(transport(client), lifecycle(protocol)).await {
        // rmcp falls back to `initialize` when `server/discover` is refused, but not when a
        // server of the older era answers it with a result of the wrong shape (some answer any
        // unknown request with `{}`). Such a server speaks `initialize`: ask again that way.
        Err(ClientInitializeError::ExpectedInitResult(Some(answer)))
            if protocol == UpstreamProtocol::Auto =>
        {
            tracing::debug!(url = %config.url, ?answer, "server/discover answered oddly; using initialize");
            let client =
                SessionAwareClient::new(egress::client_builder(name, config)?, mark.clone())?;
            let standalone = client.standalone();
            let service = handler.serve(transport(client), ClientLifecycleMode::Initialize).await?;
            Ok(served(service, standalone))
        }
        connected => Ok(served(connected?, standalone)),
    }
}

async fn connect_sse(
    name: &str,
    config: &HttpConfig,
    headers: Vec<(HeaderName, HeaderValue)>,
    handler: UpstreamHandler,
    login: Option<Arc<toolgate_oauth::Login>>,
) -> Result<Service, BoxError> {
    let client = egress::client_builder(name, config)?;
    let transport =
        SseTransport::connect(&config.url, headers.into_iter().collect(), client, login).await?;
    Ok(handler.serve(transport, ClientLifecycleMode::Initialize).await?)
}

fn header_map(config: &HttpConfig) -> Result<Vec<(HeaderName, HeaderValue)>, ConnectError> {
    config
        .headers
        .iter()
        .map(|(name, value)| {
            let bad = || ConnectError::Header { name: name.clone() };
            let header = HeaderName::try_from(name.as_str()).map_err(|_| bad())?;
            let mut value = HeaderValue::try_from(value.expose()).map_err(|_| bad())?;
            value.set_sensitive(true);
            Ok((header, value))
        })
        .collect()
}
