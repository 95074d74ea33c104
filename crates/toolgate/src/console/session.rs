//! The console's sessions: a random id in a cookie names who logged in, in memory only.
//!
//! The store is bounded: when it is full, the session closest to expiry gives way to a new
//! one. A session lasts [`SESSION_TTL`] from login, and carries its own token that every form
//! posts back ([`Session::csrf`]); together with `SameSite=Strict` and the `Origin` check
//! ([`same_origin`]) that keeps other sites from posting in the operator's name.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use axum::http::{HeaderMap, header};
use base64::Engine as _;
use tokio::time::Instant;

use crate::admin::Operator;

/// The cookie that carries the session id.
pub(crate) const COOKIE: &str = "toolgate_console";

/// How long a session lasts from login.
pub(crate) const SESSION_TTL: Duration = Duration::from_secs(12 * 60 * 60);

/// How many sessions are kept at most.
pub(crate) const MAX_SESSIONS: usize = 256;

/// One logged-in person.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    /// Who they are, as the admin API names them.
    pub(crate) who: Operator,
    /// Whether they may do what an admin may (else only approve).
    pub(crate) admin: bool,
    /// The token every form of this session posts back.
    pub(crate) csrf: String,
    expires: Instant,
}

/// The sessions, by id.
#[derive(Debug)]
pub(crate) struct Sessions {
    open: Mutex<HashMap<String, Session>>,
    capacity: usize,
    ttl: Duration,
}

impl Sessions {
    pub(crate) fn new(capacity: usize, ttl: Duration) -> Sessions {
        Sessions { open: Mutex::default(), capacity: capacity.max(1), ttl }
    }

    /// Opens a session for `who` at `now`: its id, for the cookie.
    pub(crate) fn open(&self, who: Operator, admin: bool, now: Instant) -> String {
        let id = random_token();
        let session = Session { who, admin, csrf: random_token(), expires: now + self.ttl };
        let mut open = self.open.lock().expect("sessions lock");
        open.retain(|_, s| s.expires > now);
        while open.len() >= self.capacity {
            let Some(first) = open.iter().min_by_key(|(_, s)| s.expires).map(|(id, _)| id.clone())
            else {
                break;
            };
            open.remove(&first);
        }
        open.insert(id.clone(), session);
        id
    }

    /// The session `id` names, if it is open and has not expired at `now`.
    pub(crate) fn get(&self, id: &str, now: Instant) -> Option<Session> {
        let mut open = self.open.lock().expect("sessions lock");
        match open.get(id) {
            Some(session) if session.expires > now => Some(session.clone()),
            Some(_) => {
                open.remove(id);
                None
            }
            None => None,
        }
    }

    /// Ends the session `id`.
    pub(crate) fn close(&self, id: &str) {
        self.open.lock().expect("sessions lock").remove(id);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.open.lock().expect("sessions lock").len()
    }
}

/// 32 random bytes, URL-safe base64.
fn random_token() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the system's random numbers");
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The session id in the request's cookie, if any.
pub(crate) fn cookie_id(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value)
}

/// Whether the request came over https (to the listener, or to a proxy in front that says so).
pub(crate) fn over_https(headers: &HeaderMap) -> bool {
    let forwarded = headers.get("x-forwarded-proto").and_then(|v| v.to_str().ok());
    let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
    forwarded.is_some_and(|p| p.eq_ignore_ascii_case("https"))
        || origin.is_some_and(|o| o.starts_with("https://"))
}

/// The `Set-Cookie` value that opens session `id` (or, with `None`, clears it).
pub(crate) fn set_cookie(id: Option<&str>, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    match id {
        Some(id) => format!(
            "{COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/console; Max-Age={}{secure}",
            SESSION_TTL.as_secs()
        ),
        None => format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/console; Max-Age=0{secure}"),
    }
}

/// Whether a POST comes from a page of this console: its `Origin` (else its `Referer`) must be
/// this host's. A request with neither is refused: browsers send `Origin` on every POST.
pub(crate) fn same_origin(headers: &HeaderMap) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let ours = |origin: &str| {
        origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"))
            .is_some_and(|rest| rest.eq_ignore_ascii_case(host))
    };
    if let Some(origin) = headers.get(header::ORIGIN) {
        return origin.to_str().is_ok_and(ours);
    }
    headers.get(header::REFERER).and_then(|v| v.to_str().ok()).is_some_and(|referer| {
        let origin_end = referer
            .find("://")
            .map(|scheme| {
                referer[scheme + 3..].find('/').map_or(referer.len(), |path| scheme + 3 + path)
            })
            .unwrap_or(0);
        ours(&referer[..origin_end])
    })
}

/// Whether `presented` is `session`'s form token; compared in full whatever its length.
pub(crate) fn csrf_matches(session: &Session, presented: &str) -> bool {
    let (a, b) = (session.csrf.as_bytes(), presented.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who(name: &str) -> Operator {
        Operator { name: name.to_owned(), tenant: None }
    }

    #[test]
    fn a_full_store_drops_the_session_closest_to_expiry() {
        let sessions = Sessions::new(2, Duration::from_secs(60));
        let start = Instant::now();
        let first = sessions.open(who("a"), true, start);
        let second = sessions.open(who("b"), true, start + Duration::from_secs(1));
        let third = sessions.open(who("c"), false, start + Duration::from_secs(2));
        assert_eq!(sessions.len(), 2);
        let now = start + Duration::from_secs(3);
        assert!(sessions.get(&first, now).is_none(), "the oldest gave way");
        assert_eq!(sessions.get(&second, now).expect("open").who.name, "b");
        assert_eq!(sessions.get(&third, now).expect("open").who.name, "c");
        assert_ne!(second, third);
    }

    #[test]
    fn sessions_expire_and_close() {
        let sessions = Sessions::new(8, Duration::from_secs(60));
        let start = Instant::now();
        let id = sessions.open(who("a"), true, start);
        assert!(sessions.get(&id, start + Duration::from_secs(59)).is_some());
        assert!(sessions.get(&id, start + Duration::from_secs(60)).is_none());
        assert_eq!(sessions.len(), 0, "an expired session is dropped when seen");
        let id = sessions.open(who("a"), true, start);
        sessions.close(&id);
        assert!(sessions.get(&id, start).is_none());
        assert!(sessions.get("made-up", start).is_none());
    }

    #[test]
    fn expired_sessions_do_not_take_room() {
        let sessions = Sessions::new(2, Duration::from_secs(10));
        let start = Instant::now();
        let _ = sessions.open(who("a"), true, start);
        let _ = sessions.open(who("b"), true, start);
        let later = start + Duration::from_secs(11);
        let c = sessions.open(who("c"), true, later);
        assert_eq!(sessions.len(), 1);
        assert!(sessions.get(&c, later).is_some());
    }

    #[test]
    fn ids_and_form_tokens_are_long_and_distinct() {
        let sessions = Sessions::new(8, Duration::from_secs(60));
        let now = Instant::now();
        let id = sessions.open(who("a"), true, now);
        let session = sessions.get(&id, now).expect("open");
        assert_eq!(id.len(), 43);
        assert_ne!(id, session.csrf);
        assert!(csrf_matches(&session, &session.csrf.clone()));
        assert!(!csrf_matches(&session, ""));
        assert!(!csrf_matches(&session, &id));
    }

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(name.clone(), value.parse().expect("header value"));
        }
        map
    }

    #[test]
    fn posts_must_come_from_this_origin() {
        let host = (header::HOST, "127.0.0.1:9000");
        assert!(same_origin(&headers(&[host.clone(), (header::ORIGIN, "http://127.0.0.1:9000")])));
        assert!(same_origin(&headers(&[host.clone(), (header::ORIGIN, "https://127.0.0.1:9000")])));
        assert!(!same_origin(&headers(&[host.clone(), (header::ORIGIN, "http://evil.test")])));
        assert!(!same_origin(&headers(&[
            host.clone(),
            (header::ORIGIN, "http://127.0.0.1:9000.evil.test")
        ])));
        assert!(!same_origin(&headers(&[host.clone(), (header::ORIGIN, "null")])));
        assert!(same_origin(&headers(&[
            host.clone(),
            (header::REFERER, "http://127.0.0.1:9000/console/approvals")
        ])));
        assert!(!same_origin(&headers(&[
            host.clone(),
            (header::REFERER, "http://evil.test/127.0.0.1:9000")
        ])));
        assert!(!same_origin(&headers(std::slice::from_ref(&host))), "neither header: refused");
        assert!(!same_origin(&headers(&[(header::ORIGIN, "http://127.0.0.1:9000")])));
    }

    #[test]
    fn the_cookie_is_read_and_set_strictly() {
        let map = headers(&[(header::COOKIE, "a=b; toolgate_console=xyz; c=d")]);
        assert_eq!(cookie_id(&map), Some("xyz"));
        assert_eq!(cookie_id(&headers(&[(header::COOKIE, "other=1")])), None);
        let set = set_cookie(Some("xyz"), false);
        assert!(set.contains("HttpOnly; SameSite=Strict; Path=/console"), "{set}");
        assert!(!set.contains("Secure"), "{set}");
        assert!(set_cookie(Some("xyz"), true).ends_with("; Secure"));
        assert!(set_cookie(None, false).contains("Max-Age=0"));
        assert!(over_https(&headers(&[("x-forwarded-proto".parse().unwrap(), "https")])));
        assert!(!over_https(&headers(&[(header::ORIGIN, "http://127.0.0.1:1")])));
    }
}
