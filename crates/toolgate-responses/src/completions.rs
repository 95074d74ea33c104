//! `/v1/chat/completions`: the same loop as `/v1/responses` for a Chat Completions request
//! (`chat`), answered as one `chat.completion` or, streamed, as its chunks: the model's text as
//! it comes, then the function calls left for the application, the finish reason, the usage.

use std::sync::Arc;

use axum::extract::State as Extract;
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use toolgate_intercept::Principal;

use crate::error::ApiError;
use crate::output::{Event, Output};
use crate::{STREAM_QUEUE, Service, chat};

/// `POST /v1/chat/completions`.
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
    let chat::ChatRequest { request, state, include_usage } = chat::parse(&body)?;
    let model = service.model(&request.model)?;
    let place = service.in_flight.admit(&principal.to_string())?;
    let priced_as = model.name.clone();
    let id = format!("chatcmpl-{}", uuid::Uuid::new_v4().simple());
    let created = crate::now();
    if !request.stream {
        let turns = service.turns(principal, id.clone(), model, &request, false);
        let mut output = Output::collected();
        let ended = turns.run(state, &mut output).await;
        let status = if ended.is_ok() { "completed" } else { "failed" };
        service.finished(&request.model, &priced_as, status, ended.as_ref().ok().map(|e| &e.usage));
        let ended = ended?;
        drop(place);
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
        let _place = place;
        let reader = events.clone();
        let mut output = Output::streamed(events);
        let turns = service.turns(principal, task_id, model, &request, false);
        let cancel = turns.cancel.clone();
        // A chat completion is never stored: one nobody reads is cancelled.
        let run = turns.run(state, &mut output);
        let ended = crate::unless_abandoned(run, &reader, false, &cancel).await;
        drop(reader);
        let status = if ended.is_ok() { "completed" } else { "failed" };
        service.finished(&request.model, &priced_as, status, ended.as_ref().ok().map(|e| &e.usage));
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
            move |event: Event| {
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
