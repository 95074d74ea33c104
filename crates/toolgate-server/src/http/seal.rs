//! Sealed session ids: with `[state] shared_key`, a handshake-era session's `Mcp-Session-Id`
//! carries what a replica needs to serve the session, encrypted and authenticated under a key
//! every replica derives from the shared key, so that a replica that never saw the session's
//! `initialize` (another one behind the same load balancer, or this one restarted) opens the
//! session from its id alone.
//!
//! An id is `s1.` then base64url (no padding) of a random 24-byte nonce and the XChaCha20-Poly1305
//! ciphertext of the content, whose key is HKDF-SHA256 of the shared key with the info
//! `toolgate session id v1`; the prefix is the associated data, so an id opens only as the
//! format version it names. Only visible ASCII, as the specification requires of the header.
//!
//! The content is JSON with one-letter keys: the negotiated protocol version, the client's
//! capabilities and `clientInfo` name and version, a SHA-256 digest of the owner (the
//! principal's kind, id and tenant: exactly what `Principal`'s equality compares, so the
//! session is still "only its owner's"; never a credential), when it was issued (Unix
//! seconds), and a random nonce that makes every id unique.
//!
//! What a client controls is bounded, so that no client can make an id (sent back with every
//! request) large: `clientInfo` keeps its name and version only, each cut to
//! [`MOST_CLIENT_FIELD_BYTES`]; capabilities are kept whole while their JSON fits in
//! [`MOST_CAPABILITIES_BYTES`], else without `experimental` and `extensions` (which toolgate
//! reads from no client), and else with `sampling.tools` and `sampling.context` emptied
//! (toolgate reads only whether they are there). The session the id was issued for keeps the
//! same fitted capabilities, so every replica serves it alike. An ordinary client's id is about
//! 300 characters, and none is longer than [`MOST_ID_CHARS`].
//!
//! An id opens until [`MAX_AGE`] after it was issued: later, a replica that does not hold the
//! session answers `404`, and the client initializes again. An id is not revoked by `DELETE`,
//! which ends one replica's copy only: revoking it everywhere needs state the replicas share.

#![allow(deprecated)] // sampling is deprecated in 2026-07-28 (SEP-2577) but still spoken

use std::time::Duration;

use base64::Engine as _;
use chacha20poly1305::aead::{Aead as _, KeyInit as _, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use toolgate_core::mcp;
use toolgate_intercept::Principal;

/// What every sealed id starts with: the format, version 1.
pub const PREFIX: &str = "s1.";

/// What the key is derived for (HKDF's `info`).
const KEY_INFO: &[u8] = b"toolgate session id v1";

/// How long after it was issued an id opens on a replica that does not hold its session.
pub const MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);

/// How far in the future an id's issue time may be (the replicas' clocks differ a little).
const CLOCK_SKEW: u64 = 5 * 60;

/// The most bytes the JSON of a client's capabilities takes in an id.
pub const MOST_CAPABILITIES_BYTES: usize = 256;

/// The most bytes of a client's name, and of its version, kept in an id (as JSON strings,
/// escapes counted).
pub const MOST_CLIENT_FIELD_BYTES: usize = 64;

/// The most bytes of sealed content: what the fitting above leaves takes at most 517.
const MOST_CONTENT_BYTES: usize = 544;

const NONCE_BYTES: usize = 24;
const TAG_BYTES: usize = 16;

/// The longest id: the prefix and the base64 of the nonce, the largest content and the tag.
pub const MOST_ID_CHARS: usize =
    PREFIX.len() + (NONCE_BYTES + MOST_CONTENT_BYTES + TAG_BYTES).div_ceil(3) * 4;

// Well under a kilobyte, whatever a client sends.
const _: () = assert!(MOST_ID_CHARS < 800);

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// Seals and opens session ids under the key derived from a shared key.
pub struct SessionSeal {
    cipher: XChaCha20Poly1305,
}

impl std::fmt::Debug for SessionSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionSeal(***)")
    }
}

/// What an id that opened says of its session.
#[derive(Debug, Clone)]
pub struct SealedSession {
    /// The protocol version negotiated at `initialize`.
    pub version: mcp::ProtocolVersion,
    /// What the client said at `initialize`, as the session keeps it (see [`fit`]).
    pub params: mcp::InitializeRequestParams,
    /// When it was issued, in Unix seconds.
    pub issued_at: u64,
    owner: [u8; 32],
}

impl SealedSession {
    /// Whether `caller` is the principal the session was opened for.
    pub fn is_owned_by(&self, caller: &Principal) -> bool {
        owner_digest(caller) == self.owner
    }
}

/// The sealed content, as JSON with short keys.
#[derive(Serialize, Deserialize)]
struct Content {
    /// The negotiated protocol version.
    v: String,
    /// The client's capabilities, fitted.
    c: mcp::ClientCapabilities,
    /// `clientInfo`: name and version, cut.
    i: (String, String),
    /// The owner's digest (base64url).
    o: String,
    /// Issued at, in Unix seconds.
    t: u64,
    /// A random nonce (base64url of 12 bytes).
    n: String,
}

impl SessionSeal {
    /// A seal under `shared_key` (any length: `[state]` checks that it has at least 32 bytes).
    pub fn new(shared_key: &[u8]) -> SessionSeal {
        let mut key = [0u8; 32];
        hkdf::Hkdf::<Sha256>::new(None, shared_key)
            .expand(KEY_INFO, &mut key)
            .expect("32 bytes is a valid HKDF-SHA256 output length");
        SessionSeal { cipher: XChaCha20Poly1305::new((&key).into()) }
    }

    /// The id of a session `owner` opened with `params` (already [`fit`]), given `version`,
    /// issued at `now` (Unix seconds).
    pub fn seal(
        &self,
        owner: &Principal,
        params: &mcp::InitializeRequestParams,
        version: &mcp::ProtocolVersion,
        now: u64,
    ) -> String {
        let mut nonce = [0u8; 12];
        getrandom::fill(&mut nonce).expect("the operating system's random source works");
        let content = Content {
            v: version.as_str().to_owned(),
            c: params.capabilities.clone(),
            i: (params.client_info.name.clone(), params.client_info.version.clone()),
            o: B64.encode(owner_digest(owner)),
            t: now,
            n: B64.encode(nonce),
        };
        let plain = serde_json::to_vec(&content).expect("the content serializes");
        debug_assert!(plain.len() <= MOST_CONTENT_BYTES, "fitted content fits: {}", plain.len());
        let mut nonce = [0u8; NONCE_BYTES];
        getrandom::fill(&mut nonce).expect("the operating system's random source works");
        let sealed = self
            .cipher
            .encrypt(XNonce::from_slice(&nonce), Payload { msg: &plain, aad: PREFIX.as_bytes() })
            .expect("encrypting a buffer in memory does not fail");
        let mut bytes = Vec::with_capacity(NONCE_BYTES + sealed.len());
        bytes.extend_from_slice(&nonce);
        bytes.extend_from_slice(&sealed);
        format!("{PREFIX}{}", B64.encode(bytes))
    }

    /// What `id` says, when this key sealed it and it is not past [`MAX_AGE`] at `now` (Unix
    /// seconds); `None` for anything else, whatever it is.
    pub fn open(&self, id: &str, now: u64) -> Option<SealedSession> {
        if id.len() > MOST_ID_CHARS {
            return None;
        }
        let bytes = B64.decode(id.strip_prefix(PREFIX)?).ok()?;
        if bytes.len() < NONCE_BYTES + TAG_BYTES {
            return None;
        }
        let (nonce, sealed) = bytes.split_at(NONCE_BYTES);
        let plain = self
            .cipher
            .decrypt(XNonce::from_slice(nonce), Payload { msg: sealed, aad: PREFIX.as_bytes() })
            .ok()?;
        let content: Content = serde_json::from_slice(&plain).ok()?;
        let max_age = MAX_AGE.as_secs();
        if content.t > now.saturating_add(CLOCK_SKEW) || now.saturating_sub(content.t) > max_age {
            return None;
        }
        let owner: [u8; 32] = B64.decode(&content.o).ok()?.try_into().ok()?;
        let params: mcp::InitializeRequestParams = serde_json::from_value(serde_json::json!({
            "protocolVersion": content.v,
            "capabilities": content.c,
            "clientInfo": {"name": content.i.0, "version": content.i.1},
        }))
        .ok()?;
        Some(SealedSession {
            version: params.protocol_version.clone(),
            params,
            issued_at: content.t,
            owner,
        })
    }
}

/// `params` as a sealed session keeps them: the client's name and version only, cut to
/// [`MOST_CLIENT_FIELD_BYTES`], and its capabilities fitted into [`MOST_CAPABILITIES_BYTES`]
/// (see the module's documentation).
pub fn fit(params: &mcp::InitializeRequestParams) -> mcp::InitializeRequestParams {
    let capabilities = fit_capabilities(&params.capabilities);
    let fitted = serde_json::json!({
        "protocolVersion": params.protocol_version,
        "capabilities": capabilities,
        "clientInfo": {
            "name": cut(&params.client_info.name, MOST_CLIENT_FIELD_BYTES),
            "version": cut(&params.client_info.version, MOST_CLIENT_FIELD_BYTES),
        },
    });
    serde_json::from_value(fitted).expect("fitted parameters read back")
}

fn fit_capabilities(capabilities: &mcp::ClientCapabilities) -> mcp::ClientCapabilities {
    let fits = |c: &mcp::ClientCapabilities| {
        serde_json::to_vec(c).is_ok_and(|json| json.len() <= MOST_CAPABILITIES_BYTES)
    };
    // What toolgate reads and relays; `experimental` and `extensions` only while they fit.
    let mut fitted = mcp::ClientCapabilities::default();
    fitted.roots = capabilities.roots.clone();
    fitted.elicitation = capabilities.elicitation.clone();
    fitted.sampling = capabilities.sampling.clone();
    fitted.extensions = capabilities.extensions.clone();
    fitted.experimental = capabilities.experimental.clone();
    if fits(&fitted) {
        return fitted;
    }
    fitted.experimental = None;
    if fits(&fitted) {
        return fitted;
    }
    fitted.extensions = None;
    if fits(&fitted) {
        return fitted;
    }
    if let Some(sampling) = &mut fitted.sampling {
        for declared in [&mut sampling.tools, &mut sampling.context].into_iter().flatten() {
            declared.clear();
        }
    }
    fitted
}

/// The longest start of `text` that takes at most `most` bytes in a JSON string (a quote, a
/// backslash or a control character takes more than itself there).
fn cut(text: &str, most: usize) -> &str {
    let mut taken = 0;
    for (at, c) in text.char_indices() {
        taken += match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            c if u32::from(c) < 0x20 => 6,
            c => c.len_utf8(),
        };
        if taken > most {
            return &text[..at];
        }
    }
    text
}

/// SHA-256 of what `Principal`'s equality compares (kind, id, tenant), each length-prefixed.
fn owner_digest(principal: &Principal) -> [u8; 32] {
    let mut digest = Sha256::new();
    for part in [Some(&principal.kind), Some(&principal.id), principal.tenant.as_ref()] {
        match part {
            Some(text) => {
                digest.update([1]);
                digest.update((text.len() as u64).to_be_bytes());
                digest.update(text.as_bytes());
            }
            None => digest.update([0]),
        }
    }
    digest.finalize().into()
}

/// Now, in Unix seconds (the clock sealed ids are issued and checked on: the replicas share
/// no other).
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// A random number that tells one copy of a session (on one replica) from another: where its
/// questions' ids start, and what its streams' event ids are marked with. Below 2^52, so that
/// the ids stay exact in a JavaScript number; never 0.
pub(crate) fn copy_mark() -> u64 {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the operating system's random source works");
    (u64::from_le_bytes(bytes) >> 12).max(1)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod props;
