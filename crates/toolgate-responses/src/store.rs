//! Stored responses: each response's JSON as `GET /v1/responses/{id}` returns it, and its
//! conversation ([`State`]) for a later `previous_response_id`, in SQLite ([`sqlite`]: a file,
//! the default) or PostgreSQL ([`postgres`]: a database that several gateways share). A
//! response belongs to the principal that made it: another caller's id is answered as unknown.
//! The request's credentials are never stored (they are not part of either).

mod postgres;
mod sqlite;

use std::path::Path;

use serde_json::Value;

use crate::error::ApiError;
use crate::state::State;

/// The stored responses.
#[derive(Clone)]
pub struct Store {
    backend: Backend,
}

#[derive(Clone)]
enum Backend {
    Sqlite(sqlite::Sqlite),
    Postgres(postgres::Postgres),
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let backend = match self.backend {
            Backend::Sqlite(_) => "sqlite",
            Backend::Postgres(_) => "postgres",
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

impl Store {
    /// Opens (or creates) the store at `path`; a new file is readable by its owner only.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Ok(Store { backend: Backend::Sqlite(sqlite::Sqlite::open(path)?) })
    }

    /// A store in memory, gone with the process.
    #[allow(clippy::missing_panics_doc)]
    pub fn in_memory() -> Store {
        Store { backend: Backend::Sqlite(sqlite::Sqlite::in_memory()) }
    }

    /// The store in the PostgreSQL database at `url` (`postgres://user:pass@host/db`, TLS as its
    /// `sslmode` says), its table made if missing. Fails only on a URL it cannot use: a database
    /// that cannot be reached now is logged as a warning, and the requests that need it fail
    /// (503) until it is back, each within 5 s.
    pub async fn postgres(url: &str) -> Result<Store, StoreError> {
        Ok(Store { backend: Backend::Postgres(postgres::Postgres::connect(url).await?) })
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

    /// Deletes `owner`'s response `id`; whether there was one.
    pub async fn delete(&self, id: &str, owner: &str) -> Result<bool, ApiError> {
        match &self.backend {
            Backend::Sqlite(db) => db.delete(id, owner).await,
            Backend::Postgres(db) => db.delete(id, owner).await,
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
        match &self.backend {
            Backend::Sqlite(db) => db.put(row).await,
            Backend::Postgres(db) => db.put(row).await,
        }
    }

    async fn read<S: serde::de::DeserializeOwned>(
        &self,
        id: &str,
        owner: &str,
    ) -> Result<Option<(Value, S)>, ApiError> {
        let row = match &self.backend {
            Backend::Sqlite(db) => db.get(id, owner).await?,
            Backend::Postgres(db) => db.get(id, owner).await?,
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
