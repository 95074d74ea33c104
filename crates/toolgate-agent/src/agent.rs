//! The loop: a prompt, the model's answer streamed, the tools it asks for called (in
//! parallel, through the [`ToolHost`]), their results handed back, until the model answers
//! without asking for tools or the turn limit is reached.
//!
//! Invariants the providers rely on:
//! - every tool call the model makes gets exactly one result before the next request
//!   (refused, unknown, malformed, failed, timed out and cancelled calls included);
//! - a turn cancelled while the model streams leaves nothing of that turn in the
//!   conversation; cancelled while tools run, it leaves the assistant turn and a result for
//!   each of its calls (`cancelled` where the call did not finish).
//!
//! Every message is handed to the [`Journal`] the moment it exists, so a crash loses nothing
//! already answered.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use futures::StreamExt as _;
use tokio_util::sync::CancellationToken;
use toolgate_core::mcp;
use toolgate_llm::chat::{ChatRequest, Message, StopReason, ToolCall, ToolResult, ToolSpec, Usage};
use toolgate_llm::provider::{Dialect, Provider, ProviderError, StreamEvent};
use toolgate_llm::tool_names::ToolNames;

use crate::host::{Frontend, HostCall, ToolHost, ToolOutcome};

/// The default number of model turns per prompt.
pub const DEFAULT_MAX_TURNS: u32 = 20;

/// How the agent talks to its model.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSettings {
    /// The model's name.
    pub model: String,
    /// The system prompt.
    pub system: Option<String>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// The most tokens per answer.
    pub max_tokens: Option<u32>,
    /// Model turns per prompt.
    pub max_turns: u32,
    /// Timeout of each tool call (`None`: the server's).
    pub tool_timeout: Option<Duration>,
    /// The history sent is trimmed to this many tokens (`None`: sent whole).
    pub context_tokens: Option<usize>,
}

/// Where each message goes as soon as it exists (the session store).
pub trait Journal: Send + Sync {
    /// Keeps `message` (with the usage of the response that produced it).
    fn append(&self, message: &Message, usage: Option<&Usage>) -> Result<(), String>;
}

/// Why a prompt ended without a final answer.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The model could not be asked (after the provider's retries).
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// The model kept calling tools.
    #[error("stopped after {0} model turns without a final answer (max_turns)")]
    MaxTurns(u32),
    /// The person cancelled the turn.
    #[error("cancelled")]
    Cancelled,
    /// The conversation could not be stored.
    #[error("cannot store the conversation: {0}")]
    Journal(String),
}

/// What one prompt cost and did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PromptReport {
    /// Model requests made.
    pub turns: u32,
    /// Tool calls made.
    pub tool_calls: u32,
    /// Tokens, summed over the turns that reported them.
    pub usage: Usage,
    /// The final answer's text.
    pub answer: String,
}

/// A conversation with a model that can call tools.
pub struct Agent {
    provider: Arc<dyn Provider>,
    host: Arc<dyn ToolHost>,
    settings: AgentSettings,
    messages: Vec<Message>,
    journal: Option<Arc<dyn Journal>>,
}

impl Agent {
    /// An agent with an empty conversation.
    pub fn new(
        provider: Arc<dyn Provider>,
        host: Arc<dyn ToolHost>,
        settings: AgentSettings,
    ) -> Agent {
        Agent { provider, host, settings, messages: Vec::new(), journal: None }
    }

    /// Continues `messages` (a resumed session).
    pub fn with_history(mut self, messages: Vec<Message>) -> Agent {
        self.messages = messages;
        self
    }

    /// Hands every new message to `journal`.
    pub fn with_journal(mut self, journal: Arc<dyn Journal>) -> Agent {
        self.journal = Some(journal);
        self
    }

    /// The conversation so far.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The settings.
    pub fn settings(&self) -> &AgentSettings {
        &self.settings
    }

    /// Changes the model (the REPL's `/model`).
    pub fn set_model(&mut self, model: String) {
        self.settings.model = model;
    }

    /// Forgets the conversation (the REPL's `/clear`); the journal keeps what it has.
    pub fn clear(&mut self) {
        self.messages.clear();
    }

    /// Starts a new journal (after `/clear`, a new session).
    pub fn set_journal(&mut self, journal: Option<Arc<dyn Journal>>) {
        self.journal = journal;
    }

    /// One prompt: the user's message, then model turns and tool calls until a final answer.
    pub async fn prompt(
        &mut self,
        user: Message,
        frontend: Arc<dyn Frontend>,
        cancel: CancellationToken,
    ) -> Result<PromptReport, AgentError> {
        self.push(user, None)?;
        let mut report = PromptReport::default();
        loop {
            if report.turns == self.settings.max_turns {
                return Err(AgentError::MaxTurns(self.settings.max_turns));
            }
            report.turns += 1;
            let tools = self.host.tools().await;
            let names = ToolNames::new(
                self.provider.dialect(),
                tools.iter().map(|tool| tool.name.as_ref()),
            );
            let request = self.request(&tools, &names);
            let finished = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(AgentError::Cancelled),
                finished = self.stream(request, frontend.as_ref()) => finished?,
            };
            frontend.answer_finished();
            if let Some(usage) = finished.usage {
                report.usage = report.usage + usage;
            }
            let turn = finished.turn;
            let calls = turn.tool_calls.clone();
            report.answer = turn.text.clone();
            self.push(Message::Assistant(turn), finished.usage.as_ref())?;
            if calls.is_empty() {
                if finished.stop == StopReason::MaxTokens {
                    frontend.notice("the answer was cut off at max_tokens");
                }
                return Ok(report);
            }
            report.tool_calls += calls.len() as u32;
            let outcomes = self.run_tools(&calls, &names, frontend.clone(), &cancel).await;
            let cancelled = outcomes.contains(&ToolOutcome::Cancelled);
            for (call, outcome) in calls.iter().zip(outcomes) {
                let result = ToolResult {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    content: outcome.parts(),
                    is_error: outcome.is_error(),
                };
                self.push(Message::ToolResult(result), None)?;
            }
            if cancelled || cancel.is_cancelled() {
                return Err(AgentError::Cancelled);
            }
        }
    }

    fn push(&mut self, message: Message, usage: Option<&Usage>) -> Result<(), AgentError> {
        if let Some(journal) = &self.journal {
            journal.append(&message, usage).map_err(AgentError::Journal)?;
        }
        self.messages.push(message);
        Ok(())
    }

    /// The request for the next model turn.
    fn request(&self, tools: &[mcp::Tool], names: &ToolNames) -> ChatRequest {
        let dialect = self.provider.dialect();
        let specs = tools
            .iter()
            .filter_map(|tool| {
                let name = names.provider_name(&tool.name)?;
                Some(ToolSpec {
                    name: name.to_owned(),
                    description: tool.description.as_deref().unwrap_or_default().to_owned(),
                    parameters: toolgate_llm::schema::adapt(
                        dialect,
                        &serde_json::Value::Object((*tool.input_schema).clone()),
                    ),
                })
            })
            .collect();
        let messages = match self.settings.context_tokens {
            Some(budget) => crate::trim::trim(&self.messages, budget, count_tokens).messages,
            None => self.messages.clone(),
        };
        ChatRequest {
            model: self.settings.model.clone(),
            system: self.settings.system.clone(),
            messages,
            tools: specs,
            temperature: self.settings.temperature,
            max_tokens: self.settings.max_tokens,
        }
    }

    /// Streams one model turn to the frontend.
    async fn stream(
        &self,
        request: ChatRequest,
        frontend: &dyn Frontend,
    ) -> Result<toolgate_llm::provider::Finished, AgentError> {
        let mut stream = self.provider.stream(request);
        while let Some(event) = stream.next().await {
            match event? {
                StreamEvent::Text(delta) => frontend.text(&delta),
                StreamEvent::Reasoning(delta) => frontend.reasoning(&delta),
                StreamEvent::ToolCallStarted { .. } => {}
                StreamEvent::Retrying { attempt, wait, reason } => {
                    frontend.retrying(attempt, wait, &reason)
                }
                StreamEvent::Finished(finished) => return Ok(finished),
            }
        }
        Err(AgentError::Provider(ProviderError::Truncated {
            provider: provider_label(self.provider.dialect()),
        }))
    }

    /// Runs the calls of one turn in parallel; one outcome per call, in their order.
    async fn run_tools(
        &self,
        calls: &[ToolCall],
        names: &ToolNames,
        frontend: Arc<dyn Frontend>,
        cancel: &CancellationToken,
    ) -> Vec<ToolOutcome> {
        let runs = calls.iter().map(|call| {
            let frontend = frontend.clone();
            let exposed = names.exposed_name(&call.name).map(str::to_owned);
            let cancel = cancel.child_token();
            async move {
                let shown = exposed.clone().unwrap_or_else(|| call.name.clone());
                let arguments = call.arguments_object();
                let started = Instant::now();
                let shown_arguments = arguments.clone().unwrap_or_default();
                frontend.tool_started(&call.id, &shown, &shown_arguments);
                let outcome = match (exposed, arguments) {
                    (None, _) => ToolOutcome::Unknown(call.name.clone()),
                    (Some(_), Err(problem)) => ToolOutcome::BadArguments(problem),
                    (Some(name), Ok(arguments)) => {
                        let call = HostCall {
                            call_id: call.id.clone(),
                            name,
                            arguments,
                            cancel: cancel.clone(),
                            timeout: self.settings.tool_timeout,
                            frontend: frontend.clone(),
                        };
                        let outcome = tokio::select! {
                            outcome = self.host.call(call) => outcome,
                            // The host is told through the token; an outcome that does not come
                            // promptly after is not waited for.
                            () = cancelled_then_grace(&cancel) => ToolOutcome::Cancelled,
                        };
                        match outcome {
                            // Refused because the turn was cancelled (the person pressed
                            // Ctrl-C at the approval question): the person cancelled it.
                            ToolOutcome::Refused(_) if cancel.is_cancelled() => {
                                ToolOutcome::Cancelled
                            }
                            outcome => outcome,
                        }
                    }
                };
                frontend.tool_finished(&call.id, &shown, &outcome, started.elapsed());
                outcome
            }
        });
        futures::future::join_all(runs).await
    }
}

/// Resolves a moment after `cancel` is cancelled (time for the host to say so itself).
async fn cancelled_then_grace(cancel: &CancellationToken) {
    cancel.cancelled().await;
    tokio::time::sleep(Duration::from_secs(2)).await;
}

fn count_tokens(text: &str) -> usize {
    toolgate_llm::tokens::Encoding::O200kBase.count(text)
}

fn provider_label(dialect: Dialect) -> String {
    match dialect {
        Dialect::OpenaiChat => "the model's API".to_owned(),
        Dialect::OpenaiResponses => "the Responses API".to_owned(),
        Dialect::Anthropic => "the Anthropic API".to_owned(),
    }
}

#[cfg(test)]
mod tests;
