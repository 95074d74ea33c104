//! What travels between the replica that runs a pinned server and the others: the keys and
//! channels of the shared state, and what is written in them.
//!
//! Keys and channels are named after the server (`pinned/<server>/...`); every request and
//! answer has a random id. A value larger than one key holds ([`MAX_VALUE_BYTES`]) is written
//! in chunks ([`put_chunked`]), up to [`MAX_CHUNKS`] of them; the bus only carries ids and
//! progress, never a payload that could exceed what it carries.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolgate_core::mcp;
use toolgate_state::{MAX_VALUE_BYTES, SharedState, StateError};

/// The most chunks one value is written in: requests and answers up to 16 MiB.
pub(crate) const MAX_CHUNKS: usize = 16;

/// Room left in each chunk for the tag byte.
const CHUNK_BYTES: usize = MAX_VALUE_BYTES - 1;

/// The longest progress message carried (longer ones are cut).
pub(crate) const MAX_PROGRESS_MESSAGE: usize = 1024;

/// The replica that runs the server: it is alive while this key is (its TTL is renewed).
pub(crate) fn alive_key(server: &str) -> String {
    format!("pinned/{server}/alive")
}

/// What the server offers, as the replica that runs it last listed it.
pub(crate) fn offer_key(server: &str) -> String {
    format!("pinned/{server}/offer")
}

/// A request waiting for the replica that runs the server.
pub(crate) fn request_key(server: &str, id: &str) -> String {
    format!("pinned/{server}/request/{id}")
}

/// The answer to a request.
pub(crate) fn answer_key(server: &str, id: &str) -> String {
    format!("pinned/{server}/answer/{id}")
}

/// Where request ids are announced to the replica that runs the server.
pub(crate) fn requests_channel(server: &str) -> String {
    format!("pinned/{server}/requests")
}

/// Where the ids of requests their callers gave up on are announced.
pub(crate) fn cancels_channel(server: &str) -> String {
    format!("pinned/{server}/cancels")
}

/// Where the server's offer is announced as changed.
pub(crate) fn changes_channel(server: &str) -> String {
    format!("pinned/{server}/changes")
}

/// Where one request's progress, and then that it is answered, are announced.
pub(crate) fn request_channel(server: &str, id: &str) -> String {
    format!("pinned/{server}/call/{id}")
}

/// A new request id: 128 random bits as hex.
pub(crate) fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// Whether `id` is one [`new_id`] could have made (what arrives on the bus is checked before
/// it names a key).
pub(crate) fn is_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// What [`alive_key`] holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Alive {
    /// The replica's name (`[state] replica`).
    pub replica: String,
    /// A random number the running replica chose when it started (two replicas given the
    /// same name tell each other apart by it).
    pub nonce: String,
    /// The digest of the offer in [`offer_key`].
    pub digest: String,
}

/// What [`offer_key`] holds: what the server said when it connected, and its lists.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Offer {
    /// `serverInfo`.
    pub server: Option<mcp::Implementation>,
    /// Its capabilities.
    pub capabilities: mcp::ServerCapabilities,
    /// Its `instructions`.
    pub instructions: Option<String>,
    /// `tools/list`.
    pub tools: Vec<mcp::Tool>,
    /// `prompts/list`.
    pub prompts: Vec<mcp::Prompt>,
    /// `resources/list`.
    pub resources: Vec<mcp::Resource>,
    /// `resources/templates/list`.
    pub resource_templates: Vec<mcp::ResourceTemplate>,
}

impl Offer {
    /// The offer as JSON, and its digest (SHA-256 of that JSON, hex).
    pub(crate) fn encode(&self) -> (Vec<u8>, String) {
        use sha2::Digest;
        let bytes = serde_json::to_vec(self).unwrap_or_default();
        let digest = sha2::Sha256::digest(&bytes);
        let digest = digest.iter().map(|b| format!("{b:02x}")).collect();
        (bytes, digest)
    }
}

/// A request sent to the replica that runs the server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Request {
    /// `tools/call`, `prompts/get`, `resources/read` or `completion/complete`.
    pub method: String,
    /// Its params, as the caller's replica would have sent them to the server.
    pub params: Value,
    /// Whether its caller wants progress.
    pub progress: bool,
}

/// The answer to a [`Request`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Answer {
    /// The server's result.
    Result(Value),
    /// Why there is none.
    Error(mcp::ErrorData),
}

/// What [`request_channel`] carries.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Update {
    /// Progress of the request.
    Progress {
        /// How far.
        progress: f64,
        /// Of how much.
        total: Option<f64>,
        /// What it is doing (at most [`MAX_PROGRESS_MESSAGE`] bytes).
        message: Option<String>,
    },
    /// The answer is in [`answer_key`].
    Answered,
}

impl Update {
    /// Progress, its message cut to what the bus carries.
    pub(crate) fn progress(params: &mcp::ProgressNotificationParam) -> Update {
        let message = params.message.as_ref().map(|message| {
            let mut end = message.len().min(MAX_PROGRESS_MESSAGE);
            while !message.is_char_boundary(end) {
                end -= 1;
            }
            message[..end].to_owned()
        });
        Update::Progress { progress: params.progress, total: params.total, message }
    }
}

/// Why a value could not be written or read whole.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ChunkError {
    /// The state failed.
    #[error(transparent)]
    State(#[from] StateError),
    /// It is larger than [`MAX_CHUNKS`] chunks.
    #[error(
        "{bytes} bytes is more than the {} MiB a pinned server's request or answer may be",
        MAX_CHUNKS
    )]
    TooLarge {
        /// Its size.
        bytes: usize,
    },
    /// Part of it is missing (expired, or written by something else).
    #[error("part of it is missing from the shared state")]
    Torn,
}

/// Writes `value` at `key`, in chunks (`key/0`, `key/1`, ...) when it is larger than one
/// value: the chunks first, so that whoever reads `key` finds them all.
pub(crate) async fn put_chunked(
    state: &SharedState,
    key: &str,
    value: &[u8],
    ttl: Duration,
) -> Result<(), ChunkError> {
    if value.len() <= CHUNK_BYTES {
        let mut whole = Vec::with_capacity(value.len() + 1);
        whole.push(b'=');
        whole.extend_from_slice(value);
        state.put(key, &whole, ttl).await?;
        return Ok(());
    }
    let chunks = value.len().div_ceil(CHUNK_BYTES);
    if chunks > MAX_CHUNKS {
        return Err(ChunkError::TooLarge { bytes: value.len() });
    }
    for (n, chunk) in value.chunks(CHUNK_BYTES).enumerate() {
        state.put(&format!("{key}/{n}"), chunk, ttl).await?;
    }
    state.put(key, format!("#{chunks}").as_bytes(), ttl).await?;
    Ok(())
}

/// Reads and removes what [`put_chunked`] wrote at `key` (`None`: nothing is there; whoever
/// takes it first has it).
pub(crate) async fn take_chunked(
    state: &SharedState,
    key: &str,
) -> Result<Option<Vec<u8>>, ChunkError> {
    read_chunked(state, key, true).await
}

/// Reads what [`put_chunked`] wrote at `key`, leaving it.
pub(crate) async fn get_chunked(
    state: &SharedState,
    key: &str,
) -> Result<Option<Vec<u8>>, ChunkError> {
    read_chunked(state, key, false).await
}

/// Removes what [`put_chunked`] wrote at `key`, if anything (a request its caller gave up on).
pub(crate) async fn delete_chunked(state: &SharedState, key: &str) {
    let _ = take_chunked(state, key).await;
}

async fn read_chunked(
    state: &SharedState,
    key: &str,
    remove: bool,
) -> Result<Option<Vec<u8>>, ChunkError> {
    let read = |key: String| async move {
        if remove { state.take(&key).await } else { state.get(&key).await }
    };
    let Some(head) = read(key.to_owned()).await? else { return Ok(None) };
    match head.split_first() {
        Some((b'=', whole)) => Ok(Some(whole.to_vec())),
        Some((b'#', count)) => {
            let count: usize = std::str::from_utf8(count)
                .ok()
                .and_then(|count| count.parse().ok())
                .filter(|count| (1..=MAX_CHUNKS).contains(count))
                .ok_or(ChunkError::Torn)?;
            let mut value = Vec::new();
            for n in 0..count {
                let chunk = read(format!("{key}/{n}")).await?.ok_or(ChunkError::Torn)?;
                value.extend_from_slice(&chunk);
            }
            Ok(Some(value))
        }
        _ => Err(ChunkError::Torn),
    }
}
