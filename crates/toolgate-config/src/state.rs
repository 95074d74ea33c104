//! `[state]`: where replicas of one gateway keep what they share, and the key they seal what
//! they hand to clients with.
//!
//! ```toml
//! [state]
//! backend = "redis://state.internal:6379/0"   # or "postgres://...", or "memory" (the default)
//! shared_key = "${TOOLGATE_SHARED_KEY}"       # at least 32 bytes, the same on every replica
//! replica = "${TOOLGATE_REPLICA}"             # this replica's name, for pinned servers
//! ```
//!
//! A stateful server runs on one replica only (`[servers.NAME] replica = "a"`); the others
//! reach it through the shared state, so pinning needs a shared backend and named replicas.

use std::collections::BTreeMap;

use crate::check::Checker;
use crate::error::key_path;
use crate::model::{Secret, StateBackend, StateConfig};
use crate::value::Value;

const STATE_KEYS: &[&str] = &["backend", "shared_key", "replica"];

/// The longest replica name.
pub const MAX_REPLICA_NAME: usize = 64;

/// The fewest bytes a shared key may have (an AES-256 key's worth).
pub const SHARED_KEY_MIN_BYTES: usize = 32;

const BACKEND_FORMS: &str = "expected \"memory\", \"redis://...\" (or \"rediss://...\"), or \
                             \"postgres://...\" (or \"postgresql://...\")";

/// `[state]` (`value`, when written).
pub(crate) fn check_state(cx: &mut Checker<'_>, value: Option<&Value>) -> StateConfig {
    let Some(value) = value else { return StateConfig::default() };
    let fields: BTreeMap<&str, &Value> = match cx.table(value, "state") {
        Some(entries) => cx.known_keys(entries, "state", STATE_KEYS),
        None => return StateConfig::default(),
    };
    let at = |key: &str| key_path("state", key);
    let backend = match fields.get("backend") {
        Some(value) => backend(cx, value, &at("backend")).unwrap_or_default(),
        None => StateBackend::Memory,
    };
    let shared_key = fields.get("shared_key").and_then(|value| {
        let key = cx.secret(|cx| cx.interpolated_string(value, &at("shared_key")))?;
        if key.len() < SHARED_KEY_MIN_BYTES {
            cx.error(
                &at("shared_key"),
                format!(
                    "is {} bytes long; a shared key needs at least {SHARED_KEY_MIN_BYTES} \
                     (such as the output of `openssl rand -base64 32`)",
                    key.len()
                ),
            );
            return None;
        }
        Some(Secret::new(key))
    });
    if !matches!(backend, StateBackend::Memory)
        && shared_key.is_none()
        && !fields.contains_key("shared_key")
    {
        cx.error(
            &at("shared_key"),
            "a shared backend is for several replicas, which need the same shared_key to read \
             what another sealed: set it (at least 32 bytes, the same on every replica)",
        );
    }
    let replica = fields.get("replica").and_then(|value| replica_name(cx, value, &at("replica")));
    StateConfig { backend, shared_key, replica }
}

/// A replica's name (`[state] replica`, `[servers.NAME] replica`): interpolated, 1 to
/// [`MAX_REPLICA_NAME`] characters of `A-Z a-z 0-9 _ . -` (it becomes part of keys and
/// channels of the shared state).
pub(crate) fn replica_name(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<String> {
    let name = cx.interpolated_string(value, path)?;
    let ok = !name.is_empty()
        && name.len() <= MAX_REPLICA_NAME
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if !ok {
        cx.error(
            path,
            format!(
                "{name:?} is not a replica name (1 to {MAX_REPLICA_NAME} characters of A-Z a-z \
                 0-9 _ . -)"
            ),
        );
        return None;
    }
    Some(name)
}

/// Servers pinned to a replica (`[servers.NAME] replica`) need what pinning works through: a
/// shared backend, and a name for this replica to be matched against.
pub(crate) fn check_pins<'a>(
    cx: &mut Checker<'_>,
    state: &StateConfig,
    pinned: impl IntoIterator<Item = (&'a str, &'a str)>,
) {
    for (server, replica) in pinned {
        let path = key_path(&key_path("servers", server), "replica");
        if matches!(state.backend, StateBackend::Memory) {
            cx.error(
                &path,
                format!(
                    "pins the server to replica {replica:?}, which the other replicas reach \
                     through the shared state: set [state] backend to a redis:// or \
                     postgres:// URL"
                ),
            );
        } else if state.replica.is_none() {
            cx.error(
                &path,
                format!(
                    "pins the server to replica {replica:?}, but this replica has no name to \
                     compare: set [state] replica (for example \"${{TOOLGATE_REPLICA}}\", a \
                     different name in each replica's environment)"
                ),
            );
        }
    }
}

/// `backend`: `memory`, or a Redis or PostgreSQL URL (which may hold a password, so it is
/// interpolated as a secret).
fn backend(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<StateBackend> {
    let text = cx.secret(|cx| cx.interpolated_string(value, path))?;
    let text = text.trim();
    if text == "memory" {
        return Some(StateBackend::Memory);
    }
    let redis = text.starts_with("redis://") || text.starts_with("rediss://");
    let postgres = text.starts_with("postgres://") || text.starts_with("postgresql://");
    if !redis && !postgres {
        // Not quoted: it may be a URL with a password.
        cx.error(path, BACKEND_FORMS);
        return None;
    }
    if let Err(error) = url::Url::parse(text) {
        let what = if redis { "Redis" } else { "Postgres" };
        cx.error(path, format!("invalid {what} URL: {error}"));
        return None;
    }
    let url = Secret::new(text);
    Some(if redis { StateBackend::Redis(url) } else { StateBackend::Postgres(url) })
}

#[cfg(test)]
mod tests;
