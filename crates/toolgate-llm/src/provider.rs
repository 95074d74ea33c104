//! Talking to a model: one streaming request at a time, in the provider's own wire format.
//!
//! A [`Provider`] turns a [`ChatRequest`] into a stream of [`StreamEvent`]s: text and
//! reasoning as they arrive, tool calls as they start, and at the end one
//! [`StreamEvent::Finished`] with the whole assistant turn assembled from the deltas (tool
//! calls put together by their index, arguments joined as bytes so that a character split
//! across chunks comes out whole), the usage and the stop reason. Dropping the stream cancels
//! the request.
//!
//! This is the only module of the crate that does IO (HTTP, through `reqwest`).

mod anthropic;
mod content;
mod decode;
mod http;
mod openai_chat;
mod openai_responses;
mod sse;

use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};

use crate::chat::{AssistantTurn, ChatRequest, StopReason, Usage};

pub use anthropic::DEFAULT_MAX_TOKENS as ANTHROPIC_DEFAULT_MAX_TOKENS;
pub use http::{ConnectError, MAX_RETRY_AFTER};

/// The provider `config` describes, speaking its dialect over HTTP (rustls). Checks the base
/// URL and the key and builds the client; nothing is sent until [`Provider::stream`].
pub fn connect(config: ProviderConfig) -> Result<Arc<dyn Provider>, ConnectError> {
    http::connect(config)
}

/// Which wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dialect {
    /// OpenAI Chat Completions (`POST {base_url}/chat/completions`), also what DeepSeek,
    /// Ollama, vLLM, llama.cpp and LM Studio speak.
    OpenaiChat,
    /// OpenAI Responses (`POST {base_url}/responses`).
    OpenaiResponses,
    /// Anthropic Messages (`POST {base_url}/messages`).
    Anthropic,
}

/// Where and how to reach a model.
#[derive(Clone)]
pub struct ProviderConfig {
    /// The wire format.
    pub dialect: Dialect,
    /// The API's base URL, ending before the dialect's path (`https://api.openai.com/v1`).
    pub base_url: String,
    /// The key, if the endpoint needs one (sent as `Authorization: Bearer`, or `x-api-key`
    /// for Anthropic).
    pub api_key: Option<String>,
    /// How often a request that failed with 408, 409, 429, 5xx or a network error before any
    /// event arrived is tried again (with backoff, honouring `Retry-After`).
    pub max_retries: u32,
    /// Longest silence allowed between two chunks of a stream (and before the first).
    pub idle_timeout: Duration,
    /// Which proxy the requests take.
    pub proxy: Proxy,
}

/// Which proxy a provider's requests take. `Debug` does not show the URL (it may hold
/// `user:pass@`).
#[derive(Clone, Default, PartialEq, Eq)]
pub enum Proxy {
    /// What `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` and `NO_PROXY` say (and their lowercase
    /// forms).
    #[default]
    Environment,
    /// None, whatever the variables say.
    Direct,
    /// Every request through this proxy (`http://host:port`, possibly with `user:pass@`).
    Url(String),
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Proxy::Environment => f.write_str("Environment"),
            Proxy::Direct => f.write_str("Direct"),
            Proxy::Url(_) => f.write_str("Url(***)"),
        }
    }
}

impl std::fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("dialect", &self.dialect)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .field("max_retries", &self.max_retries)
            .field("idle_timeout", &self.idle_timeout)
            .field("proxy", &self.proxy)
            .finish()
    }
}

/// What a provider's stream says, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// Visible text.
    Text(String),
    /// Reasoning text (shown dimmed).
    Reasoning(String),
    /// The model started a tool call (its name is known; its arguments are still coming).
    ToolCallStarted {
        /// The call's id (made up when the provider sent none).
        id: String,
        /// The tool's name as the provider knows it.
        name: String,
    },
    /// The request failed in a way worth trying again; it will be, after `wait`.
    Retrying {
        /// Which try failed (1 = the first).
        attempt: u32,
        /// How long until the next.
        wait: Duration,
        /// Why, in words.
        reason: String,
    },
    /// The end: the whole turn.
    Finished(Finished),
}

/// The end of a stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    /// The assistant's turn, assembled.
    pub turn: AssistantTurn,
    /// Tokens, when the provider reported them.
    pub usage: Option<Usage>,
    /// Why the model stopped.
    pub stop: StopReason,
}

/// Why a request to a model failed.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The provider answered with an error status (after the retries, for those retried).
    #[error("{provider} answered HTTP {status}{}: {message}", code.as_ref().map(|c| format!(" ({c})")).unwrap_or_default())]
    Status {
        /// The provider's host.
        provider: String,
        /// The HTTP status.
        status: u16,
        /// The provider's error code or type (`rate_limit_exceeded`, `overloaded_error`).
        code: Option<String>,
        /// The provider's message.
        message: String,
    },
    /// The provider could not be reached or the connection broke.
    #[error("cannot reach {provider}: {message}")]
    Network {
        /// The provider's host.
        provider: String,
        /// What went wrong, in words.
        message: String,
    },
    /// The stream stayed silent too long.
    #[error("{provider} sent nothing for {}", toolgate_core::duration::format(*.after))]
    Idle {
        /// The provider's host.
        provider: String,
        /// The limit.
        after: Duration,
    },
    /// The provider sent an error in the middle of a stream.
    #[error("{provider} reported an error in its stream{}: {message}", code.as_ref().map(|c| format!(" ({c})")).unwrap_or_default())]
    InStream {
        /// The provider's host.
        provider: String,
        /// Its error type or code.
        code: Option<String>,
        /// Its message.
        message: String,
    },
    /// The provider sent something that is not its wire format.
    #[error("{provider} sent something unexpected: {message}")]
    Protocol {
        /// The provider's host.
        provider: String,
        /// What, in words.
        message: String,
    },
    /// The stream ended before the response was complete.
    #[error("{provider}'s stream ended before the response was complete")]
    Truncated {
        /// The provider's host.
        provider: String,
    },
}

/// A model behind an API.
pub trait Provider: Send + Sync {
    /// The dialect it speaks.
    fn dialect(&self) -> Dialect;

    /// Sends `request` and streams the answer. Errors before the first event are retried as
    /// [`ProviderConfig::max_retries`] says (each announced by [`StreamEvent::Retrying`]).
    fn stream(
        &self,
        request: ChatRequest,
    ) -> BoxStream<'static, Result<StreamEvent, ProviderError>>;
}
