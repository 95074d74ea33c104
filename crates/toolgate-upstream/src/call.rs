//! The party that made a call, as the upstream layer sees it.
//!
//! While an upstream serves a request it may report progress, log about it, or ask the client
//! something (`sampling/createMessage`, `elicitation/create`, `roots/list`). Those go to the
//! [`Caller`] given with the request, never to anyone else: the downstream session that made
//! the call, the agent, or a test.

#![allow(deprecated)] // sampling, roots and logging are deprecated in 2026-07-28 (SEP-2577)

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;
use toolgate_core::mcp;

/// Who made a call: receives its progress and answers the upstream's questions while it runs.
///
/// Every method has a default that declines, so a caller implements only what it can do.
pub trait Caller: Send + Sync + 'static {
    /// Progress of the call. `params.progress_token` is the upstream's token; the caller puts
    /// its own in its place before passing it on.
    fn progress(&self, params: mcp::ProgressNotificationParam) -> BoxFuture<'static, ()> {
        let _ = params;
        Box::pin(async {})
    }

    /// A log message the upstream sent about the call (`notifications/message`). Declined by
    /// default: it is dropped.
    fn log(&self, params: mcp::LoggingMessageNotificationParam) -> BoxFuture<'static, ()> {
        let _ = params;
        Box::pin(async {})
    }

    /// `sampling/createMessage` from the upstream.
    fn create_message(
        &self,
        params: mcp::CreateMessageRequestParams,
    ) -> BoxFuture<'static, Result<mcp::CreateMessageResult, mcp::ErrorData>> {
        let _ = params;
        Box::pin(async { Err(unsupported("sampling/createMessage")) })
    }

    /// `elicitation/create` from the upstream.
    fn create_elicitation(
        &self,
        params: mcp::ElicitRequestParams,
    ) -> BoxFuture<'static, Result<mcp::ElicitResult, mcp::ErrorData>> {
        let _ = params;
        Box::pin(async { Err(unsupported("elicitation/create")) })
    }

    /// `roots/list` from the upstream.
    fn list_roots(&self) -> BoxFuture<'static, Result<mcp::ListRootsResult, mcp::ErrorData>> {
        Box::pin(async { Err(unsupported("roots/list")) })
    }

    /// What the client that made the call declared it can answer, when the caller knows: a
    /// 2026-07-28 server is told per request, so it asks only what can be answered.
    fn capabilities(&self) -> Option<mcp::ClientCapabilities> {
        None
    }

    /// Whether this caller answers a 2026-07-28 `input_required` round as a whole
    /// ([`Caller::input_round`]) instead of one question at a time through the methods above:
    /// a client of that era is given every question of a round at once.
    fn answers_rounds(&self) -> bool {
        false
    }

    /// Every question of an `input_required` round at once, asked only when
    /// [`Caller::answers_rounds`]: the answers by the round's keys, or the question refused.
    fn input_round(
        &self,
        requests: mcp::InputRequests,
    ) -> BoxFuture<'static, Result<mcp::InputResponses, RoundRefused>> {
        let _ = requests;
        Box::pin(async {
            Err(RoundRefused {
                method: "input_required",
                error: unsupported("input_required rounds"),
            })
        })
    }

    /// Whether the call is waiting for its client to answer questions already put to it as a
    /// whole (a 2026-07-28 client's `input_required` round, between the result that asked and
    /// the retry that answers, which may never come). A server on stdio or legacy SSE does not
    /// say which call a question or log message is about; while several calls are in flight,
    /// one that holds is taken to send nothing until it has its answers, so what arrives
    /// meanwhile is not its (see [`Caller::party`] for the rest of that rule).
    fn holding(&self) -> bool {
        false
    }

    /// Who answers this caller's questions, when callers of different calls answer alike (the
    /// agent: every call it makes is answered by the same person and model). A question that
    /// arrives on stdio while several calls are in flight, which cannot say which call it
    /// belongs to, goes to any of them if they all name the same party; `None` (a downstream
    /// client) is never confused with another.
    fn party(&self) -> Option<String> {
        None
    }

    /// Which client hears this caller's log messages, when callers of different calls have the
    /// same one (the calls of one downstream session): a log message that arrives on stdio
    /// while several calls are in flight, which cannot say which call it is about, goes to any
    /// of them if they all name the same client (or the same [`Caller::party`]). `None` is
    /// never confused with another.
    fn hearer(&self) -> Option<String> {
        self.party()
    }
}

/// A question of an `input_required` round that the caller refused, which ends the round.
#[derive(Debug, Clone)]
pub struct RoundRefused {
    /// Its method (`elicitation/create`, `sampling/createMessage`, `roots/list`).
    pub method: &'static str,
    /// Why.
    pub error: mcp::ErrorData,
}

/// The error an upstream gets when the caller cannot answer `method`.
pub fn unsupported(method: &str) -> mcp::ErrorData {
    mcp::ErrorData::new(
        mcp::ErrorCode::METHOD_NOT_FOUND,
        format!("the client that made this call does not support {method}"),
        None,
    )
}

/// How a request is made: on whose behalf, and until when.
#[derive(Clone, Default)]
pub struct CallOptions {
    /// Who made it; `None` = nobody who can answer questions (the upstream gets an error).
    pub caller: Option<Arc<dyn Caller>>,
    /// Cancelled when the caller gives up; the upstream is then sent `notifications/cancelled`.
    pub cancel: CancellationToken,
    /// This request's own timeout instead of the server's (still reset by progress, with the
    /// same hard maximum factor).
    pub timeout: Option<std::time::Duration>,
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("caller", &self.caller.is_some())
            .field("timeout", &self.timeout)
            .finish()
    }
}
