//! `discover` against a real authorization server: oidc-provider (npm, run by
//! `toolgate_testkit::oidc`), named by the protected resource metadata of a small MCP-like
//! server on 127.0.0.1 that answers `/mcp` with a 401 as `challenge.rs` builds it.

use std::time::Duration;

use serde_json::Value;
use toolgate_auth::challenge;
use toolgate_auth::{Challenge, HttpFetch, Limits, discover};
use toolgate_testkit::oidc::OidcProvider;

/// Serves `/mcp` (always a 401) and its protected resource metadata, naming `issuer`; the URL
/// of `/mcp`.
async fn protected_resource(issuer: &str) -> url::Url {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server: url::Url =
        format!("http://{}/mcp", listener.local_addr().unwrap()).parse().unwrap();
    let metadata_url = challenge::metadata_url(&server);
    let scopes = vec!["mcp:tools".to_owned()];
    let document =
        challenge::protected_resource_metadata(server.as_str(), &[issuer.to_owned()], &scopes);
    let www_authenticate = challenge::unauthorized(&metadata_url, &scopes, false);
    let app = axum::Router::new()
        .route(
            "/mcp",
            axum::routing::post(move || async move {
                (
                    axum::http::StatusCode::UNAUTHORIZED,
                    [(axum::http::header::WWW_AUTHENTICATE, www_authenticate)],
                )
            }),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            axum::routing::get(move || async move { axum::Json(document) }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    server
}

#[tokio::test]
async fn from_a_401_to_the_real_servers_endpoints() {
    let provider = OidcProvider::start().await;
    let server = protected_resource(provider.issuer()).await;
    let http = reqwest::Client::new();

    let answer = http.post(server.clone()).body("{}").send().await.unwrap();
    assert_eq!(answer.status(), 401);
    let header = answer.headers()["www-authenticate"].to_str().unwrap();
    let challenge = Challenge::parse(header).expect("a Bearer challenge");
    assert_eq!(challenge.scope, Some(vec!["mcp:tools".to_owned()]));

    let fetch = HttpFetch::new(Duration::from_secs(10)).unwrap();
    let found = discover(&fetch, &server, Some(&challenge), Limits::default())
        .await
        .unwrap_or_else(|e| panic!("{e}; the provider's stderr:\n{}", provider.stderr()));

    let metadata_url = provider.url("/.well-known/oauth-authorization-server");
    let real: Value = http.get(&metadata_url).send().await.unwrap().json().await.unwrap();
    let endpoint = |name: &str| real[name].as_str().unwrap_or_else(|| panic!("{name}: {real}"));
    assert_eq!(found.resource_metadata_url.as_str(), challenge::metadata_url(&server));
    assert_eq!(found.resource, server.as_str());
    assert_eq!(found.resource_scopes, Some(vec!["mcp:tools".to_owned()]));
    let auth = &found.authorization_server;
    assert_eq!(auth.issuer, provider.issuer());
    assert_eq!(auth.metadata_url.as_str(), metadata_url);
    assert_eq!(auth.authorization_endpoint.as_str(), endpoint("authorization_endpoint"));
    assert_eq!(auth.token_endpoint.as_str(), endpoint("token_endpoint"));
    assert_eq!(
        auth.registration_endpoint.as_ref().map(url::Url::as_str),
        real["registration_endpoint"].as_str()
    );
    let scopes: Option<Vec<String>> = serde_json::from_value(real["scopes_supported"].clone()).ok();
    assert_eq!(auth.scopes_supported, scopes);
    assert!(!auth.scopes_supported.as_ref().unwrap().is_empty(), "{real}");
}
