//! `Introspector` against a real authorization server: oidc-provider (npm, run by
//! `toolgate_testkit::oidc`), whose client ci-opaque gets opaque access tokens, asked at its
//! introspection endpoint as the client `toolgate`, over HTTP.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use toolgate_auth::{
    FetchError, HttpFetch, Identity, Introspector, JwtSettings, Method, PostForm, TokenError,
};
use toolgate_config::{AuthConfig, IntrospectionConfig, Secret};
use toolgate_testkit::oidc::{CI_ACME, CI_OPAQUE, OidcProvider, StaticClient, TOOLGATE};

/// The resource toolgate would be: the `aud` its tokens must carry.
const RESOURCE: &str = "http://127.0.0.1:9/mcp";

/// [`HttpFetch`], counting the introspection requests.
struct Counting {
    http: HttpFetch,
    posts: AtomicUsize,
}

impl PostForm for Counting {
    fn post_form<'a>(
        &'a self,
        url: &'a url::Url,
        authorization: &'a Secret,
        body: String,
        limit: usize,
    ) -> Pin<Box<dyn Future<Output = Result<Vec<u8>, FetchError>> + Send + 'a>> {
        self.posts.fetch_add(1, Ordering::SeqCst);
        self.http.post_form(url, authorization, body, limit)
    }
}

/// An introspector of `provider`'s tokens for [`RESOURCE`], needing `mcp:tools`, asking as
/// `client`.
fn introspector(provider: &OidcProvider, client: StaticClient) -> (Introspector, Arc<Counting>) {
    let auth = AuthConfig {
        issuer: Some(provider.issuer().to_owned()),
        audience: Some(RESOURCE.to_owned()),
        scopes: vec!["mcp:tools".into()],
        groups_claim: Some("groups".into()),
        tenant_claim: Some("tenant".into()),
        ..AuthConfig::default()
    };
    let settings = JwtSettings::from_config(&auth, RESOURCE).expect("valid settings");
    let config = IntrospectionConfig {
        url: url::Url::parse(&provider.introspection_endpoint()).unwrap(),
        client_id: client.id.into(),
        client_secret: Secret::new(client.secret),
        cache_size: 16,
        cache_ttl: Duration::from_secs(60),
    };
    let http = HttpFetch::new(Duration::from_secs(10)).expect("an HTTP client");
    let counting = Arc::new(Counting { http, posts: AtomicUsize::new(0) });
    (Introspector::new(settings, &config, counting.clone()), counting)
}

#[tokio::test]
async fn an_opaque_token_for_the_resource_introspects_to_its_client_once() {
    let provider = OidcProvider::start().await;
    let (introspector, counting) = introspector(&provider, TOOLGATE);

    let token = provider.client_credentials(CI_OPAQUE, RESOURCE, &["mcp:tools"]).await;
    assert_eq!(token.matches('.').count(), 0, "an opaque token: {token}");
    let identity = introspector.verify(&token).await.expect("an active token");
    assert_eq!(
        identity,
        Identity {
            principal: "ci-opaque".into(),
            groups: vec!["deploy".into()],
            tenant: Some("acme".into()),
            method: Method::Introspection,
            scopes: vec!["mcp:tools".into()],
        }
    );
    assert_eq!(counting.posts.load(Ordering::SeqCst), 1);
    // The cache answers the second time, without a request.
    assert_eq!(introspector.verify(&token).await.expect("cached"), identity);
    assert_eq!(counting.posts.load(Ordering::SeqCst), 1);
    assert_eq!(introspector.cached(), 1);
}

#[tokio::test]
async fn unknown_revoked_and_other_resources_tokens_are_refused() {
    let provider = OidcProvider::start().await;
    let (introspector, counting) = introspector(&provider, TOOLGATE);

    let unknown = introspector.verify("no-such-token-0123456789abcdef").await.unwrap_err();
    assert_eq!(unknown, TokenError::Inactive);

    let revoked = provider.client_credentials(CI_OPAQUE, RESOURCE, &["mcp:tools"]).await;
    provider.revoke(CI_OPAQUE, &revoked).await;
    assert_eq!(introspector.verify(&revoked).await.unwrap_err(), TokenError::Inactive);

    let other =
        provider.client_credentials(CI_OPAQUE, "http://127.0.0.1:9/other", &["mcp:tools"]).await;
    assert_eq!(
        introspector.verify(&other).await.unwrap_err(),
        TokenError::WrongAudience { expected: RESOURCE.into() }
    );

    let unscoped = provider.client_credentials(CI_OPAQUE, RESOURCE, &["mcp:admin"]).await;
    assert_eq!(
        introspector.verify(&unscoped).await.unwrap_err(),
        TokenError::InsufficientScope { missing: vec!["mcp:tools".into()] }
    );
    // A refusal is not cached: asked each time.
    assert_eq!(introspector.verify(&revoked).await.unwrap_err(), TokenError::Inactive);
    assert_eq!(counting.posts.load(Ordering::SeqCst), 5);
    assert_eq!(introspector.cached(), 0);
}

#[tokio::test]
async fn a_wrong_client_secret_is_unavailable_not_a_refusal() {
    let provider = OidcProvider::start().await;
    let wrong = StaticClient { id: TOOLGATE.id, secret: "not-the-secret" };
    let (introspector, _) = introspector(&provider, wrong);
    let token = provider.client_credentials(CI_OPAQUE, RESOURCE, &["mcp:tools"]).await;
    let error = introspector.verify(&token).await.unwrap_err();
    assert!(error.is_unavailable(), "{error}");
    // Another client's JWT is not introspected by oidc-provider (it refuses structured tokens),
    // and the front never sends one: it goes to the JWT verifier.
    let _ = CI_ACME;
}
