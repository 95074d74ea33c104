//! What toolgate tells an upstream about itself, and what it does with the upstream's
//! notifications and requests.

#![allow(deprecated)] // logging, sampling and roots are deprecated in 2026-07-28 (SEP-2577)

use std::sync::Arc;

use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, InboundStreamOrigin, NotificationContext,
    RequestContext, RunningService,
};
use rmcp::transport::IntoTransport;
use rmcp::{ClientHandler, ClientServiceExt, ErrorData, RoleClient};
use toolgate_core::mcp;

use crate::call::Caller;
use crate::event::{ChangedLists, UpstreamEvent};
use crate::progress::{LogOwner, ProgressCounting};
use crate::shared::Shared;

/// The client side of one upstream connection.
#[derive(Clone)]
pub(crate) struct UpstreamHandler {
    shared: Arc<Shared>,
}

impl UpstreamHandler {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        UpstreamHandler { shared }
    }

    /// The caller of the call this server→client request belongs to. HTTP upstreams say which
    /// of our requests' response stream carried it; on stdio (and legacy SSE) nothing does, so
    /// it is the only call in flight, or the only one not holding for its client's answers, or
    /// any of them if they all have the same party (see `CallTable::only_route_by`); otherwise
    /// nobody's, and the upstream is told why rather than a client asked what may not be its.
    fn caller_for(
        &self,
        context: &RequestContext<RoleClient>,
    ) -> Result<Arc<dyn Caller>, ErrorData> {
        let calls = self.shared.calls.lock();
        let caller = match context.extensions.get::<InboundStreamOrigin>() {
            Some(InboundStreamOrigin::OutboundRequest(id)) => calls.by_request(id),
            _ => calls.only_caller(),
        };
        caller.ok_or_else(|| unattributed(&self.shared.name, calls.callers()))
    }

    /// Runs this handler over `transport`, entering each request in the call table as it is
    /// written and counting each call's progress as it is read (see [`crate::progress`]).
    pub(crate) async fn serve<T, E, A>(
        self,
        transport: T,
        lifecycle: ClientLifecycleMode,
    ) -> Result<RunningService<RoleClient, Self>, ClientInitializeError>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let counting = ProgressCounting::new(transport.into_transport(), self.shared.clone());
        self.serve_with_lifecycle(counting, lifecycle).await
    }

    async fn relist(&self, context: &NotificationContext<RoleClient>, lists: ChangedLists) {
        self.shared.relist(&context.peer, lists).await;
    }
}

impl ClientHandler for UpstreamHandler {
    fn get_info(&self) -> mcp::ClientConfig {
        // Sampling, elicitation and roots are forwarded to the client that made the call.
        let mut capabilities = mcp::ClientCapabilities::default();
        capabilities.sampling = Some(Default::default());
        capabilities.elicitation = Some(Default::default());
        capabilities.roots = Some(Default::default());
        mcp::ClientConfig::new(
            capabilities,
            mcp::Implementation::new("toolgate", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(mcp::ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn create_message(
        &self,
        params: mcp::CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<mcp::CreateMessageResult, ErrorData> {
        let caller = self.caller_for(&context)?;
        tokio::select! {
            result = caller.create_message(params) => result,
            () = context.ct.cancelled() => Err(ErrorData::internal_error("cancelled by the server", None)),
        }
    }

    async fn create_elicitation(
        &self,
        params: mcp::ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<mcp::ElicitResult, ErrorData> {
        let caller = self.caller_for(&context)?;
        tokio::select! {
            result = caller.create_elicitation(params) => result,
            () = context.ct.cancelled() => Err(ErrorData::internal_error("cancelled by the server", None)),
        }
    }

    async fn list_roots(
        &self,
        context: RequestContext<RoleClient>,
    ) -> Result<mcp::ListRootsResult, ErrorData> {
        let caller = self.caller_for(&context)?;
        tokio::select! {
            result = caller.list_roots() => result,
            () = context.ct.cancelled() => Err(ErrorData::internal_error("cancelled by the server", None)),
        }
    }

    async fn on_progress(
        &self,
        params: mcp::ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let route = self.shared.calls.lock().by_token(&params.progress_token);
        if let Some((caller, ledger)) = route {
            caller.progress(params).await;
            ledger.forwarded_one();
        }
    }

    /// A log message goes to the caller of the call it is about, and only there; one about
    /// no call goes to the gateway, for the sessions that asked for logs (see
    /// [`LogOwner`], decided as the message was read).
    async fn on_logging_message(
        &self,
        params: mcp::LoggingMessageNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        let upstream = self.shared.name.clone();
        let level = params.level;
        // Clients see which server a message came from: its logger is prefixed with the name.
        let mut params = params;
        params.logger = Some(match params.logger.take() {
            Some(logger) => format!("{upstream}/{logger}"),
            None => upstream.clone(),
        });
        match context.extensions.get::<LogOwner>().cloned().unwrap_or(LogOwner::Nobody) {
            LogOwner::Call(route) => {
                route.caller.log(params).await;
                if let Some(ledger) = route.ledger {
                    ledger.forwarded_one();
                }
            }
            LogOwner::Nobody => self.shared.emit(UpstreamEvent::Log { upstream, params }),
            LogOwner::Ambiguous => {
                tracing::debug!(%upstream, ?level, "a log message that could be about any of several clients' calls was dropped");
            }
            LogOwner::Ended => {
                tracing::debug!(%upstream, ?level, "a log message about a request that has ended was dropped");
            }
        }
    }

    async fn on_resource_updated(
        &self,
        params: mcp::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let upstream = self.shared.name.clone();
        self.shared.emit(UpstreamEvent::ResourceUpdated { upstream, uri: params.uri });
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        self.relist(&context, ChangedLists { tools: true, ..Default::default() }).await;
    }

    async fn on_prompt_list_changed(&self, context: NotificationContext<RoleClient>) {
        self.relist(&context, ChangedLists { prompts: true, ..Default::default() }).await;
    }

    async fn on_resource_list_changed(&self, context: NotificationContext<RoleClient>) {
        self.relist(&context, ChangedLists { resources: true, ..Default::default() }).await;
    }
}

/// The refusal of a server→client request that toolgate cannot put to the client whose call
/// it belongs to: `in_flight` calls of clients were in flight on `upstream`.
pub(crate) fn unattributed(upstream: &str, in_flight: usize) -> ErrorData {
    let why = match in_flight {
        0 => "it arrived while no client call was in flight".to_owned(),
        n => format!(
            "{n} client calls were in flight on `{upstream}`, and a request over this transport \
             does not say which call it is about; it was refused rather than put to a client \
             whose call it may not be"
        ),
    };
    ErrorData::invalid_request(
        format!("toolgate cannot tell which client call this request belongs to ({why})"),
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unattributed_request_is_refused_saying_why() {
        let refused = unattributed("fx", 2);
        assert_eq!(refused.code, mcp::ErrorCode::INVALID_REQUEST);
        assert_eq!(
            refused.message,
            "toolgate cannot tell which client call this request belongs to (2 client calls \
             were in flight on `fx`, and a request over this transport does not say which call \
             it is about; it was refused rather than put to a client whose call it may not be)"
        );
        assert!(
            unattributed("fx", 0)
                .message
                .ends_with("(it arrived while no client call was in flight)")
        );
    }
}
