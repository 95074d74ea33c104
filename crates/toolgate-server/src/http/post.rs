//! A POST to `/mcp`: one JSON-RPC message from the client, read once, checked, and served.
//!
//! - `initialize` opens a session (its id in `Mcp-Session-Id`);
//! - a request that names its protocol version in `_meta` (2026-07-28) or `server/discover` is
//!   served on its own, without a session;
//! - any other request belongs to the session its `Mcp-Session-Id` names;
//! - a notification (`notifications/cancelled` cancels a request of the session) and an answer
//!   to a question toolgate asked are accepted with 202.
//!
//! What is refused and how: a client that does not accept both JSON and event streams 406, a
//! body that is not JSON 415, one over the limit 413, one that is not a JSON-RPC message 400
//! with its JSON-RPC error; a request without the session it needs 400, with one that is not
//! open 404; headers that contradict the body 400 (`-32020`). With sealed session ids, an
//! answer to a question another replica asked is relayed to it when shared state is on a bus
//! (`relay`), and 409 when it is not, or the bus is down: it cannot reach that replica then.

#![allow(deprecated)] // the session era's requests are legacy in 2026-07-28 but still spoken

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request};
use axum::response::{IntoResponse, Response};
use http::request::Parts;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use http_body_util::BodyExt as _;
use rmcp::model::GetMeta as _;
use tokio_util::sync::CancellationToken;
use toolgate_core::mcp;
use toolgate_intercept::Principal;

use super::Front;
use super::client::ClientKey;
use super::headers;
use super::listen;
use super::outbox::Outbox;
use super::relay::Unrelayed;
use super::reply::{self, Answering, json_message};
use super::session::{HttpSession, SessionRequest};
use super::sessions::Lookup;
use super::stateless::StatelessRequest;
use crate::jsonrpc::{self, Rejection};
use toolgate_gateway::link::RequestLink;
use toolgate_gateway::protocol::{self, Client, Era};

/// `Mcp-Session-Id`.
pub(crate) const SESSION_ID: &str = "mcp-session-id";

/// Handles a POST.
pub(crate) async fn post(front: Arc<Front>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    if !accepts(&parts.headers, "application/json") || !accepts(&parts.headers, "text/event-stream")
    {
        return text(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: the client must accept both application/json and text/event-stream",
        );
    }
    if !is_json(&parts.headers) {
        return text(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Unsupported Media Type: the body must be application/json",
        );
    }
    let bytes = match http_body_util::Limited::new(body, front.body_limit).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(error) if error.is::<http_body_util::LengthLimitError>() => {
            return rejected(
                StatusCode::PAYLOAD_TOO_LARGE,
                &Rejection::too_large(front.body_limit),
            );
        }
        Err(error) if crate::connections::is_body_timeout(&*error) => {
            tracing::debug!(%error, "a request body came too slowly");
            return text(StatusCode::REQUEST_TIMEOUT, &format!("Request Timeout: {error}"));
        }
        Err(error) => {
            // The client went away or sent a broken body: nobody is left to read an answer.
            tracing::debug!(%error, "reading a request body failed");
            return StatusCode::BAD_REQUEST.into_response();
        }
    };
    let message = match jsonrpc::parse_message(&bytes) {
        Ok(message) => message,
        Err(rejection) => {
            tracing::debug!(code = rejection.code.0, message = %rejection.message, "refused client input");
            return rejected(StatusCode::BAD_REQUEST, &rejection);
        }
    };
    drop(bytes);
    match message {
        mcp::ClientJsonRpcMessage::Request(request) => {
            front.request(request.id, request.request, parts).await
        }
        mcp::ClientJsonRpcMessage::Notification(notification) => {
            front.notification(notification.notification, &parts)
        }
        mcp::ClientJsonRpcMessage::Response(response) => {
            front.client_answer(response.id, Ok(response.result), &parts).await
        }
        mcp::ClientJsonRpcMessage::Error(error) => match error.id {
            Some(id) => front.client_answer(id, Err(error.error), &parts).await,
            // An error about something toolgate cannot identify: nothing to route it to.
            None => StatusCode::ACCEPTED.into_response(),
        },
    }
}

impl Front {
    async fn request(
        self: Arc<Self>,
        id: mcp::RequestId,
        request: mcp::ClientRequest,
        parts: Parts,
    ) -> Response {
        let header_version = match headers::protocol_version(&parts.headers) {
            Ok(version) => version,
            Err(why) => return text(StatusCode::BAD_REQUEST, why),
        };
        let names_version = request.get_meta().protocol_version().is_some();
        if let Some(version) = header_version
            && !names_version
            && !headers::is_known(version)
        {
            return text(
                StatusCode::BAD_REQUEST,
                &format!("Bad Request: unsupported MCP-Protocol-Version: {version}"),
            );
        }
        let refuse = |error: mcp::ErrorData| {
            json_message(
                StatusCode::BAD_REQUEST,
                &mcp::ServerJsonRpcMessage::error(error, Some(id.clone())),
            )
        };
        let standard =
            headers::check_standard_headers(&parts.headers, header_version, &request, |name| {
                self.gateway()
                    .inventory()
                    .tool_definition(name)
                    .map(|tool| tool.input_schema.clone())
            });
        if let Err(error) = standard {
            return refuse(error);
        }
        if let mcp::ClientRequest::InitializeRequest(initialize) = &request {
            let asked = initialize.params.protocol_version.as_str();
            if let Some(header) = header_version
                && header != asked
            {
                return refuse(mcp::ErrorData::invalid_request(
                    format!(
                        "the MCP-Protocol-Version header ({header}) does not match the version \
                         initialize asks for ({asked})"
                    ),
                    None,
                ));
            }
            return self.initialize(id, &initialize.params, &parts);
        }
        if let Err(error) = headers::check_meta_version(header_version, &request) {
            return refuse(error);
        }
        let stateless = names_version || matches!(request, mcp::ClientRequest::DiscoverRequest(_));
        let session = if stateless {
            None
        } else {
            match self.session_of(&parts) {
                Ok(session) => Some(session),
                Err(response) => return response,
            }
        };
        let client = Client {
            principal: caller(&parts).clone(),
            session: session.as_ref().map(|s| s.gateway_session.clone()),
            session_id: session.as_ref().map(|s| s.id.to_string()),
            address: Some(client_address(&parts)),
            negotiated: session.as_ref().map(|s| s.version.clone()),
        };
        let era = match protocol::era_of(&request, &client) {
            Ok(era) => era,
            Err(error) => {
                let status = if stateless { modern_status(&error) } else { session_status(&error) };
                return json_message(status, &mcp::ServerJsonRpcMessage::error(error, Some(id)));
            }
        };
        if let mcp::ClientRequest::SubscriptionsListenRequest(listen) = request {
            let address = ClientKey::of_caller(caller(&parts), client_address(&parts));
            return listen::listen(self, id, listen.params, &era, client, address).await;
        }
        let trace_parent = trace_parent(&parts.headers);
        self.serve(id, request, session, client, era, trace_parent).await
    }

    /// Serves a request from this task (see `reply`).
    async fn serve(
        self: Arc<Self>,
        id: mcp::RequestId,
        request: mcp::ClientRequest,
        session: Option<Arc<HttpSession>>,
        client: Client,
        era: Era,
        trace_parent: Option<opentelemetry::Context>,
    ) -> Response {
        let (outbox, delivered) = Outbox::new();
        let (link, cancel, running): (Arc<dyn RequestLink>, CancellationToken, _) = match &session {
            Some(session) => (
                Arc::new(SessionRequest { session: session.clone(), outbox }),
                session.started(&id),
                Some(Finished { session: session.clone(), id: id.clone(), _busy: session.busy() }),
            ),
            None => {
                (Arc::new(StatelessRequest::new(&request, outbox)), CancellationToken::new(), None)
            }
        };
        let dispatcher = self.dispatcher.clone();
        let to_serve = protocol::Request { id: id.clone(), request, link, cancel: cancel.clone() };
        let modern = era.modern;
        let serving = Box::pin(async move {
            let _running = running;
            let answer = dispatcher.answer(&client, &era, to_serve);
            match trace_parent {
                // The parent of the request's span when its `_meta` names none.
                Some(parent) => {
                    opentelemetry::context::FutureExt::with_context(answer, parent).await
                }
                None => answer.await,
            }
        });
        let answering = Answering {
            id,
            session,
            cancel,
            shutdown: self.shutdown.clone(),
            status_of: if modern { modern_status } else { session_status },
            queue: self.stream_queue,
        };
        reply::reply(serving, delivered, answering).await
    }

    /// `initialize`: a new session, or why none could be opened.
    fn initialize(
        &self,
        id: mcp::RequestId,
        params: &mcp::InitializeRequestParams,
        parts: &Parts,
    ) -> Response {
        let version = protocol::negotiate(&params.protocol_version);
        let owner = caller(parts).clone();
        let key = ClientKey::of_caller(&owner, client_address(parts));
        let session = match self.sessions.open(owner, key, params, version) {
            Ok(session) => session,
            Err(full) => {
                let error = mcp::ErrorData::new(mcp::ErrorCode(-32000), full.to_string(), None);
                let status = full.status();
                return json_message(status, &mcp::ServerJsonRpcMessage::error(error, Some(id)));
            }
        };
        self.gateway().sessions().add(session.gateway_session.clone());
        let result = protocol::initialize(self.gateway(), &params.protocol_version);
        let mut response = json_message(
            StatusCode::OK,
            &mcp::ServerJsonRpcMessage::response(mcp::ServerResult::InitializeResult(result), id),
        );
        match HeaderValue::from_str(&session.id) {
            Ok(value) => {
                response.headers_mut().insert(SESSION_ID, value);
            }
            Err(_) => unreachable!("session ids are visible ASCII"),
        }
        response
    }

    /// The open session a request names, or the answer to a request without one. A session
    /// opened by another principal is not found (404), as one that never existed. A sealed id
    /// of a session this replica does not hold opens it here (`sessions`), unless there is no
    /// room for it (503 or 429, as for `initialize`).
    pub(crate) fn session_of(&self, parts: &Parts) -> Result<Arc<HttpSession>, Response> {
        let Some(id) = parts.headers.get(SESSION_ID) else {
            return Err(text(
                StatusCode::BAD_REQUEST,
                "Bad Request: this request needs the Mcp-Session-Id header (initialize first)",
            ));
        };
        let caller = caller(parts);
        let found = match id.to_str() {
            Ok(id) => {
                let client = ClientKey::of_caller(caller, client_address(parts));
                self.sessions.find(id, caller, client)
            }
            Err(_) => Lookup::Unknown,
        };
        match found {
            Lookup::Held(session) => Ok(session),
            Lookup::Reopened(session) => {
                self.gateway().sessions().add(session.gateway_session.clone());
                Ok(session)
            }
            Lookup::NoRoom(full) => {
                let error = mcp::ErrorData::new(mcp::ErrorCode(-32000), full.to_string(), None);
                Err(json_message(
                    full.status(),
                    &mcp::JsonRpcMessage::Error(mcp::JsonRpcError::new(None, error)),
                ))
            }
            Lookup::Unknown => {
                let body = serde_json::json!({
                    "jsonrpc": "2.0",
                    "id": null,
                    "error": { "code": -32001, "message": "no such session (it ended or never existed); initialize again" },
                });
                Err((StatusCode::NOT_FOUND, axum::Json(body)).into_response())
            }
        }
    }

    /// A notification: `notifications/cancelled` cancels the request it names; the others
    /// need nothing from the gateway.
    fn notification(&self, notification: mcp::ClientNotification, parts: &Parts) -> Response {
        if is_modern_header(&parts.headers) && !parts.headers.contains_key(SESSION_ID) {
            // A 2026-07-28 client cancels by closing the request's stream.
            return StatusCode::ACCEPTED.into_response();
        }
        let session = match self.session_of(parts) {
            Ok(session) => session,
            Err(response) => return response,
        };
        if let mcp::ClientNotification::CancelledNotification(cancelled) = &notification
            && let Some(id) = &cancelled.params.request_id
        {
            session.cancel(id);
        }
        StatusCode::ACCEPTED.into_response()
    }

    /// The client's answer to a question toolgate asked in its session: to this copy of the
    /// session, or relayed to the replica whose copy asked it.
    async fn client_answer(
        &self,
        id: mcp::RequestId,
        answer: Result<mcp::ClientResult, mcp::ErrorData>,
        parts: &Parts,
    ) -> Response {
        if !parts.headers.contains_key(SESSION_ID) {
            let error = mcp::ErrorData::invalid_request(
                "an answer without a session answers nothing: toolgate asks 2026-07-28 clients \
                 through input_required results",
                None,
            );
            return json_message(
                StatusCode::BAD_REQUEST,
                &mcp::JsonRpcMessage::Error(mcp::JsonRpcError::new(None, error)),
            );
        }
        let session = match self.session_of(parts) {
            Ok(session) => session,
            Err(response) => return response,
        };
        if !session.asked_elsewhere(&id) {
            session.answered(&id, answer);
            return StatusCode::ACCEPTED.into_response();
        }
        let why = match (&self.relay, session.relay_name()) {
            (Some(relay), Some(name)) => match relay.answer(name, &id, answer).await {
                Ok(()) => {
                    tracing::debug!(session = %session.id, %id, "an answer relayed to the replica that asked");
                    return StatusCode::ACCEPTED.into_response();
                }
                Err(Unrelayed::TooLarge(too_large)) => {
                    let error = mcp::ErrorData::invalid_request(
                        format!(
                            "the answer to question {id} cannot reach the replica that asked it: \
                             {too_large}; the call that asked it gets an error instead"
                        ),
                        None,
                    );
                    return json_message(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        &mcp::JsonRpcMessage::Error(mcp::JsonRpcError::new(None, error)),
                    );
                }
                Err(Unrelayed::Bus(error)) => format!(
                    "the bus between replicas is down ({})",
                    toolgate_core::ErrorChain(&error)
                ),
            },
            _ => "questions do not travel between replicas without shared state".to_owned(),
        };
        tracing::debug!(session = %session.id, %id, "an answer to another replica's question");
        let error = mcp::ErrorData::invalid_request(
            format!(
                "no question {id} was asked on this replica: another replica asked it, and the \
                 answer cannot reach it from here ({why}); the call that asked it ends at its \
                 timeout"
            ),
            None,
        );
        json_message(
            StatusCode::CONFLICT,
            &mcp::JsonRpcMessage::Error(mcp::JsonRpcError::new(None, error)),
        )
    }
}

/// A request of a session, while it runs: its cancellation is forgotten when it ends, however
/// it ends, and the session is not idle.
struct Finished {
    session: Arc<HttpSession>,
    id: mcp::RequestId,
    _busy: super::session::Busy,
}

impl Drop for Finished {
    fn drop(&mut self) {
        self.session.finished(&self.id);
    }
}

/// A session's errors are answered with 200, as before 2026-07-28.
fn session_status(_: &mcp::ErrorData) -> StatusCode {
    StatusCode::OK
}

/// 2026-07-28 maps some errors to HTTP statuses: a version, capability or header problem and
/// malformed metadata are bad requests, an unknown method is not found.
fn modern_status(error: &mcp::ErrorData) -> StatusCode {
    match error.code {
        mcp::ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | mcp::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | mcp::ErrorCode::HEADER_MISMATCH => StatusCode::BAD_REQUEST,
        mcp::ErrorCode::INVALID_PARAMS if protocol::is_malformed_meta(error) => {
            StatusCode::BAD_REQUEST
        }
        mcp::ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

/// Whether the request's `MCP-Protocol-Version` names 2026-07-28 or later.
pub(crate) fn is_modern_header(headers: &HeaderMap) -> bool {
    headers::protocol_version(headers)
        .ok()
        .flatten()
        .is_some_and(|v| v >= mcp::ProtocolVersion::V_2026_07_28.as_str())
}

/// The address of the client, for the bounds per client and the pipeline.
/// Who sent the request, as `endpoint` found (anonymous when nothing was put there, which
/// only a test of a handler alone does).
/// The trace context of the HTTP `traceparent` and `tracestate` headers, with tracing on.
fn trace_parent(headers: &HeaderMap) -> Option<opentelemetry::Context> {
    use opentelemetry::trace::TraceContextExt as _;
    if !toolgate_core::trace::enabled() {
        return None;
    }
    let parent = headers.get("traceparent")?.to_str().ok()?;
    let state = headers.get("tracestate").and_then(|value| value.to_str().ok());
    let span = toolgate_core::trace::parse(parent, state)?;
    Some(opentelemetry::Context::new().with_remote_span_context(span))
}

pub(crate) fn caller(parts: &Parts) -> &Principal {
    static NOBODY: std::sync::LazyLock<Principal> = std::sync::LazyLock::new(Principal::anonymous);
    parts.extensions.get::<Principal>().unwrap_or(&NOBODY)
}

fn client_address(parts: &Parts) -> IpAddr {
    parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V4(Ipv4Addr::LOCALHOST), |ConnectInfo(address)| address.ip())
}

/// Whether the client accepts `media` (by `Accept`, with `q=0` excluding, and `*/*` or
/// `type/*` accepting).
pub(crate) fn accepts(headers: &HeaderMap, media: &str) -> bool {
    let (kind, _) = media.split_once('/').unwrap_or((media, ""));
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|entry| {
            let mut parts = entry.split(';');
            let essence = parts.next().unwrap_or("").trim();
            let excluded = parts.any(|p| {
                p.split_once('=').is_some_and(|(name, value)| {
                    name.trim().eq_ignore_ascii_case("q")
                        && value.trim().parse::<f64>().is_ok_and(|q| q == 0.0)
                })
            });
            let matches = essence.eq_ignore_ascii_case(media)
                || essence == "*/*"
                || essence.strip_suffix("/*").is_some_and(|k| k.eq_ignore_ascii_case(kind));
            matches && !excluded
        })
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

pub(crate) fn text(status: StatusCode, message: &str) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], message.to_owned())
        .into_response()
}

fn rejected(status: StatusCode, rejection: &Rejection) -> Response {
    let body = serde_json::to_vec(&rejection.to_json()).unwrap_or_default();
    (status, [(header::CONTENT_TYPE, "application/json")], Body::from(body)).into_response()
}

#[cfg(test)]
mod props;

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, value.parse().unwrap());
        headers
    }

    #[test]
    fn accept_is_read_as_clients_write_it() {
        let both = accept("application/json, text/event-stream");
        assert!(accepts(&both, "application/json") && accepts(&both, "text/event-stream"));
        assert!(accepts(&accept("*/*"), "text/event-stream"));
        assert!(accepts(&accept("text/*;q=0.5"), "text/event-stream"));
        assert!(!accepts(&accept("application/json"), "text/event-stream"));
        assert!(!accepts(&accept("text/event-stream;q=0, application/json"), "text/event-stream"));
        assert!(!accepts(&accept("text/event-stream;q=0.000"), "text/event-stream"));
        assert!(!accepts(&accept("text/event-stream; q=0"), "text/event-stream"));
        assert!(accepts(&accept("text/event-stream;q=0.001"), "text/event-stream"));
        assert!(!accepts(&HeaderMap::new(), "application/json"));
    }

    #[test]
    fn only_a_json_body_is_json() {
        let content_type = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::CONTENT_TYPE, value.parse().unwrap());
            is_json(&headers)
        };
        assert!(content_type("application/json"));
        assert!(content_type("application/json; charset=utf-8"));
        assert!(content_type("Application/JSON"));
        assert!(!content_type("text/plain"));
        assert!(!content_type("application/json-seq"));
        assert!(!is_json(&HeaderMap::new()), "no Content-Type at all");
    }

    #[test]
    fn modern_errors_get_their_statuses_and_session_errors_200() {
        let error = |code| mcp::ErrorData::new(mcp::ErrorCode(code), "x", None);
        assert_eq!(modern_status(&error(-32601)), StatusCode::NOT_FOUND);
        assert_eq!(modern_status(&error(-32020)), StatusCode::BAD_REQUEST);
        assert_eq!(modern_status(&error(-32022)), StatusCode::BAD_REQUEST);
        assert_eq!(modern_status(&error(-32602)), StatusCode::OK, "ordinary bad parameters");
        assert_eq!(modern_status(&protocol::malformed_meta(&["x"])), StatusCode::BAD_REQUEST);
        assert_eq!(session_status(&error(-32601)), StatusCode::OK);
    }
}
