//! The downstream MCP server: rmcp's `ServerHandler` over the [`Gateway`].
//!
//! One handler value per downstream session (the HTTP transport makes one per session or per
//! stateless request); they all share the gateway.

#![allow(deprecated)] // logging and subscriptions are legacy in 2026-07-28 but still spoken

use std::sync::{Arc, OnceLock};

use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use toolgate_core::mcp;
use toolgate_intercept::{CallContext, Principal};
use toolgate_upstream::CallOptions;

use crate::caller::DownstreamCaller;
use crate::error::{ErrorReply, reply, to_mcp_error};
use crate::gateway::Gateway;
use crate::link::{Listener, PeerRequest, RequestLink};
use crate::protocol::{self, forwarded_meta};
use crate::session::Session;

/// Serves the gateway's inventory to one downstream client.
#[derive(Debug, Clone)]
pub struct GatewayHandler {
    gateway: Arc<Gateway>,
    /// Set by `initialize`; requests of the stateless era have none.
    session: Arc<OnceLock<Arc<Session>>>,
    /// Who the client is, for the pipeline.
    principal: Principal,
}

impl GatewayHandler {
    /// A handler over `gateway`.
    pub fn new(gateway: Arc<Gateway>, principal: Principal) -> Self {
        GatewayHandler { gateway, session: Arc::default(), principal }
    }

    fn context(&self, context: &RequestContext<RoleServer>) -> CallContext {
        let mut ctx = CallContext::new(self.principal.clone());
        ctx.request_id = Some(context.id.to_string());
        ctx.session = http_session_id(context);
        ctx.client_address = client_address(context);
        ctx.elicitor = Some(Arc::new(DownstreamCaller::new(request_link(context), None)));
        ctx
    }

    /// This session, or a throwaway one for a stateless request.
    fn session(&self, context: &RequestContext<RoleServer>) -> Arc<Session> {
        self.session
            .get()
            .cloned()
            .unwrap_or_else(|| Arc::new(Session::new(Arc::new(context.peer.clone()))))
    }
}

/// The way back to the client of `context`'s request.
fn request_link(context: &RequestContext<RoleServer>) -> Arc<dyn RequestLink> {
    Arc::new(PeerRequest { peer: context.peer.clone(), id: context.id.clone() })
}

impl GatewayHandler {
    /// How a downstream request is made upstream: on behalf of this client (its upstream log
    /// messages to this session), cancelled with it.
    fn call_options(&self, context: &RequestContext<RoleServer>) -> CallOptions {
        let token = context.meta.get_progress_token();
        let caller = DownstreamCaller::new(request_link(context), token)
            .in_session(self.session.get().cloned());
        CallOptions { caller: Some(Arc::new(caller)), cancel: context.ct.clone(), timeout: None }
    }
}

/// The `Mcp-Session-Id` of a streamable HTTP request, for events.
fn http_session_id(context: &RequestContext<RoleServer>) -> Option<String> {
    let parts = context.extensions.get::<http::request::Parts>()?;
    let id = parts.headers.get("mcp-session-id")?.to_str().ok()?;
    Some(id.to_owned())
}

/// The address a streamable HTTP request came from (none on stdio), for the pipeline.
fn client_address(context: &RequestContext<RoleServer>) -> Option<std::net::IpAddr> {
    let parts = context.extensions.get::<http::request::Parts>()?;
    let axum::extract::ConnectInfo(address) =
        parts.extensions.get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()?;
    Some(address.ip())
}

/// The custom method that returns the pipeline as SEP-2624 descriptors.
pub const INTERCEPTORS_LIST: &str = "interceptors/list";

/// `interceptors/list`: the chain in config order, and the order each phase runs in.
pub fn interceptors_list(pipeline: &toolgate_intercept::Pipeline) -> serde_json::Value {
    use toolgate_intercept::Phase;
    let names = |phase: Phase| -> Vec<String> {
        pipeline.run_order(phase).into_iter().map(|d| d.name.clone()).collect()
    };
    serde_json::json!({
        "interceptors": pipeline.descriptors().iter().map(|d| d.to_json()).collect::<Vec<_>>(),
        "runOrder": { "request": names(Phase::Request), "response": names(Phase::Response) },
    })
}

// Results relayed from an upstream of the handshake era carry no `resultType`; a 2026-07-28
// client requires it, and rmcp strips it again for older clients. Every relayed result below is
// therefore marked complete.

impl ServerHandler for GatewayHandler {
    fn get_info(&self) -> mcp::ServerConfig {
        mcp::ServerConfig::new(protocol::capabilities())
            .with_server_info(protocol::implementation())
            .with_instructions(protocol::instructions(&self.gateway))
    }

    async fn initialize(
        &self,
        request: mcp::InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<mcp::InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        let session = Arc::new(Session::new(Arc::new(context.peer.clone())));
        if self.session.set(session.clone()).is_ok() {
            self.gateway.sessions().add(session);
        }
        self.negotiate_initialize(&request)
    }

    async fn set_level(
        &self,
        request: mcp::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let mut ctx = self.context(&context);
        self.gateway
            .set_log_level(&self.session(&context), request, &mut ctx)
            .await
            .map_err(to_mcp_error)
    }

    async fn subscribe(
        &self,
        request: mcp::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let mut ctx = self.context(&context);
        self.gateway
            .subscribe(Some(&self.session(&context)), request, &mut ctx)
            .await
            .map_err(to_mcp_error)
    }

    async fn unsubscribe(
        &self,
        request: mcp::UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let mut ctx = self.context(&context);
        self.gateway
            .unsubscribe(Some(&self.session(&context)), request, &mut ctx)
            .await
            .map_err(to_mcp_error)
    }

    fn accepted_subscription_filter(
        &self,
        requested: &mcp::SubscriptionFilter,
    ) -> Option<mcp::SubscriptionFilter> {
        // Every kind is offered (rmcp narrows it to what `get_info` advertises), and of the
        // resources those an upstream offers: the only ones `Gateway::listen` follows.
        let mut accepted = requested.clone();
        if let Some(uris) = &mut accepted.resource_subscriptions {
            let inventory = self.gateway.inventory();
            uris.retain(|uri| inventory.offered_resource_route(uri).is_some());
        }
        Some(accepted)
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), ErrorData> {
        // A 2026-07-28 client's notification stream: list changes, and updates of the
        // resources it named, for as long as it stays open.
        let mut ctx = self.context(context.request_context());
        let followed = self
            .gateway
            .listen(context.accepted().clone(), &mut ctx)
            .await
            .map_err(to_mcp_error)?;
        let listener: Arc<dyn Listener> = Arc::new(context.sink().clone());
        self.gateway.sessions().add_listener(listener.clone());
        context.cancelled().await;
        self.gateway.sessions().remove_listener(&listener);
        self.gateway.release_listened(&followed).await;
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<mcp::PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<mcp::ListToolsResult, ErrorData> {
        let tools =
            self.gateway.list_tools(&mut self.context(&context)).await.map_err(to_mcp_error)?;
        Ok(mcp::ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        mut request: mcp::CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<mcp::CallToolResponse, ErrorData> {
        request.meta = forwarded_meta(&context.meta);
        let mut ctx = self.context(&context);
        let result = self.gateway.call_tool(request, &self.call_options(&context), &mut ctx).await;
        match result {
            Ok(mut result) => {
                result.result_type = Some(mcp::ResultType::COMPLETE);
                Ok(mcp::CallToolResponse::Complete(result))
            }
            Err(error) => match reply(error) {
                ErrorReply::Protocol(error) => Err(error),
                ErrorReply::ToolError(message) => {
                    Ok(mcp::CallToolResponse::Complete(mcp::CallToolResult::error(vec![
                        mcp::ContentBlock::text(message),
                    ])))
                }
            },
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<mcp::PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<mcp::ListPromptsResult, ErrorData> {
        let prompts =
            self.gateway.list_prompts(&mut self.context(&context)).await.map_err(to_mcp_error)?;
        Ok(mcp::ListPromptsResult::with_all_items(prompts))
    }

    async fn get_prompt(
        &self,
        mut request: mcp::GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<mcp::GetPromptResponse, ErrorData> {
        request.meta = forwarded_meta(&context.meta);
        let mut result = self
            .gateway
            .get_prompt(request, &self.call_options(&context), &mut self.context(&context))
            .await
            .map_err(to_mcp_error)?;
        result.result_type = Some(mcp::ResultType::COMPLETE);
        Ok(mcp::GetPromptResponse::Complete(result))
    }

    async fn list_resources(
        &self,
        _request: Option<mcp::PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<mcp::ListResourcesResult, ErrorData> {
        let resources =
            self.gateway.list_resources(&mut self.context(&context)).await.map_err(to_mcp_error)?;
        Ok(mcp::ListResourcesResult::with_all_items(resources))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<mcp::PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<mcp::ListResourceTemplatesResult, ErrorData> {
        let templates = self
            .gateway
            .list_resource_templates(&mut self.context(&context))
            .await
            .map_err(to_mcp_error)?;
        Ok(mcp::ListResourceTemplatesResult::with_all_items(templates))
    }

    async fn read_resource(
        &self,
        mut request: mcp::ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<mcp::ReadResourceResponse, ErrorData> {
        request.meta = forwarded_meta(&context.meta);
        let mut result = self
            .gateway
            .read_resource(request, &self.call_options(&context), &mut self.context(&context))
            .await
            .map_err(to_mcp_error)?;
        result.result_type = Some(mcp::ResultType::COMPLETE);
        Ok(mcp::ReadResourceResponse::Complete(result))
    }

    async fn complete(
        &self,
        mut request: mcp::CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<mcp::CompleteResult, ErrorData> {
        request.meta = forwarded_meta(&context.meta);
        let mut result = self
            .gateway
            .complete(request, &self.call_options(&context), &mut self.context(&context))
            .await
            .map_err(to_mcp_error)?;
        result.result_type = Some(mcp::ResultType::COMPLETE);
        Ok(result)
    }

    async fn on_custom_request(
        &self,
        request: mcp::CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<mcp::CustomResult, ErrorData> {
        if request.method == INTERCEPTORS_LIST {
            let list = self
                .gateway
                .interceptors_list(&mut self.context(&context))
                .await
                .map_err(to_mcp_error)?;
            return Ok(mcp::CustomResult::new(list));
        }
        // rmcp takes a request's `_meta` out of its parameters into the context.
        let version = context.meta.protocol_version().map(|version| version.to_string());
        Err(crate::jsonrpc::unrecognised_request(
            &request.method,
            request.params.as_ref(),
            version.as_deref(),
        ))
    }
}
