//! The audit log: one JSON object per line, each chained to the one before by its hash.
//!
//! ```text
//! {"seq":1,"prev":"000…000","time":"2024-05-01T12:34:56.789Z","kind":"tools/call/started",...}
//! {"seq":2,"prev":"<sha256 of line 1>","time":...,"kind":...,...}
//! ```
//!
//! `seq` counts from 1. `prev` is the SHA-256, in lowercase hex, of the previous line's exact
//! bytes (without its newline); the first record's is [`GENESIS`]. Changing, removing, adding or
//! moving any record except the last therefore breaks the chain where it happened, and
//! [`verify`] says where and how. The last record is covered only by its hash, the head:
//! [`verify_with_head`] checks it against a head kept elsewhere, which also catches records cut
//! from the end.
//!
//! Writing is plain blocking `std::fs` and one process at a time; callers keep it off the async
//! path (see [`spawn_audit_sink`](crate::spawn_audit_sink)).
//!
//! The log says who called what, with which arguments and with what outcome: a new log is
//! created readable and writable by its owner only (`0600`), and opening one that others may
//! read or write logs a warning naming it ([`AuditLog::access_warning`], which `toolgate config
//! check` shows too). Its directory is the user's to choose and is not created.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

use crate::error::{AuditError, ChainProblem};
use crate::event::Event;
use crate::place::check_place;
use toolgate_core::hash::sha256_hex;

/// The mode of a log toolgate creates: read and write for its owner only.
#[cfg(unix)]
const PRIVATE_FILE_MODE: u32 = 0o600;

/// The permission bits of the file at `path` when they let its group or others in at all.
#[cfg(unix)]
fn open_to_others(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
    (mode & 0o077 != 0).then_some(mode)
}

#[cfg(not(unix))]
fn open_to_others(_path: &Path) -> Option<u32> {
    None
}

/// The `prev` of the first record, and the head of an empty log: 64 zeros.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// What [`verify`] found in a log whose chain is whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// How many records the log holds (also the last `seq`).
    pub records: u64,
    /// The SHA-256 of the last line ([`GENESIS`] when the log is empty). Keep it somewhere the
    /// log's writer cannot change to detect later truncation with [`verify_with_head`].
    pub head: String,
}

/// An audit log open for appending.
#[derive(Debug)]
pub struct AuditLog {
    path: PathBuf,
    file: File,
    /// The last `seq` written.
    seq: u64,
    /// The hash of the last line written.
    head: String,
    /// The file's length after the last complete line, to cut back a partly written one.
    len: u64,
}

// === impl AuditLog ===

impl AuditLog {
    /// Opens the log at `path` for appending, creating the file if need be (not its directory,
    /// which must exist: [`AuditError::Place`]). An existing file is verified in full first and
    /// its chain continued; a file that fails verification is refused with the error
    /// [`verify`] would give.
    pub fn open(path: impl AsRef<Path>) -> Result<AuditLog, AuditError> {
        let path = path.as_ref().to_path_buf();
        let io_error = |action| {
            let path = path.clone();
            move |source| AuditError::Io { path, action, source }
        };
        check_place(&path)?;
        if let Some(warning) = AuditLog::access_warning(&path) {
            tracing::warn!("{warning}");
        }
        let mut options = OpenOptions::new();
        options.read(true).append(true).create(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, PRIVATE_FILE_MODE);
        let mut file = options.open(&path).map_err(io_error("open"))?;
        let walk = walk(BufReader::new(&file), &path, None)?;
        if walk.records > 0 && !walk.ends_with_newline {
            // The last record is whole but its newline never made it to disk. The newline is
            // not part of the hashed bytes, so adding it keeps the chain.
            file.write_all(b"\n").map_err(io_error("append to"))?;
        }
        let len = file.metadata().map_err(io_error("read the metadata of"))?.len();
        Ok(AuditLog { path, file, seq: walk.records, head: walk.head, len })
    }

    /// What to say about the log at `path` when others than its owner may read or write it
    /// (any group or world permission bit): it holds every call's arguments and outcome.
    /// `None` when it is private, or does not exist yet (it will be created private).
    pub fn access_warning(path: impl AsRef<Path>) -> Option<String> {
        let path = path.as_ref();
        let mode = open_to_others(path)?;
        Some(format!(
            "the audit log {} can be read or written by others than its owner (mode {mode:04o}): \
             it records who called which tool with which arguments; restrict it with \
             `chmod 600 {}`",
            path.display(),
            path.display()
        ))
    }

    /// Every reason [`open`](AuditLog::open) would refuse `path`, found without creating or
    /// writing anything: the directory must exist and take new files ([`AuditError::Place`]);
    /// a log already there must be a regular file this process may read and append to, and its
    /// chain must verify.
    pub fn check(path: impl AsRef<Path>) -> Result<(), AuditError> {
        let path = path.as_ref();
        check_place(path)?;
        if path.exists() {
            verify(path)?;
        }
        Ok(())
    }

    /// Appends `event` as the next record and hands it to the operating system before
    /// returning (see [`AuditLog::sync`] for durability). If the write fails, whatever part of
    /// the line was written is cut off again, so the chain stays whole.
    pub fn append(&mut self, event: &Event) -> Result<(), AuditError> {
        let seq = self.seq + 1;
        let record = Record { seq, prev: &self.head, event };
        let mut line =
            serde_json::to_vec(&record).expect("a record must serialize: its keys are strings");
        let head = sha256_hex(&line);
        line.push(b'\n');
        let written = self.file.write_all(&line).and_then(|()| self.file.flush());
        if let Err(source) = written {
            // Best effort: if this fails too, `open` will report the partial line as malformed.
            let _ = self.file.set_len(self.len);
            return Err(AuditError::Io { path: self.path.clone(), action: "append to", source });
        }
        self.seq = seq;
        self.head = head;
        self.len += line.len() as u64;
        Ok(())
    }

    /// Waits until everything appended so far is on disk (`fsync`).
    pub fn sync(&mut self) -> Result<(), AuditError> {
        self.file.sync_data().map_err(|source| AuditError::Io {
            path: self.path.clone(),
            action: "sync",
            source,
        })
    }

    /// The file this log writes to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many records the log holds (also the last `seq`).
    pub fn records(&self) -> u64 {
        self.seq
    }

    /// The hash of the last line ([`GENESIS`] when the log is empty).
    pub fn head(&self) -> &str {
        &self.head
    }

    /// A log on `path` opened read-only, so that every write fails.
    #[cfg(test)]
    pub(crate) fn unwritable(path: &Path) -> AuditLog {
        let file = File::create(path).and_then(|_| File::open(path)).expect("test file must open");
        AuditLog { path: path.to_path_buf(), file, seq: 0, head: GENESIS.to_owned(), len: 0 }
    }
}

/// One line of the log: `seq` and `prev` in front of the event.
struct Record<'a> {
    seq: u64,
    prev: &'a str,
    event: &'a Event,
}

impl Serialize for Record<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("seq", &self.seq)?;
        map.serialize_entry("prev", self.prev)?;
        self.event.serialize_entries(&mut map)?;
        map.end()
    }
}

// === verification ===

/// Checks the whole chain of the log at `path`.
///
/// The error names the first line that breaks the chain and how ([`ChainProblem`]). An edit to
/// the last record, or records cut from the end, leave a whole chain: only
/// [`verify_with_head`] catches those.
pub fn verify(path: impl AsRef<Path>) -> Result<VerifyReport, AuditError> {
    let path = path.as_ref();
    let walk = walk(open_for_reading(path)?, path, None)?;
    Ok(VerifyReport { records: walk.records, head: walk.head })
}

/// [`verify`], and also checks that the log ends at `expected_head`: the hash of its last line
/// as recorded earlier (for example from [`VerifyReport::head`] or [`AuditLog::head`]).
pub fn verify_with_head(
    path: impl AsRef<Path>,
    expected_head: &str,
) -> Result<VerifyReport, AuditError> {
    let path = path.as_ref();
    let walk = walk(open_for_reading(path)?, path, Some(expected_head))?;
    if walk.head != expected_head {
        return Err(AuditError::HeadMismatch {
            path: path.to_path_buf(),
            records: walk.records,
            expected: expected_head.to_owned(),
            found: walk.head,
            expected_at: walk.seen_at,
        });
    }
    Ok(VerifyReport { records: walk.records, head: walk.head })
}

fn open_for_reading(path: &Path) -> Result<BufReader<File>, AuditError> {
    File::open(path).map(BufReader::new).map_err(|source| AuditError::Io {
        path: path.to_path_buf(),
        action: "open",
        source,
    })
}

/// What a walk over a whole chain found.
struct Walk {
    records: u64,
    head: String,
    ends_with_newline: bool,
    /// The line whose hash is the one watched for, if any.
    seen_at: Option<u64>,
}

/// Reads `path`'s lines one at a time, checking each against the one before.
fn walk(mut reader: impl BufRead, path: &Path, watch: Option<&str>) -> Result<Walk, AuditError> {
    let broken = |line, problem| AuditError::Broken { path: path.to_path_buf(), line, problem };
    let mut lines = Lines::default();
    let mut head = GENESIS.to_owned();
    let mut seen_at = None;
    while let Some((line, bytes)) = lines.next(&mut reader, path)? {
        let link = Link::parse(bytes).map_err(|problem| broken(line, problem))?;
        let expected = line; // seq counts lines from 1.
        if link.seq != expected {
            let problem = classify(&mut lines, &mut reader, path, expected, link.seq)?;
            return Err(broken(line, problem));
        }
        if link.prev != head {
            return Err(match line {
                1 => broken(1, ChainProblem::BadGenesis),
                _ => broken(line - 1, ChainProblem::Edited),
            });
        }
        head = sha256_hex(bytes);
        if watch == Some(head.as_str()) {
            seen_at = Some(line);
        }
    }
    Ok(Walk { records: lines.number, head, ends_with_newline: lines.ends_with_newline, seen_at })
}

/// Names what happened at a line whose `seq` is `found` where `expected` should be, looking at
/// the rest of the file: every record before it is known good, so record `n` is at line `n`.
fn classify(
    lines: &mut Lines,
    reader: &mut impl BufRead,
    path: &Path,
    expected: u64,
    found: u64,
) -> Result<ChainProblem, AuditError> {
    if found < expected {
        return Ok(ChainProblem::Inserted { seq: found, also_at: found });
    }
    let mut expected_at = None;
    while let Some((line, bytes)) = lines.next(reader, path)? {
        let Ok(link) = Link::parse(bytes) else { continue };
        if link.seq == found {
            // The same seq further on: this record is a copy of a later one.
            return Ok(ChainProblem::Inserted { seq: found, also_at: line });
        }
        if link.seq == expected && expected_at.is_none() {
            expected_at = Some(line);
        }
    }
    Ok(match expected_at {
        Some(expected_at) => ChainProblem::Reordered { expected, found, expected_at },
        None => ChainProblem::Removed { expected, found },
    })
}

/// A reader of newline-terminated lines that counts them.
#[derive(Default)]
struct Lines {
    buffer: Vec<u8>,
    /// The number of the last line read, from 1.
    number: u64,
    ends_with_newline: bool,
}

impl Lines {
    /// The next line's number and bytes (without its newline), or `None` at the end of the
    /// file.
    fn next(
        &mut self,
        reader: &mut impl BufRead,
        path: &Path,
    ) -> Result<Option<(u64, &[u8])>, AuditError> {
        self.buffer.clear();
        let read = reader.read_until(b'\n', &mut self.buffer).map_err(|source| AuditError::Io {
            path: path.to_path_buf(),
            action: "read",
            source,
        })?;
        if read == 0 {
            return Ok(None);
        }
        self.number += 1;
        self.ends_with_newline = self.buffer.last() == Some(&b'\n');
        if self.ends_with_newline {
            self.buffer.pop();
        }
        Ok(Some((self.number, &self.buffer)))
    }
}

/// The chain fields of one line.
struct Link {
    seq: u64,
    prev: String,
}

impl Link {
    fn parse(line: &[u8]) -> Result<Link, ChainProblem> {
        /// Other fields are skipped unparsed into values. Duplicate keys are an error, so no
        /// reader can be fooled into seeing a different `seq` or `prev` than this one.
        #[derive(Deserialize)]
        struct Raw {
            seq: Option<Value>,
            prev: Option<Value>,
        }
        let malformed = |reason: String| ChainProblem::Malformed { reason };
        // serde would also accept a JSON array for a struct: insist on an object.
        if line.trim_ascii_start().first() != Some(&b'{') {
            return Err(malformed(match line.trim_ascii() {
                [] => "empty line".to_owned(),
                _ => "not a JSON object".to_owned(),
            }));
        }
        let raw: Raw =
            serde_json::from_slice(line).map_err(|e| malformed(format!("not valid JSON ({e})")))?;
        let seq = match raw.seq {
            None => return Err(malformed("no `seq`".to_owned())),
            Some(seq) => seq.as_u64().filter(|&seq| seq > 0).ok_or_else(|| {
                malformed(format!("`seq` is {seq}, not a whole number from 1 up"))
            })?,
        };
        let prev = match raw.prev {
            None => return Err(malformed("no `prev`".to_owned())),
            Some(Value::String(prev)) if is_hash(&prev) => prev,
            Some(prev) => {
                return Err(malformed(format!("`prev` is {prev}, not 64 lowercase hex digits")));
            }
        };
        Ok(Link { seq, prev })
    }
}

fn is_hash(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests;
