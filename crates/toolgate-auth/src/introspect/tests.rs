//! The introspector against a fake endpoint: what it sends, how it reads the answer, and the
//! cache (on tokio's paused clock).

use std::sync::Mutex as StdMutex;

use serde_json::json;

use super::*;

const ISSUER: &str = "https://id.example.com";
const AUDIENCE: &str = "https://gw.example.com/mcp";

/// Answers each token with what `answers` holds for it (`active: false` otherwise), or
/// fails when `down`; records what it was sent.
#[derive(Default)]
struct Fake {
    answers: StdMutex<HashMap<String, Result<Vec<u8>, FetchError>>>,
    sent: StdMutex<Vec<(String, String)>>,
}

impl Fake {
    fn answer(&self, token: &str, answer: Value) {
        self.answers.lock().unwrap().insert(token.to_owned(), Ok(answer.to_string().into_bytes()));
    }

    fn fail(&self, token: &str, error: FetchError) {
        self.answers.lock().unwrap().insert(token.to_owned(), Err(error));
    }

    fn requests(&self) -> usize {
        self.sent.lock().unwrap().len()
    }
}

impl PostForm for Fake {
    fn post_form<'a>(
        &'a self,
        _url: &'a url::Url,
        authorization: &'a Secret,
        body: String,
        _limit: usize,
    ) -> Pin<Box<dyn Future<Output = Result<Vec<u8>, FetchError>> + Send + 'a>> {
        let token = url::form_urlencoded::parse(body.as_bytes())
            .find(|(name, _)| name == "token")
            .map(|(_, value)| value.into_owned())
            .unwrap_or_default();
        self.sent.lock().unwrap().push((authorization.expose().to_owned(), body));
        let answer = self
            .answers
            .lock()
            .unwrap()
            .get(&token)
            .cloned()
            .unwrap_or_else(|| Ok(br#"{"active":false}"#.to_vec()));
        Box::pin(async move { answer })
    }
}

fn settings() -> JwtSettings {
    JwtSettings {
        issuer: ISSUER.into(),
        audience: AUDIENCE.into(),
        scopes: vec!["mcp:tools".into()],
        principal_claim: "sub".into(),
        groups_claim: Some("groups".into()),
        tenant_claim: Some("tenant".into()),
        clock_skew: Duration::from_secs(60),
        algorithms: Vec::new(),
    }
}

fn introspector(fake: &Arc<Fake>, cache_size: usize, cache_ttl: Duration) -> Introspector {
    let config = IntrospectionConfig {
        url: url::Url::parse("https://id.example.com/introspect").unwrap(),
        client_id: "toolgate".into(),
        client_secret: Secret::new("s3cret:&="),
        cache_size,
        cache_ttl,
    };
    Introspector::new(settings(), &config, fake.clone())
}

/// An active answer for alice, good for an hour.
fn active() -> Value {
    json!({
        "active": true, "iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "client_id": "app",
        "scope": "mcp:tools mcp:admin", "groups": ["oncall"], "tenant": "acme",
        "token_type": "Bearer", "exp": unix_now() + 3600, "iat": unix_now(),
    })
}

fn with(mut answer: Value, changes: Value) -> Value {
    for (name, value) in changes.as_object().unwrap() {
        if value.is_null() {
            answer.as_object_mut().unwrap().remove(name);
        } else {
            answer[name] = value.clone();
        }
    }
    answer
}

#[tokio::test]
async fn an_active_answer_is_the_identity_and_the_request_is_rfc_7662() {
    let fake = Arc::new(Fake::default());
    fake.answer("opaque-1", active());
    let introspector = introspector(&fake, 10, Duration::from_secs(60));
    let identity = introspector.verify("opaque-1").await.expect("active");
    assert_eq!(
        identity,
        Identity {
            principal: "alice".into(),
            groups: vec!["oncall".into()],
            tenant: Some("acme".into()),
            method: Method::Introspection,
            scopes: vec!["mcp:tools".into(), "mcp:admin".into()],
        }
    );
    let (authorization, body) = fake.sent.lock().unwrap()[0].clone();
    assert_eq!(body, "token=opaque-1&token_type_hint=access_token");
    // client_secret_basic, the id and secret form-encoded first (RFC 6749 §2.3.1).
    let basic = authorization.strip_prefix("Basic ").expect("Basic");
    let pair = base64::engine::general_purpose::STANDARD.decode(basic).unwrap();
    assert_eq!(String::from_utf8(pair).unwrap(), "toolgate:s3cret%3A%26%3D");
    assert!(!format!("{introspector:?}").contains("s3cret"), "the secret is never shown");
}

#[tokio::test]
async fn a_client_token_without_sub_is_its_clients() {
    let fake = Arc::new(Fake::default());
    fake.answer("cc", with(active(), json!({"sub": null, "client_id": "ci-acme"})));
    let introspector = introspector(&fake, 10, Duration::from_secs(60));
    assert_eq!(introspector.verify("cc").await.expect("active").principal, "ci-acme");
}

#[tokio::test]
async fn answers_wrong_in_one_way_each_are_refused() {
    let now = unix_now();
    let cases = [
        (json!({"active": false}), TokenError::Inactive),
        (with(active(), json!({"active": "true"})), TokenError::Inactive),
        (with(active(), json!({"token_type": "refresh_token"})), TokenError::Inactive),
        (with(active(), json!({"exp": now - 120})), TokenError::Expired),
        (with(active(), json!({"exp": null})), TokenError::MissingClaim("exp".into())),
        (with(active(), json!({"nbf": now + 120})), TokenError::NotYetValid),
        (
            with(active(), json!({"iss": "https://other.example.com"})),
            TokenError::WrongIssuer { expected: ISSUER.into() },
        ),
        (
            with(active(), json!({"aud": "https://other.example.com/mcp"})),
            TokenError::WrongAudience { expected: AUDIENCE.into() },
        ),
        (
            with(active(), json!({"aud": ["https://other.example.com/mcp"]})),
            TokenError::WrongAudience { expected: AUDIENCE.into() },
        ),
        (with(active(), json!({"aud": null})), TokenError::MissingClaim("aud".into())),
        (
            with(active(), json!({"scope": "mcp:admin"})),
            TokenError::InsufficientScope { missing: vec!["mcp:tools".into()] },
        ),
        (
            with(active(), json!({"sub": null, "client_id": null})),
            TokenError::MissingClaim("sub".into()),
        ),
    ];
    for (answer, expected) in cases {
        let fake = Arc::new(Fake::default());
        fake.answer("t", answer.clone());
        let introspector = introspector(&fake, 10, Duration::from_secs(60));
        assert_eq!(introspector.verify("t").await.unwrap_err(), expected, "{answer}");
        assert_eq!(introspector.cached(), 0, "a refusal is not cached: {answer}");
    }
    // Within the skew, a just-expired token still passes.
    let fake = Arc::new(Fake::default());
    fake.answer("t", with(active(), json!({"exp": now - 10})));
    assert!(introspector(&fake, 10, Duration::from_secs(60)).verify("t").await.is_ok());
    // Aud as an array containing the resource.
    fake.answer("u", with(active(), json!({"aud": ["x", AUDIENCE]})));
    assert!(introspector(&fake, 10, Duration::from_secs(60)).verify("u").await.is_ok());
}

#[tokio::test]
async fn an_endpoint_that_fails_is_unavailable_not_a_refusal() {
    let fake = Arc::new(Fake::default());
    fake.fail("down", FetchError::Http("connection refused".into()));
    fake.fail("500", FetchError::Status(500));
    fake.fail("big", FetchError::TooLarge { limit: MAX_RESPONSE });
    fake.answers.lock().unwrap().insert("html".into(), Ok(b"<html>".to_vec()));
    fake.answers.lock().unwrap().insert("array".into(), Ok(b"[true]".to_vec()));
    let introspector = introspector(&fake, 10, Duration::from_secs(60));
    for token in ["down", "500", "big", "html", "array"] {
        let error = introspector.verify(token).await.unwrap_err();
        assert!(error.is_unavailable(), "{token}: {error}");
    }
    assert_eq!(introspector.cached(), 0);
    let long = "x".repeat(MAX_TOKEN_LEN + 1);
    assert!(matches!(introspector.verify(&long).await, Err(TokenError::TooLong { .. })));
    assert_eq!(fake.requests(), 5, "a token too long is not sent");
}

#[tokio::test(start_paused = true)]
async fn the_cache_answers_until_its_ttl_and_never_past_exp() {
    let fake = Arc::new(Fake::default());
    fake.answer("a", active());
    // Expires in 20 s (beyond the skew it would still pass, but the cache keeps it only 20 s).
    fake.answer("short", with(active(), json!({"exp": unix_now() + 20})));
    let introspector = introspector(&fake, 10, Duration::from_secs(60));

    introspector.verify("a").await.expect("active");
    introspector.verify("a").await.expect("cached");
    assert_eq!(fake.requests(), 1, "the second answer is the cache's");
    // The token revoked at the issuer is still served from the cache until the TTL.
    fake.answer("a", json!({"active": false}));
    tokio::time::advance(Duration::from_secs(59)).await;
    introspector.verify("a").await.expect("still cached");
    assert_eq!(fake.requests(), 1);
    tokio::time::advance(Duration::from_secs(2)).await;
    assert_eq!(introspector.verify("a").await.unwrap_err(), TokenError::Inactive);
    assert_eq!(fake.requests(), 2);

    introspector.verify("short").await.expect("active");
    tokio::time::advance(Duration::from_secs(19)).await;
    introspector.verify("short").await.expect("cached");
    assert_eq!(fake.requests(), 3);
    tokio::time::advance(Duration::from_secs(2)).await;
    introspector.verify("short").await.expect("asked again");
    assert_eq!(fake.requests(), 4, "kept no longer than exp");
}

#[tokio::test(start_paused = true)]
async fn the_cache_is_bounded_and_evicts_the_oldest() {
    let fake = Arc::new(Fake::default());
    for token in ["1", "2", "3"] {
        fake.answer(token, active());
    }
    let introspector = introspector(&fake, 2, Duration::from_secs(60));
    for token in ["1", "2", "3"] {
        introspector.verify(token).await.expect("active");
    }
    assert_eq!(introspector.cached(), 2);
    assert_eq!(fake.requests(), 3);
    introspector.verify("3").await.expect("cached");
    introspector.verify("2").await.expect("cached");
    assert_eq!(fake.requests(), 3);
    introspector.verify("1").await.expect("asked again: it was the oldest");
    assert_eq!(fake.requests(), 4);
    assert_eq!(introspector.cached(), 2);
    // The key is the token's digest, never the token.
    let digest: [u8; 32] = sha2::Sha256::digest(b"1").into();
    assert!(introspector.cache.lock().unwrap().entries.contains_key(&digest));

    let fake = Arc::new(Fake::default());
    fake.answer("a", active());
    let uncached = introspector_of(&fake, 0);
    uncached.verify("a").await.expect("active");
    uncached.verify("a").await.expect("active");
    assert_eq!((fake.requests(), uncached.cached()), (2, 0), "size 0: no cache");
}

fn introspector_of(fake: &Arc<Fake>, size: usize) -> Introspector {
    introspector(fake, size, Duration::from_secs(60))
}

/// Answers every token inactive, each answer held until `release` is notified; counts the
/// requests in flight at most.
#[derive(Default)]
struct Slow {
    now: std::sync::atomic::AtomicUsize,
    most: std::sync::atomic::AtomicUsize,
    release: tokio::sync::Notify,
}

impl PostForm for Slow {
    fn post_form<'a>(
        &'a self,
        _url: &'a url::Url,
        _authorization: &'a Secret,
        _body: String,
        _limit: usize,
    ) -> Pin<Box<dyn Future<Output = Result<Vec<u8>, FetchError>> + Send + 'a>> {
        use std::sync::atomic::Ordering::SeqCst;
        let now = self.now.fetch_add(1, SeqCst) + 1;
        self.most.fetch_max(now, SeqCst);
        Box::pin(async move {
            self.release.notified().await;
            self.now.fetch_sub(1, SeqCst);
            Ok(br#"{"active":false}"#.to_vec())
        })
    }
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_unknown_tokens_reaches_the_endpoint_a_few_at_a_time() {
    use std::sync::atomic::Ordering::SeqCst;
    let slow = Arc::new(Slow::default());
    let config = IntrospectionConfig {
        url: url::Url::parse("https://id.example.com/introspect").unwrap(),
        client_id: "toolgate".into(),
        client_secret: Secret::new("s3cret"),
        cache_size: 16,
        cache_ttl: Duration::from_secs(60),
    };
    let introspector = Arc::new(Introspector::new(settings(), &config, slow.clone()));
    let flood: Vec<_> = (0..MOST_IN_FLIGHT * 3)
        .map(|i| {
            let introspector = introspector.clone();
            tokio::spawn(async move { introspector.verify(&format!("made-up-{i}")).await })
        })
        .collect();
    // Let every task run until it waits: on the endpoint, or for a permit.
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert_eq!(slow.most.load(SeqCst), MOST_IN_FLIGHT, "the rest wait for a permit");
    let mut refused = 0;
    for task in flood {
        while !task.is_finished() {
            slow.release.notify_waiters();
            tokio::task::yield_now().await;
        }
        refused += usize::from(matches!(task.await.unwrap(), Err(TokenError::Inactive)));
    }
    assert_eq!(refused, MOST_IN_FLIGHT * 3, "each was asked about, and none got in");
    assert_eq!(slow.most.load(SeqCst), MOST_IN_FLIGHT);
}
