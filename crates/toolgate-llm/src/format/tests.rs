//! Golden tests: every format over the same MCP results (text, images, audio, embedded
//! resources, resource links, errors, `structuredContent`, content for the user only), plus the
//! results the built-in items read their fields from; one snapshot per format
//! (`snapshots/toolgate_llm__format__tests__<format>.snap`, reviewed with `cargo insta`).
//! `tests/shapes.rs` checks the same snapshots against the providers' own SDK types.

use serde_json::{Map, Value, json};
use toolgate_core::mcp;

use super::{ResultFormat, ToolCall, render};

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
/// `%PDF-1.4\n%%EOF\n`
const PDF: &str = "JVBERi0xLjQKJSVFT0YK";
/// A few bytes said to be WAV audio.
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

/// A result as a server sends it.
fn result(wire: Value) -> mcp::CallToolResult {
    serde_json::from_value(wire).expect("a valid CallToolResult")
}

/// The results every format is shown with, by name.
fn common() -> Vec<(&'static str, mcp::CallToolResult)> {
    vec![
        ("text", result(json!({"content": [{"type": "text", "text": "It is 14:05 in Paris."}]}))),
        (
            "two_texts",
            result(json!({"content": [
                {"type": "text", "text": "first line"},
                {"type": "text", "text": "second line"},
            ]})),
        ),
        ("empty", result(json!({"content": []}))),
        (
            "image",
            result(json!({"content": [
                {"type": "text", "text": "The chart:"},
                {"type": "image", "data": PNG, "mimeType": "image/png"},
            ]})),
        ),
        (
            "unsupported_media",
            result(json!({"content": [
                {"type": "image", "data": "PHN2Zy8+", "mimeType": "image/svg+xml"},
                {"type": "audio", "data": WAV, "mimeType": "audio/wav"},
            ]})),
        ),
        (
            "embedded_resources",
            result(json!({"content": [
                {"type": "resource", "resource": {
                    "uri": "file:///srv/notes.md", "mimeType": "text/markdown", "text": "# Notes\nship it"}},
                {"type": "resource", "resource": {
                    "uri": "file:///srv/report.pdf", "mimeType": "application/pdf", "blob": PDF}},
                {"type": "resource", "resource": {
                    "uri": "file:///srv/logo.png", "mimeType": "image/png", "blob": PNG}},
                {"type": "resource", "resource": {
                    "uri": "file:///srv/archive.zip", "blob": "UEsFBgAAAAAAAAAAAAAAAAAAAAAAAA=="}},
            ]})),
        ),
        (
            "resource_link",
            result(json!({"content": [
                {"type": "text", "text": "Found one file."},
                {"type": "resource_link", "uri": "file:///srv/big.log", "name": "big.log",
                 "mimeType": "text/plain", "size": 1048576, "description": "yesterday's log"},
            ]})),
        ),
        (
            "error",
            result(json!({"isError": true, "content": [
                {"type": "text", "text": "no such file: /srv/missing.txt"}]})),
        ),
        (
            "error_with_error_word",
            result(json!({"isError": true, "content": [
                {"type": "text", "text": "Error executing tool read: permission denied"}]})),
        ),
        ("error_without_content", result(json!({"isError": true, "content": []}))),
        (
            "structured_with_text",
            result(json!({
                "content": [{"type": "text", "text": "{\"temperature\":21.5,\"unit\":\"C\"}"}],
                "structuredContent": {"temperature": 21.5, "unit": "C"},
            })),
        ),
        (
            "structured_only",
            result(json!({"content": [], "structuredContent": {"temperature": 21.5, "unit": "C"}})),
        ),
        ("structured_array", result(json!({"content": [], "structuredContent": [1, 2, 3]}))),
        (
            "structured_error",
            result(json!({
                "isError": true,
                "content": [],
                "structuredContent": {"code": "E_QUOTA", "retryAfter": 30},
            })),
        ),
        (
            "for_the_user_only",
            result(json!({"content": [
                {"type": "text", "text": "for the model"},
                {"type": "text", "text": "for the user's eyes", "annotations": {"audience": ["user"]}},
                {"type": "text", "text": "for both", "annotations": {"audience": ["user", "assistant"]}},
            ]})),
        ),
    ]
}

/// Results shaped like what each built-in tool's MCP counterpart returns.
fn specific(format: ResultFormat) -> Vec<(&'static str, mcp::CallToolResult)> {
    match format {
        ResultFormat::WebSearchCall => vec![
            (
                "search_structured",
                result(json!({
                    "content": [{"type": "text", "text": "2 results"}],
                    "structuredContent": {"query": "rust 2024 edition", "results": [
                        {"title": "Rust 2024", "url": "https://blog.rust-lang.org/2025/02/20/Rust-1.85.0/"},
                        {"title": "Edition guide", "link": "https://doc.rust-lang.org/edition-guide/"},
                        {"title": "Again", "url": "https://doc.rust-lang.org/edition-guide/"},
                    ]},
                })),
            ),
            (
                "search_prose",
                result(json!({"content": [{"type": "text", "text":
                    "Title: Rust 2024\nURL: https://blog.rust-lang.org/2025/02/20/Rust-1.85.0/\n\n\
                     Title: Edition guide\nURL: https://doc.rust-lang.org/edition-guide/."}]})),
            ),
            (
                "search_links",
                result(json!({"content": [
                    {"type": "resource_link", "uri": "https://www.rust-lang.org/", "name": "rust-lang.org"},
                    {"type": "resource_link", "uri": "file:///local/only.txt", "name": "only.txt"},
                ]})),
            ),
        ],
        ResultFormat::FileSearchCall => vec![
            (
                "files_structured",
                result(json!({
                    "content": [{"type": "text", "text": "2 matches"}],
                    "structuredContent": {"results": [
                        {"file_id": "file-abc", "filename": "design.md", "score": 0.92,
                         "text": "The gateway fails open.", "attributes": {"team": "core", "year": 2026, "tags": ["x"]}},
                        {"path": "src/lib.rs", "snippet": "pub mod format;", "relevance": 0.5},
                        "a bare string hit",
                    ]},
                })),
            ),
            (
                "files_json_text",
                result(json!({"content": [{"type": "text", "text":
                    "[{\"uri\": \"file:///srv/a.txt\", \"name\": \"a.txt\", \"content\": \"alpha\"}]"}]})),
            ),
        ],
        ResultFormat::CodeInterpreterCall => vec![
            (
                "run_structured",
                result(json!({
                    "content": [{"type": "text", "text": "exit 0"}],
                    "structuredContent": {"stdout": "4\n", "stderr": "warning: slow\n", "exitCode": 0},
                })),
            ),
            (
                "run_outputs",
                result(json!({
                    "content": [],
                    "structuredContent": {"container_id": "cntr_42", "outputs": [
                        {"type": "logs", "logs": "done"},
                        {"type": "image", "url": "https://files.test/plot.png"},
                        {"type": "table", "rows": []},
                    ]},
                })),
            ),
            (
                "run_failed",
                result(json!({"isError": true, "content": [
                    {"type": "text", "text": "ZeroDivisionError: division by zero"}]})),
            ),
        ],
        _ => Vec::new(),
    }
}

fn arguments(format: ResultFormat) -> Map<String, Value> {
    let arguments = match format {
        ResultFormat::CodeInterpreterCall => json!({"code": "print(2 + 2)"}),
        ResultFormat::FileSearchCall => json!({"queries": ["fail open", "fail closed"]}),
        _ => json!({"query": "rust 2024 edition"}),
    };
    arguments.as_object().cloned().expect("an object")
}

/// Every case of `format`, rendered, by case name.
fn rendered(format: ResultFormat) -> Value {
    let arguments = arguments(format);
    let call = ToolCall {
        id: "call_1",
        name: "docs__search",
        server_label: "docs",
        arguments: Some(&arguments),
    };
    let cases: Map<String, Value> = common()
        .into_iter()
        .chain(specific(format))
        .map(|(name, result)| (name.to_owned(), render(format, &result, &call)))
        .collect();
    Value::Object(cases)
}

fn snapshot(format: ResultFormat) {
    let pretty = serde_json::to_string_pretty(&rendered(format)).expect("JSON");
    insta::assert_snapshot!(format.as_str(), pretty);
}

#[test]
fn openai_chat() {
    snapshot(ResultFormat::OpenAiChat);
}

#[test]
fn function_call_output() {
    snapshot(ResultFormat::FunctionCallOutput);
}

#[test]
fn mcp_call() {
    snapshot(ResultFormat::McpCall);
}

#[test]
fn web_search_call() {
    snapshot(ResultFormat::WebSearchCall);
}

#[test]
fn file_search_call() {
    snapshot(ResultFormat::FileSearchCall);
}

#[test]
fn code_interpreter_call() {
    snapshot(ResultFormat::CodeInterpreterCall);
}

#[test]
fn anthropic() {
    snapshot(ResultFormat::AnthropicMessages);
}

#[test]
fn gemini() {
    snapshot(ResultFormat::Gemini);
}

// What the snapshots show, said once more as properties, so that a careless snapshot update
// cannot accept a regression of the decisions the module doc states.

fn all(format: ResultFormat) -> Map<String, Value> {
    match rendered(format) {
        Value::Object(cases) => cases,
        _ => unreachable!("rendered is an object"),
    }
}

#[test]
fn no_format_leaks_what_is_for_the_user_only() {
    for format in ResultFormat::ALL {
        let shown = all(format)["for_the_user_only"].to_string();
        assert!(!shown.contains("the user's eyes"), "{format}: {shown}");
        if format != ResultFormat::FileSearchCall && format != ResultFormat::WebSearchCall {
            assert!(shown.contains("for both"), "{format}: {shown}");
        }
    }
}

#[test]
fn images_go_where_the_api_takes_them_and_are_named_elsewhere() {
    let chat = all(ResultFormat::OpenAiChat);
    let content = chat["image"]["content"].as_str().expect("a string");
    assert!(
        content.starts_with("The chart:\n[left out: image (image/png, 70 bytes); "),
        "{content}"
    );
    assert!(!content.contains(PNG));

    let responses = all(ResultFormat::FunctionCallOutput);
    assert_eq!(
        responses["image"]["output"][1],
        json!({"type": "input_image", "image_url": format!("data:image/png;base64,{PNG}")})
    );
    let anthropic = all(ResultFormat::AnthropicMessages);
    assert_eq!(anthropic["image"]["content"][1]["source"]["data"], PNG);
    let gemini = all(ResultFormat::Gemini);
    assert_eq!(gemini["image"]["functionResponse"]["parts"][0]["inlineData"]["data"], PNG);
    assert_eq!(gemini["image"]["functionResponse"]["response"], json!({"output": "The chart:"}));
}

#[test]
fn audio_is_a_note_everywhere() {
    for format in [
        ResultFormat::OpenAiChat,
        ResultFormat::FunctionCallOutput,
        ResultFormat::McpCall,
        ResultFormat::AnthropicMessages,
        ResultFormat::Gemini,
    ] {
        let shown = all(format)["unsupported_media"].to_string();
        assert!(shown.contains("[left out: audio (audio/wav, 44 bytes); "), "{format}: {shown}");
        assert!(!shown.contains(WAV), "{format}: {shown}");
    }
}

#[test]
fn errors_are_flagged_in_each_api_s_way() {
    assert_eq!(all(ResultFormat::AnthropicMessages)["error"]["is_error"], true);
    assert_eq!(all(ResultFormat::AnthropicMessages)["text"]["is_error"], false);
    assert_eq!(
        all(ResultFormat::OpenAiChat)["error"]["content"],
        "Error: no such file: /srv/missing.txt"
    );
    assert_eq!(
        all(ResultFormat::OpenAiChat)["error_with_error_word"]["content"],
        "Error executing tool read: permission denied"
    );
    let mcp_call = all(ResultFormat::McpCall);
    assert_eq!(mcp_call["error"]["status"], "failed");
    assert_eq!(mcp_call["error"]["output"], Value::Null);
    assert_eq!(mcp_call["error"]["error"]["type"], "mcp_tool_execution_error");
    assert_eq!(
        all(ResultFormat::Gemini)["error"]["functionResponse"]["response"],
        json!({"error": "no such file: /srv/missing.txt"})
    );
    for format in ResultFormat::RESPONSES_ITEMS.into_iter().skip(1) {
        assert_eq!(all(format)["error"]["status"], "failed", "{format}");
        assert_eq!(all(format)["text"]["status"], "completed", "{format}");
    }
}

#[test]
fn structured_content_stands_in_only_where_there_is_no_text() {
    let chat = all(ResultFormat::OpenAiChat);
    assert_eq!(chat["structured_with_text"]["content"], "{\"temperature\":21.5,\"unit\":\"C\"}");
    assert_eq!(chat["structured_only"]["content"], "{\"temperature\":21.5,\"unit\":\"C\"}");
    let gemini = all(ResultFormat::Gemini);
    let response = |case: &str| gemini[case]["functionResponse"]["response"].clone();
    assert_eq!(response("structured_with_text"), json!({"temperature": 21.5, "unit": "C"}));
    assert_eq!(response("structured_array"), json!({"output": [1, 2, 3]}));
    assert_eq!(
        response("structured_error"),
        json!({"error": "{\"code\":\"E_QUOTA\",\"retryAfter\":30}"})
    );
}

#[test]
fn the_call_s_identity_is_carried() {
    let mcp_call = &all(ResultFormat::McpCall)["text"];
    assert_eq!(mcp_call["id"], "call_1");
    assert_eq!(mcp_call["server_label"], "docs");
    assert_eq!(mcp_call["name"], "docs__search");
    assert_eq!(mcp_call["arguments"], "{\"query\":\"rust 2024 edition\"}");
    assert_eq!(all(ResultFormat::FunctionCallOutput)["text"]["call_id"], "call_1");
    assert_eq!(all(ResultFormat::OpenAiChat)["text"]["tool_call_id"], "call_1");
    assert_eq!(all(ResultFormat::AnthropicMessages)["text"]["tool_use_id"], "call_1");
    assert_eq!(all(ResultFormat::Gemini)["text"]["functionResponse"]["id"], "call_1");

    let bare = ToolCall { name: "t", ..ToolCall::default() };
    let result = mcp::CallToolResult::success(vec![mcp::ContentBlock::text("x")]);
    let gemini = render(ResultFormat::Gemini, &result, &bare);
    assert!(gemini["functionResponse"].get("id").is_none(), "{gemini}");
    assert_eq!(render(ResultFormat::McpCall, &result, &bare)["arguments"], "{}");
}
