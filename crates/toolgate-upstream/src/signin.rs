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
/// that toolgate could not answer with a token, from a server that takes OAuth: a `401` whose
/// challenge names the server's protected resource metadata (as the MCP authorization
/// specification has servers say), or a `401` of a legacy SSE server. A bare `401` (an API
/// key server) is left to be described as what it is: "set `headers`".
pub(crate) fn wants_login(error: &(dyn std::error::Error + 'static)) -> bool {
    // The chain with the causes rmcp holds but does not return from `source()` (a failed
    // handshake's or request's transport error): the `401` is under them.
    let challenged = crate::cause::chain(error).into_iter().any(|error| {
        error.is::<InsufficientScopeError>()
            || error
                .downcast_ref::<AuthRequiredError>()
                .is_some_and(|e| e.www_authenticate_header.contains("resource_metadata="))
    });
    let mut next = Some(error);
    while let Some(error) = next {
        if let Some(crate::sse::SseError::Status { status, .. }) = error.downcast_ref()
            && status.as_u16() == 401
        {
            return true;
        }
        next = error.source();
    }
    challenged
}

#[cfg(test)]
mod tests {
    use rmcp::service::ClientInitializeError;
    use rmcp::transport::DynamicTransportError;
    use rmcp::transport::streamable_http_client::StreamableHttpError;

    use super::*;

    /// A handshake that failed on `error`, as rmcp reports it: the transport error is a field
    /// of `ClientInitializeError`, not its `source()`.
    fn handshake_failed(error: StreamableHttpError<reqwest::Error>) -> ClientInitializeError {
        ClientInitializeError::TransportError {
            error: DynamicTransportError::from_parts(
                "streamable",
                std::any::TypeId::of::<()>(),
                Box::new(error),
            ),
            context: "send initialize request".into(),
        }
    }

    #[test]
    fn a_401_naming_resource_metadata_under_a_failed_handshake_wants_a_login() {
        let challenge = "Bearer scope=\"mcp:tools\", \
                         resource_metadata=\"http://127.0.0.1:9/.well-known/oauth-protected-resource\"";
        let refused = handshake_failed(StreamableHttpError::AuthRequired(AuthRequiredError::new(
            challenge.to_owned(),
        )));
        assert!(wants_login(&refused));
        // A server that names no metadata wants some other credential (an API key).
        let bare = "Bearer realm=\"test\"".to_owned();
        let bare =
            handshake_failed(StreamableHttpError::AuthRequired(AuthRequiredError::new(bare)));
        assert!(!wants_login(&bare));
        let other = handshake_failed(StreamableHttpError::UnexpectedEndOfStream);
        assert!(!wants_login(&other));
    }
}
