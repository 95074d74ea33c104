//! What the fake answers, in no provider's words: a [`Turn`] is a [`Reply`] (text, reasoning,
//! tool calls, usage, why it finished, quirks of the server writing it), an error, or a raw
//! body; and how a script file spells turns (see [`Turn`]'s serde shape).

use std::collections::BTreeSet;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ProviderError;

/// One answer of the fake, and how long it waits before giving it.
///
/// In a script file (`toolgate-fixture fake-llm --script FILE`, a JSON array of turns) a turn
/// is one of:
///
/// ```json
/// {"text": "Let me look.", "reasoning": "The user wants the file.",
///  "tool_calls": [{"name": "fs__read", "arguments": {"path": "a.txt"}, "id": "call_1"}],
///  "usage": {"input_tokens": 120, "output_tokens": 30}, "finish": "tool_calls",
///  "quirks": ["no_done"], "delay_ms": 0}
/// {"error": {"status": 429, "message": "slow down", "type": "requests",
///            "code": "rate_limit_exceeded", "param": null, "retry_after": 1}, "delay_ms": 0}
/// {"raw": {"status": 200, "content_type": "text/plain", "body": "not json"}}
/// ```
///
/// Every key of a reply is optional (`{}` is an empty answer); a call's `arguments` is JSON
/// text when it is a string (sent as is, even malformed) and any other JSON value is sent as
/// its compact text; `id` is made up in the dialect's style when absent. `finish` takes
/// `stop`, `length`, `tool_calls`, `content_filter` (or the Anthropic words `end_turn`,
/// `max_tokens`, `tool_use`, `refusal`); without it a reply with calls finishes with
/// `tool_calls`, others with `stop`. `error` without `message`/`type`/`code` takes the ones
/// the API gives that status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "TurnDoc", into = "TurnDoc")]
pub struct Turn {
    /// Waited (on tokio's clock) before answering.
    pub delay: Duration,
    /// The answer.
    pub answer: Answer,
}

/// What one turn of the assistant is, in no provider's words.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Answer {
    /// The assistant answers.
    Reply(Reply),
    /// The provider fails.
    Error(ProviderError),
    /// A body sent exactly as given (not JSON, cut short, of the wrong shape).
    Raw {
        /// The HTTP status.
        status: u16,
        /// Its `Content-Type`.
        content_type: String,
        /// The body.
        body: String,
    },
}

/// What the assistant says in one turn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reply {
    /// Its visible text (may be empty).
    pub text: String,
    /// Its reasoning, if it shows some (Chat Completions: DeepSeek's `reasoning_content`;
    /// Responses: a reasoning item's summary; Anthropic: a signed `thinking` block).
    pub reasoning: Option<String>,
    /// The tools it calls, in order.
    pub tool_calls: Vec<ScriptedCall>,
    /// The tokens reported; counted (`o200k_base`) from the request and the reply when `None`.
    pub usage: Option<TokenUsage>,
    /// Why it stopped; `None`: [`Finish::ToolCalls`] when it calls tools, else [`Finish::Stop`].
    pub finish: Option<Finish>,
    /// How a not-quite-OpenAI server writes it.
    pub quirks: BTreeSet<Quirk>,
}

impl Reply {
    /// Why it stopped, defaults applied.
    pub fn finish_reason(&self) -> Finish {
        self.finish.clone().unwrap_or(if self.tool_calls.is_empty() {
            Finish::Stop
        } else {
            Finish::ToolCalls
        })
    }

    /// Whether `quirk` is on.
    pub fn has(&self, quirk: Quirk) -> bool {
        self.quirks.contains(&quirk)
    }
}

/// One tool call of a [`Reply`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScriptedCall {
    /// The provider's id for it; `None`: made up in the dialect's style (`call_...`,
    /// `toolu_...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// The arguments as JSON text, sent as is (possibly malformed, possibly empty).
    pub arguments: String,
}

/// Tokens a reply reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
}

/// Why a reply stopped, written in each dialect's words.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum Finish {
    /// It finished (`stop`, `end_turn`, Responses `completed`).
    Stop,
    /// `max_tokens` cut it (`length`, `max_tokens`, Responses `incomplete`).
    Length,
    /// It wants tool results (`tool_calls`, `tool_use`).
    ToolCalls,
    /// Filtered (`content_filter`, `refusal`).
    ContentFilter,
    /// Any other word, written as is.
    Other(String),
}

impl Finish {
    /// OpenAI's or Anthropic's word for it.
    pub fn parse(word: &str) -> Finish {
        match word {
            "stop" | "end_turn" | "stop_sequence" => Finish::Stop,
            "length" | "max_tokens" | "max_output_tokens" => Finish::Length,
            "tool_calls" | "tool_use" => Finish::ToolCalls,
            "content_filter" | "refusal" => Finish::ContentFilter,
            other => Finish::Other(other.to_owned()),
        }
    }

    /// Chat Completions' `finish_reason`.
    pub fn openai(&self) -> &str {
        match self {
            Finish::Stop => "stop",
            Finish::Length => "length",
            Finish::ToolCalls => "tool_calls",
            Finish::ContentFilter => "content_filter",
            Finish::Other(word) => word,
        }
    }

    /// Anthropic's `stop_reason`.
    pub fn anthropic(&self) -> &str {
        match self {
            Finish::Stop => "end_turn",
            Finish::Length => "max_tokens",
            Finish::ToolCalls => "tool_use",
            Finish::ContentFilter => "refusal",
            Finish::Other(word) => word,
        }
    }
}

impl From<String> for Finish {
    fn from(word: String) -> Finish {
        Finish::parse(&word)
    }
}

impl From<Finish> for String {
    fn from(finish: Finish) -> String {
        finish.openai().to_owned()
    }
}

/// A way a server that is "OpenAI-compatible" writes a streamed Chat Completions answer
/// differently from OpenAI. Unless said otherwise a quirk only changes Chat Completions
/// streams; [`Quirk::SplitUtf8`] and [`Quirk::DataWithoutSpace`] change every dialect's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Quirk {
    /// Each tool call comes whole in one chunk (id, name and all the arguments).
    WholeCallInOneChunk,
    /// Every event whose bytes hold a multi-byte UTF-8 character is written to the socket in
    /// two writes (two HTTP chunks), cut inside that character. Also in non-streamed bodies.
    SplitUtf8,
    /// Every chunk of a call repeats its `id`, `type` and `name`.
    RepeatIdAndName,
    /// Calls carry no `id` (some local servers).
    NoCallIds,
    /// A call whose arguments are `{}` is sent with `arguments: ""`.
    EmptyArguments,
    /// `data:JSON` and `event:NAME` without the space.
    DataWithoutSpace,
    /// Reasoning in `reasoning` (Ollama, OpenRouter) instead of DeepSeek's
    /// `reasoning_content` (also in non-streamed messages).
    ReasoningField,
    /// Usage rides on the chunk with the `finish_reason` (and is sent even when
    /// `stream_options.include_usage` is not asked), not on a chunk of its own.
    UsageInLastChunk,
    /// The stream ends without `data: [DONE]`.
    NoDone,
}

impl Quirk {
    /// Every quirk.
    pub const ALL: [Quirk; 9] = [
        Quirk::WholeCallInOneChunk,
        Quirk::SplitUtf8,
        Quirk::RepeatIdAndName,
        Quirk::NoCallIds,
        Quirk::EmptyArguments,
        Quirk::DataWithoutSpace,
        Quirk::ReasoningField,
        Quirk::UsageInLastChunk,
        Quirk::NoDone,
    ];
}

impl Turn {
    /// The assistant answers `text`.
    pub fn text(text: impl Into<String>) -> Turn {
        Turn::reply(Reply { text: text.into(), ..Reply::default() })
    }

    /// The assistant calls `name` with `arguments` (JSON text, sent as is).
    pub fn tool_call(name: impl Into<String>, arguments: impl Into<String>) -> Turn {
        Turn::reply(Reply::default()).and_tool_call(name, arguments)
    }

    /// The assistant answers `reply`.
    pub fn reply(reply: Reply) -> Turn {
        Turn::from(Answer::Reply(reply))
    }

    /// The provider fails with `status` (and the error type and code it gives that status).
    pub fn fail(status: u16) -> Turn {
        Turn::from(Answer::Error(ProviderError::for_status(status)))
    }

    /// The provider fails with `error`.
    pub fn error(error: ProviderError) -> Turn {
        Turn::from(Answer::Error(error))
    }

    /// A body sent as is.
    pub fn raw(status: u16, content_type: impl Into<String>, body: impl Into<String>) -> Turn {
        Turn::from(Answer::Raw { status, content_type: content_type.into(), body: body.into() })
    }

    /// The same, answered after `delay`.
    pub fn after(mut self, delay: Duration) -> Turn {
        self.delay = delay;
        self
    }

    /// The same reply, with one more call, of `name` with `arguments` (JSON text).
    pub fn and_tool_call(self, name: impl Into<String>, arguments: impl Into<String>) -> Turn {
        let call = ScriptedCall { id: None, name: name.into(), arguments: arguments.into() };
        self.edit(|reply| reply.tool_calls.push(call))
    }

    /// The same reply, its last call with the id `id`.
    pub fn with_id(self, id: impl Into<String>) -> Turn {
        let id = id.into();
        self.edit(|reply| {
            if let Some(call) = reply.tool_calls.last_mut() {
                call.id = Some(id);
            }
        })
    }

    /// The same reply, saying `text` too (before its calls).
    pub fn with_text(self, text: impl Into<String>) -> Turn {
        let text = text.into();
        self.edit(|reply| reply.text = text)
    }

    /// The same reply, reasoning `text` first.
    pub fn with_reasoning(self, text: impl Into<String>) -> Turn {
        let text = text.into();
        self.edit(|reply| reply.reasoning = Some(text))
    }

    /// The same reply, reporting these tokens.
    pub fn with_usage(self, input_tokens: u64, output_tokens: u64) -> Turn {
        self.edit(|reply| reply.usage = Some(TokenUsage { input_tokens, output_tokens }))
    }

    /// The same reply, finishing for `reason` (OpenAI's or Anthropic's word: `length`,
    /// `max_tokens`, ...).
    pub fn finish(self, reason: impl Into<String>) -> Turn {
        let finish = Finish::parse(&reason.into());
        self.edit(|reply| reply.finish = Some(finish))
    }

    /// The same reply, written with `quirk`.
    pub fn with_quirk(self, quirk: Quirk) -> Turn {
        self.edit(|reply| {
            reply.quirks.insert(quirk);
        })
    }

    /// The same reply, written with `quirks`.
    pub fn with_quirks(self, quirks: impl IntoIterator<Item = Quirk>) -> Turn {
        quirks.into_iter().fold(self, Turn::with_quirk)
    }

    /// Edits the reply; does nothing to an error or a raw body.
    fn edit(mut self, edit: impl FnOnce(&mut Reply)) -> Turn {
        if let Answer::Reply(reply) = &mut self.answer {
            edit(reply);
        }
        self
    }
}

impl From<Answer> for Turn {
    fn from(answer: Answer) -> Turn {
        Turn { delay: Duration::ZERO, answer }
    }
}

/// A turn as a script file spells it.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TurnDoc {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reasoning: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<CallDoc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    usage: Option<TokenUsage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    finish: Option<Finish>,
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    quirks: BTreeSet<Quirk>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<ErrorDoc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    raw: Option<RawDoc>,
    #[serde(default, skip_serializing_if = "is_zero")]
    delay_ms: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CallDoc {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    name: String,
    #[serde(default = "empty_object")]
    arguments: Value,
}

fn empty_object() -> Value {
    Value::String("{}".to_owned())
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ErrorDoc {
    status: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    param: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retry_after: Option<u64>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDoc {
    status: u16,
    #[serde(default = "json_type")]
    content_type: String,
    body: String,
}

fn json_type() -> String {
    "application/json".to_owned()
}

impl TryFrom<TurnDoc> for Turn {
    type Error = String;

    fn try_from(doc: TurnDoc) -> Result<Turn, String> {
        let replies = !doc.text.is_empty()
            || doc.reasoning.is_some()
            || !doc.tool_calls.is_empty()
            || doc.usage.is_some()
            || doc.finish.is_some()
            || !doc.quirks.is_empty();
        let answer = match (doc.error, doc.raw) {
            (Some(_), Some(_)) => return Err("a turn is an error or a raw body, not both".into()),
            (Some(_), None) | (None, Some(_)) if replies => {
                return Err("an error or raw turn has no text, calls, usage or quirks".into());
            }
            (Some(error), None) => {
                let mut out = ProviderError::for_status(error.status);
                if let Some(message) = error.message {
                    out.message = message;
                }
                if let Some(kind) = error.kind {
                    out.kind = kind;
                }
                if error.code.is_some() {
                    out.code = error.code;
                }
                out.param = error.param;
                if error.retry_after.is_some() {
                    out.retry_after = error.retry_after;
                }
                Answer::Error(out)
            }
            (None, Some(raw)) => {
                Answer::Raw { status: raw.status, content_type: raw.content_type, body: raw.body }
            }
            (None, None) => Answer::Reply(Reply {
                text: doc.text,
                reasoning: doc.reasoning,
                tool_calls: doc
                    .tool_calls
                    .into_iter()
                    .map(|call| ScriptedCall {
                        id: call.id,
                        name: call.name,
                        arguments: match call.arguments {
                            Value::String(text) => text,
                            other => other.to_string(),
                        },
                    })
                    .collect(),
                usage: doc.usage,
                finish: doc.finish,
                quirks: doc.quirks,
            }),
        };
        let delay = Duration::from_millis(doc.delay_ms);
        Ok(Turn { delay, answer })
    }
}

impl From<Turn> for TurnDoc {
    fn from(turn: Turn) -> TurnDoc {
        let delay_ms = u64::try_from(turn.delay.as_millis()).unwrap_or(u64::MAX);
        match turn.answer {
            Answer::Reply(reply) => TurnDoc {
                text: reply.text,
                reasoning: reply.reasoning,
                tool_calls: reply
                    .tool_calls
                    .into_iter()
                    .map(|call| CallDoc {
                        id: call.id,
                        name: call.name,
                        arguments: Value::String(call.arguments),
                    })
                    .collect(),
                usage: reply.usage,
                finish: reply.finish,
                quirks: reply.quirks,
                delay_ms,
                ..TurnDoc::default()
            },
            Answer::Error(error) => TurnDoc {
                error: Some(ErrorDoc {
                    status: error.status,
                    message: Some(error.message),
                    kind: Some(error.kind),
                    code: error.code,
                    param: error.param,
                    retry_after: error.retry_after,
                }),
                delay_ms,
                ..TurnDoc::default()
            },
            Answer::Raw { status, content_type, body } => TurnDoc {
                raw: Some(RawDoc { status, content_type, body }),
                delay_ms,
                ..TurnDoc::default()
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn builders_make_the_reply_they_say() {
        let turn = Turn::tool_call("fs__read", r#"{"path":"a"}"#)
            .with_id("call_1")
            .and_tool_call("fs__list", "{}")
            .with_text("Looking.")
            .with_reasoning("Two files.")
            .with_usage(10, 4)
            .with_quirks([Quirk::NoDone, Quirk::SplitUtf8]);
        let Answer::Reply(reply) = &turn.answer else { panic!("a reply: {turn:?}") };
        assert_eq!(reply.text, "Looking.");
        assert_eq!(reply.reasoning.as_deref(), Some("Two files."));
        assert_eq!(reply.tool_calls[0].id.as_deref(), Some("call_1"));
        assert_eq!(reply.tool_calls[1].id, None);
        assert_eq!(reply.tool_calls[1].name, "fs__list");
        assert_eq!(reply.usage, Some(TokenUsage { input_tokens: 10, output_tokens: 4 }));
        assert_eq!(reply.finish_reason(), Finish::ToolCalls);
        assert!(reply.has(Quirk::NoDone) && reply.has(Quirk::SplitUtf8));
        assert!(!reply.has(Quirk::NoCallIds));
        let Answer::Reply(text) = Turn::text("hi").finish("max_tokens").answer else {
            panic!("a reply")
        };
        assert_eq!(text.finish_reason(), Finish::Length);
        assert_eq!(Turn::fail(500).with_text("ignored"), Turn::fail(500));
    }

    #[test]
    fn finish_words_map_between_dialects() {
        for (word, openai, anthropic) in [
            ("stop", "stop", "end_turn"),
            ("end_turn", "stop", "end_turn"),
            ("max_tokens", "length", "max_tokens"),
            ("tool_use", "tool_calls", "tool_use"),
            ("refusal", "content_filter", "refusal"),
            ("pause_turn", "pause_turn", "pause_turn"),
        ] {
            let finish = Finish::parse(word);
            assert_eq!((finish.openai(), finish.anthropic()), (openai, anthropic), "{word}");
        }
    }

    #[test]
    fn a_script_file_reads_into_turns_and_back() {
        let script = json!([
            {"text": "Looking.", "reasoning": "r", "tool_calls": [
                {"name": "fs__read", "arguments": {"path": "a.txt"}, "id": "call_1"},
                {"name": "fs__list", "arguments": "{\"broken"},
                {"name": "now"},
            ], "usage": {"input_tokens": 3, "output_tokens": 2}, "finish": "tool_use",
             "quirks": ["no_done", "reasoning_field"], "delay_ms": 250},
            {"error": {"status": 429, "retry_after": 3}},
            {"raw": {"status": 502, "content_type": "text/html", "body": "<html>"}},
            {},
        ]);
        let turns: Vec<Turn> = serde_json::from_value(script).expect("turns");
        let expected = Turn::tool_call("fs__read", r#"{"path":"a.txt"}"#)
            .with_id("call_1")
            .and_tool_call("fs__list", "{\"broken")
            .and_tool_call("now", "{}")
            .with_text("Looking.")
            .with_reasoning("r")
            .with_usage(3, 2)
            .finish("tool_calls")
            .with_quirks([Quirk::ReasoningField, Quirk::NoDone])
            .after(Duration::from_millis(250));
        assert_eq!(turns[0], expected);
        let Answer::Error(error) = &turns[1].answer else { panic!("an error") };
        assert_eq!((error.status, error.retry_after), (429, Some(3)));
        assert_eq!(error.code.as_deref(), Some("rate_limit_exceeded"), "the status's defaults");
        assert_eq!(turns[2], Turn::raw(502, "text/html", "<html>"));
        assert_eq!(turns[3], Turn::text(""));

        let back: Vec<Turn> =
            serde_json::from_value(serde_json::to_value(&turns).expect("json")).expect("turns");
        assert_eq!(back, turns);
    }

    #[test]
    fn a_script_file_says_what_is_wrong() {
        for (doc, wanted) in [
            (json!({"txt": "typo"}), "unknown field `txt`"),
            (json!({"text": "a", "error": {"status": 500}}), "an error or raw turn"),
            (json!({"quirks": ["no_such"]}), "unknown variant `no_such`"),
            (json!({"tool_calls": [{"arguments": "{}"}]}), "missing field `name`"),
        ] {
            let error = serde_json::from_value::<Turn>(doc.clone()).expect_err("refused");
            assert!(error.to_string().contains(wanted), "{doc}: {error}");
        }
    }
}
