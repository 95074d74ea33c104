//! A downstream request, as the [`Caller`] of what it causes upstream: its progress goes back
//! under the client's own token, and the upstream's questions (sampling, elicitation, roots)
//! go to this client, and only if it declared it can answer them.
//!
//! A question is sent marked as belonging to the downstream request (rmcp's
//! `OriginatingRequestId`, SEP-2260), so that a streamable HTTP client gets it on that request's
//! response stream. rmcp marks requests by itself only when they are sent from the handler's own
//! task; the upstream's questions are relayed from the upstream connection's tasks, and unmarked
//! they would go to the session's standalone GET stream, which a client may not have opened
//! (yet, or at all).

#![allow(deprecated)] // sampling and roots are deprecated in 2026-07-28 (SEP-2577)

use futures::future::BoxFuture;
use rmcp::model::GetExtensions as _;
use rmcp::service::OriginatingRequestId;
use rmcp::{Peer, RoleServer, ServiceError};
use tokio_util::task::AbortOnDropHandle;
use toolgate_core::mcp;
use toolgate_upstream::Caller;

/// The client of one downstream request.
pub(crate) struct DownstreamCaller {
    peer: Peer<RoleServer>,
    /// The downstream request's id, which the upstream's questions are marked with.
    request: mcp::RequestId,
    progress_token: Option<mcp::ProgressToken>,
}

impl DownstreamCaller {
    pub(crate) fn new(
        peer: Peer<RoleServer>,
        request: mcp::RequestId,
        progress_token: Option<mcp::ProgressToken>,
    ) -> Self {
        DownstreamCaller { peer, request, progress_token }
    }

    fn capabilities(&self) -> mcp::ClientCapabilities {
        self.peer.peer_info().map(|info| info.capabilities.clone()).unwrap_or_default()
    }

    /// Sends `request` to the client on the downstream request's stream; its answer.
    ///
    /// It is sent from a task of its own: the upstream connection's handler task carries rmcp's
    /// task-local id of the *upstream's* request, which rmcp would put in place of the mark.
    /// Dropping the answer's future aborts that task.
    fn ask(
        &self,
        mut request: mcp::ServerRequest,
    ) -> BoxFuture<'static, Result<mcp::ClientResult, ServiceError>> {
        request.extensions_mut().insert(OriginatingRequestId(self.request.clone()));
        let peer = self.peer.clone();
        let sending =
            AbortOnDropHandle::new(tokio::spawn(async move { peer.send_request(request).await }));
        Box::pin(async move { sending.await.unwrap_or(Err(ServiceError::TransportClosed)) })
    }
}

/// The result of a question, if the client answered it with the right kind of result.
fn answer<T>(
    asked: Result<mcp::ClientResult, ServiceError>,
    pick: impl FnOnce(mcp::ClientResult) -> Option<T>,
) -> Result<T, ServiceError> {
    pick(asked?).ok_or(ServiceError::UnexpectedResponse)
}

fn elicit_request(params: mcp::ElicitRequestParams) -> mcp::ServerRequest {
    mcp::ServerRequest::ElicitRequest(mcp::ElicitRequest::new(params))
}

fn elicited(result: mcp::ClientResult) -> Option<mcp::ElicitResult> {
    match result {
        mcp::ClientResult::ElicitResult(result) => Some(result),
        _ => None,
    }
}

fn lacks(capability: &str) -> mcp::ErrorData {
    mcp::ErrorData::new(
        mcp::ErrorCode::INVALID_REQUEST,
        format!("the client that made this call did not declare the `{capability}` capability"),
        None,
    )
}

fn relay_error(error: ServiceError) -> mcp::ErrorData {
    match error {
        ServiceError::McpError(error) => error,
        other => {
            mcp::ErrorData::internal_error(format!("the client did not answer: {other}"), None)
        }
    }
}

impl Caller for DownstreamCaller {
    fn progress(&self, params: mcp::ProgressNotificationParam) -> BoxFuture<'static, ()> {
        let peer = self.peer.clone();
        let token = self.progress_token.clone();
        Box::pin(async move {
            let Some(token) = token else { return };
            let mut params = params;
            params.progress_token = token;
            let _ = peer.notify_progress(params).await;
        })
    }

    fn create_message(
        &self,
        params: mcp::CreateMessageRequestParams,
    ) -> BoxFuture<'static, Result<mcp::CreateMessageResult, mcp::ErrorData>> {
        let capabilities = self.capabilities();
        if capabilities.sampling.is_none() {
            return Box::pin(async { Err(lacks("sampling")) });
        }
        // What rmcp's `Peer::create_message` checks before it sends.
        let wants_tools = params.tools.is_some() || params.tool_choice.is_some();
        if wants_tools && capabilities.sampling.as_ref().and_then(|s| s.tools.as_ref()).is_none() {
            return Box::pin(async { Err(lacks("sampling.tools")) });
        }
        if let Err(problem) = params.validate() {
            return Box::pin(async move { Err(mcp::ErrorData::invalid_params(problem, None)) });
        }
        let asked = self
            .ask(mcp::ServerRequest::CreateMessageRequest(mcp::CreateMessageRequest::new(params)));
        Box::pin(async move {
            answer(asked.await, |result| match result {
                mcp::ClientResult::CreateMessageResult(result) => Some(*result),
                _ => None,
            })
            .map_err(relay_error)
        })
    }

    fn create_elicitation(
        &self,
        params: mcp::ElicitRequestParams,
    ) -> BoxFuture<'static, Result<mcp::ElicitResult, mcp::ErrorData>> {
        if self.capabilities().elicitation.is_none() {
            return Box::pin(async { Err(lacks("elicitation")) });
        }
        let asked = self.ask(elicit_request(params));
        Box::pin(async move { answer(asked.await, elicited).map_err(relay_error) })
    }

    fn list_roots(&self) -> BoxFuture<'static, Result<mcp::ListRootsResult, mcp::ErrorData>> {
        if self.capabilities().roots.is_none() {
            return Box::pin(async { Err(lacks("roots")) });
        }
        let asked =
            self.ask(mcp::ServerRequest::ListRootsRequest(mcp::ListRootsRequest::default()));
        Box::pin(async move {
            answer(asked.await, |result| match result {
                mcp::ClientResult::ListRootsResult(result) => Some(result),
                _ => None,
            })
            .map_err(relay_error)
        })
    }
}

impl toolgate_intercept::Elicitor for DownstreamCaller {
    fn can_elicit(&self) -> bool {
        self.capabilities().elicitation.is_some()
    }

    fn elicit(
        &self,
        params: mcp::ElicitRequestParams,
    ) -> BoxFuture<'static, Result<mcp::ElicitResult, String>> {
        let asked = self.ask(elicit_request(params));
        Box::pin(async move { answer(asked.await, elicited).map_err(|e| e.to_string()) })
    }
}
