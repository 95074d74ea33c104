//! The HTTP front's open sessions, bounded: at most so many at once, at most so many per client
//! (`client`: loopback is one client, IPv6 counts by /64), and each closed after a while
//! without use, so that clients that open sessions and never close them cannot make the
//! gateway hold ever more. When a bound is reached, a new session takes the place of an idle
//! one (nothing running, no stream read) before anyone is refused: per client, that client's
//! least recently used; over the gateway, the least recently used of the client that holds
//! the most, so that whoever fills the table pays for it first.
//!
//! With `[state] shared_key`, session ids are sealed (`seal`): a session's id carries what a
//! replica needs to serve it. A request naming a session this table does not hold opens it
//! from its id when the id opens under the key, is not past its age and belongs to the
//! caller, counted against the same bounds as a new session. `DELETE` ends this replica's
//! copy only, and the id still opens elsewhere (and here again) until its age: revoking it on
//! every replica needs state they share, which they do not have yet. Without a shared key, ids
//! are random and a session lives on the replica that opened it only.

#![allow(deprecated)] // the handshake's types are legacy in 2026-07-28 but still spoken

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::time::Instant;

use toolgate_core::mcp;
use toolgate_intercept::Principal;

use super::client::ClientKey;
use super::relay::Relay;
use super::seal::{self, SessionSeal};
use super::session::{HttpSession, Opening, millis_since};

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

impl Full {
    /// The HTTP status that says so: 503 when the gateway is full, 429 when the client is.
    pub(crate) fn status(&self) -> http::StatusCode {
        match self {
            Full::Gateway(_) => http::StatusCode::SERVICE_UNAVAILABLE,
            Full::Client(_) => http::StatusCode::TOO_MANY_REQUESTS,
        }
    }
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
    /// What seals session ids, with `[state] shared_key`.
    seal: Option<SessionSeal>,
    /// The relay between replicas, with shared state on a bus.
    relay: Option<Arc<Relay>>,
}

/// What a request's session id finds.
#[derive(Debug)]
pub(crate) enum Lookup {
    /// A session this table holds.
    Held(Arc<HttpSession>),
    /// A session opened from its sealed id just now (the gateway must be told of it).
    Reopened(Arc<HttpSession>),
    /// A sealed id that opens, for which there is no room now.
    NoRoom(Full),
    /// No session of the caller's: it ended, never existed, or is another principal's.
    Unknown,
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
    #[cfg(test)]
    pub(crate) fn new(bounds: Bounds) -> HttpSessions {
        HttpSessions::sealed(bounds, None)
    }

    /// Sessions whose ids `seal` seals (random ids for `None`).
    pub(crate) fn sealed(bounds: Bounds, seal: Option<SessionSeal>) -> HttpSessions {
        HttpSessions { table: RwLock::default(), bounds, epoch: Instant::now(), seal, relay: None }
    }

    /// The same, their copies served by `relay` (see `relay`).
    pub(crate) fn relayed(mut self, relay: Option<Arc<Relay>>) -> HttpSessions {
        self.relay = relay;
        self
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
        let Some(seal) = &self.seal else {
            let id: Arc<str> = uuid::Uuid::new_v4().simple().to_string().into();
            let session = Arc::new(HttpSession::new(
                id,
                owner,
                client,
                params,
                version,
                self.now(),
                self.bounds.queue,
            ));
            return self.insert(session).map(Inserted::session);
        };
        // The session keeps what its id carries, so that every replica serves it alike.
        let params = seal::fit(params);
        let id = seal.seal(&owner, &params, &version, seal::unix_now());
        self.insert(self.copy(id.into(), owner, client, &params, version)).map(Inserted::session)
    }

    /// A copy of a sealed session on this replica, marked as its own.
    fn copy(
        &self,
        id: Arc<str>,
        owner: Principal,
        client: ClientKey,
        params: &mcp::InitializeRequestParams,
        version: mcp::ProtocolVersion,
    ) -> Arc<HttpSession> {
        Arc::new(HttpSession::opened(Opening {
            id,
            owner,
            client,
            params,
            version,
            now_ms: self.now(),
            queue: self.bounds.queue,
            mark: Some(seal::copy_mark()),
            relay: self.relay.as_deref(),
        }))
    }

    /// Puts `session` in the table, in the place of an idle one when a bound is reached; the
    /// session already there when one of that id is (two requests reopened it at once).
    fn insert(&self, session: Arc<HttpSession>) -> Result<Inserted, Full> {
        let id = session.id.clone();
        let key = session.client.clone();
        let mut displaced = Vec::new();
        {
            let mut table = self.table.write().expect("sessions lock must not be poisoned");
            if let Some(there) = table.by_id.get(&id) {
                return Ok(Inserted::There(there.clone()));
            }
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
        Ok(Inserted::New(session))
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

    /// The copy held here of the session named `name` on the relay's bus, if any (a relayed
    /// answer's: not marked as used). A scan of the table, which is bounded; answers that
    /// reach the wrong replica are few.
    pub(crate) fn named(&self, name: &str) -> Option<Arc<HttpSession>> {
        let table = self.table.read().expect("sessions lock must not be poisoned");
        table.by_id.values().find(|session| session.relay_name() == Some(name)).cloned()
    }

    /// The session `id` names for `caller`, counted as `client`: one this table holds (marked
    /// as used now), else one its sealed id opens (see the module's documentation).
    pub(crate) fn find(&self, id: &str, caller: &Principal, client: ClientKey) -> Lookup {
        if let Some(session) = self.get(id, caller) {
            return Lookup::Held(session);
        }
        let Some(opened) = self.seal.as_ref().and_then(|seal| seal.open(id, seal::unix_now()))
        else {
            return Lookup::Unknown;
        };
        if !opened.is_owned_by(caller) {
            return Lookup::Unknown;
        }
        let copy = self.copy(id.into(), caller.clone(), client, &opened.params, opened.version);
        match self.insert(copy) {
            Ok(Inserted::New(session)) => {
                tracing::debug!(session = %session.id, "a session opened from its sealed id");
                Lookup::Reopened(session)
            }
            // Opened by a request that came at the same time.
            Ok(Inserted::There(_)) => self.get(id, caller).map_or(Lookup::Unknown, Lookup::Held),
            Err(full) => Lookup::NoRoom(full),
        }
    }

    /// Whether `id` is a sealed id of `caller`'s that opens (held here or not).
    pub(crate) fn opens(&self, id: &str, caller: &Principal) -> bool {
        self.seal
            .as_ref()
            .and_then(|seal| seal.open(id, seal::unix_now()))
            .is_some_and(|opened| opened.is_owned_by(caller))
    }

    /// Closes session `id` when `caller` opened it; `false` when it was not open (or not
    /// `caller`'s). With sealed ids, this ends this replica's copy only (see the module's
    /// documentation).
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

/// What [`HttpSessions::insert`] did.
enum Inserted {
    /// The session was put in the table.
    New(Arc<HttpSession>),
    /// A session of that id was there already.
    There(Arc<HttpSession>),
}

impl Inserted {
    fn session(self) -> Arc<HttpSession> {
        match self {
            Inserted::New(session) | Inserted::There(session) => session,
        }
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

    const KEY: &[u8] = b"the key both replicas share, 32+ bytes";

    fn replica(most: usize, most_per_client: usize) -> HttpSessions {
        HttpSessions::sealed(bounds(most, most_per_client), Some(SessionSeal::new(KEY)))
    }

    fn find(sessions: &HttpSessions, id: &str, caller: &Principal) -> Lookup {
        sessions.find(id, caller, ClientKey::Loopback)
    }

    #[test]
    fn a_sealed_session_opens_on_another_replica_for_its_owner_only() {
        let (a, b) = (replica(10, 10), replica(10, 10));
        let alice = Principal::new("jwt", "alice");
        let opened = a
            .open(alice.clone(), ClientKey::Loopback, &params(), mcp::ProtocolVersion::V_2025_11_25)
            .unwrap();
        assert!(opened.id.starts_with(seal::PREFIX), "{}", opened.id);
        assert!(matches!(find(&a, &opened.id, &alice), Lookup::Held(_)));
        assert!(matches!(find(&b, &opened.id, &Principal::new("jwt", "bob")), Lookup::Unknown));
        assert!(matches!(find(&b, &opened.id, &Principal::anonymous()), Lookup::Unknown));
        assert_eq!(b.len(), 0, "another principal opens nothing");
        let Lookup::Reopened(copy) = find(&b, &opened.id, &alice) else { panic!("reopened") };
        assert_eq!(copy.id, opened.id);
        assert_eq!(copy.version, opened.version);
        assert_eq!(copy.capabilities, opened.capabilities);
        assert!(matches!(find(&b, &opened.id, &alice), Lookup::Held(_)), "then held");
        assert_eq!(b.len(), 1);
        // Another key, or no key, opens nothing.
        let other = HttpSessions::sealed(bounds(10, 10), Some(SessionSeal::new(&[7; 32])));
        assert!(matches!(find(&other, &opened.id, &alice), Lookup::Unknown));
        assert!(matches!(
            find(&HttpSessions::new(bounds(10, 10)), &opened.id, &alice),
            Lookup::Unknown
        ));
        for garbage in ["", "s1.", "s1.AAAA", "0123456789abcdef0123456789abcdef", &opened.id[1..]] {
            assert!(matches!(find(&b, garbage, &alice), Lookup::Unknown), "{garbage:?}");
        }
    }

    #[test]
    fn a_reopened_session_counts_against_the_bounds_and_may_take_an_idle_ones_place() {
        let (a, b) = (replica(10, 10), replica(2, 10));
        let owner = Principal::anonymous();
        let open = |sessions: &HttpSessions, client: &str| {
            let address: std::net::IpAddr = client.parse().unwrap();
            let version = mcp::ProtocolVersion::V_2025_11_25;
            sessions.open(owner.clone(), ClientKey::of(address), &params(), version).unwrap()
        };
        let elsewhere = open(&a, "10.0.0.9");
        let idle = open(&b, "10.0.0.1");
        let busy = open(&b, "10.0.0.2");
        let _busy = busy.busy();
        let Lookup::Reopened(copy) = find(&b, &elsewhere.id, &owner) else { panic!("reopened") };
        assert!(idle.closed().is_cancelled(), "the idle one made room");
        let _copy_busy = copy.busy();
        let another = open(&a, "10.0.0.9");
        assert!(matches!(find(&b, &another.id, &owner), Lookup::NoRoom(Full::Gateway(2))));
        assert_eq!(b.len(), 2);
    }

    #[test]
    fn closing_a_sealed_session_ends_this_replicas_copy_only() {
        let (a, b) = (replica(10, 10), replica(10, 10));
        let owner = Principal::anonymous();
        let opened = a
            .open(owner.clone(), ClientKey::Loopback, &params(), mcp::ProtocolVersion::V_2025_11_25)
            .unwrap();
        let Lookup::Reopened(copy) = find(&b, &opened.id, &owner) else { panic!("reopened") };
        assert!(b.close(&opened.id, &owner));
        assert!(copy.closed().is_cancelled());
        assert!(!opened.closed().is_cancelled(), "the other replica's copy lives on");
        assert!(b.opens(&opened.id, &owner), "and the id still opens");
        assert!(!b.opens(&opened.id, &Principal::new("key", "ci")));
        assert!(matches!(find(&b, &opened.id, &owner), Lookup::Reopened(_)));
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
