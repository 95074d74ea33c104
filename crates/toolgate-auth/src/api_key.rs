//! API keys: `[auth.api_keys]` entries, a presented key checked against them, and fresh keys.
//!
//! A key is `tg_` and 32 random bytes in base64url. Its entry stores a digest, never the key:
//! `sha256:<hex>` (enough for random keys of this length; compared in constant time) or
//! `argon2:<PHC string>` (for keys chosen by people). A SHA-256 digest is tried first; the
//! argon2 entries, which are slow on purpose, only when none matched: so with argon2 entries
//! configured, every wrong key presented costs one argon2 verification per entry, and the
//! server should limit failed attempts before calling [`ApiKeys::verify`].

use std::collections::BTreeMap;

use argon2::{Argon2, PasswordHash, PasswordVerifier};
use base64::Engine as _;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;
use toolgate_config::{ApiKeyConfig, KeyHash};

use crate::{Identity, Method};

/// What a fresh key starts with.
pub const KEY_PREFIX: &str = "tg_";
/// Random bytes in a fresh key.
pub const KEY_BYTES: usize = 32;
/// The longest key looked at; anything longer is refused before it is hashed.
pub const MAX_KEY_LEN: usize = 512;

/// Why the API keys of a config cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ApiKeyError {
    /// An `argon2:` hash the `argon2` crate does not read (the config check reads PHC syntax).
    #[error("auth.api_keys.{name}.hash: not a usable argon2 PHC string: {reason}")]
    Argon2 {
        /// The entry.
        name: String,
        /// What the crate said.
        reason: String,
    },
    /// The operating system's random source failed.
    #[error("no random bytes for a new key: {0}")]
    Random(String),
}

enum Stored {
    Sha256([u8; 32]),
    Argon2(String),
}

struct Entry {
    name: String,
    stored: Stored,
    groups: Vec<String>,
    tenant: Option<String>,
}

/// The configured keys, ready to check presented ones.
pub struct ApiKeys {
    entries: Vec<Entry>,
}

impl std::fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.entries.iter().map(|e| &e.name)).finish()
    }
}

impl ApiKeys {
    /// From `[auth.api_keys]`; every `argon2:` string is parsed now, so that a request never
    /// meets one that cannot be.
    pub fn new(keys: &BTreeMap<String, ApiKeyConfig>) -> Result<ApiKeys, ApiKeyError> {
        let mut entries = Vec::with_capacity(keys.len());
        for (name, key) in keys {
            let stored = match &key.hash {
                KeyHash::Sha256(digest) => Stored::Sha256(*digest),
                KeyHash::Argon2(phc) => {
                    PasswordHash::new(phc).map_err(|error| ApiKeyError::Argon2 {
                        name: name.clone(),
                        reason: error.to_string(),
                    })?;
                    Stored::Argon2(phc.clone())
                }
            };
            entries.push(Entry {
                name: name.clone(),
                stored,
                groups: key.groups.clone(),
                tenant: key.tenant.clone(),
            });
        }
        Ok(ApiKeys { entries })
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The identity of the entry `presented` matches, if any. Every SHA-256 entry is compared
    /// (in constant time, without stopping at a match), then, only when none matched, the
    /// argon2 entries.
    pub fn verify(&self, presented: &str) -> Option<Identity> {
        if presented.is_empty() || presented.len() > MAX_KEY_LEN {
            return None;
        }
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        let mut found: Option<&Entry> = None;
        for entry in &self.entries {
            if let Stored::Sha256(stored) = &entry.stored
                && bool::from(stored.ct_eq(&digest))
                && found.is_none()
            {
                found = Some(entry);
            }
        }
        let found = found.or_else(|| {
            self.entries.iter().find(|entry| match &entry.stored {
                Stored::Argon2(phc) => PasswordHash::new(phc).is_ok_and(|hash| {
                    Argon2::default().verify_password(presented.as_bytes(), &hash).is_ok()
                }),
                Stored::Sha256(_) => false,
            })
        })?;
        Some(Identity {
            principal: found.name.clone(),
            groups: found.groups.clone(),
            tenant: found.tenant.clone(),
            method: Method::ApiKey,
            scopes: Vec::new(),
        })
    }
}

/// A fresh key and its digest.
pub struct NewKey {
    /// The key: shown once, never stored.
    pub key: String,
    /// Its `sha256:` digest, what the config holds.
    pub hash: KeyHash,
}

impl std::fmt::Debug for NewKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewKey").field("key", &"***").field("hash", &self.hash).finish()
    }
}

impl NewKey {
    /// The `[auth.api_keys]` line for this key: `NAME = { hash = "...", groups = [...],
    /// tenant = "..." }`, in TOML.
    pub fn config_line(&self, name: &str, groups: &[String], tenant: Option<&str>) -> String {
        let mut line =
            format!("{} = {{ hash = {}", toml_key(name), toml_string(&format!("{:?}", self.hash)));
        if !groups.is_empty() {
            let groups: Vec<String> = groups.iter().map(|g| toml_string(g)).collect();
            line.push_str(&format!(", groups = [{}]", groups.join(", ")));
        }
        if let Some(tenant) = tenant {
            line.push_str(&format!(", tenant = {}", toml_string(tenant)));
        }
        line.push_str(" }");
        line
    }
}

/// A fresh key from the operating system's CSPRNG: `tg_` and 32 bytes in base64url.
pub fn generate_key() -> Result<NewKey, ApiKeyError> {
    let mut bytes = [0u8; KEY_BYTES];
    getrandom::fill(&mut bytes).map_err(|error| ApiKeyError::Random(error.to_string()))?;
    let key =
        format!("{KEY_PREFIX}{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes));
    let hash = KeyHash::Sha256(Sha256::digest(key.as_bytes()).into());
    Ok(NewKey { key, hash })
}

/// A TOML key: bare when it can be, else a basic string.
fn toml_key(key: &str) -> String {
    let bare =
        !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare { key.to_owned() } else { toml_string(key) }
}

/// A TOML basic string.
fn toml_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests;
