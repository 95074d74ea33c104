//! The agent as a client of the gateway in its own process: every call passes the pipeline
//! (policy, approval, integrity, transforms) and is audited with the agent as its principal
//! (`agent:<user>`), exactly like a call from any other client.
//!
//! As an MCP client it answers what upstreams ask while serving its calls:
//! - `sampling/createMessage`: by the agent's own model, once the person allows it (the
//!   pipeline has already had its say, as for every relayed question);
//! - `elicitation/create`: a form shown to the person;
//! - `roots/list`: the working directory and the `--root` paths;
//! - progress: shown on the call's line.
//!
//! Approvals: the `approval` interceptor's question (marked with `io.toolgate/approval`) is
//! asked as the agent's own prompt (allow once, always this tool, always this exact call,
//! deny with a reason); "always" answers are remembered for the rest of the process.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt as _;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use toolgate_core::mcp;
use toolgate_gateway::{Gateway, GatewayError};
use toolgate_intercept::approval_handoff::{ApprovalAnswer, ApprovalAsk};
use toolgate_intercept::{CallContext, Elicitor, Principal};
use toolgate_llm::chat::{ChatRequest, Message, Part};
use toolgate_llm::provider::{Provider, StreamEvent};
use toolgate_upstream::{CallOptions, Caller};

use crate::host::{
    ApprovalChoice, ApprovalQuestion, Frontend, HostCall, Interaction, ToolHost, ToolOutcome,
};

/// The agent's principal: `agent:<user>`.
pub fn agent_principal() -> Principal {
    Principal::new("agent", Principal::local().id)
}

/// The model that answers upstreams' sampling requests.
#[derive(Clone)]
pub struct SamplingModel {
    /// The provider.
    pub provider: Arc<dyn Provider>,
    /// The model's name.
    pub model: String,
}

/// The gateway, as the agent's [`ToolHost`].
pub struct GatewayHost {
    gateway: Arc<Gateway>,
    principal: Principal,
    session: String,
    interaction: Arc<dyn Interaction>,
    sampling: Option<SamplingModel>,
    roots: Vec<PathBuf>,
    grants: Arc<Mutex<Grants>>,
    /// The trace context every call continues, as `_meta` entries.
    trace_context: Option<mcp::RequestMetaObject>,
}

/// "Always" answers to approval questions, for this process.
#[derive(Default)]
struct Grants {
    tools: HashSet<String>,
    exact: HashSet<(String, String)>,
}

impl GatewayHost {
    /// A host over `gateway`, asking `interaction`; `session` names the agent's session in
    /// events and the audit log.
    pub fn new(
        gateway: Arc<Gateway>,
        session: String,
        interaction: Arc<dyn Interaction>,
    ) -> GatewayHost {
        GatewayHost {
            gateway,
            principal: agent_principal(),
            session,
            interaction,
            sampling: None,
            roots: Vec::new(),
            grants: Arc::default(),
            trace_context: None,
        }
    }

    /// Answers upstreams' sampling requests with `model`.
    pub fn with_sampling(mut self, model: SamplingModel) -> GatewayHost {
        self.sampling = Some(model);
        self
    }

    /// The roots `roots/list` answers (directories).
    pub fn with_roots(mut self, roots: Vec<PathBuf>) -> GatewayHost {
        self.roots = roots;
        self
    }

    /// Continues the trace context in `meta` (`traceparent`, `tracestate`: the one the
    /// process was started in) in every tool call's span; without it, each call starts a trace.
    pub fn with_trace_context(mut self, meta: serde_json::Map<String, Value>) -> GatewayHost {
        self.trace_context =
            (!meta.is_empty()).then(|| mcp::RequestMetaObject(mcp::MetaObject(meta)));
        self
    }

    /// The gateway.
    pub fn gateway(&self) -> &Arc<Gateway> {
        &self.gateway
    }

    /// A context for one request of the agent.
    pub fn context(&self) -> CallContext {
        let mut ctx = CallContext::new(self.principal.clone());
        ctx.session = Some(self.session.clone());
        ctx.elicitor = Some(Arc::new(ApprovalAsker {
            gateway: self.gateway.clone(),
            interaction: self.interaction.clone(),
            grants: self.grants.clone(),
        }));
        ctx
    }
}

impl ToolHost for GatewayHost {
    fn tools(&self) -> BoxFuture<'_, Vec<mcp::Tool>> {
        Box::pin(async move {
            let mut ctx = self.context();
            match self.gateway.list_tools(&mut ctx).await {
                Ok(tools) => tools,
                Err(error) => {
                    tracing::warn!(%error, "listing the tools failed");
                    Vec::new()
                }
            }
        })
    }

    fn call(&self, call: HostCall) -> BoxFuture<'_, ToolOutcome> {
        Box::pin(async move {
            let server = self
                .gateway
                .inventory()
                .tool_route(&call.name)
                .map(|route| route.upstream.to_string())
                .unwrap_or_default();
            let caller = AgentCaller {
                party: format!("{}/{}", self.principal, self.session),
                call_id: call.call_id.clone(),
                server,
                frontend: call.frontend.clone(),
                interaction: self.interaction.clone(),
                sampling: self.sampling.clone(),
                roots: self.roots.clone(),
            };
            let options = CallOptions {
                caller: Some(Arc::new(caller)),
                cancel: call.cancel.clone(),
                timeout: call.timeout,
            };
            let mut params =
                mcp::CallToolRequestParams::new(call.name.clone()).with_arguments(call.arguments);
            params.meta = self.trace_context.clone();
            let mut ctx = self.context();
            ctx.request_id = Some(call.call_id);
            match self.gateway.call_tool_traced(params, &options, &mut ctx).await {
                Ok(result) => ToolOutcome::Done(result),
                Err(error) => outcome_of(error),
            }
        })
    }
}

fn outcome_of(error: GatewayError) -> ToolOutcome {
    match error {
        GatewayError::Refused(refusal) => ToolOutcome::Refused(refusal.to_string()),
        GatewayError::UnknownTool(name) => ToolOutcome::Unknown(name),
        cancelled if cancelled.is_cancelled() => ToolOutcome::Cancelled,
        timeout if timeout.is_timeout() => ToolOutcome::TimedOut(timeout.to_string()),
        other => ToolOutcome::Failed(other.to_string()),
    }
}

/// Asks the person the `approval` interceptor's questions, remembering "always" answers.
struct ApprovalAsker {
    gateway: Arc<Gateway>,
    interaction: Arc<dyn Interaction>,
    grants: Arc<Mutex<Grants>>,
}

impl Elicitor for ApprovalAsker {
    fn can_elicit(&self) -> bool {
        self.interaction.can_ask()
    }

    fn why_not(&self) -> Option<String> {
        Some("nobody can be asked: the agent has no terminal".to_owned())
    }

    fn elicit(
        &self,
        params: mcp::ElicitRequestParams,
    ) -> BoxFuture<'static, Result<mcp::ElicitResult, String>> {
        let interaction = self.interaction.clone();
        let grants = self.grants.clone();
        let gateway = self.gateway.clone();
        Box::pin(async move {
            let text = serde_json::to_value(&params).map_err(|e| e.to_string())?;
            let ask = text.get("_meta").and_then(Value::as_object).and_then(ApprovalAsk::from_meta);
            let Some(ask) = ask else {
                // Another interceptor's question: the form as it is.
                return Ok(interaction.elicit(String::new(), params).await);
            };
            let question = ApprovalQuestion {
                server: ask.server.clone(),
                tool: ask.tool.clone(),
                arguments: ask.arguments.clone(),
                reason: ask.reason.clone(),
                annotations: None,
            };
            let annotations = gateway
                .inventory()
                .tools()
                .iter()
                .find(|tool| *tool.name == *question.tool)
                .and_then(|tool| tool.annotations.clone());
            let question = ApprovalQuestion { annotations, ..question };
            let exact = (question.tool.clone(), canonical(&question.arguments));
            let remembered = {
                let grants = grants.lock().unwrap_or_else(PoisonError::into_inner);
                grants.tools.contains(&question.tool) || grants.exact.contains(&exact)
            };
            let answer = if remembered {
                ApprovalChoice::Once
            } else {
                interaction.approve(question.clone()).await
            };
            let accept = |decision: &str, reason: Option<String>| {
                let answer = ApprovalAnswer { decision: decision.to_owned(), reason };
                let mut result = mcp::ElicitResult::new(mcp::ElicitationAction::Accept);
                result.content = Some(answer.to_content());
                Ok(result)
            };
            match answer {
                ApprovalChoice::Once => accept(&ask.choices.once, None),
                ApprovalChoice::AlwaysTool => {
                    grants
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .tools
                        .insert(question.tool);
                    accept(&ask.choices.once, None)
                }
                ApprovalChoice::AlwaysExactCall => {
                    grants.lock().unwrap_or_else(PoisonError::into_inner).exact.insert(exact);
                    accept(&ask.choices.once, None)
                }
                ApprovalChoice::Deny(reason) => accept(&ask.choices.deny, reason),
            }
        })
    }
}

fn canonical(value: &Value) -> String {
    toolgate_core::canonical::canonical_json(value)
}

/// The [`Caller`] of one agent tool call.
struct AgentCaller {
    /// This agent's session: its calls answer a server's questions alike.
    party: String,
    call_id: String,
    server: String,
    frontend: Arc<dyn Frontend>,
    interaction: Arc<dyn Interaction>,
    sampling: Option<SamplingModel>,
    roots: Vec<PathBuf>,
}

impl Caller for AgentCaller {
    fn party(&self) -> Option<String> {
        Some(self.party.clone())
    }

    fn progress(&self, params: mcp::ProgressNotificationParam) -> BoxFuture<'static, ()> {
        self.frontend.tool_progress(
            &self.call_id,
            params.progress,
            params.total,
            params.message.as_deref(),
        );
        Box::pin(async {})
    }

    fn create_message(
        &self,
        params: mcp::CreateMessageRequestParams,
    ) -> BoxFuture<'static, Result<mcp::CreateMessageResult, mcp::ErrorData>> {
        let interaction = self.interaction.clone();
        let sampling = self.sampling.clone();
        let server = self.server.clone();
        Box::pin(async move {
            let Some(sampling) = sampling else {
                return Err(declined("the agent has no model to answer sampling requests with"));
            };
            let request = sampling_request(&params, &sampling.model)?;
            let summary = sampling_summary(&request);
            if !interaction.allow_sampling(server, summary).await {
                return Err(declined(if interaction.can_ask() {
                    "the person declined the sampling request"
                } else {
                    "sampling needs the person's consent and nobody could be asked (no \
                     terminal; --allow-sampling allows it)"
                }));
            }
            let mut stream = sampling.provider.stream(request);
            while let Some(event) = stream.next().await {
                match event {
                    Ok(StreamEvent::Finished(finished)) => {
                        let stop = match finished.stop {
                            toolgate_llm::chat::StopReason::MaxTokens => "maxTokens",
                            _ => "endTurn",
                        };
                        let result = json!({
                            "model": sampling.model,
                            "stopReason": stop,
                            "role": "assistant",
                            "content": { "type": "text", "text": finished.turn.text },
                        });
                        return serde_json::from_value(result)
                            .map_err(|e| declined(&format!("cannot build the answer: {e}")));
                    }
                    Ok(_) => {}
                    Err(error) => return Err(declined(&format!("the model failed: {error}"))),
                }
            }
            Err(declined("the model's stream ended early"))
        })
    }

    fn create_elicitation(
        &self,
        params: mcp::ElicitRequestParams,
    ) -> BoxFuture<'static, Result<mcp::ElicitResult, mcp::ErrorData>> {
        let interaction = self.interaction.clone();
        let server = self.server.clone();
        Box::pin(async move {
            if !interaction.can_ask() {
                return Ok(mcp::ElicitResult::new(mcp::ElicitationAction::Decline));
            }
            Ok(interaction.elicit(server, params).await)
        })
    }

    fn list_roots(&self) -> BoxFuture<'static, Result<mcp::ListRootsResult, mcp::ErrorData>> {
        let roots: Vec<Value> = self
            .roots
            .iter()
            .filter_map(|path| {
                let uri = url_of(path)?;
                let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
                Some(json!({ "uri": uri, "name": name }))
            })
            .collect();
        Box::pin(async move {
            serde_json::from_value(json!({ "roots": roots }))
                .map_err(|e| declined(&format!("cannot list the roots: {e}")))
        })
    }
}

/// `path` (made absolute) as a `file://` URL.
fn url_of(path: &std::path::Path) -> Option<String> {
    let absolute =
        if path.is_absolute() { path.to_owned() } else { std::env::current_dir().ok()?.join(path) };
    url::Url::from_file_path(absolute).ok().map(String::from)
}

fn declined(message: &str) -> mcp::ErrorData {
    mcp::ErrorData::new(mcp::ErrorCode::INVALID_REQUEST, message.to_owned(), None)
}

/// An upstream's sampling request as a request to the agent's model.
fn sampling_request(
    params: &mcp::CreateMessageRequestParams,
    model: &str,
) -> Result<ChatRequest, mcp::ErrorData> {
    let text = serde_json::to_value(params).map_err(|e| declined(&e.to_string()))?;
    let mut messages = Vec::new();
    for message in text["messages"].as_array().into_iter().flatten() {
        let blocks = match &message["content"] {
            Value::Array(blocks) => blocks.clone(),
            block => vec![block.clone()],
        };
        let mut parts = Vec::new();
        for block in blocks {
            match block["type"].as_str() {
                Some("text") => parts.push(Part::text(block["text"].as_str().unwrap_or_default())),
                Some("image") => parts.push(Part::Image {
                    mime_type: block["mimeType"].as_str().unwrap_or_default().to_owned(),
                    data: block["data"].as_str().unwrap_or_default().to_owned(),
                }),
                Some(other) => {
                    return Err(declined(&format!(
                        "sampling content of type {other} is not supported by the agent"
                    )));
                }
                None => {}
            }
        }
        match message["role"].as_str() {
            Some("assistant") => {
                let text = parts
                    .iter()
                    .filter_map(|part| match part {
                        Part::Text { text } => Some(text.as_str()),
                        Part::Image { .. } => None,
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                messages.push(Message::Assistant(toolgate_llm::chat::AssistantTurn {
                    text,
                    ..Default::default()
                }));
            }
            _ => messages.push(Message::User { content: parts }),
        }
    }
    Ok(ChatRequest {
        model: model.to_owned(),
        system: params.system_prompt.clone(),
        messages,
        tools: Vec::new(),
        temperature: params.temperature,
        max_tokens: Some(params.max_tokens),
    })
}

/// What the person is shown when asked to allow a sampling request.
fn sampling_summary(request: &ChatRequest) -> String {
    let mut summary = String::new();
    if let Some(system) = &request.system {
        summary.push_str(&format!("system: {system}\n"));
    }
    for message in &request.messages {
        match message {
            Message::User { content } => {
                for part in content {
                    match part {
                        Part::Text { text } => summary.push_str(&format!("user: {text}\n")),
                        Part::Image { mime_type, .. } => {
                            summary.push_str(&format!("user: [image {mime_type}]\n"))
                        }
                    }
                }
            }
            Message::Assistant(turn) => summary.push_str(&format!("assistant: {}\n", turn.text)),
            Message::ToolResult(_) => {}
        }
    }
    summary.push_str(&format!("(at most {} tokens)", request.max_tokens.unwrap_or_default()));
    summary
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_are_file_urls_with_reserved_characters_escaped() {
        assert_eq!(
            url_of(std::path::Path::new("/tmp/a b/c")).as_deref(),
            Some("file:///tmp/a%20b/c")
        );
        assert_eq!(url_of(std::path::Path::new("/")).as_deref(), Some("file:///"));
    }

    #[test]
    fn a_sampling_request_becomes_a_model_request() {
        let params: mcp::CreateMessageRequestParams = serde_json::from_value(json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Summarise: abc"}},
                {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
            ],
            "systemPrompt": "Be brief.",
            "maxTokens": 50,
        }))
        .expect("params");
        let request = sampling_request(&params, "m").expect("request");
        assert_eq!(request.model, "m");
        assert_eq!(request.system.as_deref(), Some("Be brief."));
        assert_eq!(request.max_tokens, Some(50));
        assert_eq!(request.messages[0], Message::user_text("Summarise: abc"));
        let Message::Assistant(turn) = &request.messages[1] else { panic!("assistant") };
        assert_eq!(turn.text, "ok");
        let summary = sampling_summary(&request);
        assert_eq!(
            summary,
            "system: Be brief.\nuser: Summarise: abc\nassistant: ok\n(at most 50 tokens)"
        );
    }
}
