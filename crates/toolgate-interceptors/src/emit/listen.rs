//! How `emit` hears of calls that never reach the response phase: refused calls
//! (`tools/call/denied`) and calls that failed without a result (`tools/call/timeout`, and
//! `tools/call/finished` with an `error`), from the gateway's own events on the bus.

use std::sync::Arc;

use serde_json::Value;
use toolgate_audit::{Event, EventPattern, kind};
use toolgate_intercept::Descriptor;

use super::{CallOutcome, Emit, Shared};

/// How many of the gateway's events may wait for the listener; more are dropped (and
/// counted by the bus) until it catches up.
const QUEUE: usize = 1024;

/// Starts listening, in a task on the current runtime, when `emit`'s outcomes need it.
/// Without a runtime it cannot, and says so.
pub(super) fn start(emit: &Emit) {
    let Some(pattern) = pattern(&emit.shared.outcomes) else { return };
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        tracing::warn!(
            interceptor = %emit.shared.name,
            "emit cannot hear of refused or failed calls: no async runtime to listen on"
        );
        return;
    };
    let pattern: EventPattern = pattern.parse().expect("the patterns are literal kinds");
    let mut events = emit.shared.events.subscribe(pattern, QUEUE);
    // Weak: a pipeline that is dropped (or that another entry made fail to build) takes its
    // bus clone with it, and then the subscription ends and the task with it.
    let shared = Arc::downgrade(&emit.shared);
    let descriptor = emit.descriptor.clone();
    runtime.spawn(async move {
        // Ends when the bus is closed (toolgate shutting down) or gone.
        while let Some(event) = events.recv().await {
            let Some(shared) = shared.upgrade() else { break };
            if let Some(emitted) = translate(&shared, &descriptor, &event) {
                shared.send(emitted);
            }
        }
    });
}

/// The gateway's events that `outcomes` needs, as a pattern.
pub(super) fn pattern(outcomes: &[CallOutcome]) -> Option<String> {
    let mut kinds = Vec::new();
    if outcomes.contains(&CallOutcome::Refused) {
        kinds.push(kind::TOOLS_CALL_DENIED);
    }
    if outcomes.contains(&CallOutcome::Error) {
        kinds.extend([kind::TOOLS_CALL_FINISHED, kind::TOOLS_CALL_TIMEOUT]);
    }
    (!kinds.is_empty()).then(|| kinds.join(","))
}

/// The `emit/<channel>` event for one of the gateway's events, when it is about a call this
/// entry publishes.
pub(super) fn translate(shared: &Shared, descriptor: &Descriptor, event: &Event) -> Option<Event> {
    let outcome = match event.kind.as_str() {
        kind::TOOLS_CALL_DENIED => CallOutcome::Refused,
        kind::TOOLS_CALL_TIMEOUT => CallOutcome::Error,
        // A finished call with a result went through the response phase: emitted there.
        kind::TOOLS_CALL_FINISHED if event.get("error").is_some() => CallOutcome::Error,
        _ => return None,
    };
    if !shared.wants(outcome) {
        return None;
    }
    let server = event.get("server").and_then(Value::as_str)?;
    let tool = event.get("tool").and_then(Value::as_str)?;
    if !descriptor.covers_target(server, tool) {
        return None;
    }
    let mut emitted = shared.base(outcome);
    let copied: &[(&str, &str)] = &[
        ("server", "server"),
        ("tool", "tool"),
        ("exposed", "exposed"),
        ("principal", "principal"),
        ("session", "session"),
        ("request_id", "request_id"),
        ("call", "call"),
        ("duration_ms", "duration_ms"),
        ("interceptor", "refused_by"),
        ("reason", "reason"),
        ("error", "error"),
    ];
    for (from, to) in copied {
        if let Some(value) = event.get(from) {
            emitted = emitted.with(*to, value.clone());
        }
    }
    Some(emitted)
}
