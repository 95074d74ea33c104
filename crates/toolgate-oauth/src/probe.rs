//! Asking a server whether it wants a login, as a client's first request would: an
//! unauthenticated `initialize` (and, for a legacy HTTP+SSE server, the stream's `GET`). A
//! `401` carries the challenge that discovery starts from.

use rmcp::transport::auth::{OAuthHttpRedirectPolicy, WWWAuthenticateParams};

use crate::error::LoginError;
use crate::signin::Target;

/// What the server said to a request without a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// `401`, with its `WWW-Authenticate` value (empty when the server sent none: discovery
    /// then uses the well-known locations).
    Challenge(String),
    /// It answered without asking for a login (`status`).
    Open { status: u16 },
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"toolgate","version":"probe"}}}"#;

/// Asks `target` with no token.
pub async fn probe(target: &Target) -> Result<Probe, LoginError> {
    let failed = |detail: String| LoginError::Unsupported {
        server: target.server.clone(),
        why: format!("cannot reach {}: {detail}", target.url),
    };
    let post = http::Request::post(target.url.as_str())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .body(INITIALIZE.as_bytes().to_vec())
        .map_err(|e| failed(e.to_string()))?;
    let answer = target
        .http
        .send(post, OAuthHttpRedirectPolicy::Stop)
        .await
        .map_err(|e| failed(e.to_string()))?;
    if let Some(challenge) = challenge(&answer) {
        return Ok(Probe::Challenge(challenge));
    }
    if matches!(answer.status().as_u16(), 404 | 405) {
        let get = http::Request::get(target.url.as_str())
            .header("accept", "text/event-stream")
            .body(Vec::new())
            .map_err(|e| failed(e.to_string()))?;
        let stream = target.http.send(get, OAuthHttpRedirectPolicy::Stop).await;
        if let Some(challenge) = stream.ok().as_ref().and_then(challenge) {
            return Ok(Probe::Challenge(challenge));
        }
    }
    Ok(Probe::Open { status: answer.status().as_u16() })
}

fn challenge(answer: &http::Response<Vec<u8>>) -> Option<String> {
    (answer.status() == http::StatusCode::UNAUTHORIZED).then(|| {
        answer
            .headers()
            .get_all("www-authenticate")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find(|v| v.trim_start().to_ascii_lowercase().starts_with("bearer"))
            .unwrap_or_default()
            .to_owned()
    })
}

/// The scopes a challenge names.
pub(crate) fn challenge_scopes(challenge: &str, url: &url::Url) -> Vec<String> {
    WWWAuthenticateParams::parse(challenge, url)
        .scope
        .map(|scope| scope.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default()
}
