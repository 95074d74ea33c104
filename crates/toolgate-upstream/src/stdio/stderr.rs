//! A child's stderr, read as bytes into lines of bounded length, for as long as it is open.
//!
//! A server may write anything there: a line with no end, bytes that are not UTF-8. Nothing it
//! writes may grow toolgate's memory or stop the reading, because a child whose stderr pipe
//! fills up blocks on its next write and stops answering. So:
//!
//! - a line keeps at most [`MAX_LINE`] bytes; the rest, up to its newline, is read and dropped,
//!   and the line is marked ` [cut: N more bytes]`;
//! - bytes are decoded lossily (what is not UTF-8 becomes U+FFFD), after the cut, which never
//!   splits a character it can see whole;
//! - reading goes on until the pipe closes, whatever a line holds; a read error ends it (a
//!   pipe has none to give but an interrupted read, which is retried).
//!
//! The last lines are kept ([`StderrLog`]) for start-up error messages.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt as _, AsyncRead, BufReader};

use crate::error::StderrTail;

/// The most bytes of one stderr line kept: 8 KiB. A log line, even a JSON one with a stack
/// trace in it, is a few hundred bytes to a few kilobytes; anything longer is a dump nobody
/// reads in a log, and twelve kept lines ([`STDERR_TAIL_LINES`]) stay under 100 KiB.
pub(crate) const MAX_LINE: usize = 8 * 1024;

/// Lines of stderr kept for error messages.
const STDERR_TAIL_LINES: usize = 12;

/// How much is read from the pipe at once.
const READ_BUFFER: usize = 64 * 1024;

/// Reads `stderr` until it closes, handing each line to `line` (already cut and decoded),
/// then marks `log` closed.
pub(crate) async fn drain(
    stderr: impl AsyncRead + Unpin,
    log: StderrLog,
    mut line: impl FnMut(String),
) {
    let mut reader = BufReader::with_capacity(READ_BUFFER, stderr);
    let mut lines = LineCutter::default();
    loop {
        let chunk = match reader.fill_buf().await {
            Ok([]) => break,
            Ok(chunk) => chunk,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => {
                tracing::debug!(%error, "stopped reading an upstream's stderr");
                break;
            }
        };
        let read = chunk.len();
        lines.feed(chunk, |text| {
            log.push(text.clone());
            line(text);
        });
        reader.consume(read);
    }
    if let Some(text) = lines.finish() {
        log.push(text.clone());
        line(text);
    }
    log.closed.send_replace(true);
}

/// Splits bytes into lines, keeping at most [`MAX_LINE`] bytes of each.
#[derive(Debug, Default)]
pub(crate) struct LineCutter {
    /// The kept start of the line being read (at most [`MAX_LINE`] bytes).
    kept: Vec<u8>,
    /// Bytes of the line being read that were dropped.
    dropped: u64,
}

impl LineCutter {
    /// Takes the next bytes; calls `line` with each line they end.
    pub(crate) fn feed(&mut self, mut bytes: &[u8], mut line: impl FnMut(String)) {
        while !bytes.is_empty() {
            let (part, ended) = match bytes.iter().position(|&b| b == b'\n') {
                Some(newline) => (&bytes[..newline], true),
                None => (bytes, false),
            };
            self.keep(part);
            bytes = if ended { &bytes[part.len() + 1..] } else { &[] };
            if ended {
                line(self.take());
            }
        }
    }

    /// The last line, when the stream ended without a newline after it.
    pub(crate) fn finish(&mut self) -> Option<String> {
        (!self.kept.is_empty() || self.dropped > 0).then(|| self.take())
    }

    fn keep(&mut self, part: &[u8]) {
        let room = MAX_LINE - self.kept.len();
        let kept = part.len().min(room);
        self.kept.extend_from_slice(&part[..kept]);
        self.dropped += (part.len() - kept) as u64;
    }

    /// The line read so far, decoded and marked when cut; the cutter is then empty.
    fn take(&mut self) -> String {
        let mut bytes = std::mem::take(&mut self.kept);
        if bytes.last() == Some(&b'\r') && self.dropped == 0 {
            bytes.pop();
        }
        let mut dropped = std::mem::take(&mut self.dropped);
        if dropped > 0 {
            // Cut before a character the cut split, rather than show half of it as U+FFFD.
            if let Err(error) = std::str::from_utf8(&bytes)
                && error.error_len().is_none()
            {
                dropped += (bytes.len() - error.valid_up_to()) as u64;
                bytes.truncate(error.valid_up_to());
            }
        }
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        if dropped > 0 {
            text.push_str(&format!(" [cut: {dropped} more bytes]"));
        }
        text
    }
}

/// The last lines of a child's stderr.
#[derive(Clone, Default)]
pub(crate) struct StderrLog {
    lines: Arc<Mutex<VecDeque<String>>>,
    /// Set once the child's stderr has closed (it exited, or closed it).
    closed: Arc<tokio::sync::watch::Sender<bool>>,
}

impl StderrLog {
    /// Waits until the child's stderr has closed, so that its last words are all read.
    pub(crate) async fn closed(&self) {
        let _ = self.closed.subscribe().wait_for(|closed| *closed).await;
    }

    fn push(&self, line: String) {
        let mut lines = self.lines.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if lines.len() == STDERR_TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    pub(crate) fn tail(&self) -> StderrTail {
        StderrTail(
            self.lines
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .iter()
                .cloned()
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests;
