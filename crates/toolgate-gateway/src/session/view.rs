//! What the people who run the gateway may see of its sessions and `subscriptions/listen`
//! streams (the console's sessions page): who opened each, over what, in which protocol
//! version, when, and when a session was last used. A read-only snapshot of what exists, so
//! no larger than the fronts' own bounds on sessions and streams.
//!
//! A session's id is kept only shortened: enough to tell sessions apart and find one in the
//! logs, not to use it.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;
use toolgate_core::mcp;
use toolgate_intercept::Principal;

use super::{Session, Sessions};

/// How many characters of a session's id are kept.
pub const SHORT_ID: usize = 8;

/// What a front says about a session or listen stream it opened.
#[derive(Debug, Clone)]
pub struct OpenedBy {
    /// The session's id, shortened to [`SHORT_ID`] characters; `None` where there is none (a
    /// stdio session, a listen stream).
    pub short_id: Option<String>,
    /// Who opened it.
    pub principal: Principal,
    /// The front's transport: `stdio` or `streamable-http`.
    pub transport: &'static str,
    /// The protocol version it speaks, when known.
    pub version: Option<mcp::ProtocolVersion>,
    /// When it was opened.
    pub at: Instant,
}

impl OpenedBy {
    /// Opened now by `principal` over `transport`, speaking `version`; `id` is shortened here.
    pub fn now(
        id: Option<&str>,
        principal: Principal,
        transport: &'static str,
        version: Option<mcp::ProtocolVersion>,
    ) -> OpenedBy {
        OpenedBy {
            short_id: id.map(|id| id.chars().take(SHORT_ID).collect()),
            principal,
            transport,
            version,
            at: Instant::now(),
        }
    }
}

/// One session or listen stream, as seen at the snapshot.
#[derive(Debug, Clone)]
pub struct SessionView {
    pub opened_by: Arc<OpenedBy>,
    /// Time since it was opened.
    pub age: Duration,
    /// Time since a request of it was last served (sessions only).
    pub idle: Option<Duration>,
    /// Resources it follows (sessions only).
    pub subscriptions: usize,
}

/// Every live session and listen stream, newest first.
#[derive(Debug, Clone, Default)]
pub struct SessionsSnapshot {
    pub sessions: Vec<SessionView>,
    pub streams: Vec<SessionView>,
}

impl Session {
    /// A request of it is being served now.
    pub fn touch(&self) {
        let since = self.opened_by.at.elapsed().as_millis();
        self.last_active.fetch_max(u64::try_from(since).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// Who opened it, over what.
    pub fn opened_by(&self) -> &Arc<OpenedBy> {
        &self.opened_by
    }

    fn view(&self, now: Instant) -> SessionView {
        let age = now.saturating_duration_since(self.opened_by.at);
        let active = Duration::from_millis(self.last_active.load(Ordering::Relaxed));
        SessionView {
            opened_by: self.opened_by.clone(),
            age,
            idle: Some(age.saturating_sub(active)),
            subscriptions: self.state().subscriptions.len(),
        }
    }
}

impl Sessions {
    /// The live sessions and listen streams now.
    pub fn snapshot(&self) -> SessionsSnapshot {
        let now = Instant::now();
        let mut sessions: Vec<SessionView> = self.all().iter().map(|s| s.view(now)).collect();
        let mut streams: Vec<SessionView> = self
            .listeners
            .lock()
            .expect("listeners lock must not be poisoned")
            .iter()
            .map(|registered| SessionView {
                opened_by: registered.opened_by.clone(),
                age: now.saturating_duration_since(registered.opened_by.at),
                idle: None,
                subscriptions: 0,
            })
            .collect();
        sessions.sort_by_key(|view| view.age);
        streams.sort_by_key(|view| view.age);
        SessionsSnapshot { sessions, streams }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::{Closed, Listener, Notify};
    use futures::future::BoxFuture;

    #[derive(Debug)]
    struct Open;

    impl Notify for Open {
        fn notify(&self, _: mcp::ServerNotification) -> BoxFuture<'static, ()> {
            Box::pin(async {})
        }

        fn is_closed(&self) -> bool {
            false
        }
    }

    impl Listener for Open {
        fn offer(&self, _: mcp::ServerNotification) -> BoxFuture<'static, Result<(), Closed>> {
            Box::pin(async { Ok(()) })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_snapshot_shows_who_opened_what_when_and_never_a_whole_id() {
        let sessions = Sessions::default();
        let id = "0123456789abcdef0123456789abcdef";
        let alice = Principal::new("key", "alice").with_tenant(Some("acme".into()));
        let opened_by = OpenedBy::now(
            Some(id),
            alice.clone(),
            "streamable-http",
            Some(mcp::ProtocolVersion::V_2025_11_25),
        );
        let session = Arc::new(Session::new(Arc::new(Open), opened_by));
        sessions.add(session.clone());
        tokio::time::advance(Duration::from_secs(10)).await;
        session.touch();
        tokio::time::advance(Duration::from_secs(5)).await;
        let stream: Arc<dyn Listener> = Arc::new(Open);
        sessions.add_listener(stream.clone(), OpenedBy::now(None, alice, "stdio", None));
        tokio::time::advance(Duration::from_secs(1)).await;

        let snapshot = sessions.snapshot();
        assert_eq!(snapshot.sessions.len(), 1);
        let seen = &snapshot.sessions[0];
        assert_eq!(seen.opened_by.short_id.as_deref(), Some("01234567"));
        assert_eq!(seen.opened_by.principal.to_string(), "key:alice@acme");
        assert_eq!(seen.age, Duration::from_secs(16));
        assert_eq!(seen.idle, Some(Duration::from_secs(6)));
        assert!(!format!("{snapshot:?}").contains(id), "the whole id is nowhere");
        assert_eq!(snapshot.streams.len(), 1);
        assert_eq!(snapshot.streams[0].age, Duration::from_secs(1));
        assert_eq!(snapshot.streams[0].opened_by.transport, "stdio");

        sessions.remove_listener(&stream);
        assert!(sessions.snapshot().streams.is_empty(), "a stream that ended is gone");
    }
}
