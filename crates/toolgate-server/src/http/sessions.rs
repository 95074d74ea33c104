//! The HTTP front's open sessions, bounded: at most so many at once, at most so many per client
//! (`client`: loopback is one client, IPv6 counts by /64), and each closed after a while
//! without use, so that clients that open sessions and never close them cannot make the
//! gateway hold ever more. When a bound is reached, a new session takes the place of an idle
//! one (nothing running, no stream read) before anyone is refused: per client, that client's
//! least recently used; over the gateway, the least recently used of the client that holds
//! the most, so that whoever fills the table pays for it first.

#![allow(deprecated)] // the handshake's types are legacy in 2026-07-28 but still spoken

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::time::Instant;

use toolgate_core::mcp;
use toolgate_intercept::Principal;

use super::client::ClientKey;
use super::session::{HttpSession, millis_since};

/// How many HTTP sessions may be open at once by default: more than a team's clients open,
/// and (at well under a KiB each when idle) little memory.
pub const DEFAULT_MAX_SESSIONS: usize = 1_000;

/// How many of them one client address may hold by default.
pub const DEFAULT_MAX_SESSIONS_PER_CLIENT: usize = 200;

/// How long an HTTP session may go without use before it is closed.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(300);

/// The bounds on sessions.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    pub(crate) most: usize,
    pub(crate) most_per_client: usize,
    pub(crate) idle: Duration,
    /// Events that may wait for the reader of each of a session's streams.
    pub(crate) queue: usize,
}

/// Why a session was not opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Full {
    /// The gateway holds as many as it may.
    Gateway(usize),
    /// This client holds as many as one may.
    Client(usize),
}

impl std::fmt::Display for Full {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Full::Gateway(most) => write!(
                f,
                "this gateway already has {most} open sessions, the most it keeps, and none of \
                 them is idle; try again when one has closed"
            ),
            Full::Client(most) => write!(
                f,
                "this client already has {most} open sessions, the most one client may hold, \
                 and none of them is idle; close one (DELETE) before opening another"
            ),
        }
    }
}

/// Every open session.
#[derive(Debug)]
pub(crate) struct HttpSessions {
    table: RwLock<Table>,
    bounds: Bounds,
    /// The clock sessions record their last use on.
    epoch: Instant,
}

#[derive(Debug, Default)]
struct Table {
    by_id: HashMap<Arc<str>, Arc<HttpSession>>,
    per_client: HashMap<ClientKey, usize>,
}

impl Table {
    fn held_by(&self, client: &ClientKey) -> usize {
        self.per_client.get(client).copied().unwrap_or(0)
    }

    /// The session to close to make room: an idle one of `client` (any client for `None`),
    /// of the client that holds the most, the least recently used first.
    fn to_displace(&self, client: Option<ClientKey>) -> Option<Arc<str>> {
        self.by_id
            .iter()
            .filter(|(_, session)| session.is_idle())
            .filter(|(_, session)| client.as_ref().is_none_or(|c| session.client == *c))
            .max_by_key(|(_, session)| {
                let held = self.held_by(&session.client);
                (held, std::cmp::Reverse(session.last_used()))
            })
            .map(|(id, _)| id.clone())
    }

    fn remove(&mut self, id: &str) -> Option<Arc<HttpSession>> {
        let removed = self.by_id.remove(id)?;
        forget_client(&mut self.per_client, removed.client.clone());
        Some(removed)
    }
}

impl HttpSessions {
    pub(crate) fn new(bounds: Bounds) -> HttpSessions {
        HttpSessions { table: RwLock::default(), bounds, epoch: Instant::now() }
    }

    fn now(&self) -> u64 {
        millis_since(self.epoch)
    }

    /// Opens a session for `owner`, counted against `client`, which asked `initialize` with
    /// `params` and was given `version`, in the place of an idle one when a bound is reached.
    pub(crate) fn open(
        &self,
        owner: Principal,
        client: ClientKey,
        params: &mcp::InitializeRequestParams,
        version: mcp::ProtocolVersion,
    ) -> Result<Arc<HttpSession>, Full> {
        let id: Arc<str> = uuid::Uuid::new_v4().simple().to_string().into();
        let key = client.clone();
        let session = Arc::new(HttpSession::new(
            id.clone(),
            owner,
            client,
            params,
            version,
            self.now(),
            self.bounds.queue,
        ));
        let mut displaced = Vec::new();
        {
            let mut table = self.table.write().expect("sessions lock must not be poisoned");
            if table.held_by(&key) >= self.bounds.most_per_client {
                let idle = table.to_displace(Some(key.clone()));
                let room = idle.and_then(|id| table.remove(&id));
                displaced.push(room.ok_or(Full::Client(self.bounds.most_per_client))?);
            }
            if table.by_id.len() >= self.bounds.most {
                let idle = table.to_displace(None);
                let room = idle.and_then(|id| table.remove(&id));
                match room {
                    Some(room) => displaced.push(room),
                    None => {
                        // Put back what was taken for this client's place: nothing changed.
                        for session in displaced {
                            *table.per_client.entry(session.client.clone()).or_default() += 1;
                            table.by_id.insert(session.id.clone(), session);
                        }
                        return Err(Full::Gateway(self.bounds.most));
                    }
                }
            }
            *table.per_client.entry(key).or_default() += 1;
            table.by_id.insert(id, session.clone());
        }
        for old in displaced {
            tracing::debug!(session = %old.id, client = %old.client, "an idle session made room for a new one");
            old.close();
        }
        Ok(session)
    }

    /// The open session `id` when `caller` opened it, marked as used now. Another
    /// principal's session is not there for `caller`, as if it did not exist.
    pub(crate) fn get(&self, id: &str, caller: &Principal) -> Option<Arc<HttpSession>> {
        let session = self
            .table
            .read()
            .expect("sessions lock must not be poisoned")
            .by_id
            .get(id)
            .filter(|session| session.owner == *caller)
            .cloned()?;
        session.touch(self.now());
        Some(session)
    }

    /// Closes session `id` when `caller` opened it; `false` when it was not open (or not
    /// `caller`'s).
    pub(crate) fn close(&self, id: &str, caller: &Principal) -> bool {
        let removed = {
            let mut table = self.table.write().expect("sessions lock must not be poisoned");
            match table.by_id.get(id) {
                Some(session) if session.owner == *caller => table.remove(id),
                _ => None,
            }
        };
        match removed {
            Some(session) => {
                session.close();
                true
            }
            None => false,
        }
    }

    /// Closes the sessions unused for longer than the idle time; how many.
    pub(crate) fn close_idle(&self) -> usize {
        let idle = u64::try_from(self.bounds.idle.as_millis()).unwrap_or(u64::MAX);
        self.close_unused_before(self.now().saturating_sub(idle))
    }

    /// Closes the sessions not busy and last used before `before` (milliseconds after the
    /// epoch); how many.
    fn close_unused_before(&self, before: u64) -> usize {
        let closed: Vec<Arc<HttpSession>> = {
            let mut table = self.table.write().expect("sessions lock must not be poisoned");
            let ids: Vec<Arc<str>> = table
                .by_id
                .iter()
                .filter(|(_, session)| session.idle_since(before))
                .map(|(id, _)| id.clone())
                .collect();
            let mut closed = Vec::with_capacity(ids.len());
            for id in ids {
                if let Some(session) = table.remove(&id) {
                    closed.push(session);
                }
            }
            closed
        };
        for session in &closed {
            tracing::debug!(session = %session.id, "closing an idle session");
            session.close();
        }
        closed.len()
    }

    /// Closes every session (shutdown).
    pub(crate) fn close_all(&self) {
        let table =
            std::mem::take(&mut *self.table.write().expect("sessions lock must not be poisoned"));
        for session in table.by_id.values() {
            session.close();
        }
    }

    /// How many are open.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.table.read().expect("sessions lock must not be poisoned").by_id.len()
    }

    /// How often idle sessions are looked for: often enough that one is closed at most a
    /// quarter of the idle time late, and not more than twice a second.
    pub(crate) fn sweep_every(&self) -> Duration {
        (self.bounds.idle / 4).clamp(Duration::from_millis(500), Duration::from_secs(30))
    }
}

fn forget_client(per_client: &mut HashMap<ClientKey, usize>, client: ClientKey) {
    if let Some(held) = per_client.get_mut(&client) {
        *held -= 1;
        if *held == 0 {
            per_client.remove(&client);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds(most: usize, most_per_client: usize) -> Bounds {
        Bounds { most, most_per_client, idle: Duration::from_secs(60), queue: 16 }
    }

    fn params() -> mcp::InitializeRequestParams {
        serde_json::from_value(serde_json::json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}
        }))
        .expect("params")
    }

    fn open(sessions: &HttpSessions, client: &str) -> Result<Arc<HttpSession>, Full> {
        let address: std::net::IpAddr = client.parse().unwrap();
        sessions.open(
            Principal::anonymous(),
            ClientKey::of(address),
            &params(),
            mcp::ProtocolVersion::V_2025_11_25,
        )
    }

    #[test]
    fn sessions_are_bounded_in_all_and_per_client() {
        let sessions = HttpSessions::new(bounds(3, 2));
        let a1 = open(&sessions, "127.0.0.1").unwrap();
        let _a1_busy = a1.busy();
        let a2 = open(&sessions, "127.0.0.2").unwrap();
        let _a2_busy = a2.busy();
        // Every loopback address is the same client, and none of its sessions is idle.
        assert_eq!(open(&sessions, "127.0.0.3").unwrap_err(), Full::Client(2));
        assert_eq!(open(&sessions, "::1").unwrap_err(), Full::Client(2));
        let b1 = open(&sessions, "10.0.0.2").unwrap();
        let _b1_busy = b1.busy();
        assert_eq!(open(&sessions, "10.0.0.3").unwrap_err(), Full::Gateway(3));
        assert_eq!(sessions.len(), 3, "a refusal changes nothing");
        let nobody = Principal::anonymous();
        assert!(!sessions.close(&a1.id, &Principal::new("jwt", "mallory")), "not theirs");
        assert!(sessions.close(&a1.id, &nobody));
        assert!(!sessions.close(&a1.id, &nobody), "closed once");
        assert!(a1.closed().is_cancelled());
        open(&sessions, "127.0.0.1").expect("room again for that client");
        assert!(sessions.get(&b1.id, &nobody).is_some());
        assert!(sessions.get(&b1.id, &Principal::new("key", "ci")).is_none(), "not theirs");
        assert!(sessions.get("no-such-session", &nobody).is_none());
        assert_eq!(sessions.len(), 3);
        sessions.close_all();
        assert_eq!(sessions.len(), 0);
        assert!(b1.closed().is_cancelled());
    }

    #[test]
    fn a_new_session_takes_the_place_of_an_idle_one() {
        let sessions = HttpSessions::new(bounds(4, 2));
        // Per client: that client's least recently used idle session goes.
        let old = open(&sessions, "2001:db8::1").unwrap();
        let newer = open(&sessions, "2001:db8::2").unwrap();
        newer.touch(1 << 40);
        let third = open(&sessions, "2001:db8::3").expect("in the place of an idle one");
        assert!(old.closed().is_cancelled(), "the least recently used went");
        assert!(!newer.closed().is_cancelled());
        // Over the gateway: an idle one of whoever holds the most.
        let other = open(&sessions, "10.0.0.1").unwrap();
        let _other_busy = other.busy();
        let lone = open(&sessions, "10.0.0.2").unwrap();
        assert_eq!(sessions.len(), 4);
        let fresh = open(&sessions, "10.0.0.3").expect("room made");
        assert!(!lone.closed().is_cancelled(), "a client with one session keeps it");
        assert!(third.closed().is_cancelled(), "the least recently used of the biggest holder");
        assert!(!newer.closed().is_cancelled());
        assert!(!other.closed().is_cancelled(), "a busy session is never displaced");
        assert_eq!(sessions.len(), 4);
        assert!(sessions.get(&fresh.id, &Principal::anonymous()).is_some());
    }

    #[test]
    fn a_busy_session_is_never_idle() {
        let sessions = HttpSessions::new(bounds(10, 10));
        let busy = open(&sessions, "127.0.0.1").unwrap();
        let idle = open(&sessions, "127.0.0.1").unwrap();
        assert_eq!(sessions.close_idle(), 0, "both were used just now");
        let guard = busy.busy();
        assert_eq!(sessions.close_unused_before(u64::MAX), 1);
        assert!(idle.closed().is_cancelled());
        assert!(!busy.closed().is_cancelled());
        drop(guard);
        assert_eq!(sessions.close_unused_before(u64::MAX), 1);
        assert!(busy.closed().is_cancelled());
    }

    #[test]
    fn sessions_ids_are_unguessable_and_distinct() {
        let sessions = HttpSessions::new(bounds(10, 10));
        let a = open(&sessions, "127.0.0.1").unwrap();
        let b = open(&sessions, "127.0.0.1").unwrap();
        assert_ne!(a.id, b.id);
        assert_eq!(a.id.len(), 32, "128 random bits in hex");
        assert!(a.id.bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
