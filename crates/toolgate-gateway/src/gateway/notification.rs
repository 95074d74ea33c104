//! What an upstream sends a client without being asked, when it carries content (log
//! messages, progress): each passes the request phase of its own event on its way, so that
//! `redact` sees it and `policy` can stop it. A refusal drops it (a notification has no one
//! to answer); nothing in the pipeline for the event means nothing is copied or recorded.

#![allow(deprecated)] // logging is deprecated in 2026-07-28 (SEP-2577) but still spoken

use toolgate_intercept::{CallContext, DecisionKind, Phase, Pipeline};

use super::exchange::{Exchange, Requested, request_phase};
use crate::error::GatewayError;
use crate::record::Recorder;

/// `params` as the interceptors left it, or `None` when it is to be dropped. `ctx` is the
/// context of the call it belongs to (a copy: one per notification), or of its server alone.
pub(crate) async fn pass<E>(
    pipeline: &Pipeline,
    recorder: &Recorder,
    params: E::Params,
    ctx: &mut CallContext,
) -> Option<E::Params>
where
    E: Exchange<Output = ()>,
{
    if !pipeline.runs_on(E::EVENT, Phase::Request, ctx) {
        return Some(params);
    }
    let outcome = request_phase::<E>(pipeline, params, ctx).await;
    // Recorded when an interceptor did something about it (refused, changed, failed, or
    // would have in audit mode): one record per progress step or log line that merely passed
    // would drown the audit log.
    let noteworthy = ctx.decisions.iter().any(|d| !matches!(d.kind, DecisionKind::Continued));
    match outcome {
        Ok(Requested::Send(params)) => {
            if noteworthy {
                recorder.request_ended(ctx, E::EVENT, &Ok::<(), GatewayError>(()));
            }
            Some(params)
        }
        // An interceptor answered it: there is nothing to answer, so nothing is sent.
        Ok(Requested::Answered(())) => {
            recorder.request_ended(ctx, E::EVENT, &Ok::<(), GatewayError>(()));
            None
        }
        Err(error) => {
            recorder.request_ended(ctx, E::EVENT, &Err::<(), _>(error));
            None
        }
    }
}
