//! What an interceptor decides, and the record the pipeline keeps of it.

use std::time::Duration;

use crate::descriptor::Phase;
use crate::message::{InterceptionEvent, Message};

/// An interceptor's decision about one message.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Let it through unchanged.
    Continue,
    /// Let it through as this (mutators only; from a validator it is a failure).
    Rewrite(Message),
    /// Stop it.
    Refuse(Refusal),
    /// Answer in the upstream's place (request phase, mutators only).
    Answer(Message),
}

/// Why a message was stopped, and by whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The interceptor that decided.
    pub interceptor: String,
    /// Why, in words for the model and the person reading the audit log.
    pub reason: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "refused by {}: {}", self.interceptor, self.reason)
    }
}

/// An interceptor that could not decide.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct InterceptError(pub String);

/// What happened at one interceptor, for the audit trail.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// Who.
    pub interceptor: String,
    /// Where.
    pub event: InterceptionEvent,
    /// When.
    pub phase: Phase,
    /// What.
    pub kind: DecisionKind,
    /// How long it took.
    pub duration: Duration,
}

/// The kinds of [`Decision`].
#[derive(Debug, Clone, PartialEq)]
pub enum DecisionKind {
    /// Let through unchanged.
    Continued,
    /// Rewrote the message.
    Rewrote,
    /// Refused; the reason.
    Refused(String),
    /// Answered in the upstream's place.
    Answered,
    /// Failed or timed out; the message went on (fail-open) or was refused (fail-closed).
    Failed { error: String, let_through: bool },
    /// Audit mode: what it would have done (never one of the audit kinds).
    WouldHave(Box<DecisionKind>),
}

impl DecisionKind {
    /// A short name for logs and events.
    pub fn name(&self) -> &'static str {
        match self {
            DecisionKind::Continued => "continued",
            DecisionKind::Rewrote => "rewrote",
            DecisionKind::Refused(_) => "refused",
            DecisionKind::Answered => "answered",
            DecisionKind::Failed { .. } => "failed",
            DecisionKind::WouldHave(_) => "audited",
        }
    }
}
