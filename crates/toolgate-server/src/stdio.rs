//! The stdio front: one client on stdin and stdout, one JSON-RPC message per line
//! (`lines`), over streams the runtime polls itself when they are pipes or sockets
//! (`streams`).
//!
//! Every request goes to the one [`Dispatcher`], in a task of its own, so a slow call holds up
//! nothing else; the front keeps only what needs a connection:
//! - `initialize` opens the connection's session (handshake era); before it, `ping`,
//!   `server/discover` and requests that carry the 2026-07-28 metadata in their own `_meta`
//!   are served, any other request is refused with the metadata it lacks;
//! - `subscriptions/listen` (2026-07-28) streams its notifications on stdout, tagged with its
//!   id, until the client cancels it;
//! - `notifications/cancelled` cancels the request (or listen stream) it names;
//! - the client's answers to the questions an upstream asked through toolgate (a request of a
//!   2026-07-28 client is asked in `input_required` rounds instead) are routed by their id.
//!
//! What the client can make it hold is bounded: [`MOST_RUNNING`] requests at once (one more is
//! refused with an error) and [`MOST_LISTENING`] listen streams. When stdin ends, the requests
//! still running get [`crate::DEFAULT_GRACE`] to finish and write their answers (a scripted
//! session piped in gets every answer), questions to the client fail at once (nobody can answer
//! them), and everything written is flushed before [`serve`] returns.

#![allow(deprecated)] // the session era's requests are legacy in 2026-07-28 but still spoken

mod lines;
pub(crate) mod streams;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::GetMeta as _;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use toolgate_core::mcp;
use toolgate_gateway::Dispatcher;
use toolgate_gateway::link::{self, Closed, Listener, Notify, Questions, RequestLink};
use toolgate_gateway::listen::Subscription;
use toolgate_gateway::protocol::{self, Client, Era};
use toolgate_gateway::session::{OpenedBy, Session};
use toolgate_intercept::Principal;

use lines::{Lines, Output};

/// How many of the client's requests may run at once; one more is refused.
pub const MOST_RUNNING: usize = 1_024;

/// How many `subscriptions/listen` streams the client may hold open at once.
pub const MOST_LISTENING: usize = 32;

/// Serves one client on `read` and `write` until its input ends or `shutdown` fires, then
/// flushes what was written. On shutdown, requests still running are cancelled (whoever
/// fires it lets them finish first, see `toolgate serve`); at the end of the input they get
/// `grace` to finish.
pub(crate) async fn serve<R, W>(
    dispatcher: Arc<Dispatcher>,
    read: R,
    write: W,
    max_message: usize,
    grace: Duration,
    shutdown: CancellationToken,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let mut lines = Lines::new(read, write, max_message, lines::MOST_BACKLOG);
    let connection = Arc::new(Connection {
        output: lines.output(),
        questions: Arc::default(),
        state: Mutex::default(),
        closed: CancellationToken::new(),
        ending: CancellationToken::new(),
    });
    let mut tasks = JoinSet::new();
    // Who the client is, read once: the user who started toolgate.
    let principal = Principal::local();
    let front = Front { dispatcher, connection: connection.clone(), principal };
    loop {
        let message = tokio::select! {
            message = lines.receive() => message,
            () = shutdown.cancelled() => break,
            // Finished tasks are reaped as they end, so the set holds only running ones.
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
        };
        let Some(message) = message else {
            // The input ended: what runs gets the grace to finish, nobody can answer questions.
            connection.close();
            let finished = async { while tasks.join_next().await.is_some() {} };
            tokio::select! {
                () = finished => {}
                () = tokio::time::sleep(grace) => {}
                () = shutdown.cancelled() => {}
            }
            break;
        };
        front.receive(message, &mut tasks);
    }
    connection.close();
    connection.ending.cancel();
    tasks.shutdown().await;
    front.end_session();
    drop(front);
    drop(connection);
    lines.close().await
}

/// The front of one connection.
struct Front {
    dispatcher: Arc<Dispatcher>,
    connection: Arc<Connection>,
    /// Who the client is, for the pipeline.
    principal: Principal,
}

impl Front {
    /// Handles one message from the client.
    fn receive(&self, message: mcp::ClientJsonRpcMessage, tasks: &mut JoinSet<()>) {
        match message {
            mcp::ClientJsonRpcMessage::Request(request) => {
                self.request(request.id, request.request, tasks);
            }
            mcp::ClientJsonRpcMessage::Notification(notification) => {
                if let mcp::ClientNotification::CancelledNotification(cancelled) =
                    &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    self.connection.cancel(id);
                }
                // `notifications/initialized`, `roots/list_changed` and the others need nothing.
            }
            mcp::ClientJsonRpcMessage::Response(response) => {
                self.connection.answered(&response.id, Ok(response.result));
            }
            mcp::ClientJsonRpcMessage::Error(error) => {
                if let Some(id) = error.id {
                    self.connection.answered(&id, Err(error.error));
                }
            }
        }
    }

    fn request(&self, id: mcp::RequestId, request: mcp::ClientRequest, tasks: &mut JoinSet<()>) {
        let output = &self.connection.output;
        if let mcp::ClientRequest::InitializeRequest(initialize) = &request {
            output.send(&self.initialize(id, &initialize.params));
            return;
        }
        let opened = self.connection.opened();
        if let Some(opened) = &opened {
            opened.session.touch();
        }
        let client = Client {
            principal: self.principal.clone(),
            session: opened.as_ref().map(|opened| opened.session.clone()),
            session_id: None,
            address: None,
            negotiated: opened.as_ref().map(|opened| opened.version.clone()),
        };
        let era = match protocol::era_of(&request, &client) {
            Ok(era) => era,
            Err(error) => {
                output.send(&mcp::ServerJsonRpcMessage::error(error, Some(id)));
                return;
            }
        };
        if opened.is_none() && !era.modern && !before_initialize(&request) {
            // Neither a session nor the metadata that makes a request stand on its own.
            let missing =
                request.get_meta().missing_required_keys(&mcp::ProtocolVersion::V_2026_07_28);
            let error = protocol::malformed_meta(&missing);
            output.send(&mcp::ServerJsonRpcMessage::error(error, Some(id)));
            return;
        }
        let Some(cancel) = self.connection.started(&id) else {
            let error = mcp::ErrorData::new(
                mcp::ErrorCode(-32000),
                format!(
                    "{MOST_RUNNING} requests of this client are running, the most toolgate runs \
                     at once; send this one again when one has been answered"
                ),
                None,
            );
            output.send(&mcp::ServerJsonRpcMessage::error(error, Some(id)));
            return;
        };
        let running = Running { connection: self.connection.clone(), id: id.clone() };
        if let mcp::ClientRequest::SubscriptionsListenRequest(listen) = request {
            let gateway = self.dispatcher.gateway().clone();
            let connection = self.connection.clone();
            tasks.spawn(async move {
                let _running = running;
                listen_until_cancelled(gateway, connection, client, era, id, listen.params, cancel)
                    .await;
            });
            return;
        }
        let capabilities = match &opened {
            Some(opened) if !era.modern => Capabilities::Session(opened.clone()),
            _ => Capabilities::Own(Box::new(
                request.get_meta().client_capabilities().unwrap_or_default(),
            )),
        };
        let link = Arc::new(StdioRequest {
            connection: self.connection.clone(),
            capabilities,
            modern: era.modern,
        });
        let dispatcher = self.dispatcher.clone();
        let output = output.clone();
        tasks.spawn(async move {
            let _running = running;
            let request = protocol::Request { id: id.clone(), request, link, cancel };
            let answered = dispatcher.answer(&client, &era, request).await;
            output.send_json(protocol::written_message(id, answered));
        });
    }

    /// `initialize`: the connection's session, once.
    fn initialize(
        &self,
        id: mcp::RequestId,
        params: &mcp::InitializeRequestParams,
    ) -> mcp::ServerJsonRpcMessage {
        let version = protocol::negotiate(&params.protocol_version);
        let described = OpenedBy::now(None, self.principal.clone(), "stdio", Some(version.clone()));
        let session = Arc::new(Session::new(self.connection.clone(), described));
        let opened = Arc::new(Opened {
            version,
            capabilities: params.capabilities.clone(),
            session: session.clone(),
        });
        if !self.connection.open(opened) {
            let error =
                mcp::ErrorData::invalid_request("this session is already initialized", None);
            return mcp::ServerJsonRpcMessage::error(error, Some(id));
        }
        self.dispatcher.gateway().sessions().add(session);
        let result = protocol::initialize(self.dispatcher.gateway(), &params.protocol_version);
        mcp::ServerJsonRpcMessage::response(mcp::ServerResult::InitializeResult(result), id)
    }

    /// The session (if one was opened) ends with the connection: it gets no more
    /// notifications, and what it followed is released as the gateway tidies its sessions.
    fn end_session(&self) {
        self.connection.state().opened = None;
    }
}

/// Whether `request` may come before `initialize` without the 2026-07-28 metadata: the
/// specification allows `ping`, and `server/discover` is how a client finds the era to speak.
fn before_initialize(request: &mcp::ClientRequest) -> bool {
    matches!(request, mcp::ClientRequest::PingRequest(_) | mcp::ClientRequest::DiscoverRequest(_))
}

/// Serves a `subscriptions/listen` request: its acknowledgment, its notifications, until the
/// client cancels it or the connection ends (then its result).
async fn listen_until_cancelled(
    gateway: Arc<toolgate_gateway::Gateway>,
    connection: Arc<Connection>,
    client: Client,
    era: Era,
    id: mcp::RequestId,
    params: mcp::SubscriptionsListenRequestParams,
    cancel: CancellationToken,
) {
    let output = &connection.output;
    if !era.modern {
        // The handshake era follows changes in its session instead.
        let error = mcp::ErrorData::new(
            mcp::ErrorCode::METHOD_NOT_FOUND,
            "Method not found: subscriptions/listen (a method of protocol 2026-07-28; a session \
             gets its notifications without it)",
            None,
        );
        output.send(&mcp::ServerJsonRpcMessage::error(error, Some(id)));
        return;
    }
    let Some(_place) = connection.listening() else {
        let error = mcp::ErrorData::new(
            mcp::ErrorCode(-32000),
            format!(
                "this client already has {MOST_LISTENING} open subscriptions/listen streams, the \
                 most it may hold; cancel one before opening another"
            ),
            None,
        );
        output.send(&mcp::ServerJsonRpcMessage::error(error, Some(id)));
        return;
    };
    let subscription = match Subscription::open(&gateway, &client, id.clone(), params).await {
        Ok(subscription) => Arc::new(subscription),
        Err(error) => {
            output.send(&mcp::ServerJsonRpcMessage::error(error, Some(id)));
            return;
        }
    };
    output.send(&subscription.acknowledgment());
    let listener: Arc<dyn Listener> =
        Arc::new(StdioListener { subscription: subscription.clone(), output: output.clone() });
    let described = OpenedBy::now(None, client.principal.clone(), "stdio", era.version.clone());
    gateway.sessions().add_listener(listener.clone(), described);
    // When both have fired, the connection ended, and the stream ends with its result.
    tokio::select! {
        biased;
        () = connection.closed.cancelled() => {
            output.send(&subscription.ending());
        }
        () = cancel.cancelled() => {}
    }
    gateway.sessions().remove_listener(&listener);
    subscription.close(&gateway).await;
}

/// What `initialize` opened.
#[derive(Debug)]
struct Opened {
    /// The version negotiated.
    version: mcp::ProtocolVersion,
    /// What the client declared it can answer.
    capabilities: mcp::ClientCapabilities,
    /// The gateway's view of it: log level, subscriptions, where notifications go.
    session: Arc<Session>,
}

/// The one connection: where lines go, the requests running, the questions asked.
#[derive(Debug)]
struct Connection {
    output: Output,
    /// The questions put to the client and not answered yet.
    questions: Arc<Questions>,
    state: Mutex<State>,
    /// Fired when the input ends or the front stops: questions fail, listen streams end.
    closed: CancellationToken,
    /// Fired when the front stops: the requests still running are cancelled (after the grace
    /// the end of the input gives them).
    ending: CancellationToken,
}

#[derive(Debug, Default)]
struct State {
    /// Set by `initialize`.
    opened: Option<Arc<Opened>>,
    /// The client's requests being served, by their id.
    running: HashMap<mcp::RequestId, CancellationToken>,
    /// `subscriptions/listen` streams open.
    listening: usize,
}

impl Connection {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("stdio connection lock must not be poisoned")
    }

    fn opened(&self) -> Option<Arc<Opened>> {
        self.state().opened.clone()
    }

    /// Records what `initialize` opened; `false` when it had been opened before.
    fn open(&self, opened: Arc<Opened>) -> bool {
        let mut state = self.state();
        if state.opened.is_some() {
            return false;
        }
        state.opened = Some(opened);
        true
    }

    /// Registers request `id` as running: its cancellation, or `None` when the client has
    /// as many running as it may (or one with this id already runs, cancelled then).
    fn started(&self, id: &mcp::RequestId) -> Option<CancellationToken> {
        let mut state = self.state();
        if state.running.len() >= MOST_RUNNING {
            return None;
        }
        let token = self.ending.child_token();
        if let Some(earlier) = state.running.insert(id.clone(), token.clone()) {
            // The client reused an id still running: the earlier request is not one it can
            // name any more.
            earlier.cancel();
        }
        Some(token)
    }

    /// `notifications/cancelled` for request `id`.
    fn cancel(&self, id: &mcp::RequestId) {
        if let Some(running) = self.state().running.remove(id) {
            running.cancel();
        }
    }

    /// A place for one more listen stream, held until dropped.
    fn listening(self: &Arc<Self>) -> Option<ListenPlace> {
        let mut state = self.state();
        if state.listening >= MOST_LISTENING {
            return None;
        }
        state.listening += 1;
        Some(ListenPlace(self.clone()))
    }

    /// The client's answer to question `id`.
    fn answered(&self, id: &mcp::RequestId, answer: Result<mcp::ClientResult, mcp::ErrorData>) {
        if !self.questions.answered(id, answer) {
            tracing::debug!(%id, "an answer to no open question");
        }
    }

    /// Nothing more can be answered: questions fail, listen streams end.
    fn close(&self) {
        self.closed.cancel();
        self.questions.close("the client's input has ended");
    }
}

impl Notify for Connection {
    fn notify(&self, notification: mcp::ServerNotification) -> BoxFuture<'static, ()> {
        if !self.closed.is_cancelled() {
            self.output.send(&mcp::ServerJsonRpcMessage::notification(notification));
        }
        Box::pin(async {})
    }

    fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }
}

/// A running request; it is forgotten when it ends, however it ends.
struct Running {
    connection: Arc<Connection>,
    id: mcp::RequestId,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.connection.state().running.remove(&self.id);
    }
}

/// One of the client's listen streams, counted while it lives.
struct ListenPlace(Arc<Connection>);

impl Drop for ListenPlace {
    fn drop(&mut self) {
        self.0.state().listening -= 1;
    }
}

/// One request's way back to the client: its progress and, in the handshake era, the
/// questions an upstream asks while serving it (a 2026-07-28 request's are asked in
/// `input_required` rounds by the dispatcher).
struct StdioRequest {
    connection: Arc<Connection>,
    /// What the client declared at `initialize`, or in this request's `_meta`.
    capabilities: Capabilities,
    modern: bool,
}

/// What a request's client declared it can answer.
enum Capabilities {
    /// At `initialize`.
    Session(Arc<Opened>),
    /// In the request's own `_meta` (2026-07-28).
    Own(Box<mcp::ClientCapabilities>),
}

impl RequestLink for StdioRequest {
    fn capabilities(&self) -> mcp::ClientCapabilities {
        match &self.capabilities {
            Capabilities::Session(opened) => opened.capabilities.clone(),
            Capabilities::Own(capabilities) => capabilities.as_ref().clone(),
        }
    }

    fn notify(&self, notification: mcp::ServerNotification) -> BoxFuture<'static, ()> {
        self.connection.output.send(&mcp::ServerJsonRpcMessage::notification(notification));
        Box::pin(async {})
    }

    fn ask(&self, request: mcp::ServerRequest) -> link::Answer {
        if self.modern {
            let refused = link::not_asked_in_2026(&request);
            return Box::pin(async { Err(refused) });
        }
        let output = &self.connection.output;
        self.connection.questions.ask(request, |message| {
            output.send(&message);
        })
    }
}

/// A listen stream, as the gateway's sessions see it.
#[derive(Debug)]
struct StdioListener {
    subscription: Arc<Subscription>,
    output: Output,
}

impl Listener for StdioListener {
    fn offer(
        &self,
        notification: mcp::ServerNotification,
    ) -> BoxFuture<'static, Result<(), Closed>> {
        let sent = match self.subscription.message(notification) {
            Some(message) if !self.output.send(&message) => Err(Closed),
            _ => Ok(()),
        };
        Box::pin(async move { sent })
    }
}

#[cfg(test)]
mod tests;
