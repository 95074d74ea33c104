//! The Redis backend (Redis 6.2 or later, or a server that speaks as one): the `redis` crate's
//! connection manager for commands, and a connection of the bus's own for pub/sub (`bus.rs`).
//!
//! Commands go over one multiplexed connection, which the manager makes again when it drops:
//! it speaks RESP3, so the manager notices the server go and reconnects on its own, rather than
//! by failing the next command on the dead connection. A connection is tried once per command, never
//! retried with a backoff inside one, so a command while the server is down fails at once
//! (connection refused) or at the operation's timeout. A command that found the manager's last
//! attempt refused is tried once more on a fresh one: it was never sent, so that is safe even
//! for `take` and `incr`, and it makes the first command after an outage succeed.
//!
//! `take` is `GETDEL`; `scan` is `SCAN MATCH` (the prefix's glob characters escaped), each
//! batch of keys it finds read with one `MGET`; `put_new` is `SET NX PX`; `incr` is a transaction (`MULTI`) that makes
//! the counter with its expiry (`SET NX PX`) and adds to it (`INCRBY`). Not a Lua script: Lua's
//! numbers are doubles, and a counter past 2^53 would come back wrong.

mod bus;

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, ErrorKind, ProtocolVersion, RedisError, ServerErrorKind};
use tokio::sync::watch;
use tokio::time::{Instant, timeout_at};
use tokio_util::sync::CancellationToken;

use crate::error::Cause;
use crate::fanout::{Fanout, frame};
use crate::limits::millis;
use crate::redact::{Redactor, target};
use crate::{KEY_PREFIX, StateError};

const BACKEND: &str = "redis";

/// The Redis channel every replica's bus listens on.
const BUS_CHANNEL: &str = "toolgate:bus";

/// The keys `SCAN` looks at per call (a hint to the server); each call's matches are read with
/// one `MGET`.
const SCAN_COUNT: usize = 1000;

/// The Redis backend.
pub(crate) struct Redis {
    manager: ConnectionManager,
    /// For the bus's own connection (RESP2: subscribed, it is only a subscriber).
    bus_client: Client,
    /// The bus's state, once something subscribed: whether it listens now.
    bus: OnceLock<watch::Receiver<bool>>,
    fanout: Arc<Fanout>,
    stop: CancellationToken,
    timeout: Duration,
    target: String,
    redactor: Arc<Redactor>,
}

impl Redis {
    /// The client for `url` (`redis://` or `rediss://`), and one `PING` by `timeout`: a server
    /// that cannot be reached is a warning (commands fail until it can), one that refuses us
    /// (a wrong password) an error.
    pub(crate) async fn connect(
        url: &str,
        timeout: Duration,
        fanout: Arc<Fanout>,
        stop: CancellationToken,
    ) -> Result<Redis, StateError> {
        let redactor = Arc::new(Redactor::of(url));
        let config_error = |error: &RedisError| StateError::Config {
            reason: redactor.redact(&toolgate_core::ErrorChain(error).to_string()),
        };
        if url.starts_with("rediss:") {
            crate::tls::install_provider();
        }
        let bus_client = Client::open(url).map_err(|error| config_error(&error))?;
        let info = bus_client.get_connection_info().clone();
        let settings = info.redis_settings().clone().set_protocol(ProtocolVersion::RESP3);
        let client = Client::open(info.set_redis_settings(settings))
            .map_err(|error| config_error(&error))?;
        let config = ConnectionManagerConfig::new()
            .set_number_of_retries(0)
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout));
        let manager = ConnectionManager::new_lazy_with_config(client, config)
            .map_err(|error| config_error(&error))?;
        let redis = Redis {
            manager,
            bus_client,
            bus: OnceLock::new(),
            fanout,
            stop,
            timeout,
            target: target(url, 6379),
            redactor,
        };
        let deadline = Instant::now() + timeout;
        match redis.query::<String>(deadline, &redis::cmd("PING")).await {
            Ok(_) => {}
            Err(StateError::Unavailable { source, .. }) => tracing::warn!(
                state = %redis.target,
                "starting without shared state: {source}; operations fail until it can be \
                 reached"
            ),
            Err(error) => return Err(error),
        }
        Ok(redis)
    }

    pub(crate) async fn get(
        &self,
        deadline: Instant,
        key: &str,
    ) -> Result<Option<Vec<u8>>, StateError> {
        self.query(deadline, redis::cmd("GET").arg(key)).await
    }

    pub(crate) async fn put(
        &self,
        deadline: Instant,
        key: &str,
        value: &[u8],
        ttl: Duration,
    ) -> Result<(), StateError> {
        let mut set = redis::cmd("SET");
        set.arg(key).arg(value).arg("PX").arg(millis(ttl));
        self.query::<()>(deadline, &set).await
    }

    pub(crate) async fn put_new(
        &self,
        deadline: Instant,
        key: &str,
        value: &[u8],
        ttl: Duration,
    ) -> Result<bool, StateError> {
        let mut set = redis::cmd("SET");
        set.arg(key).arg(value).arg("PX").arg(millis(ttl)).arg("NX");
        let done: Option<String> = self.query(deadline, &set).await?;
        Ok(done.is_some())
    }

    pub(crate) async fn take(
        &self,
        deadline: Instant,
        key: &str,
    ) -> Result<Option<Vec<u8>>, StateError> {
        self.query(deadline, redis::cmd("GETDEL").arg(key)).await
    }

    pub(crate) async fn delete(&self, deadline: Instant, key: &str) -> Result<bool, StateError> {
        let deleted: i64 = self.query(deadline, redis::cmd("DEL").arg(key)).await?;
        Ok(deleted > 0)
    }

    /// Up to `limit` live entries whose key starts with `prefix`: `SCAN` until the cursor comes
    /// back to 0 or `limit` are found, all by `deadline`. A key that expired (or was removed)
    /// between its `SCAN` and its `MGET` is skipped; one `SCAN` returned twice is listed once.
    pub(crate) async fn scan(
        &self,
        deadline: Instant,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<(String, Vec<u8>)>, StateError> {
        let pattern = format!("{}*", glob_escaped(prefix));
        let mut found = Vec::new();
        let mut listed = HashSet::new();
        let mut cursor = 0u64;
        loop {
            let mut scan = redis::cmd("SCAN");
            scan.arg(cursor).arg("MATCH").arg(&pattern).arg("COUNT").arg(SCAN_COUNT);
            let (next, keys): (u64, Vec<Vec<u8>>) = self.query(deadline, &scan).await?;
            // Every key we write is text; one that is not is no one's here.
            let keys: Vec<String> =
                keys.into_iter().filter_map(|key| String::from_utf8(key).ok()).collect();
            if !keys.is_empty() {
                let values: Vec<Option<Vec<u8>>> =
                    self.query(deadline, redis::cmd("MGET").arg(&keys)).await?;
                for (key, value) in keys.into_iter().zip(values) {
                    if found.len() == limit {
                        break;
                    }
                    if let Some(value) = value
                        && listed.insert(key.clone())
                    {
                        found.push((key, value));
                    }
                }
            }
            if found.len() == limit || next == 0 {
                return Ok(found);
            }
            cursor = next;
        }
    }

    pub(crate) async fn incr(
        &self,
        deadline: Instant,
        key: &str,
        by: i64,
        ttl: Duration,
    ) -> Result<i64, StateError> {
        // Made with its expiry if missing, then added to; one step for the server, so a counter
        // never lives without its TTL.
        let mut transaction = redis::pipe();
        transaction.atomic();
        transaction.cmd("SET").arg(key).arg(0).arg("PX").arg(millis(ttl)).arg("NX").ignore();
        transaction.cmd("INCRBY").arg(key).arg(by);
        let run = |mut connection: ConnectionManager| {
            let transaction = &transaction;
            async move {
                let (n,): (i64,) = transaction.query_async(&mut connection).await?;
                Ok(n)
            }
        };
        self.run(deadline, run).await.map_err(|error| match error {
            Refusal::Server(error) if counter_refusal(&error).is_some() => {
                StateError::NotACounter {
                    key: crate::error::shown(key.strip_prefix(KEY_PREFIX).unwrap_or(key)),
                    reason: counter_refusal(&error).unwrap_or_default(),
                }
            }
            other => self.error(other),
        })
    }

    pub(crate) async fn publish(
        &self,
        deadline: Instant,
        channel: &str,
        payload: &[u8],
    ) -> Result<(), StateError> {
        let framed = frame(channel, payload);
        let _receivers: i64 =
            self.query(deadline, redis::cmd("PUBLISH").arg(BUS_CHANNEL).arg(framed)).await?;
        Ok(())
    }

    /// Starts the bus if it is not running yet, and waits until it listens (by `deadline`).
    pub(crate) async fn listening(&self, deadline: Instant) -> Result<(), StateError> {
        let mut live = self
            .bus
            .get_or_init(|| {
                bus::spawn(bus::Bus {
                    client: self.bus_client.clone(),
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

    /// One command, by `deadline`.
    async fn query<T: redis::FromRedisValue>(
        &self,
        deadline: Instant,
        command: &redis::Cmd,
    ) -> Result<T, StateError> {
        let run = |mut connection: ConnectionManager| async move {
            command.query_async::<T>(&mut connection).await
        };
        self.run(deadline, run).await.map_err(|error| self.error(error))
    }

    /// `work` on the managed connection by `deadline`, and once more if the connection it
    /// found had been refused (the command was not sent).
    async fn run<T, F, Fut>(&self, deadline: Instant, work: F) -> Result<T, Refusal>
    where
        F: Fn(ConnectionManager) -> Fut,
        Fut: Future<Output = Result<T, RedisError>>,
    {
        let attempt = async {
            match work(self.manager.clone()).await {
                Err(error) if error.is_connection_refusal() => work(self.manager.clone()).await,
                done => done,
            }
        };
        match timeout_at(deadline, attempt).await {
            Ok(Ok(done)) => Ok(done),
            Ok(Err(error)) => Err(Refusal::Server(error)),
            Err(_) => Err(Refusal::Late),
        }
    }

    fn error(&self, refusal: Refusal) -> StateError {
        let error = match refusal {
            Refusal::Late => {
                return StateError::Unavailable {
                    backend: BACKEND,
                    source: Cause::new(format!(
                        "{} did not answer within {:?}",
                        self.target, self.timeout
                    )),
                };
            }
            Refusal::Server(error) => error,
        };
        let source = Cause::new(format!(
            "{}: {}",
            self.target,
            self.redactor.redact(&toolgate_core::ErrorChain(&error).to_string())
        ));
        if unavailable(&error) {
            StateError::Unavailable { backend: BACKEND, source }
        } else {
            StateError::Failed { backend: BACKEND, source }
        }
    }
}

/// Why a command did not succeed.
enum Refusal {
    /// Not by the deadline.
    Late,
    Server(RedisError),
}

/// Whether the server cannot be reached or cannot serve now (as opposed to refusing us).
pub(crate) fn unavailable(error: &RedisError) -> bool {
    error.is_io_error()
        || error.is_timeout()
        || error.is_connection_dropped()
        || matches!(
            error.kind(),
            ErrorKind::Server(
                ServerErrorKind::BusyLoading
                    | ServerErrorKind::TryAgain
                    | ServerErrorKind::MasterDown
                    | ServerErrorKind::ClusterDown
            )
        )
}

/// `text` matched literally by a glob pattern (`SCAN MATCH`): its `*`, `?`, `[`, `]` and `\`
/// escaped with a `\`.
fn glob_escaped(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// How `INCRBY` refused a key, if it did: its value is not an integer, or would overflow.
fn counter_refusal(error: &RedisError) -> Option<&'static str> {
    let text = error.to_string();
    if text.contains("would overflow") {
        Some("the increment would overflow")
    } else if text.contains("not an integer") {
        Some("holds a value that is not a decimal integer")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_glob_pattern_escapes_its_metacharacters() {
        assert_eq!(glob_escaped("toolgate:approval:"), "toolgate:approval:");
        assert_eq!(glob_escaped(r"a*b?c[d]e\f^g-h"), r"a\*b\?c\[d\]e\\f^g-h");
    }
}
