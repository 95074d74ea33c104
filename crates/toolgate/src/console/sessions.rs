//! The downstream sessions open now and the `subscriptions/listen` streams, from the
//! gateway's read-only snapshot (`Sessions::snapshot`): who, over what, since when. An admin
//! in a tenant sees its own tenant's.

use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use maud::html;
use toolgate_gateway::session::SessionView;

use super::{Console, layout, refused_page};

/// Rows shown of each table at most (the newest); the fronts bound how many there are.
const MOST_SHOWN: usize = 500;

/// `count` and `noun`, in the plural unless it is one.
fn counted(count: usize, noun: &str) -> String {
    if count == 1 { format!("1 {noun}") } else { format!("{count} {noun}s") }
}

/// A duration to the second, as people read it (`1h 2m 5s`).
fn shown(duration: Duration) -> String {
    humantime::format_duration(Duration::from_secs(duration.as_secs())).to_string()
}

fn version(view: &SessionView) -> String {
    view.opened_by.version.as_ref().map(ToString::to_string).unwrap_or_else(|| "—".to_owned())
}

/// `GET /console/sessions`.
pub(super) async fn page(State(console): State<Console>, headers: HeaderMap) -> Response {
    let session = match console.session(&headers) {
        Ok(session) => session,
        Err(redirect) => return redirect,
    };
    if !session.admin {
        return refused_page(&session, "The sessions page is for admins.");
    }
    let snapshot = console.admin.gateway.sessions().snapshot();
    let theirs = |views: Vec<SessionView>| -> Vec<SessionView> {
        views
            .into_iter()
            .filter(|view| session.who.sees(view.opened_by.principal.tenant.as_deref()))
            .collect()
    };
    let (sessions, streams) = (theirs(snapshot.sessions), theirs(snapshot.streams));
    let body = html! {
        table id="sessions" {
            caption {
                (counted(sessions.len(), "session")) " open"
                @if sessions.len() > MOST_SHOWN { " (the newest " (MOST_SHOWN) " shown)" }
            }
            thead { tr {
                th scope="col" { "Session" } th scope="col" { "Principal" }
                th scope="col" { "Transport" } th scope="col" { "Protocol" }
                th scope="col" { "Open for" } th scope="col" { "Last request" }
                th scope="col" { "Subscriptions" }
            } }
            tbody {
                @for view in sessions.iter().take(MOST_SHOWN) {
                    tr {
                        th scope="row" { code { (view.opened_by.short_id.as_deref().unwrap_or("—")) } }
                        td { (view.opened_by.principal) }
                        td { (view.opened_by.transport) }
                        td { (version(view)) }
                        td { (shown(view.age)) }
                        td { @match view.idle {
                            Some(idle) => { (shown(idle)) " ago" },
                            None => "—",
                        } }
                        td class="number" { (view.subscriptions) }
                    }
                }
            }
        }
        table id="streams" {
            caption {
                (counted(streams.len(), "subscriptions/listen stream")) " open"
                @if streams.len() > MOST_SHOWN { " (the newest " (MOST_SHOWN) " shown)" }
            }
            thead { tr {
                th scope="col" { "Principal" } th scope="col" { "Transport" }
                th scope="col" { "Protocol" } th scope="col" { "Open for" }
            } }
            tbody {
                @for view in streams.iter().take(MOST_SHOWN) {
                    tr {
                        th scope="row" { (view.opened_by.principal) }
                        td { (view.opened_by.transport) }
                        td { (version(view)) }
                        td { (shown(view.age)) }
                    }
                }
            }
        }
        p class="hint" {
            "Session ids are shortened to their first characters. Clients of protocol \
             2026-07-28 open no session; their listen streams are in the second table."
        }
        p { a href="/console/sessions" { "Refresh" } }
    };
    layout("Sessions", Some(&session), body).into_response()
}
