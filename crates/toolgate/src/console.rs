//! The web console at `/console` on the admin listener, for the people who run the gateway:
//! servers (restarted from the page), calls waiting for approval (approved or denied from the
//! page), tools' pins (a drifted tool's change shown and its contract approved from the page),
//! the inventory, the sessions and listen streams open, the live event stream and the audit
//! log. Every action goes through the admin API's own code.
//!
//! Pages are rendered on the server with maud, which escapes every value put into a template,
//! so names, descriptions and arguments that upstreams and callers chose render as text. The
//! only script is `static/events.js` (the live events), served from the binary; the
//! `Content-Security-Policy` allows nothing but this origin's files, and no framing.
//!
//! Login takes the same credentials as the admin API (an `[admin] tokens` token, or with
//! `[auth]` a credential of a principal in `[auth.roles]`); it opens a session
//! (`session.rs`) whose cookie every other page needs. Each POST must carry the session's form
//! token and come from this origin.

// A refusal is the answer to send, a `Response`, as in the HTTP front.
#![allow(clippy::result_large_err)]

mod approvals;
mod events;
mod pages;
mod pins;
mod servers;
mod session;
mod sessions;

use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::{Form, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use maud::{DOCTYPE, Markup, html};
use serde::Deserialize;
use tokio::time::Instant;

use crate::admin::{Admin, Operator, Role, authorised};
use session::{MAX_SESSIONS, SESSION_TTL, Session, Sessions};

/// The audit log's file (`[audit] file`), for the audit page; added to the admin router as
/// an extension by `serve`.
#[derive(Debug, Clone)]
pub(crate) struct AuditFile(pub(crate) Option<PathBuf>);

/// What the console's handlers share.
#[derive(Clone)]
pub(crate) struct Console {
    admin: Admin,
    sessions: Arc<Sessions>,
}

const CSS: &str = include_str!("console/static/console.css");
const EVENTS_JS: &str = include_str!("console/static/events.js");

/// The console's routes, under `/console`.
pub(crate) fn router(admin: Admin) -> axum::Router {
    let console = Console { admin, sessions: Arc::new(Sessions::new(MAX_SESSIONS, SESSION_TTL)) };
    use axum::routing::{get, post};
    axum::Router::new()
        .route("/console", get(|| async { Redirect::to("/console/servers") }))
        .route("/console/", get(|| async { Redirect::to("/console/servers") }))
        .route("/console/login", get(login_page).post(login))
        .route("/console/logout", post(logout))
        .route("/console/servers", get(servers::page))
        .route("/console/servers/{name}/restart", post(servers::restart))
        .route("/console/pins", get(pins::page))
        .route("/console/pins/{tool}", get(pins::detail))
        .route("/console/pins/{tool}/approve", post(pins::approve))
        .route("/console/sessions", get(sessions::page))
        .route("/console/inventory", get(pages::inventory))
        .route("/console/audit", get(pages::audit))
        .route("/console/approvals", get(approvals::page))
        .route("/console/approvals/{id}", post(approvals::decide))
        .route("/console/events", get(events::page))
        .route("/console/events/stream", get(events::stream))
        .route("/console/static/console.css", get(|| async { static_file("text/css", CSS) }))
        .route(
            "/console/static/events.js",
            get(|| async { static_file("text/javascript", EVENTS_JS) }),
        )
        .layer(axum::middleware::map_response(secure_headers))
        .with_state(console)
}

fn static_file(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "no-cache")], body)
        .into_response()
}

/// The headers every console answer carries.
async fn secure_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; \
             object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
        ),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // Not `no-referrer`: with it, browsers send `Origin: null` on the console's own form posts,
    // which the origin check must refuse.
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.entry(header::CACHE_CONTROL).or_insert(HeaderValue::from_static("no-store"));
    response
}

/// What a page needs to show: the session, or where to go instead.
enum Access {
    Allowed(Session),
    Refused(Response),
}

impl Console {
    /// The request's session; else a redirect to the login page.
    fn session(&self, headers: &HeaderMap) -> Result<Session, Response> {
        session::cookie_id(headers)
            .and_then(|id| self.sessions.get(id, Instant::now()))
            .ok_or_else(|| Redirect::to("/console/login").into_response())
    }

    /// The session, if it belongs to an admin of the whole gateway (servers, inventory, audit).
    fn gateway_admin(&self, headers: &HeaderMap) -> Access {
        match self.session(headers) {
            Ok(session) if session.admin && session.who.tenant.is_none() => {
                Access::Allowed(session)
            }
            Ok(session) => Access::Refused(refused_page(
                &session,
                "This page is for admins of the whole gateway.",
            )),
            Err(redirect) => Access::Refused(redirect),
        }
    }

    /// The session, if this POST carries its form token and comes from this origin.
    fn posted(&self, headers: &HeaderMap, csrf: &str) -> Result<Session, Response> {
        if !session::same_origin(headers) {
            return Err(forbidden("this form was not sent from the console's own pages"));
        }
        let session = self.session(headers)?;
        if !session::csrf_matches(&session, csrf) {
            return Err(forbidden("this form is out of date: reload the page and try again"));
        }
        Ok(session)
    }

    /// [`Console::posted`], by an admin of the whole gateway.
    fn posted_by_gateway_admin(
        &self,
        headers: &HeaderMap,
        csrf: &str,
    ) -> Result<Session, Response> {
        let session = self.posted(headers, csrf)?;
        if !session.admin || session.who.tenant.is_some() {
            return Err(refused_page(&session, "This is for admins of the whole gateway."));
        }
        Ok(session)
    }
}

fn forbidden(message: &str) -> Response {
    (
        StatusCode::FORBIDDEN,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        message.to_owned(),
    )
        .into_response()
}

fn refused_page(session: &Session, message: &str) -> Response {
    let body = html! { p role="alert" { (message) } };
    (StatusCode::FORBIDDEN, layout("Not allowed", Some(session), body)).into_response()
}

/// The frame of every page: navigation, who is logged in, and the content in `<main>`.
pub(crate) fn layout(title: &str, session: Option<&Session>, content: Markup) -> Html<String> {
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · toolgate console" }
                link rel="stylesheet" href="/console/static/console.css";
            }
            body {
                a class="skip" href="#main" { "Skip to content" }
                @if let Some(session) = session {
                    header {
                        nav aria-label="Console" {
                            ul {
                                @if session.admin && session.who.tenant.is_none() {
                                    li { a href="/console/servers" { "Servers" } }
                                }
                                li { a href="/console/approvals" { "Approvals" } }
                                @if session.admin && session.who.tenant.is_none() {
                                    li { a href="/console/pins" { "Pins" } }
                                    li { a href="/console/inventory" { "Inventory" } }
                                }
                                @if session.admin {
                                    li { a href="/console/sessions" { "Sessions" } }
                                    li { a href="/console/events" { "Events" } }
                                }
                                @if session.admin && session.who.tenant.is_none() {
                                    li { a href="/console/audit" { "Audit" } }
                                }
                            }
                        }
                        form class="logout" method="post" action="/console/logout" {
                            input type="hidden" name="csrf" value=(session.csrf);
                            span { "Signed in as " strong { (session.who.name) } }
                            " "
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                main id="main" {
                    h1 { (title) }
                    (content)
                }
            }
        }
    };
    Html(markup.into_string())
}

async fn login_page(State(console): State<Console>, headers: HeaderMap) -> Response {
    if console.session(&headers).is_ok() {
        return Redirect::to("/console/").into_response();
    }
    login_form(StatusCode::OK, None)
}

fn login_form(status: StatusCode, error: Option<&str>) -> Response {
    let body = html! {
        @if let Some(error) = error {
            p class="error" role="alert" id="login-error" { (error) }
        }
        form method="post" action="/console/login" {
            p {
                label for="token" { "Admin token or credential" }
                input id="token" name="token" type="password" required autocomplete="off"
                    aria-describedby=[error.map(|_| "login-error")];
            }
            button type="submit" { "Sign in" }
        }
        p class="hint" {
            "One of " code { "[admin] tokens" } ", or with " code { "[auth]" }
            " a credential of a principal in " code { "[auth.roles]" } "."
        }
    };
    (status, layout("Sign in", None, body)).into_response()
}

#[derive(Deserialize)]
struct LoginForm {
    token: String,
}

async fn login(
    State(console): State<Console>,
    headers: HeaderMap,
    Form(form): Form<LoginForm>,
) -> Response {
    if !session::same_origin(&headers) {
        return forbidden("this form was not sent from the console's own pages");
    }
    let Ok(bearer) = HeaderValue::from_str(&format!("Bearer {}", form.token.trim())) else {
        return login_form(StatusCode::UNAUTHORIZED, Some("That credential is not valid."));
    };
    let mut presented = HeaderMap::new();
    presented.insert(header::AUTHORIZATION, bearer);
    let (who, admin): (Operator, bool) =
        match authorised(&console.admin, &presented, Role::Admin).await {
            Ok(who) => (who, true),
            Err(_) => match authorised(&console.admin, &presented, Role::Approver).await {
                Ok(who) => (who, false),
                Err(_) => {
                    return login_form(
                        StatusCode::UNAUTHORIZED,
                        Some("That credential is not an admin's or an approver's."),
                    );
                }
            },
        };
    tracing::info!(target: "toolgate::console", who = %who.name, admin, "console login");
    let id = console.sessions.open(who, admin, Instant::now());
    let cookie = session::set_cookie(Some(&id), session::over_https(&headers));
    let next = if admin { "/console/servers" } else { "/console/approvals" };
    ([(header::SET_COOKIE, cookie)], Redirect::to(next)).into_response()
}

#[derive(Deserialize)]
pub(crate) struct CsrfForm {
    #[serde(default)]
    csrf: String,
}

async fn logout(
    State(console): State<Console>,
    headers: HeaderMap,
    Form(form): Form<CsrfForm>,
) -> Response {
    if let Err(refused) = console.posted(&headers, &form.csrf) {
        return refused;
    }
    if let Some(id) = session::cookie_id(&headers) {
        console.sessions.close(id);
    }
    let cookie = session::set_cookie(None, session::over_https(&headers));
    ([(header::SET_COOKIE, cookie)], Redirect::to("/console/login")).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_from_upstreams_renders_as_text() {
        let description = "Reads files. <script>alert(document.cookie)</script>";
        let name = "x\" onmouseover=\"alert(1)";
        let page = layout(
            "Inventory <b>",
            None,
            html! { td title=(name) { (description) } input value=(name); },
        )
        .0;
        assert!(!page.contains("<script>"), "{page}");
        assert!(page.contains("&lt;script&gt;alert(document.cookie)&lt;/script&gt;"), "{page}");
        assert!(page.contains("title=\"x&quot; onmouseover=&quot;alert(1)\""), "{page}");
        assert!(page.contains("<h1>Inventory &lt;b&gt;</h1>"), "{page}");
        assert!(page.contains("<main id=\"main\">"), "{page}");
    }

    #[tokio::test]
    async fn every_answer_carries_the_security_headers() {
        let response = secure_headers(Html("x").into_response()).await;
        let csp = response.headers()[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
        assert!(csp.starts_with("default-src 'self'; script-src 'self';"), "{csp}");
        assert!(!csp.contains("unsafe-inline"), "{csp}");
        assert_eq!(response.headers()[header::X_FRAME_OPTIONS], "DENY");
        assert_eq!(response.headers()[header::REFERRER_POLICY], "same-origin");
    }
}
