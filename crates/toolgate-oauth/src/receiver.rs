//! The loopback listener that receives the authorization server's redirect (RFC 8252: a
//! native client's redirect URI is `http://127.0.0.1:<port>/callback`). It answers only the
//! redirect of the sign-in it was made for (its `state`), so another local program or a web
//! page cannot end the wait with a code of its own, and it gives up after a while.

use std::time::Duration;

use axum::extract::{Query, State};
use axum::response::Html;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::error::LoginError;

/// What the redirect carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Callback {
    /// The authorization code.
    pub code: String,
    /// The `state` the sign-in sent.
    pub state: String,
    /// The issuer the authorization server says it is (RFC 9207), when it says.
    pub iss: Option<String>,
}

/// A bound loopback listener waiting for one redirect.
#[derive(Debug)]
pub struct Receiver {
    listener: TcpListener,
    port: u16,
}

type Arrived = Result<Callback, LoginError>;

impl Receiver {
    /// Listens on `127.0.0.1:port` (any free port when `None`).
    pub async fn bind(port: Option<u16>) -> Result<Receiver, LoginError> {
        let address = std::net::SocketAddr::from(([127, 0, 0, 1], port.unwrap_or(0)));
        let listener = TcpListener::bind(address)
            .await
            .map_err(|source| LoginError::Listen { address, source })?;
        let port =
            listener.local_addr().map_err(|source| LoginError::Listen { address, source })?;
        Ok(Receiver { listener, port: port.port() })
    }

    /// The redirect URI to register and send.
    pub fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}/callback", self.port)
    }

    /// Serves until the redirect with `state` arrives (or its error), or `limit` passes.
    pub async fn wait(self, state: &str, limit: Duration) -> Result<Callback, LoginError> {
        self.wait_or_pasted(state, limit, None).await
    }

    /// [`Receiver::wait`], also taking the redirect's address as a person pastes it (from a
    /// browser on another machine, whose loopback is not this one's) from `pasted`.
    pub async fn wait_or_pasted(
        self,
        state: &str,
        limit: Duration,
        pasted: Option<mpsc::Receiver<String>>,
    ) -> Result<Callback, LoginError> {
        let (sender, mut arrived) = mpsc::channel::<Arrived>(1);
        let expected = state.to_owned();
        if let Some(mut pasted) = pasted {
            let sender = sender.clone();
            let expected = expected.clone();
            tokio::spawn(async move {
                while let Some(line) = pasted.recv().await {
                    match from_pasted(line.trim(), &expected) {
                        Some(result) => {
                            let _ = sender.send(result).await;
                            return;
                        }
                        None => eprintln!(
                            "That is not the address of this sign-in's redirect (it starts with \
                             http://127.0.0.1: and carries its state); paste it whole."
                        ),
                    }
                }
            });
        }
        let app = axum::Router::new()
            .route("/callback", axum::routing::get(callback))
            .with_state((expected, sender));
        let stop = tokio_util::sync::CancellationToken::new();
        let server =
            axum::serve(self.listener, app).with_graceful_shutdown(stop.clone().cancelled_owned());
        let serving = tokio::spawn(async move { server.await });
        let outcome = tokio::time::timeout(limit, arrived.recv()).await;
        stop.cancel();
        let _ = serving.await;
        match outcome {
            Ok(Some(result)) => result,
            Ok(None) => Err(LoginError::NoRedirect { waited: limit }),
            Err(_) => Err(LoginError::NoRedirect { waited: limit }),
        }
    }
}

type Shared = (String, mpsc::Sender<Arrived>);

/// What a pasted redirect address carries, when it is this sign-in's (its `state`).
fn from_pasted(text: &str, expected: &str) -> Option<Arrived> {
    let url = url::Url::parse(text).ok()?;
    let query: Vec<(String, String)> = url.query_pairs().into_owned().collect();
    arrived(&query, expected)
}

/// What a redirect's query says, when it is this sign-in's.
fn arrived(query: &[(String, String)], expected: &str) -> Option<Arrived> {
    let get = |key: &str| query.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    if get("state").as_deref() != Some(expected) {
        return None;
    }
    Some(match (get("code"), get("error")) {
        (_, Some(error)) => Err(LoginError::Refused {
            error,
            description: get("error_description").unwrap_or_default(),
        }),
        (Some(code), None) => Ok(Callback { code, state: expected.to_owned(), iss: get("iss") }),
        (None, None) => Err(LoginError::Refused {
            error: "invalid_request".into(),
            description: "the redirect carried neither a code nor an error".into(),
        }),
    })
}

async fn callback(
    State((expected, sender)): State<Shared>,
    Query(query): Query<Vec<(String, String)>>,
) -> (axum::http::StatusCode, Html<&'static str>) {
    let Some(arrived) = arrived(&query, &expected) else {
        return (
            axum::http::StatusCode::BAD_REQUEST,
            Html("<p>This is not the sign-in toolgate is waiting for.</p>"),
        );
    };
    let page = if arrived.is_ok() {
        Html("<p>Signed in. You can close this tab and go back to toolgate.</p>")
    } else {
        Html("<p>The sign-in was refused; toolgate says why.</p>")
    };
    let _ = sender.try_send(arrived);
    (axum::http::StatusCode::OK, page)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_the_awaited_sign_in_ends_the_wait() {
        let receiver = Receiver::bind(None).await.expect("binds");
        let uri = receiver.redirect_uri();
        assert!(uri.starts_with("http://127.0.0.1:") && uri.ends_with("/callback"), "{uri}");
        let waiting = tokio::spawn(receiver.wait("s-1", Duration::from_secs(20)));
        let http = reqwest::Client::new();
        let other = http.get(format!("{uri}?code=evil&state=other")).send().await.expect("sent");
        assert_eq!(other.status(), 400);
        let good = http.get(format!("{uri}?code=c-1&state=s-1&iss=https%3A%2F%2Fas.test")).send();
        assert_eq!(good.await.expect("sent").status(), 200);
        let callback = waiting.await.expect("joined").expect("arrived");
        assert_eq!(
            callback,
            Callback {
                code: "c-1".into(),
                state: "s-1".into(),
                iss: Some("https://as.test".into())
            }
        );
    }

    #[tokio::test]
    async fn a_pasted_address_of_this_sign_in_ends_the_wait() {
        let receiver = Receiver::bind(None).await.expect("binds");
        let uri = receiver.redirect_uri();
        let (paste, pasted) = mpsc::channel(4);
        let waiting = tokio::spawn(async move {
            receiver.wait_or_pasted("s-9", Duration::from_secs(20), Some(pasted)).await
        });
        paste.send("not a url".into()).await.expect("sent");
        paste.send(format!("{uri}?code=other&state=s-1")).await.expect("sent");
        paste.send(format!("  {uri}?code=c-9&state=s-9  ")).await.expect("sent");
        let callback = waiting.await.expect("joined").expect("arrived");
        assert_eq!(callback.code, "c-9");
    }

    #[tokio::test]
    async fn a_refusal_is_told_and_silence_ends() {
        let receiver = Receiver::bind(None).await.expect("binds");
        let uri = receiver.redirect_uri();
        let waiting = tokio::spawn(receiver.wait("s", Duration::from_secs(20)));
        let url = format!("{uri}?error=access_denied&error_description=no+thanks&state=s");
        reqwest::get(url).await.expect("sent");
        let error = waiting.await.expect("joined").unwrap_err().to_string();
        assert!(error.contains("access_denied") && error.contains("no thanks"), "{error}");

        let receiver = Receiver::bind(None).await.expect("binds");
        let error = receiver.wait("s", Duration::from_millis(50)).await.unwrap_err();
        assert!(matches!(error, LoginError::NoRedirect { .. }), "{error}");
    }
}
