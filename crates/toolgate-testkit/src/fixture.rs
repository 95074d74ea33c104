//! The fixture server: one rmcp [`ServerHandler`] with the conformance suite's resources,
//! prompts, completion and logging, plus the tools in [`crate::tool`].
//!
//! One [`Fixture`] serves one MCP session (on a 2026-07-28 streamable HTTP connection, one
//! request: that era has no sessions); its log level is per session. What outlives a session,
//! or must reach other sessions (`dynamic_tool`, resource subscriptions, `subscriptions/listen`
//! streams), is in the [`FixtureHub`] the server's fixtures share.
//!
//! Both protocol eras are served: `resources/subscribe` for handshake-era clients,
//! `subscriptions/listen` for 2026-07-28 ones (rmcp refuses each in the other era).

// Logging, sampling and `resources/subscribe` are SEP-2577-deprecated in rmcp, and the
// conformance suite still exercises them.
#![allow(deprecated)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use toolgate_core::log_level::severity;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model as mcp;
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler};
use tokio::sync::{broadcast, mpsc};

use crate::hub::{FixtureHub, HubEvent};
use crate::tool::DYNAMIC_TOOL;

/// A 2×2 red PNG, base64.
pub(crate) const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEElEQVR42mP4z8AARAwQCgAf7gP9Y167WwAAAABJRU5ErkJggg==";
/// Eight samples of 8 kHz 8-bit mono silence as a WAV file, base64.
pub(crate) const WAV_BASE64: &str =
    "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

pub(crate) const STATIC_TEXT_URI: &str = "test://static-text";
pub(crate) const STATIC_BINARY_URI: &str = "test://static-binary";
pub(crate) const WATCHED_URI: &str = "test://watched-resource";
pub(crate) const TEMPLATE_URI: &str = "test://template/{id}/data";
/// Not listed: what `rich_echo` was last given.
pub(crate) const RICH_ECHO_URI: &str = "test://rich-echo";
/// The prompt `test_trigger_prompt_change` lists and unlists.
pub(crate) const DYNAMIC_PROMPT: &str = "dynamic_prompt";

/// How a fixture server presents itself and behaves at start-up.
///
/// ```
/// # use std::time::Duration;
/// let opts = toolgate_testkit::FixtureOptions {
///     startup_delay: Duration::from_millis(500),
///     ..Default::default()
/// };
/// # let _ = opts;
/// ```
#[derive(Clone, Debug)]
pub struct FixtureOptions {
    /// `serverInfo.name` in the `initialize` result.
    pub name: String,
    /// `serverInfo.version` in the `initialize` result.
    pub version: String,
    /// How long the server waits before it accepts its first connection (network
    /// transports) or reads its handshake (stdio), for start-up benchmarks.
    pub startup_delay: Duration,
    /// How many trivial tools to list besides the fixture's own, for scale benchmarks: `t0000`,
    /// `t0001`, ... (four digits, more past 9999), each without arguments, answering
    /// `<name> called`.
    pub extra_tools: usize,
    /// More tools, each a name and a description (without arguments, answering `<name>
    /// called`), for tests of what the scan reads in descriptions.
    pub described_tools: Vec<(String, String)>,
    /// With `Some(stage)`, also list `weather` (as it is at `stage`, 0 to 3, until a call to
    /// `rug_pull` changes it) and `rug_pull`, for integrity tests (see the `rug_pull` module).
    pub rug_pull: Option<u8>,
    /// Where in-process tests observe what the server did (see [`FixtureEvent`]).
    pub events: Option<mpsc::UnboundedSender<FixtureEvent>>,
    /// Network transports: leave Nagle's algorithm on for accepted connections (no
    /// `TCP_NODELAY`), as a plain `axum::serve` does, and so most rmcp servers: a server whose
    /// small writes wait for the client's ACK, for the upstream client's tests and benchmarks.
    pub nagle: bool,
}

impl Default for FixtureOptions {
    fn default() -> Self {
        Self {
            name: "toolgate-fixture".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            startup_delay: Duration::ZERO,
            extra_tools: 0,
            described_tools: Vec::new(),
            rug_pull: None,
            events: None,
            nagle: false,
        }
    }
}

/// Something the fixture did that a test cannot see on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FixtureEvent {
    /// A client finished its handshake (`notifications/initialized`).
    Initialized {
        /// The client's `clientInfo.name`.
        client: String,
    },
    /// A session's handler was dropped: its transport closed or the server shut down. (rmcp's
    /// streamable HTTP service also builds short-lived handlers, e.g. one per 2026-07-28
    /// request, and each reports this when dropped.)
    SessionEnded,
    /// `slow` ran all of its steps.
    SlowCompleted {
        /// Steps requested (and run).
        steps: u32,
    },
    /// `slow` saw its request cancelled and stopped early.
    SlowCancelled {
        /// Steps finished before the cancellation.
        completed: u32,
        /// Steps requested.
        steps: u32,
    },
}

/// The fixture MCP server handler (one per session).
pub struct Fixture {
    pub(crate) opts: Arc<FixtureOptions>,
    pub(crate) hub: FixtureHub,
    /// This handler's key in the hub.
    pub(crate) session_id: u64,
    session: Session,
    pub(crate) tool_router: ToolRouter<Self>,
}

/// Per-session state.
#[derive(Debug)]
struct Session {
    /// The least severe level the client wants to see; everything by default.
    log_level: Mutex<mcp::LoggingLevel>,
    /// Hub receivers taken when a `subscriptions/listen` filter was accepted, i.e. before the
    /// acknowledgment went out, so that its stream misses no change made after the client
    /// saw the acknowledgment. [`ServerHandler::listen`] takes the oldest.
    listen_receivers: Mutex<VecDeque<broadcast::Receiver<HubEvent>>>,
}

// === impl Fixture ===

impl Fixture {
    /// A fresh handler for a server with one session (it gets a hub of its own).
    pub fn new(opts: impl Into<Arc<FixtureOptions>>) -> Self {
        Self::with_hub(opts, FixtureHub::new())
    }

    /// A fresh handler for one session of a server whose sessions share `hub`.
    pub fn with_hub(opts: impl Into<Arc<FixtureOptions>>, hub: FixtureHub) -> Self {
        let opts = opts.into();
        let mut tool_router = Self::tool_router();
        tool_router.merge(Self::diagnostic_router());
        if opts.extra_tools > 0 {
            tool_router.merge(crate::tool::extra_tools(opts.extra_tools));
        }
        if !opts.described_tools.is_empty() {
            tool_router.merge(crate::tool::described_tools(&opts.described_tools));
        }
        if opts.rug_pull.is_some() {
            tool_router.merge(crate::rug_pull::router());
        }
        Self {
            opts,
            session_id: hub.next_session_id(),
            hub,
            session: Session {
                log_level: Mutex::new(mcp::LoggingLevel::Debug),
                listen_receivers: Mutex::default(),
            },
            tool_router,
        }
    }

    /// Reports `event` to the test that asked for events, if any.
    pub(crate) fn emit(&self, event: FixtureEvent) {
        if let Some(events) = &self.opts.events {
            // The test may have stopped listening; that is its business.
            let _ = events.send(event);
        }
    }

    /// Sends a log notification if the session's level lets it through.
    pub(crate) async fn log(&self, peer: &Peer<RoleServer>, level: mcp::LoggingLevel, text: &str) {
        let threshold = *self.session.log_level.lock().unwrap_or_else(PoisonError::into_inner);
        if severity(level) < severity(threshold) {
            return;
        }
        let param = mcp::LoggingMessageNotificationParam::new(level, text.into())
            .with_logger(self.opts.name.clone());
        if let Err(error) = peer.notify_logging_message(param).await {
            tracing::debug!(%error, "could not send a log notification");
        }
    }

    /// [`Self::log`], sent when the returned future runs (from a task of its own), at the
    /// session's level as it is now.
    pub(crate) fn log_later(
        &self,
        peer: Peer<RoleServer>,
        level: mcp::LoggingLevel,
        text: String,
    ) -> impl Future<Output = ()> + Send + 'static {
        let threshold = *self.session.log_level.lock().unwrap_or_else(PoisonError::into_inner);
        let logger = self.opts.name.clone();
        async move {
            if severity(level) < severity(threshold) {
                return;
            }
            let param =
                mcp::LoggingMessageNotificationParam::new(level, text.into()).with_logger(logger);
            if let Err(error) = peer.notify_logging_message(param).await {
                tracing::debug!(%error, "could not send a log notification");
            }
        }
    }

    fn is_subscribed(&self, uri: &str) -> bool {
        self.hub.is_subscribed(self.session_id, uri)
    }

    /// The hub this session shares with the server's other sessions.
    pub(crate) fn hub(&self) -> &FixtureHub {
        &self.hub
    }

    /// `tool` as listed now: `weather` changes with the rug-pull stage.
    fn as_listed(&self, tool: mcp::Tool) -> mcp::Tool {
        match self.opts.rug_pull {
            Some(initial) if tool.name == crate::rug_pull::WEATHER => {
                crate::rug_pull::weather(self.hub.rug_pull_stage(initial))
            }
            _ => tool,
        }
    }

    /// Whether the tool list currently shows `name`.
    fn is_listed(&self, name: &str) -> bool {
        name != DYNAMIC_TOOL || self.hub.dynamic_tool_enabled()
    }

    fn listen_receiver(&self) -> Option<broadcast::Receiver<HubEvent>> {
        self.session.listen_receivers.lock().unwrap_or_else(PoisonError::into_inner).pop_front()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.hub.remove_session(self.session_id);
        self.emit(FixtureEvent::SessionEnded);
    }
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> mcp::ServerConfig {
        let capabilities = mcp::ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_resources()
            .enable_resources_list_changed()
            .enable_resources_subscribe()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_logging()
            .enable_completions()
            .build();
        mcp::ServerConfig::new(capabilities)
            .with_server_info(mcp::Implementation::new(&self.opts.name, &self.opts.version))
            .with_instructions(
                "toolgate's fixture server: the MCP conformance fixtures plus echo, large, slow, \
                 fail, crash, env_get, env_names, meta_echo, list_roots, spawn_child, stderr, rich_echo, \
                 toggle_tool and touch_resource.",
            )
    }

    async fn on_initialized(&self, cx: NotificationContext<RoleServer>) {
        self.hub.register_peer(self.session_id, &cx.peer);
        let client = cx.peer.peer_info().map(|info| info.client_info.name.clone());
        self.emit(FixtureEvent::Initialized { client: client.unwrap_or_default() });
    }

    async fn list_tools(
        &self,
        _request: Option<mcp::PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<mcp::ListToolsResult, McpError> {
        let tools = self
            .tool_router
            .list_all()
            .into_iter()
            .filter(|tool| self.is_listed(&tool.name))
            .map(|tool| self.as_listed(tool));
        let mut result = mcp::ListToolsResult::with_all_items(tools.collect());
        if crate::input::is_modern(&cx) {
            // The list changes at runtime: never cache it, and it is the same for everyone.
            result.ttl_ms = Some(0);
            result.cache_scope = Some(mcp::CacheScope::Public);
        }
        Ok(result)
    }

    fn get_tool(&self, name: &str) -> Option<mcp::Tool> {
        let tool = self.is_listed(name).then(|| self.tool_router.get(name).cloned()).flatten()?;
        Some(self.as_listed(tool))
    }

    async fn call_tool(
        &self,
        request: mcp::CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<mcp::CallToolResponse, McpError> {
        if !self.is_listed(&request.name) {
            return Err(McpError::invalid_params("tool not found", None));
        }
        self.tool_router.call(ToolCallContext::new(self, request, cx)).await
    }

    async fn set_level(
        &self,
        request: mcp::SetLevelRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        *self.session.log_level.lock().unwrap_or_else(PoisonError::into_inner) = request.level;
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<mcp::PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<mcp::ListResourcesResult, McpError> {
        Ok(mcp::ListResourcesResult::with_all_items(vec![
            mcp::Resource::new(STATIC_TEXT_URI, "static-text")
                .with_description("A static text resource")
                .with_mime_type("text/plain"),
            mcp::Resource::new(STATIC_BINARY_URI, "static-binary")
                .with_description("A static binary resource (a small PNG)")
                .with_mime_type("image/png"),
            mcp::Resource::new(WATCHED_URI, "watched-resource")
                .with_description("A resource that supports subscriptions")
                .with_mime_type("text/plain"),
        ]))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<mcp::PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<mcp::ListResourceTemplatesResult, McpError> {
        Ok(mcp::ListResourceTemplatesResult::with_all_items(vec![
            mcp::ResourceTemplate::new(TEMPLATE_URI, "template-data")
                .with_description("JSON data for any id")
                .with_mime_type("application/json"),
        ]))
    }

    async fn read_resource(
        &self,
        request: mcp::ReadResourceRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<mcp::ReadResourceResponse, McpError> {
        let uri = request.uri;
        let contents = match uri.as_str() {
            STATIC_TEXT_URI => mcp::ResourceContents::text(
                "This is the content of the static text resource.",
                &uri,
            ),
            STATIC_BINARY_URI => {
                mcp::ResourceContents::blob(PNG_BASE64, &uri).with_mime_type("image/png")
            }
            WATCHED_URI => mcp::ResourceContents::text(
                format!("Watched resource (subscribed: {}).", self.is_subscribed(WATCHED_URI)),
                &uri,
            ),
            RICH_ECHO_URI => mcp::ResourceContents::text(self.hub.rich_echo(), &uri),
            _ => match template_id(&uri) {
                Some(id) => {
                    let body = serde_json::json!({
                        "id": id,
                        "templateTest": true,
                        "data": format!("Data for ID: {id}"),
                    });
                    mcp::ResourceContents::text(body.to_string(), &uri)
                        .with_mime_type("application/json")
                }
                None => {
                    return Err(McpError::resource_not_found(
                        format!("no resource {uri}"),
                        Some(serde_json::json!({ "uri": uri })),
                    ));
                }
            },
        };
        Ok(mcp::ReadResourceResult::new(vec![contents]).into())
    }

    async fn subscribe(
        &self,
        request: mcp::SubscribeRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.hub.subscribe(self.session_id, &cx.peer, request.uri);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: mcp::UnsubscribeRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.hub.unsubscribe(self.session_id, &request.uri);
        Ok(())
    }

    /// Every list_changed kind, and updates for any URI the fixture can read. (rmcp calls
    /// this only for 2026-07-28 requests, then acknowledges, then calls [`Self::listen`].)
    fn accepted_subscription_filter(
        &self,
        requested: &mcp::SubscriptionFilter,
    ) -> Option<mcp::SubscriptionFilter> {
        let mut accepted = mcp::SubscriptionFilter::builder()
            .tools_list_changed()
            .prompts_list_changed()
            .resources_list_changed()
            .build();
        accepted.resource_subscriptions = requested
            .resource_subscriptions
            .as_ref()
            .map(|uris| uris.iter().filter(|uri| is_known_resource(uri)).cloned().collect());
        self.session
            .listen_receivers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(self.hub.follow());
        Some(accepted)
    }

    /// Relays hub changes the acknowledged filter covers until the client cancels (or the
    /// server shuts down, which closes the stream). Prompts and the resource list never
    /// change here, so those kinds are accepted but stay quiet.
    async fn listen(&self, cx: SubscriptionContext) -> Result<(), McpError> {
        let mut events = self.listen_receiver().unwrap_or_else(|| self.hub.follow());
        let sink = cx.sink();
        loop {
            let event = tokio::select! {
                () = cx.cancelled() => return Ok(()),
                event = events.recv() => event,
            };
            let sent = match event {
                Ok(HubEvent::ToolsChanged) if cx.accepted().tools_list_changed == Some(true) => {
                    sink.notify_tool_list_changed().await
                }
                Ok(HubEvent::PromptsChanged)
                    if cx.accepted().prompts_list_changed == Some(true) =>
                {
                    sink.notify_prompt_list_changed().await
                }
                Ok(HubEvent::ResourceUpdated(uri))
                    if cx
                        .accepted()
                        .resource_subscriptions
                        .as_ref()
                        .is_some_and(|uris| uris.contains(&uri)) =>
                {
                    sink.notify_resource_updated(uri).await
                }
                Ok(_) => Ok(()),
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    // Changes were lost: report everything the filter covers as changed, so
                    // the client re-reads rather than goes stale.
                    tracing::warn!(missed, "a listen stream fell behind the fixture's changes");
                    report_everything(&cx).await
                }
                Err(broadcast::error::RecvError::Closed) => return Ok(()),
            };
            if let Err(error) = sent {
                tracing::debug!(%error, "listen stream closed");
                return Ok(());
            }
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<mcp::PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<mcp::ListPromptsResult, McpError> {
        let required = |name: &str, description: &str| {
            mcp::PromptArgument::new(name).with_description(description).with_required(true)
        };
        Ok(mcp::ListPromptsResult::with_all_items(
            vec![
                mcp::Prompt::new(
                    "test_simple_prompt",
                    Some("A simple prompt without arguments"),
                    None,
                ),
                mcp::Prompt::new(
                    "test_prompt_with_arguments",
                    Some("A prompt with two required arguments"),
                    Some(vec![
                        required("arg1", "First test argument"),
                        required("arg2", "Second test argument"),
                    ]),
                ),
                mcp::Prompt::new(
                    "test_prompt_with_embedded_resource",
                    Some("A prompt that embeds a resource"),
                    Some(vec![required("resourceUri", "URI of the resource to embed")]),
                ),
                mcp::Prompt::new("test_prompt_with_image", Some("A prompt with an image"), None),
                mcp::Prompt::new(
                    crate::diagnostic::INPUT_REQUIRED_PROMPT,
                    Some("A prompt that asks the user for its context first (SEP-2322)"),
                    None,
                ),
            ]
            .into_iter()
            .chain(self.hub.dynamic_prompt_enabled().then(|| {
                mcp::Prompt::new(
                    DYNAMIC_PROMPT,
                    Some("Listed while test_trigger_prompt_change has left it on"),
                    None,
                )
            }))
            .collect(),
        ))
    }

    async fn get_prompt(
        &self,
        request: mcp::GetPromptRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<mcp::GetPromptResponse, McpError> {
        if request.name == crate::diagnostic::INPUT_REQUIRED_PROMPT {
            return crate::diagnostic::input_required_prompt(self, request, &cx).await;
        }
        let args = request.arguments.unwrap_or_default();
        let messages = match request.name.as_str() {
            DYNAMIC_PROMPT if self.hub.dynamic_prompt_enabled() => {
                vec![mcp::PromptMessage::new_text(mcp::Role::User, "The dynamic prompt.")]
            }
            "test_simple_prompt" => {
                vec![mcp::PromptMessage::new_text(
                    mcp::Role::User,
                    "This is a simple prompt for testing.",
                )]
            }
            "test_prompt_with_arguments" => {
                let arg1 = string_arg(&args, "arg1")?;
                let arg2 = string_arg(&args, "arg2")?;
                vec![mcp::PromptMessage::new_text(
                    mcp::Role::User,
                    format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"),
                )]
            }
            "test_prompt_with_embedded_resource" => {
                let uri = string_arg(&args, "resourceUri")?;
                vec![
                    mcp::PromptMessage::new(
                        mcp::Role::User,
                        mcp::ContentBlock::resource(mcp::ResourceContents::text(
                            "Embedded resource content for testing.",
                            uri,
                        )),
                    ),
                    mcp::PromptMessage::new_text(
                        mcp::Role::User,
                        "Please process the embedded resource above.",
                    ),
                ]
            }
            "test_prompt_with_image" => vec![
                mcp::PromptMessage::new(
                    mcp::Role::User,
                    mcp::ContentBlock::image(PNG_BASE64, "image/png"),
                ),
                mcp::PromptMessage::new_text(mcp::Role::User, "Please analyze the image above."),
            ],
            other => {
                return Err(McpError::invalid_params(format!("no prompt named {other}"), None));
            }
        };
        Ok(mcp::GetPromptResult::new(messages).into())
    }

    async fn complete(
        &self,
        request: mcp::CompleteRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<mcp::CompleteResult, McpError> {
        let candidates: &[&str] = match (&request.r#ref, request.argument.name.as_str()) {
            (mcp::Reference::Prompt(prompt), "arg1" | "arg2")
                if prompt.name == "test_prompt_with_arguments" =>
            {
                &["paris", "park", "party", "test", "testing"]
            }
            (mcp::Reference::Resource(resource), "id") if resource.uri == TEMPLATE_URI => {
                &["1", "2", "3", "123"]
            }
            _ => &[],
        };
        let prefix = request.argument.value.as_str();
        let values: Vec<String> = candidates
            .iter()
            .filter(|candidate| candidate.starts_with(prefix))
            .map(|candidate| (*candidate).to_owned())
            .collect();
        let completion = mcp::CompletionInfo::with_all_values(values)
            .map_err(|message| McpError::internal_error(message, None))?;
        Ok(mcp::CompleteResult::new(completion))
    }
}

/// Sends every notification `cx`'s filter covers and the fixture can emit.
async fn report_everything(
    cx: &SubscriptionContext,
) -> Result<(), rmcp::service::SubscriptionSendError> {
    if cx.accepted().tools_list_changed == Some(true) {
        cx.sink().notify_tool_list_changed().await?;
    }
    if cx.accepted().prompts_list_changed == Some(true) {
        cx.sink().notify_prompt_list_changed().await?;
    }
    for uri in cx.accepted().resource_subscriptions.iter().flatten() {
        cx.sink().notify_resource_updated(uri.clone()).await?;
    }
    Ok(())
}

/// Whether `resources/read` serves `uri`.
fn is_known_resource(uri: &str) -> bool {
    matches!(uri, STATIC_TEXT_URI | STATIC_BINARY_URI | WATCHED_URI) || template_id(uri).is_some()
}

/// The `{id}` of a `test://template/{id}/data` URI.
fn template_id(uri: &str) -> Option<&str> {
    let id = uri.strip_prefix("test://template/")?.strip_suffix("/data")?;
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

fn string_arg<'a>(args: &'a mcp::JsonObject, name: &str) -> Result<&'a str, McpError> {
    args.get(name)
        .and_then(|value| value.as_str())
        .ok_or_else(|| McpError::invalid_params(format!("missing string argument {name}"), None))
}

#[cfg(test)]
mod tests;
