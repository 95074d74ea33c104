//! The answer to a POSTed request: one JSON body when nothing comes before the answer, an
//! event stream as soon as something does (progress, a question to the client).
//!
//! The request is served from the request's own task: the future that serves it is polled
//! right here until it is done (the usual case: one `application/json` body, no other task
//! involved) or until it sends something before its answer. Only then is it moved into a task
//! of its own, which writes every message into an [`EventStream`] that the response body reads.
//! A session's stream is kept, so a client that loses it can resume it with `Last-Event-ID`,
//! and the request goes on when the client goes away (the specification: a disconnection is
//! not a cancellation). A 2026-07-28 request has no session: closing its stream is how its
//! client cancels it, so the request is cancelled then.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::response::{IntoResponse, Response};
use http::{HeaderName, HeaderValue, StatusCode, header};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolgate_core::mcp;

use super::outbox::Sent;
use super::session::HttpSession;
use super::sse::{EventBody, EventStream, Offered, Queue, Urgency, event};
use toolgate_gateway::protocol::{Answer, written_message as message};

/// What serving a request comes to.
pub(crate) type Served = Result<Answer, mcp::ErrorData>;

/// Serving a request, as a future that can move to another task.
pub(crate) type Serving = Pin<Box<dyn Future<Output = Served> + Send + 'static>>;

/// Where the answer goes besides its body.
pub(crate) struct Answering {
    pub(crate) id: mcp::RequestId,
    /// The session of a handshake-era request (its stream is kept; going away does not
    /// cancel); `None` for a 2026-07-28 request.
    pub(crate) session: Option<Arc<HttpSession>>,
    /// Cancels the request (for a 2026-07-28 request whose client went away).
    pub(crate) cancel: CancellationToken,
    /// Ends every stream at shutdown.
    pub(crate) shutdown: CancellationToken,
    /// The HTTP status of an error answer sent as JSON.
    pub(crate) status_of: fn(&mcp::ErrorData) -> StatusCode,
    /// Events that may wait for the client reading the answer's stream.
    pub(crate) queue: usize,
}

/// Serves `serving` from this task, answering with JSON or, once it sends something first, an
/// event stream.
pub(crate) async fn reply(
    serving: Serving,
    mut outbox: mpsc::UnboundedReceiver<Sent>,
    answering: Answering,
) -> Response {
    let mut running = Running { serving: Some(serving), answering: Some(answering) };
    let first = tokio::select! {
        biased;
        served = running.poll_serving() => {
            let answering = running.answering.take().expect("answering is set until taken");
            if outbox.is_empty() {
                return json(&answering, served);
            }
            // Progress sent right before the answer: it must come first.
            return stream_ended(answering, outbox, served);
        }
        // An outbox closed before the answer (its sender dropped first) sent nothing: the
        // branch is off then, and the answer is JSON, with its own status.
        Some(first) = outbox.recv() => first,
    };
    let (Some(serving), Some(answering)) = (running.serving.take(), running.answering.take())
    else {
        unreachable!("both are set until the request is served");
    };
    streamed(serving, Some(first), outbox, answering)
}

/// The request being served in this task. Dropped before it is done (the client went away
/// while it waited for JSON), it goes on in a task of its own if it belongs to a session, and
/// is cancelled otherwise.
struct Running {
    serving: Option<Serving>,
    answering: Option<Answering>,
}

impl Running {
    async fn poll_serving(&mut self) -> Served {
        let served = self.serving.as_mut().expect("serving is set until done").await;
        self.serving = None;
        served
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let (Some(serving), Some(answering)) = (self.serving.take(), self.answering.take()) else {
            return;
        };
        if answering.session.is_some() {
            tokio::spawn(async move {
                let _ = serving.await;
            });
        } else {
            answering.cancel.cancel();
        }
    }
}

/// The answer as an `application/json` body.
fn json(answering: &Answering, served: Served) -> Response {
    let status = match &served {
        Ok(_) => StatusCode::OK,
        Err(error) => (answering.status_of)(error),
    };
    json_body(status, message(answering.id.clone(), served))
}

/// `json` (one JSON-RPC message) as an `application/json` body with `status`.
fn json_body(status: StatusCode, json: Vec<u8>) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        Body::from(json),
    )
        .into_response()
}

/// `message` as an `application/json` body with `status`.
pub(crate) fn json_message(status: StatusCode, message: &mcp::ServerJsonRpcMessage) -> Response {
    match serde_json::to_vec(message) {
        Ok(body) => json_body(status, body),
        Err(error) => {
            tracing::warn!(%error, "an answer could not be written");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// The response headers of an event stream.
pub(crate) fn event_stream(body: Body) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream")),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            // Proxies such as nginx would otherwise hold events back.
            (HeaderName::from_static("x-accel-buffering"), HeaderValue::from_static("no")),
        ],
        body,
    )
        .into_response()
}

/// What came before the answer and the answer, as an event stream that is already complete.
fn stream_ended(
    answering: Answering,
    mut outbox: mpsc::UnboundedReceiver<Sent>,
    served: Served,
) -> Response {
    let (mut sink, receiver) = Sink::open(&answering);
    while let Ok((before, urgency)) = outbox.try_recv() {
        sink.push(&before, urgency);
    }
    sink.finish(&answering, served);
    event_stream(Body::from_stream(EventBody::new(Some(receiver), answering.shutdown.clone())))
}

/// The answer as an event stream: `first`, then whatever else the request sends, then its
/// answer, from a task of its own.
fn streamed(
    serving: Serving,
    first: Option<Sent>,
    mut outbox: mpsc::UnboundedReceiver<Sent>,
    answering: Answering,
) -> Response {
    let (mut sink, receiver) = Sink::open(&answering);
    let gone = CancellationToken::new();
    let body = EventBody::new(Some(receiver), answering.shutdown.clone());
    let body = if answering.session.is_none() { body.on_drop(gone.clone()) } else { body };
    tokio::spawn(async move {
        if let Some((first, urgency)) = first {
            sink.push(&first, urgency);
        }
        let mut serving = serving;
        let served = loop {
            tokio::select! {
                biased;
                served = &mut serving => break Some(served),
                Some((before, urgency)) = outbox.recv() => sink.push(&before, urgency),
                () = gone.cancelled() => break None,
            }
        };
        match served {
            Some(served) => {
                while let Ok((before, urgency)) = outbox.try_recv() {
                    sink.push(&before, urgency);
                }
                sink.finish(&answering, served);
            }
            // A 2026-07-28 client closed the stream: that cancels the request.
            None => answering.cancel.cancel(),
        }
    });
    event_stream(Body::from_stream(body))
}

/// Where a streamed answer's events go: a session's resumable stream, or (2026-07-28, no
/// resumption) straight to the body, until the client falls too far behind (the stream
/// ends then, and with it the request).
enum Sink {
    Kept { stream: Arc<EventStream>, session: Arc<HttpSession> },
    Direct(Option<Queue>),
}

impl Sink {
    /// The sink of an answer, and what the response body reads.
    fn open(answering: &Answering) -> (Sink, mpsc::Receiver<Bytes>) {
        match &answering.session {
            Some(session) => {
                let stream = session.open_stream();
                let receiver = stream.read();
                (Sink::Kept { stream, session: session.clone() }, receiver)
            }
            None => {
                let (queue, receiver) = Queue::new(answering.queue, 0);
                (Sink::Direct(Some(queue)), receiver)
            }
        }
    }

    fn push(&mut self, json: &[u8], urgency: Urgency) {
        match self {
            Sink::Kept { stream, .. } => stream.push(json, urgency),
            Sink::Direct(queue) => {
                let Some(live) = queue else { return };
                match live.offer(event(None, json), urgency) {
                    Offered::Queued | Offered::Dropped => {}
                    Offered::Full => {
                        tracing::debug!("a client reads an answer too slowly; its stream ends");
                        *queue = None;
                    }
                    Offered::Gone => *queue = None,
                }
            }
        }
    }

    /// Sends the answer and ends the stream; a kept stream whose reader got it all is not
    /// kept any longer.
    fn finish(mut self, answering: &Answering, served: Served) {
        self.push(&message(answering.id.clone(), served), Urgency::Needed);
        if let Sink::Kept { stream, session } = self {
            let read = stream.is_read();
            stream.end();
            if read {
                session.release(stream.number());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answering() -> Answering {
        Answering {
            id: mcp::RequestId::Number(7),
            session: None,
            cancel: CancellationToken::new(),
            shutdown: CancellationToken::new(),
            status_of: |_| StatusCode::BAD_REQUEST,
            queue: 8,
        }
    }

    fn refused() -> mcp::ErrorData {
        mcp::ErrorData::new(mcp::ErrorCode(-32021), "needs sampling", None)
    }

    /// A request whose outbox closes before its answer (it sent nothing) is answered with
    /// JSON and the error's status, not with a stream of the answer alone (once 1 in 5
    /// `-32021` answers through a handshake-era upstream came as 200 streams).
    #[tokio::test]
    async fn an_outbox_closed_before_the_answer_leaves_the_answer_json() {
        let (sender, outbox) = mpsc::unbounded_channel::<Sent>();
        let (answer, answered) = tokio::sync::oneshot::channel::<()>();
        let serving: Serving = Box::pin(async move {
            drop(sender);
            let _ = answered.await;
            Err(refused())
        });
        let replying = tokio::spawn(reply(serving, outbox, answering()));
        tokio::task::yield_now().await;
        answer.send(()).expect("the request waits for its answer");
        let response = replying.await.expect("reply");
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
    }

    /// Something sent before the answer makes the answer a stream.
    #[tokio::test]
    async fn a_message_sent_before_the_answer_makes_a_stream() {
        let (sender, outbox) = mpsc::unbounded_channel::<Sent>();
        let (answer, answered) = tokio::sync::oneshot::channel::<()>();
        let serving: Serving = Box::pin(async move {
            let progress = Bytes::from_static(br#"{"jsonrpc":"2.0","method":"x"}"#);
            sender.send((progress, Urgency::Needed)).expect("the outbox is read");
            let _ = answered.await;
            Err(refused())
        });
        let replying = tokio::spawn(reply(serving, outbox, answering()));
        tokio::task::yield_now().await;
        answer.send(()).expect("the request waits for its answer");
        let response = replying.await.expect("reply");
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()[header::CONTENT_TYPE], "text/event-stream");
    }
}
