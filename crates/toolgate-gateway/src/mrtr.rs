//! `input_required` rounds (SEP-2322) for clients of protocol 2026-07-28, to which no server
//! may send a request.
//!
//! When an upstream asks something while serving such a client's `tools/call`, `prompts/get`
//! or `resources/read` (a sampling, elicitation or roots request of a handshake-era upstream,
//! or an `input_required` round of a 2026-07-28 one), the gateway answers the client's request
//! with an `input_required` result: the questions, and a `requestState`. The call itself waits,
//! parked in a task of its own. The client sends the same request again with its answers
//! (`inputResponses`) and that `requestState`; the gateway hands the answers to the waiting
//! call and answers the retry with whatever the call does next: its result, or another round
//! (with a new state). A retry that leaves some questions unanswered is asked them again.
//!
//! The state is a random 128-bit token naming the parked call, bound to the request that
//! started it (method and name): a state that was changed, has expired, or belongs to another
//! request is refused with an error. At most [`MOST_PARKED`] calls wait at once, each at most
//! [`PARKED_FOR`]; one that is dropped is cancelled, upstream too.
//!
//! What the call asks at once becomes one round, and a question its client did not declare it
//! can answer is refused to the upstream, or, when it is all the call asks, answered to the
//! client as a missing capability (`gather`). A parked call is *holding*
//! ([`RequestLink::holding`]): on stdio nothing says which call an upstream's question is
//! about, and a question that arrives while this call waits for its client is taken to be
//! another call's (docs/design.md, "Questions through toolgate").

#![allow(deprecated)] // sampling and roots are deprecated in 2026-07-28 (SEP-2577)

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use toolgate_core::mcp;
use toolgate_upstream::RoundRefused;

use crate::answer::Answer as Reply;
use crate::link::{Answer, RequestLink, unanswered};

mod gather;

use gather::{Next, Waiters, gather};

/// How many calls may wait for their clients' answers at once.
pub(crate) const MOST_PARKED: usize = 1_000;

/// How long a call waits for its client's answers.
pub(crate) const PARKED_FOR: Duration = Duration::from_secs(600);

/// What serving a request comes to.
pub(crate) type Served = Result<crate::answer::Answer, mcp::ErrorData>;

/// The answers to a round, or why there are none.
type Answers = Result<mcp::InputResponses, mcp::ErrorData>;

/// What a call does next.
enum Step {
    /// It asks these questions; the answers go to `answer`. `single`: one question of a
    /// handshake-era upstream, which others asked with it may follow.
    Round { asked: mcp::InputRequests, answer: oneshot::Sender<Answers>, single: bool },
    /// It asked a question its client cannot answer (it did not declare `capability`); `told`
    /// gets the refusal, `error`, when the round it was asked in is decided.
    Refused {
        capability: &'static str,
        error: mcp::ErrorData,
        told: oneshot::Sender<mcp::ErrorData>,
    },
    /// It is done.
    Done(Box<Served>),
}

/// The calls waiting for their clients' answers.
#[derive(Debug, Default)]
pub(crate) struct Rounds {
    parked: Mutex<HashMap<String, Parked>>,
}

/// A call waiting for its client's answers.
#[derive(Debug)]
struct Parked {
    /// The request that started the call (`tools/call fx__echo`): only its retries resume it.
    target: String,
    /// The open questions.
    asked: mcp::InputRequests,
    /// Answers already given to some of them.
    given: mcp::InputResponses,
    /// Where the answers go.
    waiters: Waiters,
    steps: mpsc::UnboundedReceiver<Step>,
    /// Cancels the call when it is dropped unanswered.
    cancel: CancellationToken,
    until: Instant,
    /// Set while the call waits for its client (see [`RequestLink::holding`]).
    holding: Arc<AtomicBool>,
}

impl std::fmt::Debug for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Step::Round { asked, .. } => f.debug_struct("Round").field("asked", asked).finish(),
            Step::Refused { capability, .. } => {
                f.debug_struct("Refused").field("capability", capability).finish()
            }
            Step::Done(served) => f.debug_tuple("Done").field(&served.is_ok()).finish(),
        }
    }
}

/// How long a call refused for a missing capability may take to end once cancelled, before
/// its client is answered anyway.
const ENDING: Duration = Duration::from_secs(2);

impl Drop for Parked {
    fn drop(&mut self) {
        // Unanswered: the call ends (its question gets an error) and the upstream is told.
        self.holding.store(false, Ordering::SeqCst);
        self.cancel.cancel();
    }
}

/// A request that may be answered with rounds: which one it is, and what its retry carries.
pub(crate) struct Retry {
    /// The method and name or URI (`tools/call fx__echo`).
    pub(crate) target: String,
    /// The `requestState` the client sent back, if this is a retry.
    pub(crate) state: Option<String>,
    /// Its answers.
    pub(crate) responses: Option<mcp::InputResponses>,
}

impl Rounds {
    /// Serves a request of a 2026-07-28 client that may be answered with rounds. A fresh request
    /// starts the call (`start`, given the link its questions go through); a retry resumes the
    /// call its state names. `cancel` fires when the client gives up on this request.
    pub(crate) async fn serve(
        &self,
        retry: Retry,
        link: Arc<dyn RequestLink>,
        cancel: CancellationToken,
        start: impl FnOnce(Arc<dyn RequestLink>) -> BoxFuture<'static, Served>,
    ) -> Served {
        let Retry { target, state, responses } = retry;
        let Some(state) = state else {
            return self.start(target, link, cancel, start).await;
        };
        let mut parked = self.take(&state, &target)?;
        parked.until = Instant::now() + PARKED_FOR;
        let responses = responses.unwrap_or_default();
        for (key, answer) in responses {
            if parked.asked.contains_key(&key) {
                parked.given.insert(key, answer);
            }
        }
        let missing: mcp::InputRequests = parked
            .asked
            .iter()
            .filter(|(key, _)| !parked.given.contains_key(*key))
            .map(|(key, request)| (key.clone(), request.clone()))
            .collect();
        if !missing.is_empty() {
            // Asked again, with what is still open (the answers given so far are kept).
            return Ok(Reply::Result(self.park(parked, missing)));
        }
        let answers = std::mem::take(&mut parked.given);
        parked.holding.store(false, Ordering::SeqCst);
        std::mem::take(&mut parked.waiters).answer(answers);
        // What the call does next, unless the client gives up on this retry (which drops the
        // parked call and so cancels it).
        let step = tokio::select! {
            step = parked.steps.recv() => step,
            () = cancel.cancelled() => return Err(unanswered("the client went away")),
        };
        let Some(step) = step else {
            return Err(unanswered("the call ended without an answer"));
        };
        match gather(step, &mut parked.steps).await {
            Next::Done(served) => *served,
            Next::Lacks(error) => Err(error),
            Next::Ask(mut gathered) => {
                let asked = std::mem::take(&mut gathered.asked);
                parked.waiters = std::mem::take(&mut gathered.waiters);
                let result = self.park(parked, asked);
                gathered.tell_refused();
                Ok(Reply::Result(result))
            }
        }
    }

    /// A fresh request: the call runs here until it is done or asks something; then it goes on
    /// in a task of its own and the client gets the questions.
    async fn start(
        &self,
        target: String,
        link: Arc<dyn RequestLink>,
        cancel: CancellationToken,
        start: impl FnOnce(Arc<dyn RequestLink>) -> BoxFuture<'static, Served>,
    ) -> Served {
        let (steps, mut next) = mpsc::unbounded_channel();
        let holding = Arc::new(AtomicBool::new(false));
        let asking =
            Arc::new(RoundLink { inner: link, steps: steps.clone(), holding: holding.clone() });
        let mut call = start(asking);
        let first = tokio::select! {
            biased;
            served = &mut call => return served,
            step = next.recv() => match step {
                Some(step) => step,
                None => return Err(unanswered("the call ended without an answer")),
            },
        };
        // The call goes on in a task of its own, in the request's trace.
        let trace = opentelemetry::Context::current();
        tokio::spawn(opentelemetry::context::FutureExt::with_context(
            async move {
                let served = call.await;
                let _ = steps.send(Step::Done(Box::new(served)));
            },
            trace,
        ));
        let mut gathered = match gather(first, &mut next).await {
            Next::Ask(gathered) => gathered,
            Next::Done(served) => return *served,
            Next::Lacks(error) => {
                // Nothing to ask: the call ends, upstream too, before the client hears so. Until
                // it has ended here, the upstream's transport counts it in flight, and a
                // question of the client's next call could not be told from one of this.
                cancel.cancel();
                let ended = async {
                    while let Some(step) = next.recv().await {
                        if matches!(step, Step::Done(_)) {
                            break;
                        }
                    }
                };
                let _ = tokio::time::timeout(ENDING, ended).await;
                return Err(error);
            }
        };
        let parked = Parked {
            target,
            asked: mcp::InputRequests::new(),
            given: mcp::InputResponses::new(),
            waiters: std::mem::take(&mut gathered.waiters),
            steps: next,
            cancel,
            until: Instant::now() + PARKED_FOR,
            holding,
        };
        let result = self.park(parked, std::mem::take(&mut gathered.asked));
        gathered.tell_refused();
        Ok(Reply::Result(result))
    }

    /// Parks `parked` asking `asked`; the `input_required` result that says so.
    fn park(&self, mut parked: Parked, asked: mcp::InputRequests) -> mcp::ServerResult {
        parked.asked = asked.clone();
        parked.holding.store(true, Ordering::SeqCst);
        let mut table = self.parked.lock().expect("rounds lock must not be poisoned");
        let now = Instant::now();
        table.retain(|_, parked| parked.until > now);
        if table.len() >= MOST_PARKED {
            drop(table);
            drop(parked);
            return mcp::ServerResult::CallToolResult(mcp::CallToolResult::error(vec![
                mcp::ContentBlock::text(format!(
                    "toolgate already has {MOST_PARKED} calls waiting for their clients' answers; \
                     try again later"
                )),
            ]));
        }
        let state = uuid::Uuid::new_v4().simple().to_string();
        table.insert(state.clone(), parked);
        mcp::ServerResult::InputRequiredResult(mcp::InputRequiredResult::new(
            Some(asked),
            Some(state),
        ))
    }

    /// The parked call `state` names, if it is one of `target`'s.
    fn take(&self, state: &str, target: &str) -> Result<Parked, mcp::ErrorData> {
        let mut table = self.parked.lock().expect("rounds lock must not be poisoned");
        let refused = |why: &str| {
            mcp::ErrorData::invalid_params(format!("requestState rejected: {why}"), None)
        };
        match table.get(state) {
            None => Err(refused("it is not one toolgate gave, or it expired")),
            Some(parked) if parked.target != target => {
                Err(refused("it belongs to another request"))
            }
            Some(parked) if parked.until <= Instant::now() => {
                table.remove(state);
                Err(refused("it expired"))
            }
            Some(_) => Ok(table.remove(state).expect("just found")),
        }
    }
}

/// The link of a call whose client answers in rounds: progress goes where the first request's
/// progress went; questions become rounds.
struct RoundLink {
    inner: Arc<dyn RequestLink>,
    steps: mpsc::UnboundedSender<Step>,
    /// Whether the call is parked, its questions with its client.
    holding: Arc<AtomicBool>,
}

impl RoundLink {
    /// Puts `asked` to the client in a round (`single`: one question, which others may join);
    /// its answers.
    fn round(&self, asked: mcp::InputRequests, single: bool) -> BoxFuture<'static, Answers> {
        let (answer, answered) = oneshot::channel();
        let sent = self.steps.send(Step::Round { asked, answer, single });
        Box::pin(async move {
            if sent.is_err() {
                return Err(unanswered("the request ended"));
            }
            answered.await.unwrap_or_else(|_| Err(unanswered("nobody answered in time")))
        })
    }
}

impl RequestLink for RoundLink {
    fn capabilities(&self) -> mcp::ClientCapabilities {
        self.inner.capabilities()
    }

    fn notify(&self, notification: mcp::ServerNotification) -> BoxFuture<'static, ()> {
        self.inner.notify(notification)
    }

    /// One question, in a round with what the call asks with it.
    fn ask(&self, request: mcp::ServerRequest) -> Answer {
        let Some((key, question)) = as_question(request) else {
            return Box::pin(async {
                Err(mcp::ErrorData::invalid_request("toolgate cannot put that question", None))
            });
        };
        let round = self.round(std::iter::once((key.to_owned(), question)).collect(), true);
        Box::pin(async move {
            let mut answers = round.await?;
            let answer = answers.remove(key).ok_or_else(|| unanswered("no answer to it"))?;
            as_result(key, answer)
        })
    }

    fn answers_rounds(&self) -> bool {
        true
    }

    /// Refused when the round it was asked in is decided (see `gather`).
    fn refuse(
        &self,
        capability: &'static str,
        error: mcp::ErrorData,
    ) -> BoxFuture<'static, mcp::ErrorData> {
        let (told, telling) = oneshot::channel();
        let sent = self.steps.send(Step::Refused { capability, error: error.clone(), told });
        Box::pin(async move {
            if sent.is_err() {
                return error;
            }
            telling.await.unwrap_or(error)
        })
    }

    fn holding(&self) -> bool {
        self.holding.load(Ordering::SeqCst)
    }

    fn input_round(
        &self,
        requests: mcp::InputRequests,
    ) -> BoxFuture<'static, Result<mcp::InputResponses, RoundRefused>> {
        let method = requests.values().next().map_or("input_required", question_method);
        let round = self.round(requests, false);
        Box::pin(async move { round.await.map_err(|error| RoundRefused { method, error }) })
    }
}

/// A server-to-client request as a question of a round, under a key saying what it asks.
fn as_question(request: mcp::ServerRequest) -> Option<(&'static str, mcp::InputRequest)> {
    match request {
        mcp::ServerRequest::ElicitRequest(request) => {
            Some(("elicitation", mcp::InputRequest::Elicitation(request)))
        }
        mcp::ServerRequest::CreateMessageRequest(request) => {
            Some(("sampling", mcp::InputRequest::CreateMessage(request)))
        }
        mcp::ServerRequest::ListRootsRequest(request) => {
            Some(("roots", mcp::InputRequest::ListRoots(request)))
        }
        _ => None,
    }
}

/// The client's answer to the question under `key`, as the result of that request.
fn as_result(key: &str, answer: serde_json::Value) -> Result<mcp::ClientResult, mcp::ErrorData> {
    let invalid = |error: serde_json::Error| {
        mcp::ErrorData::invalid_params(format!("the answer to {key} is not one: {error}"), None)
    };
    Ok(match key {
        "elicitation" => {
            mcp::ClientResult::ElicitResult(serde_json::from_value(answer).map_err(invalid)?)
        }
        "sampling" => mcp::ClientResult::CreateMessageResult(Box::new(
            serde_json::from_value(answer).map_err(invalid)?,
        )),
        _ => mcp::ClientResult::ListRootsResult(serde_json::from_value(answer).map_err(invalid)?),
    })
}

fn question_method(question: &mcp::InputRequest) -> &'static str {
    match question {
        mcp::InputRequest::Elicitation(_) => "elicitation/create",
        mcp::InputRequest::CreateMessage(_) => "sampling/createMessage",
        _ => "roots/list",
    }
}

#[cfg(test)]
mod tests;
