//! Tokens signed with P-256 keys made here, their JWKS served by an in-memory [`Fetch`]
//! (on tokio's paused clock where the refresh floor matters) or by a server on 127.0.0.1.
//! One test per way a token is refused.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use jsonwebtoken::{EncodingKey, Header};
use p256::ecdsa::SigningKey;
use p256::pkcs8::EncodePrivateKey as _;
use serde_json::{Value, json};

use super::*;
use crate::fetch::{HttpFetch, Limits};
use crate::jwks::KeySource;
use crate::jwks::tests::Documents;

const ISSUER: &str = "https://id.example.com";
const AUDIENCE: &str = "https://gw.example.com/mcp";
const JWKS: &str = "https://id.example.com/jwks";

/// A signing key and its public JWK.
struct Signer {
    kid: String,
    encoding: EncodingKey,
    jwk: Value,
}

impl Signer {
    fn new(kid: &str) -> Signer {
        let key = SigningKey::random(&mut rand_core::OsRng);
        let der = key.to_pkcs8_der().expect("PKCS#8");
        let point = key.verifying_key().to_encoded_point(false);
        let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        let jwk = json!({
            "kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "alg": "ES256",
            "x": b64(point.x().expect("x")), "y": b64(point.y().expect("y")),
        });
        Signer { kid: kid.to_owned(), encoding: EncodingKey::from_ec_der(der.as_bytes()), jwk }
    }

    fn sign(&self, claims: &Value) -> String {
        self.sign_as(&self.kid, claims)
    }

    fn sign_as(&self, kid: &str, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("signing succeeds")
    }
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

fn claims() -> Value {
    json!({
        "iss": ISSUER, "aud": AUDIENCE, "sub": "ada", "exp": now() + 600, "nbf": now() - 10,
        "scope": "mcp:tools openid", "groups": ["oncall", "dev"], "org": "acme",
    })
}

fn settings() -> JwtSettings {
    let auth = AuthConfig {
        issuer: Some(ISSUER.into()),
        scopes: vec!["mcp:tools".into()],
        groups_claim: Some("groups".into()),
        tenant_claim: Some("org".into()),
        ..AuthConfig::default()
    };
    JwtSettings::from_config(&auth, AUDIENCE).expect("valid settings")
}

fn verifier(documents: &Arc<Documents>, keys: &[&Signer]) -> JwtVerifier {
    let jwks: Vec<Value> = keys.iter().map(|k| k.jwk.clone()).collect();
    documents.put(JWKS, json!({ "keys": jwks }));
    let cache = JwksCache::new(
        KeySource::JwksUrl(JWKS.parse().unwrap()),
        documents.clone(),
        Limits::default(),
    );
    JwtVerifier::new(settings(), cache).expect("valid verifier")
}

async fn refused(claims: Value) -> TokenError {
    let signer = Signer::new("k1");
    let verifier = verifier(&Arc::new(Documents::default()), &[&signer]);
    verifier.verify(&signer.sign(&claims)).await.expect_err("must be refused")
}

fn unsigned(header: Value, claims: &Value) -> String {
    let b64 = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    format!("{}.{}.", b64(&header), b64(claims))
}

#[tokio::test]
async fn a_good_token_gives_its_identity() {
    let signer = Signer::new("k1");
    let verifier = verifier(&Arc::new(Documents::default()), &[&signer]);
    let identity = verifier.verify(&signer.sign(&claims())).await.expect("accepted");
    assert_eq!(
        identity,
        Identity {
            principal: "ada".into(),
            groups: vec!["oncall".into(), "dev".into()],
            tenant: Some("acme".into()),
            method: Method::Jwt,
            scopes: vec!["mcp:tools".into(), "openid".into()],
        }
    );
}

#[tokio::test]
async fn scopes_as_an_scp_array_and_audiences_as_an_array() {
    let mut claims = claims();
    claims.as_object_mut().unwrap().remove("scope");
    claims["scp"] = json!(["mcp:tools"]);
    claims["aud"] = json!(["other", AUDIENCE]);
    let signer = Signer::new("k1");
    let verifier = verifier(&Arc::new(Documents::default()), &[&signer]);
    let identity = verifier.verify(&signer.sign(&claims)).await.expect("accepted");
    assert_eq!(identity.scopes, ["mcp:tools"]);
}

#[tokio::test(start_paused = true)]
async fn an_unknown_kid_refreshes_the_keys_once_then_is_refused() {
    let documents = Arc::new(Documents::default());
    let signer = Signer::new("k1");
    let verifier = verifier(&documents, &[&signer]);
    verifier.verify(&signer.sign(&claims())).await.expect("accepted");
    assert_eq!(documents.hits(JWKS), 1);

    tokio::time::advance(Duration::from_secs(31)).await;
    let token = signer.sign_as("rotated", &claims());
    let error = verifier.verify(&token).await.unwrap_err();
    assert_eq!(
        error,
        TokenError::Key(JwksError::UnknownKey { kid: Some("rotated".into()), refreshed: true })
    );
    assert_eq!(documents.hits(JWKS), 2, "refetched once");
    let error = verifier.verify(&token).await.unwrap_err();
    assert_eq!(
        error,
        TokenError::Key(JwksError::UnknownKey { kid: Some("rotated".into()), refreshed: false })
    );
    assert_eq!(documents.hits(JWKS), 2, "not again within the floor");
}

#[tokio::test]
async fn expired() {
    let mut claims = claims();
    claims["exp"] = json!(now() - 120);
    assert_eq!(refused(claims).await, TokenError::Expired);
}

#[tokio::test]
async fn expired_within_the_skew_is_accepted() {
    let mut claims = claims();
    claims["exp"] = json!(now() - 30);
    let signer = Signer::new("k1");
    let verifier = verifier(&Arc::new(Documents::default()), &[&signer]);
    assert!(verifier.verify(&signer.sign(&claims)).await.is_ok());
}

#[tokio::test]
async fn not_yet_valid() {
    let mut claims = claims();
    claims["nbf"] = json!(now() + 120);
    assert_eq!(refused(claims).await, TokenError::NotYetValid);
}

#[tokio::test]
async fn wrong_audience() {
    let mut claims = claims();
    claims["aud"] = json!("https://other.example.com/mcp");
    assert_eq!(refused(claims).await, TokenError::WrongAudience { expected: AUDIENCE.into() });
}

#[tokio::test]
async fn wrong_issuer() {
    let mut claims = claims();
    claims["iss"] = json!("https://id.example.com/"); // a trailing slash is another issuer
    assert_eq!(refused(claims).await, TokenError::WrongIssuer { expected: ISSUER.into() });
}

#[tokio::test]
async fn missing_exp() {
    let mut claims = claims();
    claims.as_object_mut().unwrap().remove("exp");
    assert_eq!(refused(claims).await, TokenError::MissingClaim("exp".into()));
}

#[tokio::test]
async fn missing_principal() {
    let mut claims = claims();
    claims.as_object_mut().unwrap().remove("sub");
    assert_eq!(refused(claims).await, TokenError::MissingClaim("sub".into()));
}

#[tokio::test]
async fn bad_signature() {
    let (good, forger) = (Signer::new("k1"), Signer::new("k1"));
    let verifier = verifier(&Arc::new(Documents::default()), &[&good]);
    let error = verifier.verify(&forger.sign(&claims())).await.unwrap_err();
    assert_eq!(error, TokenError::BadSignature);
}

#[tokio::test]
async fn alg_none() {
    let signer = Signer::new("k1");
    let verifier = verifier(&Arc::new(Documents::default()), &[&signer]);
    let token = unsigned(json!({"alg": "none", "kid": "k1"}), &claims());
    assert_eq!(verifier.verify(&token).await.unwrap_err(), TokenError::AlgorithmNone);
}

#[tokio::test]
async fn hmac_is_refused_even_with_a_symmetric_key_in_the_set() {
    // The classic confusion: a token "signed" with HS256 using a key the server would load.
    let documents = Arc::new(Documents::default());
    let signer = Signer::new("k1");
    let verifier = verifier(&documents, &[&signer]);
    documents
        .put(JWKS, json!({"keys": [signer.jwk, {"kty": "oct", "kid": "k1", "k": "c2VjcmV0"}]}));
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("k1".into());
    let token =
        jsonwebtoken::encode(&header, &claims(), &EncodingKey::from_secret(b"secret")).unwrap();
    assert_eq!(
        verifier.verify(&token).await.unwrap_err(),
        TokenError::AlgorithmNotAllowed("HS256".into())
    );
    assert_eq!(documents.hits(JWKS), 0, "refused before any key is fetched");
}

#[test]
fn hmac_settings_are_refused() {
    let auth = AuthConfig {
        issuer: Some(ISSUER.into()),
        algorithms: vec!["HS256".into()],
        ..AuthConfig::default()
    };
    assert_eq!(
        JwtSettings::from_config(&auth, AUDIENCE).unwrap_err(),
        SettingsError::Algorithm("HS256".into())
    );
}

#[tokio::test]
async fn an_algorithm_outside_the_allowlist() {
    let signer = Signer::new("k1");
    let documents = Arc::new(Documents::default());
    documents.put(JWKS, json!({ "keys": [signer.jwk.clone()] }));
    let mut settings = settings();
    settings.algorithms = vec![Algorithm::RS256];
    let cache = JwksCache::new(
        KeySource::JwksUrl(JWKS.parse().unwrap()),
        documents.clone(),
        Limits::default(),
    );
    let verifier = JwtVerifier::new(settings, cache).unwrap();
    let error = verifier.verify(&signer.sign(&claims())).await.unwrap_err();
    assert_eq!(error, TokenError::AlgorithmNotAllowed("ES256".into()));
}

#[tokio::test]
async fn missing_scope_names_it() {
    let mut claims = claims();
    claims["scope"] = json!("openid");
    let error = refused(claims).await;
    assert_eq!(error, TokenError::InsufficientScope { missing: vec!["mcp:tools".into()] });
    assert_eq!(error.missing_scopes(), Some(&["mcp:tools".to_owned()][..]));
}

#[tokio::test]
async fn malformed_and_oversize_tokens() {
    let signer = Signer::new("k1");
    let verifier = verifier(&Arc::new(Documents::default()), &[&signer]);
    for token in ["", "a.b", "a.b.c.d", "!!!.b.c"] {
        let error = verifier.verify(token).await.unwrap_err();
        assert!(matches!(error, TokenError::Malformed(_)), "{token}: {error}");
    }
    let long = "a".repeat(MAX_TOKEN_LEN + 1);
    assert_eq!(verifier.verify(&long).await.unwrap_err(), TokenError::TooLong { len: long.len() });
    let crit = unsigned(json!({"alg": "ES256", "kid": "k1", "crit": ["x"]}), &claims());
    assert!(matches!(verifier.verify(&crit).await.unwrap_err(), TokenError::Malformed(_)));
}

#[tokio::test]
async fn oversize_claims_are_refused() {
    let mut claims = claims();
    claims["groups"] = json!(vec!["g"; MAX_CLAIM_ITEMS + 1]);
    assert!(
        matches!(refused(claims).await, TokenError::InvalidClaim { claim, .. } if claim == "groups")
    );
}

/// The whole path over HTTP on 127.0.0.1: the issuer's metadata, then its key set.
#[tokio::test]
async fn discovery_and_keys_over_http() {
    let signer = Signer::new("k1");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let metadata = json!({"issuer": issuer, "jwks_uri": format!("{issuer}/keys")});
    let jwks = json!({"keys": [signer.jwk.clone()]});
    let app = axum::Router::new()
        .route(
            "/.well-known/oauth-authorization-server",
            axum::routing::get(move || async move { axum::Json(metadata) }),
        )
        .route("/keys", axum::routing::get(move || async move { axum::Json(jwks) }));
    tokio::spawn(async move { axum::serve(listener, app).await });

    let auth = AuthConfig { issuer: Some(issuer.clone()), ..AuthConfig::default() };
    let settings = JwtSettings::from_config(&auth, AUDIENCE).unwrap();
    let fetch = Arc::new(HttpFetch::new(Duration::from_secs(10)).unwrap());
    let cache = JwksCache::new(KeySource::Issuer(issuer.clone()), fetch, Limits::default());
    let verifier = JwtVerifier::new(settings, cache).unwrap();
    let mut claims = claims();
    claims["iss"] = json!(issuer);
    let identity = verifier.verify(&signer.sign(&claims)).await.expect("accepted");
    assert_eq!(identity.principal, "ada");
    assert!(identity.groups.is_empty(), "no groups_claim configured");
}
