//! The supervisor of one upstream: connects it, follows its 2026-07-28 notification stream,
//! notices when the connection ends, and reconnects with backoff, or at once when a restart
//! is asked for ([`Upstream::restart`]).

#![allow(deprecated)] // logging is deprecated in 2026-07-28 (SEP-2577)

use std::sync::Arc;
use std::time::Duration;

use rmcp::service::QuitReason;
use tokio::sync::watch;
use toolgate_core::mcp;

use super::{LinkState, Settled, Upstream};
use crate::catalog::Catalog;
use crate::connect::{Connection, Link, Service, connect};
use crate::error::ConnectError;
use crate::event::{ChangedLists, UpstreamEvent};

/// Time one cancellation may take to send on shutdown.
const CANCEL_SEND_LIMIT: Duration = Duration::from_millis(250);
/// Time a closing connection gets to end cleanly.
const CLOSE_GRACE: Duration = Duration::from_secs(5);
/// First reconnection delay.
const BACKOFF_BASE: Duration = Duration::from_millis(200);
/// Longest reconnection delay.
const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// The delay before reconnection attempt `failures` (0 = right after a lost connection):
/// exponential from [`BACKOFF_BASE`], capped at [`BACKOFF_MAX`], with 50–100% jitter so that
/// many gateways do not retry in step.
pub(crate) fn backoff_delay(failures: u32, random: u64) -> Duration {
    toolgate_core::backoff::delay(failures, BACKOFF_BASE, BACKOFF_MAX, random)
}

fn quit_reason(quit: Result<QuitReason, tokio::task::JoinError>) -> &'static str {
    match quit {
        Ok(QuitReason::Closed) => "closed by the server",
        Ok(QuitReason::Cancelled) => "cancelled",
        _ => "the connection task failed",
    }
}

impl Upstream {
    pub(super) async fn supervise(
        self: Arc<Self>,
        first: watch::Sender<Option<Result<(), ConnectError>>>,
    ) {
        let mut failures: u32 = 0;
        let mut restarts = self.restarts.subscribe();
        loop {
            let attempt = tokio::select! {
                attempt = connect(&self.config, &self.shared) => attempt,
                () = self.shutdown.cancelled() => break,
            };
            // A restart asked for while this attempt ran is answered by it: a new connection,
            // or why there is none.
            let answered = *restarts.borrow_and_update();
            let mut restarted = false;
            match attempt {
                Ok(Connection { service, link, group }) => {
                    failures = 0;
                    *self.last_error.lock().expect("last error lock") = None;
                    self.shared.needs_login.store(false, std::sync::atomic::Ordering::Relaxed);
                    self.link.send_replace(LinkState::Up(link.clone()));
                    self.settled.send_replace(Settled { restarts: answered, failed: None });
                    tracing::info!(
                        upstream = %self.config.name,
                        transport = link.info.transport,
                        protocol = %link.info.protocol_version,
                        tools = self.catalog().tools.len(),
                        startup_ms = link.info.startup.as_millis() as u64,
                        "upstream connected"
                    );
                    self.shared.emit(UpstreamEvent::Connected {
                        upstream: self.config.name.clone(),
                        startup: link.info.startup,
                    });
                    first.send_replace(Some(Ok(())));
                    let listening =
                        link.modern.then(|| tokio::spawn(self.clone().listen(link.clone())));
                    let reason =
                        self.run_until_lost(service, &link, listening, &mut restarts).await;
                    restarted = link.restarted.load(std::sync::atomic::Ordering::Acquire);
                    link.lost.cancel();
                    if let Some(group) = group {
                        group.kill();
                    }
                    if self.shutdown.is_cancelled() {
                        break;
                    }
                    // Its tools stay listed while it comes back: clients see no change, and
                    // calls wait for it instead of finding an unknown tool.
                    self.link.send_replace(LinkState::Restarting);
                    tracing::warn!(upstream = %self.config.name, %reason, "upstream connection lost; reconnecting");
                    *self.last_error.lock().expect("last error lock") = Some(reason.clone());
                    self.shared.emit(UpstreamEvent::Disconnected {
                        upstream: self.config.name.clone(),
                        reason,
                    });
                }
                Err(error) => {
                    let reason = error.to_string();
                    if failures == 0 {
                        tracing::warn!(upstream = %self.config.name, error = %reason, "upstream failed to start");
                    } else {
                        tracing::debug!(upstream = %self.config.name, error = %reason, failures, "upstream still failing");
                    }
                    *self.last_error.lock().expect("last error lock") = Some(reason.clone());
                    let failed = Some(reason.clone());
                    self.settled.send_replace(Settled { restarts: answered, failed });
                    let login = matches!(error, ConnectError::NeedsLogin { .. });
                    self.shared.needs_login.store(login, std::sync::atomic::Ordering::Relaxed);
                    let was = self.link.send_replace(LinkState::Down);
                    if first.borrow().is_none() {
                        first.send_replace(Some(Err(error)));
                        self.shared.emit(UpstreamEvent::Disconnected {
                            upstream: self.config.name.clone(),
                            reason,
                        });
                    } else if matches!(was, LinkState::Restarting) {
                        // It did not come back: its tools go now.
                        self.shared.set_catalog(Catalog::default());
                        self.shared.emit(UpstreamEvent::Disconnected {
                            upstream: self.config.name.clone(),
                            reason,
                        });
                    }
                    failures = failures.saturating_add(1);
                }
            }
            if restarted {
                // Asked for: connect again at once.
                continue;
            }
            let delay = backoff_delay(failures, toolgate_core::backoff::random_u64());
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                // A restart asked for now: no more waiting.
                _ = restarts.changed() => {}
                () = self.shutdown.cancelled() => break,
            }
        }
        self.link.send_replace(LinkState::Down);
        if first.borrow().is_none() {
            first.send_replace(Some(Err(ConnectError::Stopped)));
        }
    }

    /// Waits until the connection ends by itself, a request found it broken, a restart is
    /// asked for, or shutdown.
    async fn run_until_lost(
        &self,
        service: Service,
        link: &Link,
        listening: Option<tokio::task::JoinHandle<()>>,
        restarts: &mut watch::Receiver<u64>,
    ) -> String {
        let stop = service.cancellation_token();
        let waiting = service.waiting();
        tokio::pin!(waiting);
        tokio::select! {
            quit = &mut waiting => return format!("the connection closed ({})", quit_reason(quit)),
            _ = restarts.changed() => {
                // Requests in flight end now, saying why, rather than when the server has
                // closed.
                link.restarted.store(true, std::sync::atomic::Ordering::Release);
                link.lost.cancel();
                stop.cancel();
                let _ = tokio::time::timeout(CLOSE_GRACE, waiting).await;
                return "restarted on request".to_owned();
            }
            () = self.shutdown.cancelled() => {
                self.cancel_in_flight(link).await;
                // The listen stream is a request the server keeps running: it ends it (on
                // shutdown) with a cancellation, without which a server may wait for it before
                // it ends when its input closes.
                if let Some(listening) = listening {
                    let _ = tokio::time::timeout(CANCEL_SEND_LIMIT, listening).await;
                }
            }
            () = link.reset.cancelled() => {}
        }
        stop.cancel();
        let _ = tokio::time::timeout(CLOSE_GRACE, waiting).await;
        "the transport broke".to_owned()
    }

    /// Asks the server to stop what it is still doing for us, so that it can end as soon as
    /// its input closes (a server busy with a request may otherwise finish it first).
    async fn cancel_in_flight(&self, link: &Link) {
        let ids = self.shared.calls.lock().request_ids();
        for id in ids {
            let reason = Some("toolgate is shutting down".to_owned());
            let cancelled = mcp::CancelledNotificationParam::new(Some(id), reason);
            let _ = tokio::time::timeout(CANCEL_SEND_LIMIT, link.peer.notify_cancelled(cancelled))
                .await;
        }
    }

    /// On a 2026-07-28 connection, keeps a `subscriptions/listen` stream open for list changes
    /// and the subscribed resources, reopening it when the subscriptions change.
    async fn listen(self: Arc<Self>, link: Arc<Link>) {
        let capabilities = &link.info.capabilities;
        loop {
            // Read before the subscriptions: a change made after it is in this filter or the
            // next, never acknowledged by a filter that lacks it.
            let generation = self.filter_generation.load(std::sync::atomic::Ordering::SeqCst);
            let mut filter = mcp::SubscriptionFilter::new();
            filter.tools_list_changed = capabilities.tools.as_ref().and_then(|c| c.list_changed);
            filter.prompts_list_changed =
                capabilities.prompts.as_ref().and_then(|c| c.list_changed);
            filter.resources_list_changed =
                capabilities.resources.as_ref().and_then(|c| c.list_changed);
            let uris: Vec<String> =
                self.subscribed.lock().expect("subscribed lock").iter().cloned().collect();
            if !uris.is_empty() {
                filter.resource_subscriptions = Some(uris);
            }
            let refiltered = self.refilter.notified();
            tokio::pin!(refiltered);
            let mut subscription = tokio::select! {
                opened = link.peer.listen(filter) => match opened {
                    Ok(subscription) => {
                        self.listening.send_replace(generation);
                        subscription
                    }
                    Err(error) => {
                        tracing::debug!(upstream = %self.config.name, %error, "subscriptions/listen failed");
                        return;
                    }
                },
                () = link.lost.cancelled() => return,
                () = self.shutdown.cancelled() => return,
            };
            loop {
                tokio::select! {
                    next = subscription.next() => match next {
                        Ok(Some(notification)) => self.on_listened(&link, notification).await,
                        _ => return,
                    },
                    () = &mut refiltered => {
                        let _ = subscription.cancel().await;
                        break;
                    }
                    () = self.shutdown.cancelled() => {
                        let _ = subscription.cancel().await;
                        return;
                    }
                    () = link.lost.cancelled() => return,
                }
            }
        }
    }

    async fn on_listened(&self, link: &Link, notification: mcp::ServerNotification) {
        let lists = match notification {
            mcp::ServerNotification::ToolListChangedNotification(_) => {
                ChangedLists { tools: true, ..Default::default() }
            }
            mcp::ServerNotification::PromptListChangedNotification(_) => {
                ChangedLists { prompts: true, ..Default::default() }
            }
            mcp::ServerNotification::ResourceListChangedNotification(_) => {
                ChangedLists { resources: true, ..Default::default() }
            }
            mcp::ServerNotification::ResourceUpdatedNotification(updated) => {
                let upstream = self.config.name.clone();
                self.shared
                    .emit(UpstreamEvent::ResourceUpdated { upstream, uri: updated.params.uri });
                return;
            }
            _ => return,
        };
        self.shared.relist(&link.peer, lists).await;
    }
}

#[cfg(test)]
mod tests;
