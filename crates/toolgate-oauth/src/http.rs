//! The HTTP client every OAuth request of one upstream goes through: discovery, registration,
//! token and refresh requests. It is built from the upstream's own client settings (so its
//! proxy and CA bundle apply), answers are bounded in size and time, and a server reached over
//! `https` never has its sign-in sent over plain `http` (only a loopback server, as in
//! development, may use `http` for its authorization server too).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use rmcp::transport::auth::{
    OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRedirectPolicy,
    OAuthHttpRequest,
};

/// The most an OAuth answer may be: metadata documents and token responses are small.
const MAX_BODY: usize = 1024 * 1024;
/// How long one OAuth request may take.
const TIMEOUT: Duration = Duration::from_secs(30);
/// Redirects followed where a request allows them.
const MAX_REDIRECTS: usize = 5;

/// Why an OAuth request was not sent or not read.
#[derive(Debug, thiserror::Error)]
enum Refused {
    #[error("{0}: plain http is used only when the MCP server itself is on this machine")]
    Insecure(url::Url),
    #[error("the answer is larger than {MAX_BODY} bytes")]
    TooLarge,
}

/// The OAuth client of one upstream.
#[derive(Clone)]
pub struct OAuthHttp {
    follow: reqwest::Client,
    stop: reqwest::Client,
    /// Plain `http` is allowed (the MCP server is itself plain `http` on loopback).
    plain_http: bool,
}

impl std::fmt::Debug for OAuthHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthHttp").field("plain_http", &self.plain_http).finish_non_exhaustive()
    }
}

/// Whether `url` names this machine.
pub(crate) fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

impl OAuthHttp {
    /// A client for the sign-in of the MCP server at `server`, from `builder` (the upstream's
    /// own settings: proxy, CA bundle).
    pub fn new(
        server: &url::Url,
        builder: impl Fn() -> reqwest::ClientBuilder,
    ) -> Result<Arc<OAuthHttp>, reqwest::Error> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let plain_http = server.scheme() == "http" && is_loopback(server);
        let secure = plain_http;
        let follow = builder()
            .timeout(TIMEOUT)
            .redirect(reqwest::redirect::Policy::custom(move |attempt| {
                if attempt.previous().len() >= MAX_REDIRECTS {
                    attempt.error("too many redirects")
                } else if attempt.url().scheme() != "https" && !secure {
                    let url = attempt.url().clone();
                    attempt.error(Refused::Insecure(url))
                } else {
                    attempt.follow()
                }
            }))
            .build()?;
        let stop =
            builder().timeout(TIMEOUT).redirect(reqwest::redirect::Policy::none()).build()?;
        Ok(Arc::new(OAuthHttp { follow, stop, plain_http }))
    }

    /// A client with reqwest's defaults, for a server with no settings of its own.
    pub fn plain(server: &url::Url) -> Result<Arc<OAuthHttp>, reqwest::Error> {
        OAuthHttp::new(server, reqwest::Client::builder)
    }

    /// Sends `request` (redirects per `policy`) and reads its answer, bounded.
    pub(crate) async fn send(
        &self,
        request: http::Request<Vec<u8>>,
        policy: OAuthHttpRedirectPolicy,
    ) -> Result<http::Response<Vec<u8>>, OAuthHttpClientError> {
        let request = reqwest::Request::try_from(request)?;
        if request.url().scheme() != "https" && !self.plain_http {
            return Err(Box::new(Refused::Insecure(request.url().clone())));
        }
        let client = match policy {
            OAuthHttpRedirectPolicy::Stop => &self.stop,
            _ => &self.follow,
        };
        let response = client.execute(request).await?;
        let mut builder = http::Response::builder().status(response.status());
        for (name, value) in response.headers() {
            builder = builder.header(name, value);
        }
        let mut body = Vec::new();
        let mut chunks = response.bytes_stream();
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk?;
            if body.len() + chunk.len() > MAX_BODY {
                return Err(Box::new(Refused::TooLarge));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(builder.body(body)?)
    }
}

impl OAuthHttpClient for OAuthHttp {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move { self.send(request.request, request.redirect_policy).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_and_addresses() {
        for url in ["http://127.0.0.1:9/mcp", "http://localhost/mcp", "http://[::1]:8/x"] {
            assert!(is_loopback(&url.parse().expect("url")), "{url}");
        }
        for url in ["http://10.0.0.1/mcp", "https://mcp.example.test/mcp"] {
            assert!(!is_loopback(&url.parse().expect("url")), "{url}");
        }
    }

    #[tokio::test]
    async fn an_https_server_never_signs_in_over_plain_http() {
        let http = OAuthHttp::plain(&"https://mcp.example.test/mcp".parse().expect("url"))
            .expect("builds");
        let request =
            http::Request::get("http://127.0.0.1:9/.well-known/oauth-authorization-server")
                .body(Vec::new())
                .expect("request");
        let error = http.send(request, OAuthHttpRedirectPolicy::Stop).await.unwrap_err();
        assert!(error.to_string().contains("plain http"), "{error}");
    }
}
