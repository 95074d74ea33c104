//! Making a stored conversation one a provider accepts again after a crash.
//!
//! Every tool call must be answered by exactly one result before the next assistant turn (see
//! `toolgate_llm::chat`). A process that stopped mid-turn (crash, kill, power cut) may have
//! stored an assistant turn whose calls were still running: [`repair`] answers each such call,
//! right after the results that did arrive, with an error result saying
//! [`NOT_ANSWERED`](super::NOT_ANSWERED). That also holds for a gap in the middle of a
//! conversation that was resumed and went on (the stored messages are never rewritten: the gap
//! is answered again at every load). A result that answers no call of the turn before it (it
//! cannot come from this store's writer, but a file is a file) is left out.

use std::collections::HashSet;

use toolgate_llm::chat::{Message, Part, ToolCall, ToolResult};

use super::NOT_ANSWERED;

/// What [`repair`] changed.
#[derive(Debug, Default)]
pub(crate) struct Repaired {
    /// The ids of the calls answered with [`NOT_ANSWERED`].
    pub(crate) answered: Vec<String>,
    /// How many results were left out because they answered no call.
    pub(crate) dropped: usize,
}

/// The conversation with every call answered and no stray result.
pub(crate) fn repair(messages: Vec<Message>) -> (Vec<Message>, Repaired) {
    let mut out = Vec::with_capacity(messages.len());
    let mut repaired = Repaired::default();
    // The calls of the last assistant turn still waiting for their result.
    let mut pending: Vec<ToolCall> = Vec::new();
    for message in messages {
        match message {
            Message::ToolResult(result) => {
                if let Some(at) = pending.iter().position(|call| call.id == result.call_id) {
                    pending.remove(at);
                    out.push(Message::ToolResult(result));
                } else {
                    repaired.dropped += 1;
                }
            }
            other => {
                answer(&mut pending, &mut out, &mut repaired);
                if let Message::Assistant(turn) = &other {
                    // A turn naming one id twice would need two results for it; the first wins.
                    let mut seen = HashSet::new();
                    pending = turn
                        .tool_calls
                        .iter()
                        .filter(|call| seen.insert(call.id.clone()))
                        .cloned()
                        .collect();
                }
                out.push(other);
            }
        }
    }
    answer(&mut pending, &mut out, &mut repaired);
    (out, repaired)
}

fn answer(pending: &mut Vec<ToolCall>, out: &mut Vec<Message>, repaired: &mut Repaired) {
    for call in pending.drain(..) {
        repaired.answered.push(call.id.clone());
        out.push(Message::ToolResult(ToolResult {
            call_id: call.id,
            name: call.name,
            content: vec![Part::text(NOT_ANSWERED)],
            is_error: true,
        }));
    }
}
