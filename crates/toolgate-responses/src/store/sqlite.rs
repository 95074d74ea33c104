//! The SQLite backend: one connection, used from blocking threads, in WAL mode. The file is
//! made readable by its owner only. A write and its pruning are one transaction; an owner's
//! rows are ordered by `rowid`, which grows with each insert.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::{Connection, OptionalExtension, params};

use super::{EXPIRED_PER_WRITE, Prune, Row, StoreError};
use crate::error::ApiError;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS responses (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    response TEXT NOT NULL,
    state TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS responses_by_owner ON responses (owner);
CREATE INDEX IF NOT EXISTS responses_by_age ON responses (created_at);";

/// A SQLite database of responses.
#[derive(Clone)]
pub(super) struct Sqlite {
    db: Arc<Mutex<Connection>>,
}

impl Sqlite {
    /// Opens (or creates) the database at `path`; a new file is readable by its owner only.
    pub(super) fn open(path: &Path) -> Result<Sqlite, StoreError> {
        let error = |source| StoreError::Sqlite { path: path.display().to_string(), source };
        create_private(path)
            .map_err(|e| error(rusqlite::Error::ToSqlConversionFailure(Box::new(e))))?;
        let db = Connection::open(path).map_err(error)?;
        db.execute_batch("PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 5000;")
            .map_err(error)?;
        db.execute_batch(SCHEMA).map_err(error)?;
        Ok(Sqlite { db: Arc::new(Mutex::new(db)) })
    }

    /// A database in memory, gone with the process.
    pub(super) fn in_memory() -> Sqlite {
        let db = Connection::open_in_memory().expect("SQLite in memory opens");
        db.execute_batch(SCHEMA).expect("the schema applies");
        Sqlite { db: Arc::new(Mutex::new(db)) }
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

    pub(super) async fn put(&self, row: Row, prune: Prune) -> Result<(), ApiError> {
        self.with(move |db| {
            let tx = db.unchecked_transaction()?;
            tx.execute(
                "INSERT OR REPLACE INTO responses (id, owner, created_at, response, state) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![row.id, row.owner, row.created_at, row.response, row.state],
            )?;
            tx.execute(
                "DELETE FROM responses WHERE rowid IN \
                 (SELECT rowid FROM responses WHERE created_at < ?1 LIMIT ?2)",
                params![prune.cutoff, EXPIRED_PER_WRITE],
            )?;
            // The owner's rows older than its newest `keep`.
            tx.execute(
                "DELETE FROM responses WHERE owner = ?1 AND rowid <= \
                 (SELECT rowid FROM responses WHERE owner = ?1 ORDER BY rowid DESC \
                  LIMIT 1 OFFSET ?2)",
                params![row.owner, prune.keep],
            )?;
            tx.commit()
        })
        .await
    }

    pub(super) async fn get(
        &self,
        id: &str,
        owner: &str,
        cutoff: i64,
    ) -> Result<Option<(String, String)>, ApiError> {
        let (id, owner) = (id.to_owned(), owner.to_owned());
        self.with(move |db| {
            db.query_row(
                "SELECT response, state FROM responses \
                 WHERE id = ?1 AND owner = ?2 AND created_at >= ?3",
                params![id, owner, cutoff],
                |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)),
            )
            .optional()
        })
        .await
    }

    pub(super) async fn delete(
        &self,
        id: &str,
        owner: &str,
        cutoff: i64,
    ) -> Result<bool, ApiError> {
        let (id, owner) = (id.to_owned(), owner.to_owned());
        self.with(move |db| {
            db.execute(
                "DELETE FROM responses WHERE id = ?1 AND owner = ?2 AND created_at >= ?3",
                params![id, owner, cutoff],
            )
            .map(|n| n > 0)
        })
        .await
    }

    pub(super) async fn count(&self, owner: &str, cutoff: i64) -> Result<u64, ApiError> {
        let owner = owner.to_owned();
        self.with(move |db| {
            db.query_row(
                "SELECT COUNT(*) FROM responses WHERE owner = ?1 AND created_at >= ?2",
                params![owner, cutoff],
                |row| row.get::<_, i64>(0),
            )
        })
        .await
        .map(|n| n.max(0) as u64)
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
