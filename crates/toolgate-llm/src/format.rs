//! An MCP tool result (`CallToolResult`) in the shape each LLM API takes the result of a tool
//! call: [`render`] with a [`ResultFormat`] and the call's identity ([`ToolCall`]) gives the
//! JSON to put in the next request. This module doc is the reference of the mapping;
//! `docs/result-formats.md` shows it with examples.
//!
//! ```
//! use toolgate_core::mcp;
//! use toolgate_llm::format::{ResultFormat, ToolCall, render};
//!
//! let result = mcp::CallToolResult::success(vec![mcp::ContentBlock::text("42")]);
//! let call = ToolCall { id: "toolu_01", name: "answer", ..ToolCall::default() };
//! let block = render(ResultFormat::AnthropicMessages, &result, &call);
//! assert_eq!(block["content"][0]["text"], "42");
//! ```
//!
//! # Formats
//!
//! | name | what [`render`] returns | `isError` |
//! |---|---|---|
//! | `openai_chat` | Chat Completions message `{"role": "tool", "tool_call_id": id, "content": text}` | first text starts `Error: ` |
//! | `function_call_output` | Responses input item `{"type": "function_call_output", "call_id": id, "output": text or [parts]}` | first text starts `Error: ` |
//! | `mcp_call` | Responses item `{"type": "mcp_call", "id", "server_label", "name", "arguments", "output", "error", "status"}` | `output: null`, `error: {"type": "mcp_tool_execution_error", "content": <the MCP content>}`, `status: "failed"` |
//! | `web_search_call` | Responses item `{"type": "web_search_call", "id", "status", "action": {"type": "search", "query", "queries", "sources"}}` | `status: "failed"` |
//! | `file_search_call` | Responses item `{"type": "file_search_call", "id", "queries", "status", "results"}` | `status: "failed"`, `results: null` |
//! | `code_interpreter_call` | Responses item `{"type": "code_interpreter_call", "id", "code", "container_id", "outputs", "status"}` | `status: "failed"` (the logs keep the error text) |
//! | `anthropic` | Messages content block `{"type": "tool_result", "tool_use_id": id, "content": [blocks], "is_error"}` | `is_error: true` |
//! | `gemini` | Part `{"functionResponse": {"id", "name", "response", "parts"}}` | `response: {"error": text}` |
//!
//! `id` is [`ToolCall::id`] (the model's call id; Gemini's `id` is left out when it is empty),
//! `name` [`ToolCall::name`], `server_label` [`ToolCall::server_label`], `arguments` the compact
//! JSON of [`ToolCall::arguments`] (`{}` when there are none).
//!
//! # Content
//!
//! | MCP content | `openai_chat`, `mcp_call` | `function_call_output` | `anthropic` | `gemini` |
//! |---|---|---|---|---|
//! | text | text | `input_text` (or the string) | `text` block | in `response.output` |
//! | image | note | `input_image` (`image_url`: `data:` URL) for PNG, JPEG, WebP, GIF; else note | `image` block (base64 `source`) for JPEG, PNG, GIF, WebP; else note | `parts[].inlineData` for PNG, JPEG, WebP; else note |
//! | audio | note | note | note | note |
//! | embedded text resource | `[resource <uri> (<mime>)]` line, then its text | same, as `input_text` | same, as `text` block | same, in `response.output` |
//! | embedded blob resource | note | image types as images; PDF, DOCX, PPTX, XLSX, CSV, plain text and Markdown as `input_file` (`filename`: the URI's last segment, `file_data`: `data:` URL); else note | image types as images; PDF as a `document` block (`title`: the URI); else note | PNG, JPEG, WebP, PDF in `parts[].inlineData`; else note |
//! | resource link | `[resource link: <uri> "<title or name>", <mime>, <size> bytes]` and its description | same | same | same |
//!
//! A **note** is text put where the thing could not go, saying what was left out and why:
//! `[left out: image (image/png, 2.0 KiB); a Chat Completions tool message carries only text]`
//! (a resource's note names its URI). Chat Completions has no image in a `tool` message: an
//! agent that must show the model an image sends it in a user message after the tool message.
//! No API here takes audio in a tool result.
//!
//! Blocks whose `annotations.audience` is set and leaves out `assistant` are meant for the user
//! only and are not given to the model (in every format; `mcp_call`'s `error.content` is the
//! server's content as it is). A block of a kind this module does not know becomes its JSON as
//! text. The text of several pieces is joined with newlines; `openai_chat`'s `content` is always
//! one string (the API also takes an array of text parts, but many OpenAI-compatible servers
//! take only a string, and a string loses nothing but the block boundaries).
//! `function_call_output`'s `output` is a string when everything in it is text, else an array
//! of `input_text`, `input_image` and `input_file` parts in the content's order.
//!
//! # `structuredContent`
//!
//! The MCP spec asks a server that returns `structuredContent` to send its serialized JSON in a
//! text block too, so the text blocks are taken to stand for it: the text formats use the text,
//! and use the compact JSON of `structuredContent` (as the first text) only when the result has
//! no text block for the model. `gemini` gives the data itself: `response` is
//! `structuredContent` when it is an object, `{"output": <structuredContent>}` when it is
//! another value, else `{"output": "<text>"}`; the text (and the notes) are then not repeated.
//! For an error, `response` is `{"error": "<text>"}` (the API reference names the keys `output`
//! and `error`).
//!
//! # Built-in tool items
//!
//! `web_search_call`, `file_search_call` and `code_interpreter_call` are the items of OpenAI's
//! own tools, for an MCP tool that does the same job (a server's `response_format` says which
//! tools; see `toolgate-config`). Their fields come from the **data**: `structuredContent`, or
//! else the first text block that is a JSON object or array.
//!
//! | item field | from |
//! |---|---|
//! | `web_search_call.status` | `failed` when `isError`, else `completed` |
//! | `web_search_call.action.query` | the first query: argument `queries` (strings), else argument `query` or `q`, else data `query`; `""` when none |
//! | `web_search_call.action.queries` | all of them, when there are several |
//! | `web_search_call.action.sources` | `{"type": "url", "url"}` for each item of the data (the data itself when an array, else its `results` or `sources`): the item when a string, else its `url`, `link`, `href` or `uri`; then the `http(s)` URIs of resource links and embedded resources; without data, the `http(s)` URLs in the text blocks. Duplicates are dropped. |
//! | `file_search_call.queries` | as `web_search_call`'s queries |
//! | `file_search_call.status` | `failed` when `isError`, else `completed` |
//! | `file_search_call.results` | `null` when `isError`; else each item of the data (itself when an array, else its `results`, `files` or `matches`): `file_id` ← `file_id`, `fileId`, `id`, `uri` or `url`; `filename` ← `filename`, `file_name`, `name`, `title` or `path`; `score` ← `score` or `relevance` (numbers); `text` ← `text`, `content`, `snippet` or `chunk` (the item's JSON when none); `attributes` ← `attributes` or `metadata` (string, number and boolean values, at most 16); a string item is `{"text"}`. Without such a list: one result per content piece (a text block `{"text"}`; an embedded text resource `{"file_id": uri, "filename", "text"}`; a resource link `{"file_id": uri, "filename": name}`; media a note). |
//! | `code_interpreter_call.code` | the `code` argument, else `null` |
//! | `code_interpreter_call.container_id` | data `container_id`, else [`ToolCall::server_label`] |
//! | `code_interpreter_call.outputs` | data `outputs` items of the API's shape (`{"type": "logs", "logs"}`, `{"type": "image", "url"}`) when there are any; else one `logs` of data `stdout`, `stderr`, `logs` and `output` joined (else the text of the content, with notes), then an `image` (`data:` URL) per image |
//! | `code_interpreter_call.status` | `failed` when `isError`, else `completed` |
//!
//! These items carry no result text for the model (the API has no field for it): they are what
//! a client is shown of the call. An agent that also wants the model to read the result gives
//! it the `function_call_output` as well.

mod anthropic;
mod builtin;
mod gemini;
mod openai;

use serde_json::{Map, Value};
use toolgate_core::mcp;
pub use toolgate_core::result_format::{ResultFormat, UnknownFormat};

/// Who asked for the result: what the formats need besides the result itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct ToolCall<'a> {
    /// The model's id of the call (`call_...`, `toolu_...`): OpenAI's `call_id` and `id`,
    /// Anthropic's `tool_use_id`, Gemini's `id`.
    pub id: &'a str,
    /// The tool's name as the model called it (`mcp_call.name`, Gemini's `name`).
    pub name: &'a str,
    /// The server's label (`mcp_call.server_label`; the default `container_id` of a
    /// `code_interpreter_call`).
    pub server_label: &'a str,
    /// The call's arguments (`mcp_call.arguments`; queries and code for the built-in items).
    pub arguments: Option<&'a Map<String, Value>>,
}

impl ToolCall<'_> {
    /// The arguments as compact JSON (`{}` when there are none).
    fn arguments_json(&self) -> String {
        self.arguments
            .and_then(|arguments| serde_json::to_string(arguments).ok())
            .unwrap_or_else(|| "{}".to_owned())
    }
}

/// `result`, answering `call`, in `format` (see the module doc for the mapping).
pub fn render(format: ResultFormat, result: &mcp::CallToolResult, call: &ToolCall<'_>) -> Value {
    match format {
        ResultFormat::OpenAiChat => openai::chat(result, call),
        ResultFormat::FunctionCallOutput => openai::function_call_output(result, call),
        ResultFormat::McpCall => openai::mcp_call(result, call),
        ResultFormat::WebSearchCall => builtin::web_search_call(result, call),
        ResultFormat::FileSearchCall => builtin::file_search_call(result, call),
        ResultFormat::CodeInterpreterCall => builtin::code_interpreter_call(result, call),
        ResultFormat::AnthropicMessages => anthropic::tool_result(result, call),
        ResultFormat::Gemini => gemini::function_response(result, call),
    }
}

#[cfg(test)]
mod tests;
