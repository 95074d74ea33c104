//! A downstream request, as the [`Caller`] of what it causes upstream: its progress goes back
//! under the client's own token, and the upstream's questions (sampling, elicitation, roots)
//! go to this client, and only if it declared it can answer them.

#![allow(deprecated)] // sampling and roots are deprecated in 2026-07-28 (SEP-2577)

use futures::future::BoxFuture;
use rmcp::{Peer, RoleServer, ServiceError};
use toolgate_core::mcp;
use toolgate_upstream::Caller;

/// The client of one downstream request.
pub(crate) struct DownstreamCaller {
    peer: Peer<RoleServer>,
    progress_token: Option<mcp::ProgressToken>,
}

impl DownstreamCaller {
    pub(crate) fn new(peer: Peer<RoleServer>, progress_token: Option<mcp::ProgressToken>) -> Self {
        DownstreamCaller { peer, progress_token }
    }

    fn capabilities(&self) -> mcp::ClientCapabilities {
        self.peer.peer_info().map(|info| info.capabilities.clone()).unwrap_or_default()
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
        let peer = self.peer.clone();
        let capable = self.capabilities().sampling.is_some();
        Box::pin(async move {
            if !capable {
                return Err(lacks("sampling"));
            }
            peer.create_message(params).await.map_err(relay_error)
        })
    }

    fn create_elicitation(
        &self,
        params: mcp::ElicitRequestParams,
    ) -> BoxFuture<'static, Result<mcp::ElicitResult, mcp::ErrorData>> {
        let peer = self.peer.clone();
        let capable = self.capabilities().elicitation.is_some();
        Box::pin(async move {
            if !capable {
                return Err(lacks("elicitation"));
            }
            peer.create_elicitation(params).await.map_err(relay_error)
        })
    }

    fn list_roots(&self) -> BoxFuture<'static, Result<mcp::ListRootsResult, mcp::ErrorData>> {
        let peer = self.peer.clone();
        let capable = self.capabilities().roots.is_some();
        Box::pin(async move {
            if !capable {
                return Err(lacks("roots"));
            }
            peer.list_roots().await.map_err(relay_error)
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
        let peer = self.peer.clone();
        Box::pin(async move { peer.create_elicitation(params).await.map_err(|e| e.to_string()) })
    }
}
