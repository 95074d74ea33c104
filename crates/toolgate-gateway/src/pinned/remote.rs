//! A server pinned to another replica, as this replica sees it: a server inside the process
//! (the upstream layer's in-process transport) that lists what the replica running it
//! published, and relays each request to it through the shared state.
//!
//! Everything above it is as for any upstream: the pipeline, the timeouts (a request that
//! times out here is cancelled there), `list_changed` when the offer changes. While the
//! replica that runs it is not alive (its key expired, or it was never there), what it last
//! offered stays listed (nothing, if it was never seen), and every request fails at once with
//! an error that names the replica to wait for, which the client may retry: a rolling restart
//! of that replica does not make its tools come and go.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{Semaphore, watch};
use tokio_util::sync::CancellationToken;
use toolgate_core::mcp;
use toolgate_state::SharedState;
use toolgate_upstream::InProcessServer;

use super::Timing;
use super::wire::{self, Alive, Answer, Offer, Request, Update};

/// Requests relayed at once from this replica to one pinned server; more are refused.
pub(crate) const MOST_RELAYED: usize = 256;

/// What the replica running the server last published, with its digest.
#[derive(Debug)]
struct Known {
    digest: String,
    offer: Offer,
}

/// One server pinned to another replica.
pub(crate) struct Remote {
    server: String,
    owner: String,
    state: SharedState,
    timing: Timing,
    /// How long a request waits in the state for the replica that runs the server.
    request_ttl: Duration,
    /// `None` while that replica is not alive.
    known: watch::Sender<Option<Arc<Known>>>,
    slots: Arc<Semaphore>,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote").field("server", &self.server).field("owner", &self.owner).finish()
    }
}

impl Remote {
    /// `server`, run by the replica `owner`, followed until `shutdown`.
    pub(crate) fn start(
        server: &toolgate_config::ServerConfig,
        owner: String,
        state: SharedState,
        timing: Timing,
        shutdown: CancellationToken,
    ) -> Arc<Remote> {
        let hard = server.timeout.saturating_mul(toolgate_upstream::HARD_TIMEOUT_FACTOR);
        let remote = Arc::new(Remote {
            server: server.name.clone(),
            owner,
            state,
            timing,
            request_ttl: hard.saturating_add(Duration::from_secs(60)).min(toolgate_state::MAX_TTL),
            known: watch::Sender::new(None),
            slots: Arc::new(Semaphore::new(MOST_RELAYED)),
        });
        tokio::spawn(remote.clone().follow(shutdown));
        remote
    }

    /// Reads the alive key every poll, and the offer when its digest changed (at once when
    /// the running replica announces a change).
    async fn follow(self: Arc<Self>, shutdown: CancellationToken) {
        let channel = wire::changes_channel(&self.server);
        let mut changes = None;
        loop {
            if changes.is_none() {
                changes = self.state.subscribe(&channel).await.ok();
            }
            self.refresh().await;
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(self.timing.poll) => {}
                change = async { changes.as_mut()?.recv().await }, if changes.is_some() => {
                    if change.is_none() {
                        changes = None;
                    }
                }
            }
        }
    }

    /// Brings what is known up to date with the shared state (left as it is while the state
    /// cannot be read: requests then fail on their own).
    async fn refresh(&self) {
        let alive = match self.state.get(&wire::alive_key(&self.server)).await {
            Ok(alive) => alive.and_then(|bytes| serde_json::from_slice::<Alive>(&bytes).ok()),
            Err(_) => return,
        };
        let Some(alive) = alive.filter(|alive| alive.replica == self.owner) else {
            if self.known.send_replace(None).is_some() {
                tracing::warn!(server = %self.server, replica = %self.owner, "the replica this server is pinned to stopped running it; its requests fail until it is back");
            }
            return;
        };
        let current = self.known.borrow().as_ref().map(|known| known.digest.clone());
        if current.as_deref() == Some(alive.digest.as_str()) {
            return;
        }
        let offer = match wire::get_chunked(&self.state, &wire::offer_key(&self.server)).await {
            Ok(Some(bytes)) => serde_json::from_slice::<Offer>(&bytes).ok(),
            _ => None,
        };
        let Some(offer) = offer else { return };
        if current.is_none() {
            tracing::info!(server = %self.server, replica = %self.owner, "the replica this server is pinned to runs it");
        }
        self.known.send_replace(Some(Arc::new(Known { digest: alive.digest, offer })));
    }

    fn gone(&self) -> String {
        format!(
            "{} is pinned to replica {}, which is not running it now (it has not renewed its key \
             in the shared state); try again when it is back",
            self.server, self.owner
        )
    }

    /// Sends `method` with `params` to the replica that runs the server and waits for its
    /// answer, passing its progress on to `context`'s peer.
    async fn relay(
        &self,
        method: &str,
        params: Value,
        context: &rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<Value, Failure> {
        if self.known.borrow().is_none() {
            return Err(Failure::Unavailable(self.gone()));
        }
        let Ok(_slot) = self.slots.clone().try_acquire_owned() else {
            return Err(Failure::Unavailable(format!(
                "{MOST_RELAYED} requests to {} (pinned to replica {}) are in flight from this \
                 replica already; try again",
                self.server, self.owner
            )));
        };
        let unavailable = |error: &dyn std::fmt::Display| {
            Failure::Unavailable(format!(
                "{} runs on replica {}, reached through the shared state, which failed: {error}",
                self.server, self.owner
            ))
        };
        let token = context.meta.get_progress_token();
        let id = wire::new_id();
        let request = Request { method: method.to_owned(), params, progress: token.is_some() };
        let bytes = serde_json::to_vec(&request).unwrap_or_default();
        let mut updates = self
            .state
            .subscribe(&wire::request_channel(&self.server, &id))
            .await
            .map_err(|e| unavailable(&e))?;
        let request_key = wire::request_key(&self.server, &id);
        wire::put_chunked(&self.state, &request_key, &bytes, self.request_ttl)
            .await
            .map_err(|e| unavailable(&e))?;
        if let Err(error) =
            self.state.publish(&wire::requests_channel(&self.server), id.as_bytes()).await
        {
            wire::delete_chunked(&self.state, &request_key).await;
            return Err(unavailable(&error));
        }
        let answer_key = wire::answer_key(&self.server, &id);
        let mut known = self.known.subscribe();
        let mut tick = tokio::time::interval(self.timing.poll);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut listening = true;
        loop {
            tokio::select! {
                () = context.ct.cancelled() => {
                    let _ = self.state.publish(&wire::cancels_channel(&self.server), id.as_bytes()).await;
                    wire::delete_chunked(&self.state, &request_key).await;
                    return Err(Failure::Cancelled);
                }
                update = updates.recv(), if listening => match update {
                    None => listening = false,
                    Some(payload) => match serde_json::from_slice::<Update>(&payload) {
                        Ok(Update::Answered) => break,
                        Ok(Update::Progress { progress, total, message }) => {
                            if let Some(token) = &token {
                                let mut params = mcp::ProgressNotificationParam::new(token.clone(), progress);
                                params.total = total;
                                params.message = message;
                                let _ = context.peer.notify_progress(params).await;
                            }
                        }
                        Err(_) => {}
                    },
                },
                _ = tick.tick() => {
                    if matches!(self.state.get(&answer_key).await, Ok(Some(_))) {
                        break;
                    }
                }
                changed = known.changed() => {
                    if changed.is_err() || known.borrow_and_update().is_none() {
                        wire::delete_chunked(&self.state, &request_key).await;
                        return Err(Failure::Unavailable(format!(
                            "replica {}, which runs {}, stopped while this request was in \
                             flight: it may or may not have run; try again when it is back",
                            self.owner, self.server
                        )));
                    }
                }
            }
        }
        let answer = match wire::take_chunked(&self.state, &answer_key).await {
            Ok(Some(bytes)) => serde_json::from_slice::<Answer>(&bytes)
                .map_err(|e| unavailable(&format_args!("its answer is unreadable: {e}")))?,
            Ok(None) => return Err(unavailable(&"its answer is gone")),
            Err(error) => return Err(unavailable(&error)),
        };
        match answer {
            Answer::Result(value) => Ok(value),
            Answer::Error(error) => Err(Failure::Answered(error)),
        }
    }
}

/// Why a relayed request has no result.
enum Failure {
    /// The server (or the replica running it) answered this error.
    Answered(mcp::ErrorData),
    /// It could not be relayed, or its answer could not come back.
    Unavailable(String),
    /// The caller gave up.
    Cancelled,
}

impl Failure {
    /// As a tool call's outcome: what could not travel is a tool error the model reads, as
    /// an upstream's broken connection is.
    fn for_tool(self) -> Result<mcp::CallToolResult, mcp::ErrorData> {
        match self {
            Failure::Answered(error) => Err(error),
            Failure::Unavailable(message) => {
                Ok(mcp::CallToolResult::error(vec![mcp::ContentBlock::text(message)]))
            }
            Failure::Cancelled => Err(cancelled()),
        }
    }

    /// As any other request's outcome: a JSON-RPC error.
    fn for_request(self) -> mcp::ErrorData {
        match self {
            Failure::Answered(error) => error,
            Failure::Unavailable(message) => mcp::ErrorData::internal_error(message, None),
            Failure::Cancelled => cancelled(),
        }
    }
}

fn cancelled() -> mcp::ErrorData {
    mcp::ErrorData::internal_error("the request was cancelled", None)
}

/// `params` as the replica running the server gets them: without this replica's own marks in
/// `_meta` (its progress token, and what it tells servers inside the process about the
/// caller, which is no business of a server elsewhere).
pub(super) fn relayed_params<T: serde::Serialize>(params: &T) -> Value {
    let mut value = serde_json::to_value(params).unwrap_or_default();
    if let Some(meta) = value.get_mut("_meta").and_then(Value::as_object_mut) {
        meta.remove("progressToken");
        meta.remove(toolgate_scripts::calls::CALLER_META);
        if meta.is_empty() {
            value.as_object_mut().map(|params| params.remove("_meta"));
        }
    }
    value
}

fn parse<T: serde::de::DeserializeOwned>(server: &str, value: Value) -> Result<T, mcp::ErrorData> {
    serde_json::from_value(value).map_err(|error| {
        mcp::ErrorData::internal_error(
            format!("the answer relayed from {server} is not a valid result: {error}"),
            None,
        )
    })
}

/// A [`Remote`] as the upstream layer starts it.
pub(crate) struct Served(pub(crate) Arc<Remote>);

impl InProcessServer for Served {
    fn serve(&self, stream: tokio::io::DuplexStream) {
        let remote = self.0.clone();
        tokio::spawn(async move {
            if remote.known.borrow().is_none() {
                remote.refresh().await;
            }
            let mut known = remote.known.subscribe();
            let first = known.borrow_and_update().clone();
            // Not seen yet: every list may come, and is announced when it does.
            let info = first.as_ref().map_or_else(unseen_info, |first| info_of(&first.offer));
            let mut listed = first.map(|first| first.offer.clone()).unwrap_or_default();
            let handler = Handler { remote: remote.clone(), info };
            let service = match rmcp::ServiceExt::serve(handler, stream).await {
                Ok(service) => service,
                Err(error) => {
                    tracing::debug!(server = %remote.server, %error, "a pinned server's pipe ended at its start");
                    return;
                }
            };
            let peer = service.peer().clone();
            let follow = async {
                while known.changed().await.is_ok() {
                    // Gone: what it offered stays listed until it is back.
                    let Some(now) = known.borrow_and_update().clone() else { continue };
                    let (was, is) = (&listed, &now.offer);
                    if was.tools != is.tools && peer.notify_tool_list_changed().await.is_err() {
                        return;
                    }
                    if was.prompts != is.prompts && peer.notify_prompt_list_changed().await.is_err()
                    {
                        return;
                    }
                    if (was.resources != is.resources
                        || was.resource_templates != is.resource_templates)
                        && peer.notify_resource_list_changed().await.is_err()
                    {
                        return;
                    }
                    listed = now.offer.clone();
                }
            };
            tokio::select! {
                _ = service.waiting() => {}
                () = follow => {}
            }
        });
    }
}

/// What a server not seen yet can do, as this replica offers it: any list, announced when
/// it comes.
fn unseen_info() -> mcp::ServerConfig {
    let capabilities = mcp::ServerCapabilities::builder()
        .enable_tools()
        .enable_tool_list_changed()
        .enable_prompts()
        .enable_prompts_list_changed()
        .enable_resources()
        .enable_resources_list_changed()
        .build();
    mcp::ServerConfig::new(capabilities)
}

/// What the server said it can do, as this replica offers it: the lists' changes are
/// announced here (the replica running it publishes them); resource subscriptions and logging
/// are not relayed.
fn info_of(offer: &Offer) -> mcp::ServerConfig {
    let mut capabilities = offer.capabilities.clone();
    if let Some(tools) = capabilities.tools.as_mut() {
        tools.list_changed = Some(true);
    }
    if let Some(prompts) = capabilities.prompts.as_mut() {
        prompts.list_changed = Some(true);
    }
    if let Some(resources) = capabilities.resources.as_mut() {
        resources.list_changed = Some(true);
        resources.subscribe = None;
    }
    capabilities.logging = None;
    let mut info = mcp::ServerConfig::new(capabilities);
    if let Some(server) = &offer.server {
        info = info.with_server_info(server.clone());
    }
    if let Some(instructions) = &offer.instructions {
        info = info.with_instructions(instructions.clone());
    }
    info
}

/// The rmcp handler of one connection to a [`Remote`].
#[derive(Clone)]
struct Handler {
    remote: Arc<Remote>,
    info: mcp::ServerConfig,
}

impl Handler {
    /// What the running replica offers now; nothing while it is not known.
    fn offer(&self) -> Offer {
        self.remote.known.borrow().as_ref().map(|known| known.offer.clone()).unwrap_or_default()
    }
}

impl rmcp::ServerHandler for Handler {
    fn get_info(&self) -> mcp::ServerConfig {
        self.info.clone()
    }

    async fn list_tools(
        &self,
        _request: Option<mcp::PaginatedRequestParams>,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<mcp::ListToolsResult, mcp::ErrorData> {
        Ok(mcp::ListToolsResult::with_all_items(self.offer().tools))
    }

    async fn list_prompts(
        &self,
        _request: Option<mcp::PaginatedRequestParams>,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<mcp::ListPromptsResult, mcp::ErrorData> {
        Ok(mcp::ListPromptsResult::with_all_items(self.offer().prompts))
    }

    async fn list_resources(
        &self,
        _request: Option<mcp::PaginatedRequestParams>,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<mcp::ListResourcesResult, mcp::ErrorData> {
        Ok(mcp::ListResourcesResult::with_all_items(self.offer().resources))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<mcp::PaginatedRequestParams>,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<mcp::ListResourceTemplatesResult, mcp::ErrorData> {
        let templates = self.offer().resource_templates;
        Ok(mcp::ListResourceTemplatesResult::with_all_items(templates))
    }

    async fn call_tool(
        &self,
        request: mcp::CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<mcp::CallToolResponse, mcp::ErrorData> {
        let params = relayed_params(&request);
        let result = match self.remote.relay("tools/call", params, &context).await {
            Ok(value) => parse::<mcp::CallToolResult>(&self.remote.server, value),
            Err(failure) => failure.for_tool(),
        };
        result.map(Into::into)
    }

    async fn get_prompt(
        &self,
        request: mcp::GetPromptRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<mcp::GetPromptResponse, mcp::ErrorData> {
        let params = relayed_params(&request);
        match self.remote.relay("prompts/get", params, &context).await {
            Ok(value) => parse::<mcp::GetPromptResult>(&self.remote.server, value).map(Into::into),
            Err(failure) => Err(failure.for_request()),
        }
    }

    async fn read_resource(
        &self,
        request: mcp::ReadResourceRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<mcp::ReadResourceResponse, mcp::ErrorData> {
        let params = relayed_params(&request);
        match self.remote.relay("resources/read", params, &context).await {
            Ok(value) => {
                parse::<mcp::ReadResourceResult>(&self.remote.server, value).map(Into::into)
            }
            Err(failure) => Err(failure.for_request()),
        }
    }

    async fn complete(
        &self,
        request: mcp::CompleteRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<mcp::CompleteResult, mcp::ErrorData> {
        let params = relayed_params(&request);
        match self.remote.relay("completion/complete", params, &context).await {
            Ok(value) => parse(&self.remote.server, value),
            Err(failure) => Err(failure.for_request()),
        }
    }
}
