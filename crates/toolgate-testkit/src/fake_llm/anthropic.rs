//! The Anthropic Messages dialect of the fake: `POST /v1/messages`, answered with a `message`
//! object, or with `"stream": true` as the API's named server-sent events; errors as
//! `{"type": "error", "error": {"type", "message"}}` with the API's statuses and types
//! (`rate_limit_error` 429 with `Retry-After`, `overloaded_error` 529, ...). The key is taken
//! from `x-api-key`.
//!
//! Checked before the script is asked (answered `400` `invalid_request_error` without using
//! a turn, in the API's words): the `anthropic-version` header, a JSON object body, `model`,
//! `max_tokens`, a non-empty `messages`; every `tool_use` block answered by a `tool_result`
//! block in the next message; and every `thinking` block sent back carrying the signature
//! the fake gave it (the fake signs a thinking block with a digest of its text, so a client
//! that alters the text or drops the signature is refused like the API refuses it).
//!
//! A reply's content blocks, in order: a `thinking` block (the reasoning, signed), a `text`
//! block, a `tool_use` block per call (`id` `toolu_...` unless the script gives one; `input`
//! the arguments parsed, or the text as a JSON string when it does not parse). Streamed:
//! `message_start` (usage with the input tokens), `ping`, per block `content_block_start`,
//! its deltas (`thinking_delta` pieces then a `signature_delta`; `text_delta` pieces;
//! `input_json_delta` pieces after an empty one) and `content_block_stop`, `message_delta`
//! with the `stop_reason` and usage, `message_stop`. Of the [`Quirk`]s only `split_utf8` and
//! `data_without_space` apply.

use serde_json::{Value, json};

use super::openai::{array, str_of};
use super::stream::{Events, body_response, split};
use super::{
    ChatMessage, ProviderError, Quirk, Reply, Request, SeenToolCall, SeenToolResult, content_text,
    made_up_id, parsed_arguments, usage,
};

/// Where the dialect is served.
pub(super) const MESSAGES_PATH: &str = "/v1/messages";

/// Characters per streamed piece.
const PIECE: usize = 5;

/// `system`, then every message, its text blocks joined.
pub(super) fn messages(body: &Value) -> Vec<ChatMessage> {
    let mut out = Vec::new();
    if let Some(system) = body.get("system").filter(|s| !s.is_null()) {
        out.push(ChatMessage { role: "system".into(), content: content_text(Some(system)) });
    }
    for message in array(body, "messages") {
        let content = match message.get("content") {
            Some(Value::Array(blocks)) => blocks
                .iter()
                .filter(|block| str_of(block, "type") == "text")
                .map(|block| str_of(block, "text"))
                .collect::<Vec<_>>()
                .join("\n"),
            other => content_text(other),
        };
        out.push(ChatMessage { role: str_of(message, "role").to_owned(), content });
    }
    out
}

/// The blocks of type `kind` of the messages with `role`, with the message's index and the
/// block's.
fn blocks<'a>(body: &'a Value, role: &str, kind: &str) -> Vec<(usize, usize, &'a Value)> {
    let mut out = Vec::new();
    for (at, message) in array(body, "messages").iter().enumerate() {
        if str_of(message, "role") != role {
            continue;
        }
        for (n, block) in array(message, "content").iter().enumerate() {
            if str_of(block, "type") == kind {
                out.push((at, n, block));
            }
        }
    }
    out
}

/// The `tool_result` blocks of the user messages.
pub(super) fn tool_results(body: &Value) -> Vec<SeenToolResult> {
    blocks(body, "user", "tool_result")
        .into_iter()
        .map(|(_, _, block)| SeenToolResult {
            call_id: str_of(block, "tool_use_id").to_owned(),
            content: content_text(block.get("content")),
            is_error: block.get("is_error").and_then(Value::as_bool).unwrap_or(false),
        })
        .collect()
}

/// The `tool_use` blocks of the assistant messages.
pub(super) fn replayed_calls(body: &Value) -> Vec<SeenToolCall> {
    blocks(body, "assistant", "tool_use")
        .into_iter()
        .map(|(_, _, block)| SeenToolCall {
            id: str_of(block, "id").to_owned(),
            name: str_of(block, "name").to_owned(),
            arguments: block.get("input").cloned().unwrap_or(Value::Null),
        })
        .collect()
}

/// The signature the fake gives a thinking block of `text` (FNV-1a of the text, in hex).
pub fn signature(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("EqFake{hash:016x}")
}

fn bad(message: impl Into<String>) -> ProviderError {
    ProviderError {
        status: 400,
        kind: "invalid_request_error".to_owned(),
        code: None,
        param: None,
        message: message.into(),
        retry_after: None,
    }
}

/// Why the API would refuse `request` before reading it further.
pub(super) fn invalid(request: &Request) -> Option<ProviderError> {
    if request.header("anthropic-version").is_none() {
        return Some(bad("anthropic-version: header is required"));
    }
    let Some(body) = request.body.as_object() else {
        return Some(bad("There was an issue with your request body: not valid JSON (fake)."));
    };
    for field in ["model", "max_tokens", "messages"] {
        if body.get(field).is_none_or(Value::is_null) {
            return Some(bad(format!("{field}: Field required")));
        }
    }
    if !body.get("max_tokens").is_some_and(Value::is_u64) {
        return Some(bad("max_tokens: Input should be a valid integer"));
    }
    let messages = array(&request.body, "messages");
    if messages.is_empty() {
        return Some(bad("messages: at least one message is required"));
    }
    for (at, message) in messages.iter().enumerate() {
        let uses: Vec<&str> = array(message, "content")
            .iter()
            .filter(|block| str_of(block, "type") == "tool_use")
            .map(|block| str_of(block, "id"))
            .collect();
        let answered: Vec<&str> = messages
            .get(at + 1)
            .map(|next| array(next, "content"))
            .unwrap_or_default()
            .iter()
            .filter(|block| str_of(block, "type") == "tool_result")
            .map(|block| str_of(block, "tool_use_id"))
            .collect();
        let missing: Vec<&str> = uses.into_iter().filter(|id| !answered.contains(id)).collect();
        if !missing.is_empty() {
            return Some(bad(format!(
                "messages.{}: `tool_use` ids were found without `tool_result` blocks immediately \
                 after: {}. Each `tool_use` block must have a corresponding `tool_result` block \
                 in the next message.",
                at + 1,
                missing.join(", ")
            )));
        }
    }
    for (at, n, block) in blocks(&request.body, "assistant", "thinking") {
        if str_of(block, "signature") != signature(str_of(block, "thinking")) {
            return Some(bad(format!(
                "messages.{at}.content.{n}: Invalid `signature` in `thinking` block"
            )));
        }
    }
    None
}

/// `error` as the API writes it.
pub(super) fn error_body(error: &ProviderError) -> Value {
    json!({
        "type": "error",
        "error": {"type": error.anthropic_type(), "message": error.message},
    })
}

/// The content blocks of `reply`, done.
fn content(reply: &Reply) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(reasoning) = &reply.reasoning {
        out.push(json!({"type": "thinking", "thinking": reasoning,
                        "signature": signature(reasoning)}));
    }
    if !reply.text.is_empty() || reply.tool_calls.is_empty() {
        out.push(json!({"type": "text", "text": reply.text}));
    }
    for call in &reply.tool_calls {
        let input = if call.arguments.trim().is_empty() {
            json!({})
        } else {
            parsed_arguments(&call.arguments)
        };
        out.push(json!({
            "type": "tool_use",
            "id": call.id.clone().unwrap_or_else(|| made_up_id("toolu_01")),
            "name": call.name,
            "input": input,
        }));
    }
    out
}

/// The `message` object; `content` and the stop reason only when `done`.
fn message(request: &Request, reply: &Reply, id: &str, content: &[Value], done: bool) -> Value {
    let usage = usage(request, reply);
    json!({
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": request.model().unwrap_or_default(),
        "content": if done { content.to_vec() } else { Vec::new() },
        "stop_reason": if done { Value::from(reply.finish_reason().anthropic()) } else { Value::Null },
        "stop_sequence": null,
        "usage": {
            "input_tokens": usage.input_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": if done { usage.output_tokens } else { 1 },
            "service_tier": "standard",
        },
    })
}

/// `reply`, streamed or not as the request asks.
pub(super) fn reply(request: &Request, reply: &Reply) -> axum::response::Response {
    let id = made_up_id("msg_01");
    let content = content(reply);
    if !request.stream() {
        let body = message(request, reply, &id, &content, true).to_string();
        let split = reply.has(Quirk::SplitUtf8);
        return body_response(axum::http::StatusCode::OK, "application/json", body, split);
    }
    let mut events = Events::for_reply(reply);
    let mut send = |name: &str, mut data: Value| {
        data["type"] = name.into();
        events.named(name, &data);
    };
    send("message_start", json!({"message": message(request, reply, &id, &content, false)}));
    send("ping", json!({}));
    for (index, block) in content.iter().enumerate() {
        let delta = |delta: Value| json!({"index": index, "delta": delta});
        let mut start = block.clone();
        match str_of(block, "type") {
            "thinking" => {
                start["thinking"] = "".into();
                start["signature"] = "".into();
                send("content_block_start", json!({"index": index, "content_block": start}));
                for piece in split(str_of(block, "thinking"), PIECE) {
                    let piece = json!({"type": "thinking_delta", "thinking": piece});
                    send("content_block_delta", delta(piece));
                }
                let signed = json!({"type": "signature_delta", "signature": block["signature"]});
                send("content_block_delta", delta(signed));
            }
            "text" => {
                start["text"] = "".into();
                send("content_block_start", json!({"index": index, "content_block": start}));
                for piece in split(str_of(block, "text"), PIECE) {
                    send(
                        "content_block_delta",
                        delta(json!({"type": "text_delta", "text": piece})),
                    );
                }
            }
            _ => {
                start["input"] = json!({});
                send("content_block_start", json!({"index": index, "content_block": start}));
                let call = &reply.tool_calls[index - (content.len() - reply.tool_calls.len())];
                let pieces = std::iter::once("").chain(split(&call.arguments, PIECE));
                for piece in pieces {
                    let piece = json!({"type": "input_json_delta", "partial_json": piece});
                    send("content_block_delta", delta(piece));
                }
            }
        }
        send("content_block_stop", json!({"index": index}));
    }
    let usage = usage(request, reply);
    send(
        "message_delta",
        json!({
            "delta": {"stop_reason": reply.finish_reason().anthropic(), "stop_sequence": null},
            "usage": {
                "input_tokens": usage.input_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": usage.output_tokens,
            },
        }),
    );
    send("message_stop", json!({}));
    events.into_response()
}

#[cfg(test)]
mod tests {
    use super::super::{Answer, Dialect, Turn};
    use super::*;

    fn request(body: Value) -> Request {
        Request {
            dialect: Dialect::Anthropic,
            method: "POST".into(),
            path: MESSAGES_PATH.into(),
            headers: [("anthropic-version".to_owned(), "2023-06-01".to_owned())].into(),
            raw_body: body.to_string(),
            body,
        }
    }

    #[test]
    fn content_blocks_come_in_order_signed_and_parsed() {
        let Answer::Reply(reply) = Turn::tool_call("a", r#"{"x": [1]}"#)
            .and_tool_call("b", "")
            .with_id("toolu_given")
            .and_tool_call("c", "{broken")
            .with_reasoning("think")
            .answer
        else {
            panic!("a reply")
        };
        let blocks = content(&reply);
        let kinds: Vec<&str> = blocks.iter().map(|b| str_of(b, "type")).collect();
        assert_eq!(kinds, ["thinking", "tool_use", "tool_use", "tool_use"]);
        assert_eq!(blocks[0]["signature"], signature("think"));
        assert_ne!(signature("think"), signature("thinK"));
        assert!(str_of(&blocks[1], "id").starts_with("toolu_01"));
        assert_eq!(blocks[1]["input"], json!({"x": [1]}));
        assert_eq!(blocks[2]["id"], "toolu_given");
        assert_eq!(blocks[2]["input"], json!({}), "empty arguments are an empty input");
        assert_eq!(blocks[3]["input"], "{broken");
    }

    #[test]
    fn requests_are_refused_as_the_api_refuses_them() {
        let user = json!({"role": "user", "content": "hi"});
        let ok = json!({"model": "claude", "max_tokens": 100, "messages": [user]});
        assert_eq!(invalid(&request(ok.clone())), None);
        let mut unversioned = request(ok.clone());
        unversioned.headers.clear();
        assert_eq!(invalid(&unversioned).unwrap().message, "anthropic-version: header is required");
        let no_max = json!({"model": "claude", "messages": [user]});
        assert_eq!(invalid(&request(no_max)).unwrap().message, "max_tokens: Field required");

        let thought = "I should look.";
        let turn = |signature: &str| {
            json!({"model": "claude", "max_tokens": 100, "messages": [user, {"role": "assistant",
                "content": [{"type": "thinking", "thinking": thought, "signature": signature},
                            {"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                 "content": [{"type": "text", "text": "done"}], "is_error": true}]}]})
        };
        let signed = request(turn(&signature(thought)));
        assert_eq!(invalid(&signed), None);
        assert_eq!(
            invalid(&request(turn("forged"))).unwrap().message,
            "messages.1.content.0: Invalid `signature` in `thinking` block"
        );
        assert_eq!(
            signed.tool_results(),
            [SeenToolResult { call_id: "toolu_1".into(), content: "done".into(), is_error: true }]
        );
        assert_eq!(signed.replayed_tool_calls()[0].id, "toolu_1");
        assert_eq!(signed.last_user_text().as_deref(), Some("hi"));

        let mut unanswered = turn(&signature(thought));
        unanswered["messages"][2] = json!({"role": "user", "content": "and?"});
        assert_eq!(
            invalid(&request(unanswered)).unwrap().message,
            "messages.2: `tool_use` ids were found without `tool_result` blocks immediately \
             after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` \
             block in the next message."
        );
    }

    #[test]
    fn errors_take_anthropics_types() {
        let body = |status| error_body(&ProviderError::for_status(status));
        assert_eq!(body(429)["error"]["type"], "rate_limit_error");
        assert_eq!(body(401)["error"]["type"], "authentication_error");
        assert_eq!(body(529)["error"]["type"], "overloaded_error");
        assert_eq!(body(500)["error"]["type"], "api_error");
        assert_eq!(body(400)["error"]["type"], "invalid_request_error");
        assert_eq!(body(400)["type"], "error");
    }
}
