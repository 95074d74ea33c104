//! Which upstreams toolgate signs in to, and telling a refusal that wants a login from other
//! failures.

use std::sync::Arc;

use rmcp::transport::streamable_http_client::{AuthRequiredError, InsufficientScopeError};
use toolgate_config::{ServerConfig, TransportConfig};
use toolgate_oauth::{Login, Logins, OAuthHttp, Target};

/// The sign-in of `config`'s server (see [`sign_in_target`]).
pub(crate) fn login_for(config: &ServerConfig, logins: &Logins) -> Option<Arc<Login>> {
    match sign_in_target(config) {
        Ok(target) => Some(logins.login(target)),
        Err(why) => {
            tracing::debug!(upstream = %config.name, %why, "no sign-in for this server");
            None
        }
    }
}

/// What toolgate signs in to for `config`'s server, with the server's own HTTP settings: an
/// HTTP server whose `oauth` is not off and whose config sends no `Authorization` header of
/// its own (a configured header wins). Otherwise, why not.
pub fn sign_in_target(config: &ServerConfig) -> Result<Target, String> {
    let TransportConfig::Http(http) = &config.transport else {
        return Err(format!(
            "{} is not an HTTP server (a stdio server takes its credentials from its environment)",
            config.name
        ));
    };
    if !http.oauth.enabled {
        return Err(format!("{} has oauth = false", config.name));
    }
    if http.headers.keys().any(|name| name.eq_ignore_ascii_case("authorization")) {
        return Err(format!(
            "{} sends its own Authorization header (headers win over oauth)",
            config.name
        ));
    }
    // The server's proxy and CA bundle, checked once here (the builder is made again for each
    // of the two clients the OAuth requests use).
    let _checked = crate::egress::oauth_client_builder(http).map_err(|error| error.to_string())?;
    let client = OAuthHttp::new(&http.url, || {
        crate::egress::oauth_client_builder(http).expect("built once above")
    })
    .map_err(|error| format!("cannot build its HTTP client: {error}"))?;
    Ok(Target {
        server: config.name.clone(),
        url: http.url.clone(),
        config: http.oauth.clone(),
        http: client,
    })
}

/// Whether `error` (or one of its causes) is a server's `401` or `403 insufficient_scope`
/// that toolgate could not answer with a token.
pub(crate) fn wants_login(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(error) = next {
        if error.is::<AuthRequiredError>() || error.is::<InsufficientScopeError>() {
            return true;
        }
        // A handshake that fell back from `server/discover` to `initialize` keeps the
        // fallback's failure off its chain of sources; rmcp finds the challenge in either.
        if let Some(handshake) = error.downcast_ref::<rmcp::service::ClientInitializeError>()
            && handshake.auth_challenge().is_some()
        {
            return true;
        }
        if let Some(crate::sse::SseError::Status { status, .. }) = error.downcast_ref()
            && status.as_u16() == 401
        {
            return true;
        }
        next = error.source();
    }
    false
}
