//! Signing a person in to one upstream: the authorization code flow with PKCE, as the MCP
//! authorization specification has it.
//!
//! 1. Discovery, from the server's `401` challenge when there is one: protected resource
//!    metadata (RFC 9728), then the authorization server's (RFC 8414 or OpenID discovery).
//! 2. Which client toolgate is: the configured `client_id`, else its Client ID Metadata
//!    Document where the server accepts one, else dynamic registration (RFC 7591).
//! 3. The authorization URL (PKCE S256, `resource` of RFC 8707, the scopes the server asked
//!    for), opened by a [`Browser`]; the redirect comes back to a loopback [`Receiver`].
//! 4. The code is exchanged for tokens, after checking `iss` (RFC 9207); the tokens go to the
//!    vault entry.

use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::auth::{
    AuthorizationManager, AuthorizationRequest, AuthorizationSession, OAuthClientConfig,
    OAuthTokenResponse,
};
use toolgate_config::OAuthConfig;

use crate::error::LoginError;
use crate::http::OAuthHttp;
use crate::receiver::{Callback, Receiver};
use crate::vault::VaultEntry;

/// The name toolgate registers under.
pub const CLIENT_NAME: &str = "toolgate";

/// How long a person has to finish signing in.
pub const SIGN_IN_LIMIT: Duration = Duration::from_secs(300);

/// One upstream toolgate signs in to.
#[derive(Clone)]
pub struct Target {
    /// The server's name in the config.
    pub server: String,
    /// The MCP endpoint.
    pub url: url::Url,
    /// `oauth` of the server.
    pub config: OAuthConfig,
    /// The client every OAuth request goes through.
    pub http: Arc<OAuthHttp>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target").field("server", &self.server).field("url", &self.url).finish()
    }
}

/// What opens the authorization URL for a person: their browser, or (in tests and for the
/// conformance suite) a program that plays the person.
#[async_trait::async_trait]
pub trait Browser: Send + Sync {
    /// Shows `url` to whoever signs in. Returns once it is shown (not once they are done).
    async fn open(&self, url: &str) -> Result<(), LoginError>;

    /// Redirect addresses a person pastes, when they sign in with a browser elsewhere.
    fn pasted(&self) -> Option<tokio::sync::mpsc::Receiver<String>> {
        None
    }
}

/// A finished sign-in.
pub struct SignedIn {
    /// Who signed in, as far as the tokens say.
    pub subject: Option<String>,
    /// When the access token expires, in seconds since the Unix epoch.
    pub expires_at: Option<u64>,
    /// The scopes granted (or asked for, when the server does not say).
    pub scopes: Vec<String>,
    /// The authorization client, holding the tokens, ready to refresh them.
    pub manager: AuthorizationManager,
}

impl Target {
    /// An authorization client for this server whose tokens live in `store`.
    pub(crate) async fn manager(
        &self,
        store: VaultEntry,
    ) -> Result<AuthorizationManager, LoginError> {
        let http: Arc<dyn rmcp::transport::auth::OAuthHttpClient> = self.http.clone();
        let mut manager = AuthorizationManager::new_with_oauth_http_client(self.url.as_str(), http)
            .await
            .map_err(|e| LoginError::protocol(&self.server, "setting up", e))?;
        manager.set_credential_store(store);
        Ok(manager)
    }

    /// An authorization client that keeps nothing (for discovery alone).
    pub(crate) async fn manager_in_memory(&self) -> Result<AuthorizationManager, LoginError> {
        let http: Arc<dyn rmcp::transport::auth::OAuthHttpClient> = self.http.clone();
        AuthorizationManager::new_with_oauth_http_client(self.url.as_str(), http)
            .await
            .map_err(|e| LoginError::protocol(&self.server, "setting up", e))
    }

    /// Configures `manager` as the pre-registered client, when the config names one (its
    /// secret is not stored with the tokens, so it is set again after a restart).
    pub(crate) fn configure_preregistered(
        &self,
        manager: &mut AuthorizationManager,
        redirect_uri: &str,
    ) -> Result<(), LoginError> {
        let Some(client_id) = &self.config.client_id else { return Ok(()) };
        let mut client = OAuthClientConfig::new(client_id.clone(), redirect_uri.to_owned());
        if let Some(secret) = &self.config.client_secret {
            client = client.with_client_secret(secret.expose().to_owned());
        }
        manager
            .configure_client(client)
            .map_err(|e| LoginError::protocol(&self.server, "configuring the client", e))
    }
}

/// A sign-in under way: the authorization URL to show, and what finishing it needs.
pub struct Pending {
    server: String,
    url: String,
    state: String,
    scopes: Vec<String>,
    challenge: Option<String>,
    store: VaultEntry,
    session: AuthorizationSession,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending").field("server", &self.server).finish_non_exhaustive()
    }
}

impl Pending {
    /// The authorization URL a person opens.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The `state` its redirect comes back with.
    pub fn state(&self) -> &str {
        &self.state
    }

    /// The server being signed in to.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The vault entry the tokens go to.
    pub fn entry(&self) -> &str {
        self.store.name()
    }
}

/// Starts signing in to `target`, with the redirect to come back to `redirect_uri`: discovery
/// (from the server's `challenge` when there is one), client registration, and the
/// authorization URL, asking for the scopes the server names and `wanted` ones besides.
pub async fn begin(
    target: &Target,
    store: VaultEntry,
    challenge: Option<&str>,
    wanted: &[String],
    redirect_uri: &str,
) -> Result<Pending, LoginError> {
    let server = target.server.as_str();
    let mut manager = target.manager(store.clone()).await?;
    let resolution = manager
        .resolve_metadata_from_challenge(challenge)
        .await
        .map_err(|e| LoginError::protocol(server, "discovering the authorization server", e))?;
    manager.set_metadata(resolution.metadata);
    let mut scopes = manager.select_scopes(None, &[]);
    for scope in target.config.scopes.iter().chain(wanted) {
        if !scopes.contains(scope) {
            scopes.push(scope.clone());
        }
    }
    let mut request = AuthorizationRequest::new(redirect_uri.to_owned())
        .with_client_name(CLIENT_NAME)
        .with_scopes(scopes.clone());
    if let Some(client_id) = &target.config.client_id {
        request = request.with_preregistered_client(client_id.clone());
        if let Some(secret) = &target.config.client_secret {
            request = request.with_client_secret(secret.expose().to_owned());
        }
    }
    if let Some(url) = &target.config.client_metadata_url {
        request = request.with_client_metadata_url(url.as_str());
    }
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| LoginError::protocol(server, "registering toolgate as a client", e))?;
    let url = session.get_authorization_url().to_owned();
    let state = url::Url::parse(&url)
        .ok()
        .and_then(|u| u.query_pairs().find(|(k, _)| k == "state").map(|(_, v)| v.into_owned()))
        .ok_or_else(|| LoginError::Unsupported {
            server: server.to_owned(),
            why: "the authorization URL carries no state".into(),
        })?;
    Ok(Pending {
        server: server.to_owned(),
        url,
        state,
        scopes,
        challenge: challenge.map(str::to_owned),
        store,
        session,
    })
}

/// Finishes `pending` with what its redirect carried: checks `iss` (RFC 9207), exchanges the
/// code, and keeps the tokens in its vault entry.
pub async fn finish(pending: Pending, callback: &Callback) -> Result<SignedIn, LoginError> {
    let Pending { server, scopes, challenge, store, session, .. } = pending;
    let tokens = session
        .handle_callback_with_issuer(&callback.code, &callback.state, callback.iss.as_deref())
        .await
        .map_err(|e| LoginError::protocol(&server, "exchanging the code for tokens", e))?;
    let signed_in = SignedIn {
        subject: subject(&tokens),
        expires_at: expires_at(&tokens),
        scopes: granted(&tokens, &scopes),
        manager: session.auth_manager,
    };
    let subject = signed_in.subject.clone();
    store.update(|record| {
        record.subject = subject;
        record.wanted_scopes.clear();
        record.challenge = challenge;
    })?;
    Ok(signed_in)
}

/// Signs a person in to `target` through `browser`, the redirect coming back to a loopback
/// [`Receiver`] (or pasted), asking for the scopes the server's `challenge` names and `wanted`
/// ones besides, and keeps the tokens in `store`.
pub async fn sign_in(
    target: &Target,
    store: VaultEntry,
    challenge: Option<&str>,
    wanted: &[String],
    browser: &dyn Browser,
    limit: Duration,
) -> Result<SignedIn, LoginError> {
    let receiver = Receiver::bind(target.config.redirect_port).await?;
    let pending = begin(target, store, challenge, wanted, &receiver.redirect_uri()).await?;
    let waiting = tokio::spawn(receiver.wait_owned(pending.state.clone(), limit, browser.pasted()));
    browser.open(&pending.url).await?;
    let callback = waiting.await.map_err(|_| LoginError::NoRedirect { waited: limit })??;
    finish(pending, &callback).await
}

impl Receiver {
    /// [`Receiver::wait`] with an owned state, for a spawned task.
    async fn wait_owned(
        self,
        state: String,
        limit: Duration,
        pasted: Option<tokio::sync::mpsc::Receiver<String>>,
    ) -> Result<crate::receiver::Callback, LoginError> {
        self.wait_or_pasted(&state, limit, pasted).await
    }
}

/// When `tokens`' access token expires, in seconds since the Unix epoch.
pub(crate) fn expires_at(tokens: &OAuthTokenResponse) -> Option<u64> {
    oauth2::TokenResponse::expires_in(tokens).map(|d| crate::vault::now() + d.as_secs())
}

fn granted(tokens: &OAuthTokenResponse, asked: &[String]) -> Vec<String> {
    match oauth2::TokenResponse::scopes(tokens) {
        Some(scopes) => scopes.iter().map(|s| s.to_string()).collect(),
        None => asked.to_vec(),
    }
}

/// Who signed in: the ID token's or the access token's claims when either is a JWT
/// (`preferred_username`, `email`, `name`, then `sub`), for showing only; nothing is
/// decided on it.
pub fn subject(tokens: &OAuthTokenResponse) -> Option<String> {
    let id_token = tokens.extra_fields().0.get("id_token").and_then(|v| v.as_str());
    let access = oauth2::TokenResponse::access_token(tokens).secret();
    id_token.into_iter().chain([access.as_str()]).find_map(jwt_subject)
}

fn jwt_subject(token: &str) -> Option<String> {
    use base64::Engine as _;
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    ["preferred_username", "email", "name", "sub"]
        .iter()
        .find_map(|key| claims.get(key).and_then(|v| v.as_str()).map(str::to_owned))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(json: serde_json::Value) -> OAuthTokenResponse {
        serde_json::from_value(json).expect("a token response")
    }

    #[test]
    fn the_subject_comes_from_the_id_token_then_the_access_token() {
        use base64::Engine as _;
        let jwt = |claims: serde_json::Value| {
            let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
            format!("{}.{}.sig", b64.encode(b"{}"), b64.encode(claims.to_string()))
        };
        let both = tokens(serde_json::json!({
            "access_token": jwt(serde_json::json!({"sub": "u-1"})), "token_type": "Bearer",
            "id_token": jwt(serde_json::json!({"sub": "u-1", "email": "ada@acme.test"}))
        }));
        assert_eq!(subject(&both).as_deref(), Some("ada@acme.test"));
        let access = tokens(serde_json::json!({
            "access_token": jwt(serde_json::json!({"sub": "u-2"})), "token_type": "Bearer"
        }));
        assert_eq!(subject(&access).as_deref(), Some("u-2"));
        let opaque = tokens(serde_json::json!({"access_token": "opaque", "token_type": "Bearer"}));
        assert_eq!(subject(&opaque), None);
    }
}
