//! The OpenAI Chat Completions dialect of the fake: `POST /v1/chat/completions`, answered as
//! the API writes a `chat.completion` object, or with `"stream": true` as its
//! `chat.completion.chunk` server-sent events; errors as `{"error": {"message", "type",
//! "param", "code"}}`.
//!
//! Checked before the script is asked (and answered `400` like the API, without using a
//! turn): the body is a JSON object, `model` is a string, `messages` a non-empty array.
//!
//! A stream is written as OpenAI writes one: a first chunk with the `role`, the reasoning
//! (DeepSeek's `reasoning_content`) and the text in pieces of a few characters, each tool
//! call by `index`, its `id`, `type` and `name` in its first chunk with empty `arguments`
//! and the arguments in pieces after, a chunk with the `finish_reason` and an empty `delta`,
//! with `stream_options.include_usage` a chunk of `usage` with empty `choices` (and
//! `"usage": null` on every other chunk), and `data: [DONE]`. The [`Quirk`]s change that.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::stream::{Events, body_response, split};
use super::{
    ProviderError, Quirk, Reply, Request, SeenToolCall, SeenToolResult, TokenUsage, content_text,
    made_up_id, parsed_arguments, usage,
};

/// Where the dialect is served.
pub(super) const CHAT_PATH: &str = "/v1/chat/completions";

/// Characters per streamed piece of text or reasoning.
const TEXT_PIECE: usize = 6;
/// Characters per streamed piece of arguments.
const ARGUMENTS_PIECE: usize = 5;

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
    array(body, "messages")
        .iter()
        .map(|message| ChatMessage {
            role: str_of(message, "role").to_owned(),
            content: content_text(message.get("content")),
        })
        .collect()
}

/// The `tool` messages of a request body.
pub(super) fn tool_results(body: &Value) -> Vec<SeenToolResult> {
    array(body, "messages")
        .iter()
        .filter(|message| str_of(message, "role") == "tool")
        .map(|message| SeenToolResult {
            call_id: str_of(message, "tool_call_id").to_owned(),
            content: content_text(message.get("content")),
            is_error: false,
        })
        .collect()
}

/// The `tool_calls` of the assistant messages of a request body.
pub(super) fn replayed_calls(body: &Value) -> Vec<SeenToolCall> {
    array(body, "messages")
        .iter()
        .filter(|message| str_of(message, "role") == "assistant")
        .flat_map(|message| array(message, "tool_calls"))
        .map(|call| {
            let function = call.get("function").unwrap_or(&Value::Null);
            SeenToolCall {
                id: str_of(call, "id").to_owned(),
                name: str_of(function, "name").to_owned(),
                arguments: parsed_arguments(str_of(function, "arguments")),
            }
        })
        .collect()
}

pub(super) fn array<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value.get(key).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

pub(super) fn str_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Why the API would refuse `request` before reading it further.
pub(super) fn invalid(request: &Request) -> Option<ProviderError> {
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
        Some(Value::Array(messages)) if !messages.is_empty() => unanswered(messages),
        Some(Value::Array(_)) => Some(bad(
            Some("messages"),
            Some("empty_array"),
            "Invalid 'messages': empty array (fake).",
        )),
        _ => Some(bad(
            Some("messages"),
            Some("missing_required_parameter"),
            "Missing required parameter: 'messages' (fake).",
        )),
    }
}

/// The API's refusal of a conversation where an assistant message's `tool_calls` are not
/// all answered by the `tool` messages right after it, or where a `tool` message answers no
/// call of the assistant message before it.
fn unanswered(messages: &[Value]) -> Option<ProviderError> {
    let mut open: Vec<&str> = Vec::new();
    let mut calling = None;
    for (at, message) in messages.iter().enumerate() {
        let role = str_of(message, "role");
        if role == "tool" {
            let id = str_of(message, "tool_call_id");
            if calling.is_none() {
                let param = format!("messages.[{at}].role");
                return Some(bad(
                    Some(&param),
                    None,
                    "Invalid parameter: messages with role 'tool' must be a response to a \
                     preceeding message with 'tool_calls'.",
                ));
            }
            open.retain(|open| *open != id);
            continue;
        }
        if let Some(from) = calling.take().filter(|_| !open.is_empty()) {
            return Some(missing(from, &open));
        }
        open.clear();
        let calls = array(message, "tool_calls");
        if role == "assistant" && !calls.is_empty() {
            open = calls.iter().map(|call| str_of(call, "id")).collect();
            calling = Some(at);
        }
    }
    match calling {
        Some(from) if !open.is_empty() => Some(missing(from, &open)),
        _ => None,
    }
}

fn missing(at: usize, ids: &[&str]) -> ProviderError {
    let param = format!("messages.[{at}].role");
    bad(
        Some(&param),
        None,
        &format!(
            "An assistant message with 'tool_calls' must be followed by tool messages responding \
             to each 'tool_call_id'. The following tool_call_ids did not have response \
             messages: {}",
            ids.join(", ")
        ),
    )
}

/// A `400` `invalid_request_error`.
pub(super) fn bad(param: Option<&str>, code: Option<&str>, message: &str) -> ProviderError {
    ProviderError {
        status: 400,
        kind: "invalid_request_error".to_owned(),
        code: code.map(str::to_owned),
        param: param.map(str::to_owned),
        message: message.to_owned(),
        retry_after: None,
    }
}

/// `error` as the API writes it.
pub(super) fn error_body(error: &ProviderError) -> Value {
    json!({
        "error": {
            "message": error.message,
            "type": error.kind,
            "param": error.param,
            "code": error.code,
        }
    })
}

/// A call as this dialect sends it: its id (none with [`Quirk::NoCallIds`]) and arguments.
struct Call<'a> {
    id: Option<String>,
    name: &'a str,
    arguments: &'a str,
}

fn calls(reply: &Reply) -> Vec<Call<'_>> {
    reply
        .tool_calls
        .iter()
        .map(|call| Call {
            id: (!reply.has(Quirk::NoCallIds))
                .then(|| call.id.clone().unwrap_or_else(|| made_up_id("call_"))),
            name: &call.name,
            arguments: if reply.has(Quirk::EmptyArguments) && call.arguments.trim() == "{}" {
                ""
            } else {
                &call.arguments
            },
        })
        .collect()
}

/// The field reasoning goes in.
fn reasoning_field(reply: &Reply) -> &'static str {
    if reply.has(Quirk::ReasoningField) { "reasoning" } else { "reasoning_content" }
}

fn usage_object(usage: TokenUsage) -> Value {
    json!({
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    })
}

/// `reply`, streamed or not as the request asks.
pub(super) fn reply(request: &Request, reply: &Reply) -> axum::response::Response {
    if request.stream() {
        return chunks(request, reply).into_response();
    }
    let body = completion(request, reply);
    body_response(
        axum::http::StatusCode::OK,
        "application/json",
        body.to_string(),
        reply.has(Quirk::SplitUtf8),
    )
}

/// A `chat.completion`.
fn completion(request: &Request, reply: &Reply) -> Value {
    let calls = calls(reply);
    let mut message = Map::new();
    message.insert("role".into(), "assistant".into());
    let content = if reply.text.is_empty() && !calls.is_empty() {
        Value::Null
    } else {
        reply.text.clone().into()
    };
    message.insert("content".into(), content);
    if let Some(reasoning) = &reply.reasoning {
        message.insert(reasoning_field(reply).into(), reasoning.clone().into());
    }
    if !calls.is_empty() {
        let calls: Vec<Value> = calls.iter().map(|call| whole_call(call, None)).collect();
        message.insert("tool_calls".into(), calls.into());
    }
    message.insert("refusal".into(), Value::Null);
    message.insert("annotations".into(), json!([]));
    json!({
        "id": made_up_id("chatcmpl-"),
        "object": "chat.completion",
        "created": now(),
        "model": request.model().unwrap_or_default(),
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": reply.finish_reason().openai(),
        }],
        "usage": usage_object(usage(request, reply)),
        "service_tier": "default",
        "system_fingerprint": null,
    })
}

/// A call with its id, type, name and `arguments`, at `index` when streamed.
fn whole_call(call: &Call<'_>, index: Option<usize>) -> Value {
    with_header(call, index, call.arguments)
}

fn with_header(call: &Call<'_>, index: Option<usize>, arguments: &str) -> Value {
    let mut out = Map::new();
    if let Some(index) = index {
        out.insert("index".into(), index.into());
    }
    if let Some(id) = &call.id {
        out.insert("id".into(), id.clone().into());
    }
    out.insert("type".into(), "function".into());
    out.insert("function".into(), json!({"name": call.name, "arguments": arguments}));
    out.into()
}

pub(super) fn now() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The `chat.completion.chunk` events of `reply`.
fn chunks(request: &Request, reply: &Reply) -> Events {
    let include_usage = request
        .body
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let usage_last = reply.has(Quirk::UsageInLastChunk);
    let id = made_up_id("chatcmpl-");
    let created = now();
    let model = request.model().unwrap_or_default().to_owned();
    let chunk = |choices: Value, usage: Option<Value>| {
        let mut out = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "service_tier": "default",
            "system_fingerprint": "fp_fake",
            "choices": choices,
        });
        if let Some(usage) = usage {
            out["usage"] = usage;
        } else if include_usage && !usage_last {
            out["usage"] = Value::Null;
        }
        out
    };
    let choice = |delta: Value, finish: Option<&str>| json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]);
    let mut events = Events::for_reply(reply);
    events.data(&chunk(
        choice(json!({"role": "assistant", "content": "", "refusal": null}), None),
        None,
    ));
    if let Some(reasoning) = &reply.reasoning {
        for piece in split(reasoning, TEXT_PIECE) {
            let delta = json!({"content": null, reasoning_field(reply): piece});
            events.data(&chunk(choice(delta, None), None));
        }
    }
    for piece in split(&reply.text, TEXT_PIECE) {
        events.data(&chunk(choice(json!({"content": piece}), None), None));
    }
    for (index, call) in calls(reply).iter().enumerate() {
        let delta = |call: Value| json!({"tool_calls": [call]});
        if reply.has(Quirk::WholeCallInOneChunk) {
            events.data(&chunk(choice(delta(whole_call(call, Some(index))), None), None));
            continue;
        }
        events.data(&chunk(choice(delta(with_header(call, Some(index), "")), None), None));
        for piece in split(call.arguments, ARGUMENTS_PIECE) {
            let part = if reply.has(Quirk::RepeatIdAndName) {
                with_header(call, Some(index), piece)
            } else {
                json!({"index": index, "function": {"arguments": piece}})
            };
            events.data(&chunk(choice(delta(part), None), None));
        }
    }
    let usage = usage_object(usage(request, reply));
    let finish = choice(json!({}), Some(reply.finish_reason().openai()));
    events.data(&chunk(finish, usage_last.then(|| usage.clone())));
    if include_usage && !usage_last {
        events.data(&chunk(json!([]), Some(usage)));
    }
    if !reply.has(Quirk::NoDone) {
        events.data_text("[DONE]");
    }
    events
}

#[cfg(test)]
mod tests {
    use super::super::{Answer, Dialect, Turn};
    use super::*;

    fn request(body: Value) -> Request {
        Request {
            dialect: Dialect::OpenaiChat,
            method: "POST".into(),
            path: CHAT_PATH.into(),
            headers: Default::default(),
            raw_body: body.to_string(),
            body,
        }
    }

    fn reply_of(turn: Turn) -> Reply {
        match turn.answer {
            Answer::Reply(reply) => reply,
            other => panic!("a reply: {other:?}"),
        }
    }

    /// The data of each event of a stream, `[DONE]` as a string.
    fn data(events: &Events) -> Vec<Value> {
        events
            .text()
            .split("\n\n")
            .filter(|event| !event.is_empty())
            .map(|event| {
                let data = event.strip_prefix("data:").expect("data");
                let data = data.strip_prefix(' ').unwrap_or(data);
                serde_json::from_str(data).unwrap_or_else(|_| Value::String(data.to_owned()))
            })
            .collect()
    }

    fn streamed(usage: bool) -> Request {
        request(json!({"model": "gpt-x", "stream": true, "messages": [
            {"role": "user", "content": "hi"}], "stream_options": {"include_usage": usage}}))
    }

    #[test]
    fn a_stream_is_written_as_openai_writes_it() {
        let reply = reply_of(
            Turn::tool_call("get_weather", r#"{"city":"Paris"}"#)
                .with_id("call_abc")
                .with_text("Let me check.")
                .with_reasoning("Weather needed.")
                .with_usage(80, 19),
        );
        let written = data(&chunks(&streamed(true), &reply));
        let deltas: Vec<&Value> =
            written.iter().filter_map(|c| c.pointer("/choices/0/delta")).collect();
        assert_eq!(deltas[0], &json!({"role": "assistant", "content": "", "refusal": null}));
        assert_eq!(deltas[1], &json!({"content": null, "reasoning_content": "Weathe"}));
        let text: String =
            deltas.iter().filter_map(|d| d.get("content").and_then(Value::as_str)).collect();
        assert_eq!(text, "Let me check.");
        let first_call = deltas.iter().find(|d| d.get("tool_calls").is_some()).expect("a call");
        assert_eq!(
            first_call["tool_calls"][0],
            json!({"index": 0, "id": "call_abc", "type": "function",
                   "function": {"name": "get_weather", "arguments": ""}})
        );
        let pieces: Vec<&Value> = deltas
            .iter()
            .filter_map(|d| d.pointer("/tool_calls/0"))
            .filter(|call| call.get("id").is_none())
            .collect();
        assert!(pieces.len() >= 2, "arguments in pieces: {pieces:?}");
        assert_eq!(pieces[0], &json!({"index": 0, "function": {"arguments": "{\"cit"}}));
        let arguments: String = pieces
            .iter()
            .map(|call| call.pointer("/function/arguments").and_then(Value::as_str).unwrap())
            .collect();
        assert_eq!(arguments, r#"{"city":"Paris"}"#);

        let n = written.len();
        assert_eq!(written[n - 3]["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(written[n - 3]["choices"][0]["delta"], json!({}));
        assert_eq!(written[n - 3]["usage"], Value::Null, "null usage while it streams");
        assert_eq!(written[n - 2]["choices"], json!([]));
        assert_eq!(written[n - 2]["usage"]["prompt_tokens"], 80);
        assert_eq!(written[n - 2]["usage"]["total_tokens"], 99);
        assert_eq!(written[n - 1], "[DONE]");
        assert!(written[..n - 1].iter().all(|c| c["object"] == "chat.completion.chunk"));
        assert!(written[..n - 1].iter().all(|c| c["id"] == written[0]["id"]));

        let without_usage = data(&chunks(&streamed(false), &reply));
        assert!(without_usage.iter().all(|c| c.get("usage").is_none()), "{without_usage:?}");
        assert_eq!(without_usage.len(), n - 1);
    }

    #[test]
    fn quirks_change_the_stream() {
        let base =
            Turn::tool_call("t", "{}").and_tool_call("u", r#"{"a":"b"}"#).with_reasoning("hmm");
        let quirky = |quirk: Quirk| {
            let reply = reply_of(base.clone().with_quirk(quirk));
            (chunks(&streamed(true), &reply).text(), data(&chunks(&streamed(true), &reply)))
        };
        let calls_of = |chunks: &[Value]| -> Vec<Value> {
            chunks
                .iter()
                .filter_map(|c| c.pointer("/choices/0/delta/tool_calls/0").cloned())
                .collect()
        };

        let (_, whole) = quirky(Quirk::WholeCallInOneChunk);
        let whole = calls_of(&whole);
        assert_eq!(whole.len(), 2, "{whole:?}");
        assert_eq!(whole[1]["function"], json!({"name": "u", "arguments": "{\"a\":\"b\"}"}));

        let (_, repeated) = quirky(Quirk::RepeatIdAndName);
        let repeated = calls_of(&repeated);
        assert!(repeated.len() > 2);
        assert!(repeated.iter().all(|c| c["id"].is_string() && c["function"]["name"].is_string()));

        let (_, no_ids) = quirky(Quirk::NoCallIds);
        assert!(calls_of(&no_ids).iter().all(|c| c.get("id").is_none()));

        let (_, empty) = quirky(Quirk::EmptyArguments);
        let empty = calls_of(&empty);
        assert_eq!(empty[0]["function"]["arguments"], "", "{{}} is sent as nothing");
        assert_eq!(empty.iter().filter(|c| c["index"] == 0).count(), 1);

        let (text, _) = quirky(Quirk::DataWithoutSpace);
        assert!(text.starts_with("data:{") && text.ends_with("data:[DONE]\n\n"), "{text}");
        assert!(!text.contains("data: "));

        let (text, _) = quirky(Quirk::ReasoningField);
        assert!(text.contains(r#""reasoning":"hm""#) && !text.contains("reasoning_content"));

        let (_, last) = quirky(Quirk::UsageInLastChunk);
        let n = last.len();
        assert_eq!(last[n - 2]["choices"][0]["finish_reason"], "tool_calls");
        assert!(last[n - 2]["usage"]["completion_tokens"].is_u64(), "{:?}", last[n - 2]);
        assert!(last[..n - 2].iter().all(|c| c.get("usage").is_none()));

        let (text, _) = quirky(Quirk::NoDone);
        assert!(!text.contains("[DONE]"));
    }

    #[test]
    fn a_completion_carries_calls_and_reasoning() {
        let reply = reply_of(
            Turn::tool_call("t", "{}").with_id("call_1").with_reasoning("why").finish("length"),
        );
        let body = completion(&streamed(false), &reply);
        let message = &body["choices"][0]["message"];
        assert_eq!(message["content"], Value::Null);
        assert_eq!(message["reasoning_content"], "why");
        assert_eq!(
            message["tool_calls"],
            json!([{"id": "call_1", "type": "function",
                    "function": {"name": "t", "arguments": "{}"}}])
        );
        assert_eq!(body["choices"][0]["finish_reason"], "length");
    }

    #[test]
    fn every_call_must_be_answered_by_the_tool_messages_right_after() {
        let user = json!({"role": "user", "content": "hi"});
        let calling = json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "t", "arguments": "{}"}},
            {"id": "call_2", "type": "function", "function": {"name": "t", "arguments": "{}"}}]});
        let result = |id: &str| json!({"role": "tool", "tool_call_id": id, "content": "ok"});
        let refusal = |messages: Value| {
            invalid(&request(json!({"model": "m", "messages": messages}))).map(|e| e.message)
        };
        assert_eq!(refusal(json!([user, calling, result("call_2"), result("call_1")])), None);
        let half = refusal(json!([user, calling, result("call_1"), user])).expect("refused");
        assert!(half.ends_with("did not have response messages: call_2"), "{half}");
        let last = refusal(json!([user, calling])).expect("refused");
        assert!(last.ends_with("messages: call_1, call_2"), "{last}");
        let stray = refusal(json!([user, result("call_1")])).expect("refused");
        assert!(stray.contains("must be a response to a preceeding message"), "{stray}");
    }

    #[test]
    fn the_conversation_is_read_back() {
        let request = request(json!({"model": "m", "tools": [
            {"type": "function", "function": {"name": "fs__read", "parameters": {}}}],
            "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "read a"}]},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
                "type": "function", "function": {"name": "fs__read", "arguments": "{\"p\":\"a\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "x", "arguments": "{"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "A"},
            {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "B"}]},
        ]}));
        assert_eq!(request.last_user_text().as_deref(), Some("read a"));
        assert_eq!(request.tool_names(), ["fs__read"]);
        assert_eq!(
            request.replayed_tool_calls(),
            [
                SeenToolCall {
                    id: "call_1".into(),
                    name: "fs__read".into(),
                    arguments: json!({"p": "a"})
                },
                SeenToolCall { id: "call_2".into(), name: "x".into(), arguments: json!("{") },
            ]
        );
        assert_eq!(invalid(&request), None);
        let results = request.tool_results();
        assert_eq!(results.len(), 2);
        assert_eq!((results[1].call_id.as_str(), results[1].content.as_str()), ("call_2", "B"));
    }
}
