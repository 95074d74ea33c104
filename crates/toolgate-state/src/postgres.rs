//! The PostgreSQL backend: a small deadpool pool of tokio-postgres connections for the
//! statements (`sql.rs`), and a connection of the bus's own that `LISTEN`s (`bus.rs`).
//!
//! The table is made if missing, on the first connection that succeeds, at start or later.
//! A database that cannot be reached fails an operation at once (connection refused) or at the
//! operation's deadline, with [`StateError::Unavailable`]; the pool drops connections that
//! closed, so the same state works again as soon as the database is back. A connection whose
//! statement did not finish by the deadline is closed rather than given to the next operation.
//! No message holds the URL's password.

mod bus;
mod sql;
mod url;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use base64::Engine as _;
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use futures::future::BoxFuture;
use tokio::sync::{OnceCell, watch};
use tokio::time::{Instant, timeout_at};
use tokio_postgres::config::SslMode;
use tokio_postgres::error::SqlState;
use tokio_postgres_rustls::MakeRustlsConnect;
use tokio_util::sync::CancellationToken;

use crate::error::{Cause, shown};
use crate::fanout::Fanout;
use crate::redact::{Redactor, target};
use crate::{KEY_PREFIX, StateError};

const BACKEND: &str = "postgres";

/// Connections kept open: the statements are short, and a replica's calls share them.
const POOL_SIZE: usize = 8;

/// The PostgreSQL backend.
pub(crate) struct Postgres {
    pool: Pool,
    /// Set once the table is known to exist.
    schema: OnceCell<()>,
    /// For the bus's own connection.
    config: tokio_postgres::Config,
    tls: Option<MakeRustlsConnect>,
    /// The bus's state, once something subscribed: whether it listens now.
    bus: OnceLock<watch::Receiver<bool>>,
    fanout: Arc<Fanout>,
    stop: CancellationToken,
    timeout: Duration,
    target: String,
    redactor: Arc<Redactor>,
}

/// Why a statement did not run.
enum Failure {
    /// The database cannot be reached or did not answer in time (in words, redacted later).
    Unreachable(String),
    Database(tokio_postgres::Error),
    /// The table could not be made: already said.
    Schema(StateError),
}

impl Postgres {
    /// The pool for `url`, and the table made by `timeout` if the database can be reached now
    /// (else a warning, and the first operation that reaches it makes it). A database that
    /// refuses us (a wrong password) is an error.
    pub(crate) async fn connect(
        url: &str,
        timeout: Duration,
        fanout: Arc<Fanout>,
        stop: CancellationToken,
    ) -> Result<Postgres, StateError> {
        let redactor = Redactor::of(url);
        let (rest, root_cert) = url::take_root_cert(url);
        let mut config = url::config(&rest).map_err(|error| StateError::Config {
            reason: redactor.redact(&toolgate_core::ErrorChain(&error).to_string()),
        })?;
        let redactor = match config.get_password() {
            Some(password) => redactor.also(&String::from_utf8_lossy(password)),
            None => redactor,
        };
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(timeout);
        }
        if config.get_application_name().is_none() {
            config.application_name("toolgate");
        }
        let tls = match config.get_ssl_mode() {
            SslMode::Disable => None,
            _ => Some(
                crate::tls::postgres_connector(root_cert.as_deref())
                    .map_err(|reason| StateError::Config { reason: redactor.redact(&reason) })?,
            ),
        };
        let manager = ManagerConfig { recycling_method: RecyclingMethod::Fast };
        let manager = match &tls {
            None => Manager::from_config(config.clone(), tokio_postgres::NoTls, manager),
            Some(tls) => Manager::from_config(config.clone(), tls.clone(), manager),
        };
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(timeout))
            .create_timeout(Some(timeout))
            .recycle_timeout(Some(timeout))
            .build()
            .map_err(|error| StateError::Config { reason: redactor.redact(&error.to_string()) })?;
        let postgres = Postgres {
            pool,
            schema: OnceCell::new(),
            config,
            tls,
            bus: OnceLock::new(),
            fanout,
            stop,
            timeout,
            target: target(url, 5432),
            redactor: Arc::new(redactor),
        };
        match postgres.ready(Instant::now() + timeout).await {
            Ok(()) => {}
            Err(StateError::Unavailable { source, .. }) => tracing::warn!(
                state = %postgres.target,
                "starting without shared state: {source}; operations fail until it can be \
                 reached"
            ),
            Err(error) => return Err(error),
        }
        Ok(postgres)
    }

    pub(crate) async fn get(
        &self,
        deadline: Instant,
        key: &str,
    ) -> Result<Option<Vec<u8>>, StateError> {
        let key = key.to_owned();
        self.run(deadline, move |client| {
            Box::pin(async move {
                let statement = client.prepare_cached(sql::GET).await?;
                let row = client.query_opt(&statement, &[&key]).await?;
                row.map(|row| row.try_get::<_, Vec<u8>>(0)).transpose()
            })
        })
        .await
        .map_err(|failure| self.error(failure))
    }

    pub(crate) async fn put(
        &self,
        deadline: Instant,
        key: &str,
        value: &[u8],
        ttl: Duration,
    ) -> Result<(), StateError> {
        let (key, value, seconds) = (key.to_owned(), value.to_vec(), ttl.as_secs_f64());
        self.run(deadline, move |client| {
            Box::pin(async move {
                let statement = client.prepare_cached(sql::PUT.as_str()).await?;
                let pruned = sql::PRUNED_PER_WRITE;
                client.execute(&statement, &[&key, &value, &seconds, &pruned]).await.map(|_| ())
            })
        })
        .await
        .map_err(|failure| self.error(failure))
    }

    pub(crate) async fn put_new(
        &self,
        deadline: Instant,
        key: &str,
        value: &[u8],
        ttl: Duration,
    ) -> Result<bool, StateError> {
        let (key, value, seconds) = (key.to_owned(), value.to_vec(), ttl.as_secs_f64());
        self.run(deadline, move |client| {
            Box::pin(async move {
                let statement = client.prepare_cached(sql::PUT_NEW.as_str()).await?;
                let pruned = sql::PRUNED_PER_WRITE;
                let row = client.query_opt(&statement, &[&key, &value, &seconds, &pruned]).await?;
                Ok(row.is_some())
            })
        })
        .await
        .map_err(|failure| self.error(failure))
    }

    pub(crate) async fn take(
        &self,
        deadline: Instant,
        key: &str,
    ) -> Result<Option<Vec<u8>>, StateError> {
        let key = key.to_owned();
        self.run(deadline, move |client| {
            Box::pin(async move {
                let statement = client.prepare_cached(sql::TAKE).await?;
                let row = client.query_opt(&statement, &[&key]).await?;
                row.map(|row| row.try_get::<_, Vec<u8>>(0)).transpose()
            })
        })
        .await
        .map_err(|failure| self.error(failure))
    }

    pub(crate) async fn delete(&self, deadline: Instant, key: &str) -> Result<bool, StateError> {
        let key = key.to_owned();
        self.run(deadline, move |client| {
            Box::pin(async move {
                let statement = client.prepare_cached(sql::DELETE).await?;
                let row = client.query_opt(&statement, &[&key]).await?;
                row.map_or(Ok(false), |row| row.try_get::<_, bool>(0))
            })
        })
        .await
        .map_err(|failure| self.error(failure))
    }

    pub(crate) async fn scan(
        &self,
        deadline: Instant,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<(String, Vec<u8>)>, StateError> {
        let pattern = format!("{}%", sql::like_escaped(prefix));
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.run(deadline, move |client| {
            Box::pin(async move {
                let statement = client.prepare_cached(sql::SCAN).await?;
                let rows = client.query(&statement, &[&pattern, &limit]).await?;
                rows.iter().map(|row| Ok((row.try_get(0)?, row.try_get(1)?))).collect()
            })
        })
        .await
        .map_err(|failure| self.error(failure))
    }

    pub(crate) async fn incr(
        &self,
        deadline: Instant,
        key: &str,
        by: i64,
        ttl: Duration,
    ) -> Result<i64, StateError> {
        let (owned, seconds) = (key.to_owned(), ttl.as_secs_f64());
        let done = self
            .run(deadline, move |client| {
                Box::pin(async move {
                    let statement = client.prepare_cached(sql::INCR.as_str()).await?;
                    let pruned = sql::PRUNED_PER_WRITE;
                    let row =
                        client.query_one(&statement, &[&owned, &by, &seconds, &pruned]).await?;
                    row.try_get::<_, i64>(0)
                })
            })
            .await;
        done.map_err(|failure| {
            let reason = match &failure {
                Failure::Database(error) => error.code().and_then(counter_refusal),
                Failure::Unreachable(_) | Failure::Schema(_) => None,
            };
            match reason {
                Some(reason) => StateError::NotACounter {
                    key: shown(key.strip_prefix(KEY_PREFIX).unwrap_or(key)),
                    reason,
                },
                None => self.error(failure),
            }
        })
    }

    pub(crate) async fn publish(
        &self,
        deadline: Instant,
        channel: &str,
        payload: &[u8],
    ) -> Result<(), StateError> {
        let text =
            format!("{channel}\n{}", base64::engine::general_purpose::STANDARD.encode(payload));
        self.run(deadline, move |client| {
            Box::pin(async move {
                let statement = client.prepare_cached(sql::PUBLISH.as_str()).await?;
                client.execute(&statement, &[&text]).await.map(|_| ())
            })
        })
        .await
        .map_err(|failure| self.error(failure))
    }

    /// Starts the bus if it is not running yet, and waits until it listens (by `deadline`).
    pub(crate) async fn listening(&self, deadline: Instant) -> Result<(), StateError> {
        let mut live = self
            .bus
            .get_or_init(|| {
                bus::spawn(bus::Bus {
                    config: self.config.clone(),
                    tls: self.tls.clone(),
                    fanout: self.fanout.clone(),
                    stop: self.stop.clone(),
                    timeout: self.timeout,
                    target: self.target.clone(),
                    redactor: self.redactor.clone(),
                })
            })
            .clone();
        match timeout_at(deadline, live.wait_for(|live| *live)).await {
            Ok(Ok(_)) => Ok(()),
            _ => Err(StateError::Unavailable {
                backend: BACKEND,
                source: Cause::new(format!(
                    "the message bus is not connected to {} yet",
                    self.target
                )),
            }),
        }
    }

    pub(crate) fn target(&self) -> &str {
        &self.target
    }

    /// `work` once the table exists, by `deadline`.
    async fn run<'s, T>(
        &'s self,
        deadline: Instant,
        work: impl for<'c> FnOnce(&'c mut Object) -> BoxFuture<'c, Result<T, tokio_postgres::Error>>
        + 's,
    ) -> Result<T, Failure> {
        self.ready(deadline).await.map_err(Failure::Schema)?;
        self.with(deadline, work).await
    }

    /// Makes the table once, by `deadline` (until that succeeds, every operation tries again,
    /// one at a time).
    async fn ready(&self, deadline: Instant) -> Result<(), StateError> {
        let made = self.schema.get_or_try_init(|| async {
            self.with(deadline, |client| {
                Box::pin(async move { client.batch_execute(&sql::SCHEMA).await })
            })
            .await
        });
        match timeout_at(deadline, made).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(failure)) => Err(self.error(failure)),
            Err(_) => Err(self.error(Failure::Unreachable(self.late()))),
        }
    }

    /// `work` on a pooled connection, all by `deadline`.
    async fn with<'s, T>(
        &'s self,
        deadline: Instant,
        work: impl for<'c> FnOnce(&'c mut Object) -> BoxFuture<'c, Result<T, tokio_postgres::Error>>
        + 's,
    ) -> Result<T, Failure> {
        let mut client = match timeout_at(deadline, self.pool.get()).await {
            Err(_) | Ok(Err(deadpool_postgres::PoolError::Timeout(_))) => {
                return Err(Failure::Unreachable(self.late()));
            }
            Ok(Err(deadpool_postgres::PoolError::Backend(error))) => {
                return Err(Failure::Database(error));
            }
            Ok(Err(error)) => return Err(Failure::Unreachable(error.to_string())),
            Ok(Ok(client)) => client,
        };
        match timeout_at(deadline, work(&mut client)).await {
            Ok(done) => done.map_err(Failure::Database),
            Err(_) => {
                // Its statement may still be running: not for the next operation.
                drop(Object::take(client));
                Err(Failure::Unreachable(self.late()))
            }
        }
    }

    fn late(&self) -> String {
        format!("no answer within {:?}", self.timeout)
    }

    /// The database's error ([`StateError::Failed`]: it works, this statement did not), or the
    /// connection's ([`StateError::Unavailable`]: it cannot be reached, or is shutting down).
    fn error(&self, failure: Failure) -> StateError {
        let (why, reachable) = match failure {
            Failure::Schema(error) => return error,
            Failure::Unreachable(why) => (why, false),
            Failure::Database(error) => (
                toolgate_core::ErrorChain(&error).to_string(),
                error.code().is_some_and(|code| !unavailable(code)),
            ),
        };
        let source = Cause::new(format!("{}: {}", self.target, self.redactor.redact(&why)));
        if reachable {
            StateError::Failed { backend: BACKEND, source }
        } else {
            StateError::Unavailable { backend: BACKEND, source }
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

/// How `incr`'s statement refused a key, if it did.
fn counter_refusal(code: &SqlState) -> Option<&'static str> {
    if *code == SqlState::NUMERIC_VALUE_OUT_OF_RANGE {
        Some("the increment would overflow")
    } else if *code == SqlState::INVALID_TEXT_REPRESENTATION
        || *code == SqlState::CHARACTER_NOT_IN_REPERTOIRE
    {
        Some("holds a value that is not a decimal integer")
    } else {
        None
    }
}
