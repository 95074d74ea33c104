//! The authenticator with API keys (tokens are tested against a real issuer in the `it`
//! suite): who a credential proves, and the answers to those it does not.

use std::collections::BTreeMap;

use argon2::PasswordHasher as _;
use http::HeaderMap;
use toolgate_config::{ApiKeyConfig, AuthConfig, KeyHash};

use super::*;

fn resource() -> url::Url {
    url::Url::parse("http://127.0.0.1:8931/mcp").unwrap()
}

/// `[auth]` with one key, `ci` (group `deploy`, tenant `acme`), whose key is returned.
fn with_key(allow_anonymous: bool) -> (AuthConfig, String) {
    let key = toolgate_auth::generate_key().expect("a key");
    let mut api_keys = BTreeMap::new();
    api_keys.insert(
        "ci".to_owned(),
        ApiKeyConfig {
            hash: key.hash.clone(),
            groups: vec!["deploy".into()],
            tenant: Some("acme".into()),
        },
    );
    (AuthConfig { api_keys, allow_anonymous, ..AuthConfig::default() }, key.key)
}

fn headers(authorization: Option<&str>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Some(value) = authorization {
        headers.insert(header::AUTHORIZATION, value.parse().unwrap());
    }
    headers
}

async fn outcome(auth: &Authenticator, authorization: Option<&str>) -> Result<Principal, Response> {
    auth.authenticate(&headers(authorization)).await
}

fn challenge(response: &Response) -> &str {
    response.headers()[header::WWW_AUTHENTICATE].to_str().unwrap()
}

#[tokio::test]
async fn a_key_is_its_name_groups_and_tenant() {
    let (config, key) = with_key(false);
    let auth = Authenticator::new(&config, &resource()).unwrap();
    let principal = outcome(&auth, Some(&format!("Bearer {key}"))).await.expect("the key");
    assert_eq!(principal.to_string(), "key:ci@acme");
    assert_eq!(principal.groups, ["deploy"]);
    // The scheme is case-insensitive (RFC 6750 via RFC 7235).
    let principal = outcome(&auth, Some(&format!("bearer {key}"))).await.expect("lower case");
    assert_eq!(principal.id, "ci");
}

#[tokio::test]
async fn no_credential_is_401_unless_anonymous_is_allowed() {
    let (config, _) = with_key(false);
    let auth = Authenticator::new(&config, &resource()).unwrap();
    let refused = outcome(&auth, None).await.expect_err("no credential");
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    // Keys only: no authorization server to name, and no token was refused.
    assert_eq!(challenge(&refused), "Bearer");

    let (config, _) = with_key(true);
    let auth = Authenticator::new(&config, &resource()).unwrap();
    let principal = outcome(&auth, None).await.expect("anonymous is let in");
    assert!(principal.is_anonymous());
}

#[tokio::test]
async fn a_wrong_credential_is_401_even_where_anonymous_is_allowed() {
    let (config, key) = with_key(true);
    let auth = Authenticator::new(&config, &resource()).unwrap();
    for wrong in [
        format!("Bearer {key}x"),
        "Bearer ".to_owned(),
        format!("Basic {key}"),
        key.clone(),
        "Bearer a.b.c".to_owned(),
    ] {
        let refused = outcome(&auth, Some(&wrong)).await.expect_err(&wrong);
        assert_eq!(refused.status(), StatusCode::UNAUTHORIZED, "{wrong}");
        assert_eq!(challenge(&refused), "Bearer error=\"invalid_token\"", "{wrong}");
    }
    let mut twice = headers(Some(&format!("Bearer {key}")));
    twice.append(header::AUTHORIZATION, format!("Bearer {key}").parse().unwrap());
    let refused = auth.authenticate(&twice).await.expect_err("two headers");
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn an_argon2_key_is_checked_off_the_runtime() {
    let salt = argon2::password_hash::SaltString::from_b64("c2FsdHNhbHRzYWx0").unwrap();
    // The lowest cost argon2 takes: this tests where the check runs, not its strength.
    let params = argon2::Params::new(8, 1, 1, None).unwrap();
    let hasher = argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
    let phc = hasher.hash_password(b"tg_slow", &salt).unwrap().to_string();
    let mut api_keys = BTreeMap::new();
    api_keys.insert(
        "slow".to_owned(),
        ApiKeyConfig { hash: KeyHash::Argon2(phc), groups: vec![], tenant: None },
    );
    let config = AuthConfig { api_keys, ..AuthConfig::default() };
    let auth = Authenticator::new(&config, &resource()).unwrap();
    // A current-thread runtime: a check on it would still work, so also count the blocking
    // pool's use through the slots being given back.
    assert_eq!(outcome(&auth, Some("Bearer tg_slow")).await.unwrap().to_string(), "key:slow");
    assert!(outcome(&auth, Some("Bearer tg_fast")).await.is_err());
    assert_eq!(auth.argon2_slots.available_permits(), ARGON2_AT_ONCE);
}

#[tokio::test]
async fn with_an_issuer_the_challenge_names_the_metadata_and_scopes() {
    let config = AuthConfig {
        issuer: Some("http://127.0.0.1:9/".into()),
        scopes: vec!["mcp:tools".into()],
        ..AuthConfig::default()
    };
    let auth = Authenticator::new(&config, &resource()).unwrap();
    let refused = outcome(&auth, None).await.expect_err("no token");
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        challenge(&refused),
        "Bearer resource_metadata=\"http://127.0.0.1:8931/.well-known/oauth-protected-resource/mcp\", \
         scope=\"mcp:tools\""
    );
    let metadata = auth.metadata().expect("a document");
    assert_eq!(metadata["resource"], "http://127.0.0.1:8931/mcp");
    assert_eq!(metadata["authorization_servers"][0], "http://127.0.0.1:9/");
    assert_eq!(metadata["scopes_supported"][0], "mcp:tools");
    // A key-shaped credential is not sent to the issuer (nobody listens at port 9): it is
    // checked against the (empty) keys and refused at once.
    let refused = outcome(&auth, Some("Bearer tg_not-a-token")).await.expect_err("no such key");
    assert!(challenge(&refused).ends_with("error=\"invalid_token\""), "{}", challenge(&refused));
}

#[tokio::test]
async fn the_audience_is_the_configured_one_else_the_endpoint() {
    let config = AuthConfig {
        issuer: Some("https://id.example".into()),
        audience: Some("https://gw.example/mcp".into()),
        ..AuthConfig::default()
    };
    let auth = Authenticator::new(&config, &resource()).unwrap();
    assert_eq!(auth.resource().as_str(), "https://gw.example/mcp");
    assert_eq!(auth.metadata().unwrap()["resource"], "https://gw.example/mcp");
    let config = AuthConfig { audience: Some("not a url".into()), ..config };
    assert!(matches!(Authenticator::new(&config, &resource()), Err(AuthSetupError::Resource(_))));
}

#[test]
fn only_three_dotted_parts_look_like_a_token() {
    assert!(looks_like_jwt("a.b.c"));
    assert!(!looks_like_jwt("tg_abc"));
    assert!(!looks_like_jwt("a.b"));
    assert!(!looks_like_jwt("a.b.c.d"));
}

/// An introspection endpoint on 127.0.0.1 that calls `opaque-alice` active for the resource
/// and every other token inactive, counting the requests; its URL.
async fn introspection_endpoint(
    hits: Arc<std::sync::atomic::AtomicUsize>,
) -> (url::Url, tokio::task::JoinHandle<()>) {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let app = axum::Router::new().route(
        "/introspect",
        axum::routing::post(move |body: String| {
            let hits = hits.clone();
            async move {
                hits.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let answer = if body.starts_with("token=opaque-alice&") {
                    serde_json::json!({
                        "active": true, "sub": "alice", "aud": "http://127.0.0.1:8931/mcp",
                        "iss": "http://127.0.0.1:9", "scope": "mcp:tools", "exp": now + 600,
                        "token_type": "Bearer",
                    })
                } else {
                    serde_json::json!({ "active": false })
                };
                axum::Json(answer)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/introspect", listener.local_addr().unwrap());
    let server = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url::Url::parse(&url).unwrap(), server)
}

fn with_introspection(url: url::Url, key: &AuthConfig) -> AuthConfig {
    AuthConfig {
        issuer: Some("http://127.0.0.1:9".into()),
        introspection: Some(toolgate_config::IntrospectionConfig {
            url,
            client_id: "toolgate".into(),
            client_secret: toolgate_config::Secret::new("secret"),
            cache_size: 16,
            cache_ttl: std::time::Duration::from_secs(60),
        }),
        ..key.clone()
    }
}

#[tokio::test]
async fn an_opaque_token_is_introspected_after_the_keys() {
    let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (url, server) = introspection_endpoint(hits.clone()).await;
    let (keys, key) = with_key(false);
    let auth = Authenticator::new(&with_introspection(url, &keys), &resource()).unwrap();
    let count = || hits.load(std::sync::atomic::Ordering::SeqCst);

    let principal = outcome(&auth, Some("Bearer opaque-alice")).await.expect("active");
    assert_eq!(principal.to_string(), "token:alice");
    assert_eq!(count(), 1);
    outcome(&auth, Some("Bearer opaque-alice")).await.expect("cached");
    assert_eq!(count(), 1, "the cache answered");

    // An API key is checked first, here: the endpoint is not asked.
    assert_eq!(outcome(&auth, Some(&format!("Bearer {key}"))).await.unwrap().id, "ci");
    assert_eq!(count(), 1);

    let refused = outcome(&auth, Some("Bearer opaque-revoked")).await.expect_err("inactive");
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert!(challenge(&refused).contains("error=\"invalid_token\""), "{}", challenge(&refused));
    assert_eq!(count(), 2);

    server.abort();

    // No endpoint (nothing listens there): the token cannot be checked, 503 and no challenge.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = url::Url::parse(&format!("http://{}/introspect", closed.local_addr().unwrap()));
    drop(closed);
    let auth = Authenticator::new(&with_introspection(url.unwrap(), &keys), &resource()).unwrap();
    let refused = outcome(&auth, Some("Bearer opaque-alice")).await.expect_err("unavailable");
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(refused.headers().get(header::WWW_AUTHENTICATE).is_none());
}
