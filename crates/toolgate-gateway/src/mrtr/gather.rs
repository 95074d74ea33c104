//! What a call asks at once, gathered into one `input_required` round.
//!
//! An upstream of the handshake era asks one question per request (`sampling/createMessage`,
//! `elicitation/create`, `roots/list`), and one that has several to ask sends them together
//! (the official SDKs' shims for handlers written in the 2026-07-28 style send every question
//! of a round at once, then wait for all the answers). Each reaches the call's link on its
//! own; a 2026-07-28 client is asked them as one round. So when a question arrives, the
//! questions that follow it within [`QUIET`] (at most [`MOST`] in all) join it. A round an
//! upstream of 2026-07-28 asks is whole already: what is queued joins it, nothing is awaited.
//!
//! A question the client cannot answer (it did not declare the capability) is refused to the
//! upstream; if it is all the call asks, the client is told what its request needs: a
//! `MissingRequiredClientCapabilityError` (-32021) naming the capabilities, as a server of
//! 2026-07-28 answers a request that needs a capability its client did not declare.

use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use toolgate_core::mcp;

use super::{Answers, Served, Step};
use crate::link::unanswered;

/// How long a round waits, after its last question, for another one asked with it.
pub(super) const QUIET: Duration = Duration::from_millis(100);

/// How long a round waits for questions asked with its first, at most.
pub(super) const MOST: Duration = Duration::from_secs(1);

/// What a call asked at once.
#[derive(Debug, Default)]
pub(super) struct Gathered {
    /// Its questions, under keys unique in the round.
    pub(super) asked: mcp::InputRequests,
    /// Where their answers go.
    pub(super) waiters: Waiters,
    /// The questions its client cannot answer: the capability each needs, and the refusal
    /// the upstream gets.
    refused: Vec<(&'static str, mcp::ErrorData, oneshot::Sender<mcp::ErrorData>)>,
    /// Whether a single question of a handshake-era upstream (or a refusal of one) is among
    /// them: then questions asked with it may still be on their way, and are waited for.
    single: bool,
}

/// What a call does next, once what it asked at once is gathered.
#[derive(Debug)]
pub(super) enum Next {
    /// It asks these questions (and is refused those its client cannot answer).
    Ask(Gathered),
    /// Everything it asked, its client cannot answer: the error its request is answered with.
    Lacks(mcp::ErrorData),
    /// It ended.
    Done(Box<Served>),
}

/// The questions that follow `first` on `steps` within [`QUIET`] of each other (at most
/// [`MOST`] after `first`), when `first` is a single question; those already queued, when it
/// is a whole round. A call that ends meanwhile ends the gathering: its questions are moot.
pub(super) async fn gather(first: Step, steps: &mut mpsc::UnboundedReceiver<Step>) -> Next {
    let mut gathered = Gathered::default();
    if let Some(done) = gathered.add(first) {
        return Next::Done(done);
    }
    let until = Instant::now() + MOST;
    loop {
        let step = if gathered.single {
            let quiet = (Instant::now() + QUIET).min(until);
            tokio::select! {
                biased;
                step = steps.recv() => step,
                () = tokio::time::sleep_until(quiet) => None,
            }
        } else {
            steps.try_recv().ok()
        };
        let Some(step) = step else { break };
        if let Some(done) = gathered.add(step) {
            gathered.end(unanswered("the call ended"));
            return Next::Done(done);
        }
    }
    if gathered.asked.is_empty() && !gathered.refused.is_empty() {
        let error = gathered.missing_capabilities();
        gathered.tell_refused();
        return Next::Lacks(error);
    }
    Next::Ask(gathered)
}

impl Gathered {
    /// Adds what the call did; `Some` when it ended.
    fn add(&mut self, step: Step) -> Option<Box<Served>> {
        match step {
            Step::Round { asked, answer, single } => {
                self.single |= single;
                let mut keys = Vec::with_capacity(asked.len());
                for (own, question) in asked {
                    let key = self.free_key(&own);
                    self.asked.insert(key.clone(), question);
                    keys.push((key, own));
                }
                self.waiters.0.push(Waiter { keys, answer });
                None
            }
            Step::Refused { capability, error, told } => {
                self.single = true;
                self.refused.push((capability, error, told));
                None
            }
            Step::Done(served) => Some(served),
        }
    }

    /// `own`, or `own-2`, `own-3`, ... when the round already has a question under it.
    fn free_key(&self, own: &str) -> String {
        if !self.asked.contains_key(own) {
            return own.to_owned();
        }
        (2..)
            .map(|n| format!("{own}-{n}"))
            .find(|key| !self.asked.contains_key(key))
            .expect("some number is free")
    }

    /// Tells the questions the client cannot answer that they are refused.
    pub(super) fn tell_refused(&mut self) {
        for (_, error, told) in self.refused.drain(..) {
            let _ = told.send(error);
        }
    }

    /// Ends every question of the round with `error`.
    fn end(mut self, error: mcp::ErrorData) {
        self.tell_refused();
        self.waiters.end(error);
    }

    /// The error of a request whose call asked only what its client cannot answer.
    fn missing_capabilities(&self) -> mcp::ErrorData {
        let mut required = serde_json::Map::new();
        let mut names = Vec::new();
        for (capability, _, _) in &self.refused {
            if !names.contains(capability) {
                names.push(*capability);
            }
            let mut level = &mut required;
            for part in capability.split('.') {
                let next = level
                    .entry(part)
                    .or_insert_with(|| serde_json::Value::Object(Default::default()));
                let serde_json::Value::Object(next) = next else {
                    unreachable!("only objects are put in")
                };
                level = next;
            }
        }
        mcp::ErrorData::new(
            mcp::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
            format!(
                "the server behind toolgate needs the client's {} capability to serve this \
                 request, and the request's clientCapabilities do not declare it",
                names.join(" and ")
            ),
            Some(serde_json::json!({ "requiredCapabilities": required })),
        )
    }
}

/// Where the answers to a round go: one waiter per question, or per whole round, that the
/// call asked.
#[derive(Debug, Default)]
pub(super) struct Waiters(Vec<Waiter>);

/// One part of a round: its questions' keys in the round and its own, and where the answers
/// go.
#[derive(Debug)]
struct Waiter {
    keys: Vec<(String, String)>,
    answer: oneshot::Sender<Answers>,
}

impl Waiters {
    /// Hands each part its answers from `answers` (keyed as in the round), under its own keys.
    pub(super) fn answer(self, mut answers: mcp::InputResponses) {
        for waiter in self.0 {
            let answers = waiter
                .keys
                .into_iter()
                .filter_map(|(key, own)| answers.remove(&key).map(|answer| (own, answer)))
                .collect();
            let _ = waiter.answer.send(Ok(answers));
        }
    }

    /// Ends every part with `error`.
    pub(super) fn end(self, error: mcp::ErrorData) {
        for waiter in self.0 {
            let _ = waiter.answer.send(Err(error.clone()));
        }
    }
}
