//! Stored responses: each response's JSON as `GET /v1/responses/{id}` returns it, and its
//! conversation ([`State`]) for a later `previous_response_id`, in SQLite ([`sqlite`]: a file,
//! the default), PostgreSQL ([`postgres`]: a database that several gateways share), or the
//! gateway's shared state ([`shared`]: `[state] backend`, Redis or PostgreSQL, that the
//! replicas behind one load balancer share). A
//! response belongs to the principal that made it: another caller's id is answered as unknown.
//! The request's credentials are never stored (they are not part of either).
//!
//! What is kept is bounded ([`Retention`]): a response older than the TTL is neither returned nor
//! kept (each write deletes up to [`EXPIRED_PER_WRITE`] expired rows, so a backlog drains without
//! one write paying for all of it), and each write drops its owner's oldest responses beyond the
//! per-owner cap. Nothing a caller sends makes the store grow past `cap x callers`. In the
//! shared state, every key expires by itself (the TTL at most 30 days) and the cap is a ring of
//! slots (see [`shared`] for how it differs).

mod postgres;
mod shared;
mod sqlite;

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::error::ApiError;
use crate::state::State;

/// The most expired responses one write deletes.
pub(crate) const EXPIRED_PER_WRITE: i64 = 1000;

/// How long stored responses are kept, and how many per owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// A response older than this is gone (default 30 days, as OpenAI keeps them).
    pub ttl: Duration,
    /// The most responses one owner has; each new one drops the oldest beyond it (default
    /// 10,000).
    pub max_per_owner: u64,
}

impl Default for Retention {
    fn default() -> Retention {
        Retention { ttl: Duration::from_secs(30 * 24 * 3600), max_per_owner: 10_000 }
    }
}

impl Retention {
    /// The oldest `created_at` still kept at `now` (seconds since the epoch).
    fn cutoff(&self, now: i64) -> i64 {
        now.saturating_sub(i64::try_from(self.ttl.as_secs()).unwrap_or(i64::MAX))
    }

    /// How many of an owner's responses a write keeps, the new one included.
    fn keep(&self) -> i64 {
        i64::try_from(self.max_per_owner.max(1)).unwrap_or(i64::MAX)
    }
}

/// The stored responses.
#[derive(Clone)]
pub struct Store {
    backend: Backend,
    retention: Retention,
}

#[derive(Clone)]
enum Backend {
    Sqlite(sqlite::Sqlite),
    Postgres(postgres::Postgres),
    Shared(shared::Shared),
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let backend = match &self.backend {
            Backend::Sqlite(_) => "sqlite",
            Backend::Postgres(_) => "postgres",
            Backend::Shared(shared) => match shared.backend() {
                "redis" => "state (redis)",
                "postgres" => "state (postgres)",
                _ => "state (memory)",
            },
        };
        f.debug_struct("Store").field("backend", &backend).finish_non_exhaustive()
    }
}

/// Why the store cannot be opened.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The SQLite file cannot be opened or made.
    #[error("the response store {path}: {source}")]
    Sqlite {
        /// Its file.
        path: String,
        /// What failed.
        #[source]
        source: rusqlite::Error,
    },
    /// The PostgreSQL URL cannot be used. Neither field holds the URL's password.
    #[error("the response store {target}: {reason}")]
    Postgres {
        /// The database, without its password (`postgres://user@host:5432/db`).
        target: String,
        /// What is wrong, the password replaced by `***` wherever it appeared.
        reason: String,
    },
}

/// One stored response, as the backends keep it.
struct Row {
    id: String,
    owner: String,
    created_at: i64,
    response: String,
    state: String,
}

/// What a write prunes besides adding its row: rows created before `cutoff` (at most
/// [`EXPIRED_PER_WRITE`]), and the owner's rows older than its newest `keep` (the new one
/// included).
#[derive(Debug, Clone, Copy)]
struct Prune {
    cutoff: i64,
    keep: i64,
}

impl Store {
    /// Opens (or creates) the store at `path`; a new file is readable by its owner only.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Ok(Store::of(Backend::Sqlite(sqlite::Sqlite::open(path)?)))
    }

    /// A store in memory, gone with the process.
    #[allow(clippy::missing_panics_doc)]
    pub fn in_memory() -> Store {
        Store::of(Backend::Sqlite(sqlite::Sqlite::in_memory()))
    }

    /// The store in the PostgreSQL database at `url` (`postgres://user:pass@host/db`, TLS as its
    /// `sslmode` says), its table made if missing. Fails only on a URL it cannot use: a database
    /// that cannot be reached now is logged as a warning, and the requests that need it fail
    /// (503) until it is back, each within 5 s.
    pub async fn postgres(url: &str) -> Result<Store, StoreError> {
        Ok(Store::of(Backend::Postgres(postgres::Postgres::connect(url).await?)))
    }

    /// The store in the gateway's shared state (`[state] backend`): the replicas that share
    /// `state` share their stored responses. A state that cannot be reached fails the requests
    /// that need it (503) within the state's timeout, until it is back. The retention's TTL is
    /// at most [`toolgate_state::MAX_TTL`] (30 days) there.
    pub fn shared(state: toolgate_state::SharedState) -> Store {
        Store::of(Backend::Shared(shared::Shared::new(state)))
    }

    fn of(backend: Backend) -> Store {
        Store { backend, retention: Retention::default() }
    }

    /// The store keeping responses as `retention` says.
    #[must_use]
    pub fn with_retention(mut self, retention: Retention) -> Store {
        self.retention = retention;
        self
    }

    /// How many unexpired responses `owner` has stored.
    pub async fn count(&self, owner: &str) -> Result<u64, ApiError> {
        let cutoff = self.retention.cutoff(crate::now() as i64);
        match &self.backend {
            Backend::Sqlite(db) => db.count(owner, cutoff).await,
            Backend::Postgres(db) => db.count(owner, cutoff).await,
            Backend::Shared(db) => db.count(owner, cutoff).await,
        }
    }

    /// Keeps a response and its conversation.
    pub(crate) async fn put(
        &self,
        id: &str,
        owner: &str,
        created_at: i64,
        response: &Value,
        state: &State,
    ) -> Result<(), ApiError> {
        self.write(id, owner, created_at, response, state).await
    }

    /// `owner`'s response `id` and its conversation.
    pub(crate) async fn get(
        &self,
        id: &str,
        owner: &str,
    ) -> Result<Option<(Value, State)>, ApiError> {
        self.read(id, owner).await
    }

    /// Keeps a response and a conversation given as JSON: the store as seen from outside the
    /// crate (tests, tools), which cannot name [`State`].
    pub async fn put_json(
        &self,
        id: &str,
        owner: &str,
        created_at: i64,
        response: &Value,
        conversation: &Value,
    ) -> Result<(), ApiError> {
        self.write(id, owner, created_at, response, conversation).await
    }

    /// `owner`'s response `id` and its conversation, as JSON.
    pub async fn get_json(
        &self,
        id: &str,
        owner: &str,
    ) -> Result<Option<(Value, Value)>, ApiError> {
        self.read(id, owner).await
    }

    /// Deletes `owner`'s response `id`; whether there was one (an expired one is none: a later
    /// write prunes it).
    pub async fn delete(&self, id: &str, owner: &str) -> Result<bool, ApiError> {
        let cutoff = self.retention.cutoff(crate::now() as i64);
        match &self.backend {
            Backend::Sqlite(db) => db.delete(id, owner, cutoff).await,
            Backend::Postgres(db) => db.delete(id, owner, cutoff).await,
            Backend::Shared(db) => db.delete(id, owner, cutoff).await,
        }
    }

    async fn write(
        &self,
        id: &str,
        owner: &str,
        created_at: i64,
        response: &Value,
        state: &impl serde::Serialize,
    ) -> Result<(), ApiError> {
        let state = serde_json::to_string(state)
            .map_err(|e| ApiError::server(format!("cannot store the conversation: {e}")))?;
        let row = Row {
            id: id.to_owned(),
            owner: owner.to_owned(),
            created_at,
            response: response.to_string(),
            state,
        };
        let prune = Prune {
            cutoff: self.retention.cutoff(crate::now() as i64),
            keep: self.retention.keep(),
        };
        match &self.backend {
            Backend::Sqlite(db) => db.put(row, prune).await,
            Backend::Postgres(db) => db.put(row, prune).await,
            Backend::Shared(db) => db.put(row, prune).await,
        }
    }

    async fn read<S: serde::de::DeserializeOwned>(
        &self,
        id: &str,
        owner: &str,
    ) -> Result<Option<(Value, S)>, ApiError> {
        let cutoff = self.retention.cutoff(crate::now() as i64);
        let row = match &self.backend {
            Backend::Sqlite(db) => db.get(id, owner, cutoff).await?,
            Backend::Postgres(db) => db.get(id, owner, cutoff).await?,
            Backend::Shared(db) => db.get(id, owner, cutoff).await?,
        };
        let Some((response, state)) = row else { return Ok(None) };
        let response = serde_json::from_str(&response)
            .map_err(|e| ApiError::server(format!("a stored response is unreadable: {e}")))?;
        let state = serde_json::from_str(&state)
            .map_err(|e| ApiError::server(format!("a stored conversation is unreadable: {e}")))?;
        Ok(Some((response, state)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> i64 {
        crate::now() as i64
    }

    #[tokio::test]
    async fn a_flood_keeps_each_owners_newest_and_expired_responses_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("responses.db");
        let retention = Retention { ttl: Duration::from_secs(3600), max_per_owner: 50 };
        let store = Store::open(&path).unwrap().with_retention(retention);
        // A store on the same file that keeps everything: it sees what was pruned, not hidden.
        let forever =
            Retention { ttl: Duration::from_secs(100 * 365 * 86_400), max_per_owner: 1000 };
        let everything = Store::open(&path).unwrap().with_retention(forever);
        let old = serde_json::json!({});
        everything.put_json("resp_old", "user:bob", now() - 7200, &old, &old).await.unwrap();
        assert!(store.get_json("resp_old", "user:bob").await.unwrap().is_none());
        assert!(!store.delete("resp_old", "user:bob").await.unwrap(), "expired is none");
        for i in 0..1000 {
            let id = format!("resp_{i}");
            store
                .put(&id, "user:alice", now(), &serde_json::json!({ "id": id }), &State::default())
                .await
                .unwrap();
        }
        store.put("resp_bob", "user:bob", now(), &old, &State::default()).await.unwrap();
        assert_eq!(store.count("user:alice").await.unwrap(), 50);
        assert!(store.get("resp_999", "user:alice").await.unwrap().is_some(), "the newest");
        assert!(store.get("resp_950", "user:alice").await.unwrap().is_some(), "the 50th newest");
        assert!(store.get("resp_949", "user:alice").await.unwrap().is_none(), "the 51st");
        assert_eq!(store.count("user:bob").await.unwrap(), 1);
        assert!(everything.get("resp_old", "user:bob").await.unwrap().is_none(), "pruned");
        assert_eq!(everything.count("user:alice").await.unwrap(), 50, "deleted, not hidden");
    }

    #[test]
    fn retention_bounds_are_clamped() {
        let huge = Retention { ttl: Duration::from_secs(u64::MAX), max_per_owner: u64::MAX };
        assert!(huge.cutoff(1_000) < 0, "a TTL past the epoch keeps everything");
        assert_eq!(huge.keep(), i64::MAX);
        assert_eq!(Retention { max_per_owner: 0, ..huge }.keep(), 1, "the new one is kept");
    }

    #[tokio::test]
    async fn a_response_is_its_owners_only_and_deleted_once() {
        let store = Store::in_memory();
        let state = State { listed: vec!["fs".into()], ..State::default() };
        store
            .put("resp_1", "user:alice", now(), &serde_json::json!({"id": "resp_1"}), &state)
            .await
            .unwrap();
        let (response, kept) = store.get("resp_1", "user:alice").await.unwrap().expect("hers");
        assert_eq!(response["id"], "resp_1");
        assert_eq!(kept, state);
        assert!(store.get("resp_1", "user:bob").await.unwrap().is_none(), "not bob's");
        assert!(!store.delete("resp_1", "user:bob").await.unwrap(), "bob cannot delete it");
        assert!(store.delete("resp_1", "user:alice").await.unwrap());
        assert!(!store.delete("resp_1", "user:alice").await.unwrap(), "gone");
    }

    #[tokio::test]
    async fn a_store_on_disk_keeps_what_it_was_given_and_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("responses.db");
        let store = Store::open(&path).unwrap();
        store.put("resp_2", "o", now(), &serde_json::json!({}), &State::default()).await.unwrap();
        drop(store);
        let again = Store::open(&path).unwrap();
        assert!(again.get("resp_2", "o").await.unwrap().is_some());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
    }
}
