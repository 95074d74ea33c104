//! OpenAI Responses (`POST {base_url}/responses`), stateless: `store: false`, the whole
//! conversation sent as `input` each time.
//!
//! The request: the system prompt as `instructions`; a user message as a `message` item with
//! `input_text` / `input_image` (data URL, `detail: "auto"`, which the SDK's type requires)
//! parts; an assistant turn as its reasoning items, an assistant `message` whose `content` is
//! its text (the easy input form: a list would have to be `output_text` parts with the `id`,
//! `status` and `annotations` of a stored message), and one `function_call` item per call
//! (`call_id`, `name`, `arguments`; `{}` when empty); a tool result as a
//! `function_call_output` item whose `output` is the joined text, or a list of `input_text` /
//! `input_image` when it holds images. Messages and calls are replayed without an `id`: with
//! `store: false` the API has nothing to find by it. Tools are flat: `{"type": "function",
//! name, description, parameters, "strict": false}` (not strict: MCP schemas rarely meet
//! strict mode's rules).
//!
//! Reasoning: the `reasoning` output items are kept whole in [`Reasoning::opaque`] (an array),
//! and replayed only when they carry `encrypted_content` and an `id`, because with `store:
//! false` an item without the content refers to nothing the API kept and is refused. A
//! replayed item keeps its `id` (the SDK's type requires it, and the encrypted content is bound
//! to it) and loses its `status`. `include:
//! ["reasoning.encrypted_content"]`, which would make them carry it, is not requested: OpenAI
//! answers 400 ("Encrypted content is not supported with this model") for models that do not
//! reason (gpt-4o, gpt-4.1, gpt-5-chat), and which do is not knowable from here. So reasoning
//! models lose their reasoning between tool calls (they still work); the summaries are shown.
//!
//! The stream: `response.output_text.delta` (text); `response.reasoning_summary_text.delta` and
//! `response.reasoning_text.delta` (reasoning; summary parts separated by a blank line);
//! `response.output_item.added` with a `function_call` (the call starts);
//! `response.function_call_arguments.delta` / `.done` and `response.output_item.done` (the
//! arguments; the `done` forms are authoritative); `response.completed` (usage: `input_tokens`,
//! `output_tokens`, `input_tokens_details.cached_tokens`,
//! `output_tokens_details.reasoning_tokens`); `response.incomplete` (`max_output_tokens` is the
//! token limit, `content_filter` filtered); `response.failed` and `error` events (an error in
//! the stream). Anything else is ignored. A stream that ends before `response.completed`,
//! `.incomplete` or `.failed` is truncated.

use serde_json::{Map, Value, json};

use super::content::{data_url, has_image, joined_text};
use super::decode::{Decoder as DecoderTrait, Fault, error_fields};
use super::sse::SseEvent;
use super::{Finished, StreamEvent};
use crate::chat::{
    AssistantTurn, ChatRequest, Message, Part, Reasoning, StopReason, ToolCall, Usage,
};

/// The request body for `request`.
pub(super) fn body(request: &ChatRequest) -> Value {
    let mut input = Vec::new();
    for message in &request.messages {
        match message {
            Message::User { content } => input.push(json!({
                "type": "message",
                "role": "user",
                "content": content.iter().map(input_part).collect::<Vec<_>>(),
            })),
            Message::Assistant(turn) => assistant(turn, &mut input),
            Message::ToolResult(result) => {
                let output = if has_image(&result.content) {
                    result.content.iter().map(input_part).collect()
                } else {
                    Value::from(joined_text(&result.content))
                };
                input.push(json!({
                    "type": "function_call_output",
                    "call_id": result.call_id,
                    "output": output,
                }));
            }
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), request.model.clone().into());
    if let Some(system) = &request.system {
        body.insert("instructions".into(), system.clone().into());
    }
    body.insert("input".into(), input.into());
    if !request.tools.is_empty() {
        let tools = request.tools.iter().map(|tool| {
            json!({
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
                "strict": false,
            })
        });
        body.insert("tools".into(), tools.collect());
    }
    if let Some(temperature) = request.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(max_tokens) = request.max_tokens {
        body.insert("max_output_tokens".into(), max_tokens.into());
    }
    body.insert("store".into(), false.into());
    body.insert("stream".into(), true.into());
    body.into()
}

fn input_part(part: &Part) -> Value {
    match part {
        Part::Text { text } => json!({"type": "input_text", "text": text}),
        Part::Image { mime_type, data } => json!({
            "type": "input_image",
            "image_url": data_url(mime_type, data),
            "detail": "auto",
        }),
    }
}

fn assistant(turn: &AssistantTurn, input: &mut Vec<Value>) {
    let items = turn.reasoning.as_ref().and_then(|r| r.opaque.as_ref()).and_then(Value::as_array);
    for item in items.into_iter().flatten() {
        let replayable = item.get("type").and_then(Value::as_str) == Some("reasoning")
            && item.get("encrypted_content").is_some_and(Value::is_string)
            && item.get("id").is_some_and(Value::is_string);
        if let (true, Some(item)) = (replayable, item.as_object()) {
            let mut item = item.clone();
            item.remove("status");
            input.push(item.into());
        }
    }
    if !turn.text.is_empty() {
        input.push(json!({"type": "message", "role": "assistant", "content": turn.text}));
    }
    for call in &turn.tool_calls {
        let arguments = if call.arguments.trim().is_empty() { "{}" } else { &call.arguments };
        input.push(json!({
            "type": "function_call",
            "call_id": call.id,
            "name": call.name,
            "arguments": arguments,
        }));
    }
}

/// A function call being assembled.
#[derive(Debug)]
struct Call {
    item_id: Option<String>,
    output_index: Option<u64>,
    call_id: String,
    name: String,
    arguments: String,
}

/// The state of one response's stream.
#[derive(Debug, Default)]
pub(super) struct Decoder {
    text: String,
    reasoning: String,
    reasoning_items: Vec<Value>,
    calls: Vec<Call>,
}

impl Decoder {
    fn find(&self, event: &Value) -> Option<usize> {
        let item_id = event.get("item_id").and_then(Value::as_str);
        let output_index = event.get("output_index").and_then(Value::as_u64);
        self.calls
            .iter()
            .position(|c| item_id.is_some() && c.item_id.as_deref() == item_id)
            .or_else(|| {
                self.calls
                    .iter()
                    .position(|c| output_index.is_some() && c.output_index == output_index)
            })
    }

    /// A `function_call` item, added or done: the call it is, started if new.
    fn call_item(&mut self, event: &Value, item: &Value, out: &mut Vec<StreamEvent>) -> usize {
        let item_id = item.get("id").and_then(Value::as_str);
        let call_id = item.get("call_id").and_then(Value::as_str);
        let found = self.calls.iter().position(|c| {
            (item_id.is_some() && c.item_id.as_deref() == item_id)
                || call_id.is_some_and(|id| c.call_id == id)
        });
        if let Some(slot) = found {
            return slot;
        }
        let slot = self.calls.len();
        let call = Call {
            item_id: item_id.map(str::to_owned),
            output_index: event.get("output_index").and_then(Value::as_u64),
            call_id: call_id.or(item_id).map_or_else(|| format!("call_{slot}"), str::to_owned),
            name: item.get("name").and_then(Value::as_str).unwrap_or_default().to_owned(),
            arguments: String::new(),
        };
        out.push(StreamEvent::ToolCallStarted {
            id: call.call_id.clone(),
            name: call.name.clone(),
        });
        self.calls.push(call);
        slot
    }

    fn finished(&mut self, stop: StopReason, response: Option<&Value>) -> Finished {
        let usage = response.and_then(|r| r.get("usage")).filter(|u| u.is_object()).map(read_usage);
        let tool_calls: Vec<ToolCall> = std::mem::take(&mut self.calls)
            .into_iter()
            .map(|call| ToolCall { id: call.call_id, name: call.name, arguments: call.arguments })
            .collect();
        let stop = match stop {
            StopReason::End if !tool_calls.is_empty() => StopReason::ToolUse,
            other => other,
        };
        let text = std::mem::take(&mut self.reasoning);
        let items = std::mem::take(&mut self.reasoning_items);
        let reasoning = (!text.is_empty() || !items.is_empty()).then(|| Reasoning {
            text,
            opaque: (!items.is_empty()).then_some(Value::Array(items)),
        });
        Finished {
            turn: AssistantTurn { text: std::mem::take(&mut self.text), reasoning, tool_calls },
            usage,
            stop,
        }
    }
}

impl DecoderTrait for Decoder {
    fn event(
        &mut self,
        event: &SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Option<Finished>, Fault> {
        if event.data.trim().is_empty() || event.data.trim() == "[DONE]" {
            return Ok(None);
        }
        let data: Value = serde_json::from_str(&event.data).map_err(|e| Fault::not_json(&e))?;
        let kind = data.get("type").and_then(Value::as_str).or(event.event.as_deref());
        let text = |key: &str| data.get(key).and_then(Value::as_str).unwrap_or_default();
        match kind.unwrap_or_default() {
            "response.output_text.delta" => {
                let delta = text("delta");
                if !delta.is_empty() {
                    self.text.push_str(delta);
                    out.push(StreamEvent::Text(delta.to_owned()));
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let delta = text("delta");
                if !delta.is_empty() {
                    self.reasoning.push_str(delta);
                    out.push(StreamEvent::Reasoning(delta.to_owned()));
                }
            }
            "response.reasoning_summary_part.added" if !self.reasoning.is_empty() => {
                self.reasoning.push_str("\n\n");
                out.push(StreamEvent::Reasoning("\n\n".to_owned()));
            }
            "response.output_item.added" | "response.output_item.done" => {
                let item = data.get("item").unwrap_or(&Value::Null);
                match item.get("type").and_then(Value::as_str) {
                    Some("function_call") => {
                        let slot = self.call_item(&data, item, out);
                        let arguments = item.get("arguments").and_then(Value::as_str);
                        if let Some(arguments) = arguments.filter(|a| !a.is_empty()) {
                            self.calls[slot].arguments = arguments.to_owned();
                        }
                    }
                    Some("reasoning") if kind == Some("response.output_item.done") => {
                        self.reasoning_items.push(item.clone());
                    }
                    _ => {}
                }
            }
            "response.function_call_arguments.delta" => {
                if let Some(slot) = self.find(&data) {
                    self.calls[slot].arguments.push_str(text("delta"));
                }
            }
            "response.function_call_arguments.done" => {
                if let (Some(slot), Some(arguments)) =
                    (self.find(&data), data.get("arguments").and_then(Value::as_str))
                {
                    self.calls[slot].arguments = arguments.to_owned();
                }
            }
            "response.completed" => {
                return Ok(Some(self.finished(StopReason::End, data.get("response"))));
            }
            "response.incomplete" => {
                let response = data.get("response");
                let reason = response
                    .and_then(|r| r.pointer("/incomplete_details/reason"))
                    .and_then(Value::as_str);
                let stop = match reason {
                    Some("max_output_tokens") => StopReason::MaxTokens,
                    Some("content_filter") => StopReason::ContentFilter,
                    Some(other) => StopReason::Other(other.to_owned()),
                    None => StopReason::Other("incomplete".to_owned()),
                };
                return Ok(Some(self.finished(stop, response)));
            }
            "response.failed" => {
                let error = data.pointer("/response/error").unwrap_or(&Value::Null);
                let (code, message) = error_fields(error);
                let message = message.unwrap_or_else(|| "the response failed".to_owned());
                return Err(Fault::InStream { code, message });
            }
            "error" => {
                let (code, message) = error_fields(&data);
                // The flat shape's `type` is the event's, not a code.
                let code = code.filter(|code| code != "error");
                let message = message.unwrap_or_else(|| "an error without a message".to_owned());
                return Err(Fault::InStream { code, message });
            }
            _ => {}
        }
        Ok(None)
    }

    fn end(&mut self) -> Result<Finished, Fault> {
        Err(Fault::Truncated)
    }
}

fn read_usage(usage: &Value) -> Usage {
    let number = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input_tokens: number("/input_tokens"),
        output_tokens: number("/output_tokens"),
        cached_input_tokens: number("/input_tokens_details/cached_tokens"),
        reasoning_tokens: number("/output_tokens_details/reasoning_tokens"),
    }
}

#[cfg(test)]
mod tests;
