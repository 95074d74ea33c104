//! State shared by every session of one fixture server: what toolgate's tests change through
//! `toggle_tool` and `touch_resource`, and who hears about it.
//!
//! A [`Fixture`](crate::Fixture) serves one session, and on a 2026-07-28 streamable HTTP
//! connection one *request* (there are no sessions in that era), so anything that must be
//! visible across requests and sessions lives here instead, behind an `Arc`:
//!
//! - whether the extra tool `dynamic_tool` is listed (process-wide, like a real server whose
//!   catalog changed: every session sees the same list);
//! - the handshake-era sessions (their peer and `resources/subscribe` set), so a change
//!   reaches every one of them, not just the caller's;
//! - a broadcast channel that every open `subscriptions/listen` stream (2026-07-28) follows;
//! - the key that seals MRTR `requestState` (see [`crate::input`]);
//! - the last text `rich_echo` was given, which `resources/read` of `test://rich-echo` returns.
//!
//! Every transport makes one hub per server ([`serve_http`](crate::serve_http) and
//! [`serve_sse`](crate::serve_sse) share it between their sessions); [`Fixture::new`]
//! makes a private one, which is right for a single stdio session.
//!
//! [`Fixture::new`]: crate::Fixture::new

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model as mcp;
use rmcp::{Peer, RoleServer};
use tokio::sync::broadcast;

use crate::input::StateSeal;

/// Changes buffered per `subscriptions/listen` stream before it lags.
const EVENT_CAPACITY: usize = 256;

/// The state every session of one fixture server shares (cheap to clone: an `Arc`).
///
/// Pass the same hub to every [`Fixture::with_hub`](crate::Fixture::with_hub) of a server
/// that serves several sessions in process.
#[derive(Clone, Debug, Default)]
pub struct FixtureHub {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    dynamic_tool: AtomicBool,
    /// Whether the extra prompt `dynamic_prompt` is listed.
    dynamic_prompt: AtomicBool,
    /// The stage of `weather` (see `rug_pull`); [`UNSET`] until a fixture with
    /// `rug_pull` sets it.
    rug_pull_stage: AtomicU8,
    next_session: AtomicU64,
    /// Handshake-era sessions that finished their handshake or subscribed to something.
    sessions: Mutex<HashMap<u64, LegacySession>>,
    /// What open `subscriptions/listen` streams follow.
    events: broadcast::Sender<HubEvent>,
    seal: StateSeal,
    /// The last text `rich_echo` was given.
    rich_echo: Mutex<String>,
}

impl Default for Inner {
    fn default() -> Self {
        Self {
            dynamic_tool: AtomicBool::new(false),
            dynamic_prompt: AtomicBool::new(false),
            rug_pull_stage: AtomicU8::new(UNSET),
            next_session: AtomicU64::new(0),
            sessions: Mutex::default(),
            events: broadcast::channel(EVENT_CAPACITY).0,
            seal: StateSeal::new(),
            rich_echo: Mutex::default(),
        }
    }
}

/// One handshake-era session, as far as notifications go.
#[derive(Debug, Default)]
struct LegacySession {
    peer: Option<Peer<RoleServer>>,
    subscriptions: HashSet<String>,
}

/// A change that `subscriptions/listen` streams may have to report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum HubEvent {
    /// `notifications/tools/list_changed`.
    ToolsChanged,
    /// `notifications/prompts/list_changed`.
    PromptsChanged,
    /// `notifications/resources/updated` for this URI.
    ResourceUpdated(String),
}

/// `rug_pull_stage` before any fixture set it.
const UNSET: u8 = u8::MAX;

// === impl FixtureHub ===

impl FixtureHub {
    /// A hub with `dynamic_tool` hidden and nobody listening.
    pub fn new() -> Self {
        Self::default()
    }

    /// A fresh id for a [`Fixture`](crate::Fixture), the key of its session entry.
    pub(crate) fn next_session_id(&self) -> u64 {
        self.inner.next_session.fetch_add(1, Ordering::Relaxed)
    }

    /// Keeps the last text `rich_echo` was given.
    pub(crate) fn set_rich_echo(&self, text: String) {
        *self.inner.rich_echo.lock().unwrap_or_else(PoisonError::into_inner) = text;
    }

    /// The last text `rich_echo` was given (empty before the first call).
    pub(crate) fn rich_echo(&self) -> String {
        self.inner.rich_echo.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    pub(crate) fn seal(&self) -> &StateSeal {
        &self.inner.seal
    }

    pub(crate) fn dynamic_tool_enabled(&self) -> bool {
        self.inner.dynamic_tool.load(Ordering::SeqCst)
    }

    /// The stage of `weather`, starting at `initial` if no session set it before.
    pub(crate) fn rug_pull_stage(&self, initial: u8) -> u8 {
        let stage = &self.inner.rug_pull_stage;
        let _ = stage.compare_exchange(UNSET, initial, Ordering::SeqCst, Ordering::SeqCst);
        stage.load(Ordering::SeqCst)
    }

    /// Moves `weather` to `stage`, or to the next stage (wrapping to 0 after the last);
    /// returns the stage it is at now.
    pub(crate) fn set_rug_pull_stage(&self, stage: Option<u8>) -> u8 {
        let current = self.rug_pull_stage(0);
        let next =
            stage.unwrap_or(if current >= crate::rug_pull::LAST_STAGE { 0 } else { current + 1 });
        self.inner.rug_pull_stage.store(next, Ordering::SeqCst);
        next
    }

    /// Shows (`Some(true)`) or hides (`Some(false)`) `dynamic_tool`, or flips it (`None`).
    /// Returns whether it is now shown and whether that changed the tool list.
    pub(crate) fn set_dynamic_tool(&self, enabled: Option<bool>) -> (bool, bool) {
        let flag = &self.inner.dynamic_tool;
        match enabled {
            Some(enabled) => (enabled, flag.swap(enabled, Ordering::SeqCst) != enabled),
            None => (!flag.fetch_xor(true, Ordering::SeqCst), true),
        }
    }

    pub(crate) fn dynamic_prompt_enabled(&self) -> bool {
        self.inner.dynamic_prompt.load(Ordering::SeqCst)
    }

    /// Flips whether `dynamic_prompt` is listed; whether it is now.
    pub(crate) fn flip_dynamic_prompt(&self) -> bool {
        !self.inner.dynamic_prompt.fetch_xor(true, Ordering::SeqCst)
    }

    /// Tells every handshake-era session and every listen stream that the prompt list changed.
    pub(crate) async fn prompts_changed(&self) {
        let peers: Vec<_> = self.sessions().values().filter_map(|s| s.peer.clone()).collect();
        for peer in peers {
            if let Err(error) = peer.notify_prompt_list_changed().await {
                tracing::debug!(%error, "could not send prompts/list_changed to a session");
            }
        }
        let _ = self.inner.events.send(HubEvent::PromptsChanged);
    }

    /// Records that handshake-era session `id` talks through `peer`.
    pub(crate) fn register_peer(&self, id: u64, peer: &Peer<RoleServer>) {
        let mut sessions = self.sessions();
        let session = sessions.entry(id).or_default();
        if session.peer.is_none() {
            session.peer = Some(peer.clone());
        }
    }

    /// Forgets session `id` (its handler was dropped).
    pub(crate) fn remove_session(&self, id: u64) {
        self.sessions().remove(&id);
    }

    /// `resources/subscribe` from handshake-era session `id`.
    pub(crate) fn subscribe(&self, id: u64, peer: &Peer<RoleServer>, uri: String) {
        let mut sessions = self.sessions();
        let session = sessions.entry(id).or_default();
        session.peer.get_or_insert_with(|| peer.clone());
        session.subscriptions.insert(uri);
    }

    /// `resources/unsubscribe` from handshake-era session `id`.
    pub(crate) fn unsubscribe(&self, id: u64, uri: &str) {
        if let Some(session) = self.sessions().get_mut(&id) {
            session.subscriptions.remove(uri);
        }
    }

    pub(crate) fn is_subscribed(&self, id: u64, uri: &str) -> bool {
        self.sessions().get(&id).is_some_and(|session| session.subscriptions.contains(uri))
    }

    /// A receiver for every change from now on, for one `subscriptions/listen` stream.
    pub(crate) fn follow(&self) -> broadcast::Receiver<HubEvent> {
        self.inner.events.subscribe()
    }

    /// Tells every handshake-era session and every listen stream that the tool list changed.
    pub(crate) async fn tools_changed(&self) {
        let peers: Vec<_> = self.sessions().values().filter_map(|s| s.peer.clone()).collect();
        for peer in peers {
            if let Err(error) = peer.notify_tool_list_changed().await {
                tracing::debug!(%error, "could not send tools/list_changed to a session");
            }
        }
        // No receiver means no listen stream is open: nothing to do.
        let _ = self.inner.events.send(HubEvent::ToolsChanged);
    }

    /// Tells the handshake-era sessions subscribed to `uri`, and every listen stream (each
    /// checks its own filter), that the resource changed.
    /// Tells the sessions subscribed to `uri`; returns how many handshake-era sessions that
    /// was (listen streams are not counted).
    pub(crate) async fn resource_updated(&self, uri: &str) -> usize {
        let peers: Vec<_> = self
            .sessions()
            .values()
            .filter(|session| session.subscriptions.contains(uri))
            .filter_map(|session| session.peer.clone())
            .collect();
        let subscribed = peers.len();
        for peer in peers {
            let param = mcp::ResourceUpdatedNotificationParam::new(uri);
            if let Err(error) = peer.notify_resource_updated(param).await {
                tracing::debug!(%error, uri, "could not send resources/updated to a session");
            }
        }
        let _ = self.inner.events.send(HubEvent::ResourceUpdated(uri.to_owned()));
        subscribed
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<u64, LegacySession>> {
        self.inner.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
