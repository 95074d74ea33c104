//! What passes through the pipeline: the interception event a message belongs to, and the
//! message itself, in names the caller sees (tool names are exposed names; the [`Target`]
//! in the context says which upstream and original name they stand for).
//!
//! [`Target`]: crate::Target

use toolgate_core::mcp;

/// The SEP-2624 interception events toolgate raises.
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
    /// `resources/read`.
    ResourcesRead,
}

impl InterceptionEvent {
    /// Every event, in a fixed order.
    pub const ALL: [InterceptionEvent; 6] = [
        InterceptionEvent::ToolsList,
        InterceptionEvent::ToolsCall,
        InterceptionEvent::PromptsList,
        InterceptionEvent::PromptsGet,
        InterceptionEvent::ResourcesList,
        InterceptionEvent::ResourcesRead,
    ];

    /// The method name.
    pub fn as_str(self) -> &'static str {
        match self {
            InterceptionEvent::ToolsList => "tools/list",
            InterceptionEvent::ToolsCall => "tools/call",
            InterceptionEvent::PromptsList => "prompts/list",
            InterceptionEvent::PromptsGet => "prompts/get",
            InterceptionEvent::ResourcesList => "resources/list",
            InterceptionEvent::ResourcesRead => "resources/read",
        }
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
    /// The resources a caller is shown.
    Resources(Vec<mcp::Resource>),
    /// A request without parameters (a list request).
    Empty,
}
