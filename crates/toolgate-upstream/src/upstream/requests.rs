//! Requests to an upstream: each is sent on behalf of a caller, under the server's timeout,
//! with cancellation forwarded; a 2026-07-28 `input_required` answer is answered through the
//! caller and the request retried.

#![allow(deprecated)] // sampling, roots and logging are deprecated in 2026-07-28 (SEP-2577)

use std::sync::Arc;
use std::sync::atomic::Ordering;

use rmcp::ServiceError;
use rmcp::model::GetExtensions as _;
use rmcp::service::PeerRequestOptions;
use toolgate_core::mcp;

use super::{HARD_TIMEOUT_FACTOR, LinkState, Upstream};
use crate::call::CallOptions;
use crate::connect::Link;
use crate::error::UpstreamError;
use crate::progress_ledger::ProgressLedger;
use crate::raw::{RawSlot, RawToolResult, ToolAnswer};

/// How one attempt to send a request ended, when it did not bring a result.
enum Attempt {
    /// The request was never written to the server: it may be sent again.
    Unwritten(ServiceError),
    /// Anything else.
    Failed(UpstreamError),
}

/// Whether `error` says the request never left toolgate: the connection was already closed,
/// or writing to it failed.
fn unwritten(error: &ServiceError) -> bool {
    matches!(error, ServiceError::TransportClosed | ServiceError::TransportSend(_))
}

/// A result as it came: parsed, or kept as the server wrote it.
enum Sent<T> {
    Parsed(T),
    Raw(RawToolResult),
}

impl<T: serde::de::DeserializeOwned> Sent<T> {
    /// The result parsed, whichever way it came.
    fn parsed(self, upstream: &Upstream, target: &str) -> Result<T, UpstreamError> {
        match self {
            Sent::Parsed(result) => Ok(result),
            Sent::Raw(raw) => {
                serde_json::from_str(raw.json()).map_err(|error| UpstreamError::Unexpected {
                    upstream: upstream.config.name.clone(),
                    operation: "tools/call",
                    target: target.to_owned(),
                    detail: format!("a result that is not a CallToolResult ({error})"),
                })
            }
        }
    }
}

/// Rounds of `input_required` answered for one request before giving up.
const MAX_INPUT_ROUNDS: usize = 10;

/// How long `subscribe` waits, on a 2026-07-28 connection, for the listen stream to follow the
/// new resource (a server that never acknowledges does not hold the subscription up longer).
pub(crate) const LISTEN_FOLLOWS: std::time::Duration = std::time::Duration::from_secs(5);

/// A request that a 2026-07-28 server may answer with `input_required`: it is then sent again
/// with the answers to the server's questions.
trait AskedAgain: Clone {
    /// The result it expects.
    type Output: serde::de::DeserializeOwned;
    /// The method, for errors.
    const OPERATION: &'static str;
    /// The request on the wire.
    fn request(self) -> mcp::ClientRequest;
    /// Its result, or the result it got instead.
    fn result(result: mcp::ServerResult) -> Result<Self::Output, Box<mcp::ServerResult>>;
    /// Carries the answers (and the server's state) into the next round.
    fn answered(&mut self, responses: mcp::InputResponses, state: Option<String>);
}

impl AskedAgain for mcp::CallToolRequestParams {
    type Output = mcp::CallToolResult;
    const OPERATION: &'static str = "tools/call";

    fn request(self) -> mcp::ClientRequest {
        mcp::ClientRequest::CallToolRequest(mcp::CallToolRequest::new(self))
    }

    fn result(result: mcp::ServerResult) -> Result<Self::Output, Box<mcp::ServerResult>> {
        match result {
            mcp::ServerResult::CallToolResult(result) => Ok(result),
            other => Err(Box::new(other)),
        }
    }

    fn answered(&mut self, responses: mcp::InputResponses, state: Option<String>) {
        self.input_responses = Some(responses);
        self.request_state = state;
    }
}

impl AskedAgain for mcp::ReadResourceRequestParams {
    type Output = mcp::ReadResourceResult;
    const OPERATION: &'static str = "resources/read";

    fn request(self) -> mcp::ClientRequest {
        mcp::ClientRequest::ReadResourceRequest(mcp::ReadResourceRequest::new(self))
    }

    fn result(result: mcp::ServerResult) -> Result<Self::Output, Box<mcp::ServerResult>> {
        match result {
            mcp::ServerResult::ReadResourceResult(result) => Ok(result),
            other => Err(Box::new(other)),
        }
    }

    fn answered(&mut self, responses: mcp::InputResponses, state: Option<String>) {
        self.input_responses = Some(responses);
        self.request_state = state;
    }
}

impl AskedAgain for mcp::GetPromptRequestParams {
    type Output = mcp::GetPromptResult;
    const OPERATION: &'static str = "prompts/get";

    fn request(self) -> mcp::ClientRequest {
        mcp::ClientRequest::GetPromptRequest(mcp::GetPromptRequest::new(self))
    }

    fn result(result: mcp::ServerResult) -> Result<Self::Output, Box<mcp::ServerResult>> {
        match result {
            mcp::ServerResult::GetPromptResult(result) => Ok(result),
            other => Err(Box::new(other)),
        }
    }

    fn answered(&mut self, responses: mcp::InputResponses, state: Option<String>) {
        self.input_responses = Some(responses);
        self.request_state = state;
    }
}

impl Upstream {
    /// `tools/call` with the original tool name.
    pub async fn call_tool(
        &self,
        params: mcp::CallToolRequestParams,
        options: &CallOptions,
    ) -> Result<mcp::CallToolResult, UpstreamError> {
        let target = params.name.to_string();
        self.send_answering_inputs(params, &target, options, None).await?.parsed(self, &target)
    }

    /// `tools/call` with the original tool name, for a caller that passes the result on
    /// without reading it: where the transport can (stdio), the result comes as the JSON the
    /// server wrote ([`ToolAnswer::Raw`], see [`crate::raw`]); otherwise parsed.
    pub async fn call_tool_answer(
        &self,
        params: mcp::CallToolRequestParams,
        options: &CallOptions,
    ) -> Result<ToolAnswer, UpstreamError> {
        let target = params.name.to_string();
        let slot = Arc::new(RawSlot::default());
        match self.send_answering_inputs(params, &target, options, Some(&slot)).await? {
            Sent::Parsed(result) => Ok(ToolAnswer::Parsed(result)),
            Sent::Raw(raw) => Ok(ToolAnswer::Raw(raw)),
        }
    }

    /// `resources/read` with the original URI.
    pub async fn read_resource(
        &self,
        params: mcp::ReadResourceRequestParams,
        options: &CallOptions,
    ) -> Result<mcp::ReadResourceResult, UpstreamError> {
        let target = params.uri.clone();
        self.send_answering_inputs(params, &target, options, None).await?.parsed(self, &target)
    }

    /// `prompts/get` with the original prompt name.
    pub async fn get_prompt(
        &self,
        params: mcp::GetPromptRequestParams,
        options: &CallOptions,
    ) -> Result<mcp::GetPromptResult, UpstreamError> {
        let target = params.name.clone();
        self.send_answering_inputs(params, &target, options, None).await?.parsed(self, &target)
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
    /// On a 2026-07-28 connection it returns once the listen stream follows `uri` (or after
    /// [`LISTEN_FOLLOWS`]), so that an update made right after is not missed.
    pub async fn subscribe(&self, uri: &str) -> Result<(), UpstreamError> {
        if self.subscribe_unconfirmed(uri).await? {
            self.subscriptions_followed().await;
        }
        Ok(())
    }

    /// [`Upstream::subscribe`] without waiting for a 2026-07-28 listen stream to follow `uri`:
    /// `true` when that is still to come, for [`Upstream::subscriptions_followed`] to await
    /// once after many. (Each wait is a new listen stream naming every subscription, so
    /// waiting after each of `n` would cost `n` streams of up to `n` URIs each.)
    pub async fn subscribe_unconfirmed(&self, uri: &str) -> Result<bool, UpstreamError> {
        self.subscribed.lock().expect("subscribed lock").insert(uri.to_owned());
        if self.current_link().is_some_and(|link| link.modern) {
            self.filter_generation.fetch_add(1, Ordering::SeqCst);
            self.refilter.notify_waiters();
            return Ok(true);
        }
        let request = mcp::ClientRequest::SubscribeRequest(mcp::SubscribeRequest::new(
            mcp::SubscribeRequestParams::new(uri),
        ));
        self.send(request, "resources/subscribe", uri, &CallOptions::default()).await?;
        Ok(false)
    }

    /// Returns once the 2026-07-28 listen stream follows every subscription made so far (or
    /// after [`LISTEN_FOLLOWS`]); at once on other connections.
    pub async fn subscriptions_followed(&self) {
        if !self.current_link().is_some_and(|link| link.modern) {
            return;
        }
        let generation = self.filter_generation.load(Ordering::SeqCst);
        let mut listening = self.listening.subscribe();
        let follows = listening.wait_for(|open| *open >= generation);
        let _ = tokio::time::timeout(LISTEN_FOLLOWS, follows).await;
    }

    /// Stops following updates of `uri`.
    pub async fn unsubscribe(&self, uri: &str) -> Result<(), UpstreamError> {
        self.subscribed.lock().expect("subscribed lock").remove(uri);
        if self.current_link().is_some_and(|link| link.modern) {
            self.filter_generation.fetch_add(1, Ordering::SeqCst);
            self.refilter.notify_waiters();
            return Ok(());
        }
        let request = mcp::ClientRequest::UnsubscribeRequest(mcp::UnsubscribeRequest::new(
            mcp::UnsubscribeRequestParams::new(uri),
        ));
        self.send(request, "resources/unsubscribe", uri, &CallOptions::default()).await.map(drop)
    }

    /// `logging/setLevel` (handshake-era servers).
    pub async fn set_level(&self, level: mcp::LoggingLevel) -> Result<(), UpstreamError> {
        let request = mcp::ClientRequest::SetLevelRequest(mcp::SetLevelRequest::new(
            mcp::SetLevelRequestParams::new(level),
        ));
        self.send(request, "logging/setLevel", "", &CallOptions::default()).await.map(drop)
    }

    /// Sends `params`, answering `input_required` rounds through the caller until the result
    /// comes (at most [`MAX_INPUT_ROUNDS`] rounds).
    /// With `raw`, a result the transport kept as written comes back as it is.
    async fn send_answering_inputs<P: AskedAgain>(
        &self,
        params: P,
        target: &str,
        options: &CallOptions,
        raw: Option<&Arc<RawSlot>>,
    ) -> Result<Sent<P::Output>, UpstreamError> {
        let mut params = params;
        for _round in 0..MAX_INPUT_ROUNDS {
            let request = params.clone().request();
            let result = self.send_with(request, P::OPERATION, target, options, raw).await?;
            if let Some(raw) = raw.and_then(|slot| slot.take()) {
                return Ok(Sent::Raw(raw));
            }
            match P::result(result) {
                Ok(result) => return Ok(Sent::Parsed(result)),
                Err(other) => match *other {
                    mcp::ServerResult::InputRequiredResult(input) => {
                        let (responses, state) = self.answer_inputs(input, options).await.map_err(
                            |(method, error)| UpstreamError::InputRefused {
                                upstream: self.config.name.clone(),
                                operation: P::OPERATION,
                                target: target.to_owned(),
                                method,
                                message: error.message.to_string(),
                            },
                        )?;
                        params.answered(responses, state);
                    }
                    other => return Err(self.unexpected(P::OPERATION, target, &other)),
                },
            }
        }
        Err(UpstreamError::Unexpected {
            upstream: self.config.name.clone(),
            operation: P::OPERATION,
            target: target.to_owned(),
            detail: format!("still asking for input after {MAX_INPUT_ROUNDS} rounds"),
        })
    }

    /// Sends one request on behalf of `options.caller`, with the server's timeout (reset by
    /// progress, capped at [`HARD_TIMEOUT_FACTOR`] × timeout), forwarding cancellation. A
    /// request that could not even be written to a stdio server (its process had died, and the
    /// supervisor had not noticed yet) waits for the restart and is sent again, as often as
    /// that happens (a server killed twice in a row), each wait at most its `restart_wait`:
    /// the server never saw it, so sending it again cannot do anything twice.
    async fn send(
        &self,
        request: mcp::ClientRequest,
        operation: &'static str,
        target: &str,
        options: &CallOptions,
    ) -> Result<mcp::ServerResult, UpstreamError> {
        self.send_with(request, operation, target, options, None).await
    }

    /// [`send`](Self::send), leaving a result kept as written in `raw` (then the result
    /// returned is empty). With tracing on, in a CLIENT span whose context the request
    /// carries in its `_meta` (`crate::trace`).
    async fn send_with(
        &self,
        request: mcp::ClientRequest,
        operation: &'static str,
        target: &str,
        options: &CallOptions,
        raw: Option<&Arc<RawSlot>>,
    ) -> Result<mcp::ServerResult, UpstreamError> {
        let mut request = request;
        let Some(cx) = crate::trace::client_span(&self.config, operation, target, &mut request)
        else {
            return self.send_attempts(request, operation, target, options, raw).await;
        };
        let sent = self.send_attempts(request, operation, target, options, raw).await;
        crate::trace::end(&cx, &sent);
        sent
    }

    /// [`send_with`](Self::send_with) without the span: attempts until one is written.
    async fn send_attempts(
        &self,
        request: mcp::ClientRequest,
        operation: &'static str,
        target: &str,
        options: &CallOptions,
        raw: Option<&Arc<RawSlot>>,
    ) -> Result<mcp::ServerResult, UpstreamError> {
        let mut link = match self.current_link() {
            Some(link) => link,
            None => self.link_back(None, operation, target, options).await?,
        };
        loop {
            match self.send_on(&link, request.clone(), operation, target, options, raw).await {
                Ok(result) => return Ok(result),
                Err(Attempt::Failed(error)) => return Err(error),
                Err(Attempt::Unwritten(source)) if link.info.transport != "stdio" => {
                    return Err(self.failed(&link, operation, source));
                }
                // Each time on a new process (`link_back` waits for one other than this), so
                // this ends when one takes the request, the restart takes too long, or the
                // caller gives up.
                Err(Attempt::Unwritten(_)) => {
                    link.reset.cancel();
                    link = self.link_back(Some(&link), operation, target, options).await?;
                }
            }
        }
    }

    /// One attempt of [`send`](Self::send) on `link`.
    async fn send_on(
        &self,
        link: &Arc<Link>,
        request: mcp::ClientRequest,
        operation: &'static str,
        target: &str,
        options: &CallOptions,
        raw: Option<&Arc<RawSlot>>,
    ) -> Result<mcp::ServerResult, Attempt> {
        let name = &self.config.name;
        let timeout = options.timeout.unwrap_or(self.config.timeout);
        let mut request_options = PeerRequestOptions::with_timeout(timeout)
            .reset_timeout_on_progress()
            .with_max_total_timeout(timeout.saturating_mul(HARD_TIMEOUT_FACTOR));
        if link.modern
            && let Some(client) = options.caller.as_ref().and_then(|caller| caller.capabilities())
        {
            // A 2026-07-28 server learns per request what it may ask: what toolgate can relay
            // and the caller can answer.
            let mut meta = mcp::RequestMetaObject::default();
            meta.set_client_capabilities(relayable(client));
            request_options.meta = Some(meta);
        }
        let ledger = options.caller.as_ref().map(|_| Arc::new(ProgressLedger::default()));
        // Entered in the call table by the transport as it is written (see `call_table`).
        let (registration, _in_flight) =
            self.shared.calls.prepare(options.caller.clone(), ledger.clone(), raw.cloned());
        let mut request = request;
        request.extensions_mut().insert(registration);
        let handle = match link.peer.send_request_with_option(request, request_options).await {
            Ok(handle) => handle,
            Err(source) if unwritten(&source) => return Err(Attempt::Unwritten(source)),
            Err(source) => return Err(Attempt::Failed(self.failed(link, operation, source))),
        };
        let id = handle.id.clone();
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
                Err(ServiceError::Timeout { timeout: limit }) => Err(Attempt::Failed(UpstreamError::Timeout {
                    upstream: name.clone(), operation, target, timeout: limit, in_all: limit != timeout,
                })),
                Err(source @ ServiceError::TransportSend(_)) => Err(Attempt::Unwritten(source)),
                // The connection ended while the request was out: as when `lost` comes first.
                Err(ServiceError::TransportClosed) => {
                    link.reset.cancel();
                    Err(Attempt::Failed(self.lost(link, operation, target)))
                }
                Err(_) if link.restarted.load(Ordering::Acquire) => {
                    Err(Attempt::Failed(self.lost(link, operation, target)))
                }
                Err(source) => Err(Attempt::Failed(self.failed(link, operation, source))),
            },
            () = options.cancel.cancelled() => {
                let reason = Some("cancelled by the client".to_owned());
                let _ = link.peer.notify_cancelled(mcp::CancelledNotificationParam::new(Some(id), reason)).await;
                Err(Attempt::Failed(UpstreamError::Cancelled { upstream: name.clone(), operation, target }))
            }
            () = link.lost.cancelled() => Err(Attempt::Failed(self.lost(link, operation, target))),
        }
    }

    /// The connection, once the server is back from a restart (or its first start), other
    /// than `broken`: waits up to its `restart_wait`, or until the caller gives up.
    async fn link_back(
        &self,
        broken: Option<&Arc<Link>>,
        operation: &'static str,
        target: &str,
        options: &CallOptions,
    ) -> Result<Arc<Link>, UpstreamError> {
        let name = &self.config.name;
        let mut state = self.link.subscribe();
        let settled = state.wait_for(|s| match s {
            LinkState::Restarting | LinkState::Starting => false,
            LinkState::Up(link) => broken.is_none_or(|broken| !Arc::ptr_eq(link, broken)),
            LinkState::Down => true,
        });
        tokio::select! {
            settled = tokio::time::timeout(self.config.restart_wait, settled) => match settled {
                Ok(Ok(state)) => match &*state {
                    LinkState::Up(link) => Ok(link.clone()),
                    _ => Err(UpstreamError::Disconnected { upstream: name.clone() }),
                },
                Ok(Err(_)) => Err(UpstreamError::Disconnected { upstream: name.clone() }),
                Err(_) => Err(UpstreamError::Restarting {
                    upstream: name.clone(),
                    operation,
                    target: target.to_owned(),
                    waited: self.config.restart_wait,
                }),
            },
            () = options.cancel.cancelled() => Err(UpstreamError::Cancelled {
                upstream: name.clone(),
                operation,
                target: target.to_owned(),
            }),
        }
    }

    /// A request in flight on `link` when it ended: lost, or dropped by a restart.
    fn lost(&self, link: &Link, operation: &'static str, target: String) -> UpstreamError {
        let upstream = self.config.name.clone();
        if link.restarted.load(Ordering::Acquire) {
            UpstreamError::Restarted { upstream, operation, target }
        } else {
            UpstreamError::ConnectionLost { upstream, operation, target }
        }
    }

    /// A request failed: a broken transport makes the supervisor reconnect.
    fn failed(&self, link: &Link, operation: &'static str, source: ServiceError) -> UpstreamError {
        if self.shared.login.is_some() && crate::signin::wants_login(&source) {
            return UpstreamError::NeedsLogin { upstream: self.config.name.clone() };
        }
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

    /// Answers a 2026-07-28 `input_required` result by asking the caller, for the retry. A
    /// question the caller does not answer (refused, declined, or not supported) ends the
    /// request, as a client of that era would end it: the protocol has no way to send an
    /// error back as an answer.
    async fn answer_inputs(
        &self,
        input: mcp::InputRequiredResult,
        options: &CallOptions,
    ) -> Result<(mcp::InputResponses, Option<String>), (&'static str, mcp::ErrorData)> {
        if let Some(caller) = options.caller.as_ref().filter(|caller| caller.answers_rounds()) {
            // A caller that answers a round as a whole gets it as the server wrote it.
            let asked = caller.input_round(input.input_requests.unwrap_or_default()).await;
            return asked
                .map(|responses| (responses, input.request_state))
                .map_err(|refused| (refused.method, refused.error));
        }
        let mut responses = mcp::InputResponses::new();
        for (key, request) in input.input_requests.unwrap_or_default() {
            let (method, answer) = match (&options.caller, request) {
                (None, request) => {
                    let method = input_method(&request);
                    (method, Err(crate::call::unsupported(method)))
                }
                (Some(caller), mcp::InputRequest::Elicitation(request)) => (
                    "elicitation/create",
                    caller.create_elicitation(request.params).await.map(json),
                ),
                (Some(caller), mcp::InputRequest::CreateMessage(request)) => (
                    "sampling/createMessage",
                    caller.create_message(request.params).await.map(json),
                ),
                (Some(caller), mcp::InputRequest::ListRoots(_)) => {
                    ("roots/list", caller.list_roots().await.map(json))
                }
                (Some(_), request) => {
                    let method = input_method(&request);
                    (method, Err(crate::call::unsupported(method)))
                }
            };
            responses.insert(key, answer.map_err(|error| (method, error))?);
        }
        Ok((responses, input.request_state))
    }
}

/// Of what a client declared, what toolgate relays to it when an upstream asks: sampling,
/// elicitation and roots (no extensions or tasks, which it does not relay).
fn relayable(client: mcp::ClientCapabilities) -> mcp::ClientCapabilities {
    let mut relayed = mcp::ClientCapabilities::default();
    relayed.sampling = client.sampling;
    relayed.elicitation = client.elicitation;
    relayed.roots = client.roots;
    relayed
}

/// The method of an input request.
fn input_method(request: &mcp::InputRequest) -> &'static str {
    match request {
        mcp::InputRequest::CreateMessage(_) => "sampling/createMessage",
        mcp::InputRequest::Elicitation(_) => "elicitation/create",
        mcp::InputRequest::ListRoots(_) => "roots/list",
        _ => "a kind of input request toolgate does not know",
    }
}

fn json(value: impl serde::Serialize) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or_default()
}
