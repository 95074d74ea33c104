//! The relay between replicas: with shared state on a Redis or PostgreSQL backend (`[state]
//! backend`) and sealed session ids, what one replica's copy of a session cannot do itself
//! travels on the state's bus to the replica that can (`wire` is what travels).
//!
//! - An answer to a question another copy asked (the client's POST reached the wrong
//!   replica) is published on [`wire::ANSWERS`], and the POST gets 202. Every replica
//!   listens there; the one whose copy asked the question delivers the answer as if it had
//!   been POSTed to it, and the others ignore it.
//! - A notification for a session whose standalone (GET) stream is not open on this replica
//!   is published on the session's channel, which the replica that holds the stream open
//!   listens to while it is open ([`Relay::follow`]), and sends it there. Not `list_changed`:
//! - when this replica's lists change, it publishes which ones on [`wire::LISTS`], and every
//!   other replica tells its own sessions (without publishing it again).
//!
//! Everything is bounded: two channels, plus one per standalone stream open here;
//! notifications wait for the bus in a queue of [`OUTGOING`], dropped when it is full; a
//! message larger than the bus carries waits in a key for [`wire::STORED_TTL`]. The bus is for
//! wake-ups: while the backend is down, an answer on the wrong replica gets 409 again and
//! notifications for a stream elsewhere are lost, with a warning once; when it is back,
//! relaying resumes by itself (the state resubscribes).

pub(crate) mod wire;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use toolgate_core::mcp;
use toolgate_gateway::Gateway;
use toolgate_gateway::session::Changed;
use toolgate_state::{SharedState, StateError, Subscription};

use self::wire::{Envelope, ListsChanged, Packed, TooLarge};
use super::Front;
use super::session::HttpSession;
use super::sessions::HttpSessions;

/// Notifications that may wait for the bus; more are dropped.
pub(crate) const OUTGOING: usize = 256;

/// How long a GET waits for its session's channel to be listened to before it answers (a bus
/// that is down does not hold it longer; the stream listens once it can).
const SUBSCRIBE_WAIT: Duration = Duration::from_secs(1);

/// Pauses between attempts to listen on a channel while the bus is down.
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const LAST_PAUSE: Duration = Duration::from_secs(5);

/// This replica's end of the relay (one per HTTP front).
#[derive(Debug)]
pub(crate) struct Relay {
    bus: Arc<Bus>,
    outgoing: mpsc::Sender<Outgoing>,
}

/// The bus as the relay's tasks use it.
struct Bus {
    state: SharedState,
    /// This replica on the bus: a random number (its own list changes come back to it).
    replica: u64,
    /// The bus failed last time it was used (a warning once per outage).
    down: AtomicBool,
    /// Notifications dropped because the queue was full.
    dropped: AtomicU64,
}

impl std::fmt::Debug for Bus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bus").field("state", &self.state).field("replica", &self.replica).finish()
    }
}

/// A notification for the session named `session`, on its way to the bus.
struct Outgoing {
    session: Arc<str>,
    message: Value,
}

/// Where a copy of a session sends what its standalone stream cannot deliver here.
#[derive(Debug, Clone)]
pub(crate) struct Outlet {
    session: Arc<str>,
    outgoing: mpsc::Sender<Outgoing>,
    bus: Arc<Bus>,
}

impl Outlet {
    /// The session's name on the bus.
    pub(crate) fn name(&self) -> &str {
        &self.session
    }

    /// Sends `message` (a notification) towards the replica that holds the session's
    /// standalone stream open, never waiting: when too many wait already, it is dropped.
    pub(crate) fn send(&self, message: &mcp::ServerJsonRpcMessage) {
        let Ok(message) = serde_json::to_value(message) else { return };
        let outgoing = Outgoing { session: self.session.clone(), message };
        if self.outgoing.try_send(outgoing).is_err() {
            let dropped = self.bus.dropped.fetch_add(1, Ordering::Relaxed);
            if dropped.is_multiple_of(1000) {
                tracing::warn!(
                    dropped = dropped + 1,
                    "notifications for sessions whose stream is on another replica wait for the \
                     bus faster than it takes them; dropped"
                );
            }
        }
    }
}

/// Why an answer did not travel.
#[derive(Debug)]
pub(crate) enum Unrelayed {
    /// The bus could not take it.
    Bus(StateError),
    /// It is too large to travel; the question got an error saying so instead (if the bus
    /// took that).
    TooLarge(TooLarge),
}

impl Relay {
    /// The relay over `state`, its tasks running until `shutdown`.
    pub(crate) fn start(state: SharedState, shutdown: CancellationToken) -> Arc<Relay> {
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes).expect("the operating system's random source works");
        let bus = Arc::new(Bus {
            state,
            replica: u64::from_le_bytes(bytes),
            down: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
        });
        let (outgoing, queue) = mpsc::channel(OUTGOING);
        tokio::spawn(bus.clone().publish_queued(queue, shutdown));
        Arc::new(Relay { bus, outgoing })
    }

    /// The outlet of the session `id`.
    pub(crate) fn outlet(&self, id: &str) -> Outlet {
        Outlet {
            session: wire::session_name(id).into(),
            outgoing: self.outgoing.clone(),
            bus: self.bus.clone(),
        }
    }

    /// Listens for answers to this replica's questions (for `front`'s sessions) and for other
    /// replicas' list changes (for `gateway`'s), and publishes this one's, until `shutdown`.
    pub(crate) fn listen(
        &self,
        front: Weak<Front>,
        gateway: &Arc<Gateway>,
        shutdown: CancellationToken,
    ) {
        let bus = self.bus.clone();
        let stop = shutdown.clone();
        tokio::spawn(async move {
            let Some(mut answers) = bus.subscribe_until(wire::ANSWERS, &stop, None).await else {
                return;
            };
            while let Some(payload) = next(&mut answers, &stop).await {
                let Some(front) = front.upgrade() else { return };
                bus.deliver_answer(&front.sessions, &payload).await;
            }
        });
        let mut changes = gateway.watch_lists();
        let bus = self.bus.clone();
        let stop = shutdown.clone();
        tokio::spawn(async move {
            loop {
                let changed = tokio::select! {
                    changed = changes.recv() => changed,
                    () = stop.cancelled() => return,
                };
                let changed = match changed {
                    Ok(changed) => changed,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        Changed { tools: true, prompts: true, resources: true }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                };
                let message = ListsChanged {
                    from: bus.replica,
                    tools: changed.tools,
                    prompts: changed.prompts,
                    resources: changed.resources,
                };
                let _ = bus.publish(wire::LISTS, &message.encode()).await;
            }
        });
        let bus = self.bus.clone();
        let gateway = Arc::downgrade(gateway);
        tokio::spawn(async move {
            let Some(mut lists) = bus.subscribe_until(wire::LISTS, &shutdown, None).await else {
                return;
            };
            while let Some(payload) = next(&mut lists, &shutdown).await {
                let Some(changed) = ListsChanged::decode(&payload) else { continue };
                if changed.from == bus.replica {
                    continue;
                }
                let Some(gateway) = gateway.upgrade() else { return };
                let ListsChanged { tools, prompts, resources, .. } = changed;
                gateway.notify_lists_changed(Changed { tools, prompts, resources }).await;
            }
        });
    }

    /// Sends the client's `answer` to question `question` of the session named `name` (whose
    /// copy here did not ask it) to the replica whose copy did.
    pub(crate) async fn answer(
        &self,
        name: &str,
        question: &mcp::RequestId,
        answer: Result<mcp::ClientResult, mcp::ErrorData>,
    ) -> Result<(), Unrelayed> {
        let message = match answer {
            Ok(result) => mcp::ClientJsonRpcMessage::response(result, question.clone()),
            Err(error) => mcp::ClientJsonRpcMessage::error(error, Some(question.clone())),
        };
        let message = serde_json::to_value(&message).expect("a message is JSON");
        match Envelope::pack(name, Some(question), message) {
            Ok(packed) => self.bus.send(wire::ANSWERS, packed).await.map_err(Unrelayed::Bus),
            Err(too_large) => {
                let error = mcp::ErrorData::internal_error(
                    format!("the client's answer did not reach this replica: {too_large}"),
                    None,
                );
                let instead = mcp::ClientJsonRpcMessage::error(error, Some(question.clone()));
                let instead = serde_json::to_value(&instead).expect("a message is JSON");
                if let Ok(packed) = Envelope::pack(name, Some(question), instead) {
                    let _ = self.bus.send(wire::ANSWERS, packed).await;
                }
                Err(Unrelayed::TooLarge(too_large))
            }
        }
    }

    /// Listens on `session`'s channel while its standalone stream is read here (until `stop`,
    /// a child of the session's end), sending what comes there; returns once it listens (or
    /// [`SUBSCRIBE_WAIT`] has passed: it keeps trying while the stream is open).
    pub(crate) async fn follow(&self, session: Arc<HttpSession>, stop: CancellationToken) {
        let Some(name) = session.relay_name() else { return };
        let channel = wire::session_channel(name);
        let bus = self.bus.clone();
        let (ready, listening) = oneshot::channel();
        tokio::spawn(async move {
            let Some(mut subscription) = bus.subscribe_until(&channel, &stop, Some(ready)).await
            else {
                return;
            };
            while let Some(payload) = next(&mut subscription, &stop).await {
                bus.deliver_notification(&session, &payload).await;
            }
        });
        let _ = tokio::time::timeout(SUBSCRIBE_WAIT, listening).await;
    }
}

/// The next message of `subscription`, unless `stop` comes first or the state is gone.
async fn next(subscription: &mut Subscription, stop: &CancellationToken) -> Option<bytes::Bytes> {
    tokio::select! {
        biased;
        () = stop.cancelled() => None,
        payload = subscription.recv() => payload,
    }
}

impl Bus {
    /// Publishes the notifications queued by the outlets, until `shutdown` or every sender
    /// is gone.
    async fn publish_queued(
        self: Arc<Self>,
        mut queue: mpsc::Receiver<Outgoing>,
        shutdown: CancellationToken,
    ) {
        loop {
            let outgoing = tokio::select! {
                outgoing = queue.recv() => outgoing,
                () = shutdown.cancelled() => None,
            };
            let Some(Outgoing { session, message }) = outgoing else { return };
            match Envelope::pack(&session, None, message) {
                Ok(packed) => {
                    let _ = self.send(&wire::session_channel(&session), packed).await;
                }
                Err(too_large) => {
                    tracing::debug!(%too_large, "a notification for another replica dropped");
                }
            }
        }
    }

    /// Puts a stored message in its key, then publishes the envelope.
    async fn send(&self, channel: &str, packed: Packed) -> Result<(), StateError> {
        let envelope = match packed {
            Packed::Inline(envelope) => envelope,
            Packed::Stored { envelope, key, value } => {
                if let Err(error) = self.state.put(&key, &value, wire::STORED_TTL).await {
                    self.failed(&error);
                    return Err(error);
                }
                envelope
            }
        };
        self.publish(channel, &envelope).await
    }

    async fn publish(&self, channel: &str, payload: &[u8]) -> Result<(), StateError> {
        match self.state.publish(channel, payload).await {
            Ok(()) => {
                self.worked();
                Ok(())
            }
            Err(error) => {
                self.failed(&error);
                Err(error)
            }
        }
    }

    /// A subscription to `channel`, tried until it succeeds or `stop` fires; `ready` is told
    /// after the first attempt.
    async fn subscribe_until(
        &self,
        channel: &str,
        stop: &CancellationToken,
        mut ready: Option<oneshot::Sender<()>>,
    ) -> Option<Subscription> {
        let mut pause = FIRST_PAUSE;
        loop {
            let subscribed = tokio::select! {
                subscribed = self.state.subscribe(channel) => subscribed,
                () = stop.cancelled() => return None,
            };
            if let Some(ready) = ready.take() {
                let _ = ready.send(());
            }
            match subscribed {
                Ok(subscription) => {
                    self.worked();
                    return Some(subscription);
                }
                Err(error) => self.failed(&error),
            }
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = stop.cancelled() => return None,
            }
            pause = (pause * 2).min(LAST_PAUSE);
        }
    }

    /// The message of `envelope`: in it, or taken from its key (by one replica only).
    async fn open(&self, envelope: Envelope) -> Option<Value> {
        if let Some(message) = envelope.message {
            return Some(message);
        }
        let key = envelope.key?;
        match self.state.take(&key).await {
            Ok(Some(value)) => wire::stored_message(&value),
            Ok(None) => {
                tracing::debug!("a relayed message expired (or another replica took it)");
                None
            }
            Err(error) => {
                self.failed(&error);
                None
            }
        }
    }

    /// An answer from the bus: to the copy here that asked its question, if one did.
    async fn deliver_answer(&self, sessions: &HttpSessions, payload: &[u8]) {
        let Some(envelope) = Envelope::unpack(payload) else {
            tracing::debug!("something on the answers channel that is not an answer");
            return;
        };
        let Some(question) = envelope.question.clone() else { return };
        let Some(copy) = sessions.named(&envelope.session) else { return };
        if !copy.asked_here(&question) {
            return;
        }
        let Some(message) = self.open(envelope).await else { return };
        let bytes = serde_json::to_vec(&message).expect("JSON is JSON");
        let answer = match crate::jsonrpc::parse_message(&bytes) {
            Ok(mcp::ClientJsonRpcMessage::Response(response)) if response.id == question => {
                Ok(response.result)
            }
            Ok(mcp::ClientJsonRpcMessage::Error(error)) if error.id.as_ref() == Some(&question) => {
                Err(error.error)
            }
            _ => {
                tracing::debug!(session = %copy.id, %question, "a relayed answer that is not one");
                return;
            }
        };
        tracing::debug!(session = %copy.id, %question, "an answer POSTed to another replica");
        copy.answered(&question, answer);
    }

    /// A notification from the bus for `session`, whose standalone stream is read here.
    async fn deliver_notification(&self, session: &HttpSession, payload: &[u8]) {
        let Some(envelope) = Envelope::unpack(payload) else { return };
        if envelope.question.is_some() || Some(envelope.session.as_str()) != session.relay_name() {
            return;
        }
        let Some(message) = self.open(envelope).await else { return };
        match serde_json::from_value::<mcp::ServerJsonRpcMessage>(message) {
            Ok(message @ mcp::ServerJsonRpcMessage::Notification(_)) => {
                session.deliver_here(&message);
            }
            _ => {
                tracing::debug!(session = %session.id, "a relayed message that is no notification")
            }
        }
    }

    /// The bus failed: a warning, once per outage.
    fn failed(&self, error: &StateError) {
        if !self.down.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                error = %toolgate_core::ErrorChain(error),
                "the relay between replicas cannot use the bus: until it can, an answer POSTed \
                 to a replica that did not ask the question gets 409, and notifications for a \
                 session whose stream is on another replica are lost"
            );
        }
    }

    /// The bus worked: say so if it had failed.
    fn worked(&self) {
        if self.down.swap(false, Ordering::Relaxed) {
            tracing::info!("the relay between replicas works again");
        }
    }
}

#[cfg(test)]
mod tests;
