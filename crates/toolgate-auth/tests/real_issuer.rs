//! `JwtVerifier` against a real authorization server: oidc-provider (npm, run by
//! `toolgate_testkit::oidc`), found by discovery from its issuer and fetched over HTTP, with
//! tokens it issues (client credentials; authorization code with PKCE, and refresh) and
//! tokens minted with its key, a stranger's key or none.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use serde_json::{Value, json};
use sha2::Digest as _;
use toolgate_auth::{
    Fetch, FetchError, HttpFetch, Identity, JwksCache, JwksError, JwtSettings, JwtVerifier,
    KeySource, Limits, Method, TokenError,
};
use toolgate_config::AuthConfig;
use toolgate_testkit::oidc::{CI_ACME, CI_GLOBEX, OidcProvider, Sign};

/// The resource toolgate would be: the `aud` its tokens must carry.
const RESOURCE: &str = "http://127.0.0.1:9/mcp";
/// Where the authorization code is sent; nothing listens there, it is only read.
const REDIRECT_URI: &str = "http://127.0.0.1:9/callback";

/// [`HttpFetch`], counting the requests for each URL.
struct Counting {
    http: HttpFetch,
    hits: Mutex<HashMap<String, usize>>,
}

impl Counting {
    fn new() -> Arc<Counting> {
        let http = HttpFetch::new(Duration::from_secs(10)).expect("an HTTP client");
        Arc::new(Counting { http, hits: Mutex::default() })
    }

    fn hits(&self, url: &str) -> usize {
        self.hits.lock().unwrap().get(url).copied().unwrap_or(0)
    }
}

impl Fetch for Counting {
    fn get<'a>(
        &'a self,
        url: &'a url::Url,
        limit: usize,
    ) -> Pin<Box<dyn Future<Output = Result<Vec<u8>, FetchError>> + Send + 'a>> {
        *self.hits.lock().unwrap().entry(url.to_string()).or_default() += 1;
        self.http.get(url, limit)
    }
}

/// A verifier of `provider`'s tokens for [`RESOURCE`], needing `mcp:tools`, its keys found by
/// discovery (no `jwks_url`), refetched at most once per `floor`.
fn verifier(provider: &OidcProvider, fetch: &Arc<Counting>, floor: Duration) -> JwtVerifier {
    let auth = AuthConfig {
        issuer: Some(provider.issuer().to_owned()),
        audience: Some(RESOURCE.to_owned()),
        scopes: vec!["mcp:tools".into()],
        groups_claim: Some("groups".into()),
        tenant_claim: Some("tenant".into()),
        ..AuthConfig::default()
    };
    let settings = JwtSettings::from_config(&auth, RESOURCE).expect("valid settings");
    let source = KeySource::from_config(&auth).expect("a key source");
    assert_eq!(source, KeySource::Issuer(provider.issuer().to_owned()));
    let limits = Limits { refresh_floor: floor, ..Limits::default() };
    JwtVerifier::new(settings, JwksCache::new(source, fetch.clone(), limits)).expect("a verifier")
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// Claims like the provider's own access tokens for [`RESOURCE`].
fn claims(provider: &OidcProvider) -> Value {
    json!({
        "iss": provider.issuer(), "aud": RESOURCE, "sub": "minted", "client_id": "minted",
        "scope": "mcp:tools", "groups": ["oncall"], "tenant": "acme",
        "iat": now(), "exp": now() + 300,
    })
}

fn with(mut claims: Value, changes: Value) -> Value {
    for (name, value) in changes.as_object().unwrap() {
        claims[name] = value.clone();
    }
    claims
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn payload(token: &str) -> Value {
    let part = token.split('.').nth(1).expect("a JWS");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(part).expect("base64url");
    serde_json::from_slice(&bytes).expect("JSON claims")
}

fn header(token: &str) -> Value {
    let part = token.split('.').next().expect("a JWS");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(part).expect("base64url");
    serde_json::from_slice(&bytes).expect("a JSON header")
}

#[tokio::test]
async fn client_credentials_tokens_for_the_resource_give_the_clients_identity() {
    let provider = OidcProvider::start().await;
    let fetch = Counting::new();
    let verifier = verifier(&provider, &fetch, Limits::default().refresh_floor);

    let token = provider.client_credentials(CI_ACME, RESOURCE, &["mcp:tools"]).await;
    let claims = payload(&token);
    assert_eq!(claims["iss"], provider.issuer(), "iss is the issuer as configured: {claims}");
    assert_eq!(claims["aud"], RESOURCE, "aud is the resource, a string: {claims}");
    assert_eq!(header(&token)["typ"], "at+jwt");
    let identity = verifier.verify(&token).await.expect("a good token");
    assert_eq!(
        identity,
        Identity {
            principal: "ci-acme".into(),
            groups: vec!["deploy".into()],
            tenant: Some("acme".into()),
            method: Method::Jwt,
            scopes: vec!["mcp:tools".into()],
        }
    );

    let token = provider.client_credentials(CI_GLOBEX, RESOURCE, &["mcp:tools", "mcp:admin"]).await;
    let identity = verifier.verify(&token).await.expect("a good token");
    assert_eq!(identity.principal, "ci-globex");
    assert_eq!(identity.groups, Vec::<String>::new());
    assert_eq!(identity.tenant.as_deref(), Some("globex"));
    assert_eq!(identity.scopes, ["mcp:tools", "mcp:admin"]);

    // Found through RFC 8414 metadata first (oidc-provider serves it), keys fetched once.
    let metadata = provider.url("/.well-known/oauth-authorization-server");
    assert_eq!(fetch.hits(&metadata), 1);
    assert_eq!(fetch.hits(&provider.url("/.well-known/openid-configuration")), 0);
    assert_eq!(fetch.hits(&provider.url("/jwks")), 1);
}

#[tokio::test]
async fn a_token_for_another_resource_or_without_the_scope_is_refused() {
    let provider = OidcProvider::start().await;
    let verifier = verifier(&provider, &Counting::new(), Limits::default().refresh_floor);

    let other = "http://127.0.0.1:9/other";
    let token = provider.client_credentials(CI_ACME, other, &["mcp:tools"]).await;
    assert_eq!(payload(&token)["aud"], other);
    assert_eq!(
        verifier.verify(&token).await,
        Err(TokenError::WrongAudience { expected: RESOURCE.into() })
    );

    let token = provider.client_credentials(CI_ACME, RESOURCE, &["mcp:admin"]).await;
    let refused = verifier.verify(&token).await.expect_err("no mcp:tools");
    assert_eq!(refused, TokenError::InsufficientScope { missing: vec!["mcp:tools".into()] });
    assert_eq!(refused.missing_scopes(), Some(&["mcp:tools".to_owned()][..]));

    // A scope the resource does not have is dropped by the provider, not refused by it.
    let token = provider.client_credentials(CI_ACME, RESOURCE, &["mcp:other"]).await;
    assert_eq!(payload(&token).get("scope"), None);
    assert_eq!(
        verifier.verify(&token).await,
        Err(TokenError::InsufficientScope { missing: vec!["mcp:tools".into()] })
    );
}

#[tokio::test]
async fn minted_tokens_are_refused_for_the_one_thing_wrong_with_each() {
    let provider = OidcProvider::start().await;
    let verifier = verifier(&provider, &Counting::new(), Limits::default().refresh_floor);
    let good = claims(&provider);
    let mint = |claims: Value, sign: Sign| provider.mint(claims, json!({}), sign);

    // The control: minted as the provider mints, it passes.
    let token = mint(good.clone(), Sign::Provider).await;
    let identity = verifier.verify(&token).await.expect("a token like the provider's");
    assert_eq!(identity.principal, "minted");

    let expired = with(good.clone(), json!({ "iat": now() - 7200, "exp": now() - 3600 }));
    let token = mint(expired, Sign::Provider).await;
    assert_eq!(verifier.verify(&token).await, Err(TokenError::Expired));

    let token = mint(with(good.clone(), json!({ "nbf": now() + 3600 })), Sign::Provider).await;
    assert_eq!(verifier.verify(&token).await, Err(TokenError::NotYetValid));

    let elsewhere = format!("{}/", provider.issuer());
    let token = mint(with(good.clone(), json!({ "iss": elsewhere })), Sign::Provider).await;
    assert_eq!(
        verifier.verify(&token).await,
        Err(TokenError::WrongIssuer { expected: provider.issuer().into() }),
        "the issuer with a trailing slash is another issuer"
    );

    let token = mint(with(good.clone(), json!({ "exp": null })), Sign::Provider).await;
    assert_eq!(verifier.verify(&token).await, Err(TokenError::MissingClaim("exp".into())));

    let token = mint(with(good.clone(), json!({ "scope": "mcp:admin" })), Sign::Provider).await;
    assert_eq!(
        verifier.verify(&token).await,
        Err(TokenError::InsufficientScope { missing: vec!["mcp:tools".into()] })
    );

    let token = mint(good.clone(), Sign::None).await;
    assert_eq!(verifier.verify(&token).await, Err(TokenError::AlgorithmNone));

    // Tampered: the provider's signature over other claims.
    let token = mint(good.clone(), Sign::Provider).await;
    let forged = with(good.clone(), json!({ "sub": "mallory", "groups": ["admin"] }));
    let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
    parts[1] = b64(forged.to_string().as_bytes());
    assert_eq!(verifier.verify(&parts.join(".")).await, Err(TokenError::BadSignature));

    // A stranger's key under the provider's kid: the kid is known, the signature is not.
    let kid = header(&token)["kid"].clone();
    let token = provider.mint(good.clone(), json!({ "kid": kid }), Sign::Stranger).await;
    assert_eq!(verifier.verify(&token).await, Err(TokenError::BadSignature));

    // An HMAC alg is refused before any key is looked at (no key confusion).
    let token = provider.mint(good, json!({ "alg": "HS256" }), Sign::None).await;
    assert_eq!(verifier.verify(&token).await, Err(TokenError::AlgorithmNotAllowed("HS256".into())));
}

#[tokio::test]
async fn an_unknown_kid_refetches_the_keys_once_then_is_refused() {
    let provider = OidcProvider::start().await;
    let jwks = provider.url("/jwks");
    let token = provider.client_credentials(CI_ACME, RESOURCE, &["mcp:tools"]).await;
    let stranger = provider.mint(claims(&provider), json!({}), Sign::Stranger).await;
    let kid = header(&stranger)["kid"].as_str().expect("a kid").to_owned();
    assert!(kid.starts_with("stranger-"), "{kid}");
    let unknown = |refreshed| {
        Err(TokenError::Key(JwksError::UnknownKey { kid: Some(kid.clone()), refreshed }))
    };

    // With no floor: one refetch for each token with an unknown kid, no more.
    let fetch = Counting::new();
    let eager = verifier(&provider, &fetch, Duration::ZERO);
    eager.verify(&token).await.expect("a good token");
    assert_eq!(fetch.hits(&jwks), 1);
    assert_eq!(eager.verify(&stranger).await, unknown(true));
    assert_eq!(fetch.hits(&jwks), 2, "refetched once for the unknown kid");
    assert_eq!(eager.verify(&stranger).await, unknown(true));
    assert_eq!(fetch.hits(&jwks), 3);

    // With the default floor (30s), the first fetch counts: right after it, an unknown kid is
    // refused without a refetch, however often it comes, and the known key still works.
    let fetch = Counting::new();
    let floored = verifier(&provider, &fetch, Limits::default().refresh_floor);
    floored.verify(&token).await.expect("a good token");
    for _ in 0..3 {
        assert_eq!(floored.verify(&stranger).await, unknown(false));
    }
    let another = provider.mint(claims(&provider), json!({}), Sign::Stranger).await;
    assert!(matches!(
        floored.verify(&another).await,
        Err(TokenError::Key(JwksError::UnknownKey { refreshed: false, .. }))
    ));
    floored.verify(&token).await.expect("a good token");
    assert_eq!(fetch.hits(&jwks), 1);

    // On a cold cache the first fetch is the refetch: refused, fetched once.
    let fetch = Counting::new();
    let cold = verifier(&provider, &fetch, Limits::default().refresh_floor);
    assert_eq!(cold.verify(&stranger).await, unknown(true));
    assert_eq!(cold.verify(&stranger).await, unknown(false));
    assert_eq!(fetch.hits(&jwks), 1);
}

#[tokio::test]
async fn a_rotated_in_key_is_accepted_after_one_refetch() {
    let provider = OidcProvider::start().await;
    let fetch = Counting::new();
    // No floor: a refetch is allowed at once. With the default one (30s) the new key would
    // be refused until 30s after the last fetch.
    let verifier = verifier(&provider, &fetch, Duration::ZERO);
    let jwks = provider.url("/jwks");

    let before = provider.client_credentials(CI_ACME, RESOURCE, &["mcp:tools"]).await;
    assert_eq!(header(&before)["alg"], "RS256");
    verifier.verify(&before).await.expect("a good token");
    assert_eq!(fetch.hits(&jwks), 1);

    let kid = provider.rotate("ES256").await;
    let after = provider.client_credentials(CI_ACME, RESOURCE, &["mcp:tools"]).await;
    assert_eq!(header(&after)["kid"], kid.as_str(), "the provider signs with the new key");
    assert_eq!(header(&after)["alg"], "ES256");
    let identity = verifier.verify(&after).await.expect("the new key, after a refetch");
    assert_eq!(identity.principal, "ci-acme");
    assert_eq!(fetch.hits(&jwks), 2);

    // Both keys are now known: no more fetches.
    verifier.verify(&after).await.expect("the new key");
    verifier.verify(&before).await.expect("the old key, still served");
    let minted = provider.mint(claims(&provider), json!({}), Sign::Provider).await;
    assert_eq!(header(&minted)["kid"], kid.as_str());
    verifier.verify(&minted).await.expect("minted with the new key");
    assert_eq!(fetch.hits(&jwks), 2);
}

/// A PKCE pair: the verifier and its S256 challenge.
fn pkce() -> (String, String) {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("random bytes");
    let verifier = b64(&bytes);
    let challenge = b64(&sha2::Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

/// A POST of `form` to the token endpoint: its status and JSON body.
async fn token_request(provider: &OidcProvider, form: &[(&str, &str)]) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(provider.url("/token"))
        .form(form)
        .send()
        .await
        .expect("the token endpoint answers");
    let status = response.status().as_u16();
    (status, response.json().await.expect("a JSON answer"))
}

/// The query of the URL the authorization endpoint sent the browser back to.
fn callback(url: &str) -> HashMap<String, String> {
    assert!(url.starts_with(REDIRECT_URI), "back at the redirect_uri: {url}");
    let url = url::Url::parse(url).expect("a URL");
    url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect()
}

/// The authorization endpoint's URL for `client_id`, asking for `mcp:tools` on [`RESOURCE`] as
/// `login_hint`, with the PKCE `challenge` if any.
fn authorize_url(
    provider: &OidcProvider,
    client_id: &str,
    login_hint: &str,
    challenge: Option<&str>,
) -> String {
    let mut query = vec![
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", REDIRECT_URI),
        ("scope", "mcp:tools"),
        ("resource", RESOURCE),
        ("state", "s-123"),
        ("login_hint", login_hint),
    ];
    if let Some(challenge) = challenge {
        query.extend([("code_challenge", challenge), ("code_challenge_method", "S256")]);
    }
    url::Url::parse_with_params(&provider.url("/auth"), &query).expect("a URL").to_string()
}

/// A code for `login_hint`, through the provider's automatic login and consent.
async fn code_for(
    provider: &OidcProvider,
    client_id: &str,
    login_hint: &str,
    challenge: &str,
) -> String {
    let back =
        provider.authorize(&authorize_url(provider, client_id, login_hint, Some(challenge))).await;
    let back = callback(&back);
    assert_eq!(back["state"], "s-123");
    assert_eq!(back["iss"], provider.issuer(), "RFC 9207 iss in the response");
    back.get("code").unwrap_or_else(|| panic!("a code: {back:?}")).clone()
}

/// The token endpoint's answer to `code` with `code_verifier`.
async fn exchange(
    provider: &OidcProvider,
    client_id: &str,
    code: &str,
    code_verifier: &str,
) -> (u16, Value) {
    let form = [
        ("grant_type", "authorization_code"),
        ("client_id", client_id),
        ("code", code),
        ("redirect_uri", REDIRECT_URI),
        ("code_verifier", code_verifier),
        ("resource", RESOURCE),
    ];
    token_request(provider, &form).await
}

#[tokio::test]
async fn the_authorization_code_flow_with_pkce_and_refresh_by_hand() {
    let provider = OidcProvider::start().await;
    let verifier = verifier(&provider, &Counting::new(), Limits::default().refresh_floor);

    // Dynamic client registration, as an MCP client does: a public client.
    let registered: Value = reqwest::Client::new()
        .post(provider.url("/reg"))
        .json(&json!({
            "client_name": "toolgate test",
            "redirect_uris": [REDIRECT_URI],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }))
        .send()
        .await
        .expect("registration answers")
        .error_for_status()
        .expect("registration succeeds")
        .json()
        .await
        .expect("a JSON answer");
    let client_id = registered["client_id"].as_str().expect("a client_id");

    // Without PKCE the provider refuses, back at the redirect_uri.
    let back = provider.authorize(&authorize_url(&provider, client_id, "alice", None)).await;
    let back = callback(&back);
    assert_eq!(back.get("error").map(String::as_str), Some("invalid_request"), "{back:?}");
    assert!(!back.contains_key("code"));

    // A code with another verifier is refused.
    let (_, challenge) = pkce();
    let code = code_for(&provider, client_id, "alice", &challenge).await;
    let (other, _) = pkce();
    let (status, body) = exchange(&provider, client_id, &code, &other).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "{body}");

    for (user, groups, tenant) in [("alice", vec!["oncall"], "acme"), ("bob", vec![], "globex")] {
        let (code_verifier, challenge) = pkce();
        let code = code_for(&provider, client_id, user, &challenge).await;
        let (status, tokens) = exchange(&provider, client_id, &code, &code_verifier).await;
        assert_eq!(status, 200, "{tokens}");
        let access = tokens["access_token"].as_str().expect("an access token");
        assert_eq!(payload(access)["client_id"], client_id);
        assert_eq!(payload(access)["aud"], RESOURCE);
        let identity = verifier.verify(access).await.expect("the user's token");
        assert_eq!(identity.principal, user);
        assert_eq!(identity.groups, groups);
        assert_eq!(identity.tenant.as_deref(), Some(tenant));

        // The refresh token works once; the one it comes back with replaces it.
        let refresh = tokens["refresh_token"].as_str().expect("a refresh token");
        let form = [
            ("grant_type", "refresh_token"),
            ("client_id", client_id),
            ("refresh_token", refresh),
            ("resource", RESOURCE),
        ];
        let (status, refreshed) = token_request(&provider, &form).await;
        assert_eq!(status, 200, "{refreshed}");
        let access = refreshed["access_token"].as_str().expect("a new access token");
        assert_eq!(verifier.verify(access).await.expect("the refreshed token").principal, user);
        assert_ne!(refreshed["refresh_token"].as_str(), Some(refresh), "rotated");
        let (status, body) = token_request(&provider, &form).await;
        assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "{body}");
    }
}
