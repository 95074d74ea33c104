//! A downstream request, as the [`Caller`] of what it causes upstream: its progress goes back
//! under the client's own token, the upstream's log messages about it go to this client's
//! session (at the level the session asked for, if it asked), and the upstream's questions
//! (sampling, elicitation, roots) go to this client, and only if it declared it can answer
//! them.
//!
//! Both travel over the request's [`RequestLink`], which puts them where the client expects
//! them: over HTTP, on that request's response stream (SEP-2260), not on the session's
//! standalone GET stream, which a client may not have opened (yet, or at all).

#![allow(deprecated)] // sampling, roots and logging are deprecated in 2026-07-28 (SEP-2577)

use std::sync::Arc;

use futures::future::BoxFuture;
use toolgate_core::mcp;
use toolgate_upstream::Caller;

use crate::link::{Answer, RequestLink};
use crate::session::Session;

/// The client of one downstream request.
pub(crate) struct DownstreamCaller {
    /// The way back to the client that made the request.
    link: Arc<dyn RequestLink>,
    /// The client's own progress token for the request, if it asked for progress.
    progress_token: Option<mcp::ProgressToken>,
    /// The client's handshake-era session (its log level); `None` for a 2026-07-28 request,
    /// which has no session and cannot ask for log messages.
    session: Option<Arc<Session>>,
}

impl DownstreamCaller {
    pub(crate) fn new(
        link: Arc<dyn RequestLink>,
        progress_token: Option<mcp::ProgressToken>,
    ) -> Self {
        DownstreamCaller { link, progress_token, session: None }
    }

    /// The same, for a request of `session`: the upstream's log messages about the request go
    /// to it.
    pub(crate) fn in_session(self, session: Option<Arc<Session>>) -> Self {
        DownstreamCaller { session, ..self }
    }

    fn capabilities(&self) -> mcp::ClientCapabilities {
        self.link.capabilities()
    }

    fn ask(&self, request: mcp::ServerRequest) -> Answer {
        self.link.ask(request)
    }

    /// A question the client cannot answer, since it did not declare `capability`, refused.
    fn refused<T: Send + 'static>(
        &self,
        capability: &'static str,
    ) -> BoxFuture<'static, Result<T, mcp::ErrorData>> {
        let told = self.link.refuse(capability, lacks(capability));
        Box::pin(async move { Err(told.await) })
    }
}

/// The result of a question, if the client answered it with the right kind of result.
fn answer<T>(
    asked: Result<mcp::ClientResult, mcp::ErrorData>,
    pick: impl FnOnce(mcp::ClientResult) -> Option<T>,
) -> Result<T, mcp::ErrorData> {
    pick(asked?).ok_or_else(|| {
        mcp::ErrorData::internal_error("the client answered with a result of another kind", None)
    })
}

fn elicit_request(params: mcp::ElicitRequestParams) -> mcp::ServerRequest {
    mcp::ServerRequest::ElicitRequest(mcp::ElicitRequest::new(params))
}

fn elicited(result: mcp::ClientResult) -> Option<mcp::ElicitResult> {
    match result {
        mcp::ClientResult::ElicitResult(result) => Some(result),
        _ => None,
    }
}

fn lacks(capability: &str) -> mcp::ErrorData {
    mcp::ErrorData::new(
        mcp::ErrorCode::INVALID_REQUEST,
        format!("the client that made this call did not declare the `{capability}` capability"),
        None,
    )
}

impl Caller for DownstreamCaller {
    fn capabilities(&self) -> Option<mcp::ClientCapabilities> {
        Some(self.capabilities())
    }

    fn answers_rounds(&self) -> bool {
        self.link.answers_rounds()
    }

    fn holding(&self) -> bool {
        self.link.holding()
    }

    /// Every question must be one the client declared it can answer.
    fn input_round(
        &self,
        requests: mcp::InputRequests,
    ) -> BoxFuture<'static, Result<mcp::InputResponses, toolgate_upstream::RoundRefused>> {
        let capabilities = self.capabilities();
        for request in requests.values() {
            let (method, capability, declared) = match request {
                mcp::InputRequest::Elicitation(_) => {
                    ("elicitation/create", "elicitation", capabilities.elicitation.is_some())
                }
                mcp::InputRequest::CreateMessage(_) => {
                    ("sampling/createMessage", "sampling", capabilities.sampling.is_some())
                }
                _ => ("roots/list", "roots", capabilities.roots.is_some()),
            };
            if !declared {
                let error = lacks(capability);
                return Box::pin(
                    async move { Err(toolgate_upstream::RoundRefused { method, error }) },
                );
            }
        }
        self.link.input_round(requests)
    }

    fn progress(&self, params: mcp::ProgressNotificationParam) -> BoxFuture<'static, ()> {
        let Some(token) = self.progress_token.clone() else { return Box::pin(async {}) };
        let mut params = params;
        params.progress_token = token;
        self.link.notify(mcp::ServerNotification::ProgressNotification(
            mcp::ProgressNotification::new(params),
        ))
    }

    /// The session: a log message about any of its calls goes to it alike.
    fn hearer(&self) -> Option<String> {
        self.session.as_ref().map(|session| format!("session:{:p}", Arc::as_ptr(session)))
    }

    /// On the request's own way back (its response stream over HTTP), when its session's
    /// level lets it through; a session that never set one gets what its own calls cause.
    fn log(&self, params: mcp::LoggingMessageNotificationParam) -> BoxFuture<'static, ()> {
        match &self.session {
            Some(session) if session.wants_log(params.level) => {
                self.link.notify(mcp::ServerNotification::LoggingMessageNotification(
                    mcp::LoggingMessageNotification::new(params),
                ))
            }
            _ => Box::pin(async {}),
        }
    }

    fn create_message(
        &self,
        params: mcp::CreateMessageRequestParams,
    ) -> BoxFuture<'static, Result<mcp::CreateMessageResult, mcp::ErrorData>> {
        let capabilities = self.capabilities();
        if capabilities.sampling.is_none() {
            return self.refused("sampling");
        }
        // What rmcp's `Peer::create_message` checks before it sends.
        let wants_tools = params.tools.is_some() || params.tool_choice.is_some();
        if wants_tools && capabilities.sampling.as_ref().and_then(|s| s.tools.as_ref()).is_none() {
            return self.refused("sampling.tools");
        }
        if let Err(problem) = params.validate() {
            return Box::pin(async move { Err(mcp::ErrorData::invalid_params(problem, None)) });
        }
        let asked = self
            .ask(mcp::ServerRequest::CreateMessageRequest(mcp::CreateMessageRequest::new(params)));
        Box::pin(async move {
            answer(asked.await, |result| match result {
                mcp::ClientResult::CreateMessageResult(result) => Some(*result),
                _ => None,
            })
        })
    }

    fn create_elicitation(
        &self,
        params: mcp::ElicitRequestParams,
    ) -> BoxFuture<'static, Result<mcp::ElicitResult, mcp::ErrorData>> {
        if self.capabilities().elicitation.is_none() {
            return self.refused("elicitation");
        }
        let asked = self.ask(elicit_request(params));
        Box::pin(async move { answer(asked.await, elicited) })
    }

    fn list_roots(&self) -> BoxFuture<'static, Result<mcp::ListRootsResult, mcp::ErrorData>> {
        if self.capabilities().roots.is_none() {
            return self.refused("roots");
        }
        let asked =
            self.ask(mcp::ServerRequest::ListRootsRequest(mcp::ListRootsRequest::default()));
        Box::pin(async move {
            answer(asked.await, |result| match result {
                mcp::ClientResult::ListRootsResult(result) => Some(result),
                _ => None,
            })
        })
    }
}

impl toolgate_intercept::Elicitor for DownstreamCaller {
    fn can_elicit(&self) -> bool {
        self.capabilities().elicitation.is_some()
    }

    fn elicit(
        &self,
        params: mcp::ElicitRequestParams,
    ) -> BoxFuture<'static, Result<mcp::ElicitResult, String>> {
        let asked = self.ask(elicit_request(params));
        Box::pin(async move { answer(asked.await, elicited).map_err(|e| e.message.into_owned()) })
    }
}
