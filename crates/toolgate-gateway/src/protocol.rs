//! What toolgate answers to a client's request, whichever front it came through: the rules of
//! both protocol eras and the [`Gateway`] method that serves each request.
//!
//! A request belongs to one of two eras. A client of the handshake era (2025-11-25 and before)
//! said who it is at `initialize`, in a session; a 2026-07-28 request says it in its own `_meta`
//! (`io.modelcontextprotocol/protocolVersion`, `clientInfo`, `clientCapabilities`) and has no
//! session. [`Client`] is what a front knows of the sender; [`Dispatcher::answer`] checks the
//! request against its era (a version toolgate speaks, the metadata that era requires, methods
//! that era has), serves it, and shapes the result for its era (`resultType` and caching hints
//! for 2026-07-28, neither for older clients, which may reject fields they do not know).
//!
//! Only what needs the front's own machinery is left to the front: `initialize` (it opens a
//! session), `subscriptions/listen` (a stream), and the requests of a session that are not
//! requests (notifications, answers to questions).

#![allow(deprecated)] // logging, subscriptions, sampling and roots are legacy but still spoken

use std::sync::Arc;

use rmcp::model::GetMeta as _;
use tokio_util::sync::CancellationToken;
use toolgate_core::mcp;
use toolgate_intercept::{CallContext, Principal};
use toolgate_upstream::{CallOptions, RawToolResult, ToolAnswer};

use crate::caller::DownstreamCaller;
use crate::error::{ErrorReply, reply, to_mcp_error};
use crate::gateway::Gateway;
use crate::gateway::tool_json::ToolJson;
use crate::link::RequestLink;
use crate::mrtr::Rounds;

pub use crate::answer::{Answer, written_message};
use crate::session::Session;

pub use crate::trace::forwarded_meta;

/// The protocol versions toolgate serves: every version rmcp knows, both eras.
pub fn supported_versions() -> &'static [mcp::ProtocolVersion] {
    mcp::ProtocolVersion::KNOWN_VERSIONS
}

/// What toolgate offers: everything an upstream may offer, and notifications of every change.
pub fn capabilities() -> mcp::ServerCapabilities {
    mcp::ServerCapabilities::builder()
        .enable_tools()
        .enable_tool_list_changed()
        .enable_resources()
        .enable_resources_list_changed()
        .enable_resources_subscribe()
        .enable_prompts()
        .enable_prompts_list_changed()
        .enable_completions()
        .enable_logging()
        .build()
}

/// Who toolgate says it is.
pub fn implementation() -> mcp::Implementation {
    mcp::Implementation::new("toolgate", env!("CARGO_PKG_VERSION"))
}

/// What toolgate tells clients about itself: the upstreams' own instructions, by server.
pub fn instructions(gateway: &Gateway) -> String {
    let mut text = String::from(
        "toolgate: tools, prompts and resources of several MCP servers. \
         Tool and prompt names are <server>__<name>.",
    );
    for upstream in gateway.upstreams() {
        if let Some(instructions) = upstream.info().and_then(|info| info.instructions) {
            text.push_str(&format!("\n\n## {}\n{instructions}", upstream.name()));
        }
    }
    text
}

/// The answer to `initialize`: the version the client asked for when toolgate speaks it over
/// the handshake, else the newest one that has a handshake.
pub fn initialize(gateway: &Gateway, requested: &mcp::ProtocolVersion) -> mcp::InitializeResult {
    mcp::InitializeResult::new(capabilities())
        .with_server_info(implementation())
        .with_instructions(instructions(gateway))
        .with_protocol_version(negotiate(requested))
}

/// The version an `initialize` that asked for `requested` gets.
pub fn negotiate(requested: &mcp::ProtocolVersion) -> mcp::ProtocolVersion {
    if requested.has_initialize() && supported_versions().contains(requested) {
        return requested.clone();
    }
    mcp::ProtocolVersion::LATEST_WITH_INITIALIZE
}

/// The answer to `server/discover`.
fn discover(gateway: &Gateway) -> mcp::DiscoverResult {
    let mut result = mcp::DiscoverResult::new(supported_versions().to_vec(), capabilities())
        .with_server_info(implementation());
    result.instructions = Some(instructions(gateway));
    result
}

/// What a front knows of the client that sent a request.
#[derive(Debug, Clone)]
pub struct Client {
    /// Who it is, for the pipeline.
    pub principal: Principal,
    /// Its handshake-era session (log level, subscriptions); `None` for a 2026-07-28 request.
    pub session: Option<Arc<Session>>,
    /// The session's id as the front names it (`Mcp-Session-Id`), for events and for what
    /// the pipeline keeps per caller.
    pub session_id: Option<String>,
    /// The address it connected from, if it came over the network: with no session, all that
    /// tells one anonymous client from another (`CallContext::client_address`).
    pub address: Option<std::net::IpAddr>,
    /// The version negotiated at `initialize`, if there was one.
    pub negotiated: Option<mcp::ProtocolVersion>,
}

/// How a request is served: its era, from the request's own `_meta` and the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Era {
    /// The version the request is served under.
    pub version: Option<mcp::ProtocolVersion>,
    /// A 2026-07-28 request: self-contained metadata, no session methods, results with
    /// `resultType` and caching hints, questions as `input_required` rounds.
    pub modern: bool,
}

/// Checks `request` against the era it claims, as the specification asks of a server: a
/// version toolgate speaks (`-32022`), and for a request that negotiates in its own `_meta`
/// (`server/discover`, or any request naming 2026-07-28 or later) the metadata that lifecycle
/// requires (`-32602`). The error says which; [`malformed_meta`] tells the HTTP front that it
/// is answered with status 400.
pub fn era_of(request: &mcp::ClientRequest, client: &Client) -> Result<Era, mcp::ErrorData> {
    let meta = request.get_meta();
    let requested = meta.protocol_version();
    if !matches!(request, mcp::ClientRequest::InitializeRequest(_))
        && let Some(requested) = &requested
        && !supported_versions().contains(requested)
    {
        return Err(mcp::ErrorData::unsupported_protocol_version(
            requested.clone(),
            supported_versions(),
        ));
    }
    let self_contained = matches!(request, mcp::ClientRequest::DiscoverRequest(_))
        || requested.as_ref().is_some_and(|v| !v.has_initialize());
    if self_contained {
        let missing = meta.missing_required_keys(&mcp::ProtocolVersion::V_2026_07_28);
        if !missing.is_empty() {
            return Err(malformed_meta(&missing));
        }
    }
    let version = requested.or_else(|| client.negotiated.clone());
    let modern = self_contained || version.as_ref().is_some_and(|v| !v.has_initialize());
    Ok(Era { version, modern })
}

/// The error for a request whose `_meta` lacks what its lifecycle requires.
pub fn malformed_meta(missing: &[&str]) -> mcp::ErrorData {
    mcp::ErrorData::invalid_params(
        format!(
            "request _meta is missing or has malformed required fields: {}",
            missing.join(", ")
        ),
        Some(serde_json::json!({ "missing": missing })),
    )
}

/// Whether `error` is [`era_of`]'s complaint about a request's `_meta` (the HTTP front answers
/// it with 400, unlike other `-32602` errors).
pub fn is_malformed_meta(error: &mcp::ErrorData) -> bool {
    error.code == mcp::ErrorCode::INVALID_PARAMS
        && error.message.starts_with("request _meta is missing or has malformed required fields")
}

/// One request to serve.
pub struct Request {
    /// Its JSON-RPC id.
    pub id: mcp::RequestId,
    /// The request, its `_meta` in its extensions.
    pub request: mcp::ClientRequest,
    /// The way back to the client, for progress and questions.
    pub link: Arc<dyn RequestLink>,
    /// Cancelled when the client gives up on the request.
    pub cancel: CancellationToken,
}

/// The one dispatcher: every front hands it the requests it parsed. It holds what answering
/// needs beyond the gateway: the calls of 2026-07-28 clients parked between `input_required`
/// rounds, and the tools of the inventory written as JSON once. A front makes one and keeps it
/// (the state is the front's, not the gateway's).
#[derive(Debug)]
pub struct Dispatcher {
    gateway: Arc<Gateway>,
    /// Calls of 2026-07-28 clients waiting for their answers to `input_required` rounds.
    rounds: Rounds,
    /// The tools of the inventory, written as JSON once.
    tool_json: ToolJson,
}

impl Dispatcher {
    /// A dispatcher over `gateway`.
    pub fn new(gateway: Arc<Gateway>) -> Dispatcher {
        Dispatcher { gateway, rounds: Rounds::default(), tool_json: ToolJson::default() }
    }

    /// The gateway it dispatches to.
    pub fn gateway(&self) -> &Arc<Gateway> {
        &self.gateway
    }

    /// Serves `request` from `client` under `era` (see [`era_of`]), and shapes the result for
    /// that era. With tracing on, it is served in a SERVER span of its own (`crate::trace`).
    pub async fn answer(
        &self,
        client: &Client,
        era: &Era,
        request: Request,
    ) -> Result<Answer, mcp::ErrorData> {
        use opentelemetry::context::FutureExt as _;
        let peer = crate::trace::Peer {
            session_id: client.session_id.as_deref(),
            address: client.address,
            version: era.version.as_ref(),
        };
        let Some(cx) = crate::trace::server_span(&request.request, &request.id, &peer) else {
            return self.answer_in_span(client, era, request).await;
        };
        let answered = self.answer_in_span(client, era, request).with_context(cx.clone()).await;
        crate::trace::end(&cx, &answered);
        answered
    }

    async fn answer_in_span(
        &self,
        client: &Client,
        era: &Era,
        request: Request,
    ) -> Result<Answer, mcp::ErrorData> {
        let gateway = &self.gateway;
        if let mcp::ClientRequest::ListToolsRequest(_) = &request.request {
            let mut ctx = context(client, &request.id, &request.link);
            let tools =
                gateway.list_tools_json(&self.tool_json, &mut ctx).await.map_err(to_mcp_error)?;
            return Ok(Answer::Written(tools_result(&tools, era.modern)));
        }
        let served = serve(gateway, &self.rounds, client, era, request).await;
        match served {
            Ok(Answer::Raw(raw)) => Ok(shape_raw(raw, era.modern)),
            Ok(Answer::Result(mut result)) => {
                shape(&mut result, era.modern);
                Ok(Answer::Result(result))
            }
            Ok(written @ Answer::Written(_)) => Ok(written),
            Err(mut error) => {
                // 2026-07-28 folds "resource not found" into invalid parameters.
                if era.modern && error.code == mcp::ErrorCode::RESOURCE_NOT_FOUND {
                    error.code = mcp::ErrorCode::INVALID_PARAMS;
                }
                Err(error)
            }
        }
    }
}

async fn serve(
    gateway: &Arc<Gateway>,
    rounds: &Rounds,
    client: &Client,
    era: &Era,
    request: Request,
) -> Result<Answer, mcp::ErrorData> {
    let Request { id, request, link, cancel } = request;
    let meta = request.get_meta().clone();
    let request = match Call::of(request) {
        Ok(call) => {
            // Requests an upstream may ask questions about: a 2026-07-28 client answers them
            // in input_required rounds.
            let call = call.with(meta, gateway.clone(), client.clone(), id, cancel.clone());
            if era.modern {
                let retry = call.retry();
                return rounds.serve(retry, link, cancel, move |link| call.serve(link)).await;
            }
            return call.serve(link).await;
        }
        Err(other) => other,
    };
    serve_other(gateway, client, era, id, request, link, meta, cancel).await.map(Answer::Result)
}

/// The requests that are not calls.
#[allow(clippy::too_many_arguments)]
async fn serve_other(
    gateway: &Arc<Gateway>,
    client: &Client,
    era: &Era,
    id: mcp::RequestId,
    request: mcp::ClientRequest,
    link: Arc<dyn RequestLink>,
    meta: mcp::RequestMetaObject,
    cancel: CancellationToken,
) -> Result<mcp::ServerResult, mcp::ErrorData> {
    let mut ctx = context(client, &id, &link);
    let options = || call_options(client, &link, &meta, &cancel);
    let session = |method: &str| match (&client.session, era.modern) {
        (Some(session), false) => Ok(session.clone()),
        _ => Err(not_in_this_era(method)),
    };
    let empty = || mcp::ServerResult::empty(());
    match request {
        mcp::ClientRequest::InitializeRequest(_) => {
            Err(mcp::ErrorData::invalid_request("this session is already initialized", None))
        }
        mcp::ClientRequest::DiscoverRequest(_) => {
            Ok(mcp::ServerResult::DiscoverResult(discover(gateway)))
        }
        mcp::ClientRequest::PingRequest(_) if era.modern => Err(not_in_this_era("ping")),
        mcp::ClientRequest::PingRequest(_) => Ok(empty()),
        mcp::ClientRequest::ListPromptsRequest(_) => {
            let prompts = gateway.list_prompts(&mut ctx).await.map_err(to_mcp_error)?;
            Ok(mcp::ServerResult::ListPromptsResult(mcp::ListPromptsResult::with_all_items(
                prompts,
            )))
        }
        mcp::ClientRequest::ListResourcesRequest(_) => {
            let resources = gateway.list_resources(&mut ctx).await.map_err(to_mcp_error)?;
            Ok(mcp::ServerResult::ListResourcesResult(mcp::ListResourcesResult::with_all_items(
                resources,
            )))
        }
        mcp::ClientRequest::ListResourceTemplatesRequest(_) => {
            let templates =
                gateway.list_resource_templates(&mut ctx).await.map_err(to_mcp_error)?;
            Ok(mcp::ServerResult::ListResourceTemplatesResult(
                mcp::ListResourceTemplatesResult::with_all_items(templates),
            ))
        }
        mcp::ClientRequest::CompleteRequest(request) => {
            let mut params = request.params;
            params.meta = forwarded_meta(&meta);
            let result =
                gateway.complete(params, &options(), &mut ctx).await.map_err(to_mcp_error)?;
            Ok(mcp::ServerResult::CompleteResult(result))
        }
        mcp::ClientRequest::SetLevelRequest(request) => {
            let session = session("logging/setLevel")?;
            gateway
                .set_log_level(&session, request.params, &mut ctx)
                .await
                .map_err(to_mcp_error)?;
            Ok(empty())
        }
        mcp::ClientRequest::SubscribeRequest(request) => {
            let session = session("resources/subscribe")?;
            gateway
                .subscribe(Some(&session), request.params, &mut ctx)
                .await
                .map_err(to_mcp_error)?;
            Ok(empty())
        }
        mcp::ClientRequest::UnsubscribeRequest(request) => {
            let session = session("resources/unsubscribe")?;
            gateway
                .unsubscribe(Some(&session), request.params, &mut ctx)
                .await
                .map_err(to_mcp_error)?;
            Ok(empty())
        }
        mcp::ClientRequest::SubscriptionsListenRequest(_) => {
            // The front serves it (it is a stream); reaching here means the front has none.
            Err(not_in_this_era("subscriptions/listen"))
        }
        mcp::ClientRequest::CustomRequest(request) => {
            if request.method == crate::gateway::INTERCEPTORS_LIST {
                let list = gateway.interceptors_list(&mut ctx).await.map_err(to_mcp_error)?;
                return Ok(mcp::ServerResult::CustomResult(mcp::CustomResult::new(list)));
            }
            let version = era.version.as_ref().map(|v| v.to_string());
            Err(crate::unrecognised::unrecognised_request(
                &request.method,
                request.params.as_ref(),
                version.as_deref(),
            ))
        }
        mcp::ClientRequest::CallToolRequest(_)
        | mcp::ClientRequest::GetPromptRequest(_)
        | mcp::ClientRequest::ReadResourceRequest(_) => {
            unreachable!("served as calls above")
        }
        mcp::ClientRequest::ListToolsRequest(_) => unreachable!("answered written, in answer()"),
        // Tasks and skills are extensions toolgate does not offer.
        other => Err(method_not_found(other.method())),
    }
}

/// The pipeline's context of a request.
fn context(client: &Client, id: &mcp::RequestId, link: &Arc<dyn RequestLink>) -> CallContext {
    let mut ctx = CallContext::new(client.principal.clone());
    ctx.request_id = Some(id.to_string());
    ctx.session = client.session_id.clone();
    ctx.client_address = client.address;
    ctx.elicitor = Some(Arc::new(DownstreamCaller::new(link.clone(), None)));
    ctx
}

/// How a request is made upstream: on behalf of its client, cancelled with it.
fn call_options(
    client: &Client,
    link: &Arc<dyn RequestLink>,
    meta: &mcp::RequestMetaObject,
    cancel: &CancellationToken,
) -> CallOptions {
    let caller = DownstreamCaller::new(link.clone(), meta.get_progress_token())
        .in_session(client.session.clone());
    CallOptions { caller: Some(Arc::new(caller)), cancel: cancel.clone(), timeout: None }
}

/// A request an upstream may ask questions about while serving it.
enum Call {
    Tool(mcp::CallToolRequestParams),
    Prompt(mcp::GetPromptRequestParams),
    Resource(mcp::ReadResourceRequestParams),
}

/// A [`Call`] with what serving it needs, owned (it may go on in a task of its own).
struct Serving {
    call: Call,
    meta: mcp::RequestMetaObject,
    gateway: Arc<Gateway>,
    client: Client,
    id: mcp::RequestId,
    cancel: CancellationToken,
}

impl Call {
    /// The call `request` is, or the request back when it is none.
    // The request given back is as large as the one taken; boxing it would add an allocation
    // to every request that is not a call.
    #[allow(clippy::result_large_err)]
    fn of(request: mcp::ClientRequest) -> Result<Call, mcp::ClientRequest> {
        match request {
            mcp::ClientRequest::CallToolRequest(request) => Ok(Call::Tool(request.params)),
            mcp::ClientRequest::GetPromptRequest(request) => Ok(Call::Prompt(request.params)),
            mcp::ClientRequest::ReadResourceRequest(request) => Ok(Call::Resource(request.params)),
            other => Err(other),
        }
    }

    fn with(
        self,
        meta: mcp::RequestMetaObject,
        gateway: Arc<Gateway>,
        client: Client,
        id: mcp::RequestId,
        cancel: CancellationToken,
    ) -> Serving {
        Serving { call: self, meta, gateway, client, id, cancel }
    }
}

impl Serving {
    /// Which request this is, and what a retry of it carries (taken out: the state and the
    /// answers are the client's to toolgate, not to the upstream).
    fn retry(&self) -> crate::mrtr::Retry {
        let (target, state, responses) = match &self.call {
            Call::Tool(params) => (
                format!("tools/call {}", params.name),
                &params.request_state,
                &params.input_responses,
            ),
            Call::Prompt(params) => (
                format!("prompts/get {}", params.name),
                &params.request_state,
                &params.input_responses,
            ),
            Call::Resource(params) => (
                format!("resources/read {}", params.uri),
                &params.request_state,
                &params.input_responses,
            ),
        };
        crate::mrtr::Retry { target, state: state.clone(), responses: responses.clone() }
    }

    /// Serves the call, its questions going through `link`.
    fn serve(
        self,
        link: Arc<dyn RequestLink>,
    ) -> futures::future::BoxFuture<'static, Result<Answer, mcp::ErrorData>> {
        Box::pin(async move {
            let Serving { call, meta, gateway, client, id, cancel } = self;
            let mut ctx = context(&client, &id, &link);
            let options = call_options(&client, &link, &meta, &cancel);
            let forwarded = forwarded_meta(&meta);
            match call {
                Call::Tool(mut params) => {
                    params.meta = forwarded;
                    strip_retry(&mut params.request_state, &mut params.input_responses);
                    let result = match gateway.call_tool_answer(params, &options, &mut ctx).await {
                        Ok(ToolAnswer::Raw(raw)) => return Ok(Answer::Raw(raw)),
                        Ok(ToolAnswer::Parsed(result)) => result,
                        Err(error) => match reply(error) {
                            ErrorReply::Protocol(error) => return Err(error),
                            ErrorReply::ToolError(message) => {
                                mcp::CallToolResult::error(vec![mcp::ContentBlock::text(message)])
                            }
                        },
                    };
                    Ok(Answer::Result(mcp::ServerResult::CallToolResult(result)))
                }
                Call::Prompt(mut params) => {
                    params.meta = forwarded;
                    strip_retry(&mut params.request_state, &mut params.input_responses);
                    let result = gateway
                        .get_prompt(params, &options, &mut ctx)
                        .await
                        .map_err(to_mcp_error)?;
                    Ok(Answer::Result(mcp::ServerResult::GetPromptResult(result)))
                }
                Call::Resource(mut params) => {
                    params.meta = forwarded;
                    strip_retry(&mut params.request_state, &mut params.input_responses);
                    let result = gateway
                        .read_resource(params, &options, &mut ctx)
                        .await
                        .map_err(to_mcp_error)?;
                    Ok(Answer::Result(mcp::ServerResult::ReadResourceResult(result)))
                }
            }
        })
    }
}

/// A method that exists, but not in the era of the request that named it.
fn not_in_this_era(method: &str) -> mcp::ErrorData {
    mcp::ErrorData::new(
        mcp::ErrorCode::METHOD_NOT_FOUND,
        format!("Method not found: {method} (not a method of this protocol version)"),
        Some(serde_json::json!({ "method": method })),
    )
}

fn method_not_found(method: &str) -> mcp::ErrorData {
    mcp::ErrorData::new(
        mcp::ErrorCode::METHOD_NOT_FOUND,
        format!("Method not found: {method}"),
        Some(serde_json::json!({ "method": method })),
    )
}

/// A retry of toolgate's own round (it names a `requestState` toolgate gave) carries answers for
/// toolgate, which the parked call was given; they are not sent on. Answers a client sends with
/// a fresh request are the upstream's to read (a server that keeps no state asks and reads them
/// that way), and pass.
fn strip_retry(state: &mut Option<String>, responses: &mut Option<mcp::InputResponses>) {
    if state.take().is_some() {
        *responses = None;
    }
}

/// A `tools/list` result around the tools' JSON array: for a 2026-07-28 client with the
/// fields that era requires (what `mark_complete` and rmcp's caching hints would add: complete,
/// immediately stale, private to this client).
fn tools_result(tools: &[u8], modern: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(tools.len() + 80);
    out.extend_from_slice(br#"{"tools":"#);
    out.extend_from_slice(tools);
    if modern {
        out.extend_from_slice(br#","resultType":"complete","ttlMs":0,"cacheScope":"private""#);
    }
    out.push(b'}');
    out
}

/// Shapes `result` for its era: `resultType` and caching hints for 2026-07-28 (`modern`), no
/// `resultType` for older clients.
fn shape(result: &mut mcp::ServerResult, modern: bool) {
    if modern {
        mark_complete(result);
        result.fill_missing_cache_hints();
    } else {
        result.strip_result_type_for_legacy_peer();
    }
}

/// Shapes a tool's result as the upstream wrote it, as [`shape`] would: a 2026-07-28 client
/// gets `"resultType":"complete"` put in front when the upstream did not write it; an older
/// client gets the result as written, less the `resultType` a 2026-07-28 upstream writes.
fn shape_raw(raw: RawToolResult, modern: bool) -> Answer {
    match (modern, raw.has_result_type()) {
        (true, false) => {
            let json = raw.json();
            let rest = json.trim_start().strip_prefix('{').unwrap_or(json).trim_start();
            let mut out = Vec::with_capacity(json.len() + 24);
            out.extend_from_slice(br#"{"resultType":"complete""#);
            if !rest.starts_with('}') {
                out.push(b',');
            }
            out.extend_from_slice(rest.as_bytes());
            Answer::Written(out)
        }
        (false, true) => match raw.without_result_type() {
            Ok(written) => Answer::Written(written),
            // The transport checked that it is an object; should it not read, it goes as it
            // came.
            Err(_) => Answer::Raw(raw),
        },
        _ => Answer::Raw(raw),
    }
}

/// Marks a result relayed from an upstream of the handshake era as complete: a 2026-07-28
/// client requires `resultType`.
fn mark_complete(result: &mut mcp::ServerResult) {
    let result_type = match result {
        mcp::ServerResult::CallToolResult(r) => &mut r.result_type,
        mcp::ServerResult::GetPromptResult(r) => &mut r.result_type,
        mcp::ServerResult::ReadResourceResult(r) => &mut r.result_type,
        mcp::ServerResult::CompleteResult(r) => &mut r.result_type,
        mcp::ServerResult::ListToolsResult(r) => &mut r.result_type,
        mcp::ServerResult::ListPromptsResult(r) => &mut r.result_type,
        mcp::ServerResult::ListResourcesResult(r) => &mut r.result_type,
        mcp::ServerResult::ListResourceTemplatesResult(r) => &mut r.result_type,
        _ => return,
    };
    result_type.get_or_insert(mcp::ResultType::COMPLETE);
}

#[cfg(test)]
mod tests;
