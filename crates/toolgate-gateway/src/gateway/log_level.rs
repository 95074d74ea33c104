//! `logging/setLevel`: each session's level filters what it is sent; the upstreams are asked
//! for the most verbose level any session wants.

#![allow(deprecated)] // logging is deprecated in 2026-07-28 (SEP-2577) but still spoken

use toolgate_core::mcp;
use toolgate_intercept::CallContext;
use toolgate_upstream::Upstream;

use super::Gateway;
use super::exchange::{Exchange, SetLevel, through_pipeline};
use crate::error::GatewayError;
use crate::session::Session;

impl Gateway {
    /// `logging/setLevel` from `session`, through the pipeline.
    pub(crate) async fn set_log_level(
        &self,
        session: &Session,
        params: mcp::SetLevelRequestParams,
        ctx: &mut CallContext,
    ) -> Result<(), GatewayError> {
        let outcome =
            through_pipeline::<SetLevel>(&self.pipeline, params, ctx, async |params, _| {
                session.set_log_level(params.level);
                self.sync_upstream_log_level(None).await;
                Ok(())
            })
            .await;
        self.recorder.request_ended(ctx, SetLevel::EVENT, &outcome);
        outcome
    }

    /// Asks the upstreams that log for the most verbose level any session wants, when that
    /// changed (and `only`, when given, in any case: it just connected).
    pub(super) async fn sync_upstream_log_level(&self, only: Option<&Upstream>) {
        let Some(wanted) = self.sessions.most_verbose_level() else { return };
        let changed = {
            let mut current = self.upstream_log_level.lock().expect("log level lock");
            let changed = *current != Some(wanted);
            *current = Some(wanted);
            changed
        };
        for upstream in &self.upstream_set().ordered {
            let targeted = only.is_some_and(|u| std::ptr::eq(u, upstream.as_ref()));
            if (changed || targeted)
                && upstream.info().is_some_and(|i| i.capabilities.logging.is_some())
                && let Err(error) = upstream.set_level(wanted).await
            {
                tracing::debug!(upstream = upstream.name(), %error, "logging/setLevel failed");
            }
        }
    }
}
