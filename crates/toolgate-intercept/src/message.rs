//! What passes through the pipeline: the interception event a message belongs to, and the
//! message itself, in names the caller sees (tool names are exposed names; the [`Target`]
//! in the context says which upstream and original name they stand for).
//!
//! [`Target`]: crate::Target

#![allow(deprecated)] // sampling, roots and logging are deprecated in 2026-07-28 (SEP-2577)

use toolgate_core::mcp;

/// The SEP-2624 interception events toolgate raises: one per MCP request method that reaches
/// an upstream or is answered on an upstream's behalf. Requests an upstream sends back
/// (sampling, elicitation, roots), directly or as 2026-07-28 `input_required` rounds, are
/// events too, and so are the notifications by which an upstream's content reaches a client
/// (log messages, progress): they have a request phase only, in which a refusal drops them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InterceptionEvent {
    /// `tools/list`: the response phase carries the merged tool list.
    ToolsList,
    /// `tools/call`.
    ToolsCall,
    /// `prompts/list`.
    PromptsList,
    /// `prompts/get`.
    PromptsGet,
    /// `resources/list`.
    ResourcesList,
    /// `resources/templates/list`.
    ResourceTemplatesList,
    /// `resources/read`.
    ResourcesRead,
    /// `resources/subscribe`, and each resource a `subscriptions/listen` stream names.
    ResourcesSubscribe,
    /// `resources/unsubscribe`.
    ResourcesUnsubscribe,
    /// `subscriptions/listen` (2026-07-28): a client opens its notification stream.
    SubscriptionsListen,
    /// `completion/complete`.
    CompletionComplete,
    /// `logging/setLevel`.
    LoggingSetLevel,
    /// `interceptors/list`: the configured chain, answered by toolgate itself.
    InterceptorsList,
    /// `sampling/createMessage`, from an upstream to the client that made the call.
    SamplingCreateMessage,
    /// `elicitation/create`, from an upstream to the client that made the call.
    ElicitationCreate,
    /// `roots/list`, from an upstream to the client that made the call.
    RootsList,
    /// `notifications/message`: an upstream's log message, on its way to the client of the
    /// call it belongs to (or, when it belongs to none, to the sessions that asked for logs).
    LoggingMessage,
    /// `notifications/progress`: an upstream's progress on a call, on its way to the client
    /// that made the call.
    Progress,
}

impl InterceptionEvent {
    /// Every event, in a fixed order.
    pub const ALL: [InterceptionEvent; 18] = [
        InterceptionEvent::ToolsList,
        InterceptionEvent::ToolsCall,
        InterceptionEvent::PromptsList,
        InterceptionEvent::PromptsGet,
        InterceptionEvent::ResourcesList,
        InterceptionEvent::ResourceTemplatesList,
        InterceptionEvent::ResourcesRead,
        InterceptionEvent::ResourcesSubscribe,
        InterceptionEvent::ResourcesUnsubscribe,
        InterceptionEvent::SubscriptionsListen,
        InterceptionEvent::CompletionComplete,
        InterceptionEvent::LoggingSetLevel,
        InterceptionEvent::InterceptorsList,
        InterceptionEvent::SamplingCreateMessage,
        InterceptionEvent::ElicitationCreate,
        InterceptionEvent::RootsList,
        InterceptionEvent::LoggingMessage,
        InterceptionEvent::Progress,
    ];

    /// The method name.
    pub fn as_str(self) -> &'static str {
        match self {
            InterceptionEvent::ToolsList => "tools/list",
            InterceptionEvent::ToolsCall => "tools/call",
            InterceptionEvent::PromptsList => "prompts/list",
            InterceptionEvent::PromptsGet => "prompts/get",
            InterceptionEvent::ResourcesList => "resources/list",
            InterceptionEvent::ResourceTemplatesList => "resources/templates/list",
            InterceptionEvent::ResourcesRead => "resources/read",
            InterceptionEvent::ResourcesSubscribe => "resources/subscribe",
            InterceptionEvent::ResourcesUnsubscribe => "resources/unsubscribe",
            InterceptionEvent::SubscriptionsListen => "subscriptions/listen",
            InterceptionEvent::CompletionComplete => "completion/complete",
            InterceptionEvent::LoggingSetLevel => "logging/setLevel",
            InterceptionEvent::InterceptorsList => "interceptors/list",
            InterceptionEvent::SamplingCreateMessage => "sampling/createMessage",
            InterceptionEvent::ElicitationCreate => "elicitation/create",
            InterceptionEvent::RootsList => "roots/list",
            InterceptionEvent::LoggingMessage => "notifications/message",
            InterceptionEvent::Progress => "notifications/progress",
        }
    }

    /// The event of the method `name`, if toolgate raises one for it.
    pub fn from_method(name: &str) -> Option<InterceptionEvent> {
        InterceptionEvent::ALL.into_iter().find(|event| event.as_str() == name)
    }

    /// Whether the message goes from an upstream to the downstream client (the other way
    /// round from the rest).
    pub fn is_server_to_client(self) -> bool {
        matches!(
            self,
            InterceptionEvent::SamplingCreateMessage
                | InterceptionEvent::ElicitationCreate
                | InterceptionEvent::RootsList
                | InterceptionEvent::LoggingMessage
                | InterceptionEvent::Progress
        )
    }

    /// Whether it is a notification: a request phase only, nothing to answer; refusing it
    /// drops it.
    pub fn is_notification(self) -> bool {
        matches!(self, InterceptionEvent::LoggingMessage | InterceptionEvent::Progress)
    }
}

impl std::fmt::Display for InterceptionEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One entry of a list a caller is shown, with the upstream it comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed<T> {
    /// The upstream's configured name.
    pub server: String,
    /// The name as the upstream knows it.
    pub original: String,
    /// The entry as the caller sees it (exposed name).
    pub item: T,
}

/// One message at one hook.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Message {
    /// A `tools/call` request.
    CallTool(mcp::CallToolRequestParams),
    /// Its result.
    ToolResult(mcp::CallToolResult),
    /// The tools a caller is shown.
    Tools(Vec<Listed<mcp::Tool>>),
    /// A `prompts/get` request.
    GetPrompt(mcp::GetPromptRequestParams),
    /// Its result.
    Prompt(mcp::GetPromptResult),
    /// The prompts a caller is shown.
    Prompts(Vec<Listed<mcp::Prompt>>),
    /// A `resources/read` request.
    ReadResource(mcp::ReadResourceRequestParams),
    /// Its result.
    Resource(mcp::ReadResourceResult),
    /// The resources a caller is shown (`original`: the URI as the upstream lists it).
    Resources(Vec<Listed<mcp::Resource>>),
    /// The resource templates a caller is shown (`original`: the template as the upstream
    /// lists it).
    ResourceTemplates(Vec<Listed<mcp::ResourceTemplate>>),
    /// A `resources/subscribe` request (exposed URI).
    Subscribe(mcp::SubscribeRequestParams),
    /// A `resources/unsubscribe` request (exposed URI).
    Unsubscribe(mcp::UnsubscribeRequestParams),
    /// A `subscriptions/listen` request: what the client wants to hear about.
    Listen(mcp::SubscriptionFilter),
    /// A `completion/complete` request (exposed prompt name or URI).
    Complete(mcp::CompleteRequestParams),
    /// Its result.
    Completion(mcp::CompleteResult),
    /// A `logging/setLevel` request.
    SetLevel(mcp::SetLevelRequestParams),
    /// A `sampling/createMessage` request from an upstream.
    CreateMessage(mcp::CreateMessageRequestParams),
    /// The client's answer to it.
    CreatedMessage(mcp::CreateMessageResult),
    /// An `elicitation/create` request from an upstream.
    Elicit(mcp::ElicitRequestParams),
    /// The client's answer to it.
    Elicited(mcp::ElicitResult),
    /// The client's answer to `roots/list`.
    Roots(mcp::ListRootsResult),
    /// The configured interceptors (`interceptors/list`), as SEP-2624 JSON.
    Interceptors(serde_json::Value),
    /// An upstream's log message (`notifications/message`).
    Log(mcp::LoggingMessageNotificationParam),
    /// An upstream's progress on a call (`notifications/progress`), with the upstream's token.
    Progress(mcp::ProgressNotificationParam),
    /// A request or an answer without content (a list request, an empty result).
    Empty,
}
