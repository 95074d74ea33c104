//! Where `truncate` keeps whole results it shortened, so that the model can read the rest
//! with `toolgate__read_result`: a store per `truncate` entry, bounded in bytes overall and
//! per caller, in results per caller, and in time.
//!
//! A result belongs to the caller it was shortened for (principal and session; without a
//! session, principal and client address, since every anonymous client has the same
//! principal): another
//! caller asking for its handle is told the handle is unknown, as for one that expired, so a
//! handle cannot be used to learn what someone else's tools returned. Handles are random (96
//! bits), not counters.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tokio::time::Instant;

/// How much a store keeps, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpillLimits {
    /// Bytes of text over every caller.
    pub max_bytes: usize,
    /// Bytes of text per caller.
    pub caller_bytes: usize,
    /// Results per caller.
    pub caller_results: usize,
    /// How long a result is kept after it was shortened.
    pub ttl: Duration,
}

impl Default for SpillLimits {
    fn default() -> SpillLimits {
        SpillLimits {
            max_bytes: 64 << 20,
            caller_bytes: 16 << 20,
            caller_results: 64,
            ttl: Duration::from_secs(15 * 60),
        }
    }
}

/// A kept result: its text split into lines for paging.
#[derive(Debug)]
pub struct Document {
    text: String,
    /// Where each line starts in `text`; a line ends where the next starts (its `\n` kept).
    starts: Vec<usize>,
}

/// Lines longer than this many characters are split for paging, so that one line always
/// fits in a page.
pub const LONGEST_LINE: usize = 1000;

impl Document {
    /// `text`, with lines longer than [`LONGEST_LINE`] characters split.
    pub fn new(text: String) -> Document {
        let mut starts = Vec::new();
        if !text.is_empty() {
            starts.push(0);
        }
        let mut chars = 0;
        for (at, c) in text.char_indices() {
            if chars == LONGEST_LINE {
                starts.push(at);
                chars = 0;
            }
            chars += 1;
            if c == '\n' {
                if at + 1 < text.len() {
                    starts.push(at + 1);
                }
                chars = 0;
            }
        }
        Document { text, starts }
    }

    /// Its text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// How many lines it has.
    pub fn lines(&self) -> usize {
        self.starts.len()
    }

    /// Line `index`, with its line break if it has one.
    pub fn line(&self, index: usize) -> Option<&str> {
        let start = *self.starts.get(index)?;
        let end = self.starts.get(index + 1).copied().unwrap_or(self.text.len());
        Some(&self.text[start..end])
    }

    /// The line that holds byte `offset` of the text: where a reader should start to see
    /// what follows `offset`.
    pub fn line_at(&self, offset: usize) -> usize {
        self.starts.partition_point(|start| *start <= offset).saturating_sub(1)
    }
}

struct Entry {
    owner: String,
    document: Arc<Document>,
    created: Instant,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<String, Entry>,
    /// Handles, oldest first.
    order: VecDeque<String>,
    bytes: usize,
}

/// Why a result was not kept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpillError {
    /// Bigger than what one caller may keep.
    #[error("the result ({bytes} bytes) is larger than what one caller may keep ({limit} bytes)")]
    TooLarge {
        /// Its size.
        bytes: usize,
        /// The per-caller limit.
        limit: usize,
    },
}

/// One `truncate` entry's kept results.
pub struct SpillStore {
    limits: SpillLimits,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for SpillStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpillStore").field("limits", &self.limits).finish_non_exhaustive()
    }
}

impl SpillStore {
    /// An empty store.
    pub fn new(limits: SpillLimits) -> SpillStore {
        SpillStore { limits, inner: Mutex::default() }
    }

    /// Its limits.
    pub fn limits(&self) -> SpillLimits {
        self.limits
    }

    /// Keeps `document` for `owner`, making room by forgetting the oldest results (the
    /// owner's own first when the owner is over its limits); its handle.
    pub fn put(&self, owner: &str, document: Document) -> Result<String, SpillError> {
        let handle = new_handle();
        self.keep(owner, &handle, Arc::new(document))?;
        Ok(handle)
    }

    /// Keeps `document`, which another replica kept under `handle`, for `owner`, as
    /// [`put`](Self::put) keeps one (for the pages that follow: see `truncate/shared.rs`).
    pub fn adopt(
        &self,
        owner: &str,
        handle: &str,
        document: Arc<Document>,
    ) -> Result<(), SpillError> {
        self.keep(owner, handle, document)
    }

    fn keep(&self, owner: &str, handle: &str, document: Arc<Document>) -> Result<(), SpillError> {
        let bytes = document.text.len();
        let limit = self.limits.caller_bytes.min(self.limits.max_bytes);
        if bytes > limit {
            return Err(SpillError::TooLarge { bytes, limit });
        }
        let now = Instant::now();
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.sweep(now, self.limits.ttl);
        if inner.entries.contains_key(handle) {
            inner.remove(handle);
        }
        // The owner's own limits: forget its oldest results.
        loop {
            let (count, used) = inner.usage(owner);
            if count < self.limits.caller_results && used + bytes <= self.limits.caller_bytes {
                break;
            }
            let oldest = inner.order.iter().find(|h| inner.entries[*h].owner == owner).cloned();
            match oldest {
                Some(handle) => inner.remove(&handle),
                None => break,
            }
        }
        // Everyone's limit: forget the oldest results of anyone.
        while inner.bytes + bytes > self.limits.max_bytes {
            let Some(handle) = inner.order.front().cloned() else { break };
            inner.remove(&handle);
        }
        inner.bytes += bytes;
        inner.order.push_back(handle.to_owned());
        inner
            .entries
            .insert(handle.to_owned(), Entry { owner: owner.to_owned(), document, created: now });
        Ok(())
    }

    /// The result `handle` names, if it is `owner`'s and has not expired.
    pub fn get(&self, owner: &str, handle: &str) -> Option<Arc<Document>> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.sweep(Instant::now(), self.limits.ttl);
        let entry = inner.entries.get(handle)?;
        (entry.owner == owner).then(|| entry.document.clone())
    }

    /// How many results and bytes it holds (those expired forgotten first).
    pub fn usage(&self) -> (usize, usize) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.sweep(Instant::now(), self.limits.ttl);
        (inner.entries.len(), inner.bytes)
    }
}

impl Inner {
    fn sweep(&mut self, now: Instant, ttl: Duration) {
        while let Some(handle) = self.order.front() {
            if now.duration_since(self.entries[handle].created) < ttl {
                break;
            }
            let handle = handle.clone();
            self.remove(&handle);
        }
    }

    fn usage(&self, owner: &str) -> (usize, usize) {
        self.entries
            .values()
            .filter(|e| e.owner == owner)
            .fold((0, 0), |(n, bytes), e| (n + 1, bytes + e.document.text.len()))
    }

    fn remove(&mut self, handle: &str) {
        if let Some(entry) = self.entries.remove(handle) {
            self.bytes -= entry.document.text.len();
        }
        if let Some(at) = self.order.iter().position(|h| h == handle) {
            self.order.remove(at);
        }
    }
}

fn new_handle() -> String {
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!("r{}", &random[..24])
}

/// Every `truncate` entry's store, so that one `toolgate__read_result` finds a handle
/// whichever entry kept it, and `/metrics` reads what they hold. Shared through `Services`.
#[derive(Debug, Default)]
pub struct SpillStores {
    /// Each store with the name of the entry it belongs to.
    stores: Mutex<Vec<(String, Weak<SpillStore>)>>,
}

/// What the stores of the `truncate` entries of one name hold now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpillUsage {
    /// The entry's name (`truncate` unless the config names it).
    pub interceptor: String,
    /// Results kept.
    pub entries: usize,
    /// Bytes of their text.
    pub bytes: usize,
}

impl SpillStores {
    /// Adds `store`, the store of the entry named `interceptor`; forgotten when the store is
    /// dropped.
    pub fn register(&self, interceptor: &str, store: &Arc<SpillStore>) {
        let mut stores = self.stores.lock().unwrap_or_else(PoisonError::into_inner);
        stores.retain(|(_, s)| s.strong_count() > 0);
        stores.push((interceptor.to_owned(), Arc::downgrade(store)));
    }

    /// What each entry's store holds, by entry name in the order they joined (stores of one
    /// name, while a reload replaces an entry, summed).
    pub fn usage(&self) -> Vec<SpillUsage> {
        let stores = self.stores.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let mut found: Vec<SpillUsage> = Vec::new();
        for (interceptor, store) in stores {
            let Some(store) = store.upgrade() else { continue };
            let (entries, bytes) = store.usage();
            match found.iter_mut().find(|u| u.interceptor == interceptor) {
                Some(usage) => {
                    usage.entries += entries;
                    usage.bytes += bytes;
                }
                None => found.push(SpillUsage { interceptor, entries, bytes }),
            }
        }
        found
    }

    /// The result `handle` names in any store, if it is `owner`'s.
    pub fn get(&self, owner: &str, handle: &str) -> Option<Arc<Document>> {
        let stores = self.stores.lock().unwrap_or_else(PoisonError::into_inner).clone();
        stores.iter().filter_map(|(_, s)| s.upgrade()).find_map(|store| store.get(owner, handle))
    }

    /// How many stores it holds, dropped ones included until the next [`register`](Self::register).
    #[cfg(test)]
    pub(super) fn held(&self) -> usize {
        self.stores.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}
