//! The messages a request sends before its answer (progress, questions to the client), on
//! their way to the request's stream: the [`Outbox`] a request writes into, read by whoever
//! serves its answer (`reply.rs`), and held by a session for the requests it serves.

use axum::body::Bytes;
use tokio::sync::mpsc;
use toolgate_core::mcp;

use super::sse::Urgency;

/// A message a request sends before its answer, already written as JSON, and whether it may
/// be dropped for a client that reads too slowly.
pub(crate) type Sent = (Bytes, Urgency);

/// The messages a request sends before its answer. Unbounded, but never full: whoever
/// receives them (this task, then the request's own) takes each as it comes and puts it in
/// the request's stream, which is bounded.
#[derive(Clone, Debug)]
pub(crate) struct Outbox(mpsc::UnboundedSender<Sent>);

impl Outbox {
    /// An outbox and what it delivers.
    pub(crate) fn new() -> (Outbox, mpsc::UnboundedReceiver<Sent>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        (Outbox(sender), receiver)
    }

    /// Sends `message` ahead of the answer (dropped when nobody reads the request's stream
    /// any more and it keeps none).
    pub(crate) fn send(&self, message: &mcp::ServerJsonRpcMessage) {
        match serde_json::to_vec(message) {
            Ok(json) => {
                let _ = self.0.send((json.into(), Urgency::of(message)));
            }
            Err(error) => tracing::warn!(%error, "a message to the client could not be written"),
        }
    }
}
