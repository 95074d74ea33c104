//! The pool under the dynamic servers: connections by key, at most `max_connections` of them
//! (the least recently used is closed to make room), each closed once unused for
//! `idle_timeout` (a task of the pool's own, on tokio's clock, wakes for the next deadline).
//!
//! It is generic over what it holds, so that its rules are tested here without a network.
//! Two requests that miss on the same key at once make one connection: the second waits for
//! the first's. A connection found dead is replaced. A connection some request is using now is
//! not closed for being idle, and is closed to make room only when every other one is in use too.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tokio::sync::{Notify, OnceCell};
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};

/// How many dynamic servers are kept connected, and for how long unused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolSettings {
    /// The most connections open at once, across every caller (at least 1): the least
    /// recently used is closed to make room for a new one.
    pub max_connections: usize,
    /// How long a connection nobody uses stays open.
    pub idle_timeout: Duration,
}

impl Default for PoolSettings {
    fn default() -> Self {
        PoolSettings { max_connections: 200, idle_timeout: Duration::from_secs(5 * 60) }
    }
}

/// What the pool holds and has done since the gateway started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PoolStats {
    /// Connections open now.
    pub size: usize,
    /// Requests served by a connection already open (or being opened for another request).
    pub hits: u64,
    /// Requests that opened a connection (whether or not it connected).
    pub misses: u64,
    /// Connections closed by the pool: the least recently used, the idle, the dead.
    pub evictions: u64,
}

/// Why the pool closes a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Closing {
    /// To make room for another.
    LeastRecentlyUsed,
    /// Unused for `idle_timeout`.
    Idle,
    /// It was found disconnected, and is replaced.
    Dead,
    /// The gateway is shutting down.
    Shutdown,
}

impl Closing {
    /// How events name it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Closing::LeastRecentlyUsed => "least_recently_used",
            Closing::Idle => "idle",
            Closing::Dead => "disconnected",
            Closing::Shutdown => "shutdown",
        }
    }
}

/// What the pool holds.
pub(crate) trait Connection: Clone + Send + Sync + 'static {
    /// Whether it can still serve requests.
    fn is_alive(&self) -> bool;
    /// Ends it (its connection and any task of its own).
    fn close(self, why: Closing) -> impl Future<Output = ()> + Send;
}

/// When a pooled connection was last used, and how many requests use it now.
#[derive(Debug)]
pub(crate) struct Activity {
    used: Mutex<Instant>,
    busy: AtomicUsize,
}

impl Activity {
    fn new() -> Arc<Activity> {
        Arc::new(Activity { used: Mutex::new(Instant::now()), busy: AtomicUsize::new(0) })
    }

    fn touch(&self) {
        *self.used.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    /// Counts one request using the connection until the guard is dropped.
    pub(crate) fn busy(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::SeqCst);
        self.touch();
        Busy(self.clone())
    }

    /// When it was last used; `None` while a request uses it.
    fn idle_since(&self) -> Option<Instant> {
        (self.busy.load(Ordering::SeqCst) == 0)
            .then(|| *self.used.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// One request using a pooled connection (see [`Activity::busy`]).
#[derive(Debug)]
pub(crate) struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.touch();
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One key's connection, or the one being made.
struct Slot<C> {
    cell: Arc<OnceCell<C>>,
    activity: Arc<Activity>,
}

impl<C> Slot<C> {
    fn new() -> Slot<C> {
        Slot { cell: Arc::new(OnceCell::new()), activity: Activity::new() }
    }

    /// Its connection, when it has one and no request uses it, with when it was last used.
    fn closable(&self) -> Option<(&C, Option<Instant>)> {
        Some((self.cell.get()?, self.activity.idle_since()))
    }
}

struct State<K, C> {
    slots: HashMap<K, Slot<C>>,
    settings: PoolSettings,
    hits: u64,
    misses: u64,
    evictions: u64,
    /// Whether the idle sweeper runs (it starts with the first connection).
    sweeping: bool,
}

struct Inner<K, C> {
    state: Mutex<State<K, C>>,
    /// Wakes the sweeper: a connection joined, or the settings changed.
    wake: Arc<Notify>,
    stop: CancellationToken,
}

/// Connections by key; see the module's documentation.
pub(crate) struct Pool<K, C> {
    inner: Arc<Inner<K, C>>,
    /// Stops the sweeper when the pool goes.
    _stop: DropGuard,
}

impl<K, C> std::fmt::Debug for Pool<K, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").finish_non_exhaustive()
    }
}

impl<K, C> Default for Pool<K, C> {
    fn default() -> Self {
        let stop = CancellationToken::new();
        let inner = Arc::new(Inner {
            state: Mutex::new(State {
                slots: HashMap::new(),
                settings: PoolSettings::default(),
                hits: 0,
                misses: 0,
                evictions: 0,
                sweeping: false,
            }),
            wake: Arc::new(Notify::new()),
            stop: stop.clone(),
        });
        Pool { inner, _stop: stop.drop_guard() }
    }
}

impl<K, C> Pool<K, C>
where
    K: Eq + Hash + Clone + Send + 'static,
    C: Connection,
{
    fn state(&self) -> std::sync::MutexGuard<'_, State<K, C>> {
        self.inner.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The connection of `key`: the pooled one, or a new one from `connect` (made once for
    /// requests that miss together). With it, its activity, to count requests that use it.
    pub(crate) async fn get<E>(
        &self,
        key: K,
        connect: impl AsyncFnOnce() -> Result<C, E>,
    ) -> Result<(C, Arc<Activity>), E> {
        let (cell, activity) = {
            let mut state = self.state();
            let mut dead = None;
            if let Some(slot) = state.slots.get(&key)
                && let Some(connection) = slot.cell.get()
            {
                if connection.is_alive() {
                    let found = (connection.clone(), slot.activity.clone());
                    found.1.touch();
                    state.hits += 1;
                    return Ok(found);
                }
                dead = state.slots.remove(&key).and_then(|slot| slot.cell.get().cloned());
                state.evictions += 1;
            }
            if let Some(dead) = dead {
                tokio::spawn(dead.close(Closing::Dead));
            }
            let slot = state.slots.entry(key.clone()).or_insert_with(Slot::new);
            (slot.cell.clone(), slot.activity.clone())
        };
        let mut connected_here = false;
        let outcome = cell
            .get_or_try_init(|| {
                connected_here = true;
                connect()
            })
            .await
            .cloned();
        let mut state = self.state();
        if connected_here {
            state.misses += 1;
        } else if outcome.is_ok() {
            state.hits += 1;
        }
        let ours = state.slots.get(&key).is_some_and(|slot| Arc::ptr_eq(&slot.cell, &cell));
        match outcome {
            Ok(connection) => {
                // A request that waited on another's failed attempt, then made its own, holds
                // a cell the pool let go of: it is pooled again, unless another took its place.
                if !state.slots.contains_key(&key) {
                    let slot = Slot { cell: cell.clone(), activity: activity.clone() };
                    state.slots.insert(key.clone(), slot);
                }
                if connected_here {
                    let closing = make_room(&mut state, Some(&key));
                    self.start_sweeping(&mut state);
                    drop(state);
                    close_all(closing, Closing::LeastRecentlyUsed);
                }
                activity.touch();
                Ok((connection, activity))
            }
            Err(error) => {
                if ours && cell.get().is_none() {
                    state.slots.remove(&key);
                }
                Err(error)
            }
        }
    }

    fn start_sweeping(&self, state: &mut State<K, C>) {
        if !state.sweeping {
            state.sweeping = true;
            let inner = Arc::downgrade(&self.inner);
            let (wake, stop) = (self.inner.wake.clone(), self.inner.stop.clone());
            tokio::spawn(sweep_idle(inner, wake, stop));
        }
        self.inner.wake.notify_one();
    }

    /// Sets the bound and the idle timeout; connections over the new bound are closed now.
    pub(crate) fn set_settings(&self, settings: PoolSettings) {
        let settings =
            PoolSettings { max_connections: settings.max_connections.max(1), ..settings };
        let closing = {
            let mut state = self.state();
            state.settings = settings;
            make_room(&mut state, None)
        };
        close_all(closing, Closing::LeastRecentlyUsed);
        self.inner.wake.notify_one();
    }

    /// The bound and the idle timeout.
    pub(crate) fn settings(&self) -> PoolSettings {
        self.state().settings
    }

    /// Size, hits, misses and evictions.
    pub(crate) fn stats(&self) -> PoolStats {
        let state = self.state();
        PoolStats {
            size: state.slots.values().filter(|slot| slot.cell.initialized()).count(),
            hits: state.hits,
            misses: state.misses,
            evictions: state.evictions,
        }
    }

    /// Closes every connection, and waits until they are closed.
    pub(crate) async fn close_everything(&self) {
        let closing: Vec<C> = {
            let mut state = self.state();
            let slots = std::mem::take(&mut state.slots);
            slots.into_values().filter_map(|slot| slot.cell.get().cloned()).collect()
        };
        futures::future::join_all(closing.into_iter().map(|c| c.close(Closing::Shutdown))).await;
    }
}

impl<K: Eq + Hash, C: Connection> Inner<K, C> {
    /// Closes the connections unused for the idle timeout; returns when the next one would
    /// be, if any is open.
    fn sweep(&self) -> Option<Instant> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let idle = state.settings.idle_timeout;
        let now = Instant::now();
        let mut next: Option<Instant> = None;
        let mut closing = Vec::new();
        state.slots.retain(|_, slot| {
            let Some((connection, since)) = slot.closable() else { return true };
            // One in use is looked at again a whole timeout later.
            let due = since.unwrap_or(now) + idle;
            if since.is_some() && due <= now {
                closing.push(connection.clone());
                return false;
            }
            next = Some(next.map_or(due, |next| next.min(due)));
            true
        });
        state.evictions += closing.len() as u64;
        drop(state);
        close_all(closing, Closing::Idle);
        next
    }
}

/// Closes the least recently used connections (those not in use first) until at most
/// `max_connections` are left or all are being made; never `keep`'s.
fn make_room<K: Eq + Hash + Clone, C: Connection>(
    state: &mut State<K, C>,
    keep: Option<&K>,
) -> Vec<C> {
    let mut closing = Vec::new();
    while state.slots.len() > state.settings.max_connections {
        let victim = state
            .slots
            .iter()
            .filter(|(key, _)| Some(*key) != keep)
            .filter_map(|(key, slot)| {
                let (_, since) = slot.closable()?;
                // Not in use before in use; then the least recently used.
                Some(((since.is_none(), since), key.clone()))
            })
            .min_by(|a, b| a.0.cmp(&b.0))
            .map(|(_, key)| key);
        let Some(victim) = victim else { break };
        if let Some(connection) = state.slots.remove(&victim).and_then(|s| s.cell.get().cloned()) {
            closing.push(connection);
        }
        state.evictions += 1;
    }
    closing
}

fn close_all<C: Connection>(closing: Vec<C>, why: Closing) {
    for connection in closing {
        tokio::spawn(connection.close(why));
    }
}

/// Closes idle connections as they fall due, until the pool goes.
async fn sweep_idle<K: Eq + Hash, C: Connection>(
    inner: Weak<Inner<K, C>>,
    wake: Arc<Notify>,
    stop: CancellationToken,
) {
    loop {
        let Some(next) = inner.upgrade().map(|inner| inner.sweep()) else { return };
        let due = async {
            match next {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = stop.cancelled() => return,
            () = wake.notified() => {}
            () = due => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use tokio::sync::mpsc;

    use super::*;

    /// A connection that reports its closing.
    #[derive(Clone)]
    struct Fake {
        name: &'static str,
        alive: Arc<AtomicBool>,
        closed: mpsc::UnboundedSender<(&'static str, Closing)>,
    }

    impl Connection for Fake {
        fn is_alive(&self) -> bool {
            self.alive.load(Ordering::SeqCst)
        }

        async fn close(self, why: Closing) {
            self.alive.store(false, Ordering::SeqCst);
            let _ = self.closed.send((self.name, why));
        }
    }

    struct Bench {
        pool: Pool<&'static str, Fake>,
        closed: mpsc::UnboundedReceiver<(&'static str, Closing)>,
        sender: mpsc::UnboundedSender<(&'static str, Closing)>,
    }

    impl Bench {
        fn new(max_connections: usize, idle_timeout: Duration) -> Bench {
            let pool = Pool::default();
            pool.set_settings(PoolSettings { max_connections, idle_timeout });
            let (sender, closed) = mpsc::unbounded_channel();
            Bench { pool, closed, sender }
        }

        async fn get(&self, key: &'static str) -> (Fake, Arc<Activity>) {
            let fake = Fake { name: key, alive: Arc::default(), closed: self.sender.clone() };
            fake.alive.store(true, Ordering::SeqCst);
            self.pool.get(key, async || Ok::<_, ()>(fake)).await.expect("connects")
        }
    }

    const HOUR: Duration = Duration::from_secs(3600);

    #[tokio::test(start_paused = true)]
    async fn the_least_recently_used_is_closed_at_the_bound() {
        let mut bench = Bench::new(2, HOUR);
        bench.get("a").await;
        tokio::time::advance(Duration::from_secs(1)).await;
        bench.get("b").await;
        tokio::time::advance(Duration::from_secs(1)).await;
        bench.get("a").await; // a hit: `a` is now the most recently used
        tokio::time::advance(Duration::from_secs(1)).await;
        bench.get("c").await;
        assert_eq!(bench.closed.recv().await, Some(("b", Closing::LeastRecentlyUsed)));
        let stats = bench.pool.stats();
        assert_eq!(stats, PoolStats { size: 2, hits: 1, misses: 3, evictions: 1 });
        bench.get("a").await;
        bench.get("c").await;
        assert_eq!(bench.pool.stats().hits, 3, "a and c are still pooled");
    }

    #[tokio::test(start_paused = true)]
    async fn one_in_use_is_closed_to_make_room_only_after_the_others() {
        let mut bench = Bench::new(2, HOUR);
        let (_, a) = bench.get("a").await;
        let _using_a = a.busy();
        tokio::time::advance(Duration::from_secs(1)).await;
        bench.get("b").await;
        bench.get("c").await;
        assert_eq!(bench.closed.recv().await, Some(("b", Closing::LeastRecentlyUsed)));
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_connection_is_closed_after_the_timeout_and_use_defers_it() {
        let idle = Duration::from_secs(300);
        let mut bench = Bench::new(10, idle);
        let start = Instant::now();
        bench.get("a").await;
        tokio::time::advance(Duration::from_secs(200)).await;
        bench.get("b").await;
        tokio::time::advance(Duration::from_secs(50)).await;
        bench.get("a").await; // used at 250 s: closed at 550 s, not 300 s
        // The paused clock jumps to each timer the sweeper sets.
        assert_eq!(bench.closed.recv().await, Some(("b", Closing::Idle)));
        assert_eq!(start.elapsed(), Duration::from_secs(500));
        assert_eq!(bench.closed.recv().await, Some(("a", Closing::Idle)));
        assert_eq!(start.elapsed(), Duration::from_secs(550));
        let stats = bench.pool.stats();
        assert_eq!(stats, PoolStats { size: 0, hits: 1, misses: 2, evictions: 2 });
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_in_use_is_not_closed_for_idleness() {
        let idle = Duration::from_secs(60);
        let mut bench = Bench::new(10, idle);
        let start = Instant::now();
        let (_, a) = bench.get("a").await;
        let using = a.busy();
        tokio::time::sleep(Duration::from_secs(600)).await;
        assert!(bench.closed.try_recv().is_err(), "in use for ten minutes, still open");
        drop(using);
        assert_eq!(bench.closed.recv().await, Some(("a", Closing::Idle)));
        assert!(start.elapsed() >= Duration::from_secs(660));
    }

    #[tokio::test(start_paused = true)]
    async fn a_dead_connection_is_replaced_and_misses_together_connect_once() {
        let mut bench = Bench::new(10, HOUR);
        let (a, _) = bench.get("a").await;
        a.alive.store(false, Ordering::SeqCst);
        let (again, _) = bench.get("a").await;
        assert!(again.is_alive());
        assert_eq!(bench.closed.recv().await, Some(("a", Closing::Dead)));
        let made = Arc::new(AtomicUsize::new(0));
        let connect = || {
            let made = made.clone();
            let fake =
                Fake { name: "b", alive: Arc::new(true.into()), closed: bench.sender.clone() };
            async move || {
                made.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_secs(1)).await;
                Ok::<_, ()>(fake)
            }
        };
        let (first, second) =
            tokio::join!(bench.pool.get("b", connect()), bench.pool.get("b", connect()));
        assert!(first.is_ok() && second.is_ok());
        assert_eq!(made.load(Ordering::SeqCst), 1, "one connection for both");
        let stats = bench.pool.stats();
        assert_eq!(stats, PoolStats { size: 2, hits: 1, misses: 3, evictions: 1 });
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_connection_is_not_kept_and_shutdown_closes_the_rest() {
        let mut bench = Bench::new(10, HOUR);
        let failed = bench.pool.get("x", async || Err::<Fake, _>("refused")).await;
        assert!(failed.is_err());
        assert_eq!(bench.pool.stats(), PoolStats { size: 0, hits: 0, misses: 1, evictions: 0 });
        bench.get("a").await;
        bench.pool.close_everything().await;
        assert_eq!(bench.closed.recv().await, Some(("a", Closing::Shutdown)));
        assert_eq!(bench.pool.stats().size, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_lower_bound_closes_the_excess_at_once() {
        let mut bench = Bench::new(3, HOUR);
        for key in ["a", "b", "c"] {
            bench.get(key).await;
            tokio::time::advance(Duration::from_secs(1)).await;
        }
        bench.pool.set_settings(PoolSettings { max_connections: 1, idle_timeout: HOUR });
        let mut closed = vec![bench.closed.recv().await, bench.closed.recv().await];
        closed.sort_by_key(|c| c.map(|(name, _)| name));
        let lru = Closing::LeastRecentlyUsed;
        assert_eq!(closed, [Some(("a", lru)), Some(("b", lru))]);
    }
}
