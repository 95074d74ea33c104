//! `GET /readyz`, on both listeners beside `/healthz`: 200 when every `required = true` server
//! is connected, else 503 naming those that are not (for a load balancer's or Kubernetes'
//! readiness probe; `/healthz` is the liveness probe: the process answers). And the routes
//! the main listener adds for them: `/readyz`, and `/metrics` with `[gateway] metrics`.

use std::sync::Arc;

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use toolgate_gateway::Gateway;

use crate::metrics::Metrics;

/// The servers `/readyz` waits for.
#[derive(Debug, Clone, Default)]
pub(crate) struct Required(Arc<Vec<String>>);

impl Required {
    /// The enabled servers of `config` marked `required = true`.
    pub(crate) fn of(config: &toolgate_config::Config) -> Required {
        let names = config.servers.iter().filter(|s| s.enabled && s.required);
        Required(Arc::new(names.map(|s| s.name.clone()).collect()))
    }

    /// The required servers that are not connected now.
    fn not_ready(&self, gateway: &Gateway) -> Vec<String> {
        let upstreams = gateway.upstreams();
        self.0
            .iter()
            .filter(|name| !upstreams.iter().any(|u| u.name() == name.as_str() && u.is_connected()))
            .cloned()
            .collect()
    }
}

/// The answer to `GET /readyz`.
pub(crate) fn readiness(gateway: &Gateway, required: &Required) -> Response {
    let waiting = required.not_ready(gateway);
    if waiting.is_empty() {
        return (StatusCode::OK, Json(json!({ "ready": true }))).into_response();
    }
    let body = json!({
        "ready": false,
        "not_connected": waiting,
        "error": format!("required servers not connected: {}", waiting.join(", ")),
    });
    (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response()
}

/// What the main listener serves beside `/mcp` and `/healthz`: `/readyz`, and `/metrics` when
/// `metrics` is given (`[gateway] metrics = true`; no credentials asked, as `/healthz`).
pub(crate) fn routes(
    gateway: Arc<Gateway>,
    required: Required,
    metrics: Option<Arc<Metrics>>,
) -> axum::Router {
    let router = axum::Router::new().route(
        "/readyz",
        axum::routing::get(move || async move { readiness(&gateway, &required) }),
    );
    match metrics {
        Some(metrics) => router.route(
            "/metrics",
            axum::routing::get(move || async move { crate::metrics::response(&metrics).await }),
        ),
        None => router,
    }
}
