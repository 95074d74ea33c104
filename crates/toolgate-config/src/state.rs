//! `[state]`: where replicas of one gateway keep what they share, and the key they seal what
//! they hand to clients with.
//!
//! ```toml
//! [state]
//! backend = "redis://state.internal:6379/0"   # or "postgres://...", or "memory" (the default)
//! shared_key = "${TOOLGATE_SHARED_KEY}"       # at least 32 bytes, the same on every replica
//! ```

use std::collections::BTreeMap;

use crate::check::Checker;
use crate::error::key_path;
use crate::model::{Secret, StateBackend, StateConfig};
use crate::value::Value;

const STATE_KEYS: &[&str] = &["backend", "shared_key"];

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
    StateConfig { backend, shared_key }
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
