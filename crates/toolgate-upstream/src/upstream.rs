//! One connected upstream server: its connection, what it offers, and calls to it.

use std::future::Future;
use std::time::{Duration, Instant};

use http::{HeaderName, HeaderValue};
use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientLifecycleMode, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientCacheConfig, ClientServiceExt, Peer, RoleClient, ServiceError};
use toolgate_config::{HttpConfig, HttpTransport, ServerConfig, TransportConfig};
use toolgate_core::{BoxError, mcp};

use crate::error::{BothTransportsFailed, StderrTail, UpstreamError};
use crate::handler::UpstreamHandler;
use crate::sse::SseTransport;
use crate::stdio::{self, ProcessGroupHandle, StderrLog};

type Service = RunningService<RoleClient, UpstreamHandler>;

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

/// Everything an upstream lists, every page of it.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// `tools/list`.
    pub tools: Vec<mcp::Tool>,
    /// `resources/list`.
    pub resources: Vec<mcp::Resource>,
    /// `resources/templates/list`.
    pub resource_templates: Vec<mcp::ResourceTemplate>,
    /// `prompts/list`.
    pub prompts: Vec<mcp::Prompt>,
}

/// A connected upstream server.
pub struct Upstream {
    config: ServerConfig,
    peer: Peer<RoleClient>,
    service: tokio::sync::Mutex<Option<Service>>,
    group: Option<ProcessGroupHandle>,
    info: UpstreamInfo,
    catalog: Catalog,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("name", &self.config.name)
            .field("info", &self.info)
            .finish()
    }
}

impl Upstream {
    /// Connects to the server `config` describes, completes the MCP handshake and lists what it
    /// offers, all within its `startup_timeout`.
    pub async fn connect(config: &ServerConfig) -> Result<Upstream, UpstreamError> {
        let started = Instant::now();
        let name = config.name.clone();
        let stderr = StderrLog::default();
        let connecting = connect_service(config, stderr.clone());
        let (service, transport, group) =
            match tokio::time::timeout(config.startup_timeout, connecting).await {
                Ok(result) => result?,
                Err(_) => {
                    return Err(UpstreamError::StartupTimeout {
                        upstream: name,
                        timeout: config.startup_timeout,
                        stderr: stderr.tail(),
                    });
                }
            };
        let peer = service.peer().clone();
        peer.set_response_cache_config(ClientCacheConfig::disabled()).await;
        let peer_info = peer.peer_info();
        let remaining = config.startup_timeout.saturating_sub(started.elapsed());
        let Ok(catalog) = tokio::time::timeout(remaining, list_catalog(&name, &peer)).await else {
            if let Some(group) = group {
                group.kill();
            }
            return Err(UpstreamError::StartupTimeout {
                upstream: name,
                timeout: config.startup_timeout,
                stderr: stderr.tail(),
            });
        };
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
        Ok(Upstream {
            config: config.clone(),
            peer,
            service: tokio::sync::Mutex::new(Some(service)),
            group,
            info,
            catalog,
        })
    }

    /// The configured name.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// Its configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// What it said about itself.
    pub fn info(&self) -> &UpstreamInfo {
        &self.info
    }

    /// What it offered when it connected.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// `tools/call` with the original tool name.
    pub async fn call_tool(
        &self,
        params: mcp::CallToolRequestParams,
    ) -> Result<mcp::CallToolResult, UpstreamError> {
        self.request("tools/call", self.peer.call_tool(params)).await
    }

    /// `resources/read` with the original URI.
    pub async fn read_resource(
        &self,
        params: mcp::ReadResourceRequestParams,
    ) -> Result<mcp::ReadResourceResult, UpstreamError> {
        self.request("resources/read", self.peer.read_resource(params)).await
    }

    /// `prompts/get` with the original prompt name.
    pub async fn get_prompt(
        &self,
        params: mcp::GetPromptRequestParams,
    ) -> Result<mcp::GetPromptResult, UpstreamError> {
        self.request("prompts/get", self.peer.get_prompt(params)).await
    }

    /// `completion/complete` with original names.
    pub async fn complete(
        &self,
        params: mcp::CompleteRequestParams,
    ) -> Result<mcp::CompleteResult, UpstreamError> {
        self.request("completion/complete", self.peer.complete(params)).await
    }

    /// Ends the connection; a child process and everything it started are ended too.
    pub async fn shutdown(&self) {
        if let Some(service) = self.service.lock().await.take() {
            let _ = service.cancel().await;
        }
        if let Some(group) = self.group {
            group.kill();
        }
    }

    async fn request<T>(
        &self,
        operation: &'static str,
        request: impl Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, UpstreamError> {
        if self.peer.is_transport_closed() {
            return Err(UpstreamError::Disconnected { upstream: self.config.name.clone() });
        }
        match tokio::time::timeout(self.config.timeout, request).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(source)) => Err(UpstreamError::Request {
                upstream: self.config.name.clone(),
                operation,
                source: Box::new(source),
            }),
            Err(_) => Err(UpstreamError::Timeout {
                upstream: self.config.name.clone(),
                operation,
                timeout: self.config.timeout,
            }),
        }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        if let Some(group) = self.group {
            group.kill();
        }
    }
}

// === connecting ===

async fn connect_service(
    config: &ServerConfig,
    stderr: StderrLog,
) -> Result<(Service, &'static str, Option<ProcessGroupHandle>), UpstreamError> {
    let name = &config.name;
    let handler = UpstreamHandler::new(name);
    match &config.transport {
        TransportConfig::Stdio(stdio) => {
            let child = stdio::spawn(name, stdio, stderr.clone())?;
            let group = child.group;
            match handler
                .serve_with_lifecycle(child.transport, ClientLifecycleMode::Initialize)
                .await
            {
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
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(config.url.as_str())
            .custom_headers(headers.into_iter().collect())
            .reinit_on_expired_session(true),
    );
    let lifecycle = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28, ProtocolVersion::V_2025_11_25],
        legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
    };
    Ok(handler.serve_with_lifecycle(transport, lifecycle).await?)
}

async fn connect_sse(
    config: &HttpConfig,
    headers: Vec<(HeaderName, HeaderValue)>,
    handler: UpstreamHandler,
) -> Result<Service, BoxError> {
    let transport = SseTransport::connect(&config.url, headers.into_iter().collect()).await?;
    Ok(handler.serve_with_lifecycle(transport, ClientLifecycleMode::Initialize).await?)
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

/// Lists everything the server's capabilities say it offers. A list that fails is logged and
/// left empty: one broken list should not hide the rest of a server.
async fn list_catalog(upstream: &str, peer: &Peer<RoleClient>) -> Catalog {
    let capabilities = peer.peer_info().map(|i| i.capabilities.clone()).unwrap_or_default();
    let mut catalog = Catalog::default();
    if capabilities.tools.is_some() {
        catalog.tools = listed(upstream, "tools/list", peer.list_all_tools().await);
    }
    if capabilities.resources.is_some() {
        catalog.resources = listed(upstream, "resources/list", peer.list_all_resources().await);
        catalog.resource_templates =
            listed(upstream, "resources/templates/list", peer.list_all_resource_templates().await);
    }
    if capabilities.prompts.is_some() {
        catalog.prompts = listed(upstream, "prompts/list", peer.list_all_prompts().await);
    }
    catalog
}

fn listed<T>(upstream: &str, what: &str, result: Result<Vec<T>, ServiceError>) -> Vec<T> {
    result.unwrap_or_else(|error| {
        tracing::warn!(upstream, %error, "{what} failed; treating it as empty");
        Vec::new()
    })
}
