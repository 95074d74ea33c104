//! Reading a remote document (authorization server metadata, a key set, an introspection
//! answer) within bounds: [`Fetch`] and its HTTP implementation [`HttpFetch`], the [`Limits`]
//! of what a document can make toolgate hold, and which URLs may be fetched at all
//! ([`secure`]). `jwks` and `introspect` read through it.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// The bounds of what a remote document can make the cache hold or do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest metadata or key set document read.
    pub max_document: usize,
    /// The most keys in a key set.
    pub max_keys: usize,
    /// The shortest time between two fetches of the key set.
    pub refresh_floor: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_document: 256 * 1024, max_keys: 64, refresh_floor: Duration::from_secs(30) }
    }
}

/// Why a document could not be fetched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// The server answered with this status.
    #[error("HTTP status {0}")]
    Status(u16),
    /// The document is longer than the limit.
    #[error("document larger than {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: usize,
    },
    /// The request failed.
    #[error("{0}")]
    Http(String),
}

/// Reads a document over HTTP(S): [`HttpFetch`], or a test's own.
pub trait Fetch: Send + Sync {
    /// The body of `url`, at most `limit` bytes, or why not.
    fn get<'a>(
        &'a self,
        url: &'a url::Url,
        limit: usize,
    ) -> Pin<Box<dyn Future<Output = Result<Vec<u8>, FetchError>> + Send + 'a>>;
}

/// [`Fetch`] with reqwest, over rustls with ring, as toolgate's other HTTPS clients.
#[derive(Debug, Clone)]
pub struct HttpFetch {
    client: reqwest::Client,
    /// For POSTs, which carry a client's secret: no redirect is followed.
    pub(crate) no_redirect: reqwest::Client,
}

impl HttpFetch {
    /// A client whose requests take at most `timeout` and follow at most 3 redirects, none to
    /// plain HTTP on another host.
    pub fn new(timeout: Duration) -> Result<HttpFetch, FetchError> {
        // The process's TLS provider: ring, unless the program installed another.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::custom(|attempt| {
                if attempt.previous().len() >= 3 {
                    attempt.error("more than 3 redirects")
                } else if !secure(attempt.url()) {
                    attempt.error("redirect to plain http on another host")
                } else {
                    attempt.follow()
                }
            }))
            .build()
            .map_err(|error| FetchError::Http(error.to_string()))?;
        let no_redirect = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| FetchError::Http(error.to_string()))?;
        Ok(HttpFetch { client, no_redirect })
    }

    /// The body of the answer to `request`, when its status is a success, at most `limit`
    /// bytes.
    pub(crate) async fn read(
        &self,
        request: reqwest::RequestBuilder,
        limit: usize,
    ) -> Result<Vec<u8>, FetchError> {
        let http = |error: reqwest::Error| {
            FetchError::Http(toolgate_core::ErrorChain(&error.without_url()).to_string())
        };
        let mut response = request.send().await.map_err(http)?;
        if !response.status().is_success() {
            return Err(FetchError::Status(response.status().as_u16()));
        }
        if response.content_length().is_some_and(|length| length > limit as u64) {
            return Err(FetchError::TooLarge { limit });
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(http)? {
            if body.len() + chunk.len() > limit {
                return Err(FetchError::TooLarge { limit });
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}

impl Fetch for HttpFetch {
    fn get<'a>(
        &'a self,
        url: &'a url::Url,
        limit: usize,
    ) -> Pin<Box<dyn Future<Output = Result<Vec<u8>, FetchError>> + Send + 'a>> {
        Box::pin(async move {
            let request = self.client.get(url.clone()).header("accept", "application/json");
            self.read(request, limit).await
        })
    }
}

/// Whether `url` is https, or http to a loopback host.
pub(crate) fn secure(url: &url::Url) -> bool {
    url.scheme() == "https"
        || (url.scheme() == "http"
            && match url.host() {
                Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
                Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
                Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
                None => false,
            })
}
