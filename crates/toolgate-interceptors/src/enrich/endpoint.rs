//! The OpenAI-compatible Chat Completions endpoint `enrich` asks for summaries, through
//! `toolgate-llm`'s provider client ([`toolgate_llm::provider`], the Chat Completions dialect):
//! one request per summary, not retried, under `request_timeout`. An endpoint may stream its
//! answer or send it whole.
//!
//! What may be said about a failure: the endpoint's `host[:port]`, the HTTP status, and the
//! error's `code` or `type` from the provider's error body when it is a short identifier. Never
//! the URL's path, the key, the prompt, the result or the provider's error message (which may
//! quote any of them).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::StreamExt as _;
use toolgate_llm::chat::{ChatRequest, Message, StopReason};
use toolgate_llm::provider::{
    self, ConnectError, Dialect, Finished, Provider, ProviderConfig, ProviderError, StreamEvent,
};

use super::settings::Settings;

/// Why no summary came back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    /// No complete answer within `request_timeout`.
    #[error("the summary endpoint {endpoint} did not answer within {timeout}")]
    Timeout {
        /// `host[:port]`.
        endpoint: String,
        /// `request_timeout`, as the config writes durations.
        timeout: String,
    },
    /// No connection, or it broke.
    #[error("the summary endpoint {endpoint} could not be reached: {cause}")]
    Unreachable {
        /// `host[:port]`.
        endpoint: String,
        /// The innermost cause (`Connection refused (os error 111)`).
        cause: String,
    },
    /// An answer other than a success.
    #[error("the summary endpoint {endpoint} answered HTTP {status}{code}")]
    Status {
        /// `host[:port]`.
        endpoint: String,
        /// `429 Too Many Requests`.
        status: String,
        /// ` (rate_limit_exceeded)`, or nothing.
        code: String,
    },
    /// A success whose body is not a chat completion with a summary.
    #[error("the summary endpoint {endpoint} answered with {why}")]
    Malformed {
        /// `host[:port]`.
        endpoint: String,
        /// What is wrong with it.
        why: String,
    },
    /// The HTTP client could not be built (TLS set-up).
    #[error("no HTTP client for the summary endpoint {endpoint}: {cause}")]
    Client {
        /// `host[:port]`.
        endpoint: String,
        /// Why.
        cause: String,
    },
}

/// A summary and what the endpoint said about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// The summary.
    pub text: String,
    /// `stop`, or `length` when `max_tokens` cut it.
    pub finish_reason: Option<String>,
    /// `usage.prompt_tokens`, `usage.completion_tokens`, when the endpoint counted.
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
}

/// One endpoint, model and key.
pub(super) struct Endpoint {
    config: ProviderConfig,
    endpoint: String,
    model: String,
    max_tokens: u32,
    timeout: Duration,
    /// Made at the first request, so that building the pipeline (and `config check`) reads
    /// no certificates.
    provider: OnceLock<Result<Arc<dyn Provider>, String>>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("endpoint", &self.endpoint)
            .field("model", &self.model)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// The endpoint `settings` describe.
    pub(super) fn new(settings: &Settings) -> Endpoint {
        Endpoint {
            config: ProviderConfig {
                dialect: Dialect::OpenaiChat,
                base_url: settings.base_url.to_string(),
                api_key: settings.api_key.as_ref().map(|key| key.expose().to_owned()),
                // One request per summary: a failure is the pipeline's to let through.
                max_retries: 0,
                idle_timeout: settings.request_timeout,
                proxy: settings.proxy.clone(),
            },
            endpoint: settings.endpoint.clone(),
            model: settings.model.clone(),
            max_tokens: u32::try_from(settings.max_tokens).unwrap_or(u32::MAX),
            timeout: settings.request_timeout,
            provider: OnceLock::new(),
        }
    }

    /// Asks the model to answer `prompt`.
    pub(super) async fn complete(&self, prompt: &str) -> Result<Completion, EndpointError> {
        let provider = self.provider()?;
        let request = ChatRequest {
            model: self.model.clone(),
            messages: vec![Message::user_text(prompt)],
            max_tokens: Some(self.max_tokens),
            ..ChatRequest::default()
        };
        let finished = match tokio::time::timeout(self.timeout, finished(provider, request)).await {
            Ok(finished) => finished.map_err(|error| self.failure(error))?,
            Err(_) => return Err(self.timed_out()),
        };
        completion(finished).map_err(|why| self.malformed(why.to_owned()))
    }

    fn provider(&self) -> Result<&Arc<dyn Provider>, EndpointError> {
        let made = self.provider.get_or_init(|| {
            provider::connect(self.config.clone()).map_err(|error| match error {
                ConnectError::Client { cause, .. } => cause,
                other => other.to_string(),
            })
        });
        made.as_ref().map_err(|cause| EndpointError::Client {
            endpoint: self.endpoint.clone(),
            cause: cause.clone(),
        })
    }

    /// What `error` is said to be: only the host, the status and a short error code.
    fn failure(&self, error: ProviderError) -> EndpointError {
        let endpoint = self.endpoint.clone();
        match error {
            ProviderError::Status { status, code, .. } => EndpointError::Status {
                endpoint,
                status: http::StatusCode::from_u16(status)
                    .map_or_else(|_| status.to_string(), |status| status.to_string()),
                code: code
                    .as_deref()
                    .and_then(identifier)
                    .map(|code| format!(" ({code})"))
                    .unwrap_or_default(),
            },
            ProviderError::Network { message, .. } => {
                EndpointError::Unreachable { endpoint, cause: message }
            }
            ProviderError::Idle { .. } => self.timed_out(),
            ProviderError::Protocol { message, .. } => self.malformed(message),
            ProviderError::InStream { code, .. } => self.malformed(format!(
                "an error in its stream{}",
                code.as_deref()
                    .and_then(identifier)
                    .map(|code| format!(" ({code})"))
                    .unwrap_or_default()
            )),
            ProviderError::Truncated { .. } => {
                self.malformed("a stream that ended before the summary was complete".to_owned())
            }
        }
    }

    fn timed_out(&self) -> EndpointError {
        EndpointError::Timeout {
            endpoint: self.endpoint.clone(),
            timeout: toolgate_core::duration::format(self.timeout),
        }
    }

    fn malformed(&self, why: String) -> EndpointError {
        EndpointError::Malformed { endpoint: self.endpoint.clone(), why }
    }
}

/// The end of the provider's stream for `request`: the whole turn, or the error that ended it.
async fn finished(
    provider: &Arc<dyn Provider>,
    request: ChatRequest,
) -> Result<Finished, ProviderError> {
    let mut stream = provider.stream(request);
    while let Some(event) = stream.next().await {
        if let StreamEvent::Finished(finished) = event? {
            return Ok(finished);
        }
    }
    Err(ProviderError::Truncated { provider: String::new() })
}

/// The summary in a finished turn, or what is wrong with it.
fn completion(finished: Finished) -> Result<Completion, &'static str> {
    let text = finished.turn.text.trim();
    if text.is_empty() {
        return Err(match finished.stop {
            StopReason::ContentFilter => "a refusal instead of a summary",
            _ if !finished.turn.tool_calls.is_empty() => "a message without text content",
            _ => "an empty summary",
        });
    }
    let finish_reason = match &finished.stop {
        StopReason::End => "stop",
        StopReason::ToolUse => "tool_calls",
        StopReason::MaxTokens => "length",
        StopReason::ContentFilter => "content_filter",
        StopReason::Other(other) => other.as_str(),
    };
    Ok(Completion {
        text: text.to_owned(),
        finish_reason: Some(finish_reason.to_owned()),
        prompt_tokens: finished.usage.map(|usage| usage.input_tokens),
        completion_tokens: finished.usage.map(|usage| usage.output_tokens),
    })
}

/// `code` when it is a short identifier (so that nothing the provider quoted can pass).
fn identifier(code: &str) -> Option<&str> {
    (!code.is_empty()
        && code.len() <= 64
        && code.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b)))
    .then_some(code)
}

#[cfg(test)]
mod tests {
    use toolgate_llm::chat::{AssistantTurn, ToolCall, Usage};

    use super::*;

    fn turn(text: &str, stop: StopReason) -> Finished {
        Finished {
            turn: AssistantTurn { text: text.to_owned(), ..AssistantTurn::default() },
            usage: None,
            stop,
        }
    }

    #[test]
    fn a_completion_body_gives_its_text_reason_and_usage() {
        let mut finished = turn("  short  ", StopReason::MaxTokens);
        finished.usage = Some(Usage { input_tokens: 10, output_tokens: 2, ..Usage::default() });
        assert_eq!(
            completion(finished),
            Ok(Completion {
                text: "short".into(),
                finish_reason: Some("length".into()),
                prompt_tokens: Some(10),
                completion_tokens: Some(2),
            })
        );
    }

    /// What is wrong with a body that is not a chat completion at all is the provider's to say
    /// (`toolgate_llm`'s Chat Completions decoder: no choices, a choice without a message).
    #[test]
    fn bodies_without_a_summary_say_what_is_missing() {
        let mut calls_only = turn("", StopReason::ToolUse);
        calls_only.turn.tool_calls =
            vec![ToolCall { id: "c".into(), name: "f".into(), arguments: "{}".into() }];
        let cases = [
            (calls_only, "a message without text content"),
            (turn("", StopReason::ContentFilter), "a refusal instead of a summary"),
            (turn(" \n", StopReason::End), "an empty summary"),
        ];
        for (finished, why) in cases {
            assert_eq!(completion(finished.clone()), Err(why), "{finished:?}");
        }
    }

    #[test]
    fn only_short_identifiers_of_an_error_body_are_repeated() {
        assert_eq!(identifier("rate_limit_exceeded"), Some("rate_limit_exceeded"));
        assert_eq!(identifier("server_error"), Some("server_error"));
        assert_eq!(identifier("Incorrect API key sk-123 provided"), None);
        assert_eq!(identifier(""), None);
        assert_eq!(identifier(&"x".repeat(65)), None);
    }
}
