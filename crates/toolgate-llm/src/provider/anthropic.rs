//! Anthropic Messages (`POST {base_url}/messages`, `anthropic-version: 2023-06-01`).
//!
//! The request: the system prompt as top-level `system`; `max_tokens` (required by the API:
//! 8192 unless the request says); messages alternating `user` and `assistant`, consecutive
//! messages of one role merged into one (tool results and the user's next words become one
//! user message, its `tool_result` blocks first, as the API requires); a user message's parts as
//! `text` and `image` (base64 source) blocks, empty texts left out (the API refuses them), an
//! image of a type the API does not take (it takes JPEG, PNG, GIF and WebP) as a text saying
//! so; an
//! assistant turn as its thinking blocks replayed verbatim from [`Reasoning::opaque`] (the
//! `thinking` blocks with their signatures and the `redacted_thinking` blocks, which the API
//! requires back unchanged within a tool-use turn), then its text, then one `tool_use` block per
//! call; an assistant turn with none of these is left out. A `tool_use` block's `input` must be
//! a JSON object: the arguments parsed, and `{}` when the model wrote something that is not a
//! JSON object (the tool result of such a call says what was wrong, so the model still learns
//! it; its exact text is lost from the history the API sees). Tools are `{name, description,
//! input_schema}`.
//!
//! The stream: `message_start` (input tokens: `input_tokens` plus the cache's
//! `cache_read_input_tokens` and `cache_creation_input_tokens`, since Anthropic counts them
//! apart), `content_block_start` (`text`, `tool_use`: the call starts, `thinking`,
//! `redacted_thinking`), `content_block_delta` (`text_delta`, `input_json_delta`: the arguments'
//! text, joined per block; `thinking_delta`, `signature_delta`), `content_block_stop`,
//! `message_delta` (`stop_reason`, output tokens so far), `message_stop` (the end), `ping`, and
//! `error` (an error in the stream: `overloaded_error` and the like). A stream that ends before
//! `message_stop` is complete if a stop reason came, truncated otherwise. Stop reasons:
//! `end_turn` and `stop_sequence` are the end, `tool_use` a tool use, `max_tokens` the limit,
//! `refusal` filtered.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::decode::{Decoder as DecoderTrait, Fault, error_fields};
use super::sse::SseEvent;
use super::{Finished, StreamEvent};
use crate::chat::{
    AssistantTurn, ChatRequest, Message, Part, Reasoning, StopReason, ToolCall, Usage,
};

/// `max_tokens` when the request sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The request body for `request`.
pub(super) fn body(request: &ChatRequest) -> Value {
    let mut messages: Vec<Value> = Vec::new();
    // The user message being gathered: its tool results, then the rest.
    let mut results: Vec<Value> = Vec::new();
    let mut said: Vec<Value> = Vec::new();
    let mut assistant_blocks: Vec<Value> = Vec::new();
    let flush_user = |results: &mut Vec<Value>, said: &mut Vec<Value>, out: &mut Vec<Value>| {
        if !results.is_empty() || !said.is_empty() {
            results.append(said);
            out.push(json!({"role": "user", "content": std::mem::take(results)}));
        }
    };
    for message in &request.messages {
        match message {
            Message::User { content } => {
                if !assistant_blocks.is_empty() {
                    let content = std::mem::take(&mut assistant_blocks);
                    messages.push(json!({"role": "assistant", "content": content}));
                }
                said.extend(content.iter().filter_map(block));
            }
            Message::ToolResult(result) => {
                if !assistant_blocks.is_empty() {
                    let content = std::mem::take(&mut assistant_blocks);
                    messages.push(json!({"role": "assistant", "content": content}));
                }
                let mut item = Map::new();
                item.insert("type".into(), "tool_result".into());
                item.insert("tool_use_id".into(), result.call_id.clone().into());
                let content: Vec<Value> = result.content.iter().filter_map(block).collect();
                if !content.is_empty() {
                    item.insert("content".into(), content.into());
                }
                if result.is_error {
                    item.insert("is_error".into(), true.into());
                }
                results.push(item.into());
            }
            Message::Assistant(turn) => {
                let blocks = assistant(turn);
                if !blocks.is_empty() {
                    flush_user(&mut results, &mut said, &mut messages);
                    assistant_blocks.extend(blocks);
                }
            }
        }
    }
    flush_user(&mut results, &mut said, &mut messages);
    if !assistant_blocks.is_empty() {
        messages.push(json!({"role": "assistant", "content": assistant_blocks}));
    }
    let mut body = Map::new();
    body.insert("model".into(), request.model.clone().into());
    body.insert("max_tokens".into(), request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS).into());
    if let Some(system) = &request.system {
        body.insert("system".into(), system.clone().into());
    }
    body.insert("messages".into(), messages.into());
    if !request.tools.is_empty() {
        let tools = request.tools.iter().map(|tool| {
            json!({
                "name": tool.name,
                "description": tool.description,
                "input_schema": tool.parameters,
            })
        });
        body.insert("tools".into(), tools.collect());
    }
    if let Some(temperature) = request.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    body.insert("stream".into(), true.into());
    body.into()
}

/// The image types an `image` block takes.
const IMAGE_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// A user part as a content block; `None` for an empty text. An image of another type is a
/// text saying it is left out.
fn block(part: &Part) -> Option<Value> {
    match part {
        Part::Text { text } if text.is_empty() => None,
        Part::Text { text } => Some(json!({"type": "text", "text": text})),
        Part::Image { mime_type, data } => {
            // The type as the API names it: without parameters, in lower case.
            let essence = mime_type.split(';').next().unwrap_or_default().trim();
            let Some(media_type) = IMAGE_TYPES.iter().find(|t| t.eq_ignore_ascii_case(essence))
            else {
                let text = format!(
                    "[image ({mime_type}) not shown: Anthropic takes JPEG, PNG, GIF and WebP]"
                );
                return Some(json!({"type": "text", "text": text}));
            };
            Some(json!({
                "type": "image",
                "source": {"type": "base64", "media_type": media_type, "data": data},
            }))
        }
    }
}

fn assistant(turn: &AssistantTurn) -> Vec<Value> {
    let mut blocks = Vec::new();
    let opaque = turn.reasoning.as_ref().and_then(|r| r.opaque.as_ref()).and_then(Value::as_array);
    for thinking in opaque.into_iter().flatten() {
        if matches!(
            thinking.get("type").and_then(Value::as_str),
            Some("thinking" | "redacted_thinking")
        ) {
            blocks.push(thinking.clone());
        }
    }
    if !turn.text.is_empty() {
        blocks.push(json!({"type": "text", "text": turn.text}));
    }
    for call in &turn.tool_calls {
        let input = call.arguments_object().unwrap_or_default();
        blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
    }
    blocks
}

/// A content block being assembled.
#[derive(Debug)]
enum Block {
    Text(String),
    Tool { id: String, name: String, json: String, start: Option<Value> },
    Thinking { thinking: String, signature: String },
    Redacted(Value),
    Other,
}

/// The state of one response's stream.
#[derive(Debug, Default)]
pub(super) struct Decoder {
    blocks: BTreeMap<u64, Block>,
    usage: Option<Usage>,
    stop: Option<String>,
}

impl Decoder {
    fn block_start(&mut self, index: u64, block: &Value, out: &mut Vec<StreamEvent>) {
        let text = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default();
        let new = match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if !text("text").is_empty() {
                    out.push(StreamEvent::Text(text("text").to_owned()));
                }
                Block::Text(text("text").to_owned())
            }
            Some("tool_use") => {
                let id = match text("id") {
                    "" => format!("toolu_{index}"),
                    id => id.to_owned(),
                };
                let name = text("name").to_owned();
                out.push(StreamEvent::ToolCallStarted { id: id.clone(), name: name.clone() });
                let start = block
                    .get("input")
                    .filter(|input| input.as_object().is_some_and(|o| !o.is_empty()))
                    .cloned();
                Block::Tool { id, name, json: String::new(), start }
            }
            Some("thinking") => {
                if !text("thinking").is_empty() {
                    out.push(StreamEvent::Reasoning(text("thinking").to_owned()));
                }
                Block::Thinking {
                    thinking: text("thinking").to_owned(),
                    signature: text("signature").to_owned(),
                }
            }
            Some("redacted_thinking") => Block::Redacted(block.clone()),
            _ => Block::Other,
        };
        self.blocks.insert(index, new);
    }

    fn block_delta(&mut self, index: u64, delta: &Value, out: &mut Vec<StreamEvent>) {
        let text = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or_default();
        let kind = delta.get("type").and_then(Value::as_str).unwrap_or_default();
        // A delta for a block that never started: the block is made from it.
        let block = self.blocks.entry(index).or_insert_with(|| match kind {
            "text_delta" => Block::Text(String::new()),
            "thinking_delta" | "signature_delta" => {
                Block::Thinking { thinking: String::new(), signature: String::new() }
            }
            _ => Block::Other,
        });
        match (kind, block) {
            ("text_delta", Block::Text(all)) => {
                let piece = text("text");
                if !piece.is_empty() {
                    all.push_str(piece);
                    out.push(StreamEvent::Text(piece.to_owned()));
                }
            }
            ("input_json_delta", Block::Tool { json, .. }) => json.push_str(text("partial_json")),
            ("thinking_delta", Block::Thinking { thinking, .. }) => {
                let piece = text("thinking");
                if !piece.is_empty() {
                    thinking.push_str(piece);
                    out.push(StreamEvent::Reasoning(piece.to_owned()));
                }
            }
            ("signature_delta", Block::Thinking { signature, .. }) => {
                signature.push_str(text("signature"))
            }
            _ => {}
        }
    }

    fn usage(&mut self, usage: &Value) {
        let number = |key: &str| usage.get(key).and_then(Value::as_u64);
        let mut current = self.usage.unwrap_or_default();
        let cache_read = number("cache_read_input_tokens");
        if number("input_tokens").is_some() || cache_read.is_some() {
            current.input_tokens = number("input_tokens").unwrap_or(0)
                + cache_read.unwrap_or(0)
                + number("cache_creation_input_tokens").unwrap_or(0);
            current.cached_input_tokens = cache_read.unwrap_or(0);
        }
        if let Some(output) = number("output_tokens") {
            current.output_tokens = output;
        }
        self.usage = Some(current);
    }

    fn finished(&mut self) -> Finished {
        let mut text = String::new();
        let mut thinking_text: Vec<String> = Vec::new();
        let mut opaque = Vec::new();
        let mut tool_calls = Vec::new();
        for (_, block) in std::mem::take(&mut self.blocks) {
            match block {
                Block::Text(piece) => text.push_str(&piece),
                Block::Tool { id, name, json, start } => {
                    let arguments = match start {
                        Some(start) if json.is_empty() => start.to_string(),
                        _ => json,
                    };
                    tool_calls.push(ToolCall { id, name, arguments });
                }
                Block::Thinking { thinking, signature } => {
                    opaque.push(json!({
                        "type": "thinking",
                        "thinking": thinking,
                        "signature": signature,
                    }));
                    if !thinking.is_empty() {
                        thinking_text.push(thinking);
                    }
                }
                Block::Redacted(block) => opaque.push(block),
                Block::Other => {}
            }
        }
        let stop = match self.stop.as_deref() {
            Some("end_turn" | "stop_sequence") | None => StopReason::End,
            Some("tool_use") => StopReason::ToolUse,
            Some("max_tokens") => StopReason::MaxTokens,
            Some("refusal") => StopReason::ContentFilter,
            Some(other) => StopReason::Other(other.to_owned()),
        };
        let reasoning = (!opaque.is_empty())
            .then(|| Reasoning { text: thinking_text.join("\n\n"), opaque: Some(opaque.into()) });
        Finished { turn: AssistantTurn { text, reasoning, tool_calls }, usage: self.usage, stop }
    }
}

impl DecoderTrait for Decoder {
    fn event(
        &mut self,
        event: &SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Option<Finished>, Fault> {
        if event.data.trim().is_empty() {
            return Ok(None);
        }
        let data: Value = serde_json::from_str(&event.data).map_err(|e| Fault::not_json(&e))?;
        let kind = data.get("type").and_then(Value::as_str).or(event.event.as_deref());
        let index = data.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind.unwrap_or_default() {
            "message_start" => {
                if let Some(usage) = data.pointer("/message/usage") {
                    self.usage(usage);
                }
            }
            "content_block_start" => {
                let block = data.get("content_block").unwrap_or(&Value::Null);
                self.block_start(index, block, out);
            }
            "content_block_delta" => {
                let delta = data.get("delta").unwrap_or(&Value::Null);
                self.block_delta(index, delta, out);
            }
            "message_delta" => {
                if let Some(stop) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop = Some(stop.to_owned());
                }
                if let Some(usage) = data.get("usage") {
                    self.usage(usage);
                }
            }
            "message_stop" => return Ok(Some(self.finished())),
            "error" => {
                let (code, message) = error_fields(&data);
                let message = message.unwrap_or_else(|| "an error without a message".to_owned());
                return Err(Fault::InStream { code, message });
            }
            _ => {}
        }
        Ok(None)
    }

    fn end(&mut self) -> Result<Finished, Fault> {
        if self.stop.is_none() {
            return Err(Fault::Truncated);
        }
        Ok(self.finished())
    }
}

#[cfg(test)]
mod tests;
