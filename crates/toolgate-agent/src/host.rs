//! What the agent works with besides the model: the tools it may call ([`ToolHost`]), the
//! person it shows its work to ([`Frontend`]), and the questions it may ask them
//! ([`Interaction`]).
//!
//! The loop knows only these traits; [`crate::gateway_host`] is the host over the gateway
//! (every call through the pipeline), `toolgate-terminal`'s `Console` the frontend.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;
use toolgate_core::mcp;
use toolgate_llm::chat::Part;

/// One tool call the agent makes.
pub struct HostCall {
    /// The model's id for the call.
    pub call_id: String,
    /// The tool's exposed name.
    pub name: String,
    /// Its arguments.
    pub arguments: Map<String, Value>,
    /// Cancelled when the person cancels the turn; the upstream is then sent
    /// `notifications/cancelled`.
    pub cancel: CancellationToken,
    /// The call's own timeout (instead of its server's).
    pub timeout: Option<Duration>,
    /// Where the call's progress goes.
    pub frontend: Arc<dyn Frontend>,
}

/// How a tool call ended.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutcome {
    /// The tool answered (possibly with an error result).
    Done(mcp::CallToolResult),
    /// The pipeline or the person refused it.
    Refused(String),
    /// No tool has that name.
    Unknown(String),
    /// The model's arguments are not a JSON object.
    BadArguments(String),
    /// The upstream failed or the call could not be made.
    Failed(String),
    /// It took longer than its timeout.
    TimedOut(String),
    /// The person cancelled it.
    Cancelled,
}

impl ToolOutcome {
    /// Whether the model should read it as an error.
    pub fn is_error(&self) -> bool {
        match self {
            ToolOutcome::Done(result) => result.is_error == Some(true),
            _ => true,
        }
    }

    /// What the model reads of it: a result's content as [`toolgate_llm::content::parts`]
    /// reads it, any other outcome as its [`ToolOutcome::explanation`].
    pub fn parts(&self) -> Vec<Part> {
        match self {
            ToolOutcome::Done(result) => toolgate_llm::content::parts(result),
            other => vec![Part::text(other.explanation().unwrap_or_default())],
        }
    }

    /// What the model reads for outcomes that are not results, in words.
    pub fn explanation(&self) -> Option<String> {
        match self {
            ToolOutcome::Done(_) => None,
            ToolOutcome::Refused(reason) => Some(format!("The call was refused: {reason}")),
            ToolOutcome::Unknown(name) => {
                Some(format!("There is no tool named {name}. Use one of the tools you were given."))
            }
            ToolOutcome::BadArguments(problem) => {
                Some(format!("The call was not made: {problem}. Fix the arguments and try again."))
            }
            ToolOutcome::Failed(error) => Some(format!("The call failed: {error}")),
            ToolOutcome::TimedOut(error) => Some(format!("The call timed out: {error}")),
            ToolOutcome::Cancelled => Some("The person cancelled this call.".to_owned()),
        }
    }
}

/// The tools the agent can call.
pub trait ToolHost: Send + Sync {
    /// The tools offered now (servers that come up later add theirs).
    fn tools(&self) -> BoxFuture<'_, Vec<mcp::Tool>>;

    /// Makes one call.
    fn call(&self, call: HostCall) -> BoxFuture<'_, ToolOutcome>;
}

/// Where the agent shows what happens. Every method has a default that shows nothing.
pub trait Frontend: Send + Sync {
    /// Visible answer text, as it streams.
    fn text(&self, delta: &str) {
        let _ = delta;
    }

    /// Reasoning, as it streams.
    fn reasoning(&self, delta: &str) {
        let _ = delta;
    }

    /// The model's stream ended (its text is complete).
    fn answer_finished(&self) {}

    /// The provider failed and is tried again.
    fn retrying(&self, attempt: u32, wait: Duration, reason: &str) {
        let _ = (attempt, wait, reason);
    }

    /// A tool call starts.
    fn tool_started(&self, call_id: &str, name: &str, arguments: &Map<String, Value>) {
        let _ = (call_id, name, arguments);
    }

    /// A running tool reported progress.
    fn tool_progress(
        &self,
        call_id: &str,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) {
        let _ = (call_id, progress, total, message);
    }

    /// A tool call ended.
    fn tool_finished(&self, call_id: &str, name: &str, outcome: &ToolOutcome, elapsed: Duration) {
        let _ = (call_id, name, outcome, elapsed);
    }

    /// Something the person should know (a server joined, a limit was reached).
    fn notice(&self, message: &str) {
        let _ = message;
    }
}

/// A frontend that shows nothing.
pub struct Silent;

impl Frontend for Silent {}

/// A call waiting for the person's approval.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalQuestion {
    /// The server.
    pub server: String,
    /// The exposed tool name.
    pub tool: String,
    /// The arguments.
    pub arguments: Value,
    /// Why the person is asked.
    pub reason: String,
    /// The tool's annotations as its server lists them (read-only, destructive, ...).
    pub annotations: Option<mcp::ToolAnnotations>,
}

/// The person's answer to an [`ApprovalQuestion`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalChoice {
    /// This call.
    Once,
    /// Every call of this tool, for the rest of this session.
    AlwaysTool,
    /// This tool with exactly these arguments, for the rest of this session.
    AlwaysExactCall,
    /// No, optionally saying why (the model reads it).
    Deny(Option<String>),
}

/// What the agent may ask the person (approvals, upstreams' forms, sampling consent).
pub trait Interaction: Send + Sync {
    /// Whether anyone can be asked (a terminal is attached).
    fn can_ask(&self) -> bool;

    /// Asks whether a call may go ahead.
    fn approve(&self, question: ApprovalQuestion) -> BoxFuture<'static, ApprovalChoice>;

    /// Shows an upstream's `elicitation/create` form.
    fn elicit(
        &self,
        server: String,
        params: mcp::ElicitRequestParams,
    ) -> BoxFuture<'static, mcp::ElicitResult>;

    /// Asks whether an upstream may have the agent's model answer `summary`
    /// (`sampling/createMessage`).
    fn allow_sampling(&self, server: String, summary: String) -> BoxFuture<'static, bool>;
}

/// Nobody to ask: approvals are denied, forms declined, sampling refused.
pub struct NobodyToAsk;

impl Interaction for NobodyToAsk {
    fn can_ask(&self) -> bool {
        false
    }

    fn approve(&self, _question: ApprovalQuestion) -> BoxFuture<'static, ApprovalChoice> {
        Box::pin(async {
            ApprovalChoice::Deny(Some("nobody could be asked (no terminal)".to_owned()))
        })
    }

    fn elicit(
        &self,
        _server: String,
        _params: mcp::ElicitRequestParams,
    ) -> BoxFuture<'static, mcp::ElicitResult> {
        Box::pin(async { mcp::ElicitResult::new(mcp::ElicitationAction::Decline) })
    }

    fn allow_sampling(&self, _server: String, _summary: String) -> BoxFuture<'static, bool> {
        Box::pin(async { false })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn result(value: serde_json::Value) -> mcp::CallToolResult {
        serde_json::from_value(value).expect("a CallToolResult")
    }

    #[test]
    fn outcomes_that_are_not_results_are_explained() {
        let parts = ToolOutcome::Unknown("fs__nope".into()).parts();
        assert_eq!(
            parts,
            vec![Part::text(
                "There is no tool named fs__nope. Use one of the tools you were given."
            )]
        );
        assert!(ToolOutcome::Cancelled.is_error());
        assert!(!ToolOutcome::Done(result(json!({"content": []}))).is_error());
    }
}
