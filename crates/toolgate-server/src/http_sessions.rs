//! The sessions of rmcp's HTTP front (`[gateway] http_front = "rmcp"`, kept one release for
//! comparison), bounded: at most so many open at once, and each closed after a while without a
//! request. toolgate's own front keeps its sessions in `crate::http::sessions`.

use std::sync::Arc;
use std::time::Duration;

use axum::response::IntoResponse as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::json;

/// The session manager: rmcp's, with `idle` as its keep-alive.
pub(crate) fn manager(idle: Duration) -> Arc<LocalSessionManager> {
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(idle);
    Arc::new(manager)
}

/// A session's `DELETE`: `404` for a session that is not open (as for any other request of
/// one), and once done `204 No Content` rather than rmcp's `202 Accepted`: the session is gone
/// when the answer leaves (nothing is left to accept), and the Python SDK takes only 200 or 204
/// as success (it logs "Session termination failed: 202").
pub(crate) async fn delete_session(
    manager: Arc<LocalSessionManager>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let delete = request.method() == http::Method::DELETE;
    if delete
        && let Some(id) = request.headers().get("mcp-session-id").and_then(|v| v.to_str().ok())
        && !manager.sessions.read().await.contains_key(id)
    {
        let body = json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": { "code": -32001, "message": "no such session (it ended or never existed)" },
        });
        return (http::StatusCode::NOT_FOUND, axum::Json(body)).into_response();
    }
    let mut response = next.run(request).await;
    if delete && response.status() == http::StatusCode::ACCEPTED {
        *response.status_mut() = http::StatusCode::NO_CONTENT;
        *response.body_mut() = axum::body::Body::empty();
    }
    response
}

/// Refuses a request that would open a session (a POST without `Mcp-Session-Id`) while
/// `most` are open: `503` with a JSON-RPC error saying so. Requests of open sessions pass.
pub(crate) async fn refuse_past(
    most: usize,
    manager: Arc<LocalSessionManager>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let opens =
        request.method() == http::Method::POST && !request.headers().contains_key("mcp-session-id");
    if opens && manager.sessions.read().await.len() >= most {
        let message = format!(
            "this gateway already has {most} open sessions, the most it keeps; try again when \
             one has closed (idle sessions close by themselves)"
        );
        let body = json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": { "code": -32000, "message": message },
        });
        return (http::StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response();
    }
    next.run(request).await
}
