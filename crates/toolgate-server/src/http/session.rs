//! One session of a handshake-era client on the HTTP front (`Mcp-Session-Id`): what it said at
//! `initialize`, its requests in flight (to cancel them), the questions it has been asked and
//! not answered yet, and its streams: the standalone one (GET) for notifications and the
//! answers that became event streams, kept so a client that lost one can resume it.
//!
//! An idle session is a few hundred bytes: no task, no channel, maps that allocate only when
//! used.
//!
//! With sealed ids (replicas, `seal`), each replica that serves a session holds a copy of its
//! own, marked with a random number: its questions' ids count from it and its streams' event
//! ids carry it, so that an answer or a `Last-Event-ID` meant for another replica's copy is
//! told from one meant for this copy, and never taken for it. What a copy holds (questions,
//! streams, requests running, the gateway's subscriptions and log level) stays on its replica.
//! With the relay (`relay`, shared state on a bus), a copy sends what its standalone stream
//! has no reader for here towards the replica that has one, and takes the answers to its
//! questions that other replicas received.

#![allow(deprecated)] // sampling and roots are deprecated in 2026-07-28 (SEP-2577)

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::time::Instant;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;
use toolgate_core::mcp;
use toolgate_intercept::Principal;

use super::client::ClientKey;
use super::relay::{Outlet, Relay, wire};
use super::sse::{EventStream, Urgency, parse_event_id, parse_marked_event_id};
use toolgate_gateway::link::{Answer, Notify, Questions, RequestLink};
use toolgate_gateway::session::{OpenedBy, Session};

/// Answer streams a session keeps for resumption at most (those whose client read them to the
/// end are not kept at all).
pub(crate) const MOST_KEPT_STREAMS: usize = 16;

/// One HTTP session.
#[derive(Debug)]
pub(crate) struct HttpSession {
    /// Its `Mcp-Session-Id`.
    pub(crate) id: Arc<str>,
    /// Who opened it: only this principal may use it.
    pub(crate) owner: Principal,
    /// Whom it counts against, for the bounds per client.
    pub(crate) client: ClientKey,
    /// The version negotiated at `initialize`.
    pub(crate) version: mcp::ProtocolVersion,
    /// What the client declared it can answer.
    pub(crate) capabilities: mcp::ClientCapabilities,
    /// The questions put to it and not answered yet.
    questions: Arc<Questions>,
    /// The gateway's view of it: log level, subscriptions, where notifications go.
    pub(crate) gateway_session: Arc<Session>,
    /// The standalone stream, where notifications and unrelated requests go.
    standalone: Arc<Standalone>,
    state: Mutex<State>,
    /// When it was last used, in milliseconds after the table's epoch.
    last_used: AtomicU64,
    /// Requests being served and standalone streams being read: a busy session is not idle.
    busy: AtomicUsize,
    /// Events that may wait for the reader of each of its streams.
    queue: usize,
    /// This copy's mark, when the session's id is sealed (see the module's documentation).
    mark: Option<u64>,
    /// The session's name on the bus, for a sealed session with the relay on.
    relay_name: Option<Arc<str>>,
}

#[derive(Debug, Default)]
struct State {
    /// The client's requests being served, by their id: cancelled by `notifications/cancelled`
    /// or when the session ends.
    running: HashMap<mcp::RequestId, CancellationToken>,
    /// Answers that became event streams, kept for resumption (stream numbers from 1).
    streams: HashMap<u64, Arc<EventStream>>,
    /// The number of the next such stream.
    next_stream: u64,
    /// The session has ended: nothing more is asked or kept.
    closed: bool,
}

/// The session's standalone stream, as the gateway's sessions see it.
#[derive(Debug)]
pub(crate) struct Standalone {
    stream: EventStream,
    /// Cancelled when the session ends.
    closed: CancellationToken,
    /// Where what nobody reads here goes, with the relay on: another replica may.
    elsewhere: Option<Outlet>,
}

impl Notify for Standalone {
    fn notify(&self, notification: mcp::ServerNotification) -> BoxFuture<'static, ()> {
        if !self.closed.is_cancelled() {
            let relayed = self
                .elsewhere
                .as_ref()
                .filter(|_| wire::travels(&notification) && !self.stream.is_read());
            let message = mcp::ServerJsonRpcMessage::notification(notification);
            if let Ok(json) = serde_json::to_vec(&message) {
                self.stream.push(&json, Urgency::of(&message));
            }
            if let Some(outlet) = relayed {
                outlet.send(&message);
            }
        }
        Box::pin(async {})
    }

    fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }
}

/// What a session is opened with.
pub(crate) struct Opening<'a> {
    /// Its `Mcp-Session-Id`.
    pub(crate) id: Arc<str>,
    pub(crate) owner: Principal,
    pub(crate) client: ClientKey,
    /// What the client asked `initialize` with (as a sealed id carries it, for a sealed one).
    pub(crate) params: &'a mcp::InitializeRequestParams,
    pub(crate) version: mcp::ProtocolVersion,
    pub(crate) now_ms: u64,
    pub(crate) queue: usize,
    /// The copy's mark, for a session whose id is sealed.
    pub(crate) mark: Option<u64>,
    /// The relay, for a copy of a sealed session when it is on.
    pub(crate) relay: Option<&'a Relay>,
}

impl HttpSession {
    /// A session for `owner`, counted as `client`, that asked `initialize` with `params`.
    pub(crate) fn new(
        id: Arc<str>,
        owner: Principal,
        client: ClientKey,
        params: &mcp::InitializeRequestParams,
        version: mcp::ProtocolVersion,
        now_ms: u64,
        queue: usize,
    ) -> HttpSession {
        HttpSession::opened(Opening {
            id,
            owner,
            client,
            params,
            version,
            now_ms,
            queue,
            mark: None,
            relay: None,
        })
    }

    /// A session as `opening` says.
    pub(crate) fn opened(opening: Opening<'_>) -> HttpSession {
        let Opening { id, owner, client, params, version, now_ms, queue, mark, relay } = opening;
        let elsewhere = relay.filter(|_| mark.is_some()).map(|relay| relay.outlet(&id));
        let relay_name = elsewhere.as_ref().map(|outlet| Arc::from(outlet.name()));
        let standalone = Arc::new(Standalone {
            stream: EventStream::marked(mark, 0, queue),
            closed: CancellationToken::new(),
            elsewhere,
        });
        let described =
            OpenedBy::now(Some(&id), owner.clone(), "streamable-http", Some(version.clone()));
        let gateway_session = Arc::new(Session::new(standalone.clone(), described));
        HttpSession {
            id,
            owner,
            client,
            version,
            capabilities: params.capabilities.clone(),
            questions: Arc::new(match mark {
                // Below 2^52 (`seal::copy_mark`): the cast keeps it.
                Some(mark) => Questions::numbered_from(mark as i64),
                None => Questions::default(),
            }),
            gateway_session,
            standalone,
            state: Mutex::new(State { next_stream: 1, ..State::default() }),
            last_used: AtomicU64::new(now_ms),
            busy: AtomicUsize::new(0),
            queue,
            mark,
            relay_name,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("session lock must not be poisoned")
    }

    /// Records a use at `now_ms`.
    pub(crate) fn touch(&self, now_ms: u64) {
        self.last_used.fetch_max(now_ms, Ordering::Relaxed);
        self.gateway_session.touch();
    }

    /// Whether it has gone unused since `before_ms` and nothing of it is going on.
    pub(crate) fn idle_since(&self, before_ms: u64) -> bool {
        self.is_idle() && self.last_used() < before_ms
    }

    /// Whether nothing of it is going on: no request running, no stream being read.
    pub(crate) fn is_idle(&self) -> bool {
        self.busy.load(Ordering::Relaxed) == 0
    }

    /// When it was last used.
    pub(crate) fn last_used(&self) -> u64 {
        self.last_used.load(Ordering::Relaxed)
    }

    /// Marks the session busy until the guard is dropped.
    pub(crate) fn busy(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::Relaxed);
        Busy(self.clone())
    }

    /// Cancelled when the session ends.
    pub(crate) fn closed(&self) -> CancellationToken {
        self.standalone.closed.clone()
    }

    /// Ends the session: its requests are cancelled, its questions unanswered, its streams
    /// end.
    pub(crate) fn close(&self) {
        self.questions.close("the session ended");
        self.standalone.closed.cancel();
        self.standalone.stream.end();
        let mut state = self.state();
        state.closed = true;
        for (_, running) in state.running.drain() {
            running.cancel();
        }
        for (_, stream) in state.streams.drain() {
            stream.end();
        }
    }

    /// Registers a request of the client as running; it is cancelled by
    /// `notifications/cancelled` or when the session ends, until [`Self::finished`].
    pub(crate) fn started(&self, id: &mcp::RequestId) -> CancellationToken {
        let token = self.standalone.closed.child_token();
        self.state().running.insert(id.clone(), token.clone());
        token
    }

    /// The request `id` has been answered.
    pub(crate) fn finished(&self, id: &mcp::RequestId) {
        self.state().running.remove(id);
    }

    /// `notifications/cancelled` for request `id`.
    pub(crate) fn cancel(&self, id: &mcp::RequestId) {
        if let Some(running) = self.state().running.remove(id) {
            running.cancel();
        }
    }

    /// The client's answer to question `id` (a response, or an error it sent); `false` when
    /// this copy of a sealed session never asked it: another replica's copy did, and it cannot
    /// reach that one from here.
    pub(crate) fn answered(
        &self,
        id: &mcp::RequestId,
        answer: Result<mcp::ClientResult, mcp::ErrorData>,
    ) -> bool {
        if self.questions.answered(id, answer) {
            return true;
        }
        if self.mark.is_some() && !self.questions.was_asked(id) {
            return false;
        }
        tracing::debug!(session = %self.id, %id, "an answer to no open question");
        true
    }

    /// Whether question `id` is one another replica's copy of this sealed session asked: a
    /// number this copy did not give (toolgate's questions are numbered).
    pub(crate) fn asked_elsewhere(&self, id: &mcp::RequestId) -> bool {
        self.mark.is_some()
            && matches!(id, mcp::RequestId::Number(_))
            && !self.questions.was_asked(id)
    }

    /// Whether question `id` is one this copy of a sealed session asked (answered or not).
    pub(crate) fn asked_here(&self, id: &mcp::RequestId) -> bool {
        self.mark.is_some() && self.questions.was_asked(id)
    }

    /// The session's name on the bus, when the relay serves it.
    pub(crate) fn relay_name(&self) -> Option<&str> {
        self.relay_name.as_deref()
    }

    /// Puts `message` (a notification another replica relayed) on the standalone stream,
    /// relaying it no further.
    pub(crate) fn deliver_here(&self, message: &mcp::ServerJsonRpcMessage) {
        if self.standalone.closed.is_cancelled() {
            return;
        }
        if let Ok(json) = serde_json::to_vec(message) {
            self.standalone.stream.push(&json, Urgency::of(message));
        }
    }

    /// A new stream for an answer, kept for resumption until the session ends or
    /// [`Self::release`]; a session keeps at most [`MOST_KEPT_STREAMS`], the oldest going first.
    pub(crate) fn open_stream(&self) -> Arc<EventStream> {
        let mut state = self.state();
        if state.streams.len() >= MOST_KEPT_STREAMS
            && let Some(oldest) = state.streams.keys().min().copied()
        {
            state.streams.remove(&oldest);
        }
        let number = state.next_stream;
        state.next_stream += 1;
        let stream = Arc::new(EventStream::marked(self.mark, number, self.queue));
        state.streams.insert(number, stream.clone());
        stream
    }

    /// Stream `number` (0: the standalone stream), if it is still kept.
    pub(crate) fn stream(&self, number: u64) -> Option<StreamRef> {
        if number == 0 {
            return Some(StreamRef::Standalone(self.standalone.clone()));
        }
        self.state().streams.get(&number).cloned().map(StreamRef::Answer)
    }

    /// What a client resuming from `last_event_id` (`Last-Event-ID`) gets.
    pub(crate) fn resume(&self, last_event_id: &str) -> Resume {
        let ours = match self.mark {
            None => parse_event_id(last_event_id),
            Some(mark) => match parse_marked_event_id(last_event_id) {
                Some((marked, number, index)) if marked == mark => Some((number, index)),
                Some((_, number, _)) => return Resume::Elsewhere { standalone: number == 0 },
                None => {
                    return match parse_event_id(last_event_id) {
                        // Unmarked: a replica that does not seal its ids made it.
                        Some((number, _)) => Resume::Elsewhere { standalone: number == 0 },
                        None => Resume::NotKept,
                    };
                }
            },
        };
        match ours.and_then(|(number, index)| Some((self.stream(number)?, index))) {
            Some((stream, index)) => Resume::Kept(stream, index),
            None => Resume::NotKept,
        }
    }

    /// Forgets stream `number`: it can no longer be resumed.
    pub(crate) fn release(&self, number: u64) {
        self.state().streams.remove(&number);
    }

    /// The standalone stream, for a GET.
    pub(crate) fn standalone(&self) -> &EventStream {
        &self.standalone.stream
    }
}

/// What a `Last-Event-ID` names in a session.
pub(crate) enum Resume {
    /// A stream this copy keeps, to resume after the event of that index.
    Kept(StreamRef, u64),
    /// Nothing this copy still keeps (a stream it forgot, or an id that names none).
    NotKept,
    /// A stream of another replica's copy of the session: its standalone stream, or an answer's.
    Elsewhere { standalone: bool },
}

/// A stream of a session, for a client resuming it.
pub(crate) enum StreamRef {
    Standalone(Arc<Standalone>),
    Answer(Arc<EventStream>),
}

impl StreamRef {
    pub(crate) fn stream(&self) -> &EventStream {
        match self {
            StreamRef::Standalone(standalone) => &standalone.stream,
            StreamRef::Answer(stream) => stream,
        }
    }
}

/// Keeps a session busy (not idle) while it lives.
#[derive(Debug)]
pub(crate) struct Busy(Arc<HttpSession>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A request of a session, as the gateway's callers see it: its progress goes to `outbox`
/// (the request's own answer stream), and questions are sent there too, marked as the
/// session's requests, their answers arriving by POST.
pub(crate) struct SessionRequest {
    pub(crate) session: Arc<HttpSession>,
    pub(crate) outbox: super::outbox::Outbox,
}

impl RequestLink for SessionRequest {
    fn capabilities(&self) -> mcp::ClientCapabilities {
        self.session.capabilities.clone()
    }

    fn notify(&self, notification: mcp::ServerNotification) -> BoxFuture<'static, ()> {
        self.outbox.send(&mcp::ServerJsonRpcMessage::notification(notification));
        Box::pin(async {})
    }

    fn ask(&self, request: mcp::ServerRequest) -> Answer {
        self.session.questions.ask(request, |message| self.outbox.send(&message))
    }
}

/// When the session was last used, for [`HttpSession::idle_since`]: milliseconds since
/// `epoch`.
pub(crate) fn millis_since(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> Arc<HttpSession> {
        let params: mcp::InitializeRequestParams = serde_json::from_value(serde_json::json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "t", "version": "1"}
        }))
        .expect("params");
        Arc::new(HttpSession::new(
            "s".into(),
            Principal::anonymous(),
            ClientKey::Loopback,
            &params,
            mcp::ProtocolVersion::V_2025_11_25,
            0,
            16,
        ))
    }

    fn copy(mark: u64) -> Arc<HttpSession> {
        let params: mcp::InitializeRequestParams = serde_json::from_value(serde_json::json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"roots": {}},
            "clientInfo": {"name": "t", "version": "1"}
        }))
        .expect("params");
        Arc::new(HttpSession::opened(Opening {
            id: "s1.sealed".into(),
            owner: Principal::anonymous(),
            client: ClientKey::Loopback,
            params: &params,
            version: mcp::ProtocolVersion::V_2025_11_25,
            now_ms: 0,
            queue: 16,
            mark: Some(mark),
            relay: None,
        }))
    }

    fn resumed(session: &HttpSession, id: &str) -> &'static str {
        match session.resume(id) {
            Resume::Kept(StreamRef::Standalone(_), _) => "standalone",
            Resume::Kept(StreamRef::Answer(_), _) => "answer",
            Resume::NotKept => "not kept",
            Resume::Elsewhere { standalone: true } => "another copy's standalone",
            Resume::Elsewhere { standalone: false } => "another copy's answer",
        }
    }

    #[test]
    fn a_copy_tells_its_own_streams_from_another_copys() {
        let here = copy(0xabc);
        let stream = here.open_stream();
        let number = stream.number();
        assert_eq!(resumed(&here, &format!("abc:{number}/3")), "answer");
        assert_eq!(resumed(&here, "abc:0/7"), "standalone");
        assert_eq!(resumed(&here, &format!("abc:{}/1", number + 5)), "not kept");
        assert_eq!(resumed(&here, &format!("abd:{number}/3")), "another copy's answer");
        assert_eq!(resumed(&here, "abd:0/3"), "another copy's standalone");
        assert_eq!(resumed(&here, &format!("{number}/3")), "another copy's answer", "unmarked");
        assert_eq!(resumed(&here, "0/3"), "another copy's standalone");
        assert_eq!(resumed(&here, "garbage"), "not kept");
        // Its events carry the mark.
        let mut read = stream.read();
        stream.push(b"{}", Urgency::Needed);
        let priming = read.try_recv().expect("the priming event");
        assert!(String::from_utf8_lossy(&priming).starts_with(&format!("id: abc:{number}/0")));
        let event = read.try_recv().expect("the event");
        assert!(String::from_utf8_lossy(&event).starts_with(&format!("id: abc:{number}/1")));
        // An unmarked session reads only unmarked ids, as before.
        let plain = session();
        let number = plain.open_stream().number();
        assert_eq!(resumed(&plain, &format!("{number}/1")), "answer");
        assert_eq!(resumed(&plain, &format!("abc:{number}/1")), "not kept");
        assert_eq!(resumed(&plain, "5/1"), "not kept");
    }

    #[tokio::test]
    async fn a_copy_takes_answers_to_its_own_questions_only() {
        let here = copy(1 << 30);
        let (outbox, mut sent) = super::super::outbox::Outbox::new();
        let link = SessionRequest { session: here.clone(), outbox };
        let answer =
            link.ask(mcp::ServerRequest::ListRootsRequest(mcp::ListRootsRequest::default()));
        let question: serde_json::Value =
            serde_json::from_slice(&sent.recv().await.expect("the question").0).unwrap();
        assert_eq!(question["id"], 1 << 30, "counted from the mark");
        let roots = || Ok(mcp::ClientResult::ListRootsResult(mcp::ListRootsResult::default()));
        // Another copy's first question has the id 0, or its own mark: not this one's.
        assert!(!here.answered(&mcp::RequestId::Number(0), roots()));
        assert!(!here.answered(&mcp::RequestId::Number((1 << 30) + 1), roots()));
        let id: mcp::RequestId = serde_json::from_value(question["id"].clone()).unwrap();
        assert!(here.answered(&id, roots()));
        assert!(answer.await.is_ok());
        assert!(
            here.answered(&id, roots()),
            "a late answer to its own question is taken, as before"
        );
        // An unmarked session takes every answer, as before.
        assert!(session().answered(&mcp::RequestId::Number(99), roots()));
    }

    #[test]
    fn a_session_keeps_so_many_answer_streams_the_oldest_going_first() {
        let session = session();
        let numbers: Vec<u64> =
            (0..MOST_KEPT_STREAMS + 3).map(|_| session.open_stream().number()).collect();
        assert!(session.stream(numbers[0]).is_none() && session.stream(numbers[2]).is_none());
        assert!(session.stream(numbers[3]).is_some());
        assert!(session.stream(*numbers.last().unwrap()).is_some());
        assert!(session.stream(0).is_some(), "the standalone stream is always there");
    }

    #[tokio::test]
    async fn a_question_is_answered_by_its_id_and_forgotten_when_nobody_waits() {
        let session = session();
        let (outbox, mut sent) = super::super::outbox::Outbox::new();
        let link = SessionRequest { session: session.clone(), outbox };
        let answer =
            link.ask(mcp::ServerRequest::ListRootsRequest(mcp::ListRootsRequest::default()));
        let question: serde_json::Value =
            serde_json::from_slice(&sent.recv().await.expect("the question").0).unwrap();
        assert_eq!(question["method"], "roots/list");
        let id: mcp::RequestId = serde_json::from_value(question["id"].clone()).unwrap();
        session
            .answered(&id, Ok(mcp::ClientResult::ListRootsResult(mcp::ListRootsResult::default())));
        assert!(matches!(answer.await, Ok(mcp::ClientResult::ListRootsResult(_))));

        let dropped =
            link.ask(mcp::ServerRequest::ListRootsRequest(mcp::ListRootsRequest::default()));
        drop(dropped);
        assert!(session.questions.is_empty(), "nobody waits for it any more");
        session.close();
        let after =
            link.ask(mcp::ServerRequest::ListRootsRequest(mcp::ListRootsRequest::default()));
        assert!(after.await.is_err(), "a closed session answers nothing");
    }
}
