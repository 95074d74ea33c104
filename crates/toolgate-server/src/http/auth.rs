//! Who is calling: the bearer credential a request carries, checked against `[auth]`.
//!
//! A request's `Authorization: Bearer <credential>` is an OAuth access token (a JWT: three
//! dot-separated parts) when `[auth]` names an issuer, else an API key, else, with
//! `introspection_url`, an opaque access token that the issuer's introspection endpoint is
//! asked about (RFC 7662; API keys first, as they are checked here). When that endpoint cannot
//! be asked, the request is refused with 503: the token was not checked, and it may be good.
//! A request without a credential
//! is `anonymous:anonymous` when `allow_anonymous` is set, else refused with 401 and the
//! `WWW-Authenticate` challenge that points the client at the protected resource metadata
//! (RFC 9728), from which it finds the authorization server. A credential that was presented
//! and is wrong is always refused, even where anonymous requests are let in: a client whose
//! token expired must learn that, not lose its identity silently. A token without a required
//! scope is a 403 naming the scopes to ask for (step-up).
//!
//! The credential ends here: it is not put in the pipeline's context, and nothing that talks
//! to upstreams sees the request's headers (the MCP authorization specification forbids
//! passing a client's token on).

use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use tokio::sync::Semaphore;
use toolgate_auth::{
    ApiKeys, HttpFetch, Identity, Introspector, JwksCache, JwtSettings, JwtVerifier, KeySource,
    Limits, Method, TokenError, challenge,
};
use toolgate_config::AuthConfig;
use toolgate_intercept::Principal;

/// How long a fetch of the issuer's metadata or keys, or an introspection, may take.
const FETCH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// How many argon2 checks run at once: each costs tens of milliseconds of a core, so a flood
/// of wrong keys waits for these few instead of taking every core.
const ARGON2_AT_ONCE: usize = 2;

/// The front's view of `[auth]`: who may call, and what to answer those who may not.
pub struct Authenticator {
    keys: Arc<ApiKeys>,
    argon2: bool,
    argon2_slots: Semaphore,
    jwt: Option<JwtVerifier>,
    introspector: Option<Introspector>,
    allow_anonymous: bool,
    /// The canonical URL of `/mcp`: the audience tokens must be for, and the metadata's
    /// `resource`.
    resource: url::Url,
    /// Where the protected resource metadata is, as the challenge names it.
    metadata_url: String,
    /// The metadata document, when there is an authorization server to name.
    metadata: Option<serde_json::Value>,
    /// The scopes every token must carry.
    scopes: Vec<String>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("keys", &self.keys)
            .field("issuer", &self.jwt.as_ref().map(|j| &j.settings().issuer))
            .field("introspector", &self.introspector)
            .field("allow_anonymous", &self.allow_anonymous)
            .field("resource", &self.resource.as_str())
            .finish_non_exhaustive()
    }
}

/// Why `[auth]` could not be put to use.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthSetupError {
    /// An API key entry is unusable.
    #[error("[auth.api_keys]")]
    Keys(#[source] toolgate_auth::ApiKeyError),
    /// The token settings are unusable.
    #[error("[auth]")]
    Settings(#[source] toolgate_auth::SettingsError),
    /// The HTTP client for the issuer could not be made.
    #[error("[auth] issuer: the HTTP client")]
    Fetch(#[source] toolgate_auth::FetchError),
    /// The resource's URL is not one.
    #[error("[auth] audience {0:?} is not a URL")]
    Resource(String),
}

impl Authenticator {
    /// The authenticator of `auth`, for the MCP endpoint at `default_resource` (its canonical
    /// URL as the server is reached, used when `audience` is not set).
    pub fn new(
        auth: &AuthConfig,
        default_resource: &url::Url,
    ) -> Result<Authenticator, AuthSetupError> {
        let resource = match &auth.audience {
            Some(audience) => {
                url::Url::parse(audience).map_err(|_| AuthSetupError::Resource(audience.clone()))?
            }
            None => default_resource.clone(),
        };
        let keys = ApiKeys::new(&auth.api_keys).map_err(AuthSetupError::Keys)?;
        let argon2 = auth
            .api_keys
            .values()
            .any(|key| matches!(key.hash, toolgate_config::KeyHash::Argon2(_)));
        let (jwt, introspector) = match KeySource::from_config(auth) {
            Some(source) => {
                let settings = JwtSettings::from_config(auth, resource.as_str())
                    .map_err(AuthSetupError::Settings)?;
                let fetch = Arc::new(HttpFetch::new(FETCH_TIMEOUT).map_err(AuthSetupError::Fetch)?);
                let introspector = auth
                    .introspection
                    .as_ref()
                    .map(|config| Introspector::new(settings.clone(), config, fetch.clone()));
                let cache = JwksCache::new(source, fetch, Limits::default());
                let jwt = JwtVerifier::new(settings, cache).map_err(AuthSetupError::Settings)?;
                (Some(jwt), introspector)
            }
            None => (None, None),
        };
        let metadata = auth.issuer.as_ref().map(|issuer| {
            challenge::protected_resource_metadata(
                resource.as_str(),
                std::slice::from_ref(issuer),
                &auth.scopes,
            )
        });
        Ok(Authenticator {
            keys: Arc::new(keys),
            argon2,
            argon2_slots: Semaphore::new(ARGON2_AT_ONCE),
            jwt,
            introspector,
            allow_anonymous: auth.allow_anonymous,
            metadata_url: challenge::metadata_url(&resource),
            resource,
            metadata,
            scopes: auth.scopes.clone(),
        })
    }

    /// The canonical URL of `/mcp` tokens must be for.
    pub fn resource(&self) -> &url::Url {
        &self.resource
    }

    /// The protected resource metadata document, when there is an issuer to name.
    pub(crate) fn metadata(&self) -> Option<&serde_json::Value> {
        self.metadata.as_ref()
    }

    /// The principal a request's headers prove, or the refusal to send.
    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, Response> {
        let credential = match bearer(headers) {
            Ok(Some(credential)) => credential,
            Ok(None) if self.allow_anonymous => return Ok(Principal::anonymous()),
            Ok(None) => return Err(self.unauthorized(false, "this endpoint needs a credential")),
            Err(why) => return Err(self.unauthorized(true, why)),
        };
        let identity = if looks_like_jwt(credential)
            && let Some(jwt) = &self.jwt
        {
            jwt.verify(credential).await.map_err(|error| self.refused(&error))?
        } else if let Some(identity) = self.api_key(credential).await {
            identity
        } else if let Some(introspector) = &self.introspector {
            introspector.verify(credential).await.map_err(|error| self.refused(&error))?
        } else {
            return Err(self.unauthorized(true, "the credential is not a valid key"));
        };
        Ok(principal_of(identity))
    }

    /// The identity of an API key, checked off the runtime's threads when argon2 is in play.
    async fn api_key(&self, presented: &str) -> Option<Identity> {
        if !self.argon2 {
            return self.keys.verify(presented);
        }
        let _slot = self.argon2_slots.acquire().await.ok()?;
        let keys = self.keys.clone();
        let presented = presented.to_owned();
        tokio::task::spawn_blocking(move || keys.verify(&presented)).await.ok().flatten()
    }

    fn refused(&self, error: &TokenError) -> Response {
        if error.is_unavailable() {
            // Logged where it happened; the client may retry with the same token.
            let body = serde_json::json!({
                "error": "temporarily_unavailable",
                "error_description": "the token could not be checked: the authorization server's \
                                      introspection endpoint did not answer",
            });
            return (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response();
        }
        tracing::debug!(%error, "refused an access token");
        match error.missing_scopes() {
            Some(_) => {
                let challenge = challenge::insufficient_scope(&self.metadata_url, &self.scopes);
                let body = serde_json::json!({
                    "error": "insufficient_scope",
                    "error_description": error.to_string(),
                });
                answer(StatusCode::FORBIDDEN, &challenge, body)
            }
            None => self.unauthorized(true, &error.to_string()),
        }
    }

    fn unauthorized(&self, invalid_token: bool, why: &str) -> Response {
        let challenge = match &self.metadata {
            Some(_) => challenge::unauthorized(&self.metadata_url, &self.scopes, invalid_token),
            // API keys only: no authorization server to send the client to.
            None if invalid_token => "Bearer error=\"invalid_token\"".to_owned(),
            None => "Bearer".to_owned(),
        };
        let body = if invalid_token {
            serde_json::json!({ "error": "invalid_token", "error_description": why })
        } else {
            serde_json::json!({ "error": "unauthorized", "error_description": why })
        };
        answer(StatusCode::UNAUTHORIZED, &challenge, body)
    }
}

/// The credential of `Authorization: Bearer <credential>`; `None` without the header; an
/// error for one that is not a bearer credential (RFC 6750 §2.1: the scheme is
/// case-insensitive, one space, then the token).
fn bearer(headers: &HeaderMap) -> Result<Option<&str>, &'static str> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else { return Ok(None) };
    if values.next().is_some() {
        return Err("more than one Authorization header");
    }
    let value = value.to_str().map_err(|_| "the Authorization header is not text")?;
    let (scheme, credential) =
        value.split_once(' ').ok_or("the Authorization header is not `Bearer <credential>`")?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err("only Bearer credentials are accepted");
    }
    let credential = credential.trim_matches(' ');
    if credential.is_empty() {
        return Err("an empty Bearer credential");
    }
    Ok(Some(credential))
}

/// Whether a credential has a JWS's compact form: three parts separated by dots.
fn looks_like_jwt(credential: &str) -> bool {
    credential.bytes().filter(|b| *b == b'.').count() == 2
}

/// The pipeline's principal for an identity: `jwt:<claim>` (a JWT), `token:<claim>` (an
/// opaque token, introspected) or `key:<name>`.
fn principal_of(identity: Identity) -> Principal {
    let kind = match identity.method {
        Method::Jwt => "jwt",
        Method::Introspection => "token",
        Method::ApiKey => "key",
    };
    Principal::new(kind, identity.principal)
        .with_groups(identity.groups)
        .with_tenant(identity.tenant)
}

fn answer(status: StatusCode, challenge: &str, body: serde_json::Value) -> Response {
    let mut response = (status, axum::Json(body)).into_response();
    if let Ok(value) = HeaderValue::from_str(challenge) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

#[cfg(test)]
mod tests;
