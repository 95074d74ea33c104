//! The legacy HTTP+SSE client transport (protocol 2024-11-05), which rmcp no longer ships.
//!
//! `GET <url>` opens an event stream whose first `endpoint` event names the URL to which every
//! client message is POSTed; the server's messages arrive on the stream as `message` events.
//! Closing the stream ends the session.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};
use toolgate_oauth::Login;
use url::Url;

/// Messages buffered between the event stream and the MCP service.
const CHANNEL_CAPACITY: usize = 256;

/// Why the legacy SSE transport failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// The HTTP request failed.
    #[error("http request failed")]
    Http(#[from] reqwest::Error),
    /// The server answered with an unexpected status.
    #[error("server answered {status} to {method} {url}")]
    Status { method: &'static str, url: Url, status: reqwest::StatusCode },
    /// The `GET` did not open an event stream.
    #[error("GET {url} is not an event stream (content-type {content_type:?})")]
    NotEventStream { url: Url, content_type: String },
    /// The stream ended or failed before naming its endpoint.
    #[error("the event stream closed before its `endpoint` event")]
    NoEndpoint,
    /// The `endpoint` event named a URL that cannot be used.
    #[error("the `endpoint` event named an invalid or foreign URL {0:?}")]
    BadEndpoint(String),
    /// Signing in to the server failed.
    #[error(transparent)]
    Login(toolgate_oauth::LoginError),
}

/// A connected legacy SSE session.
pub struct SseTransport {
    http: reqwest::Client,
    endpoint: Url,
    headers: reqwest::header::HeaderMap,
    login: Option<Arc<Login>>,
    inbound: mpsc::Receiver<ServerJsonRpcMessage>,
    _reader: DropGuard,
}

impl SseTransport {
    /// Opens the event stream at `url` and waits for its `endpoint` event, with a client from
    /// `client` (the server's connection, proxy and TLS settings:
    /// [`crate::egress::client_builder`]). With a `login`, every request carries its token, and
    /// a `401` is answered as the streamable HTTP client answers it (see
    /// `toolgate_oauth::client`).
    pub async fn connect(
        url: &Url,
        headers: reqwest::header::HeaderMap,
        client: reqwest::ClientBuilder,
        login: Option<Arc<Login>>,
    ) -> Result<Self, SseError> {
        let http = client.connect_timeout(Duration::from_secs(10)).build()?;
        let open = |token: Option<String>| {
            let mut request = http
                .get(url.clone())
                .headers(headers.clone())
                .header(reqwest::header::ACCEPT, "text/event-stream");
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            request.send()
        };
        let response = with_login(login.as_ref(), open).await?;
        if !response.status().is_success() {
            return Err(SseError::Status {
                method: "GET",
                url: url.clone(),
                status: response.status(),
            });
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        if !content_type.starts_with("text/event-stream") {
            return Err(SseError::NotEventStream { url: url.clone(), content_type });
        }
        let mut events = sse_stream::SseStream::from_bytes_stream(response.bytes_stream());
        let endpoint = loop {
            match events.next().await {
                Some(Ok(event)) if event.event.as_deref() == Some("endpoint") => {
                    let data = event.data.unwrap_or_default();
                    break resolve_endpoint(url, data.trim())?;
                }
                Some(Ok(_)) => continue,
                Some(Err(_)) | None => return Err(SseError::NoEndpoint),
            }
        };
        let (tx, inbound) = mpsc::channel(CHANNEL_CAPACITY);
        let stop = CancellationToken::new();
        let reader_stop = stop.clone();
        tokio::spawn(async move {
            loop {
                let event = tokio::select! {
                    _ = reader_stop.cancelled() => break,
                    event = events.next() => event,
                };
                let Some(Ok(event)) = event else { break };
                if !matches!(event.event.as_deref(), None | Some("message")) {
                    continue;
                }
                let Some(data) = event.data else { continue };
                match serde_json::from_str::<ServerJsonRpcMessage>(&data) {
                    Ok(message) => {
                        if tx.send(message).await.is_err() {
                            break;
                        }
                    }
                    Err(error) => {
                        tracing::warn!(%error, "ignoring an SSE message that is not JSON-RPC");
                    }
                }
            }
        });
        Ok(SseTransport { http, endpoint, headers, login, inbound, _reader: stop.drop_guard() })
    }
}

/// Sends `request` with `login`'s token, and once more with a fresh one after a `401`.
async fn with_login<F, Fut>(
    login: Option<&Arc<Login>>,
    request: F,
) -> Result<reqwest::Response, SseError>
where
    F: Fn(Option<String>) -> Fut,
    Fut: Future<Output = Result<reqwest::Response, reqwest::Error>>,
{
    let Some(login) = login else { return Ok(request(None).await?) };
    let token = login.token().await.map_err(SseError::Login)?;
    let response = request(token.clone()).await?;
    if response.status() != reqwest::StatusCode::UNAUTHORIZED {
        return Ok(response);
    }
    let challenge = response
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    match login.rejected(token.as_deref(), &challenge).await {
        Ok(fresh) => Ok(request(Some(fresh)).await?),
        Err(error) if error.needs_login() => Ok(response),
        Err(error) => Err(SseError::Login(error)),
    }
}

/// The endpoint must be on the same origin as the stream: a server cannot send our messages
/// (and headers, which may hold credentials) somewhere else.
fn resolve_endpoint(base: &Url, data: &str) -> Result<Url, SseError> {
    let endpoint = base.join(data).map_err(|_| SseError::BadEndpoint(data.to_owned()))?;
    if endpoint.origin() != base.origin() {
        return Err(SseError::BadEndpoint(data.to_owned()));
    }
    Ok(endpoint)
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), SseError>> + Send + 'static {
        let http = self.http.clone();
        let headers = self.headers.clone();
        let login = self.login.clone();
        let url = self.endpoint.clone();
        async move {
            let post = |token: Option<String>| {
                let mut request = http.post(url.clone()).headers(headers.clone()).json(&item);
                if let Some(token) = token {
                    request = request.bearer_auth(token);
                }
                request.send()
            };
            let response = with_login(login.as_ref(), post).await?;
            if !response.status().is_success() {
                return Err(SseError::Status { method: "POST", url, status: response.status() });
            }
            Ok(())
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.inbound.recv()
    }

    async fn close(&mut self) -> Result<(), SseError> {
        self.inbound.close();
        Ok(())
    }
}

#[cfg(test)]
mod props;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_is_resolved_against_the_stream_url() {
        let base = Url::parse("http://127.0.0.1:9/sse").expect("valid url");
        let endpoint = resolve_endpoint(&base, "/message?sessionId=abc").expect("same origin");
        assert_eq!(endpoint.as_str(), "http://127.0.0.1:9/message?sessionId=abc");
    }

    #[test]
    fn foreign_endpoints_are_refused() {
        let base = Url::parse("http://127.0.0.1:9/sse").expect("valid url");
        assert!(resolve_endpoint(&base, "http://evil.example/message").is_err());
        assert!(resolve_endpoint(&base, "http://127.0.0.1:10/message").is_err());
    }
}
