//! The shape a tool result takes for an LLM API: the names shared by the config (a server's
//! `response_format`, which Responses item each tool's results become) and `toolgate-llm`
//! (which builds each shape; its `format` module is the reference of the field mapping).

use std::fmt;
use std::str::FromStr;

/// One LLM API's shape of a tool call's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResultFormat {
    /// OpenAI Chat Completions: the `{"role": "tool"}` message.
    OpenAiChat,
    /// OpenAI Responses: the `function_call_output` input item.
    FunctionCallOutput,
    /// OpenAI Responses: the `mcp_call` item.
    McpCall,
    /// OpenAI Responses: the `web_search_call` item.
    WebSearchCall,
    /// OpenAI Responses: the `file_search_call` item.
    FileSearchCall,
    /// OpenAI Responses: the `code_interpreter_call` item.
    CodeInterpreterCall,
    /// Anthropic Messages: the `tool_result` content block.
    AnthropicMessages,
    /// Gemini: the `functionResponse` part.
    Gemini,
}

impl ResultFormat {
    /// Every format, in the order messages list them.
    pub const ALL: [ResultFormat; 8] = [
        ResultFormat::OpenAiChat,
        ResultFormat::FunctionCallOutput,
        ResultFormat::McpCall,
        ResultFormat::WebSearchCall,
        ResultFormat::FileSearchCall,
        ResultFormat::CodeInterpreterCall,
        ResultFormat::AnthropicMessages,
        ResultFormat::Gemini,
    ];

    /// The formats that are OpenAI Responses items: what a server's `response_format` may name.
    pub const RESPONSES_ITEMS: [ResultFormat; 5] = [
        ResultFormat::FunctionCallOutput,
        ResultFormat::McpCall,
        ResultFormat::WebSearchCall,
        ResultFormat::FileSearchCall,
        ResultFormat::CodeInterpreterCall,
    ];

    /// The spelling in config files and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            ResultFormat::OpenAiChat => "openai_chat",
            ResultFormat::FunctionCallOutput => "function_call_output",
            ResultFormat::McpCall => "mcp_call",
            ResultFormat::WebSearchCall => "web_search_call",
            ResultFormat::FileSearchCall => "file_search_call",
            ResultFormat::CodeInterpreterCall => "code_interpreter_call",
            ResultFormat::AnthropicMessages => "anthropic",
            ResultFormat::Gemini => "gemini",
        }
    }

    /// Whether this is an OpenAI Responses item (see [`ResultFormat::RESPONSES_ITEMS`]).
    pub fn is_responses_item(self) -> bool {
        ResultFormat::RESPONSES_ITEMS.contains(&self)
    }

    /// `names` spelled out for a message: `a, b, c`.
    pub fn list(names: &[ResultFormat]) -> String {
        names.iter().map(|format| format.as_str()).collect::<Vec<_>>().join(", ")
    }
}

impl fmt::Display for ResultFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is no [`ResultFormat`]; its message lists the known names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown format {name:?} (known: {known})", known = ResultFormat::list(&ResultFormat::ALL))]
pub struct UnknownFormat {
    /// The name as given.
    pub name: String,
}

impl FromStr for ResultFormat {
    type Err = UnknownFormat;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        ResultFormat::ALL
            .into_iter()
            .find(|format| format.as_str() == name)
            .ok_or_else(|| UnknownFormat { name: name.to_owned() })
    }
}

#[cfg(test)]
mod tests {
    use super::ResultFormat;

    #[test]
    fn names_round_trip_and_are_distinct() {
        for format in ResultFormat::ALL {
            assert_eq!(format.as_str().parse::<ResultFormat>(), Ok(format));
            assert_eq!(format.to_string(), format.as_str());
        }
        let mut names: Vec<&str> = ResultFormat::ALL.iter().map(|f| f.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ResultFormat::ALL.len());
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        let error = "Gemini".parse::<ResultFormat>().expect_err("names are case-sensitive");
        assert_eq!(
            error.to_string(),
            "unknown format \"Gemini\" (known: openai_chat, function_call_output, mcp_call, \
             web_search_call, file_search_call, code_interpreter_call, anthropic, gemini)"
        );
    }

    #[test]
    fn responses_items_are_the_openai_responses_shapes() {
        let items: Vec<ResultFormat> =
            ResultFormat::ALL.into_iter().filter(|f| f.is_responses_item()).collect();
        assert_eq!(items, ResultFormat::RESPONSES_ITEMS);
        assert!(!ResultFormat::OpenAiChat.is_responses_item());
        assert!(!ResultFormat::AnthropicMessages.is_responses_item());
        assert!(!ResultFormat::Gemini.is_responses_item());
    }
}
