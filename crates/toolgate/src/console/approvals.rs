//! The calls waiting for approval, approved or denied from the page through the admin API's
//! own code (`admin::decide_held`), as the person logged in.

use std::time::Duration;

use axum::extract::{Form, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use serde::Deserialize;
use serde_json::{Value, json};

use super::session::Session;
use super::{Console, layout};

#[derive(Deserialize, Default)]
pub(super) struct Decided {
    id: Option<String>,
    decision: Option<String>,
}

/// `GET /console/approvals`.
pub(super) async fn page(
    State(console): State<Console>,
    headers: HeaderMap,
    Query(decided): Query<Decided>,
) -> Response {
    let session = match console.session(&headers) {
        Ok(session) => session,
        Err(redirect) => return redirect,
    };
    let notice = match (decided.id, decided.decision.as_deref()) {
        (Some(id), Some("allow")) => Some(format!("Call {id} allowed.")),
        (Some(id), Some("deny")) => Some(format!("Call {id} denied.")),
        _ => None,
    };
    render(&console, &session, StatusCode::OK, notice.as_deref(), None).await
}

/// The page, with a notice of what was just done or an error.
async fn render(
    console: &Console,
    session: &Session,
    status: StatusCode,
    notice: Option<&str>,
    error: Option<&str>,
) -> Response {
    let (waiting, unavailable) = match console.admin.approvals.waiting().await {
        Ok(waiting) => (waiting, None),
        Err(error) => (Vec::new(), Some(error.to_string())),
    };
    let error = error.or(unavailable.as_deref());
    let pending: Vec<Value> = waiting
        .iter()
        .filter(|p| session.who.sees(p.caller_tenant()))
        .map(|p| p.to_json())
        .collect();
    let text = |v: &Value, key: &str| v[key].as_str().unwrap_or_default().to_owned();
    let body = html! {
        @if let Some(notice) = notice { p class="notice" role="status" { (notice) } }
        @if let Some(error) = error { p class="error" role="alert" { (error) } }
        @if pending.is_empty() {
            p id="none-waiting" { "No call is waiting for approval." }
        } @else {
            table id="approvals" {
                caption { (pending.len()) " calls waiting" }
                thead { tr {
                    th scope="col" { "Call" } th scope="col" { "Tool" } th scope="col" { "Server" }
                    th scope="col" { "Caller" } th scope="col" { "Arguments" }
                    th scope="col" { "Reason" } th scope="col" { "Time left" }
                    th scope="col" { "Decision" }
                } }
                tbody {
                    @for held in &pending {
                        @let id = text(held, "id");
                        @let arguments = serde_json::to_string_pretty(&held["arguments"]).unwrap_or_default();
                        @let left = Duration::from_secs(held["expires_in_ms"].as_u64().unwrap_or(0) / 1000);
                        tr id={ "call-" (id) } {
                            th scope="row" { (id) }
                            td { code { (text(held, "exposed")) } }
                            td { (text(held, "server")) }
                            td { (text(held, "caller")) }
                            td { pre { (arguments) } }
                            td class="text" { (text(held, "reason")) }
                            td { (humantime::format_duration(left)) }
                            td {
                                form method="post" action={ "/console/approvals/" (id) } {
                                    input type="hidden" name="csrf" value=(session.csrf);
                                    button type="submit" name="decision" value="allow"
                                        aria-label={ "Approve call " (id) } { "Approve" }
                                }
                                form method="post" action={ "/console/approvals/" (id) } {
                                    input type="hidden" name="csrf" value=(session.csrf);
                                    label for={ "reason-" (id) } { "Reason for denying" }
                                    input id={ "reason-" (id) } name="reason" type="text";
                                    button type="submit" name="decision" value="deny"
                                        aria-label={ "Deny call " (id) } { "Deny" }
                                }
                            }
                        }
                    }
                }
            }
        }
        p { a href="/console/approvals" { "Refresh" } }
    };
    (status, layout("Approvals waiting", Some(session), body)).into_response()
}

#[derive(Deserialize)]
pub(super) struct DecisionForm {
    #[serde(default)]
    csrf: String,
    decision: String,
    #[serde(default)]
    reason: String,
}

/// `POST /console/approvals/{id}`: allow or deny, as `POST /approvals/{id}` would.
pub(super) async fn decide(
    State(console): State<Console>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Form(form): Form<DecisionForm>,
) -> Response {
    let session = match console.posted(&headers, &form.csrf) {
        Ok(session) => session,
        Err(refused) => return refused,
    };
    let mut body = json!({ "decision": form.decision });
    if form.decision == "deny" && !form.reason.trim().is_empty() {
        body["reason"] = json!(form.reason.trim());
    }
    let body = serde_json::to_vec(&body).expect("JSON");
    match crate::admin::decide_held(&console.admin, &session.who, &id, &body).await {
        Ok(decision) => {
            let to = format!(
                "/console/approvals?id={}&decision={decision}",
                url::form_urlencoded::byte_serialize(id.as_bytes()).collect::<String>()
            );
            Redirect::to(&to).into_response()
        }
        Err((status, message)) => render(&console, &session, status, None, Some(&message)).await,
    }
}
