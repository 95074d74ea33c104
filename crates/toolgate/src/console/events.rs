//! The live event stream in the page: `static/events.js` reads
//! `/console/events/stream` (the admin API's `/events`, with the console's cookie) with an
//! `EventSource` and adds each event to the table as text.

use std::convert::Infallible;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use maud::html;
use serde::Deserialize;
use serde_json::Value;
use toolgate_audit::{EventPattern, SINK_CAPACITY};

use super::session::Session;
use super::{Console, layout, refused_page};

#[derive(Deserialize, Default)]
pub(super) struct Filter {
    #[serde(default)]
    pattern: String,
}

/// The pattern typed in (comma-separated, such as `tools/*, */denied`); empty: every event.
fn parse(pattern: &str) -> Result<EventPattern, String> {
    if pattern.trim().is_empty() {
        return Ok(EventPattern::all());
    }
    EventPattern::parse(pattern.trim()).map_err(|error| error.to_string())
}

/// The session, if it belongs to an admin (of the gateway, or of a tenant).
fn admin_session(console: &Console, headers: &HeaderMap) -> Result<Session, Response> {
    let session = console.session(headers)?;
    if !session.admin {
        return Err(refused_page(&session, "The event stream is for admins."));
    }
    Ok(session)
}

/// `GET /console/events?pattern=`.
pub(super) async fn page(
    State(console): State<Console>,
    headers: HeaderMap,
    Query(filter): Query<Filter>,
) -> Response {
    let session = match admin_session(&console, &headers) {
        Ok(session) => session,
        Err(refused) => return refused,
    };
    let error = parse(&filter.pattern).err();
    let status = if error.is_some() { StatusCode::BAD_REQUEST } else { StatusCode::OK };
    let body = html! {
        form method="get" action="/console/events" role="search" {
            label for="pattern" { "Event pattern" }
            " "
            input id="pattern" name="pattern" type="text" value=(filter.pattern)
                placeholder="tools/*, */denied" aria-describedby="pattern-hint";
            " "
            button type="submit" { "Filter" }
            p id="pattern-hint" class="hint" {
                "Comma-separated patterns such as " code { "tools/*" } "; empty for every event."
            }
        }
        @if let Some(error) = &error {
            p class="error" role="alert" { (error) }
        } @else {
            p id="stream-state" role="status" { "Connecting…" }
            table id="events" data-pattern=(filter.pattern.trim()) {
                caption { "Events as they happen, newest first" }
                thead { tr {
                    th scope="col" { "Time" } th scope="col" { "Kind" } th scope="col" { "Fields" }
                } }
                tbody {}
            }
            script src="/console/static/events.js" {}
        }
    };
    (status, layout("Events", Some(&session), body)).into_response()
}

/// `GET /console/events/stream?pattern=`: server-sent events, as the admin API's `/events`.
pub(super) async fn stream(
    State(console): State<Console>,
    headers: HeaderMap,
    Query(filter): Query<Filter>,
) -> Response {
    let Ok(session) = console.session(&headers) else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    if !session.admin {
        return StatusCode::FORBIDDEN.into_response();
    }
    let pattern = match parse(&filter.pattern) {
        Ok(pattern) => pattern,
        Err(error) => return (StatusCode::BAD_REQUEST, error).into_response(),
    };
    let subscription = console.admin.gateway.recorder().bus().subscribe(pattern, SINK_CAPACITY);
    // A tenant's admin sees its own callers' events only, as on `/events`.
    let tenant = session.who.tenant;
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
            // Unnamed, so that the page's `onmessage` gets every kind; the kind is in the data.
            let sse = SseEvent::default().data(data);
            Some((Ok::<_, Infallible>(sse), subscription))
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default()).into_response()
}
