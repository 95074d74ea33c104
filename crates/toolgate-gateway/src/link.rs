//! The downstream end of a connection, as the gateway sees it: where a client's notifications
//! go, how one request's progress and questions reach the client that made it, and what that
//! client declared it can answer.
//!
//! Each front supplies its own: the stdio front its one connection, the HTTP front its
//! sessions and requests. The gateway, the sessions and the callers work only
//! with these traits, so they do not care which front a client came through.

#![allow(deprecated)] // sampling and roots are deprecated in 2026-07-28 (SEP-2577)

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use tokio::sync::oneshot;
use toolgate_core::mcp;

/// A client's answer to a question, or why there is none.
pub type Answer = BoxFuture<'static, Result<mcp::ClientResult, mcp::ErrorData>>;

/// Where one downstream client's notifications go (list changes, resource updates, log
/// messages): a session's stream.
pub trait Notify: Send + Sync + fmt::Debug + 'static {
    /// Sends `notification`; it never waits for the client to read it.
    fn notify(&self, notification: mcp::ServerNotification) -> BoxFuture<'static, ()>;
    /// Whether the client is gone (nothing sent reaches it any more).
    fn is_closed(&self) -> bool;
}

/// One downstream request's way back to the client that made it: its progress, and the
/// questions an upstream asks while serving it.
pub trait RequestLink: Send + Sync + 'static {
    /// What the client declared it can answer (at `initialize`, or in this request's `_meta`).
    fn capabilities(&self) -> mcp::ClientCapabilities;
    /// Sends a notification about this request (progress).
    fn notify(&self, notification: mcp::ServerNotification) -> BoxFuture<'static, ()>;
    /// Asks the client `request` on behalf of this request; its answer.
    fn ask(&self, request: mcp::ServerRequest) -> Answer;

    /// Refuses a question the client cannot answer (it did not declare `capability`, such as
    /// `sampling` or `sampling.tools`): the error the upstream gets, once it should get it.
    /// At once, unless the request answers in rounds (`crate::mrtr`), where what its client
    /// is told depends on what else the call asks at the same time.
    fn refuse(
        &self,
        capability: &'static str,
        error: mcp::ErrorData,
    ) -> BoxFuture<'static, mcp::ErrorData> {
        let _ = capability;
        Box::pin(async move { error })
    }

    /// Whether the request's questions are waiting with its client as a whole, for a retry
    /// that may never come (see `toolgate_upstream::Caller::holding`).
    fn holding(&self) -> bool {
        false
    }

    /// Whether the client answers an `input_required` round as a whole ([`Self::input_round`]).
    fn answers_rounds(&self) -> bool {
        false
    }

    /// Puts every question of a round to the client at once (only when
    /// [`Self::answers_rounds`]).
    fn input_round(
        &self,
        requests: mcp::InputRequests,
    ) -> BoxFuture<'static, Result<mcp::InputResponses, toolgate_upstream::RoundRefused>> {
        let _ = requests;
        Box::pin(async {
            Err(toolgate_upstream::RoundRefused {
                method: "input_required",
                error: toolgate_upstream::unsupported("input_required rounds"),
            })
        })
    }
}

/// A `subscriptions/listen` stream of a 2026-07-28 client: it takes the notifications its
/// filter accepted.
pub trait Listener: Send + Sync + fmt::Debug + 'static {
    /// Sends `notification` if the stream's filter accepts it (and drops it otherwise);
    /// `Err(Closed)` once the stream has ended.
    fn offer(
        &self,
        notification: mcp::ServerNotification,
    ) -> BoxFuture<'static, Result<(), Closed>>;
}

/// A stream or session that has ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed;

/// What a client that cannot be reached answers.
pub fn unanswered(why: impl fmt::Display) -> mcp::ErrorData {
    mcp::ErrorData::internal_error(format!("the client did not answer: {why}"), None)
}

/// The refusal of a question asked on a 2026-07-28 request: that era has no requests from
/// server to client, so its clients are asked in `input_required` rounds (which the dispatcher
/// puts in place of the request's link, so this is what is left when that is not possible).
pub fn not_asked_in_2026(request: &mcp::ServerRequest) -> mcp::ErrorData {
    let method = match request {
        mcp::ServerRequest::CreateMessageRequest(_) => "sampling/createMessage",
        mcp::ServerRequest::ElicitRequest(_) => "elicitation/create",
        mcp::ServerRequest::ListRootsRequest(_) => "roots/list",
        _ => "a request",
    };
    mcp::ErrorData::invalid_request(
        format!(
            "{method}: the client's request is of protocol 2026-07-28, whose clients are asked \
             through input_required results, not requests"
        ),
        None,
    )
}

/// A client's answer to a question, or the error it sent instead.
type Answered = Result<mcp::ClientResult, mcp::ErrorData>;

/// The questions a front has put to one client (a session, a stdio connection) and not had
/// answered yet, by the id it gave them: the client's answer, or the error it sent, is routed
/// back by that id. A question whose asker stops waiting is forgotten; once closed, nothing
/// more is asked and what waits gets an error.
#[derive(Debug, Default)]
pub struct Questions {
    state: Mutex<QuestionsState>,
}

#[derive(Debug, Default)]
struct QuestionsState {
    asked: HashMap<mcp::RequestId, oneshot::Sender<Answered>>,
    /// The id of the first question.
    first: i64,
    /// The id of the next question.
    next: i64,
    /// Why nothing more can be asked, once closed.
    closed: Option<&'static str>,
}

impl Questions {
    /// Questions whose ids count from `first` (instead of 0), so that an answer to a question
    /// another copy of the session asked (on another replica) is not taken for one of these.
    pub fn numbered_from(first: i64) -> Questions {
        let state = QuestionsState { first, next: first, ..QuestionsState::default() };
        Questions { state: Mutex::new(state) }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, QuestionsState> {
        self.state.lock().expect("questions lock must not be poisoned")
    }

    /// Puts `request` to the client under a new id, `send` writing the message; the answer.
    pub fn ask(
        self: &Arc<Self>,
        request: mcp::ServerRequest,
        send: impl FnOnce(mcp::ServerJsonRpcMessage),
    ) -> Answer {
        let (sender, answer) = oneshot::channel();
        let id = {
            let mut state = self.state();
            if let Some(why) = state.closed {
                return Box::pin(async move { Err(unanswered(why)) });
            }
            let id = mcp::RequestId::Number(state.next);
            state.next += 1;
            state.asked.insert(id.clone(), sender);
            id
        };
        send(mcp::ServerJsonRpcMessage::request(request, id.clone()));
        let forget = Forget { questions: self.clone(), id: Some(id) };
        let questions = self.clone();
        Box::pin(async move {
            let mut forget = forget;
            let answered = answer.await;
            forget.id = None;
            answered.unwrap_or_else(|_| {
                Err(unanswered(questions.state().closed.unwrap_or("the client went away")))
            })
        })
    }

    /// The client's answer to question `id` (a response, or an error it sent); `false` when no
    /// such question waits.
    pub fn answered(&self, id: &mcp::RequestId, answer: Answered) -> bool {
        match self.state().asked.remove(id) {
            Some(waiting) => {
                let _ = waiting.send(answer);
                true
            }
            None => false,
        }
    }

    /// Whether `id` is the id of a question put here, answered or not (one not put here was
    /// put by someone else).
    pub fn was_asked(&self, id: &mcp::RequestId) -> bool {
        let state = self.state();
        matches!(id, mcp::RequestId::Number(n) if (state.first..state.next).contains(n))
    }

    /// Nothing more can be answered, because of `why`: what waits gets an error saying so, and
    /// so does whatever is asked later.
    pub fn close(&self, why: &'static str) {
        let mut state = self.state();
        state.closed.get_or_insert(why);
        state.asked.clear();
    }

    /// Whether no question waits for its answer.
    pub fn is_empty(&self) -> bool {
        self.state().asked.is_empty()
    }
}

/// Forgets a question whose answer nobody waits for any more.
struct Forget {
    questions: Arc<Questions>,
    id: Option<mcp::RequestId>,
}

impl Drop for Forget {
    fn drop(&mut self) {
        if let Some(id) = &self.id {
            self.questions.state().asked.remove(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots() -> mcp::ServerRequest {
        mcp::ServerRequest::ListRootsRequest(mcp::ListRootsRequest::default())
    }

    #[test]
    fn questions_count_from_where_they_are_told_and_know_their_own_ids() {
        let questions = Arc::new(Questions::numbered_from(1 << 40));
        let mut sent = Vec::new();
        let _first = questions.ask(roots(), |message| sent.push(message));
        let _second = questions.ask(roots(), |message| sent.push(message));
        let ids: Vec<serde_json::Value> = sent
            .iter()
            .map(|message| serde_json::to_value(message).expect("JSON")["id"].clone())
            .collect();
        assert_eq!(ids, [serde_json::json!(1_i64 << 40), serde_json::json!((1_i64 << 40) + 1)]);
        assert!(questions.was_asked(&mcp::RequestId::Number(1 << 40)));
        assert!(questions.was_asked(&mcp::RequestId::Number((1 << 40) + 1)));
        assert!(!questions.was_asked(&mcp::RequestId::Number((1 << 40) + 2)), "not yet");
        assert!(!questions.was_asked(&mcp::RequestId::Number(0)), "another copy's");
        assert!(!questions.was_asked(&mcp::RequestId::String("1099511627776".into())));
        let plain = Arc::new(Questions::default());
        let _zero = plain.ask(roots(), |_| {});
        assert!(plain.was_asked(&mcp::RequestId::Number(0)));
    }
}
