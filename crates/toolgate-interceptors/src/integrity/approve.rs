//! Accepting a tool's contract over the admin API: the lock files of a pipeline's `integrity`
//! interceptors, and pinning one tool in them.
//!
//! An approver accepts what they reviewed, not whatever the server lists at the moment the
//! request arrives: the request names the contract's digest (shown by `toolgate pin --diff`
//! and in the refusal of the withheld tool), and nothing is written when the server's contract
//! is another by then. A lock file that existed and is gone is not silently made anew with one
//! pin (every other tool would become merely unknown): it must be restored, or written again
//! by `toolgate pin`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use toolgate_core::mcp;
use toolgate_integrity::diff::changes;
use toolgate_integrity::{Contract, Kind, Lock, LockError};

/// The lock files of the `integrity` interceptors of a pipeline, where the admin API writes the
/// contracts approvers accept.
#[derive(Debug, Default)]
pub struct IntegrityLocks(Mutex<Vec<LockFile>>);

/// One lock file, and whether it has existed while toolgate ran (shared with the interceptors
/// that read it).
#[derive(Debug)]
struct LockFile {
    path: PathBuf,
    existed: Arc<AtomicBool>,
}

impl IntegrityLocks {
    /// Adds `path` (once); the flag that says whether the file has existed, which every
    /// interceptor reading it shares.
    pub(super) fn register(&self, path: &Path) -> Arc<AtomicBool> {
        let mut files = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(known) = files.iter().find(|known| known.path == path) {
            return known.existed.clone();
        }
        let existed = Arc::new(AtomicBool::new(false));
        files.push(LockFile { path: path.to_owned(), existed: existed.clone() });
        existed
    }

    /// The lock files, in pipeline order (empty: no `integrity` in the pipeline).
    pub fn paths(&self) -> Vec<PathBuf> {
        let files = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        files.iter().map(|file| file.path.clone()).collect()
    }

    /// The lock files, each with whether it has existed while toolgate ran.
    pub(super) fn files(&self) -> Vec<(PathBuf, bool)> {
        let files = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        files.iter().map(|f| (f.path.clone(), f.existed.load(Ordering::Acquire))).collect()
    }

    /// Pins `tool` (as `server` lists it under `original`) in every lock file, leaving their
    /// other pins, if its contract is still the one the approver reviewed (`expected`, its
    /// digest). Nothing is written when it is not, or when a lock file that existed is gone.
    pub fn approve(
        &self,
        server: &str,
        original: &str,
        tool: &mcp::Tool,
        expected: &str,
    ) -> Result<Vec<Approved>, ApproveError> {
        let now = contract_of(original, tool);
        if now.digest != expected {
            return Err(ApproveError::Changed {
                expected: expected.to_owned(),
                digest: now.digest,
            });
        }
        let mut locks = Vec::new();
        for (path, existed) in self.files() {
            match Lock::read(&path)? {
                Some(lock) => locks.push((path, lock)),
                None if existed => return Err(ApproveError::LockGone { path }),
                None => locks.push((path, Lock::default())),
            }
        }
        let mut approved = Vec::new();
        for (path, mut lock) in locks {
            let before = lock.contract(server, Kind::Tool, original);
            let changes = before
                .as_ref()
                .map(|pinned| changes(pinned, &now).iter().map(ToString::to_string).collect())
                .unwrap_or_default();
            lock.pin(server, now.clone());
            lock.write(&path)?;
            approved.push(Approved {
                lock: path,
                pinned_digest: before.map(|pinned| pinned.digest),
                digest: now.digest.clone(),
                changes,
            });
        }
        Ok(approved)
    }
}

/// `tool`'s contract as its server lists it under `original` (the exposed name aside): what
/// is pinned, and whose digest an approver names.
pub(super) fn contract_of(original: &str, tool: &mcp::Tool) -> Contract {
    let mut named = tool.clone();
    named.name = original.to_owned().into();
    Contract::tool(&named)
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

/// Why a contract was not approved.
#[derive(Debug, thiserror::Error)]
pub enum ApproveError {
    /// The server's contract is not the one the approver reviewed.
    #[error(
        "the tool's contract is {digest} now, not {expected} (the one approved): it changed \
         since it was reviewed; review it again (`toolgate pin --diff`)"
    )]
    Changed {
        /// The digest the approver gave.
        expected: String,
        /// The digest of the contract the server lists now.
        digest: String,
    },
    /// A lock file that existed while toolgate ran is gone.
    #[error(
        "the lock file {} is gone; restore it, or pin again with `toolgate pin`, before \
         approving into it", .path.display()
    )]
    LockGone {
        /// The lock file.
        path: PathBuf,
    },
    /// A lock file could not be read or written.
    #[error(transparent)]
    Lock(#[from] LockError),
}
