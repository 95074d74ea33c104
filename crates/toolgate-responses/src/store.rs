//! Stored responses, in SQLite: each response's JSON as `GET /v1/responses/{id}` returns it,
//! and its conversation ([`State`]) for a later `previous_response_id`. A response belongs to
//! the principal that made it: another caller's id is answered as unknown. The request's
//! credentials are never stored (they are not part of either).

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use crate::error::ApiError;
use crate::state::State;

/// The stored responses.
#[derive(Clone)]
pub struct Store {
    db: Arc<Mutex<Connection>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

/// Why the store cannot be opened.
#[derive(Debug, thiserror::Error)]
#[error("the response store {path}: {source}")]
pub struct StoreError {
    /// Its file.
    pub path: String,
    /// What failed.
    #[source]
    pub source: rusqlite::Error,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS responses (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    response TEXT NOT NULL,
    state TEXT NOT NULL
);";

impl Store {
    /// Opens (or creates) the store at `path`; a new file is readable by its owner only.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let error = |source| StoreError { path: path.display().to_string(), source };
        create_private(path)
            .map_err(|e| error(rusqlite::Error::ToSqlConversionFailure(Box::new(e))))?;
        let db = Connection::open(path).map_err(error)?;
        db.execute_batch("PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 5000;")
            .map_err(error)?;
        db.execute_batch(SCHEMA).map_err(error)?;
        Ok(Store { db: Arc::new(Mutex::new(db)) })
    }

    /// A store in memory, gone with the process.
    #[allow(clippy::missing_panics_doc)]
    pub fn in_memory() -> Store {
        let db = Connection::open_in_memory().expect("SQLite in memory opens");
        db.execute_batch(SCHEMA).expect("the schema applies");
        Store { db: Arc::new(Mutex::new(db)) }
    }

    async fn with<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, ApiError> {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || {
            let db = db.lock().unwrap_or_else(PoisonError::into_inner);
            work(&db)
        })
        .await
        .map_err(|e| ApiError::server(format!("the response store failed: {e}")))?
        .map_err(|e| ApiError::server(format!("the response store failed: {e}")))
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
        let (id, owner) = (id.to_owned(), owner.to_owned());
        let response = response.to_string();
        let state = serde_json::to_string(state)
            .map_err(|e| ApiError::server(format!("cannot store the conversation: {e}")))?;
        self.with(move |db| {
            db.execute(
                "INSERT OR REPLACE INTO responses (id, owner, created_at, response, state) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![id, owner, created_at, response, state],
            )
            .map(|_| ())
        })
        .await
    }

    /// `owner`'s response `id` and its conversation.
    pub(crate) async fn get(
        &self,
        id: &str,
        owner: &str,
    ) -> Result<Option<(Value, State)>, ApiError> {
        let (id, owner) = (id.to_owned(), owner.to_owned());
        let row = self
            .with(move |db| {
                db.query_row(
                    "SELECT response, state FROM responses WHERE id = ?1 AND owner = ?2",
                    params![id, owner],
                    |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)),
                )
                .optional()
            })
            .await?;
        let Some((response, state)) = row else { return Ok(None) };
        let response = serde_json::from_str(&response)
            .map_err(|e| ApiError::server(format!("a stored response is unreadable: {e}")))?;
        let state = serde_json::from_str(&state)
            .map_err(|e| ApiError::server(format!("a stored conversation is unreadable: {e}")))?;
        Ok(Some((response, state)))
    }

    /// Deletes `owner`'s response `id`; whether there was one.
    pub(crate) async fn delete(&self, id: &str, owner: &str) -> Result<bool, ApiError> {
        let (id, owner) = (id.to_owned(), owner.to_owned());
        self.with(move |db| {
            db.execute("DELETE FROM responses WHERE id = ?1 AND owner = ?2", params![id, owner])
                .map(|n| n > 0)
        })
        .await
    }
}

/// Creates the file readable by its owner only, before SQLite opens it (SQLite would create
/// it with the process's umask); an existing file is left as it is.
fn create_private(path: &Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_response_is_its_owners_only_and_deleted_once() {
        let store = Store::in_memory();
        let state = State { listed: vec!["fs".into()], ..State::default() };
        store
            .put("resp_1", "user:alice", 1, &serde_json::json!({"id": "resp_1"}), &state)
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
        store.put("resp_2", "o", 2, &serde_json::json!({}), &State::default()).await.unwrap();
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
