//! Downstream sessions: who is connected, at what log level, subscribed to which resources.
//! Notifications fan out from here. What operators may see of them is in `view`.

#![allow(deprecated)] // logging is deprecated in 2026-07-28 (SEP-2577) but still spoken

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use toolgate_core::log_level::severity;
use toolgate_core::mcp;

use crate::error::GatewayError;
use crate::link::{Closed, Listener, Notify};

mod view;

pub use view::{OpenedBy, SHORT_ID, SessionView, SessionsSnapshot};

/// The most resources one session (or one `subscriptions/listen` stream) may follow by
/// default (`[gateway] max_subscriptions`): far more than a person's client follows, and few
/// enough that no client can make the gateway hold an unbounded set for it.
pub const MOST_SUBSCRIPTIONS: usize = 1_000;

/// The most bytes the URIs of those resources may take in all, by default (`[gateway]
/// max_subscription_bytes`): a URI can be as long as a request body, so counting them is not
/// enough.
pub const MOST_SUBSCRIBED_BYTES: usize = 64 * 1024;

/// How much one session or `subscriptions/listen` stream may follow (`[gateway]
/// max_subscriptions` and `max_subscription_bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubscriptionBounds {
    /// Resources.
    pub most: usize,
    /// Bytes of their URIs, in all.
    pub most_bytes: usize,
}

impl Default for SubscriptionBounds {
    fn default() -> Self {
        SubscriptionBounds { most: MOST_SUBSCRIPTIONS, most_bytes: MOST_SUBSCRIBED_BYTES }
    }
}

impl SubscriptionBounds {
    /// Whether `count` resources whose URIs take `bytes` in all may be followed.
    pub(crate) fn check(self, count: usize, bytes: usize) -> Result<(), GatewayError> {
        if count > self.most {
            return Err(GatewayError::TooManySubscriptions { most: self.most });
        }
        if bytes > self.most_bytes {
            return Err(GatewayError::SubscriptionsTooLong { most_bytes: self.most_bytes });
        }
        Ok(())
    }
}

/// One downstream session of the handshake era (stdio, or HTTP with `Mcp-Session-Id`).
#[derive(Debug)]
pub struct Session {
    /// Where its notifications go.
    link: Arc<dyn Notify>,
    state: Mutex<SessionState>,
    /// Who opened it, over what, when.
    opened_by: Arc<OpenedBy>,
    /// When a request of it was last served, in milliseconds after it was opened.
    last_active: AtomicU64,
}

#[derive(Debug, Default)]
struct SessionState {
    log_level: Option<mcp::LoggingLevel>,
    /// The resources followed, each with whether an upstream was subscribed for it (only for
    /// a resource an upstream offers).
    subscriptions: HashMap<String, bool>,
    /// The bytes of the URIs in `subscriptions`.
    subscribed_bytes: usize,
}

impl Session {
    /// A session whose notifications go to `link`, as its front describes it.
    pub fn new(link: Arc<dyn Notify>, opened_by: OpenedBy) -> Self {
        Session {
            link,
            state: Mutex::default(),
            opened_by: Arc::new(opened_by),
            last_active: AtomicU64::new(0),
        }
    }

    fn notify(&self, notification: mcp::ServerNotification) -> impl Future<Output = ()> + use<> {
        self.link.notify(notification)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, SessionState> {
        self.state.lock().expect("session lock must not be poisoned")
    }

    pub(crate) fn set_log_level(&self, level: mcp::LoggingLevel) {
        self.state().log_level = Some(level);
    }

    pub(crate) fn log_level(&self) -> Option<mcp::LoggingLevel> {
        self.state().log_level
    }

    /// Whether a message at `level` about one of this session's own calls passes its
    /// `logging/setLevel` (a session that never set a level gets them all).
    pub(crate) fn wants_log(&self, level: mcp::LoggingLevel) -> bool {
        self.state().log_level.is_none_or(|min| severity(level) >= severity(min))
    }

    /// Whether a message at `level` about none of this session's calls goes to it: only when
    /// it asked for logs with `logging/setLevel`, at that level or a more verbose one.
    fn asked_for_log(&self, level: mcp::LoggingLevel) -> bool {
        self.state().log_level.is_some_and(|min| severity(level) >= severity(min))
    }

    /// Records a subscription (`upstream`: an upstream is subscribed for it); `true` when it
    /// is new. Refused past `bounds`.
    pub(crate) fn subscribe(
        &self,
        uri: &str,
        bounds: SubscriptionBounds,
        upstream: bool,
    ) -> Result<bool, GatewayError> {
        let mut state = self.state();
        if state.subscriptions.contains_key(uri) {
            return Ok(false);
        }
        let bytes = state.subscribed_bytes + uri.len();
        bounds.check(state.subscriptions.len() + 1, bytes)?;
        state.subscribed_bytes = bytes;
        state.subscriptions.insert(uri.to_owned(), upstream);
        Ok(true)
    }

    /// Drops a subscription: `None` when there was none, else whether an upstream was
    /// subscribed for it.
    pub(crate) fn unsubscribe(&self, uri: &str) -> Option<bool> {
        let mut state = self.state();
        let removed = state.subscriptions.remove(uri);
        if removed.is_some() {
            state.subscribed_bytes -= uri.len();
        }
        removed
    }

    fn is_subscribed(&self, uri: &str) -> bool {
        self.state().subscriptions.contains_key(uri)
    }

    fn is_closed(&self) -> bool {
        self.link.is_closed()
    }
}

/// Which lists changed, for `*/list_changed`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Changed {
    /// `tools/list`.
    pub tools: bool,
    /// `prompts/list`.
    pub prompts: bool,
    /// `resources/list` (or the resource templates).
    pub resources: bool,
}

impl Changed {
    /// Whether any list changed.
    pub fn any(self) -> bool {
        self.tools || self.prompts || self.resources
    }

    /// The `*/list_changed` notifications that say so.
    fn notifications(self) -> Vec<mcp::ServerNotification> {
        let mut notifications = Vec::new();
        if self.tools {
            notifications.push(mcp::ServerNotification::ToolListChangedNotification(
                mcp::ToolListChangedNotification::default(),
            ));
        }
        if self.prompts {
            notifications.push(mcp::ServerNotification::PromptListChangedNotification(
                mcp::PromptListChangedNotification::default(),
            ));
        }
        if self.resources {
            notifications.push(mcp::ServerNotification::ResourceListChangedNotification(
                mcp::ResourceListChangedNotification::default(),
            ));
        }
        notifications
    }
}

/// A `subscriptions/listen` stream, and who opened it.
#[derive(Debug)]
struct Registered {
    listener: Arc<dyn Listener>,
    opened_by: Arc<OpenedBy>,
}

/// Every live session, and the `subscriptions/listen` streams of 2026-07-28 clients.
#[derive(Debug, Default)]
pub struct Sessions {
    sessions: Mutex<Vec<Arc<Session>>>,
    listeners: Mutex<Vec<Registered>>,
    /// Subscriptions of sessions that closed, for the gateway to release.
    released: Mutex<Vec<String>>,
}

impl Sessions {
    pub fn add(&self, session: Arc<Session>) {
        self.live().push(session);
    }

    fn live(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Session>>> {
        let mut sessions = self.sessions.lock().expect("sessions lock must not be poisoned");
        let mut released = Vec::new();
        sessions.retain(|s| {
            let closed = s.is_closed();
            if closed {
                let mut state = s.state();
                state.subscribed_bytes = 0;
                let followed = state.subscriptions.drain().filter(|(_, upstream)| *upstream);
                released.extend(followed.map(|(uri, _)| uri));
            }
            !closed
        });
        if !released.is_empty() {
            self.released.lock().expect("released lock must not be poisoned").extend(released);
        }
        sessions
    }

    /// The subscriptions of sessions found closed since the last call (those an upstream was
    /// subscribed for).
    pub(crate) fn take_released(&self) -> Vec<String> {
        drop(self.live());
        std::mem::take(&mut *self.released.lock().expect("released lock must not be poisoned"))
    }

    /// Adds a `subscriptions/listen` stream, as its front describes it; it is dropped when a
    /// send finds it closed.
    pub fn add_listener(&self, listener: Arc<dyn Listener>, opened_by: OpenedBy) {
        let registered = Registered { listener, opened_by: Arc::new(opened_by) };
        self.listeners.lock().expect("listeners lock must not be poisoned").push(registered);
    }

    /// Forgets a `subscriptions/listen` stream (it has ended).
    pub fn remove_listener(&self, listener: &Arc<dyn Listener>) {
        self.drop_closed_listeners(std::slice::from_ref(listener));
    }

    fn listeners(&self) -> Vec<Arc<dyn Listener>> {
        let listeners = self.listeners.lock().expect("listeners lock must not be poisoned");
        listeners.iter().map(|registered| registered.listener.clone()).collect()
    }

    /// Forgets `closed` (compared by identity: two clients' streams may have the same request
    /// id).
    fn drop_closed_listeners(&self, closed: &[Arc<dyn Listener>]) {
        if !closed.is_empty() {
            let mut listeners = self.listeners.lock().expect("listeners lock must not be poisoned");
            listeners.retain(|l| !closed.iter().any(|c| Arc::ptr_eq(c, &l.listener)));
        }
    }

    /// How many sessions are live.
    pub fn count(&self) -> usize {
        self.live().len()
    }

    /// How many `subscriptions/listen` streams are open.
    pub fn listener_count(&self) -> usize {
        self.listeners.lock().expect("listeners lock must not be poisoned").len()
    }

    /// A snapshot of the live sessions.
    pub(crate) fn all(&self) -> Vec<Arc<Session>> {
        self.live().clone()
    }

    /// The most verbose level any session asked for; `None` when none asked.
    pub(crate) fn most_verbose_level(&self) -> Option<mcp::LoggingLevel> {
        self.all().iter().filter_map(|s| s.log_level()).min_by_key(|l| severity(*l))
    }

    /// Sends the `list_changed` notifications for `changed` to every session and every
    /// `subscriptions/listen` stream.
    pub(crate) async fn notify_changed(&self, changed: Changed) {
        let notifications = changed.notifications();
        for session in self.all() {
            for notification in &notifications {
                session.notify(notification.clone()).await;
            }
        }
        self.offer_listeners(&notifications).await;
    }

    /// `notifications/resources/updated` to the sessions subscribed to `uri` and the listen
    /// streams that follow it.
    pub(crate) async fn notify_updated(&self, uri: &str) {
        let updated = mcp::ServerNotification::ResourceUpdatedNotification(
            mcp::ResourceUpdatedNotification::new(mcp::ResourceUpdatedNotificationParam::new(uri)),
        );
        for session in self.all().iter().filter(|s| s.is_subscribed(uri)) {
            session.notify(updated.clone()).await;
        }
        // Each stream sends only what its filter accepted.
        self.offer_listeners(std::slice::from_ref(&updated)).await;
    }

    /// Offers `notifications` to every listen stream, forgetting those found closed.
    async fn offer_listeners(&self, notifications: &[mcp::ServerNotification]) {
        let mut closed = Vec::new();
        for listener in self.listeners() {
            for notification in notifications {
                if listener.offer(notification.clone()).await == Err(Closed) {
                    closed.push(listener.clone());
                    break;
                }
            }
        }
        self.drop_closed_listeners(&closed);
    }

    /// An upstream's log message about none of the sessions' calls (its logger prefixed with
    /// the upstream's name by the upstream layer) to every session that asked for logs at its
    /// level.
    pub(crate) async fn notify_log(&self, params: mcp::LoggingMessageNotificationParam) {
        let message = mcp::ServerNotification::LoggingMessageNotification(
            mcp::LoggingMessageNotification::new(params.clone()),
        );
        for session in self.all().iter().filter(|s| s.asked_for_log(params.level)) {
            session.notify(message.clone()).await;
        }
    }
}
