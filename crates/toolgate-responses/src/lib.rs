//! An OpenAI-compatible Responses endpoint over the gateway: `POST /v1/responses` with MCP
//! servers as tools (`{"type": "mcp", "server_label": ...}`), the tool loop run here, and
//! `GET` / `DELETE /v1/responses/{id}` for stored responses. An application that speaks the
//! Responses API (the official `openai` SDKs) points its base URL at the gateway and gets:
//!
//! - `mcp_list_tools` once per server per conversation, then the model's turns and calls;
//! - every call through the gateway's pipeline as the caller's principal (`turn`), its result
//!   an `mcp_call` item with the Responses API's typed errors;
//! - `mcp_approval_request` items where `require_approval` or the gateway's own approval rules
//!   say so (`approval`); the application answers with `mcp_approval_response` input items and
//!   `previous_response_id`, and the approved calls run then;
//! - its own `function` tools returned to it as `function_call` items;
//! - streaming (`stream: true`) with the API's events (`output`), or one JSON body.
//!
//! `POST /v1/chat/completions` takes the same hosted tools (`chat`): the loop is the same, the
//! answer one assistant message, and approvals the gateway's policy alone.
//!
//! Responses are stored (`store`, on by default as in OpenAI's API) in SQLite, PostgreSQL or the
//! state replicas share, each with its conversation and owned by its principal (`store`). The model behind the
//! endpoint is chosen by the request's `model` through [`Models`].
//!
//! A server the request names by `server_url` is reached through the gateway's pool when
//! `Access` allows its URL (`toolbox`). Not done yet: parallel calls within a turn; an
//! `mcp_call`'s events are sent when the call has ended, not while it runs.

mod approval;
mod chat;
mod completions;
mod error;
mod in_flight;
mod model;
mod output;
mod request;
mod responses;
mod state;
mod store;
mod toolbox;
mod turn;

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::DefaultBodyLimit;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use tokio_util::sync::CancellationToken;
use toolgate_gateway::Gateway;
use toolgate_intercept::Principal;
use toolgate_server::Authenticator;

pub use error::ApiError;
pub use in_flight::{DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_IN_FLIGHT_PER_CALLER};
pub use model::{Model, Models, OneProvider};
pub use store::{Retention, Store, StoreError};
pub use toolbox::Access;
pub use turn::DEFAULT_MAX_TOOL_CALLS;

use crate::in_flight::InFlight;
use crate::output::Event;
use crate::request::CreateResponse;

/// The largest request body read.
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// Events a streamed response holds for a client that reads slowly before its work waits.
const STREAM_QUEUE: usize = 64;

/// What the endpoint's handlers share.
pub struct Service {
    gateway: Arc<Gateway>,
    models: Arc<dyn Models>,
    store: Option<Store>,
    auth: Option<Arc<Authenticator>>,
    max_tool_calls: u32,
    shutdown: CancellationToken,
    access: Access,
    in_flight: Arc<InFlight>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service").field("stores", &self.store.is_some()).finish_non_exhaustive()
    }
}

impl Service {
    /// Publishes `llm/response/finished` on the gateway's bus: the model the request named
    /// (`model`), its status, and, when it ended with usage, its tokens and their estimated
    /// cost (`cost_usd`) at the list price of `priced_as`, the provider's name of the model
    /// (no cost when [`pricing`](toolgate_llm::pricing) does not know it).
    fn finished(
        &self,
        model: &str,
        priced_as: &str,
        status: &str,
        usage: Option<&toolgate_llm::chat::Usage>,
    ) {
        let bus = self.gateway.recorder().bus();
        if !bus.wants(toolgate_audit::kind::LLM_RESPONSE_FINISHED) {
            return;
        }
        let mut event = toolgate_audit::Event::new(toolgate_audit::kind::LLM_RESPONSE_FINISHED)
            .with("model", model.to_owned())
            .with("status", status.to_owned());
        if let Some(usage) = usage {
            event = event
                .with("input_tokens", usage.input_tokens)
                .with("output_tokens", usage.output_tokens);
            if let Some(cost) = toolgate_llm::pricing::cost_usd(priced_as, usage) {
                event = event.with("cost_usd", cost);
            }
        }
        bus.publish(event);
    }

    /// The endpoint over `gateway`, answering with `models`, keeping responses in `store`
    /// (`None`: nothing is stored, and requests with `store: true` are refused), callers
    /// proven by `auth` (`None`: everyone is `anonymous:anonymous`, for loopback).
    pub fn new(
        gateway: Arc<Gateway>,
        models: Arc<dyn Models>,
        store: Option<Store>,
        auth: Option<Arc<Authenticator>>,
    ) -> Service {
        Service {
            gateway,
            models,
            store,
            auth,
            max_tool_calls: DEFAULT_MAX_TOOL_CALLS,
            shutdown: CancellationToken::new(),
            access: Access::default(),
            in_flight: InFlight::new(DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_IN_FLIGHT_PER_CALLER),
        }
    }

    /// The most responses being made at once, in all and for one caller (the defaults are
    /// [`DEFAULT_MAX_IN_FLIGHT`] and [`DEFAULT_MAX_IN_FLIGHT_PER_CALLER`]); a request past
    /// either is answered 429.
    pub fn with_in_flight(mut self, most: usize, most_per_caller: usize) -> Service {
        self.in_flight = InFlight::new(most, most_per_caller);
        self
    }

    /// The most tool calls one response runs when the request does not say fewer.
    pub fn with_max_tool_calls(mut self, most: u32) -> Service {
        self.max_tool_calls = most.max(1);
        self
    }

    /// Which servers requests may name by URL (by default none).
    pub fn with_access(mut self, access: Access) -> Service {
        self.access = access;
        self
    }

    /// Fired at shutdown: responses being made stop.
    pub fn with_shutdown(mut self, shutdown: CancellationToken) -> Service {
        self.shutdown = shutdown;
        self
    }
}

/// The routes: `POST /v1/responses`, `GET` and `DELETE /v1/responses/{id}`,
/// `POST /v1/chat/completions`.
pub fn router(service: Arc<Service>) -> axum::Router {
    axum::Router::new()
        .route("/v1/responses", post(responses::create))
        .route("/v1/chat/completions", post(completions::create))
        .route("/v1/responses/{id}", get(responses::retrieve).delete(responses::remove))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(service)
}

async fn caller(service: &Service, headers: &HeaderMap) -> Result<Principal, Response> {
    match &service.auth {
        Some(auth) => auth.authenticate(headers).await,
        None => Ok(Principal::anonymous()),
    }
}

/// Serves one request: its caller proven, then `start`, its failure in OpenAI's error shape.
async fn serve<F>(
    service: Arc<Service>,
    headers: &HeaderMap,
    body: Bytes,
    start: impl FnOnce(Arc<Service>, Principal, Bytes) -> F,
) -> Response
where
    F: Future<Output = Result<Response, ApiError>>,
{
    let principal = match caller(&service, headers).await {
        Ok(principal) => principal,
        Err(refusal) => return refusal,
    };
    start(service, principal, body).await.unwrap_or_else(IntoResponse::into_response)
}

impl Service {
    /// The model a request names.
    fn model(&self, requested: &str) -> Result<Model, ApiError> {
        self.models
            .resolve(requested)
            .map_err(|why| ApiError::invalid(Some("model"), format!("{requested:?}: {why}")))
    }

    /// The turns of one response to `request`, by `principal`, under `id`; `asks`: whether
    /// the application can be asked for approvals.
    fn turns<'a>(
        self: &'a Arc<Self>,
        principal: Principal,
        id: String,
        model: Model,
        request: &'a CreateResponse,
        asks: bool,
    ) -> turn::Turns<'a> {
        turn::Turns {
            gateway: &self.gateway,
            access: &self.access,
            principal,
            response_id: id,
            model,
            request,
            max_tool_calls: request
                .max_tool_calls
                .unwrap_or(self.max_tool_calls)
                .min(self.max_tool_calls),
            cancel: self.shutdown.child_token(),
            asks,
        }
    }
}

/// Runs `work`, a streamed response's turns; if nothing will keep what it makes (`keeps` is
/// false) and the client reading `events` goes away, cancels it through `cancel` and lets it
/// end as cancelled (its calls are cancelled upstream the same way).
async fn unless_abandoned<T>(
    work: impl Future<Output = T>,
    events: &tokio::sync::mpsc::Sender<Event>,
    keeps: bool,
    cancel: &CancellationToken,
) -> T {
    let mut work = std::pin::pin!(work);
    if !keeps {
        tokio::select! {
            done = &mut work => return done,
            () = events.closed() => cancel.cancel(),
        }
    }
    work.await
}

/// Now, in seconds since the epoch.
fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default()
}
