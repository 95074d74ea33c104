//! What happened: an [`Event`] is a time, a kind and a flat set of fields.
//!
//! The kind is a slash path naming what happened, most general first (`tools/call/denied`), so
//! that an [`EventPattern`](crate::EventPattern) such as `tools/*` or `*/denied` can select
//! whole families. The known kinds are constants in [`kind`].

use std::time::SystemTime;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use crate::rfc3339;

/// The kinds of event toolgate publishes.
pub mod kind {
    /// A tool call passed the request phase and was sent upstream.
    pub const TOOLS_CALL_STARTED: &str = "tools/call/started";
    /// A tool call ended with a result (which may be an error result).
    pub const TOOLS_CALL_FINISHED: &str = "tools/call/finished";
    /// A tool call was refused: by policy, by an approver, or because approval expired.
    pub const TOOLS_CALL_DENIED: &str = "tools/call/denied";
    /// A tool call exceeded its timeout; the upstream was sent a cancellation.
    pub const TOOLS_CALL_TIMEOUT: &str = "tools/call/timeout";
    /// The downstream client cancelled a tool call; the cancellation was sent upstream.
    pub const TOOLS_CALL_CANCELLED: &str = "tools/call/cancelled";
    /// A call is waiting for a person to approve it.
    pub const APPROVAL_REQUESTED: &str = "approval/requested";
    /// A person approved a call.
    pub const APPROVAL_GRANTED: &str = "approval/granted";
    /// A person refused a call.
    pub const APPROVAL_REFUSED: &str = "approval/refused";
    /// Nobody answered an approval request in time.
    pub const APPROVAL_EXPIRED: &str = "approval/expired";
    /// An interceptor itself failed or timed out (fail-open or fail-closed decided the rest).
    pub const INTERCEPTOR_FAILED: &str = "interceptor/failed";
    /// A transform (`truncate`, `redact`, `toon`, ...) changed a result: tokens and bytes
    /// before and after, and what it did.
    pub const TRANSFORM_APPLIED: &str = "transform/applied";
    /// An upstream connected, or connected again.
    pub const UPSTREAM_CONNECTED: &str = "upstream/connected";
    /// An upstream could not be reached, or its connection was lost.
    pub const UPSTREAM_FAILED: &str = "upstream/failed";
    /// An upstream process was restarted after it died.
    pub const UPSTREAM_RESTARTED: &str = "upstream/restarted";
    /// An operator restarted an upstream (fields `server`, `by`; then `upstream/failed` and
    /// `upstream/restarted` as for any reconnection).
    pub const UPSTREAM_RESTART_REQUESTED: &str = "upstream/restart_requested";
    /// An upstream was closed on purpose: a server a request named by URL, evicted from the
    /// pool (field `reason`).
    pub const UPSTREAM_CLOSED: &str = "upstream/closed";
    /// The merged tool list changed.
    pub const TOOLS_LIST_CHANGED: &str = "tools/list/changed";
    /// A request was refused before it reached the pipeline (unknown tool, bad arguments,
    /// malformed JSON-RPC, oversized body).
    pub const REQUEST_REJECTED: &str = "request/rejected";
    /// The OpenAI-compatible endpoint (`/v1/responses`, `/v1/chat/completions`) answered:
    /// the model, its tokens in and out, and the response's status.
    pub const LLM_RESPONSE_FINISHED: &str = "llm/response/finished";
    /// The audit sink lost events, because its queue was full or writing failed (field
    /// `count`). Written by the audit sink into its own log, never published on the bus.
    pub const AUDIT_DROPPED: &str = "audit/dropped";
}

/// Something that happened, with the details that matter for it.
///
/// Serialized flat: `{"time":"2024-05-01T12:34:56.789Z","kind":"tools/call/denied",...fields}`,
/// with `time` in RFC 3339 UTC to the millisecond. Fields named like the envelope
/// ([`Event::RESERVED`]) are not serialized, so they can never override it.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// When it happened.
    pub time: SystemTime,
    /// What happened: a slash path, such as [`kind::TOOLS_CALL_DENIED`].
    pub kind: String,
    /// The details, in the order they were added.
    pub fields: Map<String, Value>,
    /// Where the audit sink says it wrote the event, for a publisher that waits for that
    /// ([`Event::awaiting_write`]); never serialized.
    pub(crate) written: Option<crate::written::WriteSlot>,
}

// === impl Event ===

impl Event {
    /// Keys a field cannot have: the event's own `time` and `kind`, and the audit log's `seq`
    /// and `prev`.
    pub const RESERVED: [&'static str; 4] = ["seq", "prev", "time", "kind"];

    /// An event of `kind` happening now, with no fields yet.
    pub fn new(kind: impl Into<String>) -> Event {
        Event { time: SystemTime::now(), kind: kind.into(), fields: Map::new(), written: None }
    }

    /// This event, and a wait that ends once the audit sink has appended it to the audit log
    /// (or failed to, or never got it): write-ahead, for `[audit] required`.
    pub fn awaiting_write(mut self) -> (Event, crate::Written) {
        let (slot, written) = crate::written::pair();
        self.written = Some(slot);
        (self, written)
    }

    /// Adds (or replaces) the field `key`.
    ///
    /// A reserved key ([`Event::RESERVED`]) is a mistake: debug builds panic, release builds
    /// ignore the field.
    pub fn with(mut self, key: impl Into<String>, value: impl Into<Value>) -> Event {
        let key = key.into();
        debug_assert!(!is_reserved(&key), "event field `{key}` is reserved for the envelope");
        if !is_reserved(&key) {
            self.fields.insert(key, value.into());
        }
        self
    }

    /// Sets when it happened (for events that are recorded after the fact, and for tests).
    pub fn at(mut self, time: SystemTime) -> Event {
        self.time = time;
        self
    }

    /// The field `key`, if it is set.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.fields.get(key)
    }

    /// Writes `time`, `kind` and the fields (minus reserved keys) into `map`, so the audit log
    /// can put its own entries in front of them.
    pub(crate) fn serialize_entries<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
        map.serialize_entry("time", &rfc3339::format(self.time))?;
        map.serialize_entry("kind", &self.kind)?;
        for (key, value) in &self.fields {
            if !is_reserved(key) {
                map.serialize_entry(key, value)?;
            }
        }
        Ok(())
    }
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        self.serialize_entries(&mut map)?;
        map.end()
    }
}

fn is_reserved(key: &str) -> bool {
    Event::RESERVED.contains(&key)
}

#[cfg(test)]
mod tests;
