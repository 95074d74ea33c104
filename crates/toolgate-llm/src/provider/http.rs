//! The HTTP under every dialect: one `reqwest` client (rustls), the POST with the dialect's
//! headers, the retries, the idle timeout, and the loop that feeds server-sent events to a
//! dialect's [`Decoder`].
//!
//! An answer whose `Content-Type` is `application/json` is a whole response at once (a server
//! that does not stream, though asked to): it is read whole (at most 1 MiB) and handed to the
//! decoder's [`Decoder::whole`], and its events come out as if streamed.
//!
//! Retried, as [`ProviderConfig::max_retries`] says, and only before the stream has produced
//! anything: 408, 409, 429 and 5xx answers, and failures to send the request or to read the
//! start of the answer. The wait is the provider's `retry-after-ms` (OpenAI), else its
//! `Retry-After` (seconds or an HTTP date), else exponential backoff with jitter from 500 ms up
//! to 30 s ([`toolgate_core::backoff`]). A provider asking for more than [`MAX_RETRY_AFTER`] is
//! not retried: the error is returned at once, with its message. Each retry is announced by a
//! [`StreamEvent::Retrying`] before the wait.
//!
//! What errors say about the provider: its `host[:port]`, the HTTP status, and the error's
//! message and code from its error body (OpenAI `{"error": {"message", "type", "code"}}`,
//! Anthropic `{"type": "error", "error": {"type", "message"}}`, Ollama `{"error": "..."}`);
//! never the key, the path, or the rest of the body.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use super::decode::{Decoder, Fault, error_fields, shorten};
use super::sse::{SseEvent, SseReader};
use super::{Dialect, Provider, ProviderConfig, ProviderError, StreamEvent};
use super::{anthropic, openai_chat, openai_responses};
use crate::chat::ChatRequest;

/// The longest `Retry-After` honoured; a provider asking for more gets its error returned.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// The first backoff wait when the provider names none.
const BACKOFF_BASE: Duration = Duration::from_millis(500);
/// The longest backoff wait.
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// The most of an error body read.
const ERROR_BODY_LIMIT: usize = 64 * 1024;
/// The largest answer read when it comes as one JSON body rather than a stream.
const WHOLE_BODY_LIMIT: usize = 1024 * 1024;

/// Why no provider could be made from a [`ProviderConfig`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectError {
    /// `base_url` is not an http(s) URL with a host.
    #[error("the provider's base_url {url:?} {why}")]
    BaseUrl {
        /// The URL as given, or what is left of it when it held credentials.
        url: String,
        /// What is wrong.
        why: String,
    },
    /// A key would go to another machine over plain `http://`.
    #[error(
        "refusing to send the API key to {provider} over plain http://, where anyone on the \
         way can read it: use an https:// base_url (plain http:// is only for a model on this \
         machine: localhost, 127.0.0.1, [::1])"
    )]
    KeyInTheClear {
        /// The provider's host.
        provider: String,
    },
    /// The key cannot be sent in a header.
    #[error("the API key for {provider} is not a valid HTTP header value")]
    ApiKey {
        /// The provider's host.
        provider: String,
    },
    /// The HTTP client could not be built (TLS set-up).
    #[error("no HTTP client for {provider}: {cause}")]
    Client {
        /// The provider's host.
        provider: String,
        /// Why.
        cause: String,
    },
}

/// Makes the provider `config` describes. Nothing is sent until [`Provider::stream`].
pub(super) fn connect(config: ProviderConfig) -> Result<Arc<dyn Provider>, ConnectError> {
    let base_url = config.base_url.trim_end_matches('/');
    let bad = |why: &str| ConnectError::BaseUrl { url: base_url.to_owned(), why: why.to_owned() };
    let mut url = reqwest::Url::parse(base_url).map_err(|e| bad(&format!("is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("is not an http or https URL"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ConnectError::BaseUrl {
            url: "(a URL with credentials)".to_owned(),
            why: "must not hold credentials: give the key as the API key".to_owned(),
        });
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(bad("must have no query or fragment"));
    }
    let host = match (url.host_str(), url.port()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_owned(),
        (None, _) => return Err(bad("has no host")),
    };
    let path = match config.dialect {
        Dialect::OpenaiChat => "chat/completions",
        Dialect::OpenaiResponses => "responses",
        Dialect::Anthropic => "messages",
    };
    url.set_path(&format!("{}/{path}", url.path().trim_end_matches('/')));

    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    if config.dialect == Dialect::Anthropic {
        headers.insert("anthropic-version", HeaderValue::from_static("2023-06-01"));
    }
    if let Some(key) = &config.api_key {
        if let Some(provider) = crate::key_route::plain_http_host(url.as_str()) {
            return Err(ConnectError::KeyInTheClear { provider });
        }
        let (name, value) = match config.dialect {
            Dialect::Anthropic => (HeaderName::from_static("x-api-key"), key.clone()),
            _ => (AUTHORIZATION, format!("Bearer {key}")),
        };
        let mut value = HeaderValue::from_str(&value)
            .map_err(|_| ConnectError::ApiKey { provider: host.clone() })?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    // ring is the process's TLS provider unless the program has installed one already.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let builder = reqwest::Client::builder()
        .user_agent(concat!("toolgate/", env!("CARGO_PKG_VERSION")))
        // A redirect would carry the key elsewhere, and a POST may become a GET.
        .redirect(reqwest::redirect::Policy::none());
    let builder = match &config.proxy {
        super::Proxy::Environment => builder,
        super::Proxy::Direct => builder.no_proxy(),
        // Not quoted: the URL may hold a password.
        super::Proxy::Url(proxy) => {
            builder.proxy(reqwest::Proxy::all(proxy).map_err(|_| ConnectError::Client {
                provider: host.clone(),
                cause: "the proxy is not a usable proxy URL".to_owned(),
            })?)
        }
    };
    let client = builder
        .build()
        .map_err(|e| ConnectError::Client { provider: host.clone(), cause: innermost(&e) })?;
    // OpenAI's reasoning models refuse `max_tokens`; the compatible servers know only it.
    let openai = url.host_str() == Some("api.openai.com");
    let endpoint = Endpoint {
        client,
        url,
        host,
        headers,
        max_retries: config.max_retries,
        idle_timeout: config.idle_timeout,
    };
    Ok(Arc::new(HttpProvider { dialect: config.dialect, openai, endpoint: Arc::new(endpoint) }))
}

/// A provider behind HTTP, in any dialect.
struct HttpProvider {
    dialect: Dialect,
    /// The endpoint is OpenAI's own.
    openai: bool,
    endpoint: Arc<Endpoint>,
}

impl Provider for HttpProvider {
    fn dialect(&self) -> Dialect {
        self.dialect
    }

    fn stream(
        &self,
        request: ChatRequest,
    ) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
        let endpoint = self.endpoint.clone();
        match self.dialect {
            Dialect::OpenaiChat => {
                let field = if self.openai { "max_completion_tokens" } else { "max_tokens" };
                let body = openai_chat::body(&request, field);
                stream(endpoint, &body, openai_chat::Decoder::default())
            }
            Dialect::OpenaiResponses => stream(
                endpoint,
                &openai_responses::body(&request),
                openai_responses::Decoder::default(),
            ),
            Dialect::Anthropic => {
                stream(endpoint, &anthropic::body(&request), anthropic::Decoder::default())
            }
        }
    }
}

/// Where requests go, and how.
pub(super) struct Endpoint {
    client: reqwest::Client,
    url: reqwest::Url,
    /// `host[:port]`: all that errors say about the provider.
    host: String,
    headers: HeaderMap,
    max_retries: u32,
    idle_timeout: Duration,
}

/// Sends `body` to `endpoint` and streams what `decoder` makes of the answer.
pub(super) fn stream<D: Decoder>(
    endpoint: Arc<Endpoint>,
    body: &Value,
    decoder: D,
) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
    let body = Bytes::from(serde_json::to_vec(body).expect("a JSON value serialises"));
    let driver = Driver {
        endpoint,
        body,
        decoder,
        state: State::Send { failures: 0 },
        queue: VecDeque::new(),
        produced: false,
        error: None,
    };
    futures::stream::unfold(driver, |mut driver| async move {
        let item = driver.next().await?;
        Some((item, driver))
    })
    .boxed()
}

enum State {
    /// Send the request (after `failures` failed tries).
    Send { failures: u32 },
    /// Wait before trying again.
    Wait { failures: u32, wait: Duration },
    /// Read the stream.
    Read { response: reqwest::Response, reader: SseReader, failures: u32 },
    /// Nothing more.
    Done,
}

/// A try that failed.
struct Failure {
    error: ProviderError,
    /// Worth trying again, after the wait the provider asked for, if any.
    retry: Option<Option<Duration>>,
}

struct Driver<D> {
    endpoint: Arc<Endpoint>,
    body: Bytes,
    decoder: D,
    state: State,
    queue: VecDeque<StreamEvent>,
    /// The decoder has read an event (a failure now is not retried: the decoder is no longer
    /// fresh, and the provider has started answering).
    produced: bool,
    /// The error that ends the stream once the queue is empty.
    error: Option<ProviderError>,
}

impl<D: Decoder> Driver<D> {
    async fn next(&mut self) -> Option<Result<StreamEvent, ProviderError>> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Some(Ok(event));
            }
            if let Some(error) = self.error.take() {
                return Some(Err(error));
            }
            match std::mem::replace(&mut self.state, State::Done) {
                State::Done => return None,
                State::Wait { failures, wait } => {
                    tokio::time::sleep(wait).await;
                    self.state = State::Send { failures };
                }
                State::Send { failures } => match self.send().await {
                    Ok(response) if is_json(&response) => {
                        // The whole answer at once: nothing is retried after this.
                        self.produced = true;
                        if let Err(error) = self.whole(response).await {
                            self.error = Some(error);
                        }
                    }
                    Ok(response) => {
                        let reader = SseReader::default();
                        self.state = State::Read { response, reader, failures };
                    }
                    Err(failure) => return Some(self.retry_or_fail(failures, failure)),
                },
                State::Read { mut response, mut reader, failures } => {
                    let idle = self.endpoint.idle_timeout;
                    let chunk = match tokio::time::timeout(idle, response.chunk()).await {
                        Err(_) => {
                            let provider = self.endpoint.host.clone();
                            return Some(Err(ProviderError::Idle { provider, after: idle }));
                        }
                        Ok(Err(e)) => {
                            let error = self.network(&e);
                            if !self.produced {
                                // Nothing came out yet: as if the request had failed.
                                let failure = Failure { error, retry: Some(None) };
                                return Some(self.retry_or_fail(failures, failure));
                            }
                            return Some(Err(error));
                        }
                        Ok(Ok(chunk)) => chunk,
                    };
                    let mut events = Vec::new();
                    let read = match &chunk {
                        Some(bytes) => reader.feed(bytes, &mut events),
                        None => reader.finish(&mut events),
                    };
                    if read.is_err() {
                        let fault = Fault::Protocol("a line that is not UTF-8".to_owned());
                        return Some(Err(fault.error(&self.endpoint.host)));
                    }
                    match self.decode(&events, chunk.is_none()) {
                        Ok(true) => {}
                        Ok(false) => self.state = State::Read { response, reader, failures },
                        Err(error) => {
                            // What the decoder said before the error still comes first.
                            self.error = Some(error);
                        }
                    }
                }
            }
        }
    }

    /// Feeds `events` to the decoder, queueing what it says; `true` once the response is
    /// complete (the rest of the stream is not read).
    fn decode(&mut self, events: &[SseEvent], ended: bool) -> Result<bool, ProviderError> {
        let host = &self.endpoint.host;
        let mut out = Vec::new();
        self.produced |= !events.is_empty();
        for event in events {
            let result = self.decoder.event(event, &mut out);
            self.queue.extend(out.drain(..));
            match result {
                Ok(Some(finished)) => {
                    self.queue.push_back(StreamEvent::Finished(finished));
                    return Ok(true);
                }
                Ok(None) => {}
                Err(fault) => return Err(fault.error(host)),
            }
        }
        if ended {
            let finished = self.decoder.end().map_err(|fault| fault.error(host))?;
            self.queue.push_back(StreamEvent::Finished(finished));
            return Ok(true);
        }
        Ok(false)
    }

    /// Reads an answer sent as one JSON body (a server that does not stream) and queues what
    /// the decoder makes of it.
    async fn whole(&mut self, mut response: reqwest::Response) -> Result<(), ProviderError> {
        let (host, idle) = (self.endpoint.host.clone(), self.endpoint.idle_timeout);
        let protocol =
            |message: String| ProviderError::Protocol { provider: host.clone(), message };
        let mut body = Vec::new();
        loop {
            let chunk = match tokio::time::timeout(idle, response.chunk()).await {
                Err(_) => return Err(ProviderError::Idle { provider: host.clone(), after: idle }),
                Ok(chunk) => chunk.map_err(|e| self.network(&e))?,
            };
            let Some(chunk) = chunk else { break };
            if body.len() + chunk.len() > WHOLE_BODY_LIMIT {
                return Err(protocol(format!(
                    "a body larger than {} KiB",
                    WHOLE_BODY_LIMIT / 1024
                )));
            }
            body.extend_from_slice(&chunk);
        }
        let body: Value = serde_json::from_slice(&body).map_err(|e| {
            protocol(format!("a body that is not JSON (line {}, column {})", e.line(), e.column()))
        })?;
        let mut out = Vec::new();
        let finished = self.decoder.whole(&body, &mut out).map_err(|fault| fault.error(&host))?;
        self.queue.extend(out);
        self.queue.push_back(StreamEvent::Finished(finished));
        Ok(())
    }

    fn retry_or_fail(
        &mut self,
        failures: u32,
        failure: Failure,
    ) -> Result<StreamEvent, ProviderError> {
        let Some(asked) = failure.retry else {
            return Err(failure.error);
        };
        if failures >= self.endpoint.max_retries || asked.is_some_and(|w| w > MAX_RETRY_AFTER) {
            return Err(failure.error);
        }
        let wait = asked.unwrap_or_else(|| {
            toolgate_core::backoff::delay(
                failures,
                BACKOFF_BASE,
                BACKOFF_MAX,
                toolgate_core::backoff::random_u64(),
            )
        });
        self.state = State::Wait { failures: failures + 1, wait };
        Ok(StreamEvent::Retrying { attempt: failures + 1, wait, reason: failure.error.to_string() })
    }

    fn network(&self, error: &reqwest::Error) -> ProviderError {
        ProviderError::Network { provider: self.endpoint.host.clone(), message: innermost(error) }
    }

    /// Sends the request; the response when it is a success.
    async fn send(&self) -> Result<reqwest::Response, Failure> {
        let endpoint = &self.endpoint;
        let request = endpoint
            .client
            .post(endpoint.url.clone())
            .headers(endpoint.headers.clone())
            .body(self.body.clone())
            .send();
        let idle = endpoint.idle_timeout;
        let response = match tokio::time::timeout(idle, request).await {
            Err(_) => {
                let error = ProviderError::Idle { provider: endpoint.host.clone(), after: idle };
                return Err(Failure { error, retry: None });
            }
            Ok(Err(e)) => return Err(Failure { error: self.network(&e), retry: Some(None) }),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retryable = matches!(status.as_u16(), 408 | 409 | 429) || status.is_server_error();
        let asked = retry_after(response.headers(), SystemTime::now());
        let body: Vec<u8> =
            tokio::time::timeout(idle, read_limited(response)).await.unwrap_or_default();
        let (code, message) = error_body(&body, status);
        let error = ProviderError::Status {
            provider: endpoint.host.clone(),
            status: status.as_u16(),
            code,
            message,
        };
        Err(Failure { error, retry: retryable.then_some(asked) })
    }
}

/// Whether `response` is one JSON body rather than an event stream.
fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("application/json"))
}

/// The first [`ERROR_BODY_LIMIT`] bytes of an answer (fewer if the connection breaks).
async fn read_limited(mut response: reqwest::Response) -> Vec<u8> {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        body.extend_from_slice(&chunk);
        if body.len() >= ERROR_BODY_LIMIT {
            body.truncate(ERROR_BODY_LIMIT);
            break;
        }
    }
    body
}

/// The wait a provider asks for: `retry-after-ms` (milliseconds, OpenAI), else `Retry-After`
/// (seconds, or an HTTP date counted from `now`).
pub(super) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = header("retry-after")?;
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The provider's error code (or type) and message in an error body; the status's reason
/// when the body says nothing readable.
pub(super) fn error_body(body: &[u8], status: StatusCode) -> (Option<String>, String) {
    let fallback = || status.canonical_reason().unwrap_or("error").to_owned();
    let Ok(body) = serde_json::from_slice::<Value>(body) else {
        return (None, fallback());
    };
    let (code, message) = error_fields(&body);
    (code, message.map(shorten).unwrap_or_else(fallback))
}

/// The message of the innermost error in `error`'s chain: the cause in words, without the URL
/// reqwest's own message holds.
fn innermost(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    if std::ptr::addr_eq(current, error) {
        return "the request failed".to_owned();
    }
    current.to_string()
}

/// Runs `decoder` over `text` cut into pieces of `piece` bytes, as the HTTP loop would: the
/// events, then the end, or the first fault.
#[cfg(test)]
pub(super) fn decode_text<D: Decoder>(
    mut decoder: D,
    text: &str,
    piece: usize,
) -> (Vec<StreamEvent>, Result<super::Finished, Fault>) {
    let mut reader = SseReader::default();
    let mut events = Vec::new();
    let mut sse = Vec::new();
    let mut out = Vec::new();
    let chunks = text.as_bytes().chunks(piece.max(1));
    for chunk in chunks.map(Some).chain([None]) {
        match chunk {
            Some(chunk) => reader.feed(chunk, &mut sse).expect("utf-8"),
            None => reader.finish(&mut sse).expect("utf-8"),
        }
        for event in sse.drain(..) {
            let result = decoder.event(&event, &mut out);
            events.append(&mut out);
            match result {
                Ok(Some(finished)) => return (events, Ok(finished)),
                Ok(None) => {}
                Err(fault) => return (events, Err(fault)),
            }
        }
    }
    let end = decoder.end();
    (events, end)
}

#[cfg(test)]
mod tests;
