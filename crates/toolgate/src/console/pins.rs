//! Tools' pins as the `integrity` interceptor judges them (pinned, approved, drifted, new), a
//! drifted tool's change as a line diff of its contract, and accepting a contract from the
//! page through the admin API's own code (`admin::approve_tool`), naming the digest of the
//! contract the page showed: if the server lists another one by then, nothing is pinned.

use axum::extract::{Form, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;
use toolgate_integrity::Contract;
use toolgate_integrity::diff::{LineTag, line_diff};
use toolgate_interceptors::integrity::{PinReview, PinState};

use super::session::Session;
use super::{Access, Console, layout};

/// One exposed tool and how it stands.
struct Row {
    exposed: String,
    server: String,
    review: PinReview,
    /// Who approved the contract pinned now, in this process.
    approved_by: Option<String>,
}

impl Row {
    /// The state's word: `approved` for a pin an operator accepted here.
    fn word(&self) -> &'static str {
        match (self.review.state(), &self.approved_by) {
            (PinState::Pinned, Some(_)) => "approved",
            (state, _) => state.word(),
        }
    }

    /// Whether an approver has something to accept.
    fn approvable(&self) -> bool {
        matches!(self.review.state(), PinState::Drifted(_) | PinState::New)
    }
}

/// Every exposed tool against the lock files, in the inventory's order; `only`: that tool.
fn rows(console: &Console, only: Option<&str>) -> Vec<Row> {
    let pins = console.admin.integrity.pins();
    let inventory = console.admin.gateway.inventory();
    let upstreams = console.admin.gateway.upstreams();
    inventory
        .tools()
        .iter()
        .filter(|tool| only.is_none_or(|only| *tool.name == *only))
        .filter_map(|tool| {
            let route = inventory.tool_route(&tool.name)?;
            let upstream = upstreams.iter().find(|u| u.name() == &*route.upstream)?;
            // As its server lists it (the interceptor judges that, not the exposed copy).
            let listed = upstream.tool(&route.original)?;
            let review = pins.review(&route.upstream, &route.original, &listed);
            let approved_by =
                console.admin.approved.by(&route.upstream, &route.original, &review.now.digest);
            Some(Row {
                exposed: tool.name.to_string(),
                server: route.upstream.to_string(),
                review,
                approved_by,
            })
        })
        .collect()
}

/// `sha256:` and the first 12 hex digits.
fn short(digest: &str) -> String {
    digest.chars().take("sha256:".len() + 12).collect()
}

#[derive(Deserialize, Default)]
pub(super) struct Approved {
    approved: Option<String>,
}

/// `GET /console/pins`: the tools that wait for a person (drifted, new, or a lock that cannot
/// be read) first.
pub(super) async fn page(
    State(console): State<Console>,
    headers: HeaderMap,
    Query(done): Query<Approved>,
) -> Response {
    let session = match console.gateway_admin(&headers) {
        Access::Allowed(session) => session,
        Access::Refused(response) => return response,
    };
    if console.admin.integrity.paths().is_empty() {
        let body = html! {
            p { "No " code { "integrity" } " interceptor in the pipeline: no tool is pinned." }
        };
        return layout("Pins", Some(&session), body).into_response();
    }
    let mut rows = rows(&console, None);
    // What waits for a person first, then the rest, each in the inventory's order.
    rows.sort_by_key(|row| *row.review.state() == PinState::Pinned);
    let waiting = rows.iter().filter(|row| row.approvable()).count();
    let body = html! {
        @if let Some(tool) = &done.approved {
            p class="notice" role="status" { "The contract of " code { (tool) } " is pinned." }
        }
        p { "Lock files: " @for (i, path) in console.admin.integrity.paths().iter().enumerate() {
            @if i > 0 { ", " } code { (path.display()) }
        } }
        table id="pins" {
            caption { (rows.len()) " tools, " (waiting) " waiting for a person" }
            thead { tr {
                th scope="col" { "Tool" } th scope="col" { "Server" }
                th scope="col" { "State" } th scope="col" { "Contract now" }
                th scope="col" { "Review" }
            } }
            tbody {
                @for row in &rows {
                    tr id={ "pin-" (row.exposed) } {
                        th scope="row" { code { (row.exposed) } }
                        td { (row.server) }
                        td class={ "state " (row.word().replace(' ', "-")) } {
                            (row.word())
                            @if let Some(by) = &row.approved_by { " by " (by) }
                        }
                        td { code { (short(&row.review.now.digest)) } }
                        td {
                            a href={ "/console/pins/" (row.exposed) } {
                                @if row.approvable() { "Review and approve" } @else { "Details" }
                                span class="visually-hidden" { " " (row.exposed) }
                            }
                        }
                    }
                }
            }
        }
    };
    layout("Pins", Some(&session), body).into_response()
}

/// `GET /console/pins/{tool}`.
pub(super) async fn detail(
    State(console): State<Console>,
    Path(exposed): Path<String>,
    headers: HeaderMap,
) -> Response {
    let session = match console.gateway_admin(&headers) {
        Access::Allowed(session) => session,
        Access::Refused(response) => return response,
    };
    render_detail(&console, &session, &exposed, StatusCode::OK, None)
}

/// The detail page of `exposed`, with an error above it (a refused approval).
fn render_detail(
    console: &Console,
    session: &Session,
    exposed: &str,
    status: StatusCode,
    error: Option<&str>,
) -> Response {
    let title = format!("Pin of {exposed}");
    let Some(row) = rows(console, Some(exposed)).into_iter().next() else {
        let body = html! {
            @if let Some(error) = error { p class="error" role="alert" { (error) } }
            p role="alert" { "No tool " code { (exposed) } " is listed now." }
            p { a href="/console/pins" { "All pins" } }
        };
        return (StatusCode::NOT_FOUND, layout(&title, Some(session), body)).into_response();
    };
    let review = &row.review;
    let body = html! {
        @if let Some(error) = error { p class="error" role="alert" id="approve-error" { (error) } }
        dl {
            dt { "Server" } dd { (row.server) }
            dt { "State" } dd id="pin-state" {
                (row.word()) @if let Some(by) = &row.approved_by { " by " (by) }
            }
            dt { "Contract now" } dd { code id="digest-now" { (review.now.digest) } }
            @if let Some(pinned) = review.pinned() {
                dt { "Pinned contract" } dd { code { (pinned.digest) } }
            }
            @for (path, state) in &review.locks {
                dt { "In " code { (path.display()) } } dd { (state.word())
                    @if let PinState::Unreadable(why) = state { ": " (why) } }
            }
        }
        @if let Some(pinned) = review.pinned() {
            h2 { "What changed since it was pinned" }
            (diff(pinned, &review.now))
        } @else if matches!(review.state(), PinState::New) {
            h2 { "Its contract (not pinned yet)" }
            pre class="contract" { (serde_json::to_string_pretty(&review.now.value).unwrap_or_default()) }
        }
        @if row.approvable() {
            form method="post" action={ "/console/pins/" (row.exposed) "/approve" } {
                input type="hidden" name="csrf" value=(session.csrf);
                input type="hidden" name="digest" value=(review.now.digest);
                p class="hint" id="approve-hint" {
                    "Pins the contract shown here (" code { (short(&review.now.digest)) }
                    ") in every lock file. If the server lists another one by now, nothing is \
                     pinned and this page shows the new change."
                }
                button type="submit" aria-describedby="approve-hint" { "Approve this contract" }
            }
        }
        p { a href="/console/pins" { "All pins" } }
    };
    (status, layout(&title, Some(session), body)).into_response()
}

/// The change from `pinned` to `now`, field by field, as a table of lines per field.
fn diff(pinned: &Contract, now: &Contract) -> Markup {
    html! {
        @for field in line_diff(pinned, now) {
            table class="diff" {
                caption { code { (field.field) } }
                thead { tr {
                    th scope="col" { span class="visually-hidden" { "Change" } }
                    th scope="col" { "Line" }
                } }
                @for (i, hunk) in field.hunks.iter().enumerate() {
                    tbody {
                        @if i > 0 { tr class="gap" { td colspan="2" { "…" } } }
                        @for line in hunk {
                            @let (class, mark, said) = match line.tag {
                                LineTag::Same => ("same", " ", "unchanged"),
                                LineTag::Removed => ("removed", "−", "removed"),
                                LineTag::Added => ("added", "+", "added"),
                            };
                            tr class=(class) {
                                td class="mark" { span aria-hidden="true" { (mark) }
                                    span class="visually-hidden" { (said) } }
                                td { pre { (line.text) } }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[derive(Deserialize)]
pub(super) struct ApproveForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    digest: String,
}

/// `POST /console/pins/{tool}/approve`: as `POST /integrity/{tool}/approve` with the digest
/// the page showed.
pub(super) async fn approve(
    State(console): State<Console>,
    Path(exposed): Path<String>,
    headers: HeaderMap,
    Form(form): Form<ApproveForm>,
) -> Response {
    let session = match console.posted_by_gateway_admin(&headers, &form.csrf) {
        Ok(session) => session,
        Err(refused) => return refused,
    };
    if !form.digest.starts_with("sha256:") {
        let error = "the form names no contract digest: reload the page and try again";
        return render_detail(&console, &session, &exposed, StatusCode::BAD_REQUEST, Some(error));
    }
    match crate::admin::approve_tool(&console.admin, &session.who.name, &exposed, &form.digest) {
        Ok(_) => {
            let tool = url::form_urlencoded::byte_serialize(exposed.as_bytes()).collect::<String>();
            Redirect::to(&format!("/console/pins?approved={tool}")).into_response()
        }
        Err(refused) => {
            render_detail(&console, &session, &exposed, refused.status, Some(refused.message()))
        }
    }
}
