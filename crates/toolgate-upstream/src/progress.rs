//! Progress before results. rmcp handles each notification in a task of its own, so progress
//! an upstream sent before its result could reach the caller after the result, which a client
//! may then drop as belonging to a finished request. Here the transport counts each call's
//! progress as it is read (in order, before the result), the handler counts it again once
//! forwarded, and a call waits for the two counts to meet before it returns.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::transport::Transport;
use tokio::sync::Notify;
use toolgate_core::mcp;

/// Longest a result waits for its progress to be forwarded: a stuck client must not hold it.
const CATCH_UP_LIMIT: Duration = Duration::from_secs(1);

/// One call's progress: read from the upstream, and forwarded to the caller.
#[derive(Debug, Default)]
pub(crate) struct ProgressLedger {
    read: AtomicU64,
    forwarded: AtomicU64,
    changed: Notify,
}

impl ProgressLedger {
    /// The transport read a progress notification for this call.
    pub(crate) fn read_one(&self) {
        self.read.fetch_add(1, Ordering::SeqCst);
    }

    /// The handler is done with one (forwarded it, or gave up on it).
    pub(crate) fn forwarded_one(&self) {
        self.forwarded.fetch_add(1, Ordering::SeqCst);
        self.changed.notify_waiters();
    }

    /// Waits until all progress read so far is forwarded, or [`CATCH_UP_LIMIT`] passes.
    pub(crate) async fn caught_up(&self) {
        let waiting = async {
            loop {
                let changed = self.changed.notified();
                if self.forwarded.load(Ordering::SeqCst) >= self.read.load(Ordering::SeqCst) {
                    return;
                }
                changed.await;
            }
        };
        if tokio::time::timeout(CATCH_UP_LIMIT, waiting).await.is_err() {
            tracing::debug!("a result went ahead of progress still being forwarded");
        }
    }
}

/// A client transport that tells each call's ledger about its progress as it is read.
pub(crate) struct ProgressCounting<T> {
    inner: T,
    ledgers: LedgerLookup,
}

/// Finds the ledger of the call a progress token belongs to.
pub(crate) type LedgerLookup =
    Arc<dyn Fn(&mcp::ProgressToken) -> Option<Arc<ProgressLedger>> + Send + Sync>;

impl<T> ProgressCounting<T> {
    pub(crate) fn new(inner: T, ledgers: LedgerLookup) -> Self {
        ProgressCounting { inner, ledgers }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for ProgressCounting<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: mcp::ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<mcp::ServerJsonRpcMessage> {
        let message = self.inner.receive().await?;
        if let mcp::JsonRpcMessage::Notification(notification) = &message
            && let mcp::ServerNotification::ProgressNotification(progress) =
                &notification.notification
            && let Some(ledger) = (self.ledgers)(&progress.params.progress_token)
        {
            ledger.read_one();
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
