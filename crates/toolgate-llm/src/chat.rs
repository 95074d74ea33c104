//! A conversation in no provider's words: what the agent keeps, stores and sends, and what each
//! provider module ([`crate::provider`]) writes in its own wire format.
//!
//! Every tool call the assistant makes is answered by exactly one [`Message::ToolResult`] with
//! the same `call_id` before the next assistant turn (declined, failed, timed out and cancelled
//! calls included): both OpenAI and Anthropic refuse a conversation where one is missing.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message of a conversation. The system prompt is not a message: it is
/// [`ChatRequest::system`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// What the person said (text, and images or resources attached).
    User {
        /// In order.
        content: Vec<Part>,
    },
    /// One assistant turn: its text, its reasoning, the tools it asked for.
    Assistant(AssistantTurn),
    /// The answer to one tool call.
    ToolResult(ToolResult),
}

impl Message {
    /// A user message of one text.
    pub fn user_text(text: impl Into<String>) -> Message {
        Message::User { content: vec![Part::Text { text: text.into() }] }
    }
}

/// A piece of a user message or of a tool result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// `image/png`, `image/jpeg`, ...
        mime_type: String,
        /// Base64 (standard alphabet, padded).
        data: String,
    },
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Part {
        Part::Text { text: text.into() }
    }
}

/// What the assistant said in one turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AssistantTurn {
    /// Its visible text (may be empty when it only calls tools).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// Its reasoning, when the provider shows it; kept because some providers require it back
    /// (Anthropic's signed thinking blocks with tool use, DeepSeek's `reasoning_content`
    /// within a tool-use turn, the Responses API's reasoning items).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
    /// The tools it asked for, in the order it asked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
}

/// An assistant's reasoning.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Reasoning {
    /// The readable reasoning (or its summary), shown dimmed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// What the provider needs to get back verbatim, in its own shape (Anthropic: the
    /// `thinking` / `redacted_thinking` blocks with their signatures; Responses: the
    /// `reasoning` output items). `None` when it needs nothing back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opaque: Option<Value>,
}

/// One tool call as the model made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for it (`call_...`, `toolu_...`); made up when the provider sent none.
    pub id: String,
    /// The tool's name as the provider knows it (see [`crate::tool_names`] for the way back
    /// to the exposed name).
    pub name: String,
    /// The arguments as the model wrote them: JSON text, possibly malformed. An empty text is
    /// kept empty here and read as `{}`.
    pub arguments: String,
}

impl ToolCall {
    /// The arguments as a JSON object: empty text is `{}`; anything that is not a JSON object
    /// is an error saying what is wrong, for the model to read.
    pub fn arguments_object(&self) -> Result<serde_json::Map<String, Value>, String> {
        if self.arguments.trim().is_empty() {
            return Ok(serde_json::Map::new());
        }
        match serde_json::from_str::<Value>(&self.arguments) {
            Ok(Value::Object(object)) => Ok(object),
            Ok(other) => Err(format!(
                "the arguments of {} must be a JSON object, not {}",
                self.name,
                json_kind(&other)
            )),
            Err(error) => {
                Err(format!("the arguments of {} are not valid JSON: {error}", self.name))
            }
        }
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The answer to one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The [`ToolCall::id`] it answers.
    pub call_id: String,
    /// The tool's name as the provider knows it (Gemini-style APIs want it back).
    pub name: String,
    /// What the model reads.
    pub content: Vec<Part>,
    /// The call failed, was refused, timed out or was cancelled.
    #[serde(default)]
    pub is_error: bool,
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Its name as the provider will know it (already adapted, see [`crate::tool_names`]).
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of its arguments (already adapted to the provider, see [`crate::schema`]).
    pub parameters: Value,
}

/// One request to a model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The model's name.
    pub model: String,
    /// The system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools it may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// The most tokens to generate (Anthropic requires one; default 8192 there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
}

/// Tokens a provider reported for one response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens (including cached ones).
    pub input_tokens: u64,
    /// Generated tokens (including reasoning).
    pub output_tokens: u64,
    /// Of the input, read from the provider's cache.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Of the output, reasoning.
    #[serde(default)]
    pub reasoning_tokens: u64,
}

/// The sum of two reports.
impl std::ops::Add for Usage {
    type Output = Usage;

    fn add(self, other: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens + other.input_tokens,
            output_tokens: self.output_tokens + other.output_tokens,
            cached_input_tokens: self.cached_input_tokens + other.cached_input_tokens,
            reasoning_tokens: self.reasoning_tokens + other.reasoning_tokens,
        }
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It finished its answer.
    End,
    /// It wants tool results.
    ToolUse,
    /// It reached `max_tokens`.
    MaxTokens,
    /// The provider filtered the content.
    ContentFilter,
    /// Something else, in the provider's words.
    Other(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_arguments_are_an_empty_object_and_bad_ones_say_what_is_wrong() {
        let call = |arguments: &str| ToolCall {
            id: "c".into(),
            name: "fs__read".into(),
            arguments: arguments.into(),
        };
        assert_eq!(call("").arguments_object(), Ok(serde_json::Map::new()));
        assert_eq!(call("  ").arguments_object(), Ok(serde_json::Map::new()));
        assert_eq!(
            call(r#"{"path":"/tmp"}"#).arguments_object().expect("object")["path"],
            Value::from("/tmp")
        );
        assert_eq!(
            call("[1]").arguments_object(),
            Err("the arguments of fs__read must be a JSON object, not an array".into())
        );
        let broken = call(r#"{"path": "/tm"#).arguments_object().expect_err("broken");
        assert!(broken.starts_with("the arguments of fs__read are not valid JSON: "), "{broken}");
    }

    #[test]
    fn messages_round_trip_through_json() {
        let messages = vec![
            Message::user_text("hi"),
            Message::Assistant(AssistantTurn {
                text: String::new(),
                reasoning: Some(Reasoning { text: "think".into(), opaque: None }),
                tool_calls: vec![ToolCall {
                    id: "call_1".into(),
                    name: "t".into(),
                    arguments: "{}".into(),
                }],
            }),
            Message::ToolResult(ToolResult {
                call_id: "call_1".into(),
                name: "t".into(),
                content: vec![Part::text("ok")],
                is_error: false,
            }),
        ];
        let json = serde_json::to_string(&messages).expect("json");
        let back: Vec<Message> = serde_json::from_str(&json).expect("back");
        assert_eq!(back, messages);
    }
}
