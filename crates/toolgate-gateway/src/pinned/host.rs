//! The replica a server is pinned to: it runs the server as any other, says so in the shared
//! state (its [`Alive`] key, renewed), publishes what the server offers, and runs the requests
//! the other replicas send it.
//!
//! A request runs against the server as it is, not through this replica's pipeline: the
//! replica that took the client's call ran its own pipeline on it already.

#![allow(deprecated)] // sampling and roots are deprecated in 2026-07-28 (SEP-2577)

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use futures::future::BoxFuture;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use toolgate_core::mcp;
use toolgate_state::SharedState;
use toolgate_upstream::{CallOptions, Caller, Upstream, UpstreamError};

use super::Timing;
use super::wire::{self, Alive, Answer, Offer, Request, Update};
use crate::gateway::Gateway;

/// Requests one pinned server runs at once for other replicas; more are answered "busy".
pub(crate) const MOST_REQUESTS: usize = 256;

/// Runs the pinned server `server` for the other replicas until `shutdown`.
pub(crate) fn start(
    gateway: &Arc<Gateway>,
    server: String,
    replica: String,
    state: SharedState,
    timing: Timing,
    shutdown: CancellationToken,
) {
    let host = Arc::new(Host {
        server,
        replica,
        nonce: wire::new_id(),
        state,
        timing,
        gateway: Arc::downgrade(gateway),
        running: Mutex::new(HashMap::new()),
        slots: Arc::new(Semaphore::new(MOST_REQUESTS)),
    });
    tokio::spawn(host.clone().announce(gateway.watch_lists(), shutdown.clone()));
    tokio::spawn(host.serve(shutdown));
}

struct Host {
    server: String,
    replica: String,
    nonce: String,
    state: SharedState,
    timing: Timing,
    gateway: Weak<Gateway>,
    /// The requests running now, by id, to cancel.
    running: Mutex<HashMap<String, CancellationToken>>,
    slots: Arc<Semaphore>,
}

impl Host {
    fn upstream(&self) -> Option<Arc<Upstream>> {
        self.gateway.upgrade()?.upstream(&self.server).ok()
    }

    /// Renews the alive key, and writes the offer when it changed (at once when this
    /// replica's lists change) or is about to expire.
    async fn announce(
        self: Arc<Self>,
        mut lists: tokio::sync::broadcast::Receiver<crate::session::Changed>,
        shutdown: CancellationToken,
    ) {
        let mut written: Option<(String, tokio::time::Instant)> = None;
        let mut warned_twin = false;
        loop {
            if let Some(upstream) = self.upstream() {
                let offer = offer_of(&upstream);
                let (bytes, digest) = offer.encode();
                let stale = written.as_ref().is_none_or(|(last, at)| {
                    *last != digest || at.elapsed() >= self.timing.offer_ttl / 3
                });
                let changed = written.as_ref().is_none_or(|(last, _)| *last != digest);
                if stale {
                    let key = wire::offer_key(&self.server);
                    match wire::put_chunked(&self.state, &key, &bytes, self.timing.offer_ttl).await
                    {
                        Ok(()) => written = Some((digest.clone(), tokio::time::Instant::now())),
                        Err(error) => {
                            tracing::warn!(server = %self.server, %error, "cannot publish what the pinned server offers");
                        }
                    }
                }
                let key = wire::alive_key(&self.server);
                if !warned_twin
                    && let Ok(Some(bytes)) = self.state.get(&key).await
                    && let Ok(other) = serde_json::from_slice::<Alive>(&bytes)
                    && other.nonce != self.nonce
                    && written.is_some()
                {
                    warned_twin = true;
                    tracing::warn!(
                        server = %self.server,
                        replica = %self.replica,
                        "another running replica is also named {:?} and runs this pinned server: \
                         give each replica its own [state] replica",
                        self.replica
                    );
                }
                let alive = Alive {
                    replica: self.replica.clone(),
                    nonce: self.nonce.clone(),
                    digest: written.as_ref().map(|(d, _)| d.clone()).unwrap_or_default(),
                };
                let alive = serde_json::to_vec(&alive).unwrap_or_default();
                let _ = self.state.put(&key, &alive, self.timing.alive_ttl).await;
                if changed && written.is_some() {
                    let _ = self.state.publish(&wire::changes_channel(&self.server), b"").await;
                }
            }
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep(self.timing.heartbeat) => {}
                changed = lists.recv() => {
                    if matches!(changed, Err(tokio::sync::broadcast::error::RecvError::Closed)) {
                        break;
                    }
                }
            }
        }
        // Gone on purpose: the others stop waiting at once instead of at the key's expiry.
        let _ = self.state.delete(&wire::alive_key(&self.server)).await;
    }

    /// Takes the requests announced on the bus and runs them; cancels those whose callers
    /// gave up.
    async fn serve(self: Arc<Self>, shutdown: CancellationToken) {
        let requests = wire::requests_channel(&self.server);
        let cancels = wire::cancels_channel(&self.server);
        let (Some(mut requests), Some(mut cancels)) = (
            super::subscribe(&self.state, &requests, &shutdown).await,
            super::subscribe(&self.state, &cancels, &shutdown).await,
        ) else {
            return;
        };
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                id = requests.recv() => {
                    let Some(id) = id else { return };
                    let Ok(id) = std::str::from_utf8(&id) else { continue };
                    if wire::is_id(id) {
                        self.clone().take(id.to_owned());
                    }
                }
                id = cancels.recv() => {
                    let Some(id) = id else { return };
                    let Ok(id) = std::str::from_utf8(&id) else { continue };
                    let running = self.running.lock().expect("running lock");
                    if let Some(cancel) = running.get(id) {
                        cancel.cancel();
                    }
                }
            }
        }
    }

    /// Takes the request `id` (if it is still there) and runs it in a task of its own.
    fn take(self: Arc<Self>, id: String) {
        let slot = self.slots.clone().try_acquire_owned();
        tokio::spawn(async move {
            let key = wire::request_key(&self.server, &id);
            let request = match wire::take_chunked(&self.state, &key).await {
                Ok(Some(bytes)) => serde_json::from_slice::<Request>(&bytes).ok(),
                // Taken already, or given up on.
                Ok(None) => return,
                Err(error) => {
                    tracing::warn!(server = %self.server, %error, "cannot read a request for the pinned server");
                    None
                }
            };
            let answer = match (request, slot) {
                (None, _) => Answer::Error(mcp::ErrorData::internal_error(
                    format!("the request for {} was unreadable in the shared state", self.server),
                    None,
                )),
                (Some(_), Err(_)) => Answer::Error(mcp::ErrorData::internal_error(
                    format!(
                        "{} (pinned to replica {}) is running {MOST_REQUESTS} requests of other \
                         replicas already; try again",
                        self.server, self.replica
                    ),
                    None,
                )),
                (Some(request), Ok(_slot)) => {
                    let cancel = CancellationToken::new();
                    self.running.lock().expect("running lock").insert(id.clone(), cancel.clone());
                    let answer = self.run(&id, request, cancel).await;
                    self.running.lock().expect("running lock").remove(&id);
                    answer
                }
            };
            let bytes = serde_json::to_vec(&answer).unwrap_or_default();
            let key = wire::answer_key(&self.server, &id);
            let stored =
                match wire::put_chunked(&self.state, &key, &bytes, self.timing.answer_ttl).await {
                    Err(wire::ChunkError::TooLarge { bytes }) => {
                        let error = Answer::Error(mcp::ErrorData::internal_error(
                            format!(
                                "the answer of {} is {bytes} bytes, more than the {} MiB a pinned \
                             server's answer may be",
                                self.server,
                                wire::MAX_CHUNKS
                            ),
                            None,
                        ));
                        let bytes = serde_json::to_vec(&error).unwrap_or_default();
                        wire::put_chunked(&self.state, &key, &bytes, self.timing.answer_ttl).await
                    }
                    other => other,
                };
            match stored {
                Ok(()) => {
                    let update = serde_json::to_vec(&Update::Answered).unwrap_or_default();
                    let channel = wire::request_channel(&self.server, &id);
                    let _ = self.state.publish(&channel, &update).await;
                }
                Err(error) => {
                    tracing::warn!(server = %self.server, %error, "cannot store the answer to another replica's request");
                }
            }
        });
    }

    async fn run(&self, id: &str, request: Request, cancel: CancellationToken) -> Answer {
        let Some(upstream) = self.upstream() else {
            return Answer::Error(mcp::ErrorData::internal_error(
                format!("{} is not running on replica {}", self.server, self.replica),
                None,
            ));
        };
        let caller: Arc<dyn Caller> = Arc::new(Relayed {
            state: self.state.clone(),
            channel: wire::request_channel(&self.server, id),
            server: self.server.clone(),
            progress: request.progress,
        });
        let options = CallOptions { caller: Some(caller), cancel, timeout: None };
        let params = request.params;
        match request.method.as_str() {
            "tools/call" => match serde_json::from_value(params) {
                Ok(params) => to_answer(upstream.call_tool(params, &options).await, true),
                Err(error) => Answer::Error(bad_params(&error)),
            },
            "prompts/get" => match serde_json::from_value(params) {
                Ok(params) => to_answer(upstream.get_prompt(params, &options).await, false),
                Err(error) => Answer::Error(bad_params(&error)),
            },
            "resources/read" => match serde_json::from_value(params) {
                Ok(params) => to_answer(upstream.read_resource(params, &options).await, false),
                Err(error) => Answer::Error(bad_params(&error)),
            },
            "completion/complete" => match serde_json::from_value(params) {
                Ok(params) => to_answer(upstream.complete(params, &options).await, false),
                Err(error) => Answer::Error(bad_params(&error)),
            },
            other => Answer::Error(mcp::ErrorData::new(
                mcp::ErrorCode::METHOD_NOT_FOUND,
                format!("{other} is not relayed to a pinned server"),
                None,
            )),
        }
    }
}

/// What `upstream` offers now.
fn offer_of(upstream: &Upstream) -> Offer {
    let info = upstream.info();
    let catalog = upstream.catalog();
    Offer {
        server: info.as_ref().and_then(|info| info.server.clone()),
        capabilities: info.as_ref().map(|info| info.capabilities.clone()).unwrap_or_default(),
        instructions: info.and_then(|info| info.instructions),
        tools: catalog.tools.clone(),
        prompts: catalog.prompts.clone(),
        resources: catalog.resources.clone(),
        resource_templates: catalog.resource_templates.clone(),
    }
}

/// The answer as this replica would have given it to its own client: an error the server
/// answered passes unchanged; any other failure of a tool call is a tool error the model reads,
/// of another request a JSON-RPC error.
fn to_answer<T: serde::Serialize>(outcome: Result<T, UpstreamError>, tool: bool) -> Answer {
    let error = match outcome {
        Ok(result) => {
            return match serde_json::to_value(result) {
                Ok(value) => Answer::Result(value),
                Err(error) => {
                    Answer::Error(mcp::ErrorData::internal_error(error.to_string(), None))
                }
            };
        }
        Err(error) => error,
    };
    match crate::error::reply_to(&crate::GatewayError::Upstream(error)) {
        crate::ErrorReply::Protocol(error) => Answer::Error(error),
        crate::ErrorReply::ToolError(message) if tool => {
            let result = mcp::CallToolResult::error(vec![mcp::ContentBlock::text(message)]);
            Answer::Result(serde_json::to_value(result).unwrap_or_default())
        }
        crate::ErrorReply::ToolError(message) => {
            Answer::Error(mcp::ErrorData::internal_error(message, None))
        }
    }
}

fn bad_params(error: &serde_json::Error) -> mcp::ErrorData {
    mcp::ErrorData::invalid_params(format!("the relayed params are not valid: {error}"), None)
}

/// The caller of a request another replica sent: its progress goes back over the bus; the
/// server's questions cannot reach that replica's client and are declined, saying why.
struct Relayed {
    state: SharedState,
    channel: String,
    server: String,
    progress: bool,
}

impl Relayed {
    fn declined(&self, method: &str) -> mcp::ErrorData {
        mcp::ErrorData::new(
            mcp::ErrorCode::METHOD_NOT_FOUND,
            format!(
                "{method}: the call to {} came from another replica (the server is pinned to \
                 this one), whose client cannot be asked",
                self.server
            ),
            None,
        )
    }
}

impl Caller for Relayed {
    fn progress(&self, params: mcp::ProgressNotificationParam) -> BoxFuture<'static, ()> {
        if !self.progress {
            return Box::pin(async {});
        }
        let update = serde_json::to_vec(&Update::progress(&params)).unwrap_or_default();
        let state = self.state.clone();
        let channel = self.channel.clone();
        Box::pin(async move {
            let _ = state.publish(&channel, &update).await;
        })
    }

    fn create_message(
        &self,
        _params: mcp::CreateMessageRequestParams,
    ) -> BoxFuture<'static, Result<mcp::CreateMessageResult, mcp::ErrorData>> {
        let error = self.declined("sampling/createMessage");
        Box::pin(async move { Err(error) })
    }

    fn create_elicitation(
        &self,
        _params: mcp::ElicitRequestParams,
    ) -> BoxFuture<'static, Result<mcp::ElicitResult, mcp::ErrorData>> {
        let error = self.declined("elicitation/create");
        Box::pin(async move { Err(error) })
    }

    fn list_roots(&self) -> BoxFuture<'static, Result<mcp::ListRootsResult, mcp::ErrorData>> {
        let error = self.declined("roots/list");
        Box::pin(async move { Err(error) })
    }
}
