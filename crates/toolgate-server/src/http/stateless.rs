//! A 2026-07-28 request's way back to its client: there is no session, so what the client can
//! answer is what this request's `_meta` declares, its progress goes on its own answer stream,
//! and the questions an upstream asks while serving it cannot be sent as requests (that era has
//! none from server to client): they become `input_required` rounds (the dispatcher's).

#![allow(deprecated)] // sampling and roots are deprecated in 2026-07-28 (SEP-2577)

use futures::future::BoxFuture;
use rmcp::model::GetMeta as _;
use toolgate_core::mcp;

use super::outbox::Outbox;
use toolgate_gateway::link::{Answer, RequestLink, not_asked_in_2026};

/// A request without a session.
pub(crate) struct StatelessRequest {
    capabilities: mcp::ClientCapabilities,
    outbox: Outbox,
}

impl StatelessRequest {
    /// The link of `request`, whose messages before its answer go to `outbox`.
    pub(crate) fn new(request: &mcp::ClientRequest, outbox: Outbox) -> StatelessRequest {
        let capabilities = request.get_meta().client_capabilities().unwrap_or_default();
        StatelessRequest { capabilities, outbox }
    }
}

impl RequestLink for StatelessRequest {
    fn capabilities(&self) -> mcp::ClientCapabilities {
        self.capabilities.clone()
    }

    fn notify(&self, notification: mcp::ServerNotification) -> BoxFuture<'static, ()> {
        self.outbox.send(&mcp::ServerJsonRpcMessage::notification(notification));
        Box::pin(async {})
    }

    fn ask(&self, request: mcp::ServerRequest) -> Answer {
        let refused = not_asked_in_2026(&request);
        Box::pin(async move { Err(refused) })
    }
}
