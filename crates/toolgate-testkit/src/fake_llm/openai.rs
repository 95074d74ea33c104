//! The OpenAI Chat Completions dialect of the fake: `POST /v1/chat/completions`, answered
//! without streaming as the API writes a `chat.completion` object, and errors as
//! `{"error": {"message", "type", "param", "code"}}`.
//!
//! Checked before the script is asked (and answered `400` like the API, without using a
//! turn): the body is a JSON object, `model` is a string, `messages` a non-empty array.
//! `stream: true` is refused too (`code: "unsupported_by_fake"`) until the fake streams.
//! `usage` counts `o200k_base` tokens: each message's content plus 3, plus 3 for the reply's
//! priming, as OpenAI counts chat prompts; the completion is the reply's text.

use std::time::{SystemTime, UNIX_EPOCH};

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolgate_llm::tokens::Encoding;

use super::{Answer, ProviderError, Request, Shared, unauthorized};

/// Where the dialect is served.
pub(super) const CHAT_PATH: &str = "/v1/chat/completions";

/// Tokens OpenAI adds per message of a chat prompt, and for the reply's priming.
const TOKENS_PER_MESSAGE: usize = 3;

/// One message of a conversation, its content as text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// `system`, `developer`, `user`, `assistant`, `tool`.
    pub role: String,
    /// A string content as is; an array of parts as its text parts joined by newlines.
    pub content: String,
}

/// The messages of a request body.
pub(super) fn messages(body: &Value) -> Vec<ChatMessage> {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return Vec::new();
    };
    messages
        .iter()
        .map(|message| ChatMessage {
            role: message.get("role").and_then(Value::as_str).unwrap_or_default().to_owned(),
            content: content_text(message.get("content")),
        })
        .collect()
}

fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Answers a request to [`CHAT_PATH`].
pub(super) async fn answer(shared: &Shared, request: &Request) -> Response {
    if let Some(error) = unauthorized(shared, request).or_else(|| invalid(request)) {
        return error_response(&error);
    }
    let turn = shared.next_turn(request);
    if !turn.delay.is_zero() {
        tokio::time::sleep(turn.delay).await;
    }
    match turn.answer {
        Answer::Text { text, finish_reason } => completion(request, &text, &finish_reason),
        Answer::Error(error) => error_response(&error),
        Answer::Raw { status, content_type, body } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut response = (status, body).into_response();
            if let Ok(value) = HeaderValue::from_str(&content_type) {
                response.headers_mut().insert(header::CONTENT_TYPE, value);
            }
            response
        }
    }
}

/// Why the API would refuse `request` before reading it further.
fn invalid(request: &Request) -> Option<ProviderError> {
    let bad = |param: Option<&str>, code: Option<&str>, message: &str| ProviderError {
        status: 400,
        kind: "invalid_request_error".to_owned(),
        code: code.map(str::to_owned),
        param: param.map(str::to_owned),
        message: message.to_owned(),
    };
    let Some(body) = request.body.as_object() else {
        return Some(bad(None, None, "We could not parse the JSON body of your request (fake)."));
    };
    if !body.get("model").is_some_and(Value::is_string) {
        return Some(bad(
            Some("model"),
            Some("missing_required_parameter"),
            "You must provide a model parameter (fake).",
        ));
    }
    match body.get("messages") {
        Some(Value::Array(messages)) if !messages.is_empty() => {}
        Some(Value::Array(_)) => {
            return Some(bad(
                Some("messages"),
                Some("empty_array"),
                "Invalid 'messages': empty array (fake).",
            ));
        }
        _ => {
            return Some(bad(
                Some("messages"),
                Some("missing_required_parameter"),
                "Missing required parameter: 'messages' (fake).",
            ));
        }
    }
    if body.get("stream").and_then(Value::as_bool) == Some(true) {
        return Some(bad(
            Some("stream"),
            Some("unsupported_by_fake"),
            "The fake does not stream yet.",
        ));
    }
    None
}

/// A `chat.completion` saying `text`.
fn completion(request: &Request, text: &str, finish_reason: &str) -> Response {
    let encoding = Encoding::O200kBase;
    let prompt_tokens = request
        .messages()
        .iter()
        .map(|m| encoding.count(&m.content) + TOKENS_PER_MESSAGE)
        .sum::<usize>()
        + TOKENS_PER_MESSAGE;
    let completion_tokens = encoding.count(text);
    let created = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let body = json!({
        "id": format!("chatcmpl-{}", uuid::Uuid::new_v4().simple()),
        "object": "chat.completion",
        "created": created,
        "model": request.model().unwrap_or_default(),
        "choices": [{
            "index": 0,
            "message": {
                "role": "assistant",
                "content": text,
                "refusal": null,
                "annotations": [],
            },
            "logprobs": null,
            "finish_reason": finish_reason,
        }],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
        "service_tier": "default",
        "system_fingerprint": null,
    });
    json_response(StatusCode::OK, &body)
}

/// `error` as the API writes it.
pub(super) fn error_response(error: &ProviderError) -> Response {
    let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = json!({
        "error": {
            "message": error.message,
            "type": error.kind,
            "param": error.param,
            "code": error.code,
        }
    });
    json_response(status, &body)
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut response = (status, axum::Json(body)).into_response();
    let request_id = format!("req_{}", uuid::Uuid::new_v4().simple());
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert("x-request-id", value);
    }
    response
}
