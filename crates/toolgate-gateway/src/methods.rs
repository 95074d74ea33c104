//! Every MCP request and notification a downstream client or an upstream can send through
//! toolgate, and what toolgate does with it: each either passes the pipeline as an
//! interception event or is exempt, for a stated reason. `docs/interceptors.md` shows this
//! table, and a test keeps it complete against rmcp's request and notification types, so that
//! a method a future rmcp adds cannot slip past the pipeline unnoticed.

use toolgate_intercept::InterceptionEvent;

/// Who sends a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sender {
    /// A downstream client, to toolgate.
    Client,
    /// An upstream server, to the client whose call it is serving (through toolgate).
    Upstream,
}

/// What toolgate does with a request method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handling {
    /// It passes the pipeline as this event: the request phase sees `request`, the response
    /// phase sees `response`.
    Intercepted {
        /// Its interception event.
        event: InterceptionEvent,
        /// What the request phase sees.
        request: &'static str,
        /// What the response phase sees.
        response: &'static str,
    },
    /// It does not pass the pipeline, for this reason (it reaches no upstream, or nothing
    /// reaches the client).
    Exempt(&'static str),
}

/// One request method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Method {
    /// The JSON-RPC method, or a description for a family of them.
    pub name: &'static str,
    /// Who sends it.
    pub sender: Sender,
    /// What toolgate does with it.
    pub handling: Handling,
}

const fn intercepted(
    name: &'static str,
    sender: Sender,
    event: InterceptionEvent,
    request: &'static str,
    response: &'static str,
) -> Method {
    Method { name, sender, handling: Handling::Intercepted { event, request, response } }
}

const fn exempt(name: &'static str, sender: Sender, reason: &'static str) -> Method {
    Method { name, sender, handling: Handling::Exempt(reason) }
}

/// The methods other than the named ones: custom requests.
pub const OTHER_CUSTOM: &str = "any other method";

/// The notifications other than the named ones: custom notifications.
pub const OTHER_NOTIFICATION: &str = "any other notification";

impl Method {
    /// Whether it is a notification (nothing answers it) rather than a request.
    pub fn is_notification(&self) -> bool {
        self.name.starts_with("notifications/") || self.name == OTHER_NOTIFICATION
    }
}

/// The notifications a list changed: what toolgate does about them.
const LIST_CHANGED: &str = "carries nothing: toolgate lists again on its own, and a client's \
                            next list passes the pipeline";

/// Not offered by toolgate (its capabilities do not announce them).
const NOT_OFFERED: &str = "not offered by toolgate: answered -32601 (method not found), and \
                           nothing reaches an upstream";

/// Every request method, by who sends it.
pub const METHODS: &[Method] = {
    use InterceptionEvent as E;
    use Sender::{Client, Upstream};
    &[
        exempt(
            "initialize",
            Client,
            "the handshake with toolgate itself, answered from its own capabilities; each \
             upstream has its own handshake with toolgate",
        ),
        exempt("ping", Client, "a liveness check, answered by toolgate itself"),
        exempt(
            "server/discover",
            Client,
            "2026-07-28 discovery of toolgate itself, answered from its own capabilities",
        ),
        intercepted("tools/list", Client, E::ToolsList, "nothing", "the merged tools"),
        intercepted("tools/call", Client, E::ToolsCall, "the call", "its result"),
        intercepted("prompts/list", Client, E::PromptsList, "nothing", "the merged prompts"),
        intercepted("prompts/get", Client, E::PromptsGet, "the request", "the prompt"),
        intercepted("resources/list", Client, E::ResourcesList, "nothing", "the merged resources"),
        intercepted(
            "resources/templates/list",
            Client,
            E::ResourceTemplatesList,
            "nothing",
            "the merged templates",
        ),
        intercepted("resources/read", Client, E::ResourcesRead, "the request", "the contents"),
        intercepted("resources/subscribe", Client, E::ResourcesSubscribe, "the URI", "nothing"),
        intercepted("resources/unsubscribe", Client, E::ResourcesUnsubscribe, "the URI", "nothing"),
        intercepted(
            "subscriptions/listen",
            Client,
            E::SubscriptionsListen,
            "the filter (each resource in it also passes resources/subscribe)",
            "nothing",
        ),
        intercepted(
            "completion/complete",
            Client,
            E::CompletionComplete,
            "the request",
            "the completions",
        ),
        intercepted("logging/setLevel", Client, E::LoggingSetLevel, "the level", "nothing"),
        exempt("tasks/get", Client, NOT_OFFERED),
        exempt("tasks/update", Client, NOT_OFFERED),
        exempt("tasks/cancel", Client, NOT_OFFERED),
        exempt("skills/list", Client, NOT_OFFERED),
        exempt("skills/get", Client, NOT_OFFERED),
        exempt("resources/directory/read", Client, NOT_OFFERED),
        intercepted(
            "interceptors/list",
            Client,
            E::InterceptorsList,
            "nothing",
            "the interceptors, as SEP-2624 descriptors",
        ),
        exempt(
            OTHER_CUSTOM,
            Client,
            "answered -32601 (method not found) by toolgate; nothing reaches an upstream",
        ),
        exempt("notifications/initialized", Client, "the end of the handshake with toolgate"),
        exempt(
            "notifications/cancelled",
            Client,
            "cancels the client's own request: toolgate cancels what it asked upstreams for it, \
             and they are sent notifications/cancelled of their own",
        ),
        exempt(
            "notifications/progress",
            Client,
            "ignored: toolgate passes no client's progress on to an upstream",
        ),
        exempt(
            "notifications/roots/list_changed",
            Client,
            "ignored: toolgate asks a client for its roots only for an upstream, afresh each \
             time, through roots/list",
        ),
        exempt(OTHER_NOTIFICATION, Client, "ignored; nothing reaches an upstream"),
        exempt("ping", Upstream, "answered by toolgate's client itself"),
        intercepted(
            "sampling/createMessage",
            Upstream,
            E::SamplingCreateMessage,
            "the request, with the call it belongs to as its target",
            "the client's answer",
        ),
        intercepted(
            "elicitation/create",
            Upstream,
            E::ElicitationCreate,
            "the request, with the call it belongs to as its target",
            "the client's answer",
        ),
        intercepted(
            "roots/list",
            Upstream,
            E::RootsList,
            "nothing, with the call it belongs to as its target",
            "the client's roots",
        ),
        exempt(
            OTHER_CUSTOM,
            Upstream,
            "answered -32601 (method not found) by toolgate; nothing reaches the client",
        ),
        intercepted(
            "notifications/message",
            Upstream,
            E::LoggingMessage,
            "the log message, with the call it is about as its target (or its server alone)",
            "nothing (a refusal drops the message)",
        ),
        intercepted(
            "notifications/progress",
            Upstream,
            E::Progress,
            "the progress, with its call as its target",
            "nothing (a refusal drops the progress)",
        ),
        exempt(
            "notifications/cancelled",
            Upstream,
            "withdraws a question the upstream asked: toolgate stops waiting for the client's \
             answer",
        ),
        exempt(
            "notifications/resources/updated",
            Upstream,
            "carries a URI only, to the sessions and listen streams whose resources/subscribe \
             passed the pipeline",
        ),
        exempt("notifications/resources/list_changed", Upstream, LIST_CHANGED),
        exempt("notifications/tools/list_changed", Upstream, LIST_CHANGED),
        exempt("notifications/prompts/list_changed", Upstream, LIST_CHANGED),
        exempt(
            "notifications/subscriptions/acknowledged",
            Upstream,
            "2026-07-28: acknowledges toolgate's own subscriptions/listen stream to the \
             upstream, and ends there",
        ),
        exempt(
            "notifications/tasks",
            Upstream,
            "dropped: toolgate does not offer tasks, so no client has one",
        ),
        exempt(OTHER_NOTIFICATION, Upstream, "dropped: nothing reaches the client"),
    ]
};

/// The table as Markdown, as `docs/interceptors.md` shows it.
pub fn markdown_table() -> String {
    let mut table = String::from(
        "| sent by | method | event | request phase sees | response phase sees |\n\
         |---|---|---|---|---|\n",
    );
    for method in METHODS {
        let sender = match method.sender {
            Sender::Client => "client",
            Sender::Upstream => "upstream",
        };
        let name = if method.name == OTHER_CUSTOM || method.name == OTHER_NOTIFICATION {
            method.name.to_owned()
        } else {
            format!("`{}`", method.name)
        };
        let row = match method.handling {
            Handling::Intercepted { event, request, response } => {
                format!("| {sender} | {name} | `{event}` | {request} | {response} |\n")
            }
            Handling::Exempt(reason) => format!("| {sender} | {name} | exempt: {reason} | | |\n"),
        };
        table.push_str(&row);
    }
    table
}

#[cfg(test)]
mod tests;
