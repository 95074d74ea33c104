//! The servers page: each configured server, its state and what it said about itself, with a
//! Restart button that goes through the admin API's own code (`admin::restart_server`).

use axum::extract::{Form, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use serde::Deserialize;

use super::session::Session;
use super::{Access, Console, CsrfForm, layout};

#[derive(Deserialize, Default)]
pub(super) struct Restarted {
    restarted: Option<String>,
}

/// `GET /console/servers`.
pub(super) async fn page(
    State(console): State<Console>,
    headers: HeaderMap,
    Query(done): Query<Restarted>,
) -> Response {
    let session = match console.gateway_admin(&headers) {
        Access::Allowed(session) => session,
        Access::Refused(response) => return response,
    };
    let notice = done.restarted.map(|name| format!("{name} was restarted and is connected."));
    render(&console, &session, StatusCode::OK, notice.as_deref(), None)
}

/// The page, with a notice of what was just done or an error.
fn render(
    console: &Console,
    session: &Session,
    status: StatusCode,
    notice: Option<&str>,
    error: Option<&str>,
) -> Response {
    let upstreams = console.admin.gateway.upstreams();
    let body = html! {
        @if let Some(notice) = notice { p class="notice" role="status" { (notice) } }
        @if let Some(error) = error { p class="error" role="alert" { (error) } }
        table {
            caption { (upstreams.len()) " servers" }
            thead { tr {
                th scope="col" { "Name" } th scope="col" { "State" }
                th scope="col" { "Transport" } th scope="col" { "Protocol" }
                th scope="col" { "Tools" } th scope="col" { "Last error" }
                th scope="col" { "Action" }
            } }
            tbody {
                @for upstream in &upstreams {
                    @let info = upstream.info();
                    @let error = upstream.last_error();
                    @let state = if upstream.is_connected() {
                        "connected"
                    } else if upstream.is_restarting() {
                        "restarting"
                    } else if upstream.needs_login() {
                        "needs login"
                    } else if error.is_some() {
                        "failed"
                    } else {
                        "starting"
                    };
                    tr {
                        th scope="row" { (upstream.name()) }
                        td class={ "state " (state.replace(' ', "-")) } { (state) }
                        td { (info.as_ref().map_or(upstream.config().transport.kind(), |i| i.transport)) }
                        td { (info.as_ref().map_or("", |i| i.protocol_version.as_str())) }
                        td class="number" { (upstream.catalog().tools.len()) }
                        td { (error.unwrap_or_default()) }
                        td {
                            form method="post" action={ "/console/servers/" (upstream.name()) "/restart" } {
                                input type="hidden" name="csrf" value=(session.csrf);
                                button type="submit" aria-label={ "Restart " (upstream.name()) } {
                                    "Restart"
                                }
                            }
                        }
                    }
                }
            }
        }
        p class="hint" {
            "Restart drops the server's connection (a server that is a process is stopped) and \
             connects again at once; calls running on it fail, calls made meanwhile wait for it."
        }
    };
    (status, layout("Servers", Some(session), body)).into_response()
}

/// `POST /console/servers/{name}/restart`: as `POST /servers/{name}/restart`, then back to
/// the page.
pub(super) async fn restart(
    State(console): State<Console>,
    Path(name): Path<String>,
    headers: HeaderMap,
    Form(form): Form<CsrfForm>,
) -> Response {
    let session = match console.posted_by_gateway_admin(&headers, &form.csrf) {
        Ok(session) => session,
        Err(refused) => return refused,
    };
    match crate::admin::restart_server(&console.admin, &session.who.name, &name).await {
        Ok(()) => {
            let name = url::form_urlencoded::byte_serialize(name.as_bytes()).collect::<String>();
            Redirect::to(&format!("/console/servers?restarted={name}")).into_response()
        }
        Err((status, message)) => render(&console, &session, status, None, Some(&message)),
    }
}
