//! The webhook sink: every matching event POSTed as JSON to a URL, one at a time, in order,
//! with retries (see [`spawn_webhook_sink`]).
//!
//! This is the one module of the crate that does network IO.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use tokio::task::JoinHandle;
use toolgate_core::backoff::delay as backoff_delay;
use url::Url;

use crate::bus::{EventBus, Subscription};
use crate::event::Event;
use crate::pattern::EventPattern;

/// Default [`WebhookOptions::queue`].
const DEFAULT_QUEUE: usize = 1024;
/// Default [`WebhookOptions::retries`].
const DEFAULT_RETRIES: u32 = 5;
/// Default [`WebhookOptions::backoff_base`].
const DEFAULT_BACKOFF_BASE: Duration = Duration::from_millis(500);
/// Default [`WebhookOptions::backoff_max`].
const DEFAULT_BACKOFF_MAX: Duration = Duration::from_secs(30);
/// Default [`WebhookOptions::timeout`].
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// At most this much of a response body is read (so that the connection can be reused); the
/// rest is thrown away with the connection.
const BODY_LIMIT: usize = 64 * 1024;

/// Where and how a webhook sink delivers events. Start from [`WebhookOptions::new`] and change
/// what you need; [`spawn_webhook_sink`] checks the result.
///
/// `Debug` shows the URL's host and the header names only.
#[derive(Clone)]
#[non_exhaustive]
pub struct WebhookOptions {
    /// Where to POST (http or https).
    pub url: Url,
    /// Extra request headers, as (name, value) pairs, such as `Authorization`.
    pub headers: Vec<(String, String)>,
    /// How many events may wait for delivery; more are dropped (and counted) by the bus.
    pub queue: usize,
    /// How many times a failed delivery is tried again before the event is dropped.
    pub retries: u32,
    /// The delay before the first retry; it doubles with each further retry.
    pub backoff_base: Duration,
    /// The longest delay between two tries (also caps a server's `Retry-After`).
    pub backoff_max: Duration,
    /// The longest one request may take, from connecting to the end of the answer.
    pub timeout: Duration,
    stats: WebhookStats,
}

/// What a webhook sink did so far. Cheap to clone; clones share the counts.
#[derive(Clone, Default)]
pub struct WebhookStats {
    counters: Arc<Counters>,
}

#[derive(Default)]
struct Counters {
    delivered: AtomicU64,
    failed: AtomicU64,
    /// Shared with the bus, which counts here the events it had no room for.
    dropped: Arc<AtomicU64>,
}

/// A webhook sink that cannot be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WebhookError {
    /// The URL's scheme is not `http` or `https`.
    #[error("webhook {host}: unsupported URL scheme `{scheme}` (expected http or https)")]
    Scheme {
        /// The URL's host (and port).
        host: String,
        /// The scheme it has.
        scheme: String,
    },
    /// A header name is not a valid HTTP header name.
    #[error("webhook {host}: invalid header name {name:?}")]
    HeaderName {
        /// The URL's host (and port).
        host: String,
        /// The name as given.
        name: String,
    },
    /// A header value is not a valid HTTP header value (it has a control character). The value
    /// itself is not kept: it may be a secret.
    #[error("webhook {host}: the value of header `{name}` is not a valid header value")]
    HeaderValue {
        /// The URL's host (and port).
        host: String,
        /// The header's name.
        name: String,
    },
    /// The HTTP client could not be set up (for example, no TLS root certificates).
    #[error("webhook {host}: cannot set up the HTTP client")]
    Client {
        /// The URL's host (and port).
        host: String,
        /// Why.
        #[source]
        source: reqwest::Error,
    },
}

/// POSTs every event matching `pattern` to `options.url`, until the bus is closed or every clone
/// of it is gone, and the queue is drained. Await the handle then to let it finish, but bound
/// the wait: with the webhook down, that takes as long as the retries of every event still
/// queued (abort the handle to give up on them).
///
/// The body is the event as the audit log records it, without the log's `seq` and `prev`:
/// `{"time":"2024-05-01T12:34:56.789Z","kind":"tools/call/denied",...fields}`, sent with
/// `Content-Type: application/json`. Any 2xx answer delivers it.
///
/// A delivery that fails for a reason that may pass (no connection, a timeout, a broken
/// connection, a 5xx or a 429 answer) is tried again after an exponential backoff with jitter
/// (or after the server's `Retry-After`, in seconds, when it gives one), up to
/// [`WebhookOptions::retries`] times. Any other answer (a 3xx, since redirects are not followed,
/// or a 4xx other than 429) is not retried: the same request would get the same answer. Either
/// way the lost event is logged with `tracing::warn!`, counted ([`WebhookStats::failed`]), and
/// the sink moves on to the next one. Logs and errors name the URL's host (and port) only, never
/// the whole URL or the headers: a webhook's path, query and headers often hold its secret.
///
/// The sink is one subscription of [`WebhookOptions::queue`] events and one task. Deliveries are
/// in order, so while one is being retried the rest wait in the queue; once it is full, the bus
/// drops events for this sink and counts them ([`WebhookStats::dropped`]), and publishing never
/// waits.
///
/// Fails, before subscribing, when the URL is not http(s), a header is not valid HTTP, or the
/// HTTP client cannot be set up. Must be called inside a tokio runtime.
///
/// ```no_run
/// # async fn example(bus: toolgate_audit::EventBus) -> Result<(), toolgate_audit::WebhookError> {
/// use toolgate_audit::{WebhookOptions, spawn_webhook_sink};
///
/// let url = "https://hooks.example.com/toolgate".parse().expect("a valid URL");
/// let mut options = WebhookOptions::new(url).header("Authorization", "Bearer s3cret");
/// options.retries = 3;
/// let stats = options.stats();
/// let sink = spawn_webhook_sink(&bus, "tools/*, */denied".parse().expect("a pattern"), options)?;
///
/// // At shutdown: no more events, then let the sink deliver what is queued.
/// drop(bus);
/// let _ = sink.await;
/// println!("{} delivered, {} lost", stats.delivered(), stats.failed() + stats.dropped());
/// # Ok(())
/// # }
/// ```
pub fn spawn_webhook_sink(
    bus: &EventBus,
    pattern: EventPattern,
    options: WebhookOptions,
) -> Result<JoinHandle<()>, WebhookError> {
    let webhook = Webhook::new(&options)?;
    let dropped = Arc::clone(&options.stats.counters.dropped);
    let subscription = bus.subscribe_counted(pattern, options.queue, dropped);
    Ok(tokio::spawn(webhook.run(subscription)))
}

// === impl WebhookOptions ===

impl WebhookOptions {
    /// POST to `url`, with no extra headers, a queue of 1024 events, 5 retries, a backoff from
    /// 500 ms up to 30 s, and 10 s per request.
    pub fn new(url: Url) -> WebhookOptions {
        WebhookOptions {
            url,
            headers: Vec::new(),
            queue: DEFAULT_QUEUE,
            retries: DEFAULT_RETRIES,
            backoff_base: DEFAULT_BACKOFF_BASE,
            backoff_max: DEFAULT_BACKOFF_MAX,
            timeout: DEFAULT_TIMEOUT,
            stats: WebhookStats::default(),
        }
    }

    /// Adds a request header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> WebhookOptions {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Every reason [`spawn_webhook_sink`] would refuse these options (the URL's scheme, the
    /// headers), found without starting anything or touching the network.
    pub fn check(&self) -> Result<(), WebhookError> {
        self.request_headers().map(drop)
    }

    /// The headers every request carries, after checking the scheme they will go over.
    fn request_headers(&self) -> Result<HeaderMap, WebhookError> {
        let host = endpoint(&self.url);
        let scheme = self.url.scheme();
        if scheme != "http" && scheme != "https" {
            return Err(WebhookError::Scheme { host, scheme: scheme.to_owned() });
        }
        let mut headers = HeaderMap::new();
        for (name, value) in &self.headers {
            let Ok(header_name) = HeaderName::from_bytes(name.as_bytes()) else {
                return Err(WebhookError::HeaderName { host, name: name.clone() });
            };
            let Ok(mut header_value) = HeaderValue::from_str(value) else {
                return Err(WebhookError::HeaderValue { host, name: name.clone() });
            };
            header_value.set_sensitive(true);
            headers.append(header_name, header_value);
        }
        Ok(headers)
    }

    /// The counts of the sink these options start. Sinks started from clones of the same
    /// options share them.
    pub fn stats(&self) -> WebhookStats {
        self.stats.clone()
    }
}

impl fmt::Debug for WebhookOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("WebhookOptions")
            .field("host", &endpoint(&self.url))
            .field("headers", &header_names)
            .field("queue", &self.queue)
            .field("retries", &self.retries)
            .field("backoff_base", &self.backoff_base)
            .field("backoff_max", &self.backoff_max)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

// === impl WebhookStats ===

impl WebhookStats {
    /// Events the webhook accepted (answered with a 2xx).
    pub fn delivered(&self) -> u64 {
        self.counters.delivered.load(Ordering::Relaxed)
    }

    /// Events given up on: refused by the webhook, or still failing after every retry.
    pub fn failed(&self) -> u64 {
        self.counters.failed.load(Ordering::Relaxed)
    }

    /// Events the bus dropped because the sink's queue was full.
    pub fn dropped(&self) -> u64 {
        self.counters.dropped.load(Ordering::Relaxed)
    }
}

impl fmt::Debug for WebhookStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookStats")
            .field("delivered", &self.delivered())
            .field("failed", &self.failed())
            .field("dropped", &self.dropped())
            .finish()
    }
}

// === impl Webhook ===

/// A running sink's settings, checked.
struct Webhook {
    client: reqwest::Client,
    url: Url,
    /// The URL's host and port: all that logs may say about it.
    host: String,
    retries: u32,
    backoff_base: Duration,
    backoff_max: Duration,
    stats: WebhookStats,
}

impl Webhook {
    fn new(options: &WebhookOptions) -> Result<Webhook, WebhookError> {
        let host = endpoint(&options.url);
        let headers = options.request_headers()?;
        // ring is the process's TLS provider unless the program has installed one already.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .default_headers(headers)
            .user_agent(concat!("toolgate/", env!("CARGO_PKG_VERSION")))
            .timeout(options.timeout)
            // A redirected POST may turn into a GET without its body, and headers meant for
            // this host would follow it: a redirect is an answer, not a destination.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|source| WebhookError::Client { host: host.clone(), source })?;
        Ok(Webhook {
            client,
            url: options.url.clone(),
            host,
            retries: options.retries,
            backoff_base: options.backoff_base,
            backoff_max: options.backoff_max,
            stats: options.stats.clone(),
        })
    }

    async fn run(self, mut subscription: Subscription) {
        while let Some(event) = subscription.recv().await {
            self.deliver(&event).await;
        }
    }

    /// Delivers `event`, retrying as [`spawn_webhook_sink`] says, or gives up on it.
    async fn deliver(&self, event: &Event) {
        let body = Bytes::from(
            serde_json::to_vec(event).expect("an event must serialize: its keys are strings"),
        );
        let mut retried = 0;
        loop {
            let failure = match self.post(body.clone()).await {
                Ok(()) => {
                    self.stats.counters.delivered.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                Err(failure) => failure,
            };
            let retryable = failure.is_retryable();
            if !retryable || retried >= self.retries {
                let failed = self.stats.counters.failed.fetch_add(1, Ordering::Relaxed) + 1;
                let message = if retryable {
                    "webhook delivery failed after every retry; dropping the event"
                } else {
                    "webhook refused the event; dropping it without retrying"
                };
                tracing::warn!(
                    host = %self.host,
                    kind = %event.kind,
                    attempts = retried + 1,
                    failed,
                    error = %failure,
                    "{message}"
                );
                return;
            }
            let delay = match failure.retry_after() {
                Some(delay) => delay.min(self.backoff_max),
                None => backoff_delay(
                    retried,
                    self.backoff_base,
                    self.backoff_max,
                    toolgate_core::backoff::random_u64(),
                ),
            };
            tracing::debug!(
                host = %self.host,
                kind = %event.kind,
                attempt = retried + 1,
                error = %failure,
                delay_ms = delay.as_millis() as u64,
                "webhook delivery failed; retrying"
            );
            tokio::time::sleep(delay).await;
            retried += 1;
        }
    }

    /// One POST of `body`.
    async fn post(&self, body: Bytes) -> Result<(), Failure> {
        let response = self
            .client
            .post(self.url.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(body)
            .send()
            .await
            // The URL may hold a secret: keep it out of the error, which is logged.
            .map_err(|error| Failure::Transport(error.without_url()))?;
        let status = response.status();
        let retry_after = retry_after(response.headers());
        discard_body(response).await;
        if status.is_success() { Ok(()) } else { Err(Failure::Status { status, retry_after }) }
    }
}

/// Why one POST did not deliver an event.
enum Failure {
    /// The webhook answered, with something other than a success.
    Status {
        status: StatusCode,
        /// The server's `Retry-After`, when it is a number of seconds.
        retry_after: Option<Duration>,
    },
    /// No complete answer: no connection, a timeout, or the connection broke. Carries no URL.
    Transport(reqwest::Error),
}

impl Failure {
    /// Whether trying again may help.
    fn is_retryable(&self) -> bool {
        match self {
            Failure::Status { status, .. } => {
                status.is_server_error() || *status == StatusCode::TOO_MANY_REQUESTS
            }
            // A builder error is a request that can never be sent.
            Failure::Transport(error) => !error.is_builder(),
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            Failure::Status { retry_after, .. } => *retry_after,
            Failure::Transport(_) => None,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Status { status, .. } => write!(f, "answered {status}"),
            Failure::Transport(error) => write!(f, "{}", toolgate_core::ErrorChain(error)),
        }
    }
}

/// `Retry-After` as a number of seconds (the HTTP-date form is ignored).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = headers.get(RETRY_AFTER)?.to_str().ok()?;
    text.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// Reads a little of the body so that the connection can serve the next event.
async fn discard_body(mut response: reqwest::Response) {
    let mut read = 0;
    while read < BODY_LIMIT {
        match response.chunk().await {
            Ok(Some(chunk)) => read += chunk.len(),
            Ok(None) | Err(_) => return,
        }
    }
}

/// `host` or `host:port`: what may be said about a webhook's URL.
fn endpoint(url: &Url) -> String {
    match (url.host_str(), url.port()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_owned(),
        (None, _) => "(no host)".to_owned(),
    }
}

#[cfg(test)]
mod tests;
