//! The OpenAI Responses dialect of the fake: `POST /v1/responses`, answered with a `response`
//! object, or with `"stream": true` as the API's named server-sent events; errors as OpenAI
//! writes them (`{"error": {"message", "type", "param", "code"}}`).
//!
//! Checked before the script is asked (answered `400` without using a turn): the body is a
//! JSON object, `model` a string, and, without `previous_response_id`, every
//! `function_call_output` in `input` answers a `function_call` item of `input` (the API says
//! `No tool call found for function call output with call_id ...`).
//!
//! A reply's output items, in order: a `reasoning` item whose summary is the reasoning (with
//! an `encrypted_content` when `include` asks for `reasoning.encrypted_content`), a `message`
//! with one `output_text` part, a `function_call` per call (`id` `fc_...`, the script's id as
//! its `call_id`). Streamed: `response.created`, `response.in_progress`, per item
//! `response.output_item.added`, its parts and deltas (`response.reasoning_summary_part.*`
//! and `response.reasoning_summary_text.delta/done`; `response.content_part.*` and
//! `response.output_text.delta/done`; `response.function_call_arguments.delta/done`) and
//! `response.output_item.done`, then `response.completed` with the usage
//! (`response.incomplete` when cut by `max_output_tokens` or filtered). Every event has its
//! `sequence_number`. Of the [`Quirk`]s only `split_utf8` and `data_without_space` apply.

use serde_json::{Value, json};

use super::openai::{array, bad, str_of};
use super::stream::{Events, body_response, split};
use super::{
    ChatMessage, Finish, ProviderError, Quirk, Reply, Request, SeenToolCall, SeenToolResult,
    content_text, made_up_id, parsed_arguments, usage,
};

/// Where the dialect is served.
pub(super) const RESPONSES_PATH: &str = "/v1/responses";

/// Characters per streamed piece of text, summary or arguments.
const PIECE: usize = 5;

/// The `input` items of a body (a string input is one user message).
fn items(body: &Value) -> Vec<Value> {
    match body.get("input") {
        Some(Value::String(text)) => vec![json!({"role": "user", "content": text})],
        Some(Value::Array(items)) => items.clone(),
        _ => Vec::new(),
    }
}

fn kind(item: &Value) -> &str {
    match item.get("type").and_then(Value::as_str) {
        Some(kind) => kind,
        None if item.get("role").is_some() => "message",
        None => "",
    }
}

/// `instructions` as a system message, then the items with a role and the function call
/// outputs (role `tool`).
pub(super) fn messages(body: &Value) -> Vec<ChatMessage> {
    let mut out = Vec::new();
    if let Some(instructions) = body.get("instructions").and_then(Value::as_str) {
        out.push(ChatMessage { role: "system".into(), content: instructions.to_owned() });
    }
    for item in items(body) {
        match kind(&item) {
            "message" => out.push(ChatMessage {
                role: str_of(&item, "role").to_owned(),
                content: content_text(item.get("content")),
            }),
            "function_call_output" => out.push(ChatMessage {
                role: "tool".into(),
                content: content_text(item.get("output")),
            }),
            _ => {}
        }
    }
    out
}

/// The `function_call_output` items.
pub(super) fn tool_results(body: &Value) -> Vec<SeenToolResult> {
    items(body)
        .iter()
        .filter(|item| kind(item) == "function_call_output")
        .map(|item| SeenToolResult {
            call_id: str_of(item, "call_id").to_owned(),
            content: content_text(item.get("output")),
            is_error: false,
        })
        .collect()
}

/// The `function_call` items.
pub(super) fn replayed_calls(body: &Value) -> Vec<SeenToolCall> {
    items(body)
        .iter()
        .filter(|item| kind(item) == "function_call")
        .map(|item| SeenToolCall {
            id: str_of(item, "call_id").to_owned(),
            name: str_of(item, "name").to_owned(),
            arguments: parsed_arguments(str_of(item, "arguments")),
        })
        .collect()
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
            "Missing required parameter: 'model'.",
        ));
    }
    if body.get("previous_response_id").is_some_and(|id| !id.is_null()) {
        return None;
    }
    let calls = replayed_calls(&request.body);
    let orphan = tool_results(&request.body)
        .into_iter()
        .find(|result| !calls.iter().any(|call| call.id == result.call_id))?;
    Some(bad(
        Some("input"),
        None,
        &format!("No tool call found for function call output with call_id {}.", orphan.call_id),
    ))
}

/// The output items of `reply`, done.
fn output(request: &Request, reply: &Reply) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(reasoning) = &reply.reasoning {
        let mut item = json!({
            "id": made_up_id("rs_"),
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": reasoning}],
        });
        let include = array(&request.body, "include");
        if include.iter().any(|i| i == "reasoning.encrypted_content") {
            item["encrypted_content"] = format!("gAAAA-fake-{}", made_up_id("")).into();
        }
        out.push(item);
    }
    if !reply.text.is_empty() || reply.tool_calls.is_empty() {
        out.push(json!({
            "id": made_up_id("msg_"),
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [text_part(&reply.text)],
        }));
    }
    for call in &reply.tool_calls {
        out.push(json!({
            "id": made_up_id("fc_"),
            "type": "function_call",
            "status": "completed",
            "arguments": call.arguments,
            "call_id": call.id.clone().unwrap_or_else(|| made_up_id("call_")),
            "name": call.name,
        }));
    }
    out
}

fn text_part(text: &str) -> Value {
    json!({"type": "output_text", "annotations": [], "logprobs": [], "text": text})
}

/// The `response` object, `status` with `output` and `usage`.
fn response(request: &Request, id: &str, created: u64, state: State<'_>) -> Value {
    let body = &request.body;
    let (status, incomplete, output, usage) = match state {
        State::InProgress => ("in_progress", Value::Null, Vec::new(), Value::Null),
        State::Done { reply, output } => {
            let usage = usage(request, reply);
            let usage = json!({
                "input_tokens": usage.input_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": usage.output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": usage.input_tokens + usage.output_tokens,
            });
            match reply.finish_reason() {
                Finish::Length => {
                    ("incomplete", json!({"reason": "max_output_tokens"}), output.to_vec(), usage)
                }
                Finish::ContentFilter => {
                    ("incomplete", json!({"reason": "content_filter"}), output.to_vec(), usage)
                }
                _ => ("completed", Value::Null, output.to_vec(), usage),
            }
        }
    };
    json!({
        "id": id,
        "object": "response",
        "created_at": created,
        "status": status,
        "background": false,
        "error": null,
        "incomplete_details": incomplete,
        "instructions": body.get("instructions").cloned().unwrap_or(Value::Null),
        "max_output_tokens": body.get("max_output_tokens").cloned().unwrap_or(Value::Null),
        "model": request.model().unwrap_or_default(),
        "output": output,
        "parallel_tool_calls": true,
        "previous_response_id": body.get("previous_response_id").cloned().unwrap_or(Value::Null),
        "reasoning": {"effort": null, "summary": null},
        "store": body.get("store").cloned().unwrap_or(Value::Bool(true)),
        "temperature": body.get("temperature").cloned().unwrap_or(json!(1.0)),
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": body.get("tools").cloned().unwrap_or(json!([])),
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "user": null,
        "metadata": {},
    })
}

enum State<'a> {
    InProgress,
    Done { reply: &'a Reply, output: &'a [Value] },
}

/// `reply`, streamed or not as the request asks.
pub(super) fn reply(request: &Request, reply: &Reply) -> axum::response::Response {
    let id = made_up_id("resp_");
    let created = super::openai::now();
    let output = output(request, reply);
    let done = State::Done { reply, output: &output };
    if !request.stream() {
        let body = response(request, &id, created, done).to_string();
        let split = reply.has(Quirk::SplitUtf8);
        return body_response(axum::http::StatusCode::OK, "application/json", body, split);
    }
    let mut stream = Sequenced { events: Events::for_reply(reply), next: 0 };
    let started = response(request, &id, created, State::InProgress);
    stream.send("response.created", json!({"response": started}));
    stream.send("response.in_progress", json!({"response": started}));
    for (index, item) in output.iter().enumerate() {
        stream.item(index, item);
    }
    let finished = response(request, &id, created, done);
    let last = if finished["status"] == "incomplete" {
        "response.incomplete"
    } else {
        "response.completed"
    };
    stream.send(last, json!({"response": finished}));
    stream.events.into_response()
}

/// Events numbered as they are sent.
struct Sequenced {
    events: Events,
    next: u64,
}

impl Sequenced {
    fn send(&mut self, name: &str, mut data: Value) {
        data["type"] = name.into();
        data["sequence_number"] = self.next.into();
        self.next += 1;
        self.events.named(name, &data);
    }

    /// The events of output item `item` at `index`.
    fn item(&mut self, index: usize, item: &Value) {
        let item_id = str_of(item, "id");
        let at = json!({"item_id": item_id, "output_index": index});
        let mut added = item.clone();
        match str_of(item, "type") {
            "reasoning" => added["summary"] = json!([]),
            "message" => {
                added["status"] = "in_progress".into();
                added["content"] = json!([]);
            }
            _ => {
                added["status"] = "in_progress".into();
                added["arguments"] = "".into();
            }
        }
        self.send("response.output_item.added", json!({"output_index": index, "item": added}));
        match str_of(item, "type") {
            "reasoning" => {
                let at = merged(&at, json!({"summary_index": 0}));
                let text = item.pointer("/summary/0/text").and_then(Value::as_str).unwrap_or("");
                let part = |text: &str| json!({"part": {"type": "summary_text", "text": text}});
                self.send("response.reasoning_summary_part.added", merged(&at, part("")));
                for piece in split(text, PIECE) {
                    let delta = merged(&at, json!({"delta": piece}));
                    self.send("response.reasoning_summary_text.delta", delta);
                }
                self.send(
                    "response.reasoning_summary_text.done",
                    merged(&at, json!({"text": text})),
                );
                self.send("response.reasoning_summary_part.done", merged(&at, part(text)));
            }
            "message" => {
                let at = merged(&at, json!({"content_index": 0}));
                let text = item.pointer("/content/0/text").and_then(Value::as_str).unwrap_or("");
                let part = |text: &str| json!({"part": text_part(text)});
                self.send("response.content_part.added", merged(&at, part("")));
                for piece in split(text, PIECE) {
                    let delta = merged(&at, json!({"delta": piece, "logprobs": []}));
                    self.send("response.output_text.delta", delta);
                }
                let done = merged(&at, json!({"text": text, "logprobs": []}));
                self.send("response.output_text.done", done);
                self.send("response.content_part.done", merged(&at, part(text)));
            }
            _ => {
                let arguments = str_of(item, "arguments");
                for piece in split(arguments, PIECE) {
                    let delta = merged(&at, json!({"delta": piece}));
                    self.send("response.function_call_arguments.delta", delta);
                }
                let done = json!({"arguments": arguments, "name": str_of(item, "name")});
                self.send("response.function_call_arguments.done", merged(&at, done));
            }
        }
        self.send("response.output_item.done", json!({"output_index": index, "item": item}));
    }
}

/// `base` with the keys of `extra` added.
fn merged(base: &Value, extra: Value) -> Value {
    let mut out = base.clone();
    if let (Some(out), Value::Object(extra)) = (out.as_object_mut(), extra) {
        out.extend(extra);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{Answer, Dialect, Turn};
    use super::*;

    fn request(body: Value) -> Request {
        Request {
            dialect: Dialect::OpenaiResponses,
            method: "POST".into(),
            path: RESPONSES_PATH.into(),
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

    #[test]
    fn output_items_come_in_order_with_the_scripts_call_ids() {
        let request = request(json!({"model": "m", "input": "hi",
                                     "include": ["reasoning.encrypted_content"]}));
        let reply = reply_of(
            Turn::tool_call("a", "{}")
                .with_id("call_1")
                .and_tool_call("b", "{\"x\":1}")
                .with_text("ok")
                .with_reasoning("think"),
        );
        let items = output(&request, &reply);
        let kinds: Vec<&str> = items.iter().map(|i| str_of(i, "type")).collect();
        assert_eq!(kinds, ["reasoning", "message", "function_call", "function_call"]);
        assert_eq!(items[0]["summary"][0]["text"], "think");
        assert!(items[0]["encrypted_content"].is_string());
        assert_eq!(items[1]["content"][0]["text"], "ok");
        assert_eq!(items[2]["call_id"], "call_1");
        assert!(str_of(&items[2], "id").starts_with("fc_"));
        assert!(str_of(&items[3], "call_id").starts_with("call_"));
        assert_eq!(items[3]["arguments"], "{\"x\":1}");

        let cut = reply_of(Turn::text("par").finish("length"));
        let done = response(&request, "resp_1", 1, State::Done { reply: &cut, output: &[] });
        assert_eq!(done["status"], "incomplete");
        assert_eq!(done["incomplete_details"]["reason"], "max_output_tokens");
    }

    #[test]
    fn outputs_must_answer_calls_unless_the_previous_response_holds_them() {
        let output = json!({"type": "function_call_output", "call_id": "call_9", "output": "x"});
        let call = json!({"type": "function_call", "call_id": "call_9", "name": "t",
                          "arguments": "{}"});
        let orphan = invalid(&request(json!({"model": "m", "input": [output]}))).expect("400");
        assert_eq!(
            orphan.message,
            "No tool call found for function call output with call_id call_9."
        );
        assert_eq!(invalid(&request(json!({"model": "m", "input": [call, output]}))), None);
        let chained = json!({"model": "m", "previous_response_id": "resp_1", "input": [output]});
        assert_eq!(invalid(&request(chained)), None);
        assert_eq!(
            invalid(&request(json!({"input": "x"}))).expect("400").param.as_deref(),
            Some("model")
        );
    }

    #[test]
    fn the_conversation_is_read_back() {
        let request = request(json!({"model": "m", "instructions": "be brief",
        "tools": [{"type": "function", "name": "fs__read", "parameters": {}}],
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "read a"}]},
            {"type": "function_call", "call_id": "call_1", "name": "fs__read",
             "arguments": "{\"p\":\"a\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "A"},
        ]}));
        assert_eq!(request.messages()[0].content, "be brief");
        assert_eq!(request.last_user_text().as_deref(), Some("read a"));
        assert_eq!(request.tool_names(), ["fs__read"]);
        assert_eq!(request.replayed_tool_calls()[0].arguments, json!({"p": "a"}));
        assert_eq!(request.tool_results()[0].content, "A");
    }
}
