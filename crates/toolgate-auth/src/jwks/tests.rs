//! The key cache: discovery, refresh on an unknown `kid` no more often than the floor (on
//! tokio's paused clock, with an in-memory [`Fetch`]), and the bounds on remote documents
//! (over real HTTP on 127.0.0.1).

use std::collections::HashMap;
use std::sync::Mutex as SyncMutex;

use serde_json::json;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use super::*;
use crate::fetch::HttpFetch;

/// Documents by URL, and how often each was asked for.
#[derive(Default)]
pub(crate) struct Documents {
    bodies: SyncMutex<HashMap<String, Vec<u8>>>,
    hits: SyncMutex<HashMap<String, usize>>,
}

impl Documents {
    pub(crate) fn put(&self, url: &str, body: serde_json::Value) {
        self.bodies.lock().unwrap().insert(url.to_owned(), body.to_string().into_bytes());
    }

    pub(crate) fn hits(&self, url: &str) -> usize {
        self.hits.lock().unwrap().get(url).copied().unwrap_or(0)
    }
}

impl Fetch for Documents {
    fn get<'a>(
        &'a self,
        url: &'a url::Url,
        limit: usize,
    ) -> Pin<Box<dyn Future<Output = Result<Vec<u8>, FetchError>> + Send + 'a>> {
        *self.hits.lock().unwrap().entry(url.to_string()).or_default() += 1;
        let body = self.bodies.lock().unwrap().get(url.as_str()).cloned();
        Box::pin(async move {
            match body {
                Some(body) if body.len() > limit => Err(FetchError::TooLarge { limit }),
                Some(body) => Ok(body),
                None => Err(FetchError::Status(404)),
            }
        })
    }
}

fn ec_key(kid: &str) -> serde_json::Value {
    // A valid P-256 point is not needed to select a key, only to verify with it.
    json!({"kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "alg": "ES256",
           "x": "WKn-ZIGevcwGIyyrzFoZNBdaq9_TsqzGl96oc0CWuis",
           "y": "y77t-RvAHRKTsSGdIYUfweuOvwrvDD-Q3Hv5J0fSKbE"})
}

const JWKS: &str = "https://id.example.com/jwks";

fn cache(documents: &Arc<Documents>, source: KeySource) -> JwksCache {
    JwksCache::new(source, documents.clone(), Limits::default())
}

#[tokio::test(start_paused = true)]
async fn an_unknown_kid_refreshes_once_then_waits_for_the_floor() {
    let documents = Arc::new(Documents::default());
    documents.put(JWKS, json!({"keys": [ec_key("k1")]}));
    let keys = cache(&documents, KeySource::JwksUrl(JWKS.parse().unwrap()));

    assert!(keys.key(Some("k1"), Algorithm::ES256).await.is_ok());
    assert_eq!(documents.hits(JWKS), 1);

    // Just past the floor: an unknown kid refetches, once, and is still unknown.
    tokio::time::advance(Duration::from_secs(31)).await;
    let error = keys.key(Some("k2"), Algorithm::ES256).await.unwrap_err();
    assert_eq!(error, JwksError::UnknownKey { kid: Some("k2".into()), refreshed: true });
    assert_eq!(documents.hits(JWKS), 2);

    // Within the floor, the same or another unknown kid fetches nothing.
    tokio::time::advance(Duration::from_secs(29)).await;
    for kid in ["k2", "k3"] {
        let error = keys.key(Some(kid), Algorithm::ES256).await.unwrap_err();
        assert_eq!(error, JwksError::UnknownKey { kid: Some(kid.into()), refreshed: false });
    }
    assert_eq!(documents.hits(JWKS), 2);
    // Known keys are served from the cache meanwhile.
    assert!(keys.key(Some("k1"), Algorithm::ES256).await.is_ok());

    // The issuer rotates: past the floor, the new kid is found by one refetch.
    documents.put(JWKS, json!({"keys": [ec_key("k1"), ec_key("k2")]}));
    tokio::time::advance(Duration::from_secs(2)).await;
    assert!(keys.key(Some("k2"), Algorithm::ES256).await.is_ok());
    assert_eq!(documents.hits(JWKS), 3);
}

/// A key set behind a gate: each fetch waits until the gate opens.
struct Gated {
    documents: Documents,
    gate: tokio::sync::Semaphore,
    /// Fetches that reached the gate.
    arrived: std::sync::atomic::AtomicUsize,
}

impl Fetch for Gated {
    fn get<'a>(
        &'a self,
        url: &'a url::Url,
        limit: usize,
    ) -> Pin<Box<dyn Future<Output = Result<Vec<u8>, FetchError>> + Send + 'a>> {
        Box::pin(async move {
            self.arrived.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let _open = self.gate.acquire().await.expect("never closed");
            self.documents.get(url, limit).await
        })
    }
}

#[tokio::test(start_paused = true)]
async fn a_known_key_is_given_while_a_slow_fetch_for_another_runs() {
    let gated = Arc::new(Gated {
        documents: Documents::default(),
        gate: tokio::sync::Semaphore::new(1),
        arrived: Default::default(),
    });
    gated.documents.put(JWKS, json!({"keys": [ec_key("k1")]}));
    let keys = Arc::new(JwksCache::new(
        KeySource::JwksUrl(JWKS.parse().unwrap()),
        gated.clone(),
        Limits::default(),
    ));
    assert!(keys.key(Some("k1"), Algorithm::ES256).await.is_ok());
    // The issuer hangs: a token naming an unknown kid starts a fetch that does not end.
    let held = gated.gate.acquire().await.expect("the gate");
    tokio::time::advance(Duration::from_secs(31)).await;
    let unknown = tokio::spawn({
        let keys = keys.clone();
        async move { keys.key(Some("k2"), Algorithm::ES256).await }
    });
    while gated.arrived.load(std::sync::atomic::Ordering::SeqCst) < 2 {
        tokio::task::yield_now().await;
    }
    // Meanwhile a token with the known key is checked at once, not after the fetch.
    let known =
        tokio::time::timeout(Duration::from_secs(1), keys.key(Some("k1"), Algorithm::ES256));
    assert!(known.await.expect("not held up by the fetch").is_ok());
    assert!(!unknown.is_finished(), "the fetch is still held");
    drop(held);
    let error = unknown.await.unwrap().unwrap_err();
    assert_eq!(error, JwksError::UnknownKey { kid: Some("k2".into()), refreshed: true });
    assert_eq!(gated.documents.hits(JWKS), 2);
}

#[tokio::test(start_paused = true)]
async fn a_failed_fetch_counts_toward_the_floor() {
    let documents = Arc::new(Documents::default());
    let keys = cache(&documents, KeySource::JwksUrl(JWKS.parse().unwrap()));
    let error = keys.key(Some("k1"), Algorithm::ES256).await.unwrap_err();
    assert!(matches!(error, JwksError::Fetch { source: FetchError::Status(404), .. }), "{error}");
    let error = keys.key(Some("k1"), Algorithm::ES256).await.unwrap_err();
    assert!(matches!(error, JwksError::UnknownKey { refreshed: false, .. }), "{error}");
    assert_eq!(documents.hits(JWKS), 1);
}

#[tokio::test]
async fn discovery_tries_rfc_8414_then_openid_with_the_issuer_path() {
    let issuer = "https://id.example.com/tenant1";
    let documents = Arc::new(Documents::default());
    // Only the OpenID form with the path appended answers.
    documents.put(
        "https://id.example.com/tenant1/.well-known/openid-configuration",
        json!({"issuer": issuer, "jwks_uri": JWKS}),
    );
    documents.put(JWKS, json!({"keys": [ec_key("k1")]}));
    let keys = cache(&documents, KeySource::Issuer(issuer.into()));
    assert!(keys.key(Some("k1"), Algorithm::ES256).await.is_ok());
    for tried in [
        "https://id.example.com/.well-known/oauth-authorization-server/tenant1",
        "https://id.example.com/.well-known/openid-configuration/tenant1",
        "https://id.example.com/tenant1/.well-known/openid-configuration",
    ] {
        assert_eq!(documents.hits(tried), 1, "{tried}");
    }
}

#[test]
fn key_source_from_config() {
    use toolgate_config::AuthConfig;
    let issuer =
        AuthConfig { issuer: Some("https://id.example.com".into()), ..AuthConfig::default() };
    assert_eq!(
        KeySource::from_config(&issuer),
        Some(KeySource::Issuer("https://id.example.com".into()))
    );
    let both = AuthConfig { jwks_url: Some(JWKS.parse().unwrap()), ..issuer };
    assert_eq!(KeySource::from_config(&both), Some(KeySource::JwksUrl(JWKS.parse().unwrap())));
    assert_eq!(KeySource::from_config(&AuthConfig::default()), None);
}

#[test]
fn metadata_urls_of_an_issuer_without_a_path() {
    let urls: Vec<String> =
        metadata_urls("https://id.example.com/").unwrap().iter().map(|u| u.to_string()).collect();
    assert_eq!(
        urls,
        [
            "https://id.example.com/.well-known/oauth-authorization-server",
            "https://id.example.com/.well-known/openid-configuration",
        ]
    );
    assert!(metadata_urls("http://id.example.com").is_err());
    assert!(metadata_urls("http://127.0.0.1:9000").is_ok());
}

#[test]
fn metadata_urls_of_an_issuer_with_a_path_in_the_spec_order() {
    let urls: Vec<String> = metadata_urls("https://auth.example.com/tenant1")
        .unwrap()
        .iter()
        .map(|u| u.to_string())
        .collect();
    assert_eq!(
        urls,
        [
            "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
            "https://auth.example.com/.well-known/openid-configuration/tenant1",
            "https://auth.example.com/tenant1/.well-known/openid-configuration",
        ]
    );
}

#[tokio::test]
async fn metadata_naming_another_issuer_is_refused() {
    let documents = Arc::new(Documents::default());
    documents.put(
        "https://id.example.com/.well-known/oauth-authorization-server",
        json!({"issuer": "https://evil.example.com", "jwks_uri": JWKS}),
    );
    let keys = cache(&documents, KeySource::Issuer("https://id.example.com".into()));
    let error = keys.key(Some("k1"), Algorithm::ES256).await.unwrap_err();
    assert!(
        error.to_string().contains("names issuer Some(\"https://evil.example.com\")"),
        "{error}"
    );
}

#[tokio::test]
async fn a_plain_http_jwks_uri_elsewhere_is_refused() {
    let documents = Arc::new(Documents::default());
    documents.put(
        "https://id.example.com/.well-known/oauth-authorization-server",
        json!({"issuer": "https://id.example.com", "jwks_uri": "http://id.example.com/jwks"}),
    );
    let keys = cache(&documents, KeySource::Issuer("https://id.example.com".into()));
    let error = keys.key(Some("k1"), Algorithm::ES256).await.unwrap_err();
    assert!(error.to_string().contains("jwks_uri must be https"), "{error}");
}

#[tokio::test]
async fn too_many_keys_are_refused() {
    let documents = Arc::new(Documents::default());
    let many: Vec<_> = (0..65).map(|i| ec_key(&format!("k{i}"))).collect();
    documents.put(JWKS, json!({ "keys": many }));
    let keys = cache(&documents, KeySource::JwksUrl(JWKS.parse().unwrap()));
    let error = keys.key(Some("k1"), Algorithm::ES256).await.unwrap_err();
    assert_eq!(error, JwksError::TooManyKeys { url: JWKS.into(), count: 65, max: 64 });
}

#[tokio::test]
async fn symmetric_and_encryption_keys_are_dropped() {
    let documents = Arc::new(Documents::default());
    let mut enc = ec_key("enc");
    enc["use"] = json!("enc");
    documents.put(
        JWKS,
        json!({"keys": [{"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"}, enc, {"kty": "weird"}]}),
    );
    let keys = cache(&documents, KeySource::JwksUrl(JWKS.parse().unwrap()));
    for kid in ["hmac", "enc"] {
        let error = keys.key(Some(kid), Algorithm::ES256).await.unwrap_err();
        assert!(matches!(error, JwksError::UnknownKey { .. }), "{kid}: {error}");
    }
}

#[tokio::test]
async fn a_token_without_kid_gets_the_only_fitting_key() {
    let documents = Arc::new(Documents::default());
    documents.put(JWKS, json!({"keys": [ec_key("k1")]}));
    let keys = cache(&documents, KeySource::JwksUrl(JWKS.parse().unwrap()));
    assert!(keys.key(None, Algorithm::ES256).await.is_ok());
    assert!(keys.key(None, Algorithm::RS256).await.is_err());
}

/// A server on 127.0.0.1 answering every path with `body`; its address.
async fn serve(body: Vec<u8>) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().fallback(move || {
        let body = body.clone();
        async move { body }
    });
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

#[tokio::test]
async fn an_oversize_jwks_is_refused_over_http() {
    let mut big = br#"{"keys": [], "padding": ""#.to_vec();
    big.extend(std::iter::repeat_n(b'x', 300 * 1024));
    big.extend_from_slice(br#""}"#);
    let addr = serve(big).await;
    let url: url::Url = format!("http://{addr}/jwks").parse().unwrap();
    let fetch = Arc::new(HttpFetch::new(Duration::from_secs(10)).unwrap());
    let keys = JwksCache::new(KeySource::JwksUrl(url.clone()), fetch, Limits::default());
    let error = keys.key(Some("k1"), Algorithm::ES256).await.unwrap_err();
    assert_eq!(
        error,
        JwksError::Fetch {
            url: url.to_string(),
            source: FetchError::TooLarge { limit: 256 * 1024 }
        }
    );
}

#[tokio::test]
async fn http_fetch_refuses_a_redirect_to_plain_http_elsewhere() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new()
        .route(
            "/away",
            axum::routing::get(|| async {
                axum::response::Redirect::temporary("http://id.example.com/jwks")
            }),
        )
        .route(
            "/here",
            axum::routing::get(|| async { axum::response::Redirect::temporary("/jwks") }),
        )
        .route("/jwks", axum::routing::get(|| async { "{}" }));
    tokio::spawn(async move { axum::serve(listener, app).await });
    let fetch = HttpFetch::new(Duration::from_secs(10)).unwrap();
    let here: url::Url = format!("http://{addr}/here").parse().unwrap();
    assert_eq!(fetch.get(&here, 100).await.unwrap(), b"{}");
    let away: url::Url = format!("http://{addr}/away").parse().unwrap();
    let error = fetch.get(&away, 100).await.unwrap_err();
    assert!(error.to_string().contains("redirect to plain http on another host"), "{error}");
}

#[tokio::test]
async fn http_fetch_reads_a_document_within_the_limit() {
    let addr = serve(br#"{"keys": []}"#.to_vec()).await;
    let url: url::Url = format!("http://{addr}/jwks").parse().unwrap();
    let fetch = HttpFetch::new(Duration::from_secs(10)).unwrap();
    assert_eq!(fetch.get(&url, 100).await.unwrap(), br#"{"keys": []}"#);
    assert_eq!(fetch.get(&url, 5).await.unwrap_err(), FetchError::TooLarge { limit: 5 });
}
