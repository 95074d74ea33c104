//! The interceptor contract and the [`Pipeline`] that runs it (see ARCHITECTURE.md,
//! `toolgate-intercept`).
//!
//! Shaped on the MCP interceptors proposal (SEP-2624), so that remote interceptor servers can
//! be plugged in later: an interceptor declares the [`Hook`]s it handles (events × phase), its
//! [`InterceptorType`] (validation or mutation), its [`Mode`] (active or audit), whether it
//! fails open, its priority and timeout, and which servers and tools it applies to. What it
//! decides is a value, an [`Outcome`]: continue (possibly with a rewritten [`Message`]), refuse
//! with a reason, or answer in the upstream's place.
//!
//! This crate knows nothing about transports or about any particular interceptor.

pub mod approval_handoff;
mod context;
mod descriptor;
mod digest;
mod message;
mod outcome;
mod pipeline;

pub use context::{
    ApprovalRequired, Approved, CallContext, CallerKey, Elicitor, Principal, Retarget, Target,
    TrustedTool, UpstreamTimeout,
};
pub use descriptor::{
    DEFAULT_TIMEOUT, Descriptor, DescriptorError, Hook, InterceptorType, Mode, Phase,
};
pub use digest::call_digest;
pub use message::{InterceptionEvent, Listed, Message};
pub use outcome::{Decision, DecisionKind, InterceptError, Outcome, Refusal};
pub use pipeline::{DuplicateName, Interceptor, OWN_SERVER, OwnTool, Pipeline, Stopped};
