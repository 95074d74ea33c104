//! One response: the approved calls run, the servers listed, then model turns and tool calls
//! until the model answers, a call waits for the application (an approval, a function's
//! output), or the response's share of tool calls is spent.
//!
//! Every MCP call goes through the gateway as the caller's principal, so the pipeline
//! (policy, approval, integrity, transforms, audit) sees it like any other client's. A call's
//! result becomes an `mcp_call` item when it is known, with the typed errors of the Responses
//! API: the upstream's JSON-RPC error is an `mcp_protocol_error`, a tool error (the tool's own,
//! or the gateway's refusal, which the model is meant to read) an `mcp_tool_execution_error`.

use std::sync::Arc;

use futures::StreamExt as _;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolgate_core::mcp;
use toolgate_gateway::{DynamicHandle, ErrorReply, Gateway};
use toolgate_intercept::{CallContext, Principal};
use toolgate_llm::chat::{ChatRequest, Message, Part, Usage};
use toolgate_llm::provider::StreamEvent;
use toolgate_upstream::CallOptions;

use crate::approval::ApplicationApproval;
use crate::error::ApiError;
use crate::model::Model;
use crate::output::{Output, Writing, new_id};
use crate::request::CreateResponse;
use crate::state::{Answered, State, Waiting, WaitingOn};
use crate::toolbox::{Entry, Toolbox};

/// Tool calls one response runs when neither the request nor the configuration says.
pub const DEFAULT_MAX_TOOL_CALLS: u32 = 64;

/// How a response ended.
#[derive(Debug)]
pub(crate) struct Ended {
    /// The conversation, to store.
    pub(crate) state: State,
    /// Tokens of every model turn.
    pub(crate) usage: Usage,
}

/// Everything one response needs.
pub(crate) struct Turns<'a> {
    /// The gateway the calls go through.
    pub(crate) gateway: &'a Arc<Gateway>,
    /// Which servers the request may name by URL.
    pub(crate) access: &'a crate::toolbox::Access,
    /// Who is calling.
    pub(crate) principal: Principal,
    /// The response's id (the calls' session in the audit log).
    pub(crate) response_id: String,
    /// The model.
    pub(crate) model: Model,
    /// The request.
    pub(crate) request: &'a CreateResponse,
    /// The most tool calls to run.
    pub(crate) max_tool_calls: u32,
    /// Fired when the response is abandoned.
    pub(crate) cancel: CancellationToken,
    /// Whether the application can be asked to approve a call (`mcp_approval_request`); Chat
    /// Completions cannot, so there a call the gateway wants approved is refused.
    pub(crate) asks: bool,
}

/// What the model reads when a call needs an approval nobody can be asked for.
const NOBODY_TO_ASK: &str = "not run: the gateway's policy wants this call approved, and Chat \
                             Completions has no way to ask (use /v1/responses, which asks the \
                             application with an mcp_approval_request)";

impl Turns<'_> {
    /// Runs the response from `state` (the conversation so far), taking the request's input in.
    pub(crate) async fn run(
        &self,
        mut state: State,
        output: &mut Output,
    ) -> Result<Ended, ApiError> {
        let mut ctx = self.context(None);
        let toolbox = Toolbox::build(
            self.gateway,
            self.access,
            self.request,
            self.model.provider.dialect(),
            &mut ctx,
        )
        .await?;
        let model_name = |label: &str, tool: &str| match toolbox.model_name_of(label, tool) {
            Some((name, _)) => name.to_owned(),
            None => format!("{label}__{tool}"),
        };
        let answered = state.take_input(&model_name, &self.request.input)?;
        for listing in &toolbox.listings {
            if !state.listed.contains(&listing.server_label) {
                list(output, listing).await;
                if listing.error.is_none() {
                    state.listed.push(listing.server_label.clone());
                }
            }
        }
        let mut calls_left = self.max_tool_calls;
        for answer in answered {
            self.settle(answer, &toolbox, &mut state, output, &mut calls_left).await;
        }
        if let Some(error) = state.still_waiting() {
            return Err(error);
        }
        let mut usage = Usage::default();
        // Each turn but the last makes at least one call: the bound on calls bounds the turns.
        for _ in 0..=self.max_tool_calls {
            let turn = self.model_turn(&state, &toolbox, output, &mut usage).await?;
            let calls = turn.tool_calls.clone();
            state.messages.push(Message::Assistant(turn));
            if calls.is_empty() {
                break;
            }
            for call in calls {
                self.dispatch(call, &toolbox, &mut state, output, &mut calls_left).await;
            }
            if !state.waiting.is_empty() {
                break;
            }
        }
        Ok(Ended { state, usage })
    }

    fn context(&self, call_id: Option<&str>) -> CallContext {
        let mut ctx = CallContext::new(self.principal.clone());
        ctx.session = Some(self.response_id.clone());
        ctx.request_id = call_id.map(str::to_owned);
        ctx
    }

    /// One model turn, its text streamed as it comes.
    async fn model_turn(
        &self,
        state: &State,
        toolbox: &Toolbox,
        output: &mut Output,
        usage: &mut Usage,
    ) -> Result<toolgate_llm::chat::AssistantTurn, ApiError> {
        let system: Vec<&str> =
            self.request.instructions.iter().chain(&state.notes).map(String::as_str).collect();
        let request = ChatRequest {
            model: self.model.name.clone(),
            system: (!system.is_empty()).then(|| system.join("\n\n")),
            messages: state.messages.clone(),
            tools: toolbox.specs.clone(),
            temperature: self.request.temperature,
            max_tokens: self.request.max_output_tokens,
        };
        let mut stream = self.model.provider.stream(request);
        let mut writing: Option<Writing> = None;
        loop {
            let event = tokio::select! {
                biased;
                () = self.cancel.cancelled() => return Err(ApiError::server("the response was cancelled")),
                event = stream.next() => event,
            };
            match event {
                Some(Ok(StreamEvent::Text(delta))) => {
                    if writing.is_none() {
                        writing = Some(Writing::start(output).await);
                    }
                    if let Some(writing) = &mut writing {
                        writing.push(output, &delta).await;
                    }
                }
                Some(Ok(StreamEvent::Finished(finished))) => {
                    if let Some(reported) = finished.usage {
                        *usage = *usage + reported;
                    }
                    let turn = finished.turn;
                    match writing {
                        Some(writing) => writing.finish(output, &turn.text).await,
                        None if !turn.text.is_empty() => {
                            let mut writing = Writing::start(output).await;
                            writing.push(output, &turn.text).await;
                            writing.finish(output, &turn.text).await;
                        }
                        None => {}
                    }
                    return Ok(turn);
                }
                Some(Ok(_)) => {}
                Some(Err(error)) => {
                    return Err(ApiError::upstream_model(format!("the model failed: {error}")));
                }
                None => return Err(ApiError::upstream_model("the model's stream ended early")),
            }
        }
    }

    /// One tool call of the model's turn.
    async fn dispatch(
        &self,
        call: toolgate_llm::chat::ToolCall,
        toolbox: &Toolbox,
        state: &mut State,
        output: &mut Output,
        calls_left: &mut u32,
    ) {
        let Some(entry) = toolbox.entries.get(&call.name) else {
            let text = format!("no tool is called {:?} here", call.name);
            state.answer(&call.id, &call.name, vec![Part::text(text)], true);
            return;
        };
        match entry {
            Entry::Function => {
                output
                    .whole(json!({
                        "type": "function_call", "id": new_id("fc"), "call_id": call.id,
                        "name": call.name, "arguments": call.arguments, "status": "completed",
                    }))
                    .await;
                state.waiting.push(Waiting {
                    call_id: call.id,
                    model_name: call.name,
                    arguments: call.arguments,
                    on: WaitingOn::Function,
                });
            }
            Entry::Mcp { server_label, tool, needs_approval: true, .. } if self.asks => {
                ask_approval(state, output, call, server_label, tool).await;
            }
            Entry::Mcp { server_label, tool, exposed, format, dynamic, .. } => {
                if *calls_left == 0 {
                    let text = "not run: this response made as many tool calls as it may \
                                (max_tool_calls)";
                    state.answer(&call.id, &call.name, vec![Part::text(text)], true);
                    return;
                }
                *calls_left -= 1;
                let ran = self.call(&call, exposed, dynamic.as_ref(), false).await;
                match ran {
                    Ran::AskedByGateway if self.asks => {
                        ask_approval(state, output, call, server_label, tool).await;
                    }
                    Ran::AskedByGateway => {
                        state.answer(&call.id, &call.name, vec![Part::text(NOBODY_TO_ASK)], true);
                    }
                    Ran::Done { content, is_error, item } => {
                        let at = Called { server_label, tool, format: *format };
                        emit_outcome(output, &call, &at, None, item).await;
                        state.answer(&call.id, &call.name, content, is_error);
                    }
                }
            }
        }
    }

    /// A call the application answered in this request.
    async fn settle(
        &self,
        answer: Answered,
        toolbox: &Toolbox,
        state: &mut State,
        output: &mut Output,
        calls_left: &mut u32,
    ) {
        let (waiting, approved, reason) = match answer {
            Answered::Approved(waiting) => (waiting, true, None),
            Answered::Denied(waiting, reason) => (waiting, false, reason),
        };
        let WaitingOn::Approval { approval_request_id, server_label, tool } = &waiting.on else {
            return;
        };
        let call = toolgate_llm::chat::ToolCall {
            id: waiting.call_id.clone(),
            name: waiting.model_name.clone(),
            arguments: waiting.arguments.clone(),
        };
        if !approved {
            let why = match reason {
                Some(reason) => format!("the application denied this call: {reason}"),
                None => "the application denied this call".to_owned(),
            };
            state.answer(&call.id, &call.name, vec![Part::text(why)], true);
            return;
        }
        let Some((_, Entry::Mcp { exposed, format, dynamic, .. })) =
            toolbox.model_name_of(server_label, tool)
        else {
            let text = format!(
                "not run: the tool {tool} of {server_label} is not among this request's tools"
            );
            state.answer(&call.id, &call.name, vec![Part::text(text)], true);
            return;
        };
        *calls_left = calls_left.saturating_sub(1);
        match self.call(&call, exposed, dynamic.as_ref(), true).await {
            Ran::Done { content, is_error, item } => {
                let request = Some(approval_request_id.as_str());
                let at = Called { server_label, tool, format: *format };
                emit_outcome(output, &call, &at, request, item).await;
                state.answer(&call.id, &call.name, content, is_error);
            }
            // Approved, yet asked again: the gateway's rule refused it after all.
            Ran::AskedByGateway => {
                let text = "the gateway's approval rules refused this call";
                state.answer(&call.id, &call.name, vec![Part::text(text)], true);
            }
        }
    }

    /// Calls the tool through the gateway (over the pooled connection of a server the request
    /// named by URL, when `dynamic` is one).
    async fn call(
        &self,
        call: &toolgate_llm::chat::ToolCall,
        exposed: &str,
        dynamic: Option<&DynamicHandle>,
        approved: bool,
    ) -> Ran {
        let arguments = match call.arguments_object() {
            Ok(arguments) => arguments,
            Err(why) => {
                return Ran::Done {
                    content: vec![Part::text(why.clone())],
                    is_error: true,
                    item: CallItem::Failed(json!({
                        "type": "mcp_tool_execution_error",
                        "content": [{ "type": "text", "text": why }],
                    })),
                };
            }
        };
        let approval = ApplicationApproval::new(approved);
        let mut ctx = self.context(Some(&call.id));
        ctx.elicitor = Some(Arc::new(approval.clone()));
        let options =
            CallOptions { caller: None, cancel: self.cancel.child_token(), timeout: None };
        let params = mcp::CallToolRequestParams::new(exposed.to_owned()).with_arguments(arguments);
        let result = match dynamic {
            Some(handle) => handle.call_tool(params, &options, &mut ctx).await,
            None => self.gateway.call_tool(params, &options, &mut ctx).await,
        };
        if approval.was_asked() {
            return Ran::AskedByGateway;
        }
        match result {
            Ok(result) => {
                let text = toolgate_llm::content::model_text(&result);
                let is_error = result.is_error == Some(true);
                let item = if is_error {
                    CallItem::Failed(json!({
                        "type": "mcp_tool_execution_error",
                        "content": serde_json::to_value(&result.content).unwrap_or_default(),
                    }))
                } else {
                    CallItem::Output(text, Some(Box::new(result.clone())))
                };
                Ran::Done { content: toolgate_llm::content::parts(&result), is_error, item }
            }
            Err(error) => {
                let text = error.to_string();
                // An HTTP server that answered with an error status: the API's own error type.
                let status = match &error {
                    toolgate_gateway::GatewayError::Upstream(upstream) => upstream.http_status(),
                    _ => None,
                };
                if let Some(code) = status {
                    let item = CallItem::Failed(json!({
                        "type": "http_error", "code": code, "message": text,
                    }));
                    return Ran::Done { content: vec![Part::text(text)], is_error: true, item };
                }
                let item = match toolgate_gateway::error_reply(error) {
                    ErrorReply::Protocol(error) => CallItem::Failed(json!({
                        "type": "mcp_protocol_error",
                        "code": error.code.0,
                        "message": error.message,
                    })),
                    ErrorReply::ToolError(message) => CallItem::Failed(json!({
                        "type": "mcp_tool_execution_error",
                        "content": [{ "type": "text", "text": message }],
                    })),
                };
                Ran::Done { content: vec![Part::text(text)], is_error: true, item }
            }
        }
    }
}

/// What became of a call.
enum Ran {
    /// It ran (or failed): what the model reads, and the item's outcome.
    Done { content: Vec<Part>, is_error: bool, item: CallItem },
    /// The gateway's approval rule asked, and the application has not approved it yet.
    AskedByGateway,
}

/// An `mcp_call`'s outcome.
enum CallItem {
    /// Its `output`, and the result it came from.
    Output(String, Option<Box<mcp::CallToolResult>>),
    /// Its `error`.
    Failed(Value),
}

/// The `mcp_list_tools` item of one server, with its events; listed again in the next
/// response of the conversation when its tools could not be listed.
async fn list(output: &mut Output, listing: &crate::toolbox::Listing) {
    let index = output
        .add(json!({
            "type": "mcp_list_tools", "id": new_id("mcpl"),
            "server_label": listing.server_label, "tools": [],
        }))
        .await;
    let id = output.id_of(index);
    let at = json!({ "item_id": id, "output_index": index });
    output.event("response.mcp_list_tools.in_progress", at.clone()).await;
    let mut item = json!({
        "type": "mcp_list_tools", "id": id, "server_label": listing.server_label,
        "tools": listing.tools,
    });
    match &listing.error {
        None => output.event("response.mcp_list_tools.completed", at).await,
        Some(error) => {
            item["error"] = error.as_str().into();
            output.event("response.mcp_list_tools.failed", at).await;
        }
    }
    output.done(index, item).await;
}

/// An `mcp_approval_request` for `call`, which then waits.
async fn ask_approval(
    state: &mut State,
    output: &mut Output,
    call: toolgate_llm::chat::ToolCall,
    server_label: &str,
    tool: &str,
) {
    let id = new_id("mcpr");
    output
        .whole(json!({
            "type": "mcp_approval_request", "id": id, "server_label": server_label,
            "name": tool, "arguments": call.arguments,
        }))
        .await;
    state.waiting.push(Waiting {
        call_id: call.id,
        model_name: call.name,
        arguments: call.arguments,
        on: WaitingOn::Approval {
            approval_request_id: id,
            server_label: server_label.to_owned(),
            tool: tool.to_owned(),
        },
    });
}

/// Which tool a call reached, and the item its result becomes.
struct Called<'a> {
    server_label: &'a str,
    tool: &'a str,
    format: Option<toolgate_core::ResultFormat>,
}

/// The item of a call that ran: the Responses API's own item where the server's
/// `response_format` names one and the call succeeded, else an `mcp_call`.
async fn emit_outcome(
    output: &mut Output,
    call: &toolgate_llm::chat::ToolCall,
    at: &Called<'_>,
    approval_request_id: Option<&str>,
    item: CallItem,
) {
    if let (Some(format), CallItem::Output(_, Some(result))) = (at.format, &item) {
        let arguments = call.arguments_object().ok();
        let rendered = toolgate_llm::format::render(
            format,
            result,
            &toolgate_llm::format::ToolCall {
                id: &call.id,
                name: at.tool,
                server_label: at.server_label,
                arguments: arguments.as_ref(),
            },
        );
        output.whole(rendered).await;
        return;
    }
    emit_call(output, call, at.server_label, at.tool, approval_request_id, item).await;
}

/// The `mcp_call` item of a call that ran, with its events.
async fn emit_call(
    output: &mut Output,
    call: &toolgate_llm::chat::ToolCall,
    server_label: &str,
    tool: &str,
    approval_request_id: Option<&str>,
    outcome: CallItem,
) {
    let id = new_id("mcp");
    let arguments = if call.arguments.trim().is_empty() { "{}" } else { call.arguments.as_str() };
    let mut item = json!({
        "type": "mcp_call", "id": id, "server_label": server_label, "name": tool,
        "arguments": "", "status": "in_progress",
    });
    if let Some(request) = approval_request_id {
        item["approval_request_id"] = request.into();
    }
    let index = output.add(item.clone()).await;
    let at = json!({ "item_id": id, "output_index": index });
    let mut delta = at.clone();
    delta["delta"] = arguments.into();
    output.event("response.mcp_call_arguments.delta", delta).await;
    let mut done = at.clone();
    done["arguments"] = arguments.into();
    output.event("response.mcp_call_arguments.done", done).await;
    output.event("response.mcp_call.in_progress", at.clone()).await;
    item["arguments"] = arguments.into();
    match outcome {
        CallItem::Output(text, _) => {
            item["status"] = "completed".into();
            item["output"] = text.into();
            item["error"] = Value::Null;
            output.event("response.mcp_call.completed", at).await;
        }
        CallItem::Failed(error) => {
            item["status"] = "failed".into();
            item["output"] = Value::Null;
            item["error"] = error;
            output.event("response.mcp_call.failed", at).await;
        }
    }
    output.done(index, item).await;
}
