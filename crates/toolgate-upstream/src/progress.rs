//! Progress and logs before results. rmcp handles each notification in a task of its own, so
//! progress or a log message an upstream sent before its result could reach the caller after
//! the result, which a client may then drop as belonging to a finished request. Here the
//! transport counts each call's notifications as they are read (in order, before the
//! result), the handler counts them again once forwarded, and a call waits for the two counts
//! to meet before it returns.
//!
//! The transport is also where a log message is given its owner ([`LogOwner`]): read in
//! order, before the result of the call it is about, it finds that call still in flight.

#![allow(deprecated)] // logging is deprecated in 2026-07-28 (SEP-2577) but still spoken

use std::future::Future;
use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::model::{GetExtensions as _, GetMeta as _};
use rmcp::transport::Transport;
use toolgate_core::mcp;

use crate::call_table::{Registration, Route};
use crate::shared::Shared;

/// Whose an upstream's log message is, decided as the transport reads it.
#[derive(Clone)]
pub(crate) enum LogOwner {
    /// The call it is about: the request whose response stream carried it (streamable HTTP),
    /// or the only call in flight (stdio, legacy SSE, in-process), or the only one not holding
    /// for its client's answers (`Caller::holding`), or any of the calls in flight when they
    /// all have the same hearer (the calls of one session).
    Call(Route),
    /// Calls of several clients are in flight and nothing says which one it is about: it
    /// could be any of theirs, so it goes to none.
    Ambiguous,
    /// It came on the response stream of a request that has ended: that request's, and so no
    /// one else's.
    Ended,
    /// No call is in flight: the server's own, for the sessions that asked for logs.
    Nobody,
}

impl LogOwner {
    fn of(shared: &Shared, meta: Option<&mut mcp::NotificationMetaObject>) -> LogOwner {
        let marked = shared.stream_mark.take(meta);
        let calls = shared.calls.lock();
        match marked {
            Some(id) => match calls.route(&id) {
                Some(route) => LogOwner::Call(route),
                None if calls.in_flight(&id) => LogOwner::Nobody,
                None => LogOwner::Ended,
            },
            None => match calls.only_route_by(|caller| caller.hearer()) {
                Some(route) => LogOwner::Call(route),
                None if calls.has_callers() => LogOwner::Ambiguous,
                None => LogOwner::Nobody,
            },
        }
    }
}

/// A client transport that enters each request in the call table as it writes it, and tells
/// each call's ledger about its progress and logs as they are read.
pub(crate) struct ProgressCounting<T> {
    inner: T,
    shared: Arc<Shared>,
}

impl<T> ProgressCounting<T> {
    pub(crate) fn new(inner: T, shared: Arc<Shared>) -> Self {
        ProgressCounting { inner, shared }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for ProgressCounting<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: mcp::ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let mcp::JsonRpcMessage::Request(request) = &item
            && let Some(registration) = request.request.extensions().get::<Arc<Registration>>()
        {
            // Entered before it is written: the first progress can follow at once.
            let token = request.request.get_meta().get_progress_token();
            let token = token.unwrap_or_else(|| mcp::ProgressToken(request.id.clone()));
            self.shared.calls.enter(request.id.clone(), token, registration);
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<mcp::ServerJsonRpcMessage> {
        let mut message = self.inner.receive().await?;
        if let mcp::JsonRpcMessage::Notification(notification) = &mut message {
            match &mut notification.notification {
                mcp::ServerNotification::ProgressNotification(progress) => {
                    let calls = self.shared.calls.lock();
                    if let Some(ledger) = calls.ledger(&progress.params.progress_token) {
                        ledger.read_one();
                    }
                }
                mcp::ServerNotification::LoggingMessageNotification(log) => {
                    let meta = log.extensions.get_mut::<mcp::NotificationMetaObject>();
                    let owner = LogOwner::of(&self.shared, meta);
                    if let LogOwner::Call(route) = &owner
                        && let Some(ledger) = &route.ledger
                    {
                        ledger.read_one();
                    }
                    log.extensions.insert(owner);
                }
                _ => {}
            }
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::GetMeta as _;
    use tokio::sync::mpsc;

    use super::*;
    use std::time::Duration;

    use crate::call::Caller;
    use crate::progress_ledger::{CATCH_UP_LIMIT, ProgressLedger};

    /// A transport whose writes never finish, and whose reads come from a channel.
    struct Wire(mpsc::UnboundedReceiver<mcp::ServerJsonRpcMessage>);

    impl Transport<RoleClient> for Wire {
        type Error = std::io::Error;

        fn send(
            &mut self,
            _item: mcp::ClientJsonRpcMessage,
        ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
            std::future::pending()
        }

        async fn receive(&mut self) -> Option<mcp::ServerJsonRpcMessage> {
            self.0.recv().await
        }

        async fn close(&mut self) -> Result<(), Self::Error> {
            Ok(())
        }
    }

    struct Nobody;
    impl Caller for Nobody {}

    /// A server can send progress (or a question) about a request as soon as it reads it, before
    /// rmcp's `send_request` returns: the request is in the call table from the moment it is
    /// handed to the transport, before any byte of it is written.
    #[tokio::test]
    async fn a_request_is_entered_before_it_is_written_and_its_first_progress_counts() {
        let shared = Arc::new(Shared::new("up".into(), None));
        let (server, incoming) = mpsc::unbounded_channel();
        let mut transport = ProgressCounting::new(Wire(incoming), shared.clone());
        let ledger = Arc::new(ProgressLedger::default());
        let (registration, in_flight) =
            shared.calls.prepare(Some(Arc::new(Nobody)), Some(ledger.clone()), None);
        let id = mcp::NumberOrString::Number(3);
        let token = mcp::ProgressToken(mcp::NumberOrString::Number(5));
        let mut request = mcp::ClientRequest::PingRequest(mcp::PingRequest::default());
        request.get_meta_mut().set_progress_token(token.clone());
        request.extensions_mut().insert(registration);

        let _writing = transport.send(mcp::JsonRpcMessage::request(request, id.clone()));
        assert!(shared.calls.lock().by_request(&id).is_some(), "entered before it is written");
        assert!(shared.calls.lock().by_token(&token).is_some());

        let progress = mcp::ProgressNotificationParam::new(token.clone(), 0.0);
        let notification =
            mcp::ServerNotification::ProgressNotification(mcp::ProgressNotification::new(progress));
        server.send(mcp::JsonRpcMessage::notification(notification)).expect("open");
        transport.receive().await.expect("a message");
        assert_eq!(ledger.read_count(), 1, "its progress is counted");

        drop(in_flight);
        assert!(shared.calls.lock().request_ids().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn caught_up_waits_for_every_read_progress_to_be_forwarded() {
        let ledger = Arc::new(ProgressLedger::default());
        ledger.read_one();
        ledger.read_one();
        let waiter = tokio::spawn({
            let ledger = ledger.clone();
            async move { ledger.caught_up().await }
        });
        ledger.forwarded_one();
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "one of two forwarded");
        ledger.forwarded_one();
        tokio::time::timeout(Duration::from_millis(1), waiter)
            .await
            .expect("caught up at once")
            .expect("no panic");
    }

    #[tokio::test(start_paused = true)]
    async fn caught_up_gives_up_after_the_limit() {
        let ledger = ProgressLedger::default();
        ledger.read_one();
        let started = tokio::time::Instant::now();
        ledger.caught_up().await;
        assert_eq!(started.elapsed(), CATCH_UP_LIMIT);
    }
}
