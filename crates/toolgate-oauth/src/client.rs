//! An upstream's streamable HTTP client with its sign-in: every request carries the current
//! token; a `401` gets one retry with a refreshed (or newly obtained) token, a `403
//! insufficient_scope` one retry after a step-up. What cannot be mended goes back to rmcp as the
//! server's own challenge, which the upstream layer turns into "run `toolgate login`".

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::AuthError;
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::{Error as SseError, Sse};

use crate::error::LoginError;
use crate::login::Login;

/// `C` with the sign-in of its server, if it has one (without, requests go as they are).
#[derive(Clone, Debug)]
pub struct Authorized<C> {
    inner: C,
    login: Option<Arc<Login>>,
}

impl<C> Authorized<C> {
    /// `inner`, carrying the tokens of `login`.
    pub fn new(inner: C, login: Option<Arc<Login>>) -> Authorized<C> {
        Authorized { inner, login }
    }

    /// The client underneath.
    pub fn inner(&self) -> &C {
        &self.inner
    }
}

type HttpResult<T, E> = Result<T, StreamableHttpError<E>>;

fn failed<E: std::error::Error + Send + Sync + 'static>(
    error: LoginError,
) -> StreamableHttpError<E> {
    tracing::warn!(%error, "upstream sign-in");
    StreamableHttpError::Auth(AuthError::AuthorizationFailed(error.to_string()))
}

impl<C: StreamableHttpClient + Sync> Authorized<C> {
    async fn carrying<T, F, Fut>(&self, given: Option<String>, call: F) -> HttpResult<T, C::Error>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = HttpResult<T, C::Error>>,
    {
        let Some(login) = &self.login else { return call(given).await };
        let token = login.token().await.map_err(failed)?;
        let retried = match call(token.clone()).await {
            Err(StreamableHttpError::AuthRequired(challenge)) => {
                match login.rejected(token.as_deref(), &challenge.www_authenticate_header).await {
                    Ok(fresh) => call(Some(fresh)).await,
                    Err(error) if error.needs_login() => {
                        tracing::info!(%error, "upstream sign-in");
                        return Err(StreamableHttpError::AuthRequired(challenge));
                    }
                    Err(error) => return Err(failed(error)),
                }
            }
            Err(StreamableHttpError::InsufficientScope(refusal)) => {
                match login.insufficient_scope(&refusal.www_authenticate_header).await {
                    Ok(fresh) => call(Some(fresh)).await,
                    Err(error) if error.needs_login() => {
                        tracing::info!(%error, "upstream sign-in");
                        return Err(StreamableHttpError::InsufficientScope(refusal));
                    }
                    Err(error) => return Err(failed(error)),
                }
            }
            done => return done.inspect(|_| self.login_succeeded()),
        };
        if retried.is_ok() {
            self.login_succeeded();
        }
        retried
    }

    fn login_succeeded(&self) {
        if let Some(login) = &self.login {
            login.succeeded();
        }
    }
}

impl<C: StreamableHttpClient + Sync> StreamableHttpClient for Authorized<C> {
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<StreamableHttpPostResponse, C::Error> {
        self.carrying(auth_header, |token| {
            self.inner.post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<StreamableHttpPostResponse, C::Error> {
        self.carrying(auth_header, |token| {
            self.inner.post_message_with_max_sse_event_size(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<(), C::Error> {
        self.carrying(auth_header, |token| {
            self.inner.delete_session(
                uri.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>, C::Error> {
        self.carrying(auth_header, |token| {
            self.inner.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>, C::Error> {
        self.carrying(auth_header, |token| {
            self.inner.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}

/// The challenge of a `401` that toolgate could not answer, for messages.
pub fn challenge_of<E>(error: &StreamableHttpError<E>) -> Option<&str>
where
    E: std::error::Error + Send + Sync + 'static,
{
    match error {
        StreamableHttpError::AuthRequired(AuthRequiredError {
            www_authenticate_header, ..
        }) => Some(www_authenticate_header),
        StreamableHttpError::InsufficientScope(refusal) => Some(&refusal.www_authenticate_header),
        _ => None,
    }
}
