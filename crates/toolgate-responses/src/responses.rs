//! `/v1/responses`: a response made (streamed or not), kept when the request says so, continued
//! by `previous_response_id`, read back and deleted by its id, by its owner only.

use std::sync::Arc;

use axum::extract::{Path, State as Extract};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use toolgate_intercept::Principal;

use crate::error::ApiError;
use crate::output::{Event, Output, new_id};
use crate::request::{self, CreateResponse};
use crate::state::State;
use crate::{STREAM_QUEUE, Service};

/// `POST /v1/responses`.
pub(crate) async fn create(
    Extract(service): Extract<Arc<Service>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    crate::serve(service, &headers, body, start).await
}

async fn start(
    service: Arc<Service>,
    principal: Principal,
    body: Bytes,
) -> Result<Response, ApiError> {
    let request = request::parse(&body)?;
    let model = service.model(&request.model)?;
    let priced_as = model.name.clone();
    if request.store && service.store.is_none() {
        return Err(ApiError::invalid(
            Some("store"),
            "this gateway stores no responses ([llm] store = \"off\"); send store: false",
        ));
    }
    let owner = principal.to_string();
    let place = service.in_flight.admit(&owner)?;
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
    let made = Made { id: new_id("resp"), created_at: crate::now() as i64, owner };
    if !request.stream {
        let turns = service.turns(principal, made.id.clone(), model, &request, true);
        let mut output = Output::collected();
        let ended = turns.run(state, &mut output).await;
        let status = if ended.is_ok() { "completed" } else { "failed" };
        service.finished(&request.model, &priced_as, status, ended.as_ref().ok().map(|e| &e.usage));
        let ended = ended?;
        let response = made.body(&request, "completed", output.items(), Some(&ended.usage), None);
        service.keep(&made, &request, &response, &ended.state).await?;
        drop(place);
        return Ok(axum::Json(response).into_response());
    }
    let (events, receiver) = mpsc::channel(STREAM_QUEUE);
    tokio::spawn(async move {
        let _place = place;
        let reader = events.clone();
        let mut output = Output::streamed(events);
        let created = made.body(&request, "in_progress", &[], None, None);
        output.event("response.created", json!({ "response": created })).await;
        output.event("response.in_progress", json!({ "response": created })).await;
        let turns = service.turns(principal, made.id.clone(), model, &request, true);
        let cancel = turns.cancel.clone();
        let keeps = request.store && service.store.is_some();
        let run = turns.run(state, &mut output);
        let ended = crate::unless_abandoned(run, &reader, keeps, &cancel).await;
        drop(reader);
        let status = if ended.is_ok() { "completed" } else { "failed" };
        service.finished(&request.model, &priced_as, status, ended.as_ref().ok().map(|e| &e.usage));
        match ended {
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
    let stream = futures::StreamExt::map(stream, |event: Event| {
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

/// `GET /v1/responses/{id}`.
pub(crate) async fn retrieve(
    Extract(service): Extract<Arc<Service>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let principal = match crate::caller(&service, &headers).await {
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

/// `DELETE /v1/responses/{id}`.
pub(crate) async fn remove(
    Extract(service): Extract<Arc<Service>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let principal = match crate::caller(&service, &headers).await {
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
