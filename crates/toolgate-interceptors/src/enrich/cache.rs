//! The summaries `enrich` already has, by a SHA-256 of what they summarise (model, prompt
//! template, server, tool and result text), least recently used out first.
//!
//! Bounded by `cache_size`; evicting scans the entries (the cache is meant to be hundreds or a
//! few thousand entries, and a miss costs a request to a model, which is far slower).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use sha2::{Digest as _, Sha256};

/// What a summary is cached by.
pub(super) type Key = [u8; 32];

/// The key of the summary of `text`, a result of `tool` on `server`, asked of `model` with
/// `template`. Each part is length-prefixed, so no two different inputs share a key.
pub(super) fn key(model: &str, template: &str, server: &str, tool: &str, text: &str) -> Key {
    let mut hasher = Sha256::new();
    for part in [model, template, server, tool, text] {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    hasher.finalize().into()
}

/// A bounded map of summaries.
#[derive(Debug)]
pub(super) struct Cache {
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<Key, Entry>,
    /// Counts uses; an entry's `used` is the count at its last use.
    clock: u64,
}

#[derive(Debug)]
struct Entry {
    summary: Arc<str>,
    used: u64,
}

impl Cache {
    /// A cache of at most `capacity` summaries (0: it keeps none).
    pub(super) fn new(capacity: usize) -> Cache {
        Cache { capacity, inner: Mutex::default() }
    }

    /// The summary under `key`, marked as used.
    pub(super) fn get(&self, key: &Key) -> Option<Arc<str>> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.clock += 1;
        let now = inner.clock;
        let entry = inner.entries.get_mut(key)?;
        entry.used = now;
        Some(entry.summary.clone())
    }

    /// Keeps `summary` under `key`, dropping the least recently used entry when full.
    pub(super) fn insert(&self, key: Key, summary: Arc<str>) {
        if self.capacity == 0 {
            return;
        }
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.clock += 1;
        let used = inner.clock;
        if inner.entries.len() >= self.capacity && !inner.entries.contains_key(&key) {
            let oldest = inner.entries.iter().min_by_key(|(_, e)| e.used).map(|(k, _)| *k);
            if let Some(oldest) = oldest {
                inner.entries.remove(&oldest);
            }
        }
        inner.entries.insert(key, Entry { summary, used });
    }

    /// How many summaries it holds.
    pub(super) fn len(&self) -> usize {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner).entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(n: u8) -> Key {
        [n; 32]
    }

    #[test]
    fn the_least_recently_used_goes_first() {
        let cache = Cache::new(2);
        cache.insert(k(1), "one".into());
        cache.insert(k(2), "two".into());
        assert_eq!(cache.get(&k(1)).as_deref(), Some("one"));
        cache.insert(k(3), "three".into());
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.get(&k(2)), None, "2 was used least recently");
        assert_eq!(cache.get(&k(1)).as_deref(), Some("one"));
        assert_eq!(cache.get(&k(3)).as_deref(), Some("three"));
        // Replacing a key does not evict another.
        cache.insert(k(3), "THREE".into());
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.get(&k(3)).as_deref(), Some("THREE"));
    }

    #[test]
    fn a_cache_of_zero_keeps_nothing() {
        let cache = Cache::new(0);
        cache.insert(k(1), "one".into());
        assert_eq!(cache.len(), 0);
        assert_eq!(cache.get(&k(1)), None);
    }

    #[test]
    fn keys_differ_with_every_part_and_with_where_parts_end() {
        let base = key("m", "t {result}", "s", "tool", "text");
        assert_eq!(base, key("m", "t {result}", "s", "tool", "text"));
        for other in [
            key("m2", "t {result}", "s", "tool", "text"),
            key("m", "u {result}", "s", "tool", "text"),
            key("m", "t {result}", "s2", "tool", "text"),
            key("m", "t {result}", "s", "tool2", "text"),
            key("m", "t {result}", "s", "tool", "text2"),
            key("m", "t {result}", "s", "toolt", "ext"),
        ] {
            assert_ne!(base, other);
        }
    }
}
