//! `GET /oauth/callback`: where an authorization server sends a caller back after they signed
//! in to a server that signs in each caller (`oauth = { per_principal = true }`). The gateway
//! finishes the sign-in it started for them (matched by the redirect's `state`, which only the
//! link it gave them carries) and says so on a small page. It needs no credential: the person
//! arrives from their browser, and the state is what proves the sign-in is theirs.

use std::sync::Arc;

use axum::extract::Query;
use axum::http::StatusCode;
use axum::response::Html;
use toolgate_gateway::Gateway;

/// The route.
pub(crate) const PATH: &str = "/oauth/callback";

/// Finishes the sign-in the redirect's query belongs to.
pub(crate) async fn finish(
    gateway: Arc<Gateway>,
    Query(query): Query<Vec<(String, String)>>,
) -> (StatusCode, Html<String>) {
    match gateway.complete_sign_in(&query).await {
        Ok(finished) => {
            tracing::info!(server = %finished.server, entry = %finished.entry, "a caller signed in");
            let who = finished.subject.map(|s| format!(" as {}", escape(&s))).unwrap_or_default();
            let page = format!(
                "<p>Signed in to {}{who}. You can close this tab and call the tool again.</p>",
                escape(&finished.server)
            );
            (StatusCode::OK, Html(page))
        }
        Err(error) => {
            tracing::info!(%error, "a sign-in redirect was refused");
            let page = format!("<p>The sign-in did not finish: {}</p>", escape(&error.to_string()));
            (StatusCode::BAD_REQUEST, Html(page))
        }
    }
}

/// `text` safe inside HTML.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
