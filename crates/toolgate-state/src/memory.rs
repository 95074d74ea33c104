//! The memory backend, for one process (the default): a map whose entries expire on tokio's
//! clock, and the process's [`Fanout`](crate::fanout::Fanout) as the bus.
//!
//! An expired entry is never read; expired entries are swept on a write, all of them once
//! the writes since the last sweep reach what the map held after it, so a sweep costs each
//! write O(1) on average and the map holds at most about twice the keys live at the last sweep
//! plus the writes since. What bounds the live keys is
//! the callers, who bound what they write.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use crate::StateError;
use crate::limits::{counter_text, read_counter};

/// Writes between sweeps at least (a small map is not swept on every write).
const SWEEP_FLOOR: usize = 64;

/// The map.
#[derive(Default)]
pub(crate) struct Memory {
    entries: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    map: HashMap<String, Entry>,
    /// Writes since the last sweep.
    writes: usize,
    /// Writes after which to sweep: what the map held after the last sweep (at least
    /// [`SWEEP_FLOOR`]).
    sweep_after: usize,
}

struct Entry {
    value: Bytes,
    expires: Instant,
}

impl Entries {
    /// `key`'s entry unless it expired.
    fn live(&self, key: &str, now: Instant) -> Option<&Entry> {
        self.map.get(key).filter(|entry| entry.expires > now)
    }

    /// Counts a write, and sweeps the expired entries when it is time to.
    fn wrote(&mut self, now: Instant) {
        self.writes += 1;
        if self.writes >= self.sweep_after.max(SWEEP_FLOOR) {
            self.map.retain(|_, entry| entry.expires > now);
            self.writes = 0;
            self.sweep_after = self.map.len();
        }
    }
}

impl Memory {
    pub(crate) fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.lock().live(key, Instant::now()).map(|entry| entry.value.to_vec())
    }

    pub(crate) fn put(&self, key: &str, value: &[u8], ttl: Duration) {
        let now = Instant::now();
        let mut entries = self.lock();
        let entry = Entry { value: Bytes::copy_from_slice(value), expires: now + ttl };
        entries.map.insert(key.to_owned(), entry);
        entries.wrote(now);
    }

    pub(crate) fn put_new(&self, key: &str, value: &[u8], ttl: Duration) -> bool {
        let now = Instant::now();
        let mut entries = self.lock();
        if entries.live(key, now).is_some() {
            return false;
        }
        let entry = Entry { value: Bytes::copy_from_slice(value), expires: now + ttl };
        entries.map.insert(key.to_owned(), entry);
        entries.wrote(now);
        true
    }

    pub(crate) fn take(&self, key: &str) -> Option<Vec<u8>> {
        let now = Instant::now();
        let entry = self.lock().map.remove(key)?;
        (entry.expires > now).then(|| entry.value.to_vec())
    }

    pub(crate) fn delete(&self, key: &str) -> bool {
        let now = Instant::now();
        self.lock().map.remove(key).is_some_and(|entry| entry.expires > now)
    }

    /// Up to `limit` live entries whose key starts with `prefix`.
    pub(crate) fn scan(&self, prefix: &str, limit: usize) -> Vec<(String, Vec<u8>)> {
        let now = Instant::now();
        let found: Vec<(String, Bytes)> = self
            .lock()
            .map
            .iter()
            .filter(|(key, entry)| key.starts_with(prefix) && entry.expires > now)
            .take(limit)
            .map(|(key, entry)| (key.clone(), entry.value.clone()))
            .collect();
        // Copied out of the lock.
        found.into_iter().map(|(key, value)| (key, value.to_vec())).collect()
    }

    /// Adds `by` to the counter at `key`, made with `ttl` (and 0) if missing or expired.
    pub(crate) fn incr(&self, key: &str, by: i64, ttl: Duration) -> Result<i64, StateError> {
        let now = Instant::now();
        let mut entries = self.lock();
        let (n, expires) = match entries.live(key, now) {
            None => (by, now + ttl),
            Some(entry) => {
                let refused = |reason| StateError::NotACounter { key: shown(key), reason };
                let current = read_counter(&entry.value)
                    .ok_or_else(|| refused("holds a value that is not a decimal integer"))?;
                let n = current
                    .checked_add(by)
                    .ok_or_else(|| refused("the increment would overflow"))?;
                (n, entry.expires)
            }
        };
        let entry = Entry { value: Bytes::from(counter_text(n)), expires };
        entries.map.insert(key.to_owned(), entry);
        entries.wrote(now);
        Ok(n)
    }

    /// Entries in the map, expired or not, for the tests.
    #[cfg(test)]
    fn stored(&self) -> usize {
        self.lock().map.len()
    }

    fn lock(&self) -> MutexGuard<'_, Entries> {
        // Nothing panics while holding it; a poisoned map is still a consistent map.
        self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A key without [`crate::KEY_PREFIX`], as errors show it.
fn shown(key: &str) -> String {
    crate::error::shown(key.strip_prefix(crate::KEY_PREFIX).unwrap_or(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn expired_entries_are_swept_by_later_writes() {
        let memory = Memory::default();
        for n in 0..1000 {
            memory.put(&format!("old{n}"), b"v", Duration::from_secs(1));
        }
        tokio::time::advance(Duration::from_secs(2)).await;
        for n in 0..1000 {
            memory.put(&format!("new{n}"), b"v", Duration::from_secs(60));
        }
        assert_eq!(memory.stored(), 1000, "the expired ones were swept by the writes after them");
        assert_eq!(memory.get("old1"), None);
        assert_eq!(memory.get("new1").as_deref(), Some(&b"v"[..]));
    }
}
