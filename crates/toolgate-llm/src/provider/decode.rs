//! What each dialect's decoder gives the HTTP loop (`http.rs`): the [`Decoder`] trait it
//! implements, the [`Fault`]s it finds, and reading a provider's error object.

use serde_json::Value;

use super::sse::SseEvent;
use super::{Finished, ProviderError, StreamEvent};

/// The longest provider message kept in an error.
pub(super) const MESSAGE_LIMIT: usize = 1000;

/// What a dialect's decoder found wrong, before it knows the provider's host.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Fault {
    /// The provider reported an error in the stream.
    InStream {
        /// Its error type or code.
        code: Option<String>,
        /// Its message.
        message: String,
    },
    /// Not the wire format.
    Protocol(String),
    /// The stream ended before the response was complete.
    Truncated,
}

impl Fault {
    /// The error it is, from `provider` (its host).
    pub(super) fn error(self, provider: &str) -> ProviderError {
        let provider = provider.to_owned();
        match self {
            Fault::InStream { code, message } => {
                ProviderError::InStream { provider, code, message: shorten(message) }
            }
            Fault::Protocol(message) => ProviderError::Protocol { provider, message },
            Fault::Truncated => ProviderError::Truncated { provider },
        }
    }

    /// An event's data that is not JSON.
    pub(super) fn not_json(error: &serde_json::Error) -> Fault {
        Fault::Protocol(format!("an event that is not JSON ({error})"))
    }
}

/// Turns one dialect's events into [`StreamEvent`]s.
pub(super) trait Decoder: Send + Sync + 'static {
    /// Reads one event, appending what it says to `out`; `Some` when the response is complete.
    fn event(
        &mut self,
        event: &SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Option<Finished>, Fault>;

    /// The stream ended without the event that completes a response.
    fn end(&mut self) -> Result<Finished, Fault>;

    /// Reads a whole response sent as one JSON body instead of a stream (a server that does
    /// not stream), appending what it says to `out`. Dialects that always stream refuse it.
    fn whole(&mut self, body: &Value, out: &mut Vec<StreamEvent>) -> Result<Finished, Fault> {
        let _ = (body, out);
        Err(Fault::Protocol("a JSON body where an event stream was asked for".to_owned()))
    }
}

/// The code (or type) and message of a provider's error object, in any of the shapes the
/// providers use: `{"error": {"code"|"type", "message"}}` (OpenAI, Anthropic), `{"error":
/// "..."}` (Ollama), `{"code", "message"}` (a Responses `error` event).
pub(super) fn error_fields(body: &Value) -> (Option<String>, Option<String>) {
    let text = |value: Option<&Value>| match value {
        Some(Value::String(text)) if !text.is_empty() => Some(text.clone()),
        Some(Value::Number(number)) => Some(number.to_string()),
        _ => None,
    };
    let object = match body.get("error") {
        Some(Value::String(message)) => return (None, Some(message.clone())),
        Some(error @ Value::Object(_)) => error,
        _ => body,
    };
    let code = text(object.get("code")).or_else(|| text(object.get("type")));
    (code, text(object.get("message")))
}

/// `message` cut to [`MESSAGE_LIMIT`] bytes (at a character boundary).
pub(super) fn shorten(mut message: String) -> String {
    if message.len() > MESSAGE_LIMIT {
        let mut end = MESSAGE_LIMIT;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push('…');
    }
    message
}
