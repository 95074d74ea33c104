//! OpenAI Chat Completions (`POST {base_url}/chat/completions`), as OpenAI, DeepSeek, Ollama,
//! vLLM, llama.cpp, LM Studio and OpenRouter speak it.
//!
//! The request: the system prompt as the first `system` message; a user message's content is a
//! string when it is only text (DeepSeek and older compatible servers take nothing else) and an
//! array of `text` / `image_url` (data URL) parts when it holds an image; an assistant turn has
//! `content` `null` when it only calls tools, its `tool_calls` (arguments as the model wrote
//! them, `{}` when empty), and its reasoning as `reasoning_content` when it is part of the
//! current tool-use turn (after the last user message: DeepSeek requires it back there and
//! other servers ignore the field; older turns are not sent it, DeepSeek's first reasoner
//! refused it); each tool result is a `tool` message with its texts joined by newlines. Tool
//! messages carry text only, so the images of a run of tool results follow it in one `user`
//! message, each introduced by the call it came from. Tools are `{"type": "function",
//! "function": {name, description, parameters}}` (not strict). `max_tokens` is sent as
//! `max_completion_tokens` to OpenAI itself (its reasoning models refuse `max_tokens`) and as
//! `max_tokens` elsewhere.
//!
//! The stream (`stream: true`, `stream_options.include_usage`), with the quirks of the
//! compatible servers: text in `delta.content`; reasoning in `delta.reasoning_content`
//! (DeepSeek, vLLM, llama.cpp) or `delta.reasoning` (Ollama, OpenRouter, newer vLLM; when both
//! come, `reasoning_content` is read); tool calls assembled by `index` (parallel calls), or,
//! without an index, by `id`, else by position; a whole call in one chunk; `id` and `name`
//! repeated on later chunks; no `id` (made up as `call_<n>`); arguments in any number of pieces
//! (joined as text: each chunk is whole JSON, so only the text is split) or as a JSON object;
//! usage in a last chunk with no choices (or beside the finish reason); `data: [DONE]`; an
//! `error` object in a chunk; a stream that ends without `[DONE]` is complete if a finish reason
//! came, truncated otherwise. A server that answers with one `chat.completion` body instead of
//! a stream is read the same way, its first choice's `message` as one delta (a `refusal` in
//! place of the content is `content_filter`). Finish reasons: `stop` is the end (a tool use if the turn called
//! tools: Ollama says `stop` then), `tool_calls` / `function_call` a tool use, `length` the
//! token limit, `content_filter` filtered.

use serde_json::{Map, Value, json};

use super::Finished;
use super::StreamEvent;
use super::content::{data_url, joined_text};
use super::decode::{Decoder as DecoderTrait, Fault, error_fields};
use super::sse::SseEvent;
use crate::chat::{
    AssistantTurn, ChatRequest, Message, Part, Reasoning, StopReason, ToolCall, Usage,
};

/// The request body for `request`; `max_tokens_field` is the name `max_tokens` goes under.
pub(super) fn body(request: &ChatRequest, max_tokens_field: &str) -> Value {
    let mut messages = Vec::new();
    if let Some(system) = &request.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    let last_user = request.messages.iter().rposition(|m| matches!(m, Message::User { .. }));
    // Images of the tool results seen since the last non-tool message.
    let mut images: Vec<Value> = Vec::new();
    for (position, message) in request.messages.iter().enumerate() {
        if !matches!(message, Message::ToolResult(_)) && !images.is_empty() {
            messages.push(json!({"role": "user", "content": std::mem::take(&mut images)}));
        }
        match message {
            Message::User { content } => messages.push(user(content)),
            Message::Assistant(turn) => {
                let current = last_user.is_none_or(|last| position > last);
                messages.push(assistant(turn, current));
            }
            Message::ToolResult(result) => {
                messages.push(json!({
                    "role": "tool",
                    "tool_call_id": result.call_id,
                    "content": joined_text(&result.content),
                }));
                let mut first = true;
                for part in &result.content {
                    if let Part::Image { mime_type, data } = part {
                        if first {
                            first = false;
                            let text = format!(
                                "The image(s) returned by {} (call {}):",
                                result.name, result.call_id
                            );
                            images.push(json!({"type": "text", "text": text}));
                        }
                        images.push(image(mime_type, data));
                    }
                }
            }
        }
    }
    if !images.is_empty() {
        messages.push(json!({"role": "user", "content": images}));
    }
    let mut body = Map::new();
    body.insert("model".into(), request.model.clone().into());
    body.insert("messages".into(), messages.into());
    if !request.tools.is_empty() {
        let tools = request.tools.iter().map(|tool| {
            json!({"type": "function", "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            }})
        });
        body.insert("tools".into(), tools.collect());
    }
    if let Some(temperature) = request.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(max_tokens) = request.max_tokens {
        body.insert(max_tokens_field.into(), max_tokens.into());
    }
    body.insert("stream".into(), true.into());
    body.insert("stream_options".into(), json!({"include_usage": true}));
    body.into()
}

fn image(mime_type: &str, data: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": data_url(mime_type, data)}})
}

fn user(content: &[Part]) -> Value {
    if content.iter().all(|part| matches!(part, Part::Text { .. })) {
        return json!({"role": "user", "content": joined_text(content)});
    }
    let parts: Vec<Value> = content
        .iter()
        .map(|part| match part {
            Part::Text { text } => json!({"type": "text", "text": text}),
            Part::Image { mime_type, data } => image(mime_type, data),
        })
        .collect();
    json!({"role": "user", "content": parts})
}

fn assistant(turn: &AssistantTurn, current: bool) -> Value {
    let mut message = Map::new();
    message.insert("role".into(), "assistant".into());
    let content = if turn.text.is_empty() && !turn.tool_calls.is_empty() {
        Value::Null
    } else {
        turn.text.clone().into()
    };
    message.insert("content".into(), content);
    if !turn.tool_calls.is_empty() {
        let calls = turn.tool_calls.iter().map(|call| {
            let arguments =
                if call.arguments.trim().is_empty() { "{}" } else { call.arguments.as_str() };
            json!({"id": call.id, "type": "function",
                   "function": {"name": call.name, "arguments": arguments}})
        });
        message.insert("tool_calls".into(), calls.collect());
    }
    if let Some(reasoning) = turn.reasoning.as_ref().filter(|r| current && !r.text.is_empty()) {
        message.insert("reasoning_content".into(), reasoning.text.clone().into());
    }
    message.into()
}

/// A tool call being assembled.
#[derive(Debug, Default)]
struct Call {
    /// The key it is found by: its index, else its id.
    index: Option<u64>,
    id: Option<String>,
    name: String,
    arguments: String,
    started: bool,
}

/// The state of one response's stream.
#[derive(Debug, Default)]
pub(super) struct Decoder {
    text: String,
    reasoning: String,
    calls: Vec<Call>,
    finish: Option<String>,
    usage: Option<Usage>,
}

impl Decoder {
    fn chunk(&mut self, chunk: &Value, out: &mut Vec<StreamEvent>) -> Result<(), Fault> {
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            let (code, message) = error_fields(&json!({"error": error}));
            let message = message.unwrap_or_else(|| "an error without a message".to_owned());
            return Err(Fault::InStream { code, message });
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(read_usage(usage));
        }
        let choices = chunk.get("choices").and_then(Value::as_array);
        // One answer is asked for (no `n`): the choice with index 0.
        let Some(choice) = choices.and_then(|choices| {
            choices.iter().find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
        }) else {
            return Ok(());
        };
        if let Some(delta) = choice.get("delta") {
            if let Some(text) = delta.get("content").and_then(Value::as_str)
                && !text.is_empty()
            {
                self.text.push_str(text);
                out.push(StreamEvent::Text(text.to_owned()));
            }
            let reasoning = ["reasoning_content", "reasoning"]
                .iter()
                .find_map(|key| delta.get(*key).and_then(Value::as_str).filter(|r| !r.is_empty()));
            if let Some(reasoning) = reasoning {
                self.reasoning.push_str(reasoning);
                out.push(StreamEvent::Reasoning(reasoning.to_owned()));
            }
            if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                for call in calls {
                    self.call_delta(call, calls.len(), out);
                }
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(reason.to_owned());
        }
        Ok(())
    }

    fn call_delta(&mut self, delta: &Value, in_chunk: usize, out: &mut Vec<StreamEvent>) {
        let index = delta.get("index").and_then(Value::as_u64);
        let id = delta.get("id").and_then(Value::as_str).filter(|id| !id.is_empty());
        let found = match (index, id) {
            (Some(index), _) => self.calls.iter().position(|c| c.index == Some(index)),
            (None, Some(id)) => self.calls.iter().position(|c| c.id.as_deref() == Some(id)),
            // Neither: a lone piece continues the last call unless it names another tool;
            // several in one chunk are each a call.
            (None, None) if in_chunk == 1 => {
                let name = delta.pointer("/function/name").and_then(Value::as_str);
                self.calls
                    .last()
                    .filter(|last| name.is_none_or(|name| name == last.name))
                    .map(|_| self.calls.len() - 1)
            }
            (None, None) => None,
        };
        let slot = match found {
            Some(slot) => slot,
            None => {
                self.calls.push(Call { index, ..Call::default() });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[slot];
        if call.id.is_none() {
            call.id = id.map(str::to_owned);
        }
        let function = delta.get("function");
        if let Some(name) = function.and_then(|f| f.get("name")).and_then(Value::as_str)
            && call.name.is_empty()
        {
            call.name = name.to_owned();
        }
        match function.and_then(|f| f.get("arguments")) {
            Some(Value::String(piece)) => call.arguments.push_str(piece),
            Some(object @ Value::Object(_)) => call.arguments.push_str(&object.to_string()),
            _ => {}
        }
        if !call.started && !call.name.is_empty() {
            call.started = true;
            if call.id.is_none() {
                let id = self.made_up_id(slot);
                self.calls[slot].id = Some(id);
            }
            let call = &self.calls[slot];
            let id = call.id.clone().unwrap_or_default();
            out.push(StreamEvent::ToolCallStarted { id, name: call.name.clone() });
        }
    }

    /// An id for the call at `slot`, which came without one: `call_<slot>`, or, if another
    /// call has that id, `call_<slot>_<n>`.
    fn made_up_id(&self, slot: usize) -> String {
        let taken = |id: &str| self.calls.iter().any(|c| c.id.as_deref() == Some(id));
        let mut id = format!("call_{slot}");
        let mut n = 1;
        while taken(&id) {
            id = format!("call_{slot}_{n}");
            n += 1;
        }
        id
    }

    fn finished(&mut self) -> Finished {
        for slot in 0..self.calls.len() {
            if self.calls[slot].id.is_none() {
                self.calls[slot].id = Some(self.made_up_id(slot));
            }
        }
        let tool_calls: Vec<ToolCall> = std::mem::take(&mut self.calls)
            .into_iter()
            .map(|call| ToolCall {
                id: call.id.unwrap_or_default(),
                name: call.name,
                arguments: call.arguments,
            })
            .collect();
        let stop = match self.finish.as_deref() {
            Some("tool_calls" | "function_call") => StopReason::ToolUse,
            Some("stop" | "eos" | "end_turn") | None if !tool_calls.is_empty() => {
                StopReason::ToolUse
            }
            Some("stop" | "eos" | "end_turn") | None => StopReason::End,
            Some("length") => StopReason::MaxTokens,
            Some("content_filter") => StopReason::ContentFilter,
            Some(other) => StopReason::Other(other.to_owned()),
        };
        let reasoning = std::mem::take(&mut self.reasoning);
        Finished {
            turn: AssistantTurn {
                text: std::mem::take(&mut self.text),
                reasoning: (!reasoning.is_empty())
                    .then_some(Reasoning { text: reasoning, opaque: None }),
                tool_calls,
            },
            usage: self.usage,
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
        let data = event.data.trim();
        if data == "[DONE]" {
            return Ok(Some(self.finished()));
        }
        if data.is_empty() {
            return Ok(None);
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| Fault::not_json(&e))?;
        self.chunk(&chunk, out)?;
        Ok(None)
    }

    fn end(&mut self) -> Result<Finished, Fault> {
        if self.finish.is_none() {
            return Err(Fault::Truncated);
        }
        Ok(self.finished())
    }

    /// A `chat.completion` object: its first choice's `message` read as one delta holding it
    /// all. A `refusal` in place of the content is a [`StopReason::ContentFilter`].
    fn whole(&mut self, body: &Value, out: &mut Vec<StreamEvent>) -> Result<Finished, Fault> {
        if body.get("error").is_some_and(|e| !e.is_null()) {
            self.chunk(body, out)?;
        }
        let choice = body
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|choices| choices.first())
            .ok_or_else(|| {
                Fault::Protocol("a body that is not a chat completion (no choices)".to_owned())
            })?;
        let message = choice
            .get("message")
            .ok_or_else(|| Fault::Protocol("a choice without a message".to_owned()))?;
        let refused = !message.get("content").is_some_and(Value::is_string)
            && message.get("refusal").is_some_and(Value::is_string);
        let finish_reason =
            if refused { json!("content_filter") } else { choice["finish_reason"].clone() };
        let chunk = json!({
            "choices": [{"index": 0, "delta": message, "finish_reason": finish_reason}],
            "usage": body.get("usage"),
        });
        self.chunk(&chunk, out)?;
        Ok(self.finished())
    }
}

fn read_usage(usage: &Value) -> Usage {
    let number = |path: &[&str]| {
        path.iter().try_fold(usage, |value, key| value.get(key)).and_then(Value::as_u64)
    };
    Usage {
        input_tokens: number(&["prompt_tokens"]).unwrap_or(0),
        output_tokens: number(&["completion_tokens"]).unwrap_or(0),
        cached_input_tokens: number(&["prompt_tokens_details", "cached_tokens"])
            .or_else(|| number(&["prompt_cache_hit_tokens"]))
            .unwrap_or(0),
        reasoning_tokens: number(&["completion_tokens_details", "reasoning_tokens"]).unwrap_or(0),
    }
}

#[cfg(test)]
mod tests;
