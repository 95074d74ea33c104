//! The HTTP client under the streamable HTTP transport: rmcp's reqwest client, plus one
//! repair for servers that answer an unknown session the wrong way, and the connection
//! settings every HTTP upstream shares (the legacy SSE transport builds on them too).
//!
//! The spec says a server answers a request carrying a session id it no longer knows with
//! HTTP 404, and rmcp then re-initialises and retries. Many servers built from the TypeScript
//! SDK's examples (`server-everything` among them) answer 400 with an id-less JSON-RPC error
//! ("No valid session ID provided") instead. rmcp can route that error to no request, so the
//! call would wait for its timeout and every later call would fail the same way. Here such an
//! answer to a request that carried a session counts as an expired session.
//!
//! # Connections
//!
//! Connections are kept open and reused (`pool`, the default), which saves a TCP handshake
//! per call (0.3-0.5 ms on loopback; a round trip or more, plus TLS, elsewhere); `pool =
//! false` opens one per request.
//!
//! The 40 ms stall that first kept pooling off (rmcp's own client turns it off for the same
//! reason) comes from the *server's* small writes, not from ours. strace of both sides
//! against an rmcp server on a plain `axum::serve` (`toolgate-fixture --nagle`), calling a
//! tool that answers after 5 ms over a reused connection: the server wrote the response
//! headers with a progress event at once and, a millisecond later, the answer event with the
//! final chunk in a second `writev`; that second write reached us 46 ms after it was made, on
//! every call. Nagle's algorithm on the server's socket holds a small write while earlier data
//! is unacknowledged, and our kernel delays that ACK (up to 40 ms) on a connection that sent
//! its request soon after its previous answer, as a reused connection does when calls follow
//! each other. A fresh connection ACKs at once, which is why one connection per call hid it.
//! With an answer that is ready at once, only the final chunk waits: the call is not delayed,
//! but its connection is not free for the next call, which opens another. Our writes were
//! checked too: reqwest sets `TCP_NODELAY` (set explicitly below) and writes each request,
//! headers and body, in one `writev`, so none of them waits for the server's ACK.
//!
//! The servers of the TypeScript SDK (Node's HTTP server) and the Python SDK (Uvicorn, through
//! asyncio), like toolgate's own listeners, set `TCP_NODELAY` on every accepted connection and
//! never wait for our ACK: with them a kept-alive connection is simply faster
//! (docs/benchmarks.md, "Upstream connections kept alive"). A server that leaves Nagle on
//! costs up to 40 ms per call whose answer is not ready at once, on a reused connection. Our
//! side cannot make the ACK go out sooner through reqwest: that takes `TCP_QUICKACK`, which
//! Linux does not keep (it has to be set again for every answer), on a socket that reqwest
//! does not hand out. `pool = false` is the remedy for such a server.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::{Error as SseError, Sse};

use crate::stream_mark::StreamMark;

/// How many same-origin 307/308 redirects one request follows.
const MAX_REDIRECTS: usize = 10;

/// How long a kept-alive connection may stay idle before we close it: below the 5 s after
/// which Node's HTTP server, Uvicorn and Apache close idle connections themselves, so that
/// we close first and never send a request on a connection the server is closing (it would
/// fail instead of being sent again on another).
const POOL_IDLE: Duration = Duration::from_secs(4);

/// How many idle connections to one server are kept: enough for as many calls at once as a
/// busy gateway makes to one upstream; more are closed once they are idle.
const POOL_MAX_IDLE: usize = 32;

/// The connection settings every HTTP upstream client has: `TCP_NODELAY`, and kept alive
/// connections unless `pool` is false (see the module's doc). [`crate::egress::client_builder`]
/// adds the server's proxy and TLS.
pub(crate) fn connection_settings(
    builder: reqwest::ClientBuilder,
    pool: bool,
) -> reqwest::ClientBuilder {
    let builder = builder.tcp_nodelay(true);
    if pool {
        builder.pool_idle_timeout(POOL_IDLE).pool_max_idle_per_host(POOL_MAX_IDLE)
    } else {
        builder.pool_max_idle_per_host(0)
    }
}

/// reqwest, treating an id-less error answer to a request in a session as an expired session,
/// and telling when the session's stream for server messages has been answered.
#[derive(Debug, Clone)]
pub(crate) struct SessionAwareClient {
    client: reqwest::Client,
    standalone: Arc<StandaloneStream>,
    /// How log messages on a request's response stream are marked with the request.
    mark: Arc<StreamMark>,
}

impl SessionAwareClient {
    /// A client from `builder` (the server's, [`crate::egress::client_builder`]), marking the
    /// log messages of each request's response stream with `mark`.
    pub(crate) fn new(
        builder: reqwest::ClientBuilder,
        mark: StreamMark,
    ) -> Result<SessionAwareClient, reqwest::Error> {
        let client = builder.redirect(same_origin_redirects()).build()?;
        Ok(SessionAwareClient { client, standalone: Arc::default(), mark: Arc::new(mark) })
    }

    /// The state of the session's standalone GET stream.
    pub(crate) fn standalone(&self) -> Arc<StandaloneStream> {
        self.standalone.clone()
    }
}

/// The standalone GET stream a session opens for what the server sends outside any request
/// (`list_changed`, resource updates, logs). rmcp opens it in a task of its own once the
/// handshake is done, so without waiting for it a server's first notification could be sent
/// before the stream is there to carry it, and a request's answer that a server sends on the
/// GET stream (as it may after the request's own stream closed) could meet the GET before the
/// request is sent: `connect` waits, briefly, for the server to answer the GET (with a stream,
/// or with 405 when it offers none) before it calls the upstream ready.
#[derive(Debug)]
pub(crate) struct StandaloneStream {
    state: tokio::sync::watch::Sender<Standalone>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Standalone {
    /// No session yet (or none at all, as with a stateless server): no stream to wait for.
    NoSession,
    /// A session began; its GET has not been answered.
    Opening,
    /// The server answered the GET.
    Answered,
}

impl Default for StandaloneStream {
    fn default() -> StandaloneStream {
        StandaloneStream { state: tokio::sync::watch::Sender::new(Standalone::NoSession) }
    }
}

impl StandaloneStream {
    /// A response carried a session id: the session's GET stream will follow.
    fn session(&self) {
        self.state.send_if_modified(|state| {
            let opening = *state == Standalone::NoSession;
            if opening {
                *state = Standalone::Opening;
            }
            opening
        });
    }

    /// The server answered a GET that resumes nothing: the standalone stream's.
    fn answered(&self) {
        self.state.send_replace(Standalone::Answered);
    }

    /// Returns once there is no standalone stream to wait for, or its GET was answered.
    pub(crate) async fn ready(&self) {
        let mut state = self.state.subscribe();
        let _ = state.wait_for(|state| *state != Standalone::Opening).await;
    }
}

/// Follows only 307 and 308 (which keep the method and body) within the same origin: a
/// cross-origin hop would replay the session id and configured headers to another host.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        let keeps_body = matches!(attempt.status().as_u16(), 307 | 308);
        if same_origin && keeps_body && attempt.previous().len() <= MAX_REDIRECTS {
            attempt.follow()
        } else {
            attempt.stop()
        }
    })
}

/// The repair: an id-less error answering a request sent in a session.
fn expired_session(
    message: &ClientJsonRpcMessage,
    session_id: Option<&Arc<str>>,
    response: Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>>,
) -> Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>> {
    match response {
        Ok(StreamableHttpPostResponse::Json(ServerJsonRpcMessage::Error(error), _))
            if error.id.is_none()
                && session_id.is_some()
                && matches!(message, ClientJsonRpcMessage::Request(_)) =>
        {
            tracing::debug!(error = %error.error.message, "id-less error in a session; treating the session as expired");
            Err(StreamableHttpError::SessionExpired)
        }
        other => other,
    }
}

impl SessionAwareClient {
    fn saw_session<E>(&self, response: &Result<StreamableHttpPostResponse, E>) {
        if let Ok(
            StreamableHttpPostResponse::Json(_, Some(_))
            | StreamableHttpPostResponse::Sse(_, Some(_)),
        ) = response
        {
            self.standalone.session();
        }
    }

    /// `response` to `sent`, with the log messages of a request's response stream marked
    /// with the request (see [`crate::stream_mark`]).
    fn marked<E>(
        &self,
        sent: &ClientJsonRpcMessage,
        response: Result<StreamableHttpPostResponse, E>,
    ) -> Result<StreamableHttpPostResponse, E> {
        let ClientJsonRpcMessage::Request(request) = sent else { return response };
        let Ok(StreamableHttpPostResponse::Sse(stream, session)) = response else {
            return response;
        };
        let id = request.id.clone();
        let mark = self.mark.clone();
        let stream = stream.map(move |event| {
            event.map(|mut event| {
                if let Some(marked) = event.data.as_deref().and_then(|data| mark.mark(data, &id)) {
                    event.data = Some(marked);
                }
                event
            })
        });
        Ok(StreamableHttpPostResponse::Sse(Box::pin(stream), session))
    }
}

impl StreamableHttpClient for SessionAwareClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let sent = message.clone();
        let response = self
            .client
            .post_message(uri, message, session_id.clone(), auth_header, custom_headers)
            .await;
        self.saw_session(&response);
        let response = self.marked(&sent, response);
        expired_session(&sent, session_id.as_ref(), response)
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let sent = message.clone();
        let response = self
            .client
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id.clone(),
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        self.saw_session(&response);
        let response = self.marked(&sent, response);
        expired_session(&sent, session_id.as_ref(), response)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.client.delete_session(uri, session_id, auth_header, custom_headers).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        let resumes = last_event_id.is_some();
        let stream = self
            .client
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await;
        if !resumes {
            self.standalone.answered();
        }
        stream
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        let resumes = last_event_id.is_some();
        let stream = self
            .client
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        if !resumes {
            self.standalone.answered();
        }
        stream
    }
}

#[cfg(test)]
mod tests;
