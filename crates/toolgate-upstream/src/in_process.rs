//! Servers inside toolgate itself (a script's own tools), reached through an in-memory pipe.
//!
//! What would be a child's stdin and stdout is one end of a `tokio::io::duplex`; the server
//! serves the other end. Everything above the transport is the same as for any upstream: the
//! handshake, the catalog and its `list_changed`, calls with their timeouts and cancellation,
//! and the supervisor, which opens a new pipe when the server ends one.

use std::sync::Arc;

/// A server in this process. toolgate calls [`InProcessServer::serve`] once per connection
/// attempt.
pub trait InProcessServer: Send + Sync + 'static {
    /// Serves one connection on `stream` in a task of its own; the connection ends when
    /// either side drops its end.
    fn serve(&self, stream: tokio::io::DuplexStream);
}

/// The bytes either direction of the pipe holds before a writer waits for the reader.
pub(crate) const PIPE_BUFFER: usize = 256 * 1024;

/// Opens a pipe to `server`: its end is served, ours is returned.
pub(crate) fn open(server: &Arc<dyn InProcessServer>) -> tokio::io::DuplexStream {
    let (ours, theirs) = tokio::io::duplex(PIPE_BUFFER);
    server.serve(theirs);
    ours
}
