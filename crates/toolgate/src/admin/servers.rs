//! Restarting a configured server (`POST /servers/{name}/restart`, and the console's servers
//! page through [`restart_server`]): its connection dropped and made again at once by its
//! supervisor (`Upstream::restart`), recorded with who asked.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use toolgate_audit::{Event, kind};

use super::{Admin, gateway_admin, problem};

/// Restarts the server `name` as `operator`: publishes `upstream/restart_requested` with who
/// asked, then waits for the new connection. The status and message of a refusal or failure.
pub(crate) async fn restart_server(
    admin: &Admin,
    operator: &str,
    name: &str,
) -> Result<(), (StatusCode, String)> {
    let upstream = admin.gateway.upstreams().into_iter().find(|u| u.name() == name);
    let Some(upstream) = upstream else {
        return Err((StatusCode::NOT_FOUND, format!("no server `{name}` is configured")));
    };
    admin.gateway.recorder().bus().publish(
        Event::new(kind::UPSTREAM_RESTART_REQUESTED)
            .with("server", name.to_owned())
            .with("by", operator.to_owned()),
    );
    tracing::info!(target: "toolgate::admin", server = %name, by = %operator, "server restart");
    upstream
        .restart()
        .await
        .map_err(|error| (StatusCode::BAD_GATEWAY, toolgate_core::ErrorChain(&error).to_string()))
}

/// `POST /servers/{name}/restart`: `{"server", "by", "connected": true}` once it is back; 404
/// for a server that is not configured, 502 saying why when it does not come back.
pub(super) async fn restart(
    State(admin): State<Admin>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    let operator = match gateway_admin(&admin, &headers).await {
        Ok(operator) => operator,
        Err(refused) => return refused,
    };
    match restart_server(&admin, &operator, &name).await {
        Ok(()) => {
            Json(json!({ "server": name, "by": operator, "connected": true })).into_response()
        }
        Err((status, message)) => problem(status, message),
    }
}
