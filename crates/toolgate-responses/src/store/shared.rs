//! The backend over the gateway's shared state (`[state] backend`, a [`SharedState`]): replicas
//! behind one load balancer read each other's responses from Redis or PostgreSQL (or, with a
//! `memory` state, this process's memory), so a `previous_response_id` continues on any of
//! them.
//!
//! An owner's keys are under `responses/<owner>/`, `<owner>` the first 16 bytes of the SHA-256
//! of its principal in hex (no principal's name is in a key); an id is used as it is, once
//! checked to be one the gateway could have made (`[A-Za-z0-9_-]`, at most [`MAX_ID_BYTES`]):
//! any other is unknown and reaches no key.
//!
//! - `c/<id>/<n>`: the response's JSON then its conversation's, in chunks of at most
//!   [`MAX_VALUE_BYTES`], at most [`MAX_STORED_BYTES`] in all: a larger one is refused with a
//!   500 that says so, never cut;
//! - `h/<id>`: its header, written after the chunks (a reader finds a whole response or none):
//!   when it was made, its lengths, and which write made it;
//! - `s/<k>`: slot `k` of the owner's ring of `max_per_owner` slots, naming the response that
//!   holds it, claimed once the response is written whole;
//! - `seq`: the owner's count of writes.
//!
//! Every key expires when its response does (the retention TTL from its `created_at`, at most
//! [`MAX_TTL`], 30 days: the state keeps nothing longer), so the state drops what is old by
//! itself and no write has expired rows to prune.
//!
//! The cap is a ring rather than a counter per window or an index: the `n`th write of an owner
//! takes slot `n mod cap` and deletes the response that held it, the one written `cap` writes
//! before, so that the owner's oldest go first, as the SQL backends prune them, at a cost of a
//! few operations per write whatever the cap (an index would be read whole, or sorted, on
//! each write; a count per window would refuse, or keep `cap` per window rather than in
//! all). A slot is taken (`take`, one replica gets what it held) and then claimed only if
//! still free (`put_new`), so that of two writes racing for one slot the later claim evicts
//! the earlier rather than leaving it in no slot: every response the store keeps holds a slot
//! until it is evicted or expires, and an owner has at most `cap` of them. Where this differs
//! from the SQL backends: the owner's count of writes restarts when its key expires (30 days
//! after the first write), after which the slots are reused from the first, so the response
//! evicted is then an old one rather than the oldest; of writes racing for one slot (more at
//! once than the cap), the one evicted may be the newer; a lowered cap leaves the slots beyond
//! it until their responses expire; a write that the state fails half way (an outage) may
//! leave what it wrote in no slot, to expire; and [`Shared::count`] lists the owner's headers
//! (a `scan`, which on Redis walks the keyspace), for tools and tests, not for requests.
//!
//! A state that cannot be reached fails the operation within its timeout (2 s) with a 503
//! (`the response store is unavailable: ...`), as the PostgreSQL backend does; the state's
//! errors hold no password of its URL.

use std::time::Duration;

use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use toolgate_state::{MAX_TTL, MAX_VALUE_BYTES, SharedState, StateError};

use super::{Prune, Row};
use crate::error::ApiError;

/// The largest response and conversation kept, together: 64 MiB, four times the largest
/// request (a conversation grows with each turn).
pub(crate) const MAX_STORED_BYTES: usize = 64 * 1024 * 1024;

/// The longest id that reaches a key.
pub(crate) const MAX_ID_BYTES: usize = 128;

/// How many times a write tries to claim its slot from racing writes before it gives up.
const CLAIMS: usize = 8;

/// How much longer a slot lives than its response, which it must not outlive by less.
const SLOT_MARGIN: Duration = Duration::from_secs(60);

/// The store in a [`SharedState`].
#[derive(Clone)]
pub(super) struct Shared {
    state: SharedState,
}

/// A response's header (`h/<id>`).
#[derive(Debug, Serialize, Deserialize)]
struct Header {
    /// The write that made it (the owner's count), so that an old slot does not evict the
    /// same id stored again.
    seq: i64,
    created_at: i64,
    /// The response's bytes, which come first.
    response: usize,
    /// The response's and the conversation's bytes.
    bytes: usize,
    chunks: usize,
}

/// What a slot (`s/<k>`) holds: the response in it.
#[derive(Debug, Serialize, Deserialize)]
struct Slot {
    id: String,
    seq: i64,
    chunks: usize,
}

impl Shared {
    pub(super) fn new(state: SharedState) -> Shared {
        Shared { state }
    }

    /// `memory`, `redis` or `postgres`.
    pub(super) fn backend(&self) -> &'static str {
        self.state.backend()
    }

    pub(super) async fn put(&self, row: Row, prune: Prune) -> Result<(), ApiError> {
        if !is_id(&row.id) {
            return Err(ApiError::server(format!(
                "cannot store a response whose id is not [A-Za-z0-9_-]{{1,{MAX_ID_BYTES}}}"
            )));
        }
        // Expired already: kept by nobody, as the SQL backends prune it in the same write.
        let Some(ttl) = remaining(row.created_at, prune.cutoff) else { return Ok(()) };
        let response_bytes = row.response.len();
        let bytes = response_bytes + row.state.len();
        if bytes > MAX_STORED_BYTES {
            return Err(ApiError::server(format!(
                "cannot store the response: with its conversation it is {bytes} bytes, and the \
                 shared store keeps at most {MAX_STORED_BYTES}"
            )));
        }
        let mut data = row.response.into_bytes();
        data.extend_from_slice(row.state.as_bytes());
        let chunks: Vec<&[u8]> = data.chunks(MAX_VALUE_BYTES).collect();
        let owner = digest(&row.owner);
        let seq = self.state.incr(&format!("responses/{owner}/seq"), 1, MAX_TTL).await;
        let seq = seq.map_err(|e| self.failed(&e))?;
        let writes = chunks.iter().enumerate().map(|(n, chunk)| {
            let key = format!("responses/{owner}/c/{}/{n}", row.id);
            async move { self.state.put(&key, chunk, ttl).await }
        });
        for written in futures::future::join_all(writes).await {
            written.map_err(|e| self.failed(&e))?;
        }
        let header = Header {
            seq,
            created_at: row.created_at,
            response: response_bytes,
            bytes,
            chunks: chunks.len(),
        };
        let header = serde_json::to_vec(&header).expect("a header serializes");
        let key = format!("responses/{owner}/h/{}", row.id);
        self.state.put(&key, &header, ttl).await.map_err(|e| self.failed(&e))?;
        // Claimed once whole: a write that evicts it finds all it must delete.
        let slot = Slot { id: row.id, seq, chunks: chunks.len() };
        if let Err(error) = self.claim(&owner, &slot, prune.keep, ttl).await {
            // In no slot, it would outlive the cap: gone (or, if the state is away, expiring).
            if let Err(also) = self.evict(&owner, &slot).await {
                tracing::debug!("a response in no slot is left to expire: {also:?}");
            }
            return Err(error);
        }
        Ok(())
    }

    /// Takes the slot of write `slot.seq` in the owner's ring of `cap`, evicting what held it.
    async fn claim(
        &self,
        owner: &str,
        slot: &Slot,
        cap: i64,
        ttl: Duration,
    ) -> Result<(), ApiError> {
        let key = format!("responses/{owner}/s/{}", (slot.seq - 1).rem_euclid(cap.max(1)));
        let value = serde_json::to_vec(slot).expect("a slot serializes");
        let slot_ttl = (ttl + SLOT_MARGIN).min(MAX_TTL);
        for _ in 0..CLAIMS {
            if let Some(held) = self.state.take(&key).await.map_err(|e| self.failed(&e))?
                && let Ok(held) = serde_json::from_slice::<Slot>(&held)
            {
                self.evict(owner, &held).await?;
            }
            if self.state.put_new(&key, &value, slot_ttl).await.map_err(|e| self.failed(&e))? {
                return Ok(());
            }
        }
        Err(ApiError::server(format!(
            "cannot store the response: {CLAIMS} writes of the same caller raced for its place"
        )))
    }

    /// Deletes the response a slot held, unless its id was stored again by a later write.
    async fn evict(&self, owner: &str, held: &Slot) -> Result<(), ApiError> {
        if !is_id(&held.id) {
            return Ok(());
        }
        let header_key = format!("responses/{owner}/h/{}", held.id);
        if let Some(header) = self.state.get(&header_key).await.map_err(|e| self.failed(&e))?
            && serde_json::from_slice::<Header>(&header).is_ok_and(|header| header.seq != held.seq)
        {
            return Ok(());
        }
        let mut keys = vec![header_key];
        keys.extend((0..held.chunks).map(|n| format!("responses/{owner}/c/{}/{n}", held.id)));
        let deletes = keys.iter().map(|key| self.state.delete(key));
        for deleted in futures::future::join_all(deletes).await {
            deleted.map_err(|e| self.failed(&e))?;
        }
        Ok(())
    }

    pub(super) async fn get(
        &self,
        id: &str,
        owner: &str,
        cutoff: i64,
    ) -> Result<Option<(String, String)>, ApiError> {
        if !is_id(id) {
            return Ok(None);
        }
        let owner = digest(owner);
        let key = format!("responses/{owner}/h/{id}");
        let Some(header) = self.state.get(&key).await.map_err(|e| self.failed(&e))? else {
            return Ok(None);
        };
        let Ok(header) = serde_json::from_slice::<Header>(&header) else { return Ok(None) };
        if header.created_at < cutoff || header.response > header.bytes {
            return Ok(None);
        }
        let keys: Vec<String> =
            (0..header.chunks).map(|n| format!("responses/{owner}/c/{id}/{n}")).collect();
        let reads = keys.iter().map(|key| self.state.get(key));
        let mut data = Vec::with_capacity(header.bytes.min(MAX_STORED_BYTES));
        for chunk in futures::future::join_all(reads).await {
            // A chunk gone: the response was deleted or evicted while it was read.
            let Some(chunk) = chunk.map_err(|e| self.failed(&e))? else { return Ok(None) };
            data.extend_from_slice(&chunk);
        }
        if data.len() != header.bytes {
            return Ok(None);
        }
        let state = data.split_off(header.response);
        match (String::from_utf8(data), String::from_utf8(state)) {
            (Ok(response), Ok(state)) => Ok(Some((response, state))),
            _ => Err(ApiError::server("a stored response is unreadable: not UTF-8")),
        }
    }

    pub(super) async fn delete(
        &self,
        id: &str,
        owner: &str,
        cutoff: i64,
    ) -> Result<bool, ApiError> {
        if !is_id(id) {
            return Ok(false);
        }
        let owner = digest(owner);
        let key = format!("responses/{owner}/h/{id}");
        // Taken: of requests deleting it at once, one is told it was there.
        let Some(header) = self.state.take(&key).await.map_err(|e| self.failed(&e))? else {
            return Ok(false);
        };
        let Ok(header) = serde_json::from_slice::<Header>(&header) else { return Ok(false) };
        let keys: Vec<String> =
            (0..header.chunks).map(|n| format!("responses/{owner}/c/{id}/{n}")).collect();
        let deletes = keys.iter().map(|key| self.state.delete(key));
        for deleted in futures::future::join_all(deletes).await {
            deleted.map_err(|e| self.failed(&e))?;
        }
        // Its slot stays taken until a later write of the owner's claims it.
        Ok(header.created_at >= cutoff)
    }

    /// The owner's headers, listed (see the module's doc: not for requests).
    pub(super) async fn count(&self, owner: &str, cutoff: i64) -> Result<u64, ApiError> {
        let prefix = format!("responses/{}/h/", digest(owner));
        let listed = self
            .state
            .scan(&prefix, toolgate_state::MAX_SCAN)
            .await
            .map_err(|e| self.failed(&e))?;
        let live = listed.iter().filter(|(_, header)| {
            serde_json::from_slice::<Header>(header).is_ok_and(|h| h.created_at >= cutoff)
        });
        Ok(live.count() as u64)
    }

    /// The state's error as the endpoint answers it: 503 while the state cannot be reached (or
    /// does not answer in time), else 500.
    fn failed(&self, error: &StateError) -> ApiError {
        let mut why = error.to_string();
        if let Some(cause) = std::error::Error::source(error) {
            why = format!("{why}: {cause}");
        }
        if let StateError::Unavailable { .. } = error {
            tracing::warn!(backend = self.backend(), "the response store is unavailable: {why}");
            return ApiError {
                status: StatusCode::SERVICE_UNAVAILABLE,
                kind: "server_error",
                message: format!("the response store is unavailable: {why}"),
                param: None,
                code: None,
            };
        }
        tracing::warn!(backend = self.backend(), "the response store failed: {why}");
        ApiError::server(format!("the response store failed: {why}"))
    }
}

/// How long a response made at `created_at` is still kept, if at all: until `created_at` is
/// older than the retention allows (`created_at - cutoff` seconds from now), at most
/// [`MAX_TTL`].
fn remaining(created_at: i64, cutoff: i64) -> Option<Duration> {
    let left = created_at.saturating_sub(cutoff);
    (left > 0).then(|| Duration::from_secs(left.unsigned_abs()).min(MAX_TTL))
}

/// Whether `id` may reach a key: what [`new_id`](crate::output::new_id) makes, and shorter
/// names of the same letters.
fn is_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_BYTES
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The owner as it appears in keys: the first 16 bytes of its SHA-256, in hex.
fn digest(owner: &str) -> String {
    toolgate_core::hash::sha256_hex(owner.as_bytes())[..32].to_owned()
}

#[cfg(test)]
mod tests;
