//! GET and DELETE of `/mcp`, for sessions (the 2026-07-28 era has neither).
//!
//! GET opens the session's standalone stream, where notifications (list changes, resource
//! updates, log messages) arrive; with `Last-Event-ID` it resumes a stream the client lost
//! instead (the standalone one or an answer's), from the event after that one. A second GET
//! while the standalone stream is being read gets a stream of keep-alive comments only, so two
//! readers do not take it from each other in turn. Every GET stream ends after
//! `[gateway] stream_max_age`: a session whose stream is read is never idle, and a client that
//! still wants one opens it again (resuming where it was), while one that left lets its session
//! idle out. DELETE ends the session.
//!
//! With sealed session ids (replicas), streams stay on the replica that made them. A
//! `Last-Event-ID` of another replica's standalone stream opens this replica's from its start
//! (what the other sent is lost with it); one of another replica's answer stream gets `404`
//! at once, so that the client gives up on that answer (retrying a few times, at most) instead
//! of waiting for it here. A DELETE of a session this replica does not hold, whose sealed id
//! is the caller's, is `204`: nothing is held here, and the id still opens until its age.
//! With the relay (shared state on a bus), the replica that reads a session's standalone
//! stream also listens, while it does, for the notifications other replicas' copies of the
//! session relay to it (`relay`); the GET answers once it listens.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};

use super::Front;
use super::headers;
use super::post::{accepts, is_modern_header, text};
use super::reply::event_stream;
use super::session::{Resume, StreamRef};
use super::sse::EventBody;

/// `Last-Event-ID`.
const LAST_EVENT_ID: &str = "last-event-id";

/// Handles a GET.
pub(crate) async fn get(front: Arc<Front>, request: Request) -> Response {
    let (parts, _) = request.into_parts();
    let headers = &parts.headers;
    if !accepts(headers, "text/event-stream") {
        return text(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: the client must accept text/event-stream",
        );
    }
    if is_modern_header(headers) {
        return not_allowed();
    }
    let session = match front.session_of(&parts) {
        Ok(session) => session,
        Err(response) => return response,
    };
    if let Err(response) = known_version(headers) {
        return response;
    }
    let busy = session.busy();
    let closed = session.closed();
    let resumed = headers
        .get(LAST_EVENT_ID)
        .map(|last| last.to_str().map_or(Resume::NotKept, |last| session.resume(last)));
    // Whether the body reads the standalone stream (another replica's copies relay to it).
    let mut standalone_read = false;
    let body = match resumed {
        Some(Resume::Kept(stream, index)) => {
            standalone_read = matches!(stream, StreamRef::Standalone(_));
            EventBody::new(Some(stream.stream().read_after(Some(index))), closed.clone())
        }
        // A stream no longer kept: an empty stream that ends at once (an error status would
        // make an EventSource retry the same id for ever).
        Some(Resume::NotKept) => {
            tracing::debug!(session = %session.id, "a stream to resume is not kept");
            EventBody::new(Some(tokio::sync::mpsc::channel(1).1), closed.clone())
        }
        Some(Resume::Elsewhere { standalone: false }) => {
            tracing::debug!(session = %session.id, "a stream to resume is another replica's");
            let body = serde_json::json!({
                "jsonrpc": "2.0",
                "id": null,
                "error": {
                    "code": -32000,
                    "message": "the stream to resume is not on this replica: an answer's stream \
                                stays on the replica that served the request, and that answer \
                                cannot come from here; send the request again",
                },
            });
            return (StatusCode::NOT_FOUND, axum::Json(body)).into_response();
        }
        // A plain GET, or another replica's standalone stream: this replica's, from its start.
        None | Some(Resume::Elsewhere { standalone: true }) => {
            let standalone = session.standalone();
            if standalone.is_read() {
                EventBody::new(None, closed.clone())
            } else {
                standalone_read = true;
                EventBody::new(Some(standalone.read()), closed.clone())
            }
        }
    };
    let mut body = body.lasting(front.stream_max_age);
    if let Some(relay) = &front.relay
        && standalone_read
    {
        let reading = closed.child_token();
        relay.follow(session.clone(), reading.clone()).await;
        body = body.on_drop(reading);
    }
    event_stream(Body::from_stream(body.holding(busy)))
}

/// Handles a DELETE: the session ends (`204`), or was not open (`404`); with sealed ids, a
/// session of the caller's this replica does not hold is `204` too (see the module's
/// documentation).
pub(crate) async fn delete(front: Arc<Front>, request: Request) -> Response {
    let (parts, _) = request.into_parts();
    let headers = &parts.headers;
    if is_modern_header(headers) {
        return not_allowed();
    }
    if let Err(response) = known_version(headers) {
        return response;
    }
    let Some(id) = headers.get(super::post::SESSION_ID).and_then(|v| v.to_str().ok()) else {
        return text(
            StatusCode::BAD_REQUEST,
            "Bad Request: DELETE needs the Mcp-Session-Id header",
        );
    };
    let caller = super::post::caller(&parts);
    if front.sessions.close(id, caller) || front.sessions.opens(id, caller) {
        // The session is gone when the answer leaves: nothing is left to accept, so not 202
        // (which the Python SDK takes for a failure).
        StatusCode::NO_CONTENT.into_response()
    } else {
        let body = serde_json::json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": { "code": -32001, "message": "no such session (it ended or never existed)" },
        });
        (StatusCode::NOT_FOUND, axum::Json(body)).into_response()
    }
}

/// What other methods get, and GET or DELETE from a 2026-07-28 client.
pub(crate) fn not_allowed() -> Response {
    (
        StatusCode::METHOD_NOT_ALLOWED,
        [(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"))],
        "Method Not Allowed",
    )
        .into_response()
}

fn known_version(headers: &http::HeaderMap) -> Result<(), Response> {
    match headers::protocol_version(headers) {
        Err(why) => Err(text(StatusCode::BAD_REQUEST, why)),
        Ok(Some(version)) if !headers::is_known(version) => Err(text(
            StatusCode::BAD_REQUEST,
            &format!("Bad Request: unsupported MCP-Protocol-Version: {version}"),
        )),
        Ok(_) => Ok(()),
    }
}
