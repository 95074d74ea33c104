//! `truncate`'s kept results across replicas: with `[state] backend` on Redis or PostgreSQL, a
//! whole result is kept in the shared state too, so that its handle reads on any replica.
//!
//! Keys (each expires after `spill_ttl`, as the result does here):
//! - `spill/{handle}/{n}`: the text, in chunks of at most 1 MiB (the state's largest value),
//!   cut at character boundaries;
//! - `spill/{handle}`: the header, written last: a hash of the owner (the caller the result
//!   was cut for), the text's length and how many chunks it has. A reader whose owner's hash
//!   differs is told the handle is unknown, as on the replica that cut it;
//! - `spill/usage/{entry}/{owner}` and `spill/usage/{entry}/all`: the bytes shared by one
//!   owner, and by everyone, for the entry (a hash of its name), counters that start with the
//!   first result shared and last `spill_ttl`. A result that would take either past its bound
//!   (`spill_caller_bytes`, `spill_max_bytes`) is kept on this replica only, so what callers
//!   keep in the shared state is at most twice those bounds at any time.
//!
//! A result that cannot be shared (the bounds, or the state unavailable: warned once per
//! outage) is still kept here, and says `"shared": false` in `_meta["io.toolgate/truncated"]`.
//! A handle that is not kept here is looked for in the shared state; one found is then kept
//! here too, for the pages that follow.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use toolgate_core::mcp;
use toolgate_state::{MAX_TTL, MAX_VALUE_BYTES, SharedState, StateError};

use super::spill::{Document, SpillLimits, SpillStore, SpillStores};
use super::{Cut, META_KEY, Meter, read};

/// An entry's kept results in the shared state.
#[derive(Debug)]
pub(super) struct SharedSpill {
    state: SharedState,
    limits: SpillLimits,
    /// The entry's part of the usage counters' keys.
    entry: String,
    /// Whether the state's being unavailable has been warned of (since it last worked).
    warned: AtomicBool,
}

/// What became of a result offered to the shared state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sharing {
    /// Kept there.
    Shared,
    /// Over what the owner, or everyone, may keep there.
    OverBound,
    /// The state could not be reached.
    Unavailable,
}

/// The header of a kept result.
#[derive(Debug, Serialize, Deserialize)]
struct Header {
    owner: String,
    bytes: usize,
    chunks: usize,
}

impl SharedSpill {
    /// The shared half of the store of the entry named `name`, kept as `limits` say.
    pub(super) fn new(state: SharedState, name: &str, limits: SpillLimits) -> SharedSpill {
        SharedSpill { state, limits, entry: hex(name.as_bytes()), warned: AtomicBool::new(false) }
    }

    /// Which backend holds them.
    pub(super) fn backend(&self) -> &'static str {
        self.state.backend()
    }

    /// Offers the whole result of `cut`, kept in `store` for `owner`, to the shared state;
    /// one that stays here only says `"shared": false` in its `_meta` record.
    pub(super) async fn share(&self, store: &SpillStore, owner: &str, cut: &mut Cut) {
        let Some(handle) = cut.record.get("handle").and_then(Value::as_str) else { return };
        let Some(document) = store.get(owner, handle) else { return };
        if self.put(owner, handle, document.text()).await == Sharing::Shared {
            return;
        }
        cut.record["shared"] = json!(false);
        if let Some(meta) = &mut cut.result.meta {
            meta.0.insert(META_KEY.to_owned(), cut.record.clone());
        }
    }

    /// `toolgate__read_result` on `arguments` for `owner`: the handle from `stores`, else from
    /// the shared state (then kept in `store` for the next pages).
    pub(super) async fn page(
        &self,
        stores: &SpillStores,
        store: Option<&SpillStore>,
        owner: &str,
        arguments: Option<&mcp::JsonObject>,
        meter: &Meter,
    ) -> mcp::CallToolResult {
        let request = match read::request(arguments) {
            Ok(request) => request,
            Err(message) => return read::answer(Err(message)),
        };
        let handle = request.handle;
        let document = match stores.get(owner, handle) {
            Some(document) => document,
            None => match self.get(owner, handle).await {
                Ok(Some(document)) => {
                    let document = Arc::new(document);
                    if let Some(store) = store
                        && let Err(error) = store.adopt(owner, handle, document.clone())
                    {
                        tracing::debug!(%handle, "a shared result is not kept here: {error}");
                    }
                    document
                }
                Ok(None) => return read::answer(Err(read::unknown(handle))),
                Err(error) => {
                    tracing::debug!(%handle, "cannot read a shared result: {error}");
                    return read::answer(Err(format!(
                        "the store of kept results (the {} state backend) is unavailable: try \
                         again in a moment",
                        self.backend()
                    )));
                }
            },
        };
        read::answer(read::render(&document, &request, meter))
    }

    fn ttl(&self) -> Duration {
        self.limits.ttl.clamp(Duration::from_millis(1), MAX_TTL)
    }

    /// Keeps `text`, the result `handle` names, for `owner`.
    pub(super) async fn put(&self, owner: &str, handle: &str, text: &str) -> Sharing {
        match self.try_put(&hex(owner.as_bytes()), handle, text).await {
            Ok(sharing) => {
                self.warned.store(false, Ordering::Relaxed);
                sharing
            }
            Err(error) => {
                if !self.warned.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        backend = self.backend(),
                        "cannot keep a shortened result in the shared state, so only this \
                         replica can read it (warned once until it works again): {error}"
                    );
                }
                Sharing::Unavailable
            }
        }
    }

    async fn try_put(&self, owner: &str, handle: &str, text: &str) -> Result<Sharing, StateError> {
        let ttl = self.ttl();
        let bytes = i64::try_from(text.len()).unwrap_or(i64::MAX);
        let mut charged = Vec::new();
        for (key, bound) in [
            (format!("spill/usage/{}/{owner}", self.entry), self.limits.caller_bytes),
            (format!("spill/usage/{}/all", self.entry), self.limits.max_bytes),
        ] {
            let sum = self.state.incr(&key, bytes, ttl).await?;
            charged.push(key);
            if sum > i64::try_from(bound).unwrap_or(i64::MAX) {
                for key in &charged {
                    self.state.incr(key, -bytes, ttl).await?;
                }
                return Ok(Sharing::OverBound);
            }
        }
        let chunks = chunks(text);
        let keys: Vec<String> = (0..chunks.len()).map(|n| format!("spill/{handle}/{n}")).collect();
        let writes =
            keys.iter().zip(&chunks).map(|(key, chunk)| self.state.put(key, chunk.as_bytes(), ttl));
        for written in futures::future::join_all(writes).await {
            written?;
        }
        let header = Header { owner: owner.to_owned(), bytes: text.len(), chunks: chunks.len() };
        let header = serde_json::to_vec(&header).expect("a header serializes");
        self.state.put(&format!("spill/{handle}"), &header, ttl).await?;
        Ok(Sharing::Shared)
    }

    /// The result `handle` names, if it is kept for `owner` and whole.
    pub(super) async fn get(
        &self,
        owner: &str,
        handle: &str,
    ) -> Result<Option<Document>, StateError> {
        if !is_handle(handle) {
            return Ok(None);
        }
        let Some(header) = self.state.get(&format!("spill/{handle}")).await? else {
            return Ok(None);
        };
        let Ok(header) = serde_json::from_slice::<Header>(&header) else { return Ok(None) };
        if header.owner != hex(owner.as_bytes()) {
            return Ok(None);
        }
        let keys: Vec<String> = (0..header.chunks).map(|n| format!("spill/{handle}/{n}")).collect();
        let reads = keys.iter().map(|key| self.state.get(key));
        let mut text = Vec::with_capacity(header.bytes);
        for chunk in futures::future::join_all(reads).await {
            // A chunk gone: the result expired while it was read.
            let Some(chunk) = chunk? else { return Ok(None) };
            text.extend_from_slice(&chunk);
        }
        if text.len() != header.bytes {
            return Ok(None);
        }
        Ok(String::from_utf8(text).ok().map(Document::new))
    }
}

/// `text` cut into pieces of at most [`MAX_VALUE_BYTES`], at character boundaries.
fn chunks(text: &str) -> Vec<&str> {
    let mut chunks = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut end = rest.len().min(MAX_VALUE_BYTES);
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        let (chunk, after) = rest.split_at(end);
        chunks.push(chunk);
        rest = after;
    }
    chunks
}

/// Whether `handle` is one that [`SpillStore`](super::spill::SpillStore) makes: `r` and 24
/// hex digits (anything else a client sends is unknown, and never reaches a key).
fn is_handle(handle: &str) -> bool {
    handle.len() == 25
        && handle.starts_with('r')
        && handle[1..].bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The first 16 bytes of `bytes`' SHA-256, in hex.
fn hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)[..16].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests;
