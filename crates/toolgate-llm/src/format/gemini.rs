//! Gemini: the `functionResponse` part.

use serde_json::{Map, Value, json};
use toolgate_core::mcp;

use super::ToolCall;
use crate::content::{self, MediaKind, Piece};

/// Types a function response's `parts` take inline (images and PDF documents).
const INLINE: &[&str] = &["image/png", "image/jpeg", "image/webp", "application/pdf"];

/// `{"functionResponse": {"id", "name", "response": {...}, "parts": [...]}}`
pub(super) fn function_response(result: &mcp::CallToolResult, call: &ToolCall<'_>) -> Value {
    const WHY: &str = "a Gemini function response takes images and PDF documents";
    let pieces = content::pieces(result);
    let inline = |piece: &Piece<'_>| match piece {
        Piece::Media(media) => {
            (media.is_image() || media.kind == MediaKind::Resource) && media.is(INLINE)
        }
        Piece::Text(_) => false,
    };
    let parts: Vec<Value> = pieces
        .iter()
        .filter(|piece| inline(piece))
        .filter_map(|piece| match piece {
            Piece::Media(media) => {
                Some(json!({"inlineData": {"mimeType": media.mime, "data": media.data}}))
            }
            Piece::Text(_) => None,
        })
        .collect();
    let rest: Vec<Piece<'_>> = pieces.iter().filter(|piece| !inline(piece)).cloned().collect();
    let text = || content::text_of(&rest, WHY);

    let response = match content::structured(result) {
        _ if result.is_error == Some(true) => {
            let text = text();
            let text =
                if text.is_empty() { "the tool reported a failure".to_owned() } else { text };
            json!({"error": text})
        }
        Some(Value::Object(object)) => Value::Object(object.clone()),
        Some(other) => json!({"output": other}),
        None => json!({"output": text()}),
    };
    let mut function_response = Map::new();
    if !call.id.is_empty() {
        function_response.insert("id".into(), call.id.into());
    }
    function_response.insert("name".into(), call.name.into());
    function_response.insert("response".into(), response);
    if !parts.is_empty() {
        function_response.insert("parts".into(), Value::Array(parts));
    }
    json!({"functionResponse": function_response})
}
