//! A fake LLM provider on 127.0.0.1, for tests of what talks to one (the `enrich` transform,
//! the agent): it answers from a [`Script`] of [`Turn`]s, records every [`Request`] it
//! receives, and can delay a turn or fail it with a status and the provider's error body.
//!
//! A turn says what the assistant answers in no provider's words (text, reasoning, tool calls,
//! usage, why it finished: [`Reply`]); each dialect module writes it as its provider does,
//! streamed (`"stream": true`) or not. Dialects served, chosen by the path:
//!
//! | dialect | path | base URL a client takes |
//! |---|---|---|
//! | OpenAI Chat Completions ([`openai`]) | `POST /v1/chat/completions` | [`FakeLlm::base_url`] (`http://127.0.0.1:PORT/v1`) |
//! | OpenAI Responses ([`responses`]) | `POST /v1/responses` | the same |
//! | Anthropic Messages ([`anthropic`]) | `POST /v1/messages` | [`FakeLlm::origin`] (`http://127.0.0.1:PORT`: Anthropic's SDKs append `/v1/messages`) |
//!
//! Errors are written in each API's error shape with its status (`429` with `Retry-After`).
//! Before the script is asked, a request is checked as the API would (its required fields;
//! the key when [`FakeLlmOptions::api_key`] is set) and refused without using a turn.
//! Streamed answers can be written with the quirks of not-quite-OpenAI servers ([`Quirk`]).
//!
//! Besides the dialects' paths, `GET /fake/requests` returns the recorded requests as a JSON
//! array of [`Request`], for tests that run the fake out of process (`toolgate-fixture
//! fake-llm`). Any other path is answered `404` with an OpenAI-style error, and recorded.
//!
//! Delays are `tokio::time::sleep`, so a test on a paused clock that runs the fake in its
//! own runtime does not wait for them.

pub mod anthropic;
pub mod openai;
pub mod responses;
mod stream;
mod turn;

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio_util::sync::{CancellationToken, DropGuard};
use toolgate_llm::tokens::Encoding;

pub use openai::ChatMessage;
pub use turn::{Answer, Finish, Quirk, Reply, ScriptedCall, TokenUsage, Turn};

/// The largest request body the fake reads.
const BODY_LIMIT: usize = 64 * 1024 * 1024;

/// Where the recorded requests are served.
pub const REQUESTS_PATH: &str = "/fake/requests";

/// Tokens OpenAI adds per message of a chat prompt, and for the reply's priming.
const TOKENS_PER_MESSAGE: usize = 3;

/// Which provider's API a request spoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Dialect {
    /// OpenAI Chat Completions (`POST /v1/chat/completions`), also spoken by most
    /// "OpenAI-compatible" servers.
    OpenaiChat,
    /// OpenAI Responses (`POST /v1/responses`).
    OpenaiResponses,
    /// Anthropic Messages (`POST /v1/messages`).
    Anthropic,
    /// A path no dialect serves.
    Unknown,
}

impl Dialect {
    /// The dialect a request to `path` with `method` speaks.
    fn of(method: &Method, path: &str) -> Dialect {
        match (method, path) {
            (&Method::POST, openai::CHAT_PATH) => Dialect::OpenaiChat,
            (&Method::POST, responses::RESPONSES_PATH) => Dialect::OpenaiResponses,
            (&Method::POST, anthropic::MESSAGES_PATH) => Dialect::Anthropic,
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

/// A tool result a request carries back to the model, in no provider's words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeenToolResult {
    /// The call it answers (Chat: `tool_call_id`; Responses: `call_id`; Anthropic:
    /// `tool_use_id`).
    pub call_id: String,
    /// Its content as text (text parts joined by newlines).
    pub content: String,
    /// Anthropic's `is_error` (always `false` in the OpenAI dialects, which have none).
    pub is_error: bool,
}

/// A tool call of an earlier assistant turn, as a request replays it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeenToolCall {
    /// Its id (Responses: `call_id`).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments: the JSON they hold (Anthropic's `input` as is; the OpenAI dialects'
    /// text parsed, or kept as a JSON string when it does not parse).
    pub arguments: Value,
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

    /// Whether the body asks for a stream (`"stream": true`).
    pub fn stream(&self) -> bool {
        self.body.get("stream").and_then(Value::as_bool) == Some(true)
    }

    /// The conversation the request carries, each message's content as text: the system
    /// prompt first (Chat: its `system`/`developer` messages; Responses: `instructions`;
    /// Anthropic: `system`), then the messages (Chat: `tool` messages too; Responses: the
    /// `input` items that have a role, or a string `input` as a user message; Anthropic:
    /// every message, its text blocks joined).
    pub fn messages(&self) -> Vec<ChatMessage> {
        match self.dialect {
            Dialect::OpenaiChat => openai::messages(&self.body),
            Dialect::OpenaiResponses => responses::messages(&self.body),
            Dialect::Anthropic => anthropic::messages(&self.body),
            Dialect::Unknown => Vec::new(),
        }
    }

    /// The text of the last message whose role is `user` and that has text.
    pub fn last_user_text(&self) -> Option<String> {
        self.messages()
            .into_iter()
            .rev()
            .find(|m| m.role == "user" && !m.content.is_empty())
            .map(|m| m.content)
    }

    /// The tool results the request carries, in order.
    pub fn tool_results(&self) -> Vec<SeenToolResult> {
        match self.dialect {
            Dialect::OpenaiChat => openai::tool_results(&self.body),
            Dialect::OpenaiResponses => responses::tool_results(&self.body),
            Dialect::Anthropic => anthropic::tool_results(&self.body),
            Dialect::Unknown => Vec::new(),
        }
    }

    /// The tool calls of earlier assistant turns the request replays, in order.
    pub fn replayed_tool_calls(&self) -> Vec<SeenToolCall> {
        match self.dialect {
            Dialect::OpenaiChat => openai::replayed_calls(&self.body),
            Dialect::OpenaiResponses => responses::replayed_calls(&self.body),
            Dialect::Anthropic => anthropic::replayed_calls(&self.body),
            Dialect::Unknown => Vec::new(),
        }
    }

    /// The names of the tools offered (Chat: `tools[].function.name`; Responses and
    /// Anthropic: `tools[].name`).
    pub fn tool_names(&self) -> Vec<String> {
        let Some(tools) = self.body.get("tools").and_then(Value::as_array) else {
            return Vec::new();
        };
        tools
            .iter()
            .filter_map(|tool| {
                tool.get("function").unwrap_or(tool).get("name").and_then(Value::as_str)
            })
            .map(str::to_owned)
            .collect()
    }
}

/// Text of a content that is a string or an array of parts with `text` (joined by newlines).
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// JSON text parsed, or kept as a JSON string when it does not parse.
fn parsed_arguments(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

/// A provider's error, which each dialect writes in its own shape (OpenAI:
/// `{"error": {"message", "type", "param", "code"}}`; Anthropic: `{"type": "error", "error":
/// {"type", "message"}}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderError {
    /// The HTTP status.
    pub status: u16,
    /// OpenAI's `type` (`invalid_request_error`, `server_error`, `requests`, ...). Anthropic's
    /// error type is the one of the status, unless this is one of Anthropic's own
    /// (`overloaded_error`, ...).
    pub kind: String,
    /// OpenAI's `code` (`rate_limit_exceeded`, `invalid_api_key`, ...), if any.
    pub code: Option<String>,
    /// OpenAI's `param`, if any.
    pub param: Option<String>,
    /// Words for a person.
    pub message: String,
    /// Seconds sent in a `Retry-After` header, if any.
    pub retry_after: Option<u64>,
}

impl ProviderError {
    /// An error with `status` and the `type` and `code` OpenAI gives that status (`429`: with
    /// `Retry-After: 1`).
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
                "Rate limit reached; try again in 1s (fake).",
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
            retry_after: (status == 429).then_some(1),
        }
    }

    /// The same, with `message`.
    pub fn with_message(mut self, message: impl Into<String>) -> ProviderError {
        self.message = message.into();
        self
    }

    /// The same, with `Retry-After: seconds`.
    pub fn with_retry_after(mut self, seconds: u64) -> ProviderError {
        self.retry_after = Some(seconds);
        self
    }

    /// Anthropic's error type for it.
    pub fn anthropic_type(&self) -> &str {
        const OWN: [&str; 7] = [
            "authentication_error",
            "permission_error",
            "not_found_error",
            "request_too_large",
            "rate_limit_error",
            "api_error",
            "overloaded_error",
        ];
        if OWN.contains(&self.kind.as_str()) {
            return &self.kind;
        }
        match self.status {
            401 => "authentication_error",
            403 => "permission_error",
            404 => "not_found_error",
            413 => "request_too_large",
            429 => "rate_limit_error",
            529 => "overloaded_error",
            500..=599 => "api_error",
            _ => "invalid_request_error",
        }
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
            let served = axum::serve(crate::http::no_delay(listener, false), app);
            if let Err(error) = served.with_graceful_shutdown(shutdown).await {
                tracing::warn!(%error, "the fake LLM stopped");
            }
        });
        Ok(FakeLlm { addr, shared, _stop: stop.drop_guard() })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL an OpenAI client takes (Chat Completions and Responses):
    /// `http://127.0.0.1:<port>/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// `http://127.0.0.1:<port>`: the base URL Anthropic's SDKs take (they append
    /// `/v1/messages`).
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
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
    axum::serve(crate::http::no_delay(listener, false), app)
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
    let refused = match dialect {
        Dialect::OpenaiChat => openai::invalid(&request),
        Dialect::OpenaiResponses => responses::invalid(&request),
        Dialect::Anthropic => anthropic::invalid(&request),
        Dialect::Unknown => Some(ProviderError {
            status: 404,
            kind: "invalid_request_error".to_owned(),
            code: None,
            param: None,
            message: format!("Invalid URL ({} {})", request.method, request.path),
            retry_after: None,
        }),
    };
    if let Some(error) = unauthorized(&shared, &request).or(refused) {
        return error_response(dialect, &error);
    }
    let turn = shared.next_turn(&request);
    if !turn.delay.is_zero() {
        tokio::time::sleep(turn.delay).await;
    }
    match turn.answer {
        Answer::Reply(reply) => match dialect {
            Dialect::OpenaiResponses => responses::reply(&request, &reply),
            Dialect::Anthropic => anthropic::reply(&request, &reply),
            _ => openai::reply(&request, &reply),
        },
        Answer::Error(error) => error_response(dialect, &error),
        Answer::Raw { status, content_type, body } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut response = (status, body).into_response();
            if let Ok(value) = HeaderValue::from_str(&content_type) {
                response.headers_mut().insert(header::CONTENT_TYPE, value);
            }
            response
        }
    }
}

/// `error` as `dialect` writes it, with `Retry-After` when it has one.
fn error_response(dialect: Dialect, error: &ProviderError) -> Response {
    let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let (body, id_header) = match dialect {
        Dialect::Anthropic => (anthropic::error_body(error), "request-id"),
        _ => (openai::error_body(error), "x-request-id"),
    };
    let mut response = json_response(status, &body, id_header);
    if let Some(seconds) = error.retry_after {
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// `body` with `status`, a request id in the header `id_header`.
fn json_response(status: StatusCode, body: &Value, id_header: &'static str) -> Response {
    let mut response = (status, axum::Json(body)).into_response();
    let request_id = format!("req_{}", uuid::Uuid::new_v4().simple());
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert(id_header, value);
    }
    response
}

/// An id as a provider makes them: `prefix` and 24 letters and digits.
fn made_up_id(prefix: &str) -> String {
    let mut id = uuid::Uuid::new_v4().simple().to_string();
    id.truncate(24);
    format!("{prefix}{id}")
}

/// The tokens `reply` reports: its own, or counted (`o200k_base`): each message of the
/// request plus 3, plus 3, as OpenAI counts chat prompts; the reply's text, reasoning and
/// calls.
fn usage(request: &Request, reply: &Reply) -> TokenUsage {
    if let Some(usage) = reply.usage {
        return usage;
    }
    let encoding = Encoding::O200kBase;
    let input = request
        .messages()
        .iter()
        .map(|m| encoding.count(&m.content) + TOKENS_PER_MESSAGE)
        .sum::<usize>()
        + TOKENS_PER_MESSAGE;
    let output = encoding.count(&reply.text)
        + reply.reasoning.as_deref().map_or(0, |text| encoding.count(text))
        + reply
            .tool_calls
            .iter()
            .map(|call| encoding.count(&call.name) + encoding.count(&call.arguments))
            .sum::<usize>();
    TokenUsage { input_tokens: input as u64, output_tokens: output as u64 }
}

/// The key `request` must carry, if the fake wants one and it is missing or wrong: the error
/// to answer instead. The OpenAI dialects take `Authorization: Bearer KEY`; Anthropic's takes
/// `x-api-key: KEY` (or a bearer token, as its SDKs send an `auth_token`).
fn unauthorized(shared: &Shared, request: &Request) -> Option<ProviderError> {
    let wanted = shared.options.api_key.as_deref()?;
    let given = match request.dialect {
        Dialect::Anthropic => request.header("x-api-key").or_else(|| request.bearer()),
        _ => request.bearer(),
    };
    let (code, message) = match (request.dialect, given) {
        (_, Some(token)) if token == wanted => return None,
        (Dialect::Anthropic, _) => (None, "invalid x-api-key"),
        (_, Some(_)) => (Some("invalid_api_key"), "Incorrect API key provided (fake)."),
        (_, None) => (None, "You didn't provide an API key (fake)."),
    };
    Some(ProviderError {
        status: StatusCode::UNAUTHORIZED.as_u16(),
        kind: "invalid_request_error".to_owned(),
        code: code.map(str::to_owned),
        param: None,
        message: message.to_owned(),
        retry_after: None,
    })
}

#[cfg(test)]
mod tests;
