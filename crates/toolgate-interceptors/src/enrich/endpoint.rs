//! The OpenAI-compatible Chat Completions endpoint `enrich` asks for summaries: one
//! non-streaming `POST <base_url>/chat/completions` per summary, under `request_timeout`.
//!
//! What may be said about a failure: the endpoint's `host[:port]`, the HTTP status, and the
//! error's `code` or `type` from the provider's error body when it is a short identifier. Never
//! the URL's path, the key, the prompt, the result or the provider's error message (which may
//! quote any of them).

use std::sync::OnceLock;
use std::time::Duration;

use reqwest::header::{AUTHORIZATION, HeaderValue};
use serde_json::{Value, json};

use super::settings::{ApiKey, Settings};

/// The largest answer read.
const BODY_LIMIT: usize = 1024 * 1024;

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
    url: reqwest::Url,
    endpoint: String,
    model: String,
    api_key: Option<ApiKey>,
    max_tokens: u64,
    timeout: Duration,
    /// Built at the first request, so that building the pipeline (and `config check`) reads
    /// no certificates.
    client: OnceLock<Result<reqwest::Client, String>>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("endpoint", &self.endpoint)
            .field("model", &self.model)
            .field("api_key", &self.api_key)
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// The endpoint `settings` describe.
    pub(super) fn new(settings: &Settings) -> Endpoint {
        Endpoint {
            url: settings.chat_url(),
            endpoint: settings.endpoint.clone(),
            model: settings.model.clone(),
            api_key: settings.api_key.clone(),
            max_tokens: settings.max_tokens,
            timeout: settings.request_timeout,
            client: OnceLock::new(),
        }
    }

    /// Asks the model to answer `prompt`.
    pub(super) async fn complete(&self, prompt: &str) -> Result<Completion, EndpointError> {
        let client = self.client()?;
        let body = json!({
            "model": self.model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": self.max_tokens,
        });
        let mut request = client.post(self.url.clone()).json(&body);
        if let Some(key) = &self.api_key {
            let mut value = HeaderValue::from_str(&format!("Bearer {}", key.expose()))
                .expect("checked when the settings were read");
            value.set_sensitive(true);
            request = request.header(AUTHORIZATION, value);
        }
        match tokio::time::timeout(self.timeout, self.exchange(request)).await {
            Ok(answer) => answer,
            Err(_) => Err(EndpointError::Timeout {
                endpoint: self.endpoint.clone(),
                timeout: toolgate_core::duration::format(self.timeout),
            }),
        }
    }

    fn client(&self) -> Result<&reqwest::Client, EndpointError> {
        let built = self.client.get_or_init(|| {
            reqwest::Client::builder()
                .user_agent(concat!("toolgate/", env!("CARGO_PKG_VERSION")))
                // A redirect would carry the key elsewhere, and a POST may become a GET.
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|e| innermost(&e))
        });
        built.as_ref().map_err(|cause| EndpointError::Client {
            endpoint: self.endpoint.clone(),
            cause: cause.clone(),
        })
    }

    /// Sends `request` and reads the answer.
    async fn exchange(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<Completion, EndpointError> {
        let unreachable = |e: reqwest::Error| EndpointError::Unreachable {
            endpoint: self.endpoint.clone(),
            cause: innermost(&e),
        };
        let mut response = request.send().await.map_err(unreachable)?;
        let status = response.status();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(unreachable)? {
            if body.len() + chunk.len() > BODY_LIMIT {
                if !status.is_success() {
                    break;
                }
                return Err(self.malformed(format!("a body larger than {} KiB", BODY_LIMIT / 1024)));
            }
            body.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            let code = error_code(&body).map(|code| format!(" ({code})")).unwrap_or_default();
            return Err(EndpointError::Status {
                endpoint: self.endpoint.clone(),
                status: status.to_string(),
                code,
            });
        }
        let body: Value = serde_json::from_slice(&body).map_err(|e| {
            self.malformed(format!(
                "a body that is not JSON (line {}, column {})",
                e.line(),
                e.column()
            ))
        })?;
        completion(&body).map_err(|why| self.malformed(why.to_owned()))
    }

    fn malformed(&self, why: String) -> EndpointError {
        EndpointError::Malformed { endpoint: self.endpoint.clone(), why }
    }
}

/// The summary in a `chat.completion` body, or what is wrong with the body.
fn completion(body: &Value) -> Result<Completion, &'static str> {
    let choice = body
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|choices| choices.first())
        .ok_or("a body that is not a chat completion (no choices)")?;
    let message = choice.get("message").ok_or("a choice without a message")?;
    let text = match message.get("content") {
        Some(Value::String(text)) => text.trim(),
        _ if message.get("refusal").is_some_and(Value::is_string) => {
            return Err("a refusal instead of a summary");
        }
        _ => return Err("a message without text content"),
    };
    if text.is_empty() {
        return Err("an empty summary");
    }
    let usage = |key: &str| body.get("usage").and_then(|u| u.get(key)).and_then(Value::as_u64);
    Ok(Completion {
        text: text.to_owned(),
        finish_reason: choice.get("finish_reason").and_then(Value::as_str).map(str::to_owned),
        prompt_tokens: usage("prompt_tokens"),
        completion_tokens: usage("completion_tokens"),
    })
}

/// `error.code`, else `error.type`, of an OpenAI-style error body, when it is a short
/// identifier (so that nothing the provider quoted can pass).
fn error_code(body: &[u8]) -> Option<String> {
    let body: Value = serde_json::from_slice(body).ok()?;
    let error = body.get("error")?;
    fn identifier(value: Option<&Value>) -> Option<&str> {
        value.and_then(Value::as_str).filter(|text| {
            !text.is_empty()
                && text.len() <= 64
                && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
        })
    }
    identifier(error.get("code")).or_else(|| identifier(error.get("type"))).map(str::to_owned)
}

/// The message of the innermost error in `error`'s chain: the cause in words, without the
/// URL reqwest's own message holds.
fn innermost(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    if std::ptr::addr_eq(current, error) {
        // No source: say what kind of failure it is, not reqwest's message with the URL.
        return "the request failed".to_owned();
    }
    current.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_completion_body_gives_its_text_reason_and_usage() {
        let body = json!({
            "choices": [{"message": {"role": "assistant", "content": "  short  "}, "finish_reason": "length"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2},
        });
        assert_eq!(
            completion(&body),
            Ok(Completion {
                text: "short".into(),
                finish_reason: Some("length".into()),
                prompt_tokens: Some(10),
                completion_tokens: Some(2),
            })
        );
    }

    #[test]
    fn bodies_without_a_summary_say_what_is_missing() {
        let cases = [
            (json!({}), "a body that is not a chat completion (no choices)"),
            (json!({"choices": []}), "a body that is not a chat completion (no choices)"),
            (json!({"choices": [{}]}), "a choice without a message"),
            (
                json!({"choices": [{"message": {"content": null}}]}),
                "a message without text content",
            ),
            (
                json!({"choices": [{"message": {"content": null, "refusal": "no"}}]}),
                "a refusal instead of a summary",
            ),
            (json!({"choices": [{"message": {"content": " \n"}}]}), "an empty summary"),
        ];
        for (body, why) in cases {
            assert_eq!(completion(&body), Err(why), "{body}");
        }
    }

    #[test]
    fn only_short_identifiers_of_an_error_body_are_repeated() {
        let code = |body: Value| error_code(body.to_string().as_bytes());
        assert_eq!(
            code(json!({"error": {"code": "rate_limit_exceeded", "type": "requests"}})).as_deref(),
            Some("rate_limit_exceeded")
        );
        assert_eq!(
            code(json!({"error": {"code": null, "type": "server_error"}})).as_deref(),
            Some("server_error")
        );
        assert_eq!(code(json!({"error": {"code": "Incorrect API key sk-123 provided"}})), None);
        assert_eq!(code(json!({"error": "overloaded"})), None);
        assert_eq!(error_code(b"<html>"), None);
    }
}
