//! Newline-delimited JSON-RPC over a byte reader and writer (stdin and stdout): the stdio
//! transport. Unlike rmcp's own, it answers bad input (see [`crate::jsonrpc`]) instead of
//! dropping it: text that is not JSON, JSON that is not JSON-RPC, and lines longer than the
//! limit, whose rest is skipped up to the next newline.
//!
//! A reader task turns lines into messages and a writer task owns the output, so receiving is
//! cancel-safe and answers to bad input interleave with the front's own whole lines.
//!
//! What waits to be written is bounded by the client: while more than the backlog's limit of
//! bytes waits (a client that sends and does not read), the reader reads nothing more, so the
//! client's own writes block. What is already under way (at most the front's requests running,
//! each with its answer) is still written when the client reads again.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use toolgate_core::mcp;

use crate::jsonrpc::{Rejection, parse_message};

/// Messages read ahead of the front.
const READ_AHEAD: usize = 64;

/// Bytes waiting for the client to read them past which no more input is read.
pub(crate) const MOST_BACKLOG: usize = 16 << 20;

/// The stdio transport over any reader and writer.
#[derive(Debug)]
pub(crate) struct Lines {
    incoming: mpsc::Receiver<mcp::ClientJsonRpcMessage>,
    output: Option<Output>,
    reader: JoinHandle<()>,
    writer: Option<JoinHandle<()>>,
    /// Tells the writer to write what is queued and stop.
    closing: CancellationToken,
}

/// Where lines to the client go: one message per line, written in the order sent. Cloned by
/// whoever sends.
#[derive(Debug, Clone)]
pub(crate) struct Output {
    lines: mpsc::UnboundedSender<Vec<u8>>,
    backlog: Arc<Backlog>,
}

/// The bytes sent and not yet written, and a wake-up for the reader waiting for them to drain.
#[derive(Debug)]
struct Backlog {
    bytes: AtomicUsize,
    limit: usize,
    drained: Notify,
    /// The writer has stopped: nothing waits for the client any more.
    closed: AtomicBool,
}

impl Backlog {
    fn new(limit: usize) -> Arc<Backlog> {
        Arc::new(Backlog {
            bytes: AtomicUsize::new(0),
            limit,
            drained: Notify::new(),
            closed: AtomicBool::new(false),
        })
    }

    fn written(&self, bytes: usize) {
        let before = self.bytes.fetch_sub(bytes, Ordering::AcqRel);
        if before - bytes < self.limit {
            self.drained.notify_waiters();
        }
    }

    /// Returns once at most `limit` bytes wait.
    async fn room(&self) {
        loop {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            if self.bytes.load(Ordering::Acquire) < self.limit
                || self.closed.load(Ordering::Acquire)
            {
                return;
            }
            drained.await;
        }
    }
}

/// Marks the backlog closed when the writer stops, however it stops.
struct Closing(Arc<Backlog>);

impl Drop for Closing {
    fn drop(&mut self) {
        self.0.closed.store(true, Ordering::Release);
        self.0.drained.notify_waiters();
    }
}

impl Output {
    /// An output onto `lines` (for tests).
    #[cfg(test)]
    pub(crate) fn for_test(lines: mpsc::UnboundedSender<Vec<u8>>) -> Output {
        Output { lines, backlog: Backlog::new(usize::MAX) }
    }

    fn queue(&self, json: Vec<u8>) -> bool {
        let bytes = json.len();
        self.backlog.bytes.fetch_add(bytes, Ordering::AcqRel);
        if self.lines.send(json).is_ok() {
            return true;
        }
        self.backlog.written(bytes);
        false
    }

    /// Sends one message, already written as JSON; `false` once the output is closed. A raw
    /// result from an upstream may hold line breaks between its tokens (never inside a JSON
    /// string, where they are escaped): they are written as spaces, so a message stays one
    /// line.
    pub(crate) fn send_json(&self, mut json: Vec<u8>) -> bool {
        if memchr::memchr2(b'\n', b'\r', &json).is_some() {
            for byte in &mut json {
                if matches!(*byte, b'\n' | b'\r') {
                    *byte = b' ';
                }
            }
        }
        self.queue(json)
    }

    /// Sends `message`; `false` once the output is closed.
    pub(crate) fn send(&self, message: &mcp::ServerJsonRpcMessage) -> bool {
        match serde_json::to_vec(message) {
            Ok(json) => self.queue(json),
            Err(error) => {
                // Messages are plain data; this does not happen.
                tracing::warn!(%error, "a message to the client could not be written");
                true
            }
        }
    }
}

impl Lines {
    /// Reads messages of at most `max_message` bytes from `read`, writes to `write`; stops
    /// reading while more than `max_backlog` bytes wait to be written.
    pub(crate) fn new<R, W>(read: R, write: W, max_message: usize, max_backlog: usize) -> Lines
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (incoming_tx, incoming) = mpsc::channel(READ_AHEAD);
        let (lines, lines_rx) = mpsc::unbounded_channel();
        let backlog = Backlog::new(max_backlog);
        let output = Output { lines, backlog: backlog.clone() };
        let reader = tokio::spawn(read_messages(
            BufReader::new(read),
            max_message,
            incoming_tx,
            output.clone(),
        ));
        let closing = CancellationToken::new();
        let writer = tokio::spawn(write_lines(write, lines_rx, backlog, closing.clone()));
        Lines { incoming, output: Some(output), reader, writer: Some(writer), closing }
    }

    /// Where lines to the client go.
    pub(crate) fn output(&self) -> Output {
        self.output.clone().expect("the output is open until close()")
    }

    /// Sends `message` (for tests: the front sends through [`Lines::output`]).
    #[cfg(test)]
    pub(crate) async fn send(&mut self, message: mcp::ServerJsonRpcMessage) -> io::Result<()> {
        match &self.output {
            Some(output) if output.send(&message) => Ok(()),
            Some(_) => Err(io::Error::new(io::ErrorKind::BrokenPipe, "the output is closed")),
            None => Err(io::Error::new(io::ErrorKind::NotConnected, "the transport is closed")),
        }
    }

    /// The next message from the client; `None` once its input has ended.
    pub(crate) async fn receive(&mut self) -> Option<mcp::ClientJsonRpcMessage> {
        self.incoming.recv().await
    }

    /// Stops reading and waits until everything sent so far has been written; what is sent
    /// later (through a clone of the output) is dropped.
    pub(crate) async fn close(&mut self) -> io::Result<()> {
        self.reader.abort();
        let _ = (&mut self.reader).await;
        self.output = None;
        self.closing.cancel();
        if let Some(writer) = self.writer.take() {
            writer.await.map_err(io::Error::other)?;
        }
        Ok(())
    }
}

impl Drop for Lines {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

async fn read_messages<R: AsyncBufRead + Unpin>(
    mut read: R,
    max_message: usize,
    messages: mpsc::Sender<mcp::ClientJsonRpcMessage>,
    answers: Output,
) {
    let mut line = Vec::new();
    loop {
        answers.backlog.room().await;
        let outcome = match read_line(&mut read, &mut line, max_message).await {
            Ok(Line::Whole) if line.trim_ascii().is_empty() => continue,
            Ok(Line::Whole) => parse_message(&line),
            Ok(Line::TooLong) => Err(Rejection::too_large(max_message)),
            Ok(Line::End) => return,
            Err(error) => {
                tracing::warn!(%error, "reading the client's input failed; closing");
                return;
            }
        };
        match outcome {
            Ok(message) => {
                if messages.send(message).await.is_err() {
                    return;
                }
            }
            Err(rejection) => {
                tracing::debug!(code = rejection.code.0, message = %rejection.message, "refused client input");
                let answer =
                    serde_json::to_vec(&rejection.to_json()).expect("JSON values serialize");
                if !answers.queue(answer) {
                    return;
                }
            }
        }
    }
}

/// What [`read_line`] found.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// A line (without its newline) is in the buffer; a last line may lack the newline.
    Whole,
    /// A line longer than the limit was skipped.
    TooLong,
    /// The input ended.
    End,
}

/// Reads one line into `line`, keeping at most `max` bytes of it in memory.
async fn read_line<R: AsyncBufRead + Unpin>(
    read: &mut R,
    line: &mut Vec<u8>,
    max: usize,
) -> io::Result<Line> {
    line.clear();
    let mut too_long = false;
    loop {
        let available = read.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (too_long, line.is_empty()) {
                (true, _) => Line::TooLong,
                (false, true) => Line::End,
                (false, false) => Line::Whole,
            });
        }
        let newline = available.iter().position(|&b| b == b'\n');
        let take = newline.map_or(available.len(), |at| at + 1);
        let content = &available[..newline.unwrap_or(available.len())];
        if !too_long {
            if line.len() + content.len() > max {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(content);
            }
        }
        read.consume(take);
        if newline.is_some() {
            return Ok(if too_long { Line::TooLong } else { Line::Whole });
        }
    }
}

/// Writes every line sent until `closing` fires (then what is queued, and no more) or every
/// sender is gone. `closing` is needed because senders live on in places that outlast the
/// front (the gateway's session of the connection holds one until it is swept).
async fn write_lines<W: AsyncWrite + Unpin>(
    mut write: W,
    mut lines: mpsc::UnboundedReceiver<Vec<u8>>,
    backlog: Arc<Backlog>,
    closing: CancellationToken,
) {
    let _closing = Closing(backlog.clone());
    loop {
        let line = tokio::select! {
            biased;
            line = lines.recv() => line,
            () = closing.cancelled() => lines.try_recv().ok(),
        };
        let Some(mut line) = line else { break };
        let bytes = line.len();
        line.push(b'\n');
        let written = write.write_all(&line).await;
        backlog.written(bytes);
        if let Err(error) = written {
            tracing::debug!(%error, "the client's output closed");
            return;
        }
        // Flush once the queue is drained, not after every line of a burst.
        if lines.is_empty()
            && let Err(error) = write.flush().await
        {
            tracing::debug!(%error, "the client's output closed");
            return;
        }
    }
    let _ = write.flush().await;
}

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;
