//! The requests an upstream sends back while it serves a call (`sampling/createMessage`,
//! `elicitation/create`, `roots/list`, directly or as 2026-07-28 `input_required` rounds):
//! each passes the pipeline, on behalf of the client that made the call, before it reaches
//! that client, and its answer passes the response phase before it reaches the upstream.

#![allow(deprecated)] // sampling and roots are deprecated in 2026-07-28 (SEP-2577)

use std::sync::Arc;

use futures::future::BoxFuture;
use toolgate_core::mcp;
use toolgate_intercept::{CallContext, Pipeline};
use toolgate_upstream::{CallOptions, Caller};

use super::exchange::{CreateMessage, Elicit, Exchange, ListRoots, through_pipeline};
use crate::error::{GatewayError, to_mcp_error};
use crate::record::Recorder;

/// `options` with a caller that runs the pipeline around the real caller (or around a refusal,
/// when there is no caller to ask).
pub(super) fn wrap(
    options: &CallOptions,
    pipeline: &Pipeline,
    recorder: &Arc<Recorder>,
    ctx: &CallContext,
) -> CallOptions {
    if pipeline.is_empty() && !recorder.is_listening() {
        return options.clone();
    }
    let relay = Relay {
        inner: options.caller.clone(),
        pipeline: pipeline.clone(),
        recorder: recorder.clone(),
        origin: Arc::new(ctx.for_another_request()),
    };
    CallOptions { caller: Some(Arc::new(relay)), ..options.clone() }
}

/// A caller whose questions from the upstream pass the pipeline.
struct Relay {
    /// Who made the call; `None`: nobody can answer (the upstream gets an error).
    inner: Option<Arc<dyn Caller>>,
    pipeline: Pipeline,
    recorder: Arc<Recorder>,
    /// The call's context (who, which session, which tool), copied for each question.
    origin: Arc<CallContext>,
}

impl Relay {
    /// Runs one question through the pipeline; `ask` puts it to the real caller.
    fn relay<E>(
        &self,
        params: E::Params,
        ask: impl FnOnce(
            Arc<dyn Caller>,
            E::Params,
        ) -> BoxFuture<'static, Result<E::Output, mcp::ErrorData>>
        + Send
        + 'static,
    ) -> BoxFuture<'static, Result<E::Output, mcp::ErrorData>>
    where
        E: Exchange + 'static,
        E::Params: Send + 'static,
        E::Output: Send + 'static,
    {
        let inner = self.inner.clone();
        let pipeline = self.pipeline.clone();
        let recorder = self.recorder.clone();
        let mut ctx = self.origin.for_another_request();
        Box::pin(async move {
            let outcome = through_pipeline::<E>(&pipeline, params, &mut ctx, async |params, _| {
                let Some(inner) = inner else {
                    return Err(GatewayError::Declined(toolgate_upstream::unsupported(
                        E::EVENT.as_str(),
                    )));
                };
                ask(inner, params).await.map_err(GatewayError::Declined)
            })
            .await;
            recorder.request_ended(&ctx, E::EVENT, &outcome);
            outcome.map_err(to_mcp_error)
        })
    }
}

impl Caller for Relay {
    fn party(&self) -> Option<String> {
        self.inner.as_ref().and_then(|inner| inner.party())
    }

    fn progress(&self, params: mcp::ProgressNotificationParam) -> BoxFuture<'static, ()> {
        match &self.inner {
            Some(inner) => inner.progress(params),
            None => Box::pin(async {}),
        }
    }

    fn create_message(
        &self,
        params: mcp::CreateMessageRequestParams,
    ) -> BoxFuture<'static, Result<mcp::CreateMessageResult, mcp::ErrorData>> {
        self.relay::<CreateMessage>(params, |inner, params| inner.create_message(params))
    }

    fn create_elicitation(
        &self,
        params: mcp::ElicitRequestParams,
    ) -> BoxFuture<'static, Result<mcp::ElicitResult, mcp::ErrorData>> {
        self.relay::<Elicit>(params, |inner, params| inner.create_elicitation(params))
    }

    fn list_roots(&self) -> BoxFuture<'static, Result<mcp::ListRootsResult, mcp::ErrorData>> {
        self.relay::<ListRoots>((), |inner, ()| inner.list_roots())
    }
}
