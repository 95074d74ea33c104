//! One upstream's sign-in against a small authorization server of the test's own: what a
//! request carries, and when a new token is asked for.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Json;
use axum::extract::State;
use serde_json::json;
use toolgate_config::{OAuthConfig, OAuthFlow, Secret};

use super::*;
use crate::http::OAuthHttp;

/// Protected resource metadata, authorization server metadata, and a token endpoint that
/// answers client credentials with `token-N` valid `expires_in` seconds. Returns its base URL
/// and how many tokens it gave.
async fn authorization_server(expires_in: u64) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    let issued = Arc::new(AtomicUsize::new(0));
    let prm = json!({"resource": format!("{base}/mcp"), "authorization_servers": [base]});
    let metadata = json!({
        "issuer": base, "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic"],
    });
    let app = axum::Router::new()
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            axum::routing::get(move || async move { Json(prm) }),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            axum::routing::get(move || async move { Json(metadata) }),
        )
        .route(
            "/token",
            axum::routing::post(move |State(issued): State<Arc<AtomicUsize>>| async move {
                let n = issued.fetch_add(1, Ordering::SeqCst) + 1;
                Json(json!({"access_token": format!("token-{n}"), "token_type": "Bearer",
                    "expires_in": expires_in}))
            }),
        )
        .with_state(issued.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    (base, issued)
}

fn machine_login(base: &str, vault: &Arc<Vault>) -> Login {
    let url: url::Url = format!("{base}/mcp").parse().expect("url");
    let config = OAuthConfig {
        flow: OAuthFlow::ClientCredentials,
        client_id: Some("gateway".into()),
        client_secret: Some(Secret::new("s3cret")),
        ..OAuthConfig::default()
    };
    let http = OAuthHttp::plain(&url).expect("client");
    let target = Target { server: "acme".into(), url, config, http };
    Login::new(target, vault, "acme".into(), None)
}

fn challenge(base: &str) -> String {
    format!("Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\"")
}

#[tokio::test]
async fn a_machine_token_is_asked_for_on_the_first_401_and_renewed_before_it_expires() {
    let dir = tempfile::tempdir().expect("temp dir");
    let vault = Arc::new(
        Vault::open_with_key_file(&dir.path().join("v"), &dir.path().join("k")).expect("vault"),
    );
    // Valid for 30 s: inside the minute before expiry in which a token is renewed.
    let (base, issued) = authorization_server(30).await;
    let login = machine_login(&base, &vault);
    assert_eq!(login.token().await.expect("no error"), None, "nothing before the server asks");
    let first = login.rejected(None, &challenge(&base)).await.expect("a token");
    assert_eq!(first, "token-1");
    let renewed = login.token().await.expect("no error");
    assert_eq!(renewed.as_deref(), Some("token-2"), "renewed before it expires");
    // A token the server turned down is replaced.
    let replaced = login.rejected(Some("token-2"), &challenge(&base)).await.expect("a token");
    assert_eq!(replaced, "token-3");
    assert_eq!(issued.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_lasting_machine_token_is_kept() {
    let dir = tempfile::tempdir().expect("temp dir");
    let vault = Arc::new(
        Vault::open_with_key_file(&dir.path().join("v"), &dir.path().join("k")).expect("vault"),
    );
    let (base, issued) = authorization_server(3600).await;
    let login = machine_login(&base, &vault);
    login.rejected(None, &challenge(&base)).await.expect("a token");
    for _ in 0..3 {
        assert_eq!(login.token().await.expect("no error").as_deref(), Some("token-1"));
    }
    // A request that was turned down with an older token gets the one another request already
    // has, without asking again.
    let current = login.rejected(Some("token-0"), &challenge(&base)).await.expect("a token");
    assert_eq!(current, "token-1");
    assert_eq!(issued.load(Ordering::SeqCst), 1);
    assert!(vault.records().expect("listed").is_empty(), "machine tokens stay in memory");
}

#[tokio::test]
async fn without_a_person_a_sign_in_is_a_login_error_and_the_scopes_are_kept() {
    let dir = tempfile::tempdir().expect("temp dir");
    let vault = Arc::new(
        Vault::open_with_key_file(&dir.path().join("v"), &dir.path().join("k")).expect("vault"),
    );
    let (base, _) = authorization_server(3600).await;
    let url: url::Url = format!("{base}/mcp").parse().expect("url");
    let http = OAuthHttp::plain(&url).expect("client");
    let target = Target { server: "acme".into(), url, config: OAuthConfig::default(), http };
    let login = Login::new(target, &vault, "acme".into(), None);
    let asked = format!("{}, scope=\"files:read files:write\"", challenge(&base));
    let error = login.rejected(None, &asked).await.unwrap_err();
    assert!(error.needs_login(), "{error}");
    assert!(error.to_string().contains("toolgate login acme"), "{error}");
    let record = vault.read("acme").expect("read").expect("kept");
    assert_eq!(record.wanted_scopes, ["files:read", "files:write"]);
    assert!(!record.has_tokens());
}

#[tokio::test]
async fn the_desk_holds_at_most_its_bound_of_sign_ins_and_reuses_a_callers_link() {
    use crate::desk::{Desk, MAX_PENDING};
    let dir = tempfile::tempdir().expect("temp dir");
    let vault = Arc::new(
        Vault::open_with_key_file(&dir.path().join("v"), &dir.path().join("k")).expect("vault"),
    );
    let (base, _) = authorization_server(3600).await;
    let url: url::Url = format!("{base}/mcp").parse().expect("url");
    let http = OAuthHttp::plain(&url).expect("client");
    // A pre-registered client: no registration request per sign-in.
    let config = OAuthConfig { client_id: Some("gateway".into()), ..OAuthConfig::default() };
    let target = Target { server: "acme".into(), url: url.clone(), config, http };
    let desk = Desk::new();
    let mut first = None;
    for caller in 0..MAX_PENDING + 20 {
        let store = vault.entry(format!("acme/user:{caller}"), url.to_string());
        let pending = crate::signin::begin(
            &target,
            store,
            Some(&challenge(&base)),
            &[],
            "http://127.0.0.1:9/oauth/callback",
        )
        .await
        .expect("a sign-in begins");
        let link = desk.hold(pending);
        first.get_or_insert(link);
        assert!(desk.len() <= MAX_PENDING, "{} held", desk.len());
    }
    assert_eq!(desk.len(), MAX_PENDING);
    // The oldest went first; the newest caller's link is still there.
    assert_eq!(desk.link_for("acme/user:0"), None);
    let last = format!("acme/user:{}", MAX_PENDING + 19);
    assert!(desk.link_for(&last).is_some());
    assert_ne!(desk.link_for(&last), first);
}
