//! Every MCP request method a downstream client or an upstream can send through toolgate, and
//! what toolgate does with it: each either passes the pipeline as an interception event or is
//! exempt, for a stated reason. `docs/interceptors.md` shows this table, and a test keeps it
//! complete against rmcp's request types, so that a method a future rmcp adds cannot slip past
//! the pipeline unnoticed.

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
        let name = if method.name == OTHER_CUSTOM {
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
