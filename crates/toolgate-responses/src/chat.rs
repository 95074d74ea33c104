//! `POST /v1/chat/completions` with the same hosted MCP tools: the request carries the whole
//! conversation, the tool loop runs here as for `/v1/responses`, and the answer is one
//! assistant message (or, streamed, its chunks). Chat Completions has no approval items, so
//! approvals are the gateway's policy alone: `require_approval` is not read, and a call the
//! gateway's `ask` rules want approved is refused, the model told why. Nothing is stored.
//! The application's own `function` tools come back as `tool_calls`, as usual.

use serde_json::{Map, Value, json};
use toolgate_llm::chat::{AssistantTurn, Message, Part, ToolCall, ToolResult};

use crate::error::ApiError;
use crate::request::{self, CreateResponse, FunctionTool, RequireApproval};
use crate::state::{State, Waiting, WaitingOn};

/// A chat request, as the endpoint's loop takes it: the conversation as state, the tools and
/// settings as a response request.
pub(crate) struct ChatRequest {
    /// The request's tools and settings (no input: the conversation is `state`).
    pub(crate) request: CreateResponse,
    /// The conversation so far.
    pub(crate) state: State,
    /// `stream_options.include_usage`.
    pub(crate) include_usage: bool,
}

/// Reads a chat request body.
pub(crate) fn parse(body: &[u8]) -> Result<ChatRequest, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::invalid(None, format!("the body is not valid JSON: {e}")))?;
    let Value::Object(mut fields) = value else {
        return Err(ApiError::invalid(None, "the body must be a JSON object"));
    };
    let messages = match fields.remove("messages") {
        Some(Value::Array(messages)) if !messages.is_empty() => messages,
        _ => return Err(ApiError::invalid(Some("messages"), "must be a non-empty array")),
    };
    if messages.len() > request::MAX_INPUT_ITEMS {
        return Err(ApiError::invalid(
            Some("messages"),
            format!("at most {} messages", request::MAX_INPUT_ITEMS),
        ));
    }
    let include_usage = fields
        .get("stream_options")
        .and_then(|options| options.get("include_usage"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    // The tools in the Responses shape: a chat `function` tool nests its definition.
    if let Some(Value::Array(tools)) = fields.get_mut("tools") {
        for tool in tools.iter_mut() {
            if tool.get("type").and_then(Value::as_str) == Some("function")
                && let Some(Value::Object(function)) = tool.get("function").cloned()
            {
                let mut flat = function;
                flat.insert("type".into(), "function".into());
                *tool = Value::Object(flat);
            }
        }
    }
    if fields.get("max_output_tokens").is_none() {
        let most =
            fields.get("max_completion_tokens").or_else(|| fields.get("max_tokens")).cloned();
        if let Some(most) = most {
            fields.insert("max_output_tokens".into(), most);
        }
    }
    fields.insert("store".into(), false.into());
    let mut request = request::parse(Value::Object(fields).to_string().as_bytes())?;
    for tool in &mut request.mcp {
        // Policy-only: nobody can answer an approval request here.
        tool.approval = RequireApproval::Never;
    }
    let state = conversation(&messages, &request.functions)?;
    Ok(ChatRequest { request, state, include_usage })
}

/// The messages as a conversation; the calls of the last assistant turn that have no result
/// yet must be the application's functions (answered by `tool` messages).
fn conversation(messages: &[Value], functions: &[FunctionTool]) -> Result<State, ApiError> {
    let mut state = State::default();
    for (i, message) in messages.iter().enumerate() {
        let at = format!("messages[{i}]");
        let Value::Object(fields) = message else {
            return Err(ApiError::invalid(Some(&at), "must be an object"));
        };
        let text = || content_text(&at, fields.get("content"));
        match fields.get("role").and_then(Value::as_str) {
            Some("system" | "developer") => state.notes.push(text()?),
            Some("user") => {
                state.messages.push(Message::User { content: vec![Part::text(text()?)] })
            }
            Some("assistant") => {
                let mut turn = AssistantTurn { text: text()?, ..AssistantTurn::default() };
                if let Some(Value::Array(calls)) = fields.get("tool_calls") {
                    for (j, call) in calls.iter().enumerate() {
                        let field = |key: &str| {
                            call.pointer(key).and_then(Value::as_str).map(str::to_owned).ok_or_else(
                                || {
                                    ApiError::invalid(
                                        Some(&format!(
                                            "{at}.tool_calls[{j}]{}",
                                            key.replace('/', ".")
                                        )),
                                        "must be a string",
                                    )
                                },
                            )
                        };
                        turn.tool_calls.push(ToolCall {
                            id: field("/id")?,
                            name: field("/function/name")?,
                            arguments: field("/function/arguments")?,
                        });
                    }
                }
                state.waiting = turn
                    .tool_calls
                    .iter()
                    .map(|call| Waiting {
                        call_id: call.id.clone(),
                        model_name: call.name.clone(),
                        arguments: call.arguments.clone(),
                        on: WaitingOn::Function,
                    })
                    .collect();
                state.messages.push(Message::Assistant(turn));
            }
            Some("tool") => {
                let call_id =
                    fields.get("tool_call_id").and_then(Value::as_str).ok_or_else(|| {
                        ApiError::invalid(Some(&format!("{at}.tool_call_id")), "must be a string")
                    })?;
                let Some(at_call) = state.waiting.iter().position(|w| w.call_id == call_id) else {
                    return Err(ApiError::invalid(
                        Some(&format!("{at}.tool_call_id")),
                        format!("no tool call {call_id:?} of the assistant message before it"),
                    ));
                };
                let waiting = state.waiting.remove(at_call);
                state.messages.push(Message::ToolResult(ToolResult {
                    call_id: waiting.call_id,
                    name: waiting.model_name,
                    content: vec![Part::text(text()?)],
                    is_error: false,
                }));
            }
            _ => {
                return Err(ApiError::invalid(
                    Some(&format!("{at}.role")),
                    "must be \"system\", \"developer\", \"user\", \"assistant\" or \"tool\"",
                ));
            }
        }
    }
    // Calls of earlier turns that got no tool message: the model is told, as the agent does.
    let unanswered: Vec<Waiting> = std::mem::take(&mut state.waiting);
    for waiting in unanswered {
        if !functions.iter().any(|f| f.name == waiting.model_name) {
            state.answer(
                &waiting.call_id,
                &waiting.model_name,
                vec![Part::text("no result was given for this call")],
                true,
            );
        } else {
            state.waiting.push(waiting);
        }
    }
    Ok(state)
}

/// A message's content as text: a string, null, or text parts joined.
fn content_text(at: &str, content: Option<&Value>) -> Result<String, ApiError> {
    match content {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(Value::Array(parts)) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|part| part.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect();
            if texts.len() != parts.len() {
                return Err(ApiError::invalid(
                    Some(&format!("{at}.content")),
                    "only text parts are served here",
                ));
            }
            Ok(texts.join("\n"))
        }
        Some(_) => Err(ApiError::invalid(
            Some(&format!("{at}.content")),
            "must be a string or an array of text parts",
        )),
    }
}

/// The assistant message this request ends with: the text of this request's model turns, and
/// the function calls it left for the application.
pub(crate) struct Answer {
    /// What the model said.
    pub(crate) text: String,
    /// `tool_calls` of the message.
    pub(crate) tool_calls: Vec<Value>,
}

impl Answer {
    /// Reads it off the response's output items.
    pub(crate) fn of(items: &[Value]) -> Answer {
        let mut texts = Vec::new();
        let mut tool_calls = Vec::new();
        for item in items {
            match item["type"].as_str() {
                Some("message") => {
                    if let Some(text) = item.pointer("/content/0/text").and_then(Value::as_str) {
                        texts.push(text.to_owned());
                    }
                }
                Some("function_call") => tool_calls.push(json!({
                    "id": item["call_id"], "type": "function",
                    "function": { "name": item["name"], "arguments": item["arguments"] },
                })),
                _ => {}
            }
        }
        Answer { text: texts.join("\n\n"), tool_calls }
    }

    /// `finish_reason`.
    pub(crate) fn finish_reason(&self) -> &'static str {
        if self.tool_calls.is_empty() { "stop" } else { "tool_calls" }
    }

    /// The `message` of a non-streamed completion.
    pub(crate) fn message(&self) -> Value {
        let mut message = Map::new();
        message.insert("role".into(), "assistant".into());
        message.insert(
            "content".into(),
            if self.text.is_empty() && !self.tool_calls.is_empty() {
                Value::Null
            } else {
                self.text.clone().into()
            },
        );
        message.insert("refusal".into(), Value::Null);
        if !self.tool_calls.is_empty() {
            message.insert("tool_calls".into(), self.tool_calls.clone().into());
        }
        Value::Object(message)
    }
}

/// Chat Completions' `usage`.
pub(crate) fn usage(usage: &toolgate_llm::chat::Usage) -> Value {
    json!({
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conversation_with_an_answered_function_call_reads_back_and_tools_flatten() {
        let body = json!({
            "model": "m",
            "messages": [
                { "role": "system", "content": "be brief" },
                { "role": "user", "content": "weather?" },
                { "role": "assistant", "content": null, "tool_calls": [
                    { "id": "c1", "type": "function",
                      "function": { "name": "get_weather", "arguments": "{}" } }] },
                { "role": "tool", "tool_call_id": "c1", "content": "sunny" },
            ],
            "tools": [
                { "type": "function", "function": { "name": "get_weather", "parameters": {} } },
                { "type": "mcp", "server_label": "fx", "require_approval": "always" },
            ],
            "max_tokens": 100,
            "stream_options": { "include_usage": true },
        });
        let chat = parse(body.to_string().as_bytes()).expect("valid");
        assert_eq!(chat.state.notes, ["be brief"]);
        assert_eq!(chat.state.messages.len(), 3);
        assert!(chat.state.waiting.is_empty());
        assert_eq!(chat.request.functions[0].name, "get_weather");
        assert_eq!(chat.request.mcp[0].approval, RequireApproval::Never, "policy only");
        assert_eq!(chat.request.max_output_tokens, Some(100));
        assert!(!chat.request.store);
        assert!(chat.include_usage);
    }

    #[test]
    fn a_tool_message_for_no_call_is_refused_by_its_index() {
        let body = json!({
            "model": "m",
            "messages": [{ "role": "user", "content": "x" },
                         { "role": "tool", "tool_call_id": "nope", "content": "y" }],
        });
        let error = parse(body.to_string().as_bytes()).err().expect("refused");
        assert_eq!(error.param.as_deref(), Some("messages[1].tool_call_id"));
    }

    #[test]
    fn the_answer_joins_texts_and_returns_function_calls() {
        let items = [
            json!({ "type": "mcp_call", "id": "m" }),
            json!({ "type": "message", "content": [{ "type": "output_text", "text": "a" }] }),
            json!({ "type": "function_call", "call_id": "c", "name": "f", "arguments": "{}" }),
        ];
        let answer = Answer::of(&items);
        assert_eq!(answer.text, "a");
        assert_eq!(answer.finish_reason(), "tool_calls");
        assert_eq!(answer.message()["tool_calls"][0]["function"]["name"], "f");
    }
}
