//! The transport to a child process: newline-delimited JSON-RPC on its stdin and stdout.
//!
//! Our own rather than rmcp's `TokioChildProcess` for one reason: an answer whose request asked
//! for its result as written (see [`crate::raw`]) is kept as the bytes the child wrote, which
//! needs the line before it is parsed. Everything else is what rmcp's transport does: each
//! message is written whole under a lock, lines are read into a buffer kept across calls (so a
//! read cancelled by the service loop's `select!` resumes where it stopped), lines longer than
//! [`MAX_LINE`] are dropped up to their newline, text that is not a message is ignored (as the
//! official SDKs ignore it), and closing follows the specification's shutdown: the child's
//! input is closed, then it gets `SIGTERM`, then it is killed, each after [`EXIT_WAIT`].

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use process_wrap::tokio::ChildWrapper;
use rmcp::RoleClient;
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{ChildStdin, ChildStdout};
use toolgate_core::mcp;

use crate::error::ExitReason;
use crate::raw;
use crate::shared::Shared;

/// The longest line read (as rmcp's transport allows); a longer one is dropped.
pub(crate) const MAX_LINE: usize = 16 * 1024 * 1024;

/// How long a closing child gets to exit, before `SIGTERM` and again before it is killed.
const EXIT_WAIT: Duration = Duration::from_secs(3);

/// How long a child whose output ended, or whose transport was dropped, is given to exit by
/// itself, so that how it ended is known ([`ExitNote`]).
pub(crate) const EXIT_NOTICE: Duration = Duration::from_millis(200);

/// How the child ended, once it exited by itself: noted when its output ends or its
/// transport is dropped, if it exits within [`EXIT_NOTICE`] (never when toolgate killed it).
pub(crate) type ExitNote = Arc<tokio::sync::watch::Sender<Option<ExitReason>>>;

fn note(exit: &ExitNote, status: std::process::ExitStatus) {
    let reason = ExitReason::from(status);
    tracing::debug!("an upstream's process exited {reason}");
    exit.send_replace(Some(reason));
}

/// The MCP transport over a child's pipes. Dropped, it kills the child.
pub(crate) struct ChildWire {
    child: ChildGuard,
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    stdout: BufReader<ChildStdout>,
    /// The line being read; kept across cancelled reads.
    line: Vec<u8>,
    /// The longest line kept ([`MAX_LINE`]).
    max_line: usize,
    /// Dropping the rest of a line longer than `max_line`.
    skipping: bool,
    shared: Arc<Shared>,
    /// How the child ended, once it exited by itself.
    exit: ExitNote,
}

impl ChildWire {
    /// The transport over `child`'s stdin and stdout, which must be piped.
    pub(crate) fn new(mut child: Box<dyn ChildWrapper>, shared: Arc<Shared>) -> io::Result<Self> {
        let taken = |what: &str| io::Error::other(format!("the child's {what} is not a pipe"));
        let stdin = child.stdin().take().ok_or_else(|| taken("stdin"))?;
        let stdout = child.stdout().take().ok_or_else(|| taken("stdout"))?;
        let exit = ExitNote::default();
        Ok(ChildWire {
            child: ChildGuard { child: Some(child), exit: exit.clone() },
            stdin: Arc::new(tokio::sync::Mutex::new(Some(stdin))),
            stdout: BufReader::with_capacity(64 * 1024, stdout),
            line: Vec::new(),
            max_line: MAX_LINE,
            skipping: false,
            shared,
            exit,
        })
    }

    /// Where how the child ended is noted, once it exits by itself.
    pub(crate) fn exit_note(&self) -> ExitNote {
        self.exit.clone()
    }

    /// Its output ended: waits (briefly) for it to exit, and notes how.
    async fn note_exit(&mut self) {
        let Some(child) = self.child.child.as_mut() else { return };
        if let Ok(Ok(status)) = tokio::time::timeout(EXIT_NOTICE, child.wait()).await {
            note(&self.exit, status);
        }
    }

    /// Reads until a whole line is in `self.line` (`true`), or the output ends (`false`).
    /// Cancel-safe: what was read stays in `self.line`, and bytes are consumed from the buffer
    /// only once copied.
    async fn read_line(&mut self) -> io::Result<bool> {
        loop {
            let available = self.stdout.fill_buf().await?;
            if available.is_empty() {
                // A last line without its newline is still a line.
                return Ok(!self.line.is_empty() && !std::mem::take(&mut self.skipping));
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let content = &available[..newline.unwrap_or(available.len())];
            if !self.skipping {
                if self.line.len() + content.len() > self.max_line {
                    tracing::warn!(
                        upstream = %self.shared.name,
                        "the server wrote a message longer than {} bytes; it was dropped",
                        self.max_line
                    );
                    self.skipping = true;
                    self.line.clear();
                } else {
                    self.line.extend_from_slice(content);
                }
            }
            let consumed = newline.map_or(available.len(), |at| at + 1);
            self.stdout.consume(consumed);
            if newline.is_some() && !std::mem::take(&mut self.skipping) {
                return Ok(true);
            }
        }
    }

    /// The message on the line just read, if it is one.
    fn message(&self) -> Option<mcp::ServerJsonRpcMessage> {
        let line = self.line.strip_suffix(b"\r").unwrap_or(&self.line);
        let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        if line.trim_ascii().is_empty() {
            return None;
        }
        if self.shared.calls.lock().wants_raw()
            && let Some((id, slot, raw)) =
                raw::capture(line, |id| self.shared.calls.lock().raw_slot(id))
        {
            // The request finds its result in its slot; rmcp gets an empty one to route.
            slot.put(raw);
            return Some(mcp::ServerJsonRpcMessage::response(mcp::ServerResult::empty(()), id));
        }
        match serde_json::from_slice(line) {
            Ok(message) => Some(message),
            Err(error) => {
                tracing::debug!(
                    upstream = %self.shared.name,
                    %error,
                    "ignored a line from the server that is not an MCP message"
                );
                None
            }
        }
    }
}

impl Transport<RoleClient> for ChildWire {
    type Error = io::Error;

    fn send(
        &mut self,
        item: mcp::ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        let line = serde_json::to_vec(&item);
        let stdin = self.stdin.clone();
        async move {
            let mut line =
                line.map_err(|error| io::Error::new(io::ErrorKind::InvalidData, error))?;
            line.push(b'\n');
            let mut stdin = stdin.lock().await;
            let Some(stdin) = stdin.as_mut() else {
                return Err(io::Error::new(io::ErrorKind::NotConnected, "the transport is closed"));
            };
            stdin.write_all(&line).await?;
            stdin.flush().await
        }
    }

    async fn receive(&mut self) -> Option<mcp::ServerJsonRpcMessage> {
        loop {
            match self.read_line().await {
                Ok(true) => {}
                Ok(false) => {
                    self.note_exit().await;
                    return None;
                }
                Err(error) => {
                    tracing::debug!(upstream = %self.shared.name, %error, "reading the server's output failed");
                    return None;
                }
            }
            let message = self.message();
            self.line.clear();
            if message.is_some() {
                return message;
            }
        }
    }

    /// Closes the child's input and waits for it to exit; then `SIGTERM`; then kills it.
    async fn close(&mut self) -> Result<(), io::Error> {
        drop(self.stdin.lock().await.take());
        let Some(child) = self.child.child.as_mut() else { return Ok(()) };
        if exited(child).await?.is_none() {
            let term = nix::sys::signal::Signal::SIGTERM as i32;
            let stopped = match child.signal(term) {
                Ok(()) => exited(child).await?.is_some(),
                Err(error) => {
                    tracing::debug!(upstream = %self.shared.name, %error, "SIGTERM failed");
                    false
                }
            };
            if !stopped {
                Box::into_pin(child.kill()).await?;
            }
        }
        // Exited or killed: nothing is left for the guard to kill.
        self.child.child = None;
        Ok(())
    }
}

/// Waits up to [`EXIT_WAIT`] for `child` to exit.
async fn exited(child: &mut Box<dyn ChildWrapper>) -> io::Result<Option<std::process::ExitStatus>> {
    match tokio::time::timeout(EXIT_WAIT, child.wait()).await {
        Ok(status) => status.map(Some),
        Err(_) => Ok(None),
    }
}

/// Kills the child when dropped, unless it was closed; how a child that was ending anyway
/// ended is noted first.
struct ChildGuard {
    child: Option<Box<dyn ChildWrapper>>,
    exit: ExitNote,
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else { return };
        if let Ok(Some(status)) = child.try_wait() {
            note(&self.exit, status);
        }
        // `kill` also reaps it (no zombie); it needs the runtime, which is gone only when the
        // process is ending, and then the process group is killed by the supervisor anyway.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let exit = self.exit.clone();
            runtime.spawn(async move {
                // A child whose pipe broke as it exited may not be reaped yet: a moment lets
                // its own status be known. A status from a signal may be the kill of the
                // caller that dropped the transport (the supervisor kills the process
                // group), so only an exit code is noted here.
                let unknown = exit.borrow().is_none();
                if unknown
                    && let Ok(Ok(status)) = tokio::time::timeout(EXIT_NOTICE, child.wait()).await
                    && status.code().is_some()
                {
                    note(&exit, status);
                }
                if let Err(error) = Box::into_pin(child.kill()).await {
                    tracing::debug!(%error, "killing a child failed");
                }
            });
        } else {
            let _ = child.start_kill();
        }
    }
}

#[cfg(test)]
mod tests;
