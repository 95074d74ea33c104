//! The downstream end of a connection, as the gateway sees it: where a client's notifications
//! go, how one request's progress and questions reach the client that made it, and what that
//! client declared it can answer.
//!
//! Each front supplies its own: the stdio front its one connection, the HTTP front its
//! sessions and requests. The gateway, the sessions and the callers work only
//! with these traits, so they do not care which front a client came through.

#![allow(deprecated)] // sampling and roots are deprecated in 2026-07-28 (SEP-2577)

use std::fmt;

use futures::future::BoxFuture;
use toolgate_core::mcp;

/// A client's answer to a question, or why there is none.
pub type Answer = BoxFuture<'static, Result<mcp::ClientResult, mcp::ErrorData>>;

/// Where one downstream client's notifications go (list changes, resource updates, log
/// messages): a session's stream.
pub trait Notify: Send + Sync + fmt::Debug + 'static {
    /// Sends `notification`; it never waits for the client to read it.
    fn notify(&self, notification: mcp::ServerNotification) -> BoxFuture<'static, ()>;
    /// Whether the client is gone (nothing sent reaches it any more).
    fn is_closed(&self) -> bool;
}

/// One downstream request's way back to the client that made it: its progress, and the
/// questions an upstream asks while serving it.
pub trait RequestLink: Send + Sync + 'static {
    /// What the client declared it can answer (at `initialize`, or in this request's `_meta`).
    fn capabilities(&self) -> mcp::ClientCapabilities;
    /// Sends a notification about this request (progress).
    fn notify(&self, notification: mcp::ServerNotification) -> BoxFuture<'static, ()>;
    /// Asks the client `request` on behalf of this request; its answer.
    fn ask(&self, request: mcp::ServerRequest) -> Answer;

    /// Whether the client answers an `input_required` round as a whole ([`Self::input_round`]).
    fn answers_rounds(&self) -> bool {
        false
    }

    /// Puts every question of a round to the client at once (only when
    /// [`Self::answers_rounds`]).
    fn input_round(
        &self,
        requests: mcp::InputRequests,
    ) -> BoxFuture<'static, Result<mcp::InputResponses, toolgate_upstream::RoundRefused>> {
        let _ = requests;
        Box::pin(async {
            Err(toolgate_upstream::RoundRefused {
                method: "input_required",
                error: toolgate_upstream::unsupported("input_required rounds"),
            })
        })
    }
}

/// A `subscriptions/listen` stream of a 2026-07-28 client: it takes the notifications its
/// filter accepted.
pub trait Listener: Send + Sync + fmt::Debug + 'static {
    /// Sends `notification` if the stream's filter accepts it (and drops it otherwise);
    /// `Err(Closed)` once the stream has ended.
    fn offer(
        &self,
        notification: mcp::ServerNotification,
    ) -> BoxFuture<'static, Result<(), Closed>>;
}

/// A stream or session that has ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed;

/// What a client that cannot be reached answers.
pub fn unanswered(why: impl fmt::Display) -> mcp::ErrorData {
    mcp::ErrorData::internal_error(format!("the client did not answer: {why}"), None)
}

/// The refusal of a question asked on a 2026-07-28 request: that era has no requests from
/// server to client, so its clients are asked in `input_required` rounds (which the dispatcher
/// puts in place of the request's link, so this is what is left when that is not possible).
pub fn not_asked_in_2026(request: &mcp::ServerRequest) -> mcp::ErrorData {
    let method = match request {
        mcp::ServerRequest::CreateMessageRequest(_) => "sampling/createMessage",
        mcp::ServerRequest::ElicitRequest(_) => "elicitation/create",
        mcp::ServerRequest::ListRootsRequest(_) => "roots/list",
        _ => "a request",
    };
    mcp::ErrorData::invalid_request(
        format!(
            "{method}: the client's request is of protocol 2026-07-28, whose clients are asked \
             through input_required results, not requests"
        ),
        None,
    )
}
