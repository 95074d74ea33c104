//! One upstream server: its supervised connection, what it offers, and requests to it.

#![allow(deprecated)] // sampling, roots and logging are deprecated in 2026-07-28 (SEP-2577)

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use http::{HeaderName, HeaderValue};
use rmcp::model::ProtocolVersion;
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, PeerRequestOptions, QuitReason, RunningService,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientCacheConfig, Peer, RoleClient, ServiceError};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use toolgate_config::{HttpConfig, HttpTransport, ServerConfig, TransportConfig};
use toolgate_core::{BoxError, mcp};

use crate::call::{CallOptions, Caller};
use crate::error::{BothTransportsFailed, StderrTail, UpstreamError};
use crate::event::{ChangedLists, EventSender, UpstreamEvent};
use crate::handler::UpstreamHandler;
use crate::http_client::SessionAwareClient;
use crate::progress::ProgressLedger;
use crate::sse::SseTransport;
use crate::stdio::{self, ProcessGroupHandle, StderrLog};

#[cfg(test)]
mod tests;

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

/// One upstream server, supervised: it is connected in the background, reconnected with
/// backoff when its process dies or its connection drops, and its catalog is empty while it is
/// down.
pub struct Upstream {
    config: ServerConfig,
    shared: Arc<Shared>,
    link: RwLock<Option<Arc<Link>>>,
    last_error: Mutex<Option<String>>,
    first_attempt: watch::Receiver<Option<Result<(), String>>>,
    shutdown: CancellationToken,
    stopped: tokio::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Resources subscribed to; on 2026-07-28 connections they are part of the listen filter.
    subscribed: Mutex<std::collections::BTreeSet<String>>,
    /// Wakes the listen loop to reopen its stream with a new filter.
    refilter: tokio::sync::Notify,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream").field("name", &self.config.name).finish_non_exhaustive()
    }
}

/// One live connection.
struct Link {
    peer: Peer<RoleClient>,
    info: UpstreamInfo,
    /// Protocol 2026-07-28: notifications come only on `subscriptions/listen` streams.
    modern: bool,
    /// Cancelled when the connection has ended: requests in flight on it end at once.
    lost: CancellationToken,
    /// Cancelled by a request that found the transport broken: the supervisor reconnects.
    reset: CancellationToken,
}

/// State shared with the connection's handler.
pub(crate) struct Shared {
    pub(crate) name: String,
    events: Option<EventSender>,
    catalog: RwLock<Arc<Catalog>>,
    /// Held while listing and storing the catalog: rmcp handles each `list_changed` in a task
    /// of its own, and one may arrive during the first listing; unserialised, a slower listing
    /// would overwrite a newer one with what it read before the change.
    listing: tokio::sync::Mutex<()>,
    calls: Mutex<CallTable>,
}

/// Requests in flight, by the ids and progress tokens the upstream sees.
#[derive(Default)]
pub(crate) struct CallTable {
    by_request: HashMap<mcp::RequestId, Option<Arc<dyn Caller>>>,
    by_token: HashMap<mcp::ProgressToken, (Arc<dyn Caller>, Arc<ProgressLedger>)>,
}

impl CallTable {
    pub(crate) fn by_request(&self, id: &mcp::RequestId) -> Option<Arc<dyn Caller>> {
        self.by_request.get(id).cloned().flatten()
    }

    /// The caller whose call has this progress token, and that call's progress ledger.
    pub(crate) fn by_token(
        &self,
        token: &mcp::ProgressToken,
    ) -> Option<(Arc<dyn Caller>, Arc<ProgressLedger>)> {
        self.by_token.get(token).cloned()
    }

    pub(crate) fn ledger(&self, token: &mcp::ProgressToken) -> Option<Arc<ProgressLedger>> {
        self.by_token.get(token).map(|(_, ledger)| ledger.clone())
    }

    /// The caller of the only request in flight that has one, if exactly one has (toolgate's
    /// own requests, such as a re-listing, have none and do not make it ambiguous).
    pub(crate) fn only_caller(&self) -> Option<Arc<dyn Caller>> {
        let mut callers = self.by_request.values().flatten();
        match (callers.next(), callers.next()) {
            (Some(only), None) => Some(only.clone()),
            _ => None,
        }
    }
}

/// Removes a request from the call table when it ends, however it ends.
struct InFlight<'a> {
    shared: &'a Shared,
    id: mcp::RequestId,
    token: mcp::ProgressToken,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut calls = self.shared.calls();
        calls.by_request.remove(&self.id);
        calls.by_token.remove(&self.token);
    }
}

impl Shared {
    pub(crate) fn emit(&self, event: UpstreamEvent) {
        if let Some(events) = &self.events {
            let _ = events.send(event);
        }
    }

    pub(crate) fn calls(&self) -> std::sync::MutexGuard<'_, CallTable> {
        self.calls.lock().expect("call table lock must not be poisoned")
    }

    fn set_catalog(&self, catalog: Catalog) {
        *self.catalog.write().expect("catalog lock must not be poisoned") = Arc::new(catalog);
    }

    /// Re-lists what changed and tells the gateway.
    pub(crate) async fn relist(&self, peer: &Peer<RoleClient>, lists: ChangedLists) {
        let _listing = self.listing.lock().await;
        let mut catalog = Catalog::clone(&self.catalog.read().expect("catalog lock").clone());
        let fresh = list_catalog(&self.name, peer, lists).await;
        if lists.tools {
            catalog.tools = fresh.tools;
        }
        if lists.prompts {
            catalog.prompts = fresh.prompts;
        }
        if lists.resources {
            catalog.resources = fresh.resources;
            catalog.resource_templates = fresh.resource_templates;
        }
        if peer.is_transport_closed() {
            // That connection is gone; its catalog was already dropped.
            return;
        }
        self.set_catalog(catalog);
        self.emit(UpstreamEvent::CatalogChanged { upstream: self.name.clone(), lists });
    }
}

impl Upstream {
    /// Starts supervising the server `config` describes. Connection happens in the
    /// background; [`Upstream::ready`] waits for the first attempt.
    pub fn start(config: ServerConfig, events: Option<EventSender>) -> Arc<Upstream> {
        let (first_tx, first_attempt) = watch::channel(None);
        let upstream = Arc::new(Upstream {
            shared: Arc::new(Shared {
                name: config.name.clone(),
                events,
                catalog: RwLock::default(),
                listing: tokio::sync::Mutex::default(),
                calls: Mutex::default(),
            }),
            config,
            link: RwLock::new(None),
            last_error: Mutex::new(None),
            first_attempt,
            shutdown: CancellationToken::new(),
            stopped: tokio::sync::Mutex::new(None),
            subscribed: Mutex::default(),
            refilter: tokio::sync::Notify::new(),
        });
        let task = tokio::spawn(upstream.clone().supervise(first_tx));
        if let Ok(mut stopped) = upstream.stopped.try_lock() {
            *stopped = Some(task);
        }
        upstream
    }

    /// Connects once, without an event stream: for one-shot uses such as tests and clients.
    /// Fails with the reason of the first attempt; it is not retried.
    pub async fn connect(config: &ServerConfig) -> Result<Arc<Upstream>, UpstreamError> {
        let upstream = Upstream::start(config.clone(), None);
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
            Err(_) => Some(Err("the supervisor stopped".to_owned())),
        };
        match outcome {
            Some(Ok(())) => Ok(()),
            Some(Err(reason)) => {
                Err(UpstreamError::Failed { upstream: self.config.name.clone(), reason })
            }
            None => Err(UpstreamError::Disconnected { upstream: self.config.name.clone() }),
        }
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

    /// Whether it is connected now.
    pub fn is_connected(&self) -> bool {
        self.current_link().is_some()
    }

    /// What it offers now (empty while it is down).
    pub fn catalog(&self) -> Arc<Catalog> {
        self.shared.catalog.read().expect("catalog lock must not be poisoned").clone()
    }

    /// `tools/call` with the original tool name.
    pub async fn call_tool(
        &self,
        params: mcp::CallToolRequestParams,
        options: &CallOptions,
    ) -> Result<mcp::CallToolResult, UpstreamError> {
        let target = params.name.to_string();
        let mut params = params;
        for _round in 0..MAX_INPUT_ROUNDS {
            let request =
                mcp::ClientRequest::CallToolRequest(mcp::CallToolRequest::new(params.clone()));
            match self.send(request, "tools/call", &target, options).await? {
                mcp::ServerResult::CallToolResult(result) => return Ok(result),
                mcp::ServerResult::InputRequiredResult(input) => {
                    let (responses, state) = self.answer_inputs(input, options).await;
                    params.input_responses = Some(responses);
                    params.request_state = state;
                }
                other => return Err(self.unexpected("tools/call", &target, &other)),
            }
        }
        Err(self.too_many_rounds("tools/call", &target))
    }

    /// `resources/read` with the original URI.
    pub async fn read_resource(
        &self,
        params: mcp::ReadResourceRequestParams,
        options: &CallOptions,
    ) -> Result<mcp::ReadResourceResult, UpstreamError> {
        let target = params.uri.clone();
        let mut params = params;
        for _round in 0..MAX_INPUT_ROUNDS {
            let request = mcp::ClientRequest::ReadResourceRequest(mcp::ReadResourceRequest::new(
                params.clone(),
            ));
            match self.send(request, "resources/read", &target, options).await? {
                mcp::ServerResult::ReadResourceResult(result) => return Ok(result),
                mcp::ServerResult::InputRequiredResult(input) => {
                    let (responses, state) = self.answer_inputs(input, options).await;
                    params.input_responses = Some(responses);
                    params.request_state = state;
                }
                other => return Err(self.unexpected("resources/read", &target, &other)),
            }
        }
        Err(self.too_many_rounds("resources/read", &target))
    }

    /// `prompts/get` with the original prompt name.
    pub async fn get_prompt(
        &self,
        params: mcp::GetPromptRequestParams,
        options: &CallOptions,
    ) -> Result<mcp::GetPromptResult, UpstreamError> {
        let target = params.name.clone();
        let mut params = params;
        for _round in 0..MAX_INPUT_ROUNDS {
            let request =
                mcp::ClientRequest::GetPromptRequest(mcp::GetPromptRequest::new(params.clone()));
            match self.send(request, "prompts/get", &target, options).await? {
                mcp::ServerResult::GetPromptResult(result) => return Ok(result),
                mcp::ServerResult::InputRequiredResult(input) => {
                    let (responses, state) = self.answer_inputs(input, options).await;
                    params.input_responses = Some(responses);
                    params.request_state = state;
                }
                other => return Err(self.unexpected("prompts/get", &target, &other)),
            }
        }
        Err(self.too_many_rounds("prompts/get", &target))
    }

    /// `completion/complete` with original names.
    pub async fn complete(
        &self,
        params: mcp::CompleteRequestParams,
        options: &CallOptions,
    ) -> Result<mcp::CompleteResult, UpstreamError> {
        let request = mcp::ClientRequest::CompleteRequest(mcp::CompleteRequest::new(params));
        match self.send(request, "completion/complete", "", options).await? {
            mcp::ServerResult::CompleteResult(result) => Ok(result),
            other => Err(self.unexpected("completion/complete", "", &other)),
        }
    }

    /// Follows updates of `uri`: `resources/subscribe` on handshake-era connections, the
    /// `subscriptions/listen` filter on 2026-07-28 ones.
    pub async fn subscribe(&self, uri: &str) -> Result<(), UpstreamError> {
        self.subscribed.lock().expect("subscribed lock").insert(uri.to_owned());
        if self.current_link().is_some_and(|link| link.modern) {
            self.refilter.notify_waiters();
            return Ok(());
        }
        let request = mcp::ClientRequest::SubscribeRequest(mcp::SubscribeRequest::new(
            mcp::SubscribeRequestParams::new(uri),
        ));
        self.send(request, "resources/subscribe", uri, &CallOptions::default()).await.map(drop)
    }

    /// Stops following updates of `uri`.
    pub async fn unsubscribe(&self, uri: &str) -> Result<(), UpstreamError> {
        self.subscribed.lock().expect("subscribed lock").remove(uri);
        if self.current_link().is_some_and(|link| link.modern) {
            self.refilter.notify_waiters();
            return Ok(());
        }
        let request = mcp::ClientRequest::UnsubscribeRequest(mcp::UnsubscribeRequest::new(
            mcp::UnsubscribeRequestParams::new(uri),
        ));
        self.send(request, "resources/unsubscribe", uri, &CallOptions::default()).await.map(drop)
    }

    /// `logging/setLevel` (handshake-era servers).
    #[allow(deprecated)]
    pub async fn set_level(&self, level: mcp::LoggingLevel) -> Result<(), UpstreamError> {
        let request = mcp::ClientRequest::SetLevelRequest(mcp::SetLevelRequest::new(
            mcp::SetLevelRequestParams::new(level),
        ));
        self.send(request, "logging/setLevel", "", &CallOptions::default()).await.map(drop)
    }

    /// Stops supervising: ends the connection, and a child process and everything it started.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        if let Some(task) = self.stopped.lock().await.take() {
            let _ = task.await;
        }
    }

    fn current_link(&self) -> Option<Arc<Link>> {
        self.link.read().expect("link lock must not be poisoned").clone()
    }

    /// Sends one request on behalf of `options.caller`, with the server's timeout (reset by
    /// progress, capped at [`HARD_TIMEOUT_FACTOR`] × timeout), forwarding cancellation.
    async fn send(
        &self,
        request: mcp::ClientRequest,
        operation: &'static str,
        target: &str,
        options: &CallOptions,
    ) -> Result<mcp::ServerResult, UpstreamError> {
        let name = &self.config.name;
        let link = self
            .current_link()
            .ok_or_else(|| UpstreamError::Disconnected { upstream: name.clone() })?;
        let timeout = options.timeout.unwrap_or(self.config.timeout);
        let request_options = PeerRequestOptions::with_timeout(timeout)
            .reset_timeout_on_progress()
            .with_max_total_timeout(timeout.saturating_mul(HARD_TIMEOUT_FACTOR));
        let handle = match link.peer.send_request_with_option(request, request_options).await {
            Ok(handle) => handle,
            Err(source) => return Err(self.failed(&link, operation, source)),
        };
        let id = handle.id.clone();
        let token = handle.progress_token.clone();
        let ledger = options.caller.as_ref().map(|_| Arc::new(ProgressLedger::default()));
        {
            let mut calls = self.shared.calls();
            calls.by_request.insert(id.clone(), options.caller.clone());
            if let (Some(caller), Some(ledger)) = (&options.caller, &ledger) {
                calls.by_token.insert(token.clone(), (caller.clone(), ledger.clone()));
            }
        }
        let _in_flight = InFlight { shared: &self.shared, id: id.clone(), token };
        let target = target.to_owned();
        tokio::select! {
            result = handle.await_response() => match result {
                Ok(result) => {
                    if let Some(ledger) = &ledger {
                        ledger.caught_up().await;
                    }
                    Ok(result)
                }
                // rmcp says which limit it was, and has told the upstream.
                Err(ServiceError::Timeout { timeout: limit }) => Err(UpstreamError::Timeout {
                    upstream: name.clone(), operation, target, timeout: limit, in_all: limit != timeout,
                }),
                Err(source) => Err(self.failed(&link, operation, source)),
            },
            () = options.cancel.cancelled() => {
                let reason = Some("cancelled by the client".to_owned());
                let _ = link.peer.notify_cancelled(mcp::CancelledNotificationParam::new(Some(id), reason)).await;
                Err(UpstreamError::Cancelled { upstream: name.clone(), operation, target })
            }
            () = link.lost.cancelled() => Err(UpstreamError::ConnectionLost {
                upstream: name.clone(), operation, target,
            }),
        }
    }

    /// A request failed: a broken transport makes the supervisor reconnect.
    fn failed(&self, link: &Link, operation: &'static str, source: ServiceError) -> UpstreamError {
        if matches!(source, ServiceError::TransportClosed | ServiceError::TransportSend(_)) {
            link.reset.cancel();
        }
        UpstreamError::Request {
            upstream: self.config.name.clone(),
            operation,
            source: Box::new(source),
        }
    }

    fn unexpected(
        &self,
        operation: &'static str,
        target: &str,
        result: &mcp::ServerResult,
    ) -> UpstreamError {
        let detail = match result {
            mcp::ServerResult::CreateTaskResult(_) => {
                "a task (tasks are not supported yet)".to_owned()
            }
            other => format!("{other:?}").chars().take(200).collect(),
        };
        UpstreamError::Unexpected {
            upstream: self.config.name.clone(),
            operation,
            target: target.to_owned(),
            detail,
        }
    }

    fn too_many_rounds(&self, operation: &'static str, target: &str) -> UpstreamError {
        UpstreamError::Unexpected {
            upstream: self.config.name.clone(),
            operation,
            target: target.to_owned(),
            detail: format!("still asking for input after {MAX_INPUT_ROUNDS} rounds"),
        }
    }

    /// Answers a 2026-07-28 `input_required` result by asking the caller, for the retry.
    async fn answer_inputs(
        &self,
        input: mcp::InputRequiredResult,
        options: &CallOptions,
    ) -> (mcp::InputResponses, Option<String>) {
        let mut responses = mcp::InputResponses::new();
        for (key, request) in input.input_requests.unwrap_or_default() {
            let answer = match (&options.caller, request) {
                (None, _) => Err(crate::call::unsupported("requests for input")),
                (Some(caller), mcp::InputRequest::Elicitation(request)) => caller
                    .create_elicitation(request.params)
                    .await
                    .map(|r| serde_json::to_value(r).unwrap_or_default()),
                (Some(caller), mcp::InputRequest::CreateMessage(request)) => caller
                    .create_message(request.params)
                    .await
                    .map(|r| serde_json::to_value(r).unwrap_or_default()),
                (Some(caller), mcp::InputRequest::ListRoots(_)) => {
                    caller.list_roots().await.map(|r| serde_json::to_value(r).unwrap_or_default())
                }
                (Some(_), _) => Err(crate::call::unsupported("this kind of input request")),
            };
            let value = answer.unwrap_or_else(|error| {
                serde_json::json!({ "error": { "code": error.code.0, "message": error.message } })
            });
            responses.insert(key, value);
        }
        (responses, input.request_state)
    }

    // === supervision ===

    async fn supervise(self: Arc<Self>, first: watch::Sender<Option<Result<(), String>>>) {
        let mut failures: u32 = 0;
        loop {
            let attempt = tokio::select! {
                attempt = self.connect_once() => attempt,
                () = self.shutdown.cancelled() => break,
            };
            match attempt {
                Ok((service, link, group)) => {
                    failures = 0;
                    *self.last_error.lock().expect("last error lock") = None;
                    *self.link.write().expect("link lock") = Some(link.clone());
                    tracing::info!(
                        upstream = %self.config.name,
                        transport = link.info.transport,
                        protocol = %link.info.protocol_version,
                        tools = self.catalog().tools.len(),
                        startup_ms = link.info.startup.as_millis() as u64,
                        "upstream connected"
                    );
                    self.shared
                        .emit(UpstreamEvent::Connected { upstream: self.config.name.clone() });
                    first.send_replace(Some(Ok(())));
                    if link.modern {
                        tokio::spawn(self.clone().listen(link.clone()));
                    }
                    let reason = self.run_until_lost(service, &link).await;
                    link.lost.cancel();
                    *self.link.write().expect("link lock") = None;
                    self.shared.set_catalog(Catalog::default());
                    if let Some(group) = group {
                        group.kill();
                    }
                    if self.shutdown.is_cancelled() {
                        break;
                    }
                    tracing::warn!(upstream = %self.config.name, %reason, "upstream connection lost; reconnecting");
                    *self.last_error.lock().expect("last error lock") = Some(reason.clone());
                    self.shared.emit(UpstreamEvent::Disconnected {
                        upstream: self.config.name.clone(),
                        reason,
                    });
                }
                Err(error) => {
                    // `UpstreamError::Failed` names the upstream itself.
                    let chain = toolgate_core::ErrorChain(&error).to_string();
                    let own_name = format!("upstream {}: ", self.config.name);
                    let reason = chain.strip_prefix(&own_name).unwrap_or(&chain).to_owned();
                    if failures == 0 {
                        tracing::warn!(upstream = %self.config.name, error = %reason, "upstream failed to start");
                    } else {
                        tracing::debug!(upstream = %self.config.name, error = %reason, failures, "upstream still failing");
                    }
                    *self.last_error.lock().expect("last error lock") = Some(reason.clone());
                    if first.borrow().is_none() {
                        first.send_replace(Some(Err(reason.clone())));
                        self.shared.emit(UpstreamEvent::Disconnected {
                            upstream: self.config.name.clone(),
                            reason,
                        });
                    }
                    failures = failures.saturating_add(1);
                }
            }
            let delay = backoff_delay(failures, toolgate_core::backoff::random_u64());
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = self.shutdown.cancelled() => break,
            }
        }
        if first.borrow().is_none() {
            first.send_replace(Some(Err("stopped before connecting".to_owned())));
        }
    }

    /// Waits until the connection ends by itself, a request found it broken, or shutdown.
    async fn run_until_lost(&self, service: Service, link: &Link) -> String {
        let stop = service.cancellation_token();
        let waiting = service.waiting();
        tokio::pin!(waiting);
        tokio::select! {
            quit = &mut waiting => return format!("the connection closed ({})", quit_reason(quit)),
            () = self.shutdown.cancelled() => self.cancel_in_flight(link).await,
            () = link.reset.cancelled() => {}
        }
        stop.cancel();
        let _ = tokio::time::timeout(CLOSE_GRACE, waiting).await;
        "the transport broke".to_owned()
    }

    /// Asks the server to stop what it is still doing for us, so that it can end as soon as
    /// its input closes (a server busy with a request may otherwise finish it first).
    async fn cancel_in_flight(&self, link: &Link) {
        let ids: Vec<mcp::RequestId> = self.shared.calls().by_request.keys().cloned().collect();
        for id in ids {
            let reason = Some("toolgate is shutting down".to_owned());
            let cancelled = mcp::CancelledNotificationParam::new(Some(id), reason);
            let _ = tokio::time::timeout(CANCEL_SEND_LIMIT, link.peer.notify_cancelled(cancelled))
                .await;
        }
    }

    /// On a 2026-07-28 connection, keeps a `subscriptions/listen` stream open for list changes
    /// and the subscribed resources, reopening it when the subscriptions change.
    async fn listen(self: Arc<Self>, link: Arc<Link>) {
        let capabilities = &link.info.capabilities;
        loop {
            let mut filter = mcp::SubscriptionFilter::new();
            filter.tools_list_changed = capabilities.tools.as_ref().and_then(|c| c.list_changed);
            filter.prompts_list_changed =
                capabilities.prompts.as_ref().and_then(|c| c.list_changed);
            filter.resources_list_changed =
                capabilities.resources.as_ref().and_then(|c| c.list_changed);
            let uris: Vec<String> =
                self.subscribed.lock().expect("subscribed lock").iter().cloned().collect();
            if !uris.is_empty() {
                filter.resource_subscriptions = Some(uris);
            }
            let refiltered = self.refilter.notified();
            tokio::pin!(refiltered);
            let mut subscription = tokio::select! {
                opened = link.peer.listen(filter) => match opened {
                    Ok(subscription) => subscription,
                    Err(error) => {
                        tracing::debug!(upstream = %self.config.name, %error, "subscriptions/listen failed");
                        return;
                    }
                },
                () = link.lost.cancelled() => return,
            };
            loop {
                tokio::select! {
                    next = subscription.next() => match next {
                        Ok(Some(notification)) => self.on_listened(&link, notification).await,
                        _ => return,
                    },
                    () = &mut refiltered => {
                        let _ = subscription.cancel().await;
                        break;
                    }
                    () = link.lost.cancelled() => return,
                }
            }
        }
    }

    async fn on_listened(&self, link: &Link, notification: mcp::ServerNotification) {
        let lists = match notification {
            mcp::ServerNotification::ToolListChangedNotification(_) => {
                ChangedLists { tools: true, ..Default::default() }
            }
            mcp::ServerNotification::PromptListChangedNotification(_) => {
                ChangedLists { prompts: true, ..Default::default() }
            }
            mcp::ServerNotification::ResourceListChangedNotification(_) => {
                ChangedLists { resources: true, ..Default::default() }
            }
            mcp::ServerNotification::ResourceUpdatedNotification(updated) => {
                let upstream = self.config.name.clone();
                self.shared
                    .emit(UpstreamEvent::ResourceUpdated { upstream, uri: updated.params.uri });
                return;
            }
            _ => return,
        };
        self.shared.relist(&link.peer, lists).await;
    }

    async fn connect_once(
        &self,
    ) -> Result<(Service, Arc<Link>, Option<ProcessGroupHandle>), UpstreamError> {
        let config = &self.config;
        let started = Instant::now();
        let name = config.name.clone();
        let stderr = StderrLog::default();
        let handler = UpstreamHandler::new(self.shared.clone());
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
        let _listing = self.shared.listing.lock().await;
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
        self.shared.set_catalog(catalog);
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
        Ok((service, link, group))
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// Rounds of `input_required` answered for one request before giving up.
const MAX_INPUT_ROUNDS: usize = 10;
/// A request may run this many times its `timeout` in all, however much progress it reports.
pub const HARD_TIMEOUT_FACTOR: u32 = 10;
/// Time one cancellation may take to send on shutdown.
const CANCEL_SEND_LIMIT: Duration = Duration::from_millis(250);
/// Time a closing connection gets to end cleanly.
const CLOSE_GRACE: Duration = Duration::from_secs(5);
/// First reconnection delay.
const BACKOFF_BASE: Duration = Duration::from_millis(200);
/// Longest reconnection delay.
const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// The delay before reconnection attempt `failures` (0 = right after a lost connection):
/// exponential from [`BACKOFF_BASE`], capped at [`BACKOFF_MAX`], with 50–100% jitter so that
/// many gateways do not retry in step.
pub(crate) fn backoff_delay(failures: u32, random: u64) -> Duration {
    toolgate_core::backoff::delay(failures, BACKOFF_BASE, BACKOFF_MAX, random)
}

fn quit_reason(quit: Result<QuitReason, tokio::task::JoinError>) -> &'static str {
    match quit {
        Ok(QuitReason::Closed) => "closed by the server",
        Ok(QuitReason::Cancelled) => "cancelled",
        _ => "the connection task failed",
    }
}

// === connecting ===

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

/// Lists what `lists` names and the server's capabilities say it offers. A list that fails is
/// logged and left empty: one broken list should not hide the rest of a server.
async fn list_catalog(upstream: &str, peer: &Peer<RoleClient>, lists: ChangedLists) -> Catalog {
    let capabilities = peer.peer_info().map(|i| i.capabilities.clone()).unwrap_or_default();
    let mut catalog = Catalog::default();
    if lists.tools && capabilities.tools.is_some() {
        catalog.tools = listed(upstream, "tools/list", peer.list_all_tools().await);
    }
    if lists.resources && capabilities.resources.is_some() {
        catalog.resources = listed(upstream, "resources/list", peer.list_all_resources().await);
        catalog.resource_templates =
            listed(upstream, "resources/templates/list", peer.list_all_resource_templates().await);
    }
    if lists.prompts && capabilities.prompts.is_some() {
        catalog.prompts = listed(upstream, "prompts/list", peer.list_all_prompts().await);
    }
    catalog
}

fn listed<T>(upstream: &str, what: &str, result: Result<Vec<T>, ServiceError>) -> Vec<T> {
    result.unwrap_or_else(|error| {
        // A closed transport is reported by the caller as a failed connection.
        if !matches!(error, ServiceError::TransportClosed) {
            tracing::warn!(upstream, %error, "{what} failed; treating it as empty");
        }
        Vec::new()
    })
}
