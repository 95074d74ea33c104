//! The downstream end of a connection, as the gateway sees it: where a client's notifications
//! go, how one request's progress and questions reach the client that made it, and what that
//! client declared it can answer.
//!
//! Each front supplies its own: the stdio front an rmcp peer ([`Peer`]), the HTTP front its
//! sessions and requests (`crate::http`). The gateway, the sessions and the callers work only
//! with these traits, so they do not care which front a client came through.

#![allow(deprecated)] // sampling and roots are deprecated in 2026-07-28 (SEP-2577)

use std::fmt;

use futures::future::BoxFuture;
use rmcp::model::GetExtensions as _;
use rmcp::service::{OriginatingRequestId, SubscriptionSendError, SubscriptionSink};
use rmcp::{Peer, RoleServer, ServiceError};
use tokio_util::task::AbortOnDropHandle;
use toolgate_core::mcp;

/// A client's answer to a question, or why there is none.
pub(crate) type Answer = BoxFuture<'static, Result<mcp::ClientResult, mcp::ErrorData>>;

/// Where one downstream client's notifications go (list changes, resource updates, log
/// messages): a session's stream.
pub(crate) trait Notify: Send + Sync + fmt::Debug + 'static {
    /// Sends `notification`; it never waits for the client to read it.
    fn notify(&self, notification: mcp::ServerNotification) -> BoxFuture<'static, ()>;
    /// Whether the client is gone (nothing sent reaches it any more).
    fn is_closed(&self) -> bool;
}

/// One downstream request's way back to the client that made it: its progress, and the
/// questions an upstream asks while serving it.
pub(crate) trait RequestLink: Send + Sync + 'static {
    /// What the client declared it can answer (at `initialize`, or in this request's `_meta`).
    fn capabilities(&self) -> mcp::ClientCapabilities;
    /// Sends a notification about this request (progress).
    fn notify(&self, notification: mcp::ServerNotification) -> BoxFuture<'static, ()>;
    /// Asks the client `request` on behalf of this request; its answer.
    fn ask(&self, request: mcp::ServerRequest) -> Answer;

    /// Refuses a question the client cannot answer (it did not declare `capability`, such as
    /// `sampling` or `sampling.tools`): the error the upstream gets, once it should get it.
    /// At once, unless the request answers in rounds (`crate::mrtr`), where what its client
    /// is told depends on what else the call asks at the same time.
    fn refuse(
        &self,
        capability: &'static str,
        error: mcp::ErrorData,
    ) -> BoxFuture<'static, mcp::ErrorData> {
        let _ = capability;
        Box::pin(async move { error })
    }

    /// Whether the request's questions are waiting with its client as a whole, for a retry
    /// that may never come (see `toolgate_upstream::Caller::holding`).
    fn holding(&self) -> bool {
        false
    }

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
pub(crate) trait Listener: Send + Sync + fmt::Debug + 'static {
    /// Sends `notification` if the stream's filter accepts it (and drops it otherwise);
    /// `Err(Closed)` once the stream has ended.
    fn offer(
        &self,
        notification: mcp::ServerNotification,
    ) -> BoxFuture<'static, Result<(), Closed>>;
}

/// A stream or session that has ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Closed;

/// What a client that cannot be reached answers.
pub(crate) fn unanswered(why: impl fmt::Display) -> mcp::ErrorData {
    mcp::ErrorData::internal_error(format!("the client did not answer: {why}"), None)
}

impl Notify for Peer<RoleServer> {
    fn notify(&self, notification: mcp::ServerNotification) -> BoxFuture<'static, ()> {
        let peer = self.clone();
        Box::pin(async move {
            let _ = peer.send_notification(notification).await;
        })
    }

    fn is_closed(&self) -> bool {
        self.is_transport_closed()
    }
}

/// A request served through rmcp (the stdio front): the peer, and the request's id.
pub(crate) struct PeerRequest {
    pub(crate) peer: Peer<RoleServer>,
    pub(crate) id: mcp::RequestId,
}

impl RequestLink for PeerRequest {
    fn capabilities(&self) -> mcp::ClientCapabilities {
        self.peer.peer_info().map(|info| info.capabilities.clone()).unwrap_or_default()
    }

    fn notify(&self, notification: mcp::ServerNotification) -> BoxFuture<'static, ()> {
        Notify::notify(&self.peer, notification)
    }

    /// The question is marked with the downstream request's id (rmcp's
    /// `OriginatingRequestId`, SEP-2260) and sent from a task of its own: the upstream
    /// connection's handler task carries rmcp's task-local id of the *upstream's* request,
    /// which rmcp would put in place of the mark. Dropping the answer's future aborts that
    /// task.
    fn ask(&self, mut request: mcp::ServerRequest) -> Answer {
        request.extensions_mut().insert(OriginatingRequestId(self.id.clone()));
        let peer = self.peer.clone();
        let sending =
            AbortOnDropHandle::new(tokio::spawn(async move { peer.send_request(request).await }));
        Box::pin(async move {
            match sending.await {
                Ok(Ok(result)) => Ok(result),
                Ok(Err(ServiceError::McpError(error))) => Err(error),
                Ok(Err(other)) => Err(unanswered(other)),
                Err(_) => Err(unanswered(ServiceError::TransportClosed)),
            }
        })
    }
}

impl Listener for SubscriptionSink {
    fn offer(
        &self,
        notification: mcp::ServerNotification,
    ) -> BoxFuture<'static, Result<(), Closed>> {
        let sink = self.clone();
        Box::pin(async move {
            match sink.send(notification).await {
                Err(SubscriptionSendError::SubscriptionClosed) => Err(Closed),
                // Not accepted by its filter, or not sent: nothing to do about it.
                _ => Ok(()),
            }
        })
    }
}
