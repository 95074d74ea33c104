//! The admin HTTP API, on its own address (`[admin] listen`), for operators and approvers:
//!
//! - `GET /approvals`: calls held for approval;
//! - `POST /approvals/{id}` with `{"decision": "allow" | "deny", "remember": "10m",
//!   "reason": "..."}`: decides one (the approver is the name of the token used);
//! - `GET /events?pattern=tools/*&pattern=*/denied`: the event stream (server-sent events);
//! - `GET /interceptors`: the pipeline, as `interceptors/list` returns it;
//! - `POST /integrity/{tool}/approve` with `{"digest": "sha256:…"}`: accepts the exposed
//!   tool's contract, the one with that digest (shown by `toolgate pin --diff` and in the
//!   refusal of the withheld tool), in the lock file of every `integrity` interceptor; `409`
//!   with both digests when the server lists another contract now (the approver reviewed
//!   something else), or when a lock file that existed is gone; the approver is recorded in an
//!   `integrity/approved` event (`contracts.rs`);
//! - `POST /servers/{name}/restart`: drops the configured server's connection (a child process
//!   is stopped) and connects again at once; answers once it is back (502 saying why when it
//!   is not); who asked is recorded in an `upstream/restart_requested` event (`servers.rs`);
//! - `GET /metrics`: the Prometheus text format (`crate::metrics`);
//! - `GET /healthz` (the process answers) and `GET /readyz` (every `required` server is
//!   connected; else 503 naming those that are not; `crate::health`).
//!
//! Every route but `/healthz` and `/readyz` needs `Authorization: Bearer <credential>`: one of
//! `[admin] tokens` (an admin of the whole gateway), or, with `[auth]`, the same credentials
//! as `/mcp` (an access token or an API key) of a principal in `[auth.roles]`: approvers may
//! list and decide held calls, admins everything. A principal in a tenant sees and decides
//! only its tenant's held calls and events; the pipeline and tool contracts are the whole
//! gateway's, for admins in no tenant.

mod contracts;
mod roles;
mod servers;
mod shared_contracts;

use std::convert::Infallible;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use toolgate_audit::{EventPattern, SINK_CAPACITY};
use toolgate_interceptors::integrity::IntegrityLocks;
use toolgate_interceptors::{ApprovalDesk, DecideError};

use toolgate_gateway::Gateway;
use toolgate_gateway::interceptors_list;
use toolgate_server::{Authenticator, ConnectionLimits};

pub(crate) use contracts::{ApprovedContracts, approve_tool};
pub(crate) use roles::Role;
pub(crate) use roles::RoleMembers;
pub(crate) use servers::restart_server;
pub(crate) use shared_contracts::follow as follow_shared_contracts;

/// Who may use the admin API: bearer tokens by the name of who holds them.
#[derive(Clone)]
pub(crate) struct AdminTokens(Vec<(String, String)>);

impl AdminTokens {
    /// Tokens as (name, token) pairs.
    pub(crate) fn new(tokens: impl IntoIterator<Item = (String, String)>) -> AdminTokens {
        AdminTokens(tokens.into_iter().collect())
    }

    /// The name whose token `presented` is. Every token is compared in full, so the time
    /// taken does not tell how much of a guess was right.
    fn holder(&self, presented: &str) -> Option<&str> {
        let mut found = None;
        for (name, token) in &self.0 {
            if constant_time_eq(token.as_bytes(), presented.as_bytes()) {
                found = Some(name.as_str());
            }
        }
        found
    }
}

impl std::fmt::Debug for AdminTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.iter().map(|(name, _)| name)).finish()
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[derive(Clone)]
pub(crate) struct Admin {
    pub(crate) gateway: Arc<Gateway>,
    pub(crate) approvals: Arc<ApprovalDesk>,
    pub(crate) integrity: Arc<IntegrityLocks>,
    /// The contracts approved in this process, and by whom.
    pub(crate) approved: Arc<ApprovedContracts>,
    tokens: AdminTokens,
    /// The front's credentials, when `[auth]` is set, and who holds which role.
    identity: Option<(Arc<Authenticator>, Arc<RoleMembers>)>,
    metrics: Option<Arc<crate::metrics::Metrics>>,
    /// What the replicas share, when they do: contracts approved here are pinned there too.
    pub(crate) shared: Option<shared_contracts::Replicas>,
}

/// The admin application, and its state (which the console, mounted beside it, shares).
pub(crate) fn admin_router(
    running: &crate::setup::Running,
    tokens: AdminTokens,
    identity: Option<(Arc<Authenticator>, Arc<RoleMembers>)>,
    required: crate::health::Required,
) -> (axum::Router, Admin) {
    let gateway = running.gateway.clone();
    let ready = gateway.clone();
    let admin = Admin {
        gateway,
        approvals: running.approvals.clone(),
        integrity: running.integrity_locks.clone(),
        approved: Arc::default(),
        tokens,
        identity,
        metrics: running.metrics.clone(),
        shared: running.shared.clone().map(shared_contracts::Replicas::new),
    };
    let router = axum::Router::new()
        .route("/metrics", axum::routing::get(scrape))
        .route("/approvals", axum::routing::get(list_approvals))
        .route("/approvals/{id}", axum::routing::post(decide))
        .route("/events", axum::routing::get(events))
        .route("/interceptors", axum::routing::get(interceptors))
        .route("/pool", axum::routing::get(pool))
        .route("/integrity/{tool}/approve", axum::routing::post(contracts::approve_contract))
        .route("/servers/{name}/restart", axum::routing::post(servers::restart))
        .route("/sign-ins/{server}/{principal}", axum::routing::delete(revoke_sign_in))
        .with_state(admin.clone())
        .route("/healthz", axum::routing::get(|| async { "ok\n" }))
        .route(
            "/readyz",
            axum::routing::get(move || async move { crate::health::readiness(&ready, &required) }),
        );
    (router, admin)
}

/// `GET /metrics`, for admins of the whole gateway (the series are the whole gateway's).
async fn scrape(State(admin): State<Admin>, headers: HeaderMap) -> Response {
    if let Err(refused) = gateway_admin(&admin, &headers).await {
        return refused;
    }
    match &admin.metrics {
        Some(metrics) => crate::metrics::response(metrics).await,
        None => problem(StatusCode::NOT_FOUND, "metrics are not collected in this process"),
    }
}

/// Serves the admin API on `listener`, its connections bounded by `limits`, until `shutdown`
/// fires; the connections still open `grace` later (an `/events` stream, a client that sent
/// half a request) are closed then.
pub(crate) async fn serve_admin(
    listener: TcpListener,
    router: axum::Router,
    limits: ConnectionLimits,
    grace: std::time::Duration,
    shutdown: CancellationToken,
) {
    toolgate_server::serve_router(listener, router, limits, grace, shutdown).await;
}

/// An error answer: a status and `{"error": message}`.
fn problem(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({ "error": message.into() }))).into_response()
}

/// A 401: no credential, or one nobody holds.
fn unauthorised(message: &str) -> Response {
    let mut response = problem(StatusCode::UNAUTHORIZED, message);
    response.headers_mut().insert(header::WWW_AUTHENTICATE, "Bearer".parse().expect("valid"));
    response
}

/// Who is using the admin API.
#[derive(Debug, Clone)]
pub(crate) struct Operator {
    /// As approvals and events name it: the token's name, or the principal (`kind:id@tenant`).
    pub(crate) name: String,
    /// The tenant it acts within; `None`: the whole gateway.
    pub(crate) tenant: Option<String>,
}

impl Operator {
    /// Whether something of `tenant` is this operator's to see.
    pub(crate) fn sees(&self, tenant: Option<&str>) -> bool {
        self.tenant.as_deref().is_none_or(|own| tenant == Some(own))
    }
}

/// Who the request's credential is, if it may do what `role` allows; else the answer.
pub(crate) async fn authorised(
    admin: &Admin,
    headers: &HeaderMap,
    role: Role,
) -> Result<Operator, Response> {
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, credential)| credential.trim());
    if let Some(name) = presented.and_then(|credential| admin.tokens.holder(credential)) {
        return Ok(Operator { name: name.to_owned(), tenant: None });
    }
    let Some((auth, roles)) = &admin.identity else {
        return Err(match presented {
            None => unauthorised("missing `Authorization: Bearer <token>` (one of [admin] tokens)"),
            Some(_) => unauthorised("unknown token"),
        });
    };
    if presented.is_none() {
        return Err(unauthorised(
            "missing `Authorization: Bearer <credential>` (one of [admin] tokens, or a \
             credential of a principal in [auth.roles])",
        ));
    }
    let principal = auth.authenticate(headers).await?;
    if let Err(why) = roles.check(&principal, role) {
        return Err(problem(StatusCode::FORBIDDEN, why));
    }
    Ok(Operator { name: principal.to_string(), tenant: principal.tenant.clone() })
}

async fn list_approvals(State(admin): State<Admin>, headers: HeaderMap) -> Response {
    let operator = match authorised(&admin, &headers, Role::Approver).await {
        Ok(operator) => operator,
        Err(refused) => return refused,
    };
    let waiting = match admin.approvals.waiting().await {
        Ok(waiting) => waiting,
        Err(error) => return problem(StatusCode::SERVICE_UNAVAILABLE, error.to_string()),
    };
    let pending: Vec<Value> =
        waiting.iter().filter(|p| operator.sees(p.caller_tenant())).map(|p| p.to_json()).collect();
    Json(json!({ "approvals": pending })).into_response()
}

async fn decide(
    State(admin): State<Admin>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let operator = match authorised(&admin, &headers, Role::Approver).await {
        Ok(operator) => operator,
        Err(refused) => return refused,
    };
    match decide_held(&admin, &operator, &id, &body).await {
        Ok(decision) => {
            Json(json!({ "id": id, "decision": decision, "by": operator.name })).into_response()
        }
        Err((status, message)) => problem(status, message),
    }
}

/// Decides the held call `id` as `operator`, with `body` as `POST /approvals/{id}` takes it:
/// the decision taken, or the status and message of the refusal. The console calls it too.
pub(crate) async fn decide_held(
    admin: &Admin,
    operator: &Operator,
    id: &str,
    body: &[u8],
) -> Result<&'static str, (StatusCode, String)> {
    // Another tenant's held call is not there for this approver.
    let waiting = admin
        .approvals
        .waiting()
        .await
        .map_err(|error| (StatusCode::SERVICE_UNAVAILABLE, error.to_string()))?;
    let theirs = waiting.iter().any(|p| p.id == id && operator.sees(p.caller_tenant()));
    if !theirs {
        return Err((StatusCode::NOT_FOUND, DecideError::NotPending(id.to_owned()).to_string()));
    }
    let approver = &operator.name;
    match admin.approvals.decide_body(id, approver, body).await {
        Ok((decided, decision)) => {
            tracing::info!(
                target: "toolgate::approval",
                id = %decided.id,
                tool = %decided.exposed,
                by = %approver,
                decision,
                "approval decided"
            );
            Ok(decision)
        }
        Err(error @ DecideError::BadBody(_)) => Err((StatusCode::BAD_REQUEST, error.to_string())),
        Err(error @ DecideError::NotPending(_)) => Err((StatusCode::NOT_FOUND, error.to_string())),
        Err(error @ DecideError::OwnCall { .. }) => Err((StatusCode::FORBIDDEN, error.to_string())),
        Err(error @ DecideError::Unavailable(_)) => {
            Err((StatusCode::SERVICE_UNAVAILABLE, error.to_string()))
        }
    }
}

/// An admin of the whole gateway (in no tenant): its name, else the answer.
async fn gateway_admin(admin: &Admin, headers: &HeaderMap) -> Result<String, Response> {
    let operator = authorised(admin, headers, Role::Admin).await?;
    if let Some(tenant) = &operator.tenant {
        return Err(problem(
            StatusCode::FORBIDDEN,
            format!(
                "{} is an admin of tenant {tenant}; this is the whole gateway's, for admins in \
                 no tenant",
                operator.name
            ),
        ));
    }
    Ok(operator.name)
}

/// `DELETE /sign-ins/{server}/{principal}`: a caller's upstream tokens for a server that signs
/// in each caller are deleted and their connection closed (`principal` as events name it,
/// `kind:id@tenant`); their next call is given a link to sign in again.
async fn revoke_sign_in(
    State(admin): State<Admin>,
    headers: HeaderMap,
    axum::extract::Path((server, principal)): axum::extract::Path<(String, String)>,
) -> Response {
    let operator = match gateway_admin(&admin, &headers).await {
        Ok(operator) => operator,
        Err(refused) => return refused,
    };
    match admin.gateway.revoke_sign_in(&server, &principal) {
        Ok(revoked) => {
            tracing::info!(%operator, %server, %principal, revoked, "upstream sign-in revoked");
            Json(serde_json::json!({"server": server, "principal": principal, "revoked": revoked}))
                .into_response()
        }
        Err(error) => problem(StatusCode::INTERNAL_SERVER_ERROR, error.to_string()),
    }
}

async fn interceptors(State(admin): State<Admin>, headers: HeaderMap) -> Response {
    if let Err(refused) = gateway_admin(&admin, &headers).await {
        return refused;
    }
    Json(interceptors_list(admin.gateway.pipeline())).into_response()
}

/// The connections to servers requests named by URL: how many are open, and how the pool
/// has fared (`hits`, `misses`, `evictions`), with its bounds.
async fn pool(State(admin): State<Admin>, headers: HeaderMap) -> Response {
    if let Err(refused) = gateway_admin(&admin, &headers).await {
        return refused;
    }
    let stats = admin.gateway.dynamic_stats();
    let settings = admin.gateway.pool_settings();
    Json(json!({
        "size": stats.size,
        "hits": stats.hits,
        "misses": stats.misses,
        "evictions": stats.evictions,
        "max_connections": settings.max_connections,
        "idle_timeout_secs": settings.idle_timeout.as_secs(),
    }))
    .into_response()
}

async fn events(
    State(admin): State<Admin>,
    headers: HeaderMap,
    Query(query): Query<Vec<(String, String)>>,
) -> Response {
    let operator = match authorised(&admin, &headers, Role::Admin).await {
        Ok(operator) => operator,
        Err(refused) => return refused,
    };
    let patterns: Vec<&str> =
        query.iter().filter(|(k, _)| k == "pattern").map(|(_, v)| v.as_str()).collect();
    for (key, _) in &query {
        if key != "pattern" {
            return problem(
                StatusCode::BAD_REQUEST,
                format!("unknown parameter {key:?} (expected pattern)"),
            );
        }
    }
    let pattern = if patterns.is_empty() {
        EventPattern::all()
    } else {
        match EventPattern::parse(&patterns.join(",")) {
            Ok(pattern) => pattern,
            Err(error) => return problem(StatusCode::BAD_REQUEST, error.to_string()),
        }
    };
    let subscription = admin.gateway.recorder().bus().subscribe(pattern, SINK_CAPACITY);
    // A tenant's admin reads the events of its tenant's callers only: events about no caller
    // (an upstream's, a list that changed) name servers of every tenant.
    let tenant = operator.tenant;
    let stream = futures::stream::unfold(subscription, move |mut subscription| {
        let tenant = tenant.clone();
        async move {
            let event = loop {
                let event = subscription.recv().await?;
                let of = event.fields.get("tenant").and_then(Value::as_str);
                if tenant.as_deref().is_none_or(|own| of == Some(own)) {
                    break event;
                }
            };
            let data = serde_json::to_string(&event).unwrap_or_else(|_| "{}".to_owned());
            let sse = SseEvent::default().event(event.kind.clone()).data(data);
            Some((Ok::<_, Infallible>(sse), subscription))
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default()).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_name_their_holder() {
        let tokens = AdminTokens::new([
            ("alice".to_owned(), "a-very-long-token-1".to_owned()),
            ("bob".to_owned(), "a-very-long-token-2".to_owned()),
        ]);
        assert_eq!(tokens.holder("a-very-long-token-2"), Some("bob"));
        assert_eq!(tokens.holder("a-very-long-token-"), None);
        assert_eq!(tokens.holder(""), None);
        assert_eq!(format!("{tokens:?}"), r#"["alice", "bob"]"#, "tokens never show");
    }
}
