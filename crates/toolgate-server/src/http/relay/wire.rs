//! What the relay puts on the bus, and how it reads it back: the channels, the name a session
//! goes by there, and the messages, each bounded.
//!
//! A session is named on the bus by a digest of its id ([`session_name`]), never by the id:
//! the id is its client's credential. A message for a session (an answer, a notification) is
//! an [`Envelope`]: the session's name, the question an answer answers, and the JSON-RPC
//! message itself, or, when that would make the envelope larger than the bus carries
//! ([`MAX_PAYLOAD_BYTES`]), the key of the shared state it was put under for
//! [`STORED_TTL`]; what is larger than a key holds ([`MAX_VALUE_BYTES`]) does not travel.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolgate_core::mcp;
use toolgate_state::{MAX_PAYLOAD_BYTES, MAX_VALUE_BYTES};

/// The channel answers travel on: every replica listens, and the one whose copy of the session
/// asked the question takes the answer.
pub(crate) const ANSWERS: &str = "toolgate.relay.answers";

/// The channel changes of a replica's lists travel on.
pub(crate) const LISTS: &str = "toolgate.relay.lists";

/// How long a message too large for the bus waits in its key for the replica that takes it.
pub(crate) const STORED_TTL: Duration = Duration::from_secs(60);

/// The name of session `id` on the bus: 128 bits of its SHA-256, in hex.
pub(crate) fn session_name(id: &str) -> String {
    let mut name = toolgate_core::hash::sha256_hex(id.as_bytes());
    name.truncate(32);
    name
}

/// The channel of the session named `name`: the replica that holds its standalone stream open
/// listens on it.
pub(crate) fn session_channel(name: &str) -> String {
    format!("toolgate.relay.session.{name}")
}

/// A message for one session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Envelope {
    /// The session's name ([`session_name`]).
    pub(crate) session: String,
    /// The question an answer answers (none for a notification).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) question: Option<mcp::RequestId>,
    /// The JSON-RPC message, when it travels in the envelope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<Value>,
    /// The key it was put under, when it is too large to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) key: Option<String>,
}

/// An envelope ready for the bus.
#[derive(Debug, PartialEq)]
pub(crate) enum Packed {
    /// The message is in the envelope.
    Inline(Vec<u8>),
    /// The message (`value`) must be put under `key` before the envelope is published.
    Stored { envelope: Vec<u8>, key: String, value: Vec<u8> },
}

/// A message larger than a key holds: it cannot travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooLarge {
    /// Its size, in bytes.
    pub(crate) len: usize,
}

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the message is {} bytes, more than the {MAX_VALUE_BYTES} one replica hands another",
            self.len
        )
    }
}

impl Envelope {
    /// `message` for the session named `session` (answering `question`, if an answer), packed
    /// for the bus.
    pub(crate) fn pack(
        session: &str,
        question: Option<&mcp::RequestId>,
        message: Value,
    ) -> Result<Packed, TooLarge> {
        let mut envelope = Envelope {
            session: session.to_owned(),
            question: question.cloned(),
            message: Some(message),
            key: None,
        };
        let inline = serde_json::to_vec(&envelope).expect("an envelope is JSON");
        if inline.len() <= MAX_PAYLOAD_BYTES {
            return Ok(Packed::Inline(inline));
        }
        let value = serde_json::to_vec(&envelope.message.take()).expect("JSON is JSON");
        if value.len() > MAX_VALUE_BYTES {
            return Err(TooLarge { len: value.len() });
        }
        let key = format!("relay:{}", uuid::Uuid::new_v4().simple());
        envelope.key = Some(key.clone());
        let packed = serde_json::to_vec(&envelope).expect("an envelope is JSON");
        // Only a question with an id of toolgate's own (a number) is relayed, so the envelope
        // without its message is small; this holds it to that.
        if packed.len() > MAX_PAYLOAD_BYTES {
            return Err(TooLarge { len: packed.len() });
        }
        Ok(Packed::Stored { envelope: packed, key, value })
    }

    /// The envelope `payload` holds, if it is one: exactly one of a message and a key, a key
    /// of the relay's own.
    pub(crate) fn unpack(payload: &[u8]) -> Option<Envelope> {
        let envelope: Envelope = serde_json::from_slice(payload).ok()?;
        let well_formed = match (&envelope.message, &envelope.key) {
            (Some(_), None) => true,
            (None, Some(key)) => key.starts_with("relay:") && key.len() <= 64,
            _ => false,
        };
        (well_formed && envelope.session.len() == 32).then_some(envelope)
    }
}

/// A message of a stored envelope, as it was put.
pub(crate) fn stored_message(value: &[u8]) -> Option<Value> {
    serde_json::from_slice(value).ok()
}

/// A change of one replica's lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ListsChanged {
    /// The replica whose lists changed (it ignores its own message).
    pub(crate) from: u64,
    pub(crate) tools: bool,
    pub(crate) prompts: bool,
    pub(crate) resources: bool,
}

impl ListsChanged {
    pub(crate) fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("JSON")
    }

    pub(crate) fn decode(payload: &[u8]) -> Option<ListsChanged> {
        serde_json::from_slice(payload).ok()
    }
}

/// Whether a notification for a session travels to the replica whose stream is open: not
/// `list_changed`, which every replica sends its own sessions when any replica's lists change.
pub(crate) fn travels(notification: &mcp::ServerNotification) -> bool {
    !matches!(
        notification,
        mcp::ServerNotification::ToolListChangedNotification(_)
            | mcp::ServerNotification::PromptListChangedNotification(_)
            | mcp::ServerNotification::ResourceListChangedNotification(_)
    )
}

#[cfg(test)]
mod tests;
