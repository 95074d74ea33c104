//! Resource subscriptions: what downstream sessions (and `subscriptions/listen` streams)
//! follow, counted per upstream resource so that the upstream is subscribed once and
//! unsubscribed after the last follower goes, restored after a reconnection, and released
//! when a session closes without unsubscribing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use toolgate_core::mcp;
use toolgate_intercept::{CallContext, Target};
use toolgate_upstream::{Route, Upstream};

use super::exchange::{Exchange, Subscribe, Unsubscribe, through_pipeline};
use super::{Gateway, supports_subscriptions};
use crate::error::GatewayError;
use crate::session::{Session, SubscriptionBounds};

/// Upstreams subscribed to something they do not follow yet (2026-07-28 connections, whose
/// listen stream is reopened with the new filter): awaited once after a batch of
/// subscriptions, not after each, which would open a stream per resource.
#[derive(Default)]
pub(crate) struct Unconfirmed(Vec<Arc<Upstream>>);

impl Unconfirmed {
    fn add(&mut self, upstream: Arc<Upstream>) {
        if !self.0.iter().any(|known| Arc::ptr_eq(known, &upstream)) {
            self.0.push(upstream);
        }
    }

    /// Returns once each upstream follows what it was subscribed to (or gave up waiting).
    pub(crate) async fn followed(self) {
        futures::future::join_all(self.0.iter().map(|upstream| upstream.subscriptions_followed()))
            .await;
    }
}

/// How many followers each upstream resource has.
#[derive(Debug, Default)]
pub(super) struct ResourceSubscriptions {
    counts: Mutex<HashMap<(Arc<str>, String), usize>>,
}

impl ResourceSubscriptions {
    fn counts(&self) -> std::sync::MutexGuard<'_, HashMap<(Arc<str>, String), usize>> {
        self.counts.lock().expect("subscriptions lock must not be poisoned")
    }

    /// One more follower of `route`; `true` for the first.
    fn add(&self, route: &Route) -> bool {
        let mut counts = self.counts();
        let count = counts.entry((route.upstream.clone(), route.original.clone())).or_default();
        *count += 1;
        *count == 1
    }

    /// One follower fewer; `true` when that was the last.
    fn remove(&self, route: &Route) -> bool {
        let mut counts = self.counts();
        let key = (route.upstream.clone(), route.original.clone());
        match counts.get_mut(&key) {
            Some(count) if *count > 1 => {
                *count -= 1;
                false
            }
            Some(_) => {
                counts.remove(&key);
                true
            }
            None => false,
        }
    }

    /// The original URIs of `upstream` anyone follows.
    fn of(&self, upstream: &str) -> Vec<String> {
        self.counts()
            .keys()
            .filter(|(name, _)| &**name == upstream)
            .map(|(_, uri)| uri.clone())
            .collect()
    }
}

impl Gateway {
    /// Bounds what one session or listen stream may follow from now on.
    pub fn bound_subscriptions(&self, bounds: SubscriptionBounds) {
        *self.subscription_bounds.write().expect("bounds lock must not be poisoned") = bounds;
    }

    /// What one session or listen stream may follow.
    pub(crate) fn subscription_bounds(&self) -> SubscriptionBounds {
        *self.subscription_bounds.read().expect("bounds lock must not be poisoned")
    }

    /// `resources/subscribe` from `session` (or from a `subscriptions/listen` stream, which
    /// has none), through the pipeline; the upstream is subscribed on the first. Returns once
    /// the upstream follows the resource.
    pub(crate) async fn subscribe(
        &self,
        session: Option<&Session>,
        params: mcp::SubscribeRequestParams,
        ctx: &mut CallContext,
    ) -> Result<(), GatewayError> {
        let mut unconfirmed = Unconfirmed::default();
        let outcome = self.subscribe_unconfirmed(session, params, ctx, &mut unconfirmed).await;
        unconfirmed.followed().await;
        outcome
    }

    /// [`Gateway::subscribe`], leaving the wait for upstreams to follow the resource to
    /// `unconfirmed` (to await once after many).
    pub(crate) async fn subscribe_unconfirmed(
        &self,
        session: Option<&Session>,
        params: mcp::SubscribeRequestParams,
        ctx: &mut CallContext,
        unconfirmed: &mut Unconfirmed,
    ) -> Result<(), GatewayError> {
        let route = self.subscribed_route(&params.uri, ctx)?;
        let outcome =
            through_pipeline::<Subscribe>(&self.pipeline, params, ctx, async |params, _| {
                self.follow(session, &params.uri, &route, unconfirmed).await
            })
            .await;
        self.recorder.request_ended(ctx, Subscribe::EVENT, &outcome);
        outcome
    }

    /// `resources/unsubscribe` from `session` (or a listen stream), through the pipeline; the
    /// upstream is unsubscribed after the last.
    pub(crate) async fn unsubscribe(
        &self,
        session: Option<&Session>,
        params: mcp::UnsubscribeRequestParams,
        ctx: &mut CallContext,
    ) -> Result<(), GatewayError> {
        ctx.target = self.inventory().resource_route(&params.uri).map(|route| Target {
            server: route.upstream.to_string(),
            original: route.original.clone(),
            exposed: params.uri.clone(),
            tool: None,
        });
        let outcome =
            through_pipeline::<Unsubscribe>(&self.pipeline, params, ctx, async |params, _| {
                self.unfollow(session, &params.uri).await
            })
            .await;
        self.recorder.request_ended(ctx, Unsubscribe::EVENT, &outcome);
        outcome
    }

    /// Where `uri` leads, set as `ctx`'s target.
    fn subscribed_route(&self, uri: &str, ctx: &mut CallContext) -> Result<Route, GatewayError> {
        let route = self
            .inventory()
            .resource_route(uri)
            .filter(|route| self.reaches(ctx, &route.upstream))
            .ok_or_else(|| GatewayError::UnknownResource(uri.to_owned()))?;
        ctx.target = Some(Target {
            server: route.upstream.to_string(),
            original: route.original.clone(),
            exposed: uri.to_owned(),
            tool: None,
        });
        Ok(route)
    }

    /// Follows `uri` for `session` (`None`: a listen stream, which names only what upstreams
    /// offer). An upstream is subscribed only to a resource it offers (lists, or whose URI
    /// matches a template it lists): a session may follow any URI its upstream routes to, as
    /// it always could, but a made-up one costs no upstream anything.
    async fn follow(
        &self,
        session: Option<&Session>,
        uri: &str,
        route: &Route,
        unconfirmed: &mut Unconfirmed,
    ) -> Result<(), GatewayError> {
        let upstream = self.upstream(&route.upstream)?;
        let offered = self.inventory().offered_resource_route(uri).is_some();
        if let Some(session) = session
            && !session.subscribe(uri, self.subscription_bounds(), offered)?
        {
            return Ok(());
        }
        if offered
            && self.subscriptions.add(route)
            && supports_subscriptions(&upstream)
            && upstream.subscribe_unconfirmed(&route.original).await?
        {
            unconfirmed.add(upstream);
        }
        Ok(())
    }

    async fn unfollow(&self, session: Option<&Session>, uri: &str) -> Result<(), GatewayError> {
        // Only what was counted when it was followed is uncounted.
        if let Some(session) = session
            && session.unsubscribe(uri) != Some(true)
        {
            return Ok(());
        }
        let Some(route) = self.inventory().resource_route(uri) else { return Ok(()) };
        if self.subscriptions.remove(&route)
            && let Ok(upstream) = self.upstream(&route.upstream)
            && supports_subscriptions(&upstream)
        {
            upstream.unsubscribe(&route.original).await?;
        }
        Ok(())
    }

    /// Releases what sessions that have closed held: their resource subscriptions (the
    /// upstream is unsubscribed after the last subscriber goes). Housekeeping, not a client's
    /// request: it does not pass the pipeline.
    pub(super) async fn release_closed_sessions(&self) {
        for uri in self.sessions.take_released() {
            if let Err(error) = self.unfollow(None, &uri).await {
                tracing::debug!(%uri, %error, "releasing a closed session's subscription failed");
            }
        }
    }

    /// Ends what a `subscriptions/listen` stream followed (housekeeping, as above).
    pub(crate) async fn release_listened(&self, uris: &[String]) {
        for uri in uris {
            if let Err(error) = self.unfollow(None, uri).await {
                tracing::debug!(%uri, %error, "releasing a listen stream's subscription failed");
            }
        }
    }

    /// After a reconnection, subscribes the upstream again to what sessions follow.
    pub(super) async fn restore_subscriptions(&self, upstream: &Arc<Upstream>) {
        if !supports_subscriptions(upstream) {
            return;
        }
        for uri in self.subscriptions.of(upstream.name()) {
            if let Err(error) = upstream.subscribe_unconfirmed(&uri).await {
                tracing::debug!(upstream = upstream.name(), %uri, %error, "re-subscribe failed");
            }
        }
        upstream.subscriptions_followed().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(upstream: &str, uri: &str) -> Route {
        Route { upstream: upstream.into(), original: uri.to_owned() }
    }

    #[test]
    fn bounds_count_resources_and_bytes() {
        let bounds = SubscriptionBounds { most: 2, most_bytes: 10 };
        assert!(bounds.check(2, 10).is_ok());
        assert!(matches!(bounds.check(3, 3), Err(GatewayError::TooManySubscriptions { most: 2 })));
        assert!(matches!(
            bounds.check(1, 11),
            Err(GatewayError::SubscriptionsTooLong { most_bytes: 10 })
        ));
    }

    #[test]
    fn the_first_follower_subscribes_and_the_last_unsubscribes() {
        let subscriptions = ResourceSubscriptions::default();
        let a = route("fs", "file:///a");
        assert!(subscriptions.add(&a), "first");
        assert!(!subscriptions.add(&a), "second");
        assert!(subscriptions.add(&route("git", "file:///a")), "another upstream's resource");
        assert_eq!(subscriptions.of("fs"), ["file:///a"]);
        assert!(!subscriptions.remove(&a), "one follower is left");
        assert!(subscriptions.remove(&a), "the last one went");
        assert!(!subscriptions.remove(&a), "nobody followed it any more");
        assert!(subscriptions.of("fs").is_empty());
    }
}
