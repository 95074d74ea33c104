//! What replicas of one gateway share: keys that expire, counters, and a message bus, in an
//! existing engine that `[state] backend` names: this process's memory (the default), Redis,
//! or PostgreSQL.
//!
//! [`SharedState`] is the one handle (cheap to clone). Its operations mean the same on every
//! backend, and the bounds (the `MAX_*` constants) are the same too:
//!
//! - [`get`](SharedState::get), [`put`](SharedState::put), [`delete`](SharedState::delete);
//!   [`put_new`](SharedState::put_new) writes only a missing key (a claim, a decision made
//!   once), and [`take`](SharedState::take) reads and removes at once (a decision consumed
//!   exactly once, by one replica of many);
//! - [`scan`](SharedState::scan) lists the live entries under a key prefix (what every
//!   replica holds, at most [`MAX_SCAN`] of them);
//! - [`incr`](SharedState::incr) is a counter that expires (a fixed-window rate limit across
//!   replicas: the window starts when the key is made);
//! - [`publish`](SharedState::publish) and [`subscribe`](SharedState::subscribe): every
//!   subscriber on every replica gets each message published after it subscribed. The bus is
//!   for wake-ups: messages published while the backend is down are lost, and subscriptions
//!   come back by themselves when it returns. The truth is in the keys.
//!
//! Every key expires (a TTL is required, at most [`MAX_TTL`]); values are at most
//! [`MAX_VALUE_BYTES`] and messages [`MAX_PAYLOAD_BYTES`]; keys live under [`KEY_PREFIX`]. Each
//! operation is bounded by the state's timeout (2 s unless [`Builder::timeout`] says), so that
//! a backend that cannot be reached fails the operation fast, with
//! [`StateError::Unavailable`]; the same `SharedState` works again when the backend is back.
//! No error or log line holds the backend URL's password.
//!
//! This crate knows nothing of the gateway: what the keys mean is its callers'.

mod error;
mod fanout;
mod limits;
mod memory;
mod postgres;
mod redact;
mod redis;
mod tls;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::time::{Instant, timeout_at};
use tokio_util::sync::{CancellationToken, DropGuard};
use toolgate_config::{StateBackend, StateConfig};

pub use error::{Cause, StateError};
pub use fanout::{SUBSCRIBER_BACKLOG, Subscription};
pub use limits::{
    KEY_PREFIX, MAX_CHANNEL_BYTES, MAX_KEY_BYTES, MAX_PAYLOAD_BYTES, MAX_SCAN, MAX_TTL,
    MAX_VALUE_BYTES,
};

use crate::fanout::Fanout;
use crate::limits::{check_channel, check_key, check_payload, check_ttl, check_value};

/// The bound on each operation unless [`Builder::timeout`] sets another.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

/// The state replicas share, on the backend `[state]` names. Clones share one connection
/// (pool) and one bus; the bus stops when the last clone is dropped, and its subscriptions end.
#[derive(Clone)]
pub struct SharedState {
    inner: Arc<Inner>,
}

struct Inner {
    backend: Backend,
    timeout: Duration,
    fanout: Arc<Fanout>,
    /// Stops the bus's task when the state goes.
    _stop: DropGuard,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.fanout.close();
    }
}

enum Backend {
    Memory(memory::Memory),
    Redis(redis::Redis),
    Postgres(postgres::Postgres),
}

/// How to connect: [`SharedState::builder`].
#[derive(Debug)]
pub struct Builder<'a> {
    config: &'a StateConfig,
    timeout: Duration,
}

impl Builder<'_> {
    /// The bound on each operation, and on connecting (default [`DEFAULT_TIMEOUT`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Connects as [`SharedState::connect`] does.
    pub async fn connect(self) -> Result<SharedState, StateError> {
        let fanout = Fanout::new();
        let stop = CancellationToken::new();
        let backend = match &self.config.backend {
            StateBackend::Memory => Backend::Memory(memory::Memory::default()),
            StateBackend::Redis(url) => Backend::Redis(
                redis::Redis::connect(url.expose(), self.timeout, fanout.clone(), stop.clone())
                    .await?,
            ),
            StateBackend::Postgres(url) => Backend::Postgres(
                postgres::Postgres::connect(
                    url.expose(),
                    self.timeout,
                    fanout.clone(),
                    stop.clone(),
                )
                .await?,
            ),
        };
        Ok(SharedState {
            inner: Arc::new(Inner {
                backend,
                timeout: self.timeout,
                fanout,
                _stop: stop.drop_guard(),
            }),
        })
    }
}

impl SharedState {
    /// The state `config` names, connected within [`DEFAULT_TIMEOUT`]. A Redis or PostgreSQL
    /// backend that cannot be reached now is a warning, not an error: operations fail with
    /// [`StateError::Unavailable`] until it can. One that refuses us (a wrong password) is an
    /// error, and so is a URL that cannot be used.
    pub async fn connect(config: &StateConfig) -> Result<SharedState, StateError> {
        SharedState::builder(config).connect().await
    }

    /// A [`Builder`], to set the timeout before connecting.
    pub fn builder(config: &StateConfig) -> Builder<'_> {
        Builder { config, timeout: DEFAULT_TIMEOUT }
    }

    /// State in this process's memory, shared with nobody.
    pub fn memory() -> SharedState {
        let stop = CancellationToken::new();
        SharedState {
            inner: Arc::new(Inner {
                backend: Backend::Memory(memory::Memory::default()),
                timeout: DEFAULT_TIMEOUT,
                fanout: Fanout::new(),
                _stop: stop.drop_guard(),
            }),
        }
    }

    /// `memory`, `redis` or `postgres`.
    pub fn backend(&self) -> &'static str {
        match &self.inner.backend {
            Backend::Memory(_) => "memory",
            Backend::Redis(_) => "redis",
            Backend::Postgres(_) => "postgres",
        }
    }

    /// Where the state lives, for logs: `memory`, or the URL without its password and query.
    pub fn target(&self) -> &str {
        match &self.inner.backend {
            Backend::Memory(_) => "memory",
            Backend::Redis(redis) => redis.target(),
            Backend::Postgres(postgres) => postgres.target(),
        }
    }

    /// The bound on each operation.
    pub fn timeout(&self) -> Duration {
        self.inner.timeout
    }

    /// `key`'s value, unless it is missing or expired.
    pub async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StateError> {
        check_key(key)?;
        let key = stored(key);
        let deadline = self.deadline();
        match &self.inner.backend {
            Backend::Memory(memory) => Ok(memory.get(&key)),
            Backend::Redis(redis) => self.bounded(deadline, redis.get(deadline, &key)).await,
            Backend::Postgres(pg) => self.bounded(deadline, pg.get(deadline, &key)).await,
        }
    }

    /// Writes `key`, replacing what it held, to expire after `ttl`.
    pub async fn put(&self, key: &str, value: &[u8], ttl: Duration) -> Result<(), StateError> {
        check_write(key, value, ttl)?;
        let key = stored(key);
        let deadline = self.deadline();
        match &self.inner.backend {
            Backend::Memory(memory) => {
                memory.put(&key, value, ttl);
                Ok(())
            }
            Backend::Redis(redis) => {
                self.bounded(deadline, redis.put(deadline, &key, value, ttl)).await
            }
            Backend::Postgres(pg) => {
                self.bounded(deadline, pg.put(deadline, &key, value, ttl)).await
            }
        }
    }

    /// Writes `key` only if it is missing (or expired): whether it did. Of replicas writing
    /// the same key at once, one does.
    pub async fn put_new(
        &self,
        key: &str,
        value: &[u8],
        ttl: Duration,
    ) -> Result<bool, StateError> {
        check_write(key, value, ttl)?;
        let key = stored(key);
        let deadline = self.deadline();
        match &self.inner.backend {
            Backend::Memory(memory) => Ok(memory.put_new(&key, value, ttl)),
            Backend::Redis(redis) => {
                self.bounded(deadline, redis.put_new(deadline, &key, value, ttl)).await
            }
            Backend::Postgres(pg) => {
                self.bounded(deadline, pg.put_new(deadline, &key, value, ttl)).await
            }
        }
    }

    /// Reads and removes `key` at once: of replicas taking the same key, one gets its value.
    pub async fn take(&self, key: &str) -> Result<Option<Vec<u8>>, StateError> {
        check_key(key)?;
        let key = stored(key);
        let deadline = self.deadline();
        match &self.inner.backend {
            Backend::Memory(memory) => Ok(memory.take(&key)),
            Backend::Redis(redis) => self.bounded(deadline, redis.take(deadline, &key)).await,
            Backend::Postgres(pg) => self.bounded(deadline, pg.take(deadline, &key)).await,
        }
    }

    /// Removes `key`: whether it held a value that had not expired.
    pub async fn delete(&self, key: &str) -> Result<bool, StateError> {
        check_key(key)?;
        let key = stored(key);
        let deadline = self.deadline();
        match &self.inner.backend {
            Backend::Memory(memory) => Ok(memory.delete(&key)),
            Backend::Redis(redis) => self.bounded(deadline, redis.delete(deadline, &key)).await,
            Backend::Postgres(pg) => self.bounded(deadline, pg.delete(deadline, &key)).await,
        }
    }

    /// The live (unexpired) entries whose key starts with `prefix`, at most `limit` of them
    /// (and never more than [`MAX_SCAN`]), in no particular order. The prefix is checked as a
    /// key is (so it is not empty) and taken literally: no character in it is a pattern.
    ///
    /// It is not a snapshot: an entry written, removed or expiring while it runs may be listed
    /// or not. On Redis it walks the whole keyspace (`SCAN`), so it takes time with every key
    /// stored, not only those listed; like every operation, it fails with
    /// [`StateError::Unavailable`] when it cannot finish within the timeout.
    pub async fn scan(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<(String, Vec<u8>)>, StateError> {
        check_key(prefix)?;
        let limit = limit.min(MAX_SCAN);
        if limit == 0 {
            return Ok(Vec::new());
        }
        let prefix = stored(prefix);
        let deadline = self.deadline();
        let found = match &self.inner.backend {
            Backend::Memory(memory) => memory.scan(&prefix, limit),
            Backend::Redis(redis) => {
                self.bounded(deadline, redis.scan(deadline, &prefix, limit)).await?
            }
            Backend::Postgres(pg) => {
                self.bounded(deadline, pg.scan(deadline, &prefix, limit)).await?
            }
        };
        Ok(found
            .into_iter()
            .filter_map(|(key, value)| Some((key.strip_prefix(KEY_PREFIX)?.to_owned(), value)))
            .collect())
    }

    /// Adds `by` to the counter at `key` and returns the sum. A missing (or expired) counter
    /// is made, as 0, to expire after `ttl`; an existing one keeps its expiry, so a counter is
    /// a fixed window that starts with its first increment. The counter's value is its decimal
    /// text ([`get`](SharedState::get) reads `b"3"`); a value that is not one is refused
    /// ([`StateError::NotACounter`]), as is a sum past `i64`'s range.
    pub async fn incr(&self, key: &str, by: i64, ttl: Duration) -> Result<i64, StateError> {
        check_key(key)?;
        check_ttl(key, ttl)?;
        let key = stored(key);
        let deadline = self.deadline();
        match &self.inner.backend {
            Backend::Memory(memory) => memory.incr(&key, by, ttl),
            Backend::Redis(redis) => {
                self.bounded(deadline, redis.incr(deadline, &key, by, ttl)).await
            }
            Backend::Postgres(pg) => self.bounded(deadline, pg.incr(deadline, &key, by, ttl)).await,
        }
    }

    /// Sends `payload` to every subscriber of `channel` on every replica (this one too).
    /// Done means the backend took it, not that anyone received it.
    pub async fn publish(&self, channel: &str, payload: &[u8]) -> Result<(), StateError> {
        check_channel(channel)?;
        check_payload(channel, payload)?;
        let deadline = self.deadline();
        match &self.inner.backend {
            Backend::Memory(_) => {
                self.inner.fanout.deliver(channel, Bytes::copy_from_slice(payload));
                Ok(())
            }
            Backend::Redis(redis) => {
                self.bounded(deadline, redis.publish(deadline, channel, payload)).await
            }
            Backend::Postgres(pg) => {
                self.bounded(deadline, pg.publish(deadline, channel, payload)).await
            }
        }
    }

    /// Receives what is published to `channel` on any replica from when this returns. The
    /// first subscription starts this replica's listener, and waits until it listens (within
    /// the timeout, else [`StateError::Unavailable`]); after that, a subscription outlives any
    /// outage of the backend, missing what was published during it.
    pub async fn subscribe(&self, channel: &str) -> Result<Subscription, StateError> {
        check_channel(channel)?;
        let subscription = self.inner.fanout.subscribe(channel);
        let deadline = self.deadline();
        match &self.inner.backend {
            Backend::Memory(_) => {}
            Backend::Redis(redis) => redis.listening(deadline).await?,
            Backend::Postgres(pg) => pg.listening(deadline).await?,
        }
        Ok(subscription)
    }

    fn deadline(&self) -> Instant {
        Instant::now() + self.inner.timeout
    }

    /// `operation` by `deadline` (the backends watch it too; this is the last word).
    async fn bounded<T>(
        &self,
        deadline: Instant,
        operation: impl Future<Output = Result<T, StateError>>,
    ) -> Result<T, StateError> {
        match timeout_at(deadline, operation).await {
            Ok(done) => done,
            Err(_) => Err(StateError::Unavailable {
                backend: self.backend(),
                source: Cause::new(format!(
                    "{}: no answer within {:?}",
                    self.target(),
                    self.inner.timeout
                )),
            }),
        }
    }
}

impl std::fmt::Debug for SharedState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedState")
            .field("target", &self.target())
            .field("timeout", &self.inner.timeout)
            .finish()
    }
}

/// A key as every backend stores it.
fn stored(key: &str) -> String {
    format!("{KEY_PREFIX}{key}")
}

fn check_write(key: &str, value: &[u8], ttl: Duration) -> Result<(), StateError> {
    check_key(key)?;
    check_ttl(key, ttl)?;
    check_value(key, value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send<T: Send>(_: &T) {}

    #[test]
    fn the_state_and_its_futures_can_cross_threads() {
        fn shared<T: Send + Sync + Clone + 'static>() {}
        shared::<SharedState>();
        let state = SharedState::memory();
        send(&state.get("k"));
        send(&state.put("k", b"v", MAX_TTL));
        send(&state.put_new("k", b"v", MAX_TTL));
        send(&state.take("k"));
        send(&state.delete("k"));
        send(&state.scan("k", 1));
        send(&state.incr("k", 1, MAX_TTL));
        send(&state.publish("c", b"m"));
        send(&state.subscribe("c"));
    }

    #[tokio::test]
    async fn a_scan_returns_at_most_max_scan_entries() {
        let state = SharedState::memory();
        for n in 0..=MAX_SCAN {
            state.put(&format!("many:{n}"), b"v", MAX_TTL).await.unwrap();
        }
        state.put("other", b"v", MAX_TTL).await.unwrap();
        assert_eq!(state.scan("many:", usize::MAX).await.unwrap().len(), MAX_SCAN);
        assert_eq!(state.scan("many:", 3).await.unwrap().len(), 3);
        assert_eq!(state.scan("many:", 0).await.unwrap(), []);
    }
}
