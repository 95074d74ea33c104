//! One call's progress, counted twice: as the transport reads it and as the handler forwards
//! it, so that the call's result waits until its progress has reached the caller (see
//! `crate::progress`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// Longest a result waits for its progress to be forwarded: a stuck client must not hold it.
pub(crate) const CATCH_UP_LIMIT: Duration = Duration::from_secs(1);

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

    /// How many were read (for tests).
    #[cfg(test)]
    pub(crate) fn read_count(&self) -> u64 {
        self.read.load(Ordering::SeqCst)
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
