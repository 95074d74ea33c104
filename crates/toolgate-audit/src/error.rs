//! What can go wrong with an audit log: the file itself, or the chain of records in it.

use std::fmt;
use std::path::PathBuf;

/// An audit log could not be read or written, or its chain of records is broken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// The file (or its directory) could not be created, opened, read or written.
    #[error("audit log {}: cannot {action}", path.display())]
    Io {
        /// The audit log's file.
        path: PathBuf,
        /// What was being done: `open`, `read`, `append to`, ...
        action: &'static str,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
    /// The record at `line` (counted from 1) breaks the chain. [`AuditLog::open`] refuses to
    /// append to such a file.
    ///
    /// [`AuditLog::open`]: crate::AuditLog::open
    #[error("audit log {}, line {line}: {problem}", path.display())]
    Broken {
        /// The audit log's file.
        path: PathBuf,
        /// The line of the record that breaks the chain, from 1.
        line: u64,
        /// How it breaks it.
        problem: ChainProblem,
    },
    /// The path cannot hold the log: see [`PlaceProblem`].
    #[error("audit log {}: {problem}", path.display())]
    Place {
        /// The audit log's file.
        path: PathBuf,
        /// Why it cannot be there.
        problem: PlaceProblem,
    },
    /// The chain is whole but does not end where it was expected to
    /// ([`verify_with_head`](crate::verify_with_head)).
    #[error(
        "audit log {}: ends with record {records} at {found}, not at the expected head {expected}{}",
        path.display(),
        match expected_at {
            Some(line) => format!(" (that is line {line}: records were added after it)"),
            None => " (records were removed from its end, or its last record was changed)".into(),
        }
    )]
    HeadMismatch {
        /// The audit log's file.
        path: PathBuf,
        /// How many records the file holds.
        records: u64,
        /// The head the caller expected.
        expected: String,
        /// The hash of the file's last line.
        found: String,
        /// The line that hashes to `expected`, if one does.
        expected_at: Option<u64>,
    },
}

/// Why a path cannot hold the audit log ([`AuditLog::check`](crate::AuditLog::check)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlaceProblem {
    /// The directory the log would be in does not exist (toolgate does not create it: a
    /// missing directory is more often a typo than a wish).
    #[error("its directory {} does not exist", dir.display())]
    NoDirectory {
        /// The directory.
        dir: PathBuf,
    },
    /// What should be the log's directory, or one above it, is something else.
    #[error("{} is not a directory", path.display())]
    NotADirectory {
        /// The first path on the way that is not a directory.
        path: PathBuf,
    },
    /// The directory exists but new files may not be made in it.
    #[error("toolgate may not create files in {} ({reason})", dir.display())]
    DirectoryNotWritable {
        /// The directory.
        dir: PathBuf,
        /// What the operating system said.
        reason: String,
    },
    /// The log's path exists and is not a regular file.
    #[error("it exists and is not a regular file")]
    NotAFile,
    /// The log exists but may not be read and appended to.
    #[error("toolgate may not read and append to it ({reason})")]
    FileNotWritable {
        /// What the operating system said.
        reason: String,
    },
    /// The directory could not be looked at.
    #[error("cannot look at {} ({reason})", path.display())]
    Inaccessible {
        /// What could not be looked at.
        path: PathBuf,
        /// What the operating system said.
        reason: String,
    },
}

impl AuditError {
    /// Where the chain broke, for [`AuditError::Broken`].
    pub fn problem(&self) -> Option<(u64, &ChainProblem)> {
        match self {
            AuditError::Broken { line, problem, .. } => Some((*line, problem)),
            _ => None,
        }
    }
}

/// How a record breaks the chain.
///
/// `seq` must count 1, 2, 3, ... and each record's `prev` must be the SHA-256 of the line before
/// it (64 zeros for the first). Verification stops at the first record that breaks either rule
/// and names what most likely happened there.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChainProblem {
    /// The line is not a JSON object with a positive integer `seq` and a 64-hex-digit `prev`
    /// (a garbled line, or one cut short by a crash).
    Malformed {
        /// What is wrong with the line.
        reason: String,
    },
    /// `seq` skips forward and the records in between appear nowhere in the file.
    Removed {
        /// The `seq` the line should have had: the first record missing.
        expected: u64,
        /// The `seq` it has: the first record after the gap.
        found: u64,
    },
    /// `seq` repeats another record's: an extra record was put into the file.
    Inserted {
        /// The repeated `seq`.
        seq: u64,
        /// The other line with the same `seq`.
        also_at: u64,
    },
    /// `seq` skips forward but the expected record appears later in the file.
    Reordered {
        /// The `seq` the line should have had.
        expected: u64,
        /// The `seq` it has.
        found: u64,
        /// The line where record `expected` is.
        expected_at: u64,
    },
    /// `seq` continues, but the next line's `prev` is not this line's hash: this line was
    /// changed after the next one was written (or the next line's `prev` was).
    Edited,
    /// The first record's `prev` is not 64 zeros: it was changed, or the file does not start
    /// at the beginning of its chain.
    BadGenesis,
}

impl fmt::Display for ChainProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChainProblem::Malformed { reason } => write!(f, "malformed record: {reason}"),
            ChainProblem::Removed { expected, found } if found - expected == 1 => {
                write!(
                    f,
                    "seq {found} where {expected} was expected: record {expected} was removed"
                )
            }
            ChainProblem::Removed { expected, found } => write!(
                f,
                "seq {found} where {expected} was expected: records {expected} to {} were removed",
                found - 1
            ),
            ChainProblem::Inserted { seq, also_at } => {
                write!(f, "seq {seq} is also the seq of line {also_at}: a record was inserted")
            }
            ChainProblem::Reordered { expected, found, expected_at } => write!(
                f,
                "seq {found} where {expected} was expected, and record {expected} is at line \
                 {expected_at}: records were reordered"
            ),
            ChainProblem::Edited => {
                f.write_str("record was changed: its hash is not the `prev` of the record after it")
            }
            ChainProblem::BadGenesis => f.write_str(
                "the first record's `prev` is not 64 zeros: it was changed, or the file does not \
                 start at the beginning of its chain",
            ),
        }
    }
}
