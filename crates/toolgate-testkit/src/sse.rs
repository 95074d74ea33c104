//! The fixture on the legacy HTTP+SSE transport (protocol 2024-11-05), which rmcp no longer
//! ships, so this is our own:
//!
//! - `GET /sse` opens a session: the first event is `endpoint` with data
//!   `/message?sessionId=<id>`; every server→client message follows as a `message` event.
//! - `POST /message?sessionId=<id>` carries one client→server JSON-RPC message: `202`,
//!   `404` for an unknown session, `400` for a body that is not JSON-RPC.
//! - Closing the GET ends the session.
//!
//! Each session runs its own [`Fixture`] over a pair of channels (rmcp takes any
//! `(Sink, Stream)` pair as a transport); the sessions share one [`FixtureHub`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::{Stream, StreamExt as _};
use rmcp::ServiceExt as _;
use rmcp::model as mcp;
use serde::Deserialize;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;

use crate::fixture::{Fixture, FixtureOptions};
use crate::http::delay_start;
use crate::hub::FixtureHub;

/// Messages buffered per direction and session.
const CHANNEL_CAPACITY: usize = 64;

/// Serves `GET /sse` and `POST /message` on `listener` until `shutdown` is cancelled.
///
/// Waits `opts.startup_delay` before accepting connections (they queue meanwhile).
pub async fn serve_sse(
    listener: TcpListener,
    shutdown: CancellationToken,
    opts: FixtureOptions,
) -> anyhow::Result<()> {
    if !delay_start(&opts, &shutdown).await {
        return Ok(());
    }
    let nagle = opts.nagle;
    let state = Arc::new(Shared {
        opts: Arc::new(opts),
        hub: FixtureHub::new(),
        sessions: Mutex::default(),
        shutdown: shutdown.clone(),
    });
    let app = axum::Router::new()
        .route("/sse", axum::routing::get(open_session))
        .route("/message", axum::routing::post(post_message))
        .with_state(state);
    axum::serve(crate::http::no_delay(listener, nagle), app)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await?;
    Ok(())
}

/// State shared by every request.
struct Shared {
    opts: Arc<FixtureOptions>,
    hub: FixtureHub,
    /// Live sessions: where their client→server messages go.
    sessions: Mutex<HashMap<String, mpsc::Sender<mcp::ClientJsonRpcMessage>>>,
    shutdown: CancellationToken,
}

/// Ends its session when the event stream holding it is dropped.
struct SessionGuard {
    shared: Arc<Shared>,
    id: String,
    ct: CancellationToken,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        // Dropping the sender ends the server's inbound stream; the token covers a session
        // still waiting for its handshake.
        self.shared.sessions.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.id);
        self.ct.cancel();
        tracing::debug!(session = %self.id, "sse session closed");
    }
}

#[derive(Debug, Deserialize)]
struct MessageQuery {
    #[serde(rename = "sessionId")]
    session_id: String,
}

/// `GET /sse`: starts a session and streams its server→client messages.
async fn open_session(
    State(shared): State<Arc<Shared>>,
) -> Sse<impl Stream<Item = Result<Event, axum::Error>>> {
    let id = uuid::Uuid::new_v4().simple().to_string();
    let (to_server, from_client) = mpsc::channel(CHANNEL_CAPACITY);
    let (to_client, from_server) = futures::channel::mpsc::channel(CHANNEL_CAPACITY);
    shared.sessions.lock().unwrap_or_else(PoisonError::into_inner).insert(id.clone(), to_server);

    let ct = shared.shutdown.child_token();
    let fixture = Fixture::with_hub(shared.opts.clone(), shared.hub.clone());
    tokio::spawn(run_session(fixture, to_client, from_client, ct.clone(), id.clone()));
    tracing::debug!(session = %id, "sse session opened");

    let endpoint = Event::default().event("endpoint").data(format!("/message?sessionId={id}"));
    let guard = SessionGuard { shared, id, ct: ct.clone() };
    let messages = from_server.map(move |message: mcp::ServerJsonRpcMessage| {
        let _session = &guard;
        Event::default().event("message").json_data(message)
    });
    let events = futures::stream::once(std::future::ready(Ok(endpoint)))
        .chain(messages)
        .take_until(ct.cancelled_owned());
    Sse::new(events).keep_alive(KeepAlive::default())
}

/// Runs one session's fixture until the client goes away or the server shuts down.
async fn run_session(
    fixture: Fixture,
    to_client: futures::channel::mpsc::Sender<mcp::ServerJsonRpcMessage>,
    from_client: mpsc::Receiver<mcp::ClientJsonRpcMessage>,
    ct: CancellationToken,
    id: String,
) {
    let transport = (to_client, ReceiverStream::new(from_client));
    match fixture.serve_with_ct(transport, ct).await {
        Ok(running) => match running.waiting().await {
            Ok(reason) => tracing::debug!(session = %id, ?reason, "sse session ended"),
            Err(error) => tracing::warn!(session = %id, %error, "sse session task failed"),
        },
        Err(error) => {
            tracing::debug!(session = %id, %error, "sse session ended before its handshake")
        }
    }
}

/// `POST /message?sessionId=<id>`: hands one JSON-RPC message to the session.
async fn post_message(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<MessageQuery>,
    body: Bytes,
) -> Response {
    let session = shared
        .sessions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&query.session_id)
        .cloned();
    let Some(to_server) = session else {
        return (StatusCode::NOT_FOUND, "unknown session").into_response();
    };
    let message = match serde_json::from_slice::<mcp::ClientJsonRpcMessage>(&body) {
        Ok(message) => message,
        Err(error) => {
            return (StatusCode::BAD_REQUEST, format!("not a JSON-RPC message: {error}"))
                .into_response();
        }
    };
    if to_server.send(message).await.is_err() {
        return (StatusCode::NOT_FOUND, "session closed").into_response();
    }
    (StatusCode::ACCEPTED, "Accepted").into_response()
}
