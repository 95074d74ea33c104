//! Accepting a tool's contract over the admin API: the lock files of a pipeline's `integrity`
//! interceptors, and pinning one tool in one of them.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use toolgate_core::mcp;
use toolgate_integrity::diff::changes;
use toolgate_integrity::{Contract, Kind, Lock};

/// The lock files of the `integrity` interceptors of a pipeline, where the admin API writes the
/// contracts approvers accept.
#[derive(Debug, Default)]
pub struct IntegrityLocks(Mutex<Vec<PathBuf>>);

impl IntegrityLocks {
    pub(super) fn register(&self, path: &Path) {
        let mut paths = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if !paths.iter().any(|known| known == path) {
            paths.push(path.to_owned());
        }
    }

    /// The lock files, in pipeline order (empty: no `integrity` in the pipeline).
    pub fn paths(&self) -> Vec<PathBuf> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// What accepting a tool's contract did to one lock file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approved {
    pub lock: PathBuf,
    /// The digest it was pinned with before, if it was.
    pub pinned_digest: Option<String>,
    pub digest: String,
    /// What changed from the old pin, in words.
    pub changes: Vec<String>,
}

/// Pins `tool` (as `server` lists it under `original`) in the lock file at `path`, leaving the
/// other pins: an approver accepting a new contract. The gateway sees it at the next list.
pub fn approve(
    path: &Path,
    server: &str,
    original: &str,
    tool: &mcp::Tool,
) -> Result<Approved, toolgate_integrity::LockError> {
    let mut lock = Lock::read(path)?.unwrap_or_default();
    let mut named = tool.clone();
    named.name = original.to_owned().into();
    let now = Contract::tool(&named);
    let before = lock.contract(server, Kind::Tool, original);
    let changes = before
        .as_ref()
        .map(|pinned| changes(pinned, &now).iter().map(ToString::to_string).collect())
        .unwrap_or_default();
    let approved = Approved {
        lock: path.to_owned(),
        pinned_digest: before.map(|pinned| pinned.digest),
        digest: now.digest.clone(),
        changes,
    };
    lock.pin(server, now);
    lock.write(path)?;
    Ok(approved)
}
