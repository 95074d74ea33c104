//! Following a file as lines are appended to it (`toolgate audit tail --follow`): each look
//! reads the whole lines added since the one before, and notices when the file was replaced,
//! truncated or rewritten in place, reading it again from the start.

use std::fs::File;
use std::io::{self, BufRead as _, BufReader, Seek as _, SeekFrom};
use std::os::unix::fs::{FileExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// A file being followed could not be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {}", path.display())]
pub struct FollowError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    #[source]
    pub source: io::Error,
}

impl FollowError {
    /// What kind of failure it was: `NotFound` when the file does not exist (yet, or for the
    /// moment while it is being replaced).
    pub fn kind(&self) -> io::ErrorKind {
        self.source.kind()
    }
}

/// Reads the lines appended to a file since the last look, noticing when the file is replaced,
/// truncated or rewritten (and then reading it again from the start).
#[derive(Debug)]
pub struct Follower {
    path: PathBuf,
    /// Device and inode of the file being read, once it was found.
    identity: Option<(u64, u64)>,
    /// Bytes read so far.
    offset: u64,
    /// What was read after the last newline: the start of a line still being written.
    partial: Vec<u8>,
    /// The last whole line read (without its newline) and where it starts.
    last_line: Option<(u64, Vec<u8>)>,
    /// The number of the last whole line read.
    line_number: u64,
    /// Size and modification time when last looked at.
    seen: Option<(u64, Option<SystemTime>)>,
}

/// Why a [`Follower`] went back to the start of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restart {
    /// Another file now has its name (rotated, or written anew and renamed into place).
    Replaced,
    /// It is shorter than what was read.
    Truncated,
    /// What was read is no longer there as it was.
    Rewritten,
}

impl std::fmt::Display for Restart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Restart::Replaced => "was replaced",
            Restart::Truncated => "was truncated",
            Restart::Rewritten => "was rewritten",
        })
    }
}

impl Follower {
    /// A follower of `path`, which need not exist yet; nothing is read until [`Follower::poll`].
    pub fn new(path: &Path) -> Follower {
        Follower {
            path: path.to_path_buf(),
            identity: None,
            offset: 0,
            partial: Vec::new(),
            last_line: None,
            line_number: 0,
            seen: None,
        }
    }

    /// Calls `on_line` with each whole line added since the last call (its number from 1, and
    /// its bytes without the newline). Says so when it had to start over. `NotFound` when the
    /// file does not exist (it is read from the start once it does).
    pub fn poll(
        &mut self,
        on_line: &mut dyn FnMut(u64, &[u8]),
    ) -> Result<Option<Restart>, FollowError> {
        let file = match File::open(&self.path) {
            Ok(file) => file,
            Err(error) => {
                if error.kind() == io::ErrorKind::NotFound {
                    self.start_over();
                    self.identity = None;
                }
                return Err(self.error(error));
            }
        };
        let metadata = file.metadata().map_err(|e| self.error(e))?;
        let identity = (metadata.dev(), metadata.ino());
        let seen = (metadata.len(), metadata.modified().ok());
        let restart = if self.identity.is_some_and(|known| known != identity) {
            Some(Restart::Replaced)
        } else if metadata.len() < self.offset {
            Some(Restart::Truncated)
        } else if self.seen.is_some_and(|known| known != seen) && !self.last_line_intact(&file) {
            Some(Restart::Rewritten)
        } else {
            None
        };
        if restart.is_some() {
            self.start_over();
        }
        self.identity = Some(identity);
        self.seen = Some(seen);
        if metadata.len() > self.offset {
            self.read_lines(file, on_line).map_err(|e| self.error(e))?;
        }
        Ok(restart)
    }

    fn error(&self, source: io::Error) -> FollowError {
        FollowError { path: self.path.clone(), source }
    }

    fn read_lines(&mut self, file: File, on_line: &mut dyn FnMut(u64, &[u8])) -> io::Result<()> {
        let mut reader = BufReader::new(file);
        reader.seek(SeekFrom::Start(self.offset))?;
        let mut line = std::mem::take(&mut self.partial);
        let mut last = Vec::new();
        let mut last_start = None;
        loop {
            let read = reader.read_until(b'\n', &mut line)?;
            self.offset += read as u64;
            if line.last() != Some(&b'\n') {
                // The end of the file, maybe in the middle of a line.
                break;
            }
            line.pop();
            self.line_number += 1;
            on_line(self.line_number, &line);
            last_start = Some(self.offset - line.len() as u64 - 1);
            std::mem::swap(&mut line, &mut last);
            line.clear();
        }
        self.partial = line;
        if let Some(start) = last_start {
            self.last_line = Some((start, last));
        }
        Ok(())
    }

    /// Whether the last line read is still where it was, as it was.
    fn last_line_intact(&self, file: &File) -> bool {
        let Some((start, line)) = &self.last_line else { return true };
        let mut found = vec![0; line.len() + 1];
        file.read_exact_at(&mut found, *start).is_ok()
            && found[..line.len()] == line[..]
            && found[line.len()] == b'\n'
    }

    fn start_over(&mut self) {
        self.offset = 0;
        self.partial.clear();
        self.last_line = None;
        self.line_number = 0;
        self.seen = None;
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    #[test]
    fn the_follower_reads_whole_lines_and_notices_rewrites() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("log.jsonl");
        let mut follower = Follower::new(&path);
        let mut lines = Vec::new();
        let mut poll = |follower: &mut Follower| {
            let mut got = Vec::new();
            let restart = follower
                .poll(&mut |n, bytes| got.push((n, String::from_utf8_lossy(bytes).into_owned())));
            lines.push(got);
            restart
        };
        assert!(poll(&mut follower).is_err_and(|e| e.kind() == io::ErrorKind::NotFound));

        std::fs::write(&path, "one\ntw").expect("write");
        assert!(poll(&mut follower).expect("readable").is_none());
        let mut file = std::fs::OpenOptions::new().append(true).open(&path).expect("open");
        file.write_all(b"o\nthree\n").expect("append");
        assert!(poll(&mut follower).expect("readable").is_none());
        assert!(poll(&mut follower).expect("readable").is_none());

        // Rewritten in place, longer than before: the old offset means nothing any more.
        std::fs::write(&path, "uno\ndos\ntres\ncuatro\n").expect("rewrite");
        assert!(matches!(poll(&mut follower), Ok(Some(Restart::Rewritten))));
        std::fs::write(&path, "x\n").expect("truncate");
        assert!(matches!(poll(&mut follower), Ok(Some(Restart::Truncated))));

        let owned = |v: &[(u64, &str)]| -> Vec<(u64, String)> {
            v.iter().map(|(n, s)| (*n, s.to_string())).collect()
        };
        assert_eq!(lines[1], owned(&[(1, "one")]));
        assert_eq!(lines[2], owned(&[(2, "two"), (3, "three")]));
        assert_eq!(lines[3], owned(&[]));
        assert_eq!(lines[4], owned(&[(1, "uno"), (2, "dos"), (3, "tres"), (4, "cuatro")]));
        assert_eq!(lines[5], owned(&[(1, "x")]));
    }
}
