//! A gateway's own credentials (the client credentials grant, RFC 6749 section 4.4): no person
//! signs in; toolgate is the client, authenticated by a secret (`client_secret_basic`, or
//! `client_secret_post` where the server takes only that) or by a client assertion signed with
//! its private key (`private_key_jwt`, RFC 7523). Tokens are asked for when first needed and
//! again shortly before they expire, or when the server turns one down.

use std::time::Duration;

use oauth2::basic::BasicClient;
use oauth2::{AuthType, ClientId, ClientSecret, Scope, TokenResponse as _, TokenUrl};
use rmcp::transport::auth::{AuthorizationMetadata, OAuthHttpRedirectPolicy};

use crate::error::LoginError;
use crate::probe::challenge_scopes;
use crate::signin::Target;

/// How long a client assertion is valid.
const ASSERTION_LIFETIME: Duration = Duration::from_secs(300);

/// A token obtained with the gateway's own credentials.
#[derive(Clone)]
pub struct MachineToken {
    /// The access token.
    pub access_token: String,
    /// When it expires, in seconds since the Unix epoch.
    pub expires_at: Option<u64>,
}

impl std::fmt::Debug for MachineToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MachineToken").field("expires_at", &self.expires_at).finish_non_exhaustive()
    }
}

/// An HTTP failure, as the `oauth2` crate wants its client's errors.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct SendFailed(String);

/// Asks `target`'s authorization server (found from `challenge`, or by discovery from the
/// server's URL) for a token with the configured client credentials.
pub async fn client_credentials(
    target: &Target,
    challenge: Option<&str>,
) -> Result<MachineToken, LoginError> {
    let server = target.server.as_str();
    let failed = |detail: String| LoginError::Machine { server: server.to_owned(), detail };
    let manager = target.manager_in_memory().await?;
    let metadata = manager
        .resolve_metadata_from_challenge(challenge)
        .await
        .map_err(|e| LoginError::protocol(server, "discovering the authorization server", e))?
        .metadata;
    let config = &target.config;
    let client_id = config.client_id.clone().ok_or_else(|| failed("no client_id".into()))?;
    let token_url = TokenUrl::new(metadata.token_endpoint.clone())
        .map_err(|e| failed(format!("the token endpoint is not a URL: {e}")))?;
    let mut client = BasicClient::new(ClientId::new(client_id.clone())).set_token_uri(token_url);
    let mut assertion = None;
    if let Some(secret) = &config.client_secret {
        client = client
            .set_client_secret(ClientSecret::new(secret.expose().to_owned()))
            .set_auth_type(secret_method(&metadata));
    } else if let Some(key) = &config.private_key {
        client = client.set_auth_type(AuthType::RequestBody);
        let audience = metadata.issuer.clone().unwrap_or_else(|| metadata.token_endpoint.clone());
        assertion = Some(
            sign_assertion(&client_id, &audience, key.expose(), &config.algorithm)
                .map_err(failed)?,
        );
    }
    let mut request = client
        .exchange_client_credentials()
        .add_extra_param("resource", target.url.as_str().to_owned());
    // The scopes the server's challenge names (what this request needs, as the authorization
    // code flow asks for), then the configured ones.
    let mut scopes = challenge.map(|c| challenge_scopes(c, &target.url)).unwrap_or_default();
    for scope in &config.scopes {
        if !scopes.contains(scope) {
            scopes.push(scope.clone());
        }
    }
    for scope in scopes {
        request = request.add_scope(Scope::new(scope));
    }
    if let Some(assertion) = assertion {
        request = request
            .add_extra_param(
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            )
            .add_extra_param("client_assertion", assertion);
    }
    let http = target.http.clone();
    let send = move |request: oauth2::HttpRequest| {
        let http = http.clone();
        async move {
            http.send(request, OAuthHttpRedirectPolicy::Stop)
                .await
                .map_err(|e| SendFailed(e.to_string()))
        }
    };
    let tokens = request.request_async(&send).await.map_err(|e| failed(describe(&e)))?;
    Ok(MachineToken {
        access_token: tokens.access_token().secret().clone(),
        expires_at: tokens.expires_in().map(|d| crate::vault::now() + d.as_secs()),
    })
}

/// What an `oauth2` request error says, with the server's own `error` and description.
fn describe<E: std::error::Error + 'static>(
    error: &oauth2::RequestTokenError<E, oauth2::basic::BasicErrorResponse>,
) -> String {
    match error {
        oauth2::RequestTokenError::ServerResponse(response) => {
            let mut text = format!("the token endpoint refused: {}", response.error());
            if let Some(description) = response.error_description() {
                text.push_str(&format!(" ({description})"));
            }
            text
        }
        other => {
            let mut text = other.to_string();
            let mut source = std::error::Error::source(other);
            while let Some(cause) = source {
                text.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            text
        }
    }
}

/// `client_secret_basic` unless the server lists only `client_secret_post` (RFC 8414: a
/// server that lists nothing takes basic).
fn secret_method(metadata: &AuthorizationMetadata) -> AuthType {
    let methods = metadata
        .additional_fields
        .get("token_endpoint_auth_methods_supported")
        .and_then(|v| v.as_array())
        .map(|methods| methods.iter().filter_map(|m| m.as_str()).collect::<Vec<_>>());
    match methods {
        Some(methods)
            if !methods.contains(&"client_secret_basic")
                && methods.contains(&"client_secret_post") =>
        {
            AuthType::RequestBody
        }
        _ => AuthType::BasicAuth,
    }
}

/// A client assertion (RFC 7523 section 2.2): `iss` and `sub` the client, `aud` the
/// authorization server, short-lived, with a fresh `jti`.
fn sign_assertion(
    client_id: &str,
    audience: &str,
    pem: &str,
    algorithm: &str,
) -> Result<String, String> {
    use jsonwebtoken::{Algorithm, EncodingKey, Header};
    let algorithm: Algorithm =
        algorithm.parse().map_err(|_| format!("unknown signing algorithm {algorithm}"))?;
    let key = match algorithm {
        Algorithm::ES256 | Algorithm::ES384 => EncodingKey::from_ec_pem(pem.as_bytes()),
        _ => EncodingKey::from_rsa_pem(pem.as_bytes()),
    }
    .map_err(|e| format!("the private key cannot sign with {algorithm:?}: {e}"))?;
    let mut jti = [0u8; 16];
    getrandom::fill(&mut jti).expect("the operating system's random source works");
    let now = crate::vault::now();
    let claims = serde_json::json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + ASSERTION_LIFETIME.as_secs(),
        "jti": jti.iter().map(|b| format!("{b:02x}")).collect::<String>(),
    });
    jsonwebtoken::encode(&Header::new(algorithm), &claims, &key)
        .map_err(|e| format!("signing the client assertion failed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(methods: Option<&[&str]>) -> AuthorizationMetadata {
        let mut json = serde_json::json!({
            "authorization_endpoint": "https://as.test/authorize",
            "token_endpoint": "https://as.test/token",
        });
        if let Some(methods) = methods {
            json["token_endpoint_auth_methods_supported"] = serde_json::json!(methods);
        }
        serde_json::from_value(json).expect("metadata")
    }

    #[test]
    fn basic_unless_the_server_takes_only_post() {
        assert!(matches!(secret_method(&metadata(None)), AuthType::BasicAuth));
        let both = metadata(Some(&["client_secret_post", "client_secret_basic"]));
        assert!(matches!(secret_method(&both), AuthType::BasicAuth));
        let post = metadata(Some(&["client_secret_post", "private_key_jwt"]));
        assert!(matches!(secret_method(&post), AuthType::RequestBody));
    }

    #[test]
    fn a_key_that_is_not_one_is_a_clear_error() {
        let error = sign_assertion(
            "ci",
            "https://as.test",
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
            "RS256",
        )
        .unwrap_err();
        assert!(error.contains("cannot sign with RS256"), "{error}");
        let error = sign_assertion("ci", "https://as.test", "", "XX1").unwrap_err();
        assert!(error.contains("unknown signing algorithm XX1"), "{error}");
    }
}
