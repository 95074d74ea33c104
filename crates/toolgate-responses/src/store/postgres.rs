//! The PostgreSQL backend, for gateways that share their stored responses: a small pool of
//! tokio-postgres connections (deadpool), each operation bounded by [`TIMEOUT`].
//!
//! The rows are in `toolgate_responses` (a name that says whose it is in a shared database),
//! made if missing, with the SQLite table's columns and `seq`, which orders an owner's rows by
//! when they were written (SQLite's `rowid` does that there). A write and its pruning are one
//! transaction. The two JSON documents are `TEXT`, not
//! `JSONB`: they are only ever read back whole, `GET /v1/responses/{id}` returns them as they
//! were written (JSONB reorders keys), and JSONB refuses a string holding `\u0000`, which a
//! model's output may.
//!
//! A database that cannot be reached fails the operation at once, or at [`TIMEOUT`], with a
//! 503 (`the response store is unavailable: ...`); the pool drops connections that closed, so
//! the store works again as soon as the database is back. The table is made on the first
//! connection that succeeds, at start or later. No message holds the URL's password.

mod tls;
mod url;

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use futures::future::BoxFuture;
use tokio::sync::OnceCell;
use tokio::time::{Instant, timeout_at};
use tokio_postgres::config::SslMode;
use tokio_postgres::error::SqlState;

use self::url::Redactor;
use super::{EXPIRED_PER_WRITE, Prune, Row, StoreError};
use crate::error::ApiError;

/// The longest an operation waits for a connection and its statements together.
pub(super) const TIMEOUT: Duration = Duration::from_secs(5);

/// Connections kept open: stored responses are written once per response and read once per
/// `previous_response_id`.
const POOL_SIZE: usize = 8;

/// Made in one transaction under an advisory lock, so that gateways starting together do not
/// race (concurrent `CREATE TABLE IF NOT EXISTS` can fail on the catalog's unique index).
const SCHEMA: &str = "
SELECT pg_advisory_xact_lock(7310582209417263915);
CREATE TABLE IF NOT EXISTS toolgate_responses (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    response TEXT NOT NULL,
    state TEXT NOT NULL,
    seq BIGSERIAL
);
CREATE INDEX IF NOT EXISTS toolgate_responses_by_owner ON toolgate_responses (owner, seq);
CREATE INDEX IF NOT EXISTS toolgate_responses_by_age ON toolgate_responses (created_at);";

const PUT: &str = "INSERT INTO toolgate_responses (id, owner, created_at, response, state) \
                   VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO UPDATE SET \
                   owner = EXCLUDED.owner, created_at = EXCLUDED.created_at, \
                   response = EXCLUDED.response, state = EXCLUDED.state, seq = DEFAULT";
/// At most `$2` rows created before `$1`.
const EXPIRE: &str = "DELETE FROM toolgate_responses WHERE id IN \
                      (SELECT id FROM toolgate_responses WHERE created_at < $1 LIMIT $2)";
/// Owner `$1`'s rows older than its newest `$2`.
const OVER: &str = "DELETE FROM toolgate_responses WHERE owner = $1 AND seq <= \
                    (SELECT seq FROM toolgate_responses WHERE owner = $1 \
                     ORDER BY seq DESC LIMIT 1 OFFSET $2)";
const GET: &str = "SELECT response, state FROM toolgate_responses \
                   WHERE id = $1 AND owner = $2 AND created_at >= $3";
const DELETE: &str =
    "DELETE FROM toolgate_responses WHERE id = $1 AND owner = $2 AND created_at >= $3";
const COUNT: &str = "SELECT COUNT(*) FROM toolgate_responses WHERE owner = $1 AND created_at >= $2";

/// The store in one PostgreSQL database.
#[derive(Clone)]
pub(super) struct Postgres {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    /// Set once the table is known to exist.
    schema: OnceCell<()>,
    /// The database, for the log: `postgres://user@host:port/db`.
    target: String,
    redactor: Redactor,
}

impl Postgres {
    /// The pool for `url`, and the table made if the database can be reached now (else a
    /// warning, and the first operation that reaches it makes it).
    pub(super) async fn connect(url: &str) -> Result<Postgres, StoreError> {
        let redactor = Redactor::of(url);
        let url::Url { mut config, root_cert } = url::read(url, &redactor).map_err(|reason| {
            StoreError::Postgres { target: "(unreadable URL)".to_owned(), reason }
        })?;
        let target = url::target(&config);
        let refused = |reason: String| StoreError::Postgres {
            target: target.clone(),
            reason: redactor.redact(&reason),
        };
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("toolgate");
        }
        let manager = ManagerConfig { recycling_method: RecyclingMethod::Fast };
        let manager = if config.get_ssl_mode() == SslMode::Disable {
            Manager::from_config(config, tokio_postgres::NoTls, manager)
        } else {
            let tls = tls::connector(root_cert.as_deref()).map_err(refused)?;
            Manager::from_config(config, tls, manager)
        };
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(TIMEOUT))
            .create_timeout(Some(TIMEOUT))
            .recycle_timeout(Some(TIMEOUT))
            .build()
            .map_err(|error| refused(error.to_string()))?;
        let store =
            Postgres { inner: Arc::new(Inner { pool, schema: OnceCell::new(), target, redactor }) };
        if store.ready(Instant::now() + TIMEOUT).await.is_err() {
            tracing::warn!(
                store = %store.inner.target,
                "starting without the response store: requests that need it fail until it can \
                 be reached"
            );
        }
        Ok(store)
    }

    pub(super) async fn put(&self, row: Row, prune: Prune) -> Result<(), ApiError> {
        let deadline = self.ready(Instant::now() + TIMEOUT).await?;
        self.with(deadline, move |client| {
            Box::pin(async move {
                let tx = client.transaction().await?;
                let put = tx.prepare_cached(PUT).await?;
                tx.execute(
                    &put,
                    &[&row.id, &row.owner, &row.created_at, &row.response, &row.state],
                )
                .await?;
                let expire = tx.prepare_cached(EXPIRE).await?;
                tx.execute(&expire, &[&prune.cutoff, &EXPIRED_PER_WRITE]).await?;
                let over = tx.prepare_cached(OVER).await?;
                tx.execute(&over, &[&row.owner, &prune.keep]).await?;
                tx.commit().await
            })
        })
        .await
    }

    pub(super) async fn get(
        &self,
        id: &str,
        owner: &str,
        cutoff: i64,
    ) -> Result<Option<(String, String)>, ApiError> {
        let deadline = self.ready(Instant::now() + TIMEOUT).await?;
        let (id, owner) = (id.to_owned(), owner.to_owned());
        self.with(deadline, move |client| {
            Box::pin(async move {
                let statement = client.prepare_cached(GET).await?;
                let row = client.query_opt(&statement, &[&id, &owner, &cutoff]).await?;
                row.map(|row| Ok((row.try_get(0)?, row.try_get(1)?))).transpose()
            })
        })
        .await
    }

    pub(super) async fn delete(
        &self,
        id: &str,
        owner: &str,
        cutoff: i64,
    ) -> Result<bool, ApiError> {
        let deadline = self.ready(Instant::now() + TIMEOUT).await?;
        let (id, owner) = (id.to_owned(), owner.to_owned());
        self.with(deadline, move |client| {
            Box::pin(async move {
                let statement = client.prepare_cached(DELETE).await?;
                client.execute(&statement, &[&id, &owner, &cutoff]).await.map(|n| n > 0)
            })
        })
        .await
    }

    pub(super) async fn count(&self, owner: &str, cutoff: i64) -> Result<u64, ApiError> {
        let deadline = self.ready(Instant::now() + TIMEOUT).await?;
        let owner = owner.to_owned();
        self.with(deadline, move |client| {
            Box::pin(async move {
                let statement = client.prepare_cached(COUNT).await?;
                let row = client.query_one(&statement, &[&owner, &cutoff]).await?;
                row.try_get::<_, i64>(0).map(|n| n.max(0) as u64)
            })
        })
        .await
    }

    /// Makes the table once, by `deadline` (until that succeeds, every operation tries again,
    /// one at a time); the deadline, for the operation that follows.
    async fn ready(&self, deadline: Instant) -> Result<Instant, ApiError> {
        let made = self.inner.schema.get_or_try_init(|| {
            self.with(deadline, |client| {
                Box::pin(async move { client.batch_execute(SCHEMA).await })
            })
        });
        match timeout_at(deadline, made).await {
            Ok(made) => made.map(|_| deadline),
            Err(_) => Err(self.unavailable(format!("no answer within {TIMEOUT:?}"))),
        }
    }

    /// `work` on a pooled connection, all by `deadline`. A connection whose work did not finish
    /// in time is closed rather than given to the next operation.
    async fn with<T>(
        &self,
        deadline: Instant,
        work: impl for<'c> FnOnce(&'c mut Object) -> BoxFuture<'c, Result<T, tokio_postgres::Error>>,
    ) -> Result<T, ApiError> {
        let mut client = match timeout_at(deadline, self.inner.pool.get()).await {
            Err(_) | Ok(Err(deadpool_postgres::PoolError::Timeout(_))) => {
                return Err(self.unavailable(format!("no connection within {TIMEOUT:?}")));
            }
            Ok(Err(deadpool_postgres::PoolError::Backend(error))) => {
                return Err(self.failed(&error));
            }
            Ok(Err(error)) => return Err(self.unavailable(error.to_string())),
            Ok(Ok(client)) => client,
        };
        let done = timeout_at(deadline, work(&mut client)).await;
        match done {
            Ok(Ok(done)) => Ok(done),
            Ok(Err(error)) => Err(self.failed(&error)),
            Err(_) => {
                drop(Object::take(client));
                Err(self.unavailable(format!("no answer within {TIMEOUT:?}")))
            }
        }
    }

    /// A database's error (500: the store works, this statement did not), or the connection's
    /// (503: it cannot be reached, or it is shutting down).
    fn failed(&self, error: &tokio_postgres::Error) -> ApiError {
        let why = toolgate_core::ErrorChain(error).to_string();
        match error.code() {
            Some(code) if !unavailable(code) => {
                tracing::warn!(store = %self.inner.target, "the response store failed: {why}");
                ApiError::server(format!(
                    "the response store failed: {}",
                    self.inner.redactor.redact(&why)
                ))
            }
            _ => self.unavailable(why),
        }
    }

    fn unavailable(&self, why: String) -> ApiError {
        let why = self.inner.redactor.redact(&why);
        tracing::warn!(store = %self.inner.target, "the response store is unavailable: {why}");
        ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            kind: "server_error",
            message: format!("the response store is unavailable: {why}"),
            param: None,
            code: None,
        }
    }
}

/// Whether the database says it cannot serve now: a connection exception (class 08), an
/// operator's intervention (57P: shutting down, starting up), too many connections or too
/// little of anything (class 53).
fn unavailable(code: &SqlState) -> bool {
    let code = code.code();
    code.starts_with("08") || code.starts_with("57P") || code.starts_with("53")
}
