//! OpenAI's own shapes: the Chat Completions `tool` message, and the Responses
//! `function_call_output` and `mcp_call` items.

use serde_json::{Value, json};
use toolgate_core::mcp;

use super::ToolCall;
use crate::content::{self, Piece};

/// Image types an `input_image` takes.
const RESPONSES_IMAGES: &[&str] = &["image/png", "image/jpeg", "image/webp", "image/gif"];

/// Resource types sent as an `input_file` (the documents the Responses API reads; other blobs
/// become a note).
const RESPONSES_FILES: &[&str] = &[
    "application/pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "text/csv",
    "text/plain",
    "text/markdown",
];

/// `{"role": "tool", "tool_call_id", "content": "<text>"}`
pub(super) fn chat(result: &mcp::CallToolResult, call: &ToolCall<'_>) -> Value {
    let mut pieces = content::pieces(result);
    if result.is_error == Some(true) {
        content::mark_error(&mut pieces);
    }
    let text = content::text_of(&pieces, "a Chat Completions tool message carries only text");
    json!({"role": "tool", "tool_call_id": call.id, "content": text})
}

/// `{"type": "function_call_output", "call_id", "output": "<text>" | [parts]}`
pub(super) fn function_call_output(result: &mcp::CallToolResult, call: &ToolCall<'_>) -> Value {
    let mut pieces = content::pieces(result);
    if result.is_error == Some(true) {
        content::mark_error(&mut pieces);
    }
    let carried = |piece: &Piece<'_>| match piece {
        Piece::Text(_) => false,
        Piece::Media(media) => {
            (media.is_image() && media.is(RESPONSES_IMAGES))
                || (media.kind == content::MediaKind::Resource && media.is(RESPONSES_FILES))
        }
    };
    const WHY: &str = "a function_call_output takes text, images and documents";
    let output = if pieces.iter().any(carried) {
        let parts: Vec<Value> = pieces
            .iter()
            .map(|piece| match piece {
                Piece::Media(media) if carried(piece) && media.is_image() => {
                    json!({"type": "input_image", "image_url": media.data_url()})
                }
                Piece::Media(media) if carried(piece) => json!({
                    "type": "input_file",
                    "filename": media.file_name(),
                    "file_data": media.data_url(),
                }),
                Piece::Media(media) => json!({"type": "input_text", "text": media.note(WHY)}),
                Piece::Text(text) => json!({"type": "input_text", "text": text}),
            })
            .collect();
        Value::Array(parts)
    } else {
        Value::String(content::text_of(&pieces, WHY))
    };
    json!({"type": "function_call_output", "call_id": call.id, "output": output})
}

/// `{"type": "mcp_call", "id", "server_label", "name", "arguments", "output", "error",
/// "status"}`
pub(super) fn mcp_call(result: &mcp::CallToolResult, call: &ToolCall<'_>) -> Value {
    let failed = result.is_error == Some(true);
    let (output, error) = if failed {
        // The server's content as it is, with the structured content as text first when no
        // text block carries it.
        let mut content = Vec::with_capacity(result.content.len() + 1);
        if let Some(Piece::Text(text)) = content::structured_text(result) {
            content.push(json!({"type": "text", "text": text}));
        }
        content.extend(
            result.content.iter().map(|block| serde_json::to_value(block).unwrap_or_default()),
        );
        (Value::Null, json!({"type": "mcp_tool_execution_error", "content": content}))
    } else {
        let pieces = content::pieces(result);
        (Value::String(content::text_of(&pieces, "an mcp_call's output is text")), Value::Null)
    };
    json!({
        "type": "mcp_call",
        "id": call.id,
        "server_label": call.server_label,
        "name": call.name,
        "arguments": call.arguments_json(),
        "output": output,
        "error": error,
        "status": if failed { "failed" } else { "completed" },
    })
}
