//! Keeping an upstream's lists fresh when the server changes them without `list_changed`
//! (`ServerConfig::refresh`, from `tool_ttl`, `refresh_interval` and `refresh_on_error`): listed
//! again every `refresh_interval` in a task of its own, before a client's list request once
//! older than `tool_ttl` ([`Upstream::refresh_if_stale`]), and when a call names a tool the
//! gateway does not know ([`Upstream::refresh_for_unknown_tool`]). Only lists that changed are
//! announced, so a refresh that finds nothing new costs the gateway nothing.

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::Upstream;
use crate::error::UpstreamError;
use crate::event::ChangedLists;

/// The least time between two refreshes for unknown tools: names a client makes up cannot
/// make toolgate list a server's tools more often than this.
pub const UNKNOWN_TOOL_GAP: Duration = Duration::from_secs(10);

impl Upstream {
    /// Lists everything again now: which lists changed. Fails while it is not connected.
    pub async fn refresh(&self) -> Result<ChangedLists, UpstreamError> {
        let link = self
            .current_link()
            .ok_or_else(|| UpstreamError::Disconnected { upstream: self.config.name.clone() })?;
        Ok(self.shared.relist_all(&link.peer, |_| false).await)
    }

    /// Whether its lists are older than its `tool_ttl` (never, without one).
    pub fn is_stale(&self) -> bool {
        let Some(ttl) = self.config.refresh.ttl() else { return false };
        self.shared.listed_at().is_some_and(|at| at.elapsed() >= ttl)
    }

    /// Lists everything again if its lists are older than its `tool_ttl` and it is connected
    /// (concurrent callers share one listing): which lists changed.
    pub async fn refresh_if_stale(&self) -> ChangedLists {
        let (Some(ttl), Some(link)) = (self.config.refresh.ttl(), self.current_link()) else {
            return ChangedLists::default();
        };
        if !self.is_stale() {
            return ChangedLists::default();
        }
        let fresh = |at: Option<tokio::time::Instant>| at.is_some_and(|at| at.elapsed() < ttl);
        self.shared.relist_all(&link.peer, fresh).await
    }

    /// With `refresh_on_error`, lists its tools again because a call named one nobody knew,
    /// at most once every [`UNKNOWN_TOOL_GAP`]: whether its tools changed.
    pub async fn refresh_for_unknown_tool(&self) -> bool {
        if !self.config.refresh.on_unknown_tool() {
            return false;
        }
        let Some(link) = self.current_link() else { return false };
        {
            let mut last = self.shared.refreshed_for_unknown.lock().expect("refresh lock");
            if last.is_some_and(|at| at.elapsed() < UNKNOWN_TOOL_GAP) {
                return false;
            }
            *last = Some(tokio::time::Instant::now());
        }
        self.shared.relist_all(&link.peer, |_| false).await.tools
    }
}

/// Lists `upstream` again every `refresh_interval` while it lives (and is connected).
pub(super) fn start(upstream: &Arc<Upstream>) {
    let Some(every) = upstream.config.refresh.every() else { return };
    let weak: Weak<Upstream> = Arc::downgrade(upstream);
    let shutdown = upstream.shutdown.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            let Some(upstream) = weak.upgrade() else { return };
            if let Ok(changed) = upstream.refresh().await
                && (changed.tools || changed.prompts || changed.resources)
            {
                tracing::info!(upstream = %upstream.config.name, ?changed, "its lists changed without it saying so (found by refresh_interval)");
            }
        }
    });
}
