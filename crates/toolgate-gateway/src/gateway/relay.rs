//! The requests an upstream sends back while it serves a call (`sampling/createMessage`,
//! `elicitation/create`, `roots/list`, directly or as 2026-07-28 `input_required` rounds):
//! each passes the pipeline, on behalf of the client that made the call, before it reaches
//! that client, and its answer passes the response phase before it reaches the upstream. The
//! call's progress and log messages pass the request phase of their own events on their way
//! (`super::notification`).

#![allow(deprecated)] // sampling and roots are deprecated in 2026-07-28 (SEP-2577)

use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use toolgate_core::mcp;
use toolgate_intercept::{CallContext, Pipeline};
use toolgate_upstream::{CallOptions, Caller, RoundRefused};

use super::exchange::{
    CreateMessage, Elicit, Exchange, ListRoots, LogMessage, Progress, Requested, request_phase,
    response_phase, through_pipeline,
};
use super::notification;
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

    fn hearer(&self) -> Option<String> {
        self.inner.as_ref().and_then(|inner| inner.hearer())
    }

    fn capabilities(&self) -> Option<mcp::ClientCapabilities> {
        self.inner.as_ref().and_then(|inner| inner.capabilities())
    }

    fn answers_rounds(&self) -> bool {
        self.inner.as_ref().is_some_and(|inner| inner.answers_rounds())
    }

    fn holding(&self) -> bool {
        self.inner.as_ref().is_some_and(|inner| inner.holding())
    }

    /// Each question of the round passes its request phase; those the interceptors let through
    /// go to the caller together, and each answer passes its response phase. A question refused
    /// (by an interceptor or the caller) ends the round.
    fn input_round(
        &self,
        requests: mcp::InputRequests,
    ) -> BoxFuture<'static, Result<mcp::InputResponses, RoundRefused>> {
        let inner = self.inner.clone();
        let pipeline = self.pipeline.clone();
        let recorder = self.recorder.clone();
        let origin = self.origin.clone();
        Box::pin(async move {
            let round = Round { pipeline: &pipeline, recorder: &recorder };
            let mut asked = mcp::InputRequests::new();
            let mut answers = mcp::InputResponses::new();
            let mut waiting = Vec::new();
            for (key, request) in requests {
                let mut ctx = origin.for_another_request();
                let before = match request {
                    mcp::InputRequest::Elicitation(request) => {
                        round
                            .before::<Elicit>(&mut ctx, request.params, |params| {
                                mcp::InputRequest::Elicitation(mcp::ElicitRequest::new(params))
                            })
                            .await
                    }
                    mcp::InputRequest::CreateMessage(request) => {
                        round
                            .before::<CreateMessage>(&mut ctx, request.params, |params| {
                                mcp::InputRequest::CreateMessage(mcp::CreateMessageRequest::new(
                                    params,
                                ))
                            })
                            .await
                    }
                    mcp::InputRequest::ListRoots(_) => {
                        round
                            .before::<ListRoots>(&mut ctx, (), |()| {
                                mcp::InputRequest::ListRoots(mcp::ListRootsRequest::default())
                            })
                            .await
                    }
                    other => Err(RoundRefused {
                        method: "input_required",
                        error: toolgate_upstream::unsupported(&format!("{other:?}")),
                    }),
                }?;
                match before {
                    Before::Ask(request) => {
                        let method = method_of(&request);
                        asked.insert(key.clone(), *request);
                        waiting.push((key, method, ctx));
                    }
                    Before::Answered(answer) => {
                        answers.insert(key, answer);
                    }
                }
            }
            if waiting.is_empty() {
                return Ok(answers);
            }
            let Some(inner) = inner else {
                let (_, method, _) = &waiting[0];
                return Err(RoundRefused { method, error: toolgate_upstream::unsupported(method) });
            };
            let mut answered = inner.input_round(asked).await?;
            for (key, method, mut ctx) in waiting {
                let Some(answer) = answered.remove(&key) else {
                    let error = mcp::ErrorData::invalid_params(
                        format!("the client gave no answer for {key}"),
                        None,
                    );
                    return Err(RoundRefused { method, error });
                };
                let answer = match method {
                    "elicitation/create" => round.after::<Elicit>(&mut ctx, answer).await,
                    "sampling/createMessage" => {
                        round.after::<CreateMessage>(&mut ctx, answer).await
                    }
                    _ => round.after::<ListRoots>(&mut ctx, answer).await,
                }?;
                answers.insert(key, answer);
            }
            Ok(answers)
        })
    }

    fn progress(&self, params: mcp::ProgressNotificationParam) -> BoxFuture<'static, ()> {
        let Some(inner) = self.inner.clone() else { return Box::pin(async {}) };
        let (pipeline, recorder) = (self.pipeline.clone(), self.recorder.clone());
        let mut ctx = self.origin.for_another_request();
        Box::pin(async move {
            let passed = notification::pass::<Progress>(&pipeline, &recorder, params, &mut ctx);
            if let Some(params) = passed.await {
                inner.progress(params).await;
            }
        })
    }

    fn log(&self, params: mcp::LoggingMessageNotificationParam) -> BoxFuture<'static, ()> {
        let Some(inner) = self.inner.clone() else { return Box::pin(async {}) };
        let (pipeline, recorder) = (self.pipeline.clone(), self.recorder.clone());
        let mut ctx = self.origin.for_another_request();
        Box::pin(async move {
            let passed = notification::pass::<LogMessage>(&pipeline, &recorder, params, &mut ctx);
            if let Some(params) = passed.await {
                inner.log(params).await;
            }
        })
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

/// The pipeline's passes over the questions of one `input_required` round.
struct Round<'a> {
    pipeline: &'a Pipeline,
    recorder: &'a Recorder,
}

/// What the request phase made of one question of a round.
enum Before {
    /// Ask the client this.
    Ask(Box<mcp::InputRequest>),
    /// An interceptor answered it.
    Answered(serde_json::Value),
}

impl Round<'_> {
    /// The request phase of one question (`wrap` makes it a question again).
    async fn before<E>(
        &self,
        ctx: &mut CallContext,
        params: E::Params,
        wrap: impl FnOnce(E::Params) -> mcp::InputRequest,
    ) -> Result<Before, RoundRefused>
    where
        E: Exchange,
        E::Output: Serialize,
    {
        match request_phase::<E>(self.pipeline, params, ctx).await {
            Ok(Requested::Send(params)) => Ok(Before::Ask(Box::new(wrap(params)))),
            Ok(Requested::Answered(output)) => {
                self.recorder.request_ended(ctx, E::EVENT, &Ok::<(), GatewayError>(()));
                Ok(Before::Answered(serde_json::to_value(output).unwrap_or_default()))
            }
            Err(error) => Err(self.refused::<E>(ctx, error)),
        }
    }

    /// The response phase of one answer.
    async fn after<E>(
        &self,
        ctx: &mut CallContext,
        answer: serde_json::Value,
    ) -> Result<serde_json::Value, RoundRefused>
    where
        E: Exchange,
        E::Output: Serialize + DeserializeOwned,
    {
        let output = serde_json::from_value::<E::Output>(answer).map_err(|error| RoundRefused {
            method: E::EVENT.as_str(),
            error: mcp::ErrorData::invalid_params(
                format!("the client's answer to {} is not one: {error}", E::EVENT.as_str()),
                None,
            ),
        })?;
        let outcome = response_phase::<E>(self.pipeline, output, ctx).await;
        match outcome {
            Ok(output) => {
                self.recorder.request_ended(ctx, E::EVENT, &Ok::<(), GatewayError>(()));
                Ok(serde_json::to_value(output).unwrap_or_default())
            }
            Err(error) => Err(self.refused::<E>(ctx, error)),
        }
    }

    fn refused<E: Exchange>(&self, ctx: &CallContext, error: GatewayError) -> RoundRefused {
        let outcome = Err::<(), _>(error);
        self.recorder.request_ended(ctx, E::EVENT, &outcome);
        let Err(error) = outcome else { unreachable!("an error") };
        RoundRefused { method: E::EVENT.as_str(), error: to_mcp_error(error) }
    }
}

/// The method of a question.
fn method_of(request: &mcp::InputRequest) -> &'static str {
    match request {
        mcp::InputRequest::Elicitation(_) => "elicitation/create",
        mcp::InputRequest::CreateMessage(_) => "sampling/createMessage",
        _ => "roots/list",
    }
}
