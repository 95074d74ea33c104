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
//! Responses are stored (`store`, on by default as in OpenAI's API) in SQLite, each with its
//! conversation and owned by its principal (`store`). The model behind the endpoint is chosen
//! by the request's `model` through [`Models`].
//!
//! Not served yet: servers named by `server_url` (only configured servers), parallel calls
//! within a turn.

mod approval;
mod chat;
mod error;
mod model;
mod output;
mod request;
mod state;
mod store;
mod toolbox;
mod turn;

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::{DefaultBodyLimit, Path, State as Extract};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolgate_gateway::Gateway;
use toolgate_intercept::Principal;
use toolgate_server::Authenticator;

pub use error::ApiError;
pub use model::{Model, Models, OneProvider};
pub use store::{Store, StoreError};
pub use turn::DEFAULT_MAX_TOOL_CALLS;

use crate::output::{Output, new_id};
use crate::request::CreateResponse;
use crate::state::State;

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
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service").field("stores", &self.store.is_some()).finish_non_exhaustive()
    }
}

impl Service {
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
        }
    }

    /// The most tool calls one response runs when the request does not say fewer.
    pub fn with_max_tool_calls(mut self, most: u32) -> Service {
        self.max_tool_calls = most.max(1);
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
        .route("/v1/responses", post(create))
        .route("/v1/chat/completions", post(complete))
        .route("/v1/responses/{id}", get(retrieve).delete(remove))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(service)
}

async fn caller(service: &Service, headers: &HeaderMap) -> Result<Principal, Response> {
    match &service.auth {
        Some(auth) => auth.authenticate(headers).await,
        None => Ok(Principal::anonymous()),
    }
}

async fn create(
    Extract(service): Extract<Arc<Service>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let principal = match caller(&service, &headers).await {
        Ok(principal) => principal,
        Err(refusal) => return refusal,
    };
    match start(service, principal, &body).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

async fn start(
    service: Arc<Service>,
    principal: Principal,
    body: &[u8],
) -> Result<Response, ApiError> {
    let request = request::parse(body)?;
    let model = service
        .models
        .resolve(&request.model)
        .map_err(|why| ApiError::invalid(Some("model"), format!("{:?}: {why}", request.model)))?;
    if request.store && service.store.is_none() {
        return Err(ApiError::invalid(
            Some("store"),
            "this gateway stores no responses ([llm] store = \"off\"); send store: false",
        ));
    }
    let owner = principal.to_string();
    let state = match &request.previous_response_id {
        None => State::default(),
        Some(id) => match &service.store {
            None => {
                return Err(ApiError::invalid(
                    Some("previous_response_id"),
                    "this gateway stores no responses to continue",
                ));
            }
            Some(store) => match store.get(id, &owner).await? {
                Some((_, state)) => state,
                None => return Err(ApiError::not_found(id)),
            },
        },
    };
    let made = Made {
        id: new_id("resp"),
        created_at: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or_default(),
        owner,
    };
    let max_tool_calls =
        request.max_tool_calls.unwrap_or(service.max_tool_calls).min(service.max_tool_calls);
    let cancel = service.shutdown.child_token();
    if !request.stream {
        let turns = turn::Turns {
            gateway: &service.gateway,
            principal,
            response_id: made.id.clone(),
            model,
            request: &request,
            max_tool_calls,
            cancel,
            asks: true,
        };
        let mut output = Output::collected();
        let ended = turns.run(state, &mut output).await?;
        let response = made.body(&request, "completed", output.items(), Some(&ended.usage), None);
        service.keep(&made, &request, &response, &ended.state).await?;
        return Ok(axum::Json(response).into_response());
    }
    let (events, receiver) = mpsc::channel(STREAM_QUEUE);
    tokio::spawn(async move {
        let mut output = Output::streamed(events);
        let created = made.body(&request, "in_progress", &[], None, None);
        output.event("response.created", json!({ "response": created })).await;
        output.event("response.in_progress", json!({ "response": created })).await;
        let turns = turn::Turns {
            gateway: &service.gateway,
            principal,
            response_id: made.id.clone(),
            model,
            request: &request,
            max_tool_calls,
            cancel,
            asks: true,
        };
        match turns.run(state, &mut output).await {
            Ok(ended) => {
                let response =
                    made.body(&request, "completed", output.items(), Some(&ended.usage), None);
                if let Err(error) = service.keep(&made, &request, &response, &ended.state).await {
                    let failed = made.body(&request, "failed", output.items(), None, Some(&error));
                    output.event("response.failed", json!({ "response": failed })).await;
                    return;
                }
                output.event("response.completed", json!({ "response": response })).await;
            }
            Err(error) => {
                let failed = made.body(&request, "failed", output.items(), None, Some(&error));
                output.event("response.failed", json!({ "response": failed })).await;
            }
        }
    });
    let stream = tokio_stream::wrappers::ReceiverStream::new(receiver);
    let stream = futures::StreamExt::map(stream, |event: output::Event| {
        Ok::<_, std::convert::Infallible>(
            SseEvent::default().event(event.kind).data(event.data.to_string()),
        )
    });
    Ok(Sse::new(stream).into_response())
}

/// The identity of a response being made.
struct Made {
    id: String,
    created_at: i64,
    owner: String,
}

impl Made {
    /// The response object.
    fn body(
        &self,
        request: &CreateResponse,
        status: &str,
        output: &[Value],
        usage: Option<&toolgate_llm::chat::Usage>,
        error: Option<&ApiError>,
    ) -> Value {
        let usage = usage.map(|usage| {
            json!({
                "input_tokens": usage.input_tokens,
                "input_tokens_details": {
                    "cached_tokens": usage.cached_input_tokens, "cache_write_tokens": 0,
                },
                "output_tokens": usage.output_tokens,
                "output_tokens_details": { "reasoning_tokens": usage.reasoning_tokens },
                "total_tokens": usage.input_tokens + usage.output_tokens,
            })
        });
        json!({
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "error": error.map(|error| json!({ "code": "server_error", "message": error.message })),
            "incomplete_details": null,
            "instructions": request.instructions,
            "max_output_tokens": request.max_output_tokens,
            "max_tool_calls": request.max_tool_calls,
            "metadata": request.metadata,
            "model": request.model,
            "output": output,
            "parallel_tool_calls": false,
            "previous_response_id": request.previous_response_id,
            "store": request.store,
            "temperature": request.temperature,
            "text": { "format": { "type": "text" } },
            "tool_choice": "auto",
            "tools": request.tools_echo,
            "top_p": null,
            "truncation": "disabled",
            "usage": usage,
        })
    }
}

impl Service {
    async fn keep(
        &self,
        made: &Made,
        request: &CreateResponse,
        response: &Value,
        state: &State,
    ) -> Result<(), ApiError> {
        match (&self.store, request.store) {
            (Some(store), true) => {
                store.put(&made.id, &made.owner, made.created_at, response, state).await
            }
            _ => Ok(()),
        }
    }
}

async fn complete(
    Extract(service): Extract<Arc<Service>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let principal = match caller(&service, &headers).await {
        Ok(principal) => principal,
        Err(refusal) => return refusal,
    };
    match start_chat(service, principal, &body).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

async fn start_chat(
    service: Arc<Service>,
    principal: Principal,
    body: &[u8],
) -> Result<Response, ApiError> {
    let chat::ChatRequest { request, state, include_usage } = chat::parse(body)?;
    let model = service
        .models
        .resolve(&request.model)
        .map_err(|why| ApiError::invalid(Some("model"), format!("{:?}: {why}", request.model)))?;
    let id = format!("chatcmpl-{}", uuid::Uuid::new_v4().simple());
    let created = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let max_tool_calls =
        request.max_tool_calls.unwrap_or(service.max_tool_calls).min(service.max_tool_calls);
    let cancel = service.shutdown.child_token();
    if !request.stream {
        let turns = turn::Turns {
            gateway: &service.gateway,
            principal,
            response_id: id.clone(),
            model,
            request: &request,
            max_tool_calls,
            cancel,
            asks: false,
        };
        let mut output = Output::collected();
        let ended = turns.run(state, &mut output).await?;
        let answer = chat::Answer::of(output.items());
        return Ok(axum::Json(json!({
            "id": id, "object": "chat.completion", "created": created, "model": request.model,
            "choices": [{
                "index": 0, "message": answer.message(),
                "finish_reason": answer.finish_reason(), "logprobs": null,
            }],
            "usage": chat::usage(&ended.usage),
        }))
        .into_response());
    }
    let (events, receiver) = mpsc::channel(STREAM_QUEUE);
    let (ended_tx, ended_rx) = tokio::sync::oneshot::channel();
    let model_name = request.model.clone();
    let task_id = id.clone();
    tokio::spawn(async move {
        let mut output = Output::streamed(events);
        let turns = turn::Turns {
            gateway: &service.gateway,
            principal,
            response_id: task_id,
            model,
            request: &request,
            max_tool_calls,
            cancel,
            asks: false,
        };
        let ended = turns.run(state, &mut output).await;
        let _ = ended_tx.send(ended.map(|ended| (output.items().to_vec(), ended.usage)));
    });
    let chunk = {
        let (id, model) = (id.clone(), model_name);
        move |delta: Value, finish: Option<&str>, usage: Option<Value>| {
            let mut chunk = json!({
                "id": id, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [{ "index": 0, "delta": delta, "finish_reason": finish, "logprobs": null }],
            });
            if let Some(usage) = usage {
                chunk["choices"] = json!([]);
                chunk["usage"] = usage;
            }
            SseEvent::default().data(chunk.to_string())
        }
    };
    let first = futures::stream::once({
        let chunk = chunk.clone();
        async move { chunk(json!({ "role": "assistant", "content": "" }), None, None) }
    });
    let texts =
        futures::StreamExt::filter_map(tokio_stream::wrappers::ReceiverStream::new(receiver), {
            let chunk = chunk.clone();
            move |event: output::Event| {
                let delta = (event.kind == "response.output_text.delta")
                    .then(|| chunk(json!({ "content": event.data["delta"] }), None, None));
                async move { delta }
            }
        });
    let last = futures::StreamExt::flat_map(futures::stream::once(ended_rx), move |ended| {
        let mut tail = Vec::new();
        match ended {
            Ok(Ok((items, usage))) => {
                let answer = chat::Answer::of(&items);
                if !answer.tool_calls.is_empty() {
                    let calls: Vec<Value> = answer
                        .tool_calls
                        .iter()
                        .enumerate()
                        .map(|(index, call)| {
                            let mut call = call.clone();
                            call["index"] = index.into();
                            call
                        })
                        .collect();
                    tail.push(chunk(json!({ "tool_calls": calls }), None, None));
                }
                tail.push(chunk(json!({}), Some(answer.finish_reason()), None));
                if include_usage {
                    tail.push(chunk(json!({}), None, Some(chat::usage(&usage))));
                }
            }
            Ok(Err(error)) => tail.push(SseEvent::default().data(error.body().to_string())),
            Err(_) => {
                let error = ApiError::server("the response ended early");
                tail.push(SseEvent::default().data(error.body().to_string()));
            }
        }
        tail.push(SseEvent::default().data("[DONE]"));
        futures::stream::iter(tail)
    });
    let stream = futures::StreamExt::map(
        futures::StreamExt::chain(futures::StreamExt::chain(first, texts), last),
        Ok::<_, std::convert::Infallible>,
    );
    Ok(Sse::new(stream).into_response())
}

async fn retrieve(
    Extract(service): Extract<Arc<Service>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let principal = match caller(&service, &headers).await {
        Ok(principal) => principal,
        Err(refusal) => return refusal,
    };
    let Some(store) = &service.store else { return ApiError::not_found(&id).into_response() };
    match store.get(&id, &principal.to_string()).await {
        Ok(Some((response, _))) => axum::Json(response).into_response(),
        Ok(None) => ApiError::not_found(&id).into_response(),
        Err(error) => error.into_response(),
    }
}

async fn remove(
    Extract(service): Extract<Arc<Service>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let principal = match caller(&service, &headers).await {
        Ok(principal) => principal,
        Err(refusal) => return refusal,
    };
    let Some(store) = &service.store else { return ApiError::not_found(&id).into_response() };
    match store.delete(&id, &principal.to_string()).await {
        Ok(true) => {
            axum::Json(json!({ "id": id, "object": "response", "deleted": true })).into_response()
        }
        Ok(false) => ApiError::not_found(&id).into_response(),
        Err(error) => error.into_response(),
    }
}
