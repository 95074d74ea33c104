//! The HTTP client under the streamable HTTP transport: rmcp's reqwest client, plus one
//! repair for servers that answer an unknown session the wrong way.
//!
//! The spec says a server answers a request carrying a session id it no longer knows with
//! HTTP 404, and rmcp then re-initialises and retries. Many servers built from the TypeScript
//! SDK's examples (`server-everything` among them) answer 400 with an id-less JSON-RPC error
//! ("No valid session ID provided") instead. rmcp can route that error to no request, so the
//! call would wait for its timeout and every later call would fail the same way. Here such an
//! answer to a request that carried a session counts as an expired session.

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::{Error as SseError, Sse};

/// How many same-origin 307/308 redirects one request follows.
const MAX_REDIRECTS: usize = 10;

/// reqwest, treating an id-less error answer to a request in a session as an expired session.
#[derive(Debug, Clone)]
pub(crate) struct SessionAwareClient(reqwest::Client);

impl SessionAwareClient {
    pub(crate) fn new() -> SessionAwareClient {
        let client = reqwest::Client::builder()
            // As rmcp's own client: reusing a connection whose last body was not read to the
            // end stalls on delayed ACKs.
            .pool_max_idle_per_host(0)
            .redirect(same_origin_redirects())
            .build()
            .expect("a reqwest client with these settings builds");
        SessionAwareClient(client)
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
            .0
            .post_message(uri, message, session_id.clone(), auth_header, custom_headers)
            .await;
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
            .0
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id.clone(),
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        expired_session(&sent, session_id.as_ref(), response)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.0.delete_session(uri, session_id, auth_header, custom_headers).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.0.get_stream(uri, session_id, last_event_id, auth_header, custom_headers).await
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
        self.0
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}

#[cfg(test)]
mod tests;
