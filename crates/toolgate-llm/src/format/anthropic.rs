//! Anthropic Messages: the `tool_result` content block.

use serde_json::{Value, json};
use toolgate_core::mcp;

use super::ToolCall;
use crate::content::{self, MediaKind, Piece};

/// Image types an `image` block takes.
const IMAGES: &[&str] = &["image/jpeg", "image/png", "image/gif", "image/webp"];

/// `{"type": "tool_result", "tool_use_id", "content": [blocks], "is_error"}`
pub(super) fn tool_result(result: &mcp::CallToolResult, call: &ToolCall<'_>) -> Value {
    const WHY: &str = "a tool_result takes text, images and PDF documents";
    let blocks: Vec<Value> = content::pieces(result)
        .iter()
        .filter_map(|piece| match piece {
            // The API refuses empty text blocks.
            Piece::Text(text) if text.is_empty() => None,
            Piece::Text(text) => Some(json!({"type": "text", "text": text})),
            Piece::Media(media) if media.is_image() && media.is(IMAGES) => Some(json!({
                "type": "image",
                "source": {"type": "base64", "media_type": media.mime, "data": media.data},
            })),
            Piece::Media(media)
                if media.kind == MediaKind::Resource && media.is(&["application/pdf"]) =>
            {
                Some(json!({
                    "type": "document",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": media.data},
                    "title": media.uri,
                }))
            }
            Piece::Media(media) => Some(json!({"type": "text", "text": media.note(WHY)})),
        })
        .collect();
    json!({
        "type": "tool_result",
        "tool_use_id": call.id,
        "content": blocks,
        "is_error": result.is_error == Some(true),
    })
}
