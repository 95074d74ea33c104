//! One request through the pipeline: the request phase (which may refuse it, rewrite it, or
//! answer in the upstream's place), the upstream, then the response phase. Every request
//! method is an [`Exchange`]: which event it raises and how its parameters and result travel
//! as pipeline messages.

#![allow(deprecated)] // sampling, roots and logging are deprecated in 2026-07-28 (SEP-2577)

use toolgate_core::mcp;
use toolgate_intercept::{
    CallContext, InterceptionEvent, Listed, Message, Phase, Pipeline, Stopped,
};

use crate::error::GatewayError;

/// A request method that passes the pipeline.
pub(crate) trait Exchange {
    /// What the request carries.
    type Params;
    /// What it is answered with.
    type Output;
    /// Its interception event.
    const EVENT: InterceptionEvent;
    /// The request as a pipeline message.
    fn request(params: Self::Params) -> Message;
    /// The request back from a pipeline message, when it is still one.
    fn params(message: Message) -> Option<Self::Params>;
    /// The answer as a pipeline message.
    fn response(output: Self::Output) -> Message;
    /// The answer back from a pipeline message, when it is still one.
    fn output(message: Message) -> Option<Self::Output>;
}

/// Declares an [`Exchange`]: `Name(event): Params => Message::Variant, Output => Message::Variant`.
/// `()` travels as [`Message::Empty`].
macro_rules! exchange {
    ($name:ident($event:ident): $params:ty => $request:ident, $output:ty => $response:ident) => {
        pub(crate) struct $name;

        impl Exchange for $name {
            type Params = $params;
            type Output = $output;
            const EVENT: InterceptionEvent = InterceptionEvent::$event;

            fn request(params: Self::Params) -> Message {
                exchange!(@wrap $request, params)
            }

            fn params(message: Message) -> Option<Self::Params> {
                exchange!(@unwrap $request, message)
            }

            fn response(output: Self::Output) -> Message {
                exchange!(@wrap $response, output)
            }

            fn output(message: Message) -> Option<Self::Output> {
                exchange!(@unwrap $response, message)
            }
        }
    };
    (@wrap Empty, $value:ident) => {{
        let () = $value;
        Message::Empty
    }};
    (@wrap $variant:ident, $value:ident) => {
        Message::$variant($value)
    };
    (@unwrap Empty, $message:ident) => {
        matches!($message, Message::Empty).then_some(())
    };
    (@unwrap $variant:ident, $message:ident) => {
        match $message {
            Message::$variant(value) => Some(value),
            _ => None,
        }
    };
}

exchange!(CallTool(ToolsCall): mcp::CallToolRequestParams => CallTool, mcp::CallToolResult => ToolResult);
exchange!(ListTools(ToolsList): () => Empty, Vec<Listed<mcp::Tool>> => Tools);
exchange!(GetPrompt(PromptsGet): mcp::GetPromptRequestParams => GetPrompt, mcp::GetPromptResult => Prompt);
exchange!(ListPrompts(PromptsList): () => Empty, Vec<Listed<mcp::Prompt>> => Prompts);
exchange!(ReadResource(ResourcesRead): mcp::ReadResourceRequestParams => ReadResource, mcp::ReadResourceResult => Resource);
exchange!(ListResources(ResourcesList): () => Empty, Vec<Listed<mcp::Resource>> => Resources);
exchange!(ListResourceTemplates(ResourceTemplatesList): () => Empty, Vec<Listed<mcp::ResourceTemplate>> => ResourceTemplates);
exchange!(Subscribe(ResourcesSubscribe): mcp::SubscribeRequestParams => Subscribe, () => Empty);
exchange!(Unsubscribe(ResourcesUnsubscribe): mcp::UnsubscribeRequestParams => Unsubscribe, () => Empty);
exchange!(Listen(SubscriptionsListen): mcp::SubscriptionFilter => Listen, () => Empty);
exchange!(Complete(CompletionComplete): mcp::CompleteRequestParams => Complete, mcp::CompleteResult => Completion);
exchange!(SetLevel(LoggingSetLevel): mcp::SetLevelRequestParams => SetLevel, () => Empty);
exchange!(ListInterceptors(InterceptorsList): () => Empty, serde_json::Value => Interceptors);
exchange!(CreateMessage(SamplingCreateMessage): mcp::CreateMessageRequestParams => CreateMessage, mcp::CreateMessageResult => CreatedMessage);
exchange!(Elicit(ElicitationCreate): mcp::ElicitRequestParams => Elicit, mcp::ElicitResult => Elicited);
exchange!(ListRoots(RootsList): () => Empty, mcp::ListRootsResult => Roots);
exchange!(LogMessage(LoggingMessage): mcp::LoggingMessageNotificationParam => Log, () => Empty);
exchange!(Progress(Progress): mcp::ProgressNotificationParam => Progress, () => Empty);

/// Runs `params` through `pipeline` around `send`, which makes the request (to the upstream,
/// or whatever answers it) with the parameters as the request phase left them.
pub(crate) async fn through_pipeline<E: Exchange>(
    pipeline: &Pipeline,
    params: E::Params,
    ctx: &mut CallContext,
    send: impl AsyncFnOnce(E::Params, &mut CallContext) -> Result<E::Output, GatewayError>,
) -> Result<E::Output, GatewayError> {
    if pipeline.is_empty() {
        return send(params, ctx).await;
    }
    match request_phase::<E>(pipeline, params, ctx).await? {
        Requested::Send(params) => {
            let output = send(params, ctx).await?;
            response_phase::<E>(pipeline, output, ctx).await
        }
        Requested::Answered(output) => Ok(output),
    }
}

/// What the request phase made of a request.
pub(crate) enum Requested<E: Exchange> {
    /// Send it, as the interceptors left it.
    Send(E::Params),
    /// An interceptor answered it in the upstream's place.
    Answered(E::Output),
}

/// The request phase alone (for requests sent together, each passing its own phases).
pub(crate) async fn request_phase<E: Exchange>(
    pipeline: &Pipeline,
    params: E::Params,
    ctx: &mut CallContext,
) -> Result<Requested<E>, GatewayError> {
    if pipeline.is_empty() {
        return Ok(Requested::Send(params));
    }
    let changed = GatewayError::MessageChanged { event: E::EVENT, phase: Phase::Request };
    match pipeline.request(E::EVENT, E::request(params), ctx).await {
        Ok(message) => E::params(message).map(Requested::Send).ok_or(changed),
        Err(Stopped::Answered(message)) => {
            E::output(*message).map(Requested::Answered).ok_or(changed)
        }
        Err(Stopped::Refused(refusal)) => Err(GatewayError::Refused(refusal)),
    }
}

/// The response phase alone.
pub(crate) async fn response_phase<E: Exchange>(
    pipeline: &Pipeline,
    output: E::Output,
    ctx: &mut CallContext,
) -> Result<E::Output, GatewayError> {
    if pipeline.is_empty() {
        return Ok(output);
    }
    match pipeline.response(E::EVENT, E::response(output), ctx).await {
        Ok(message) => E::output(message)
            .ok_or(GatewayError::MessageChanged { event: E::EVENT, phase: Phase::Response }),
        Err(refusal) => Err(GatewayError::Refused(refusal)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trips<E: Exchange>(params: E::Params, output: E::Output)
    where
        E::Params: Clone + PartialEq + std::fmt::Debug,
        E::Output: Clone + PartialEq + std::fmt::Debug,
    {
        assert_eq!(E::params(E::request(params.clone())), Some(params), "{}", E::EVENT);
        assert_eq!(E::output(E::response(output.clone())), Some(output), "{}", E::EVENT);
    }

    #[test]
    fn every_exchange_reads_back_what_it_wrote_and_nothing_else() {
        round_trips::<CallTool>(
            mcp::CallToolRequestParams::new("fx__echo"),
            mcp::CallToolResult::success(vec![]),
        );
        round_trips::<ListResourceTemplates>((), vec![]);
        round_trips::<Subscribe>(mcp::SubscribeRequestParams::new("file:///a"), ());
        round_trips::<ListRoots>((), mcp::ListRootsResult::default());
        assert_eq!(CallTool::params(Message::Empty), None);
        assert_eq!(Subscribe::output(Message::Roots(mcp::ListRootsResult::default())), None);
        assert_eq!(ListRoots::params(Message::Tools(vec![])), None);
    }
}
