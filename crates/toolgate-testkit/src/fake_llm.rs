//! A fake LLM provider on 127.0.0.1, for tests of what talks to one (the `enrich` transform,
//! later the agent): it answers from a [`Script`] of [`Turn`]s, records every [`Request`] it
//! receives, and can delay a turn or fail it with a status and the provider's error body.
//!
//! A turn says what the assistant answers in no provider's words; each dialect module writes
//! it as its provider does. Dialects served:
//!
//! - OpenAI Chat Completions (`openai`): `POST /v1/chat/completions`, non-streaming.
//!
//! Besides the dialects' paths, `GET /fake/requests` returns the recorded requests as a JSON
//! array of [`Request`], for tests that run the fake out of process (`toolgate-fixture
//! fake-llm`). Any other path is answered `404` with an OpenAI-style error, and recorded.
//!
//! Delays are `tokio::time::sleep`, so a test on a paused clock that runs the fake in its
//! own runtime does not wait for them.

mod openai;

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio_util::sync::{CancellationToken, DropGuard};

pub use openai::ChatMessage;

/// The largest request body the fake reads.
const BODY_LIMIT: usize = 64 * 1024 * 1024;

/// Where the recorded requests are served.
pub const REQUESTS_PATH: &str = "/fake/requests";

/// Which provider's API a request spoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Dialect {
    /// OpenAI Chat Completions (`POST /v1/chat/completions`), also spoken by most
    /// "OpenAI-compatible" servers.
    OpenaiChat,
    /// A path no dialect serves.
    Unknown,
}

impl Dialect {
    /// The dialect a request to `path` with `method` speaks.
    fn of(method: &Method, path: &str) -> Dialect {
        match (method, path) {
            (&Method::POST, openai::CHAT_PATH) => Dialect::OpenaiChat,
            _ => Dialect::Unknown,
        }
    }
}

/// One request the fake received, as it arrived.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The API it spoke.
    pub dialect: Dialect,
    /// `POST`, ...
    pub method: String,
    /// The path and query.
    pub path: String,
    /// Every header, names in lower case; repeated ones joined with `, `.
    pub headers: BTreeMap<String, String>,
    /// The body as JSON; `null` when it is not JSON (see [`Request::raw_body`]).
    pub body: Value,
    /// The body as text (lossy UTF-8).
    pub raw_body: String,
}

impl Request {
    /// The value of the header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(&name.to_ascii_lowercase()).map(String::as_str)
    }

    /// The token of an `Authorization: Bearer <token>` header.
    pub fn bearer(&self) -> Option<&str> {
        let value = self.header("authorization")?;
        let (scheme, token) = value.split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then_some(token.trim())
    }

    /// The body's `model`.
    pub fn model(&self) -> Option<&str> {
        self.body.get("model")?.as_str()
    }

    /// The conversation the request carries (OpenAI Chat Completions: `messages`), each
    /// message's content as text.
    pub fn messages(&self) -> Vec<ChatMessage> {
        match self.dialect {
            Dialect::OpenaiChat => openai::messages(&self.body),
            Dialect::Unknown => Vec::new(),
        }
    }

    /// The text of the last message whose role is `user`.
    pub fn last_user_text(&self) -> Option<String> {
        self.messages().into_iter().rev().find(|m| m.role == "user").map(|m| m.content)
    }
}

/// A provider's error, which each dialect writes in its own shape (OpenAI:
/// `{"error": {"message", "type", "param", "code"}}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderError {
    /// The HTTP status.
    pub status: u16,
    /// OpenAI's `type` (`invalid_request_error`, `server_error`, `requests`, ...).
    pub kind: String,
    /// OpenAI's `code` (`rate_limit_exceeded`, `invalid_api_key`, ...), if any.
    pub code: Option<String>,
    /// OpenAI's `param`, if any.
    pub param: Option<String>,
    /// Words for a person.
    pub message: String,
}

impl ProviderError {
    /// An error with `status` and the `type` and `code` OpenAI gives that status.
    pub fn for_status(status: u16) -> ProviderError {
        let (kind, code, message) = match status {
            400 => ("invalid_request_error", None, "The request was not valid (fake)."),
            401 => ("invalid_request_error", Some("invalid_api_key"), "Incorrect API key (fake)."),
            403 => (
                "invalid_request_error",
                Some("unsupported_country_region_territory"),
                "Not allowed (fake).",
            ),
            404 => (
                "invalid_request_error",
                Some("model_not_found"),
                "The model does not exist (fake).",
            ),
            429 => (
                "requests",
                Some("rate_limit_exceeded"),
                "Rate limit reached; try again in 20s (fake).",
            ),
            500..=599 => (
                "server_error",
                None,
                "The server had an error while processing the request (fake).",
            ),
            _ => ("invalid_request_error", None, "The request failed (fake)."),
        };
        ProviderError {
            status,
            kind: kind.to_owned(),
            code: code.map(str::to_owned),
            param: None,
            message: message.to_owned(),
        }
    }

    /// The same, with `message`.
    pub fn with_message(mut self, message: impl Into<String>) -> ProviderError {
        self.message = message.into();
        self
    }
}

/// What one turn of the assistant is, in no provider's words.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Answer {
    /// The assistant says `text`.
    Text {
        /// What it says.
        text: String,
        /// Why it stopped (`stop`, `length`, ...).
        finish_reason: String,
    },
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

/// One answer of the fake, and how long it waits before giving it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// Waited (on tokio's clock) before answering.
    pub delay: Duration,
    /// The answer.
    pub answer: Answer,
}

impl Turn {
    /// The assistant answers `text`, finishing with `stop`.
    pub fn text(text: impl Into<String>) -> Turn {
        Turn::from(Answer::Text { text: text.into(), finish_reason: "stop".to_owned() })
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

    /// The same text, finishing for `reason` (`length`: cut by `max_tokens`).
    pub fn finish(mut self, reason: impl Into<String>) -> Turn {
        if let Answer::Text { finish_reason, .. } = &mut self.answer {
            *finish_reason = reason.into();
        }
        self
    }
}

impl From<Answer> for Turn {
    fn from(answer: Answer) -> Turn {
        Turn { delay: Duration::ZERO, answer }
    }
}

/// A turn made from the request it answers.
pub type Responder = Arc<dyn Fn(&Request) -> Turn + Send + Sync>;

/// What the fake answers: queued turns in order, then what [`Script::then_always`] or
/// [`Script::then_respond`] says (by default an error `500` with the code
/// `script_exhausted`, so that a test that makes one request too many sees it).
#[derive(Clone)]
pub struct Script {
    queue: VecDeque<Turn>,
    then: Then,
}

#[derive(Clone)]
enum Then {
    Exhausted,
    Always(Turn),
    Respond(Responder),
}

impl Default for Script {
    fn default() -> Script {
        Script { queue: VecDeque::new(), then: Then::Exhausted }
    }
}

impl fmt::Debug for Script {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let then = match &self.then {
            Then::Exhausted => "exhausted",
            Then::Always(_) => "always",
            Then::Respond(_) => "respond",
        };
        f.debug_struct("Script").field("queue", &self.queue).field("then", &then).finish()
    }
}

impl Script {
    /// `turns`, one per request, in order.
    pub fn turns(turns: impl IntoIterator<Item = Turn>) -> Script {
        Script { queue: turns.into_iter().collect(), then: Then::Exhausted }
    }

    /// `turn` for every request.
    pub fn always(turn: Turn) -> Script {
        Script::default().then_always(turn)
    }

    /// What `respond` makes of each request.
    pub fn respond(respond: impl Fn(&Request) -> Turn + Send + Sync + 'static) -> Script {
        Script::default().then_respond(respond)
    }

    /// The same; once the queue is empty, `turn` for every request.
    pub fn then_always(mut self, turn: Turn) -> Script {
        self.then = Then::Always(turn);
        self
    }

    /// The same; once the queue is empty, what `respond` makes of each request.
    pub fn then_respond(
        mut self,
        respond: impl Fn(&Request) -> Turn + Send + Sync + 'static,
    ) -> Script {
        self.then = Then::Respond(Arc::new(respond));
        self
    }

    fn next(&mut self, request: &Request, answered: usize) -> Turn {
        if let Some(turn) = self.queue.pop_front() {
            return turn;
        }
        match &self.then {
            Then::Always(turn) => turn.clone(),
            Then::Respond(respond) => respond(request),
            Then::Exhausted => Turn::error(ProviderError {
                code: Some("script_exhausted".to_owned()),
                ..ProviderError::for_status(500).with_message(format!(
                    "the fake's script has no turn left after {answered} answers"
                ))
            }),
        }
    }
}

/// How the fake behaves besides its script.
#[derive(Debug, Clone, Default)]
pub struct FakeLlmOptions {
    /// When set, requests must carry `Authorization: Bearer <api_key>`; others are answered
    /// `401` (the script is not consulted).
    pub api_key: Option<String>,
}

/// What the server's handlers share.
struct Shared {
    script: Mutex<Script>,
    options: FakeLlmOptions,
    /// Every request received, in order; the watch counts them.
    requests: Mutex<Vec<Request>>,
    received: tokio::sync::watch::Sender<usize>,
    /// Turns consumed.
    answered: Mutex<usize>,
}

impl Shared {
    fn record(&self, request: Request) {
        let count = {
            let mut requests = self.requests.lock().unwrap_or_else(PoisonError::into_inner);
            requests.push(request);
            requests.len()
        };
        self.received.send_replace(count);
    }

    fn next_turn(&self, request: &Request) -> Turn {
        let mut answered = self.answered.lock().unwrap_or_else(PoisonError::into_inner);
        let turn =
            self.script.lock().unwrap_or_else(PoisonError::into_inner).next(request, *answered);
        *answered += 1;
        turn
    }
}

/// A fake provider serving in this process on 127.0.0.1, stopped when dropped.
pub struct FakeLlm {
    addr: SocketAddr,
    shared: Arc<Shared>,
    _stop: DropGuard,
}

impl fmt::Debug for FakeLlm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeLlm").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl FakeLlm {
    /// Starts a fake answering from `script` on a free port of 127.0.0.1.
    pub async fn start(script: Script) -> std::io::Result<FakeLlm> {
        FakeLlm::start_with(script, FakeLlmOptions::default()).await
    }

    /// The same, with `options`.
    pub async fn start_with(script: Script, options: FakeLlmOptions) -> std::io::Result<FakeLlm> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Shared::new(script, options);
        let stop = CancellationToken::new();
        let app = router(shared.clone());
        let shutdown = stop.clone().cancelled_owned();
        tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).with_graceful_shutdown(shutdown).await {
                tracing::warn!(%error, "the fake LLM stopped");
            }
        });
        Ok(FakeLlm { addr, shared, _stop: stop.drop_guard() })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL an OpenAI client takes: `http://127.0.0.1:<port>/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.requests.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Waits until at least `count` requests have been received.
    pub async fn received(&self, count: usize) {
        let mut received = self.shared.received.subscribe();
        received.wait_for(|n| *n >= count).await.expect("the sender lives in self");
    }

    /// Queues `turn` after the turns still queued.
    pub fn push(&self, turn: Turn) {
        self.shared.script.lock().unwrap_or_else(PoisonError::into_inner).queue.push_back(turn);
    }
}

impl Shared {
    fn new(script: Script, options: FakeLlmOptions) -> Arc<Shared> {
        Arc::new(Shared {
            script: Mutex::new(script),
            options,
            requests: Mutex::default(),
            received: tokio::sync::watch::Sender::new(0),
            answered: Mutex::new(0),
        })
    }
}

/// Serves the fake on `listener` until `shutdown` is cancelled (for `toolgate-fixture
/// fake-llm`).
pub async fn serve_fake_llm(
    listener: TcpListener,
    shutdown: CancellationToken,
    script: Script,
    options: FakeLlmOptions,
) -> std::io::Result<()> {
    let app = router(Shared::new(script, options));
    axum::serve(crate::http::no_delay(listener), app)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
}

fn router(shared: Arc<Shared>) -> axum::Router {
    axum::Router::new()
        .route(REQUESTS_PATH, axum::routing::get(list_requests))
        .fallback(receive)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(shared)
}

async fn list_requests(State(shared): State<Arc<Shared>>) -> Response {
    let requests = shared.requests.lock().unwrap_or_else(PoisonError::into_inner).clone();
    axum::Json(requests).into_response()
}

/// Records a request and answers it in its dialect.
async fn receive(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path_and_query().map_or_else(|| uri.path().to_owned(), |p| p.to_string());
    let dialect = Dialect::of(&method, uri.path());
    let mut recorded = BTreeMap::<String, String>::new();
    for (name, value) in &headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        recorded
            .entry(name.as_str().to_owned())
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(&value);
            })
            .or_insert(value);
    }
    let request = Request {
        dialect,
        method: method.to_string(),
        path,
        headers: recorded,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        raw_body: String::from_utf8_lossy(&body).into_owned(),
    };
    shared.record(request.clone());
    match dialect {
        Dialect::OpenaiChat => openai::answer(&shared, &request).await,
        Dialect::Unknown => openai::error_response(&ProviderError {
            status: 404,
            kind: "invalid_request_error".to_owned(),
            code: None,
            param: None,
            message: format!("Invalid URL ({} {})", request.method, request.path),
        }),
    }
}

/// The bearer token `request` must carry, if the fake wants one and it is missing or wrong:
/// the error to answer instead.
fn unauthorized(shared: &Shared, request: &Request) -> Option<ProviderError> {
    let wanted = shared.options.api_key.as_deref()?;
    let message = match request.bearer() {
        Some(token) if token == wanted => return None,
        Some(_) => "Incorrect API key provided (fake).",
        None => "You didn't provide an API key (fake).",
    };
    Some(ProviderError {
        status: StatusCode::UNAUTHORIZED.as_u16(),
        kind: "invalid_request_error".to_owned(),
        code: request.bearer().map(|_| "invalid_api_key".to_owned()),
        param: None,
        message: message.to_owned(),
    })
}

#[cfg(test)]
mod tests;
