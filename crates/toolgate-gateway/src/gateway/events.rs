//! What the upstreams report, as it happens: connections and lost connections rebuild the
//! inventory (once per batch), and changed lists, updated resources and log messages reach
//! the sessions that want them.

#![allow(deprecated)] // logging is deprecated in 2026-07-28 (SEP-2577) but still spoken

use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;
use toolgate_upstream::UpstreamEvent;

use toolgate_core::mcp;
use toolgate_intercept::{CallContext, Principal, Target};

use super::exchange::LogMessage;
use super::{Gateway, merge, notification};
use crate::session::Changed;

/// How often sessions that closed are looked for (they are also looked for on every event).
const SESSION_SWEEP: Duration = Duration::from_secs(30);

/// Follows the upstreams' events for as long as the gateway lives.
pub(super) fn follow(gateway: Weak<Gateway>, mut receiver: UnboundedReceiver<UpstreamEvent>) {
    tokio::spawn(async move {
        let mut sweep = tokio::time::interval(SESSION_SWEEP);
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let event = tokio::select! {
                event = receiver.recv() => event,
                _ = sweep.tick() => None,
            };
            let Some(gateway) = gateway.upgrade() else { break };
            match event {
                Some(event) => {
                    // Everything already waiting is handled as one batch: a hundred upstreams
                    // connecting at start-up rebuild the inventory once, not a hundred times.
                    let mut batch = vec![event];
                    while let Ok(more) = receiver.try_recv() {
                        batch.push(more);
                    }
                    gateway.on_events(batch).await;
                }
                None if receiver.is_closed() => break,
                None => {}
            }
            gateway.release_closed_sessions().await;
        }
    });
}

impl Gateway {
    /// Handles a batch of upstream events in order, with one inventory rebuild for all the
    /// connections, disconnections and catalog changes among them.
    async fn on_events(&self, events: Vec<UpstreamEvent>) {
        let mut changed = Changed::default();
        for event in &events {
            self.recorder.upstream(event);
            match event {
                UpstreamEvent::Connected { .. } | UpstreamEvent::Disconnected { .. } => {
                    changed = Changed { tools: true, prompts: true, resources: true };
                }
                UpstreamEvent::CatalogChanged { lists, .. } => {
                    changed.tools |= lists.tools;
                    changed.prompts |= lists.prompts;
                    changed.resources |= lists.resources;
                }
                _ => {}
            }
        }
        if changed.tools || changed.prompts || changed.resources {
            self.rebuild(changed).await;
        }
        for event in events {
            match event {
                UpstreamEvent::Connected { upstream, .. } => {
                    if let Some(up) = self.upstream_set().by_name.get(upstream.as_str()) {
                        self.restore_subscriptions(up).await;
                        if self.sessions.most_verbose_level().is_some() {
                            self.sync_upstream_log_level(Some(up)).await;
                        }
                    }
                }
                UpstreamEvent::ResourceUpdated { upstream, uri } => {
                    let exposed = self.exposed_uri(&upstream, &uri);
                    self.sessions.notify_updated(&exposed).await;
                }
                UpstreamEvent::Log { upstream, params } => {
                    self.log_of_its_own(upstream, params).await;
                }
                _ => {}
            }
        }
    }

    /// Merges the catalogs again and tells sessions about the lists that actually changed.
    pub(super) async fn rebuild(&self, candidates: Changed) {
        let fresh = Arc::new(merge(&self.upstream_set().ordered));
        let old = std::mem::replace(
            &mut *self.inventory.write().expect("inventory lock must not be poisoned"),
            fresh.clone(),
        );
        let changed = Changed {
            tools: candidates.tools && old.tools() != fresh.tools(),
            prompts: candidates.prompts && old.prompts() != fresh.prompts(),
            resources: candidates.resources
                && (old.resources() != fresh.resources()
                    || old.resource_templates() != fresh.resource_templates()),
        };
        self.recorder.lists_changed(changed);
        self.sessions.notify_changed(changed).await;
        if changed.any() {
            // Nobody watching is no error.
            let _ = self.lists.send(changed);
        }
    }

    /// A log message an upstream sent about no call: it passes the pipeline as its server's,
    /// then goes to the sessions that asked for logs at its level (and to no other: a session
    /// that never asked gets only what its own calls cause).
    async fn log_of_its_own(&self, upstream: String, params: mcp::LoggingMessageNotificationParam) {
        let mut ctx = CallContext::new(Principal::upstream(&upstream));
        ctx.target = Some(Target {
            server: upstream.clone(),
            original: String::new(),
            exposed: String::new(),
            tool: None,
        });
        let passed =
            notification::pass::<LogMessage>(&self.pipeline, &self.recorder, params, &mut ctx);
        if let Some(params) = passed.await {
            self.sessions.notify_log(params).await;
        }
    }

    /// The URI clients know for `uri` of `upstream` (rewritten when two upstreams share it).
    fn exposed_uri(&self, upstream: &str, uri: &str) -> String {
        match self.inventory().resource_route(uri) {
            Some(route) if &*route.upstream == upstream => uri.to_owned(),
            _ => toolgate_upstream::inventory::rewrite_uri(upstream, uri),
        }
    }
}
