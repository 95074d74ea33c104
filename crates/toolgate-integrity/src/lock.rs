//! The lock file, `toolgate.lock`: per server, per tool (and prompt, resource, resource
//! template), the digest and the contract itself, so that a change can be shown, not only
//! detected.
//!
//! It is pretty-printed JSON (JSON, not TOML: a schema can hold `null`, which TOML cannot
//! write) with every key in a stable order, so it diffs well under version control:
//!
//! ```json
//! {
//!   "version": 1,
//!   "servers": {
//!     "fs": {
//!       "tools": {
//!         "read_file": {
//!           "digest": "sha256:…",
//!           "contract": { "description": "…", "inputSchema": { … }, "name": "read_file" }
//!         }
//!       }
//!     }
//!   }
//! }
//! ```
//!
//! Reading it checks every digest against its contract: a hand edit of one without the other
//! is refused, not trusted.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::contract::{Contract, Kind};

/// The lock file's name, beside the config.
pub const LOCK_FILE: &str = "toolgate.lock";

/// The format version this build reads and writes.
pub const VERSION: u32 = 1;

/// Why a lock file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("cannot read {}: {source}", .path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot write {}: {source}", .path.display())]
    Write { path: PathBuf, source: std::io::Error },
    #[error("{} is not a toolgate lock file: {source}", .path.display())]
    Parse { path: PathBuf, source: serde_json::Error },
    #[error("{} has version {found}; this toolgate reads version {VERSION}", .path.display())]
    Version { path: PathBuf, found: u32 },
    #[error(
        "{}: the digest of {} `{key}` of server `{server}` does not match its contract \
         (the file was edited by hand?); pin it again with `toolgate pin --server {server}`",
        .path.display(), .kind.noun()
    )]
    Mismatch { path: PathBuf, server: String, kind: Kind, key: String },
}

/// Every pinned contract, by server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lock {
    version: u32,
    #[serde(default)]
    servers: BTreeMap<String, ServerPins>,
}

impl Default for Lock {
    fn default() -> Self {
        Lock { version: VERSION, servers: BTreeMap::new() }
    }
}

/// One server's pins, by kind and key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ServerPins {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    tools: BTreeMap<String, Pin>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    prompts: BTreeMap<String, Pin>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    resources: BTreeMap<String, Pin>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    resource_templates: BTreeMap<String, Pin>,
}

impl ServerPins {
    fn of(&self, kind: Kind) -> &BTreeMap<String, Pin> {
        match kind {
            Kind::Tool => &self.tools,
            Kind::Prompt => &self.prompts,
            Kind::Resource => &self.resources,
            Kind::ResourceTemplate => &self.resource_templates,
        }
    }

    fn of_mut(&mut self, kind: Kind) -> &mut BTreeMap<String, Pin> {
        match kind {
            Kind::Tool => &mut self.tools,
            Kind::Prompt => &mut self.prompts,
            Kind::Resource => &mut self.resources,
            Kind::ResourceTemplate => &mut self.resource_templates,
        }
    }
}

/// One pinned contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Pin {
    digest: String,
    contract: Value,
}

impl Lock {
    /// The lock file at `path`; `None` if there is none.
    pub fn read(path: &Path) -> Result<Option<Lock>, LockError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(LockError::Read { path: path.to_owned(), source }),
        };
        let lock: Lock = serde_json::from_str(&text)
            .map_err(|source| LockError::Parse { path: path.to_owned(), source })?;
        if lock.version != VERSION {
            return Err(LockError::Version { path: path.to_owned(), found: lock.version });
        }
        for (server, pins) in &lock.servers {
            for kind in Kind::ALL {
                for (key, pin) in pins.of(kind) {
                    if Contract::new(kind, key, pin.contract.clone()).digest != pin.digest {
                        return Err(LockError::Mismatch {
                            path: path.to_owned(),
                            server: server.clone(),
                            kind,
                            key: key.clone(),
                        });
                    }
                }
            }
        }
        Ok(Some(lock))
    }

    /// Writes the lock file to `path`, whole or not at all (a temporary file beside it,
    /// renamed over it). The file is its owner's only (`0600`, as the temporary file is
    /// created), whatever mode the file it replaces had.
    pub fn write(&self, path: &Path) -> Result<(), LockError> {
        let error = |source| LockError::Write { path: path.to_owned(), source };
        let mut text = serde_json::to_string_pretty(self).expect("a lock serializes");
        text.push('\n');
        // The temporary file goes beside the lock (a rename does not cross file systems); an
        // absolute path always has a folder, even `toolgate.lock` alone.
        let absolute = std::path::absolute(path).map_err(error)?;
        let dir = absolute.parent().unwrap_or(Path::new("/"));
        let mut temporary = tempfile::NamedTempFile::new_in(dir).map_err(error)?;
        temporary.write_all(text.as_bytes()).map_err(error)?;
        temporary.as_file().sync_all().map_err(error)?;
        temporary.persist(path).map_err(|e| error(e.error))?;
        Ok(())
    }

    /// The servers with pins, in name order.
    pub fn servers(&self) -> impl Iterator<Item = &str> {
        self.servers.keys().map(String::as_str)
    }

    /// Whether `server` has a section (even an empty one: a server pinned with nothing).
    pub fn has_server(&self, server: &str) -> bool {
        self.servers.contains_key(server)
    }

    /// Replaces `server`'s pins with `contracts`.
    pub fn pin_server(&mut self, server: &str, contracts: impl IntoIterator<Item = Contract>) {
        let mut pins = ServerPins::default();
        for contract in contracts {
            let pin = Pin { digest: contract.digest, contract: contract.value };
            pins.of_mut(contract.kind).insert(contract.key, pin);
        }
        self.servers.insert(server.to_owned(), pins);
    }

    /// Pins one contract of `server`, leaving the rest as they are.
    pub fn pin(&mut self, server: &str, contract: Contract) {
        let pin = Pin { digest: contract.digest, contract: contract.value };
        self.servers
            .entry(server.to_owned())
            .or_default()
            .of_mut(contract.kind)
            .insert(contract.key, pin);
    }

    /// Removes one pin; whether there was one.
    pub fn unpin(&mut self, server: &str, kind: Kind, key: &str) -> bool {
        self.servers.get_mut(server).is_some_and(|pins| pins.of_mut(kind).remove(key).is_some())
    }

    /// Removes `server`'s section; whether there was one.
    pub fn forget_server(&mut self, server: &str) -> bool {
        self.servers.remove(server).is_some()
    }

    /// The pinned digest of `kind` and `key` of `server` (cheaper than [`contract`](Self::contract)).
    pub fn digest(&self, server: &str, kind: Kind, key: &str) -> Option<&str> {
        Some(self.servers.get(server)?.of(kind).get(key)?.digest.as_str())
    }

    /// The pinned contract of `kind` and `key` of `server`.
    pub fn contract(&self, server: &str, kind: Kind, key: &str) -> Option<Contract> {
        let pin = self.servers.get(server)?.of(kind).get(key)?;
        Some(Contract {
            kind,
            key: key.to_owned(),
            value: pin.contract.clone(),
            digest: pin.digest.clone(),
        })
    }

    /// Every pinned contract of `server`, by kind then key.
    pub fn contracts(&self, server: &str) -> Vec<Contract> {
        let Some(pins) = self.servers.get(server) else { return Vec::new() };
        Kind::ALL
            .into_iter()
            .flat_map(|kind| {
                pins.of(kind).keys().filter_map(move |key| self.contract(server, kind, key))
            })
            .collect()
    }

    /// How `current` (what `server` offers now) differs from its pins.
    pub fn drift(&self, server: &str, current: &[Contract]) -> ServerDrift {
        let mut drift = ServerDrift {
            server: server.to_owned(),
            pinned: self.has_server(server),
            ..ServerDrift::default()
        };
        for now in current {
            match self.contract(server, now.kind, &now.key) {
                None => drift.added.push(now.clone()),
                Some(pinned) if pinned.digest != now.digest => {
                    drift.changed.push((pinned, now.clone()));
                }
                Some(_) => {}
            }
        }
        let offered: std::collections::HashSet<(Kind, &str)> =
            current.iter().map(|now| (now.kind, now.key.as_str())).collect();
        if let Some(pins) = self.servers.get(server) {
            for kind in Kind::ALL {
                for key in pins.of(kind).keys() {
                    if !offered.contains(&(kind, key.as_str())) {
                        drift.removed.extend(self.contract(server, kind, key));
                    }
                }
            }
        }
        drift
    }
}

/// What changed on one server since it was pinned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerDrift {
    pub server: String,
    /// Whether the lock has a section for the server at all.
    pub pinned: bool,
    /// Offered now, not pinned.
    pub added: Vec<Contract>,
    /// Pinned, not offered now.
    pub removed: Vec<Contract>,
    /// Offered under a pinned key with another contract: (pinned, now).
    pub changed: Vec<(Contract, Contract)>,
}

impl ServerDrift {
    /// Nothing changed.
    pub fn is_empty(&self) -> bool {
        self.pinned && self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

#[cfg(test)]
mod tests;
