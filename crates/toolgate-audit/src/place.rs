//! Whether a path can hold the audit log, found without creating or writing anything: its
//! directory must exist and take new files, and a log already there must be a regular file that
//! may be read and appended to. [`AuditLog::open`](crate::AuditLog::open) asks first, and
//! `toolgate config check` asks alone.
//!
//! Writability is `access(2)`'s answer for this process's user, so it is true for root on any
//! writable file system whatever the mode bits say, as it is when the log is really opened.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use nix::unistd::{AccessFlags, access};

use crate::error::{AuditError, PlaceProblem};

/// Checks that `path` can hold the audit log.
pub(crate) fn check_place(path: &Path) -> Result<(), AuditError> {
    place_problem(path)
        .map_or(Ok(()), |problem| Err(AuditError::Place { path: path.to_path_buf(), problem }))
}

fn place_problem(path: &Path) -> Option<PlaceProblem> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Some(PlaceProblem::NotADirectory { path: dir.to_path_buf() }),
        Err(error) if error.kind() == ErrorKind::NotFound => {
            return Some(PlaceProblem::NoDirectory { dir: dir.to_path_buf() });
        }
        Err(error) if error.kind() == ErrorKind::NotADirectory => {
            return Some(PlaceProblem::NotADirectory { path: first_non_directory(dir) });
        }
        Err(error) => {
            return Some(PlaceProblem::Inaccessible {
                path: dir.to_path_buf(),
                reason: error.kind().to_string(),
            });
        }
    }
    match std::fs::metadata(path) {
        Err(error) if error.kind() == ErrorKind::NotFound => {
            let allowed = access(dir, AccessFlags::W_OK | AccessFlags::X_OK);
            allowed.err().map(|errno| PlaceProblem::DirectoryNotWritable {
                dir: dir.to_path_buf(),
                reason: errno.desc().to_owned(),
            })
        }
        Err(error) => Some(PlaceProblem::Inaccessible {
            path: path.to_path_buf(),
            reason: error.kind().to_string(),
        }),
        Ok(meta) if !meta.is_file() => Some(PlaceProblem::NotAFile),
        Ok(_) => access(path, AccessFlags::R_OK | AccessFlags::W_OK)
            .err()
            .map(|errno| PlaceProblem::FileNotWritable { reason: errno.desc().to_owned() }),
    }
}

/// The first ancestor of `dir` (from the root down) that exists and is not a directory; `dir`
/// itself when none is found.
fn first_non_directory(dir: &Path) -> PathBuf {
    let mut ancestors: Vec<&Path> = dir.ancestors().collect();
    ancestors.reverse();
    ancestors
        .into_iter()
        .find(|p| std::fs::metadata(p).is_ok_and(|meta| !meta.is_dir()))
        .unwrap_or(dir)
        .to_path_buf()
}

#[cfg(test)]
mod tests;
