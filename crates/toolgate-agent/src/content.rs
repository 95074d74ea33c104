//! What the model reads of a tool's outcome: an MCP result's content as [`Part`]s.
//!
//! Text blocks stay text; images stay images; an embedded resource's text becomes text headed
//! by its URI (a binary one, a note); a resource link, a line naming it; audio, a note (no
//! provider takes audio in a tool result). A result with only `structuredContent` gives its
//! JSON. Blocks whose `audience` leaves out the assistant are left out. Outcomes that are not results (refused, unknown tool, bad arguments, failed, timed
//! out, cancelled) become one text saying so, marked as an error.

use toolgate_core::mcp;
use toolgate_llm::chat::Part;

use crate::host::ToolOutcome;

/// The parts the model reads for `outcome`.
pub fn outcome_parts(outcome: &ToolOutcome) -> Vec<Part> {
    match outcome {
        ToolOutcome::Done(result) => result_parts(result),
        other => vec![Part::text(other.explanation().unwrap_or_default())],
    }
}

/// The parts the model reads for an MCP tool result.
pub fn result_parts(result: &mcp::CallToolResult) -> Vec<Part> {
    let mut parts = Vec::new();
    for block in &result.content {
        let (annotations, part) = match block {
            mcp::ContentBlock::Text(text) => {
                (text.annotations.as_ref(), Part::text(text.text.clone()))
            }
            mcp::ContentBlock::Image(image) => (
                image.annotations.as_ref(),
                Part::Image { mime_type: image.mime_type.clone(), data: image.data.clone() },
            ),
            mcp::ContentBlock::Resource(embedded) => {
                let part = match &embedded.resource {
                    mcp::ResourceContents::TextResourceContents { uri, text, .. } => {
                        Part::text(format!("[resource {uri}]\n{text}"))
                    }
                    mcp::ResourceContents::BlobResourceContents {
                        uri, mime_type, blob, ..
                    } => Part::text(format!(
                        "[resource {uri}: {} of binary data ({}) not shown]",
                        bytes(blob.len() / 4 * 3),
                        mime_type.as_deref().unwrap_or("unknown type")
                    )),
                    _ => Part::text("[a resource of a kind the agent does not know]"),
                };
                (embedded.annotations.as_ref(), part)
            }
            mcp::ContentBlock::ResourceLink(link) => (
                link.annotations.as_ref(),
                Part::text(format!(
                    "[resource link {}{}]",
                    link.uri,
                    link.description.as_ref().map(|d| format!(": {d}")).unwrap_or_default()
                )),
            ),
            mcp::ContentBlock::Audio(audio) => (
                audio.annotations.as_ref(),
                Part::text(format!(
                    "[audio ({}) not shown: {}]",
                    audio.mime_type,
                    bytes(audio.data.len() / 4 * 3)
                )),
            ),
            other => (None, Part::text(serde_json::to_string(other).unwrap_or_default())),
        };
        if for_the_model(annotations) {
            parts.push(part);
        }
    }
    if parts.is_empty()
        && let Some(structured) = result.structured_content.as_ref().filter(|v| !v.is_null())
    {
        parts.push(Part::text(structured.to_string()));
    }
    if parts.is_empty() {
        parts.push(Part::text("(the tool returned nothing)"));
    }
    parts
}

/// Blocks whose `audience` leaves out the assistant are for the person only.
fn for_the_model(annotations: Option<&mcp::Annotations>) -> bool {
    annotations
        .and_then(|a| a.audience.as_ref())
        .is_none_or(|audience| audience.contains(&mcp::Role::Assistant))
}

/// The size of `n` bytes in words (`340 B`, `1.2 KiB`, `3.0 MiB`, `1.5 GiB`).
pub fn bytes(n: usize) -> String {
    const KIB: f64 = 1024.0;
    let b = n as f64;
    if b < KIB {
        format!("{n} B")
    } else if b < KIB * KIB {
        format!("{:.1} KiB", b / KIB)
    } else if b < KIB * KIB * KIB {
        format!("{:.1} MiB", b / KIB / KIB)
    } else {
        format!("{:.1} GiB", b / KIB / KIB / KIB)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn result(value: serde_json::Value) -> mcp::CallToolResult {
        serde_json::from_value(value).expect("a CallToolResult")
    }

    #[test]
    fn each_kind_of_block_becomes_something_the_model_can_read() {
        let parts = result_parts(&result(json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "data": "aGk=", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "inside"}},
            {"type": "resource", "resource": {"uri": "file:///a.bin", "blob": "AAAA", "mimeType": "application/octet-stream"}},
            {"type": "resource_link", "uri": "file:///b.txt", "name": "b", "description": "the other"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
        ]})));
        assert_eq!(
            parts,
            vec![
                Part::text("hello"),
                Part::Image { mime_type: "image/png".into(), data: "aGk=".into() },
                Part::text("[resource file:///a.txt]\ninside"),
                Part::text(
                    "[resource file:///a.bin: 3 B of binary data (application/octet-stream) not shown]"
                ),
                Part::text("[resource link file:///b.txt: the other]"),
                Part::text("[audio (audio/wav) not shown: 3 B]"),
            ]
        );
    }

    #[test]
    fn structured_content_alone_is_its_json_and_nothing_is_said_so() {
        let parts = result_parts(&result(json!({"content": [], "structuredContent": {"n": 1}})));
        assert_eq!(parts, vec![Part::text(r#"{"n":1}"#)]);
        let parts = result_parts(&result(json!({"content": []})));
        assert_eq!(parts, vec![Part::text("(the tool returned nothing)")]);
    }

    #[test]
    fn outcomes_that_are_not_results_are_explained() {
        let parts = outcome_parts(&ToolOutcome::Unknown("fs__nope".into()));
        assert_eq!(
            parts,
            vec![Part::text(
                "There is no tool named fs__nope. Use one of the tools you were given."
            )]
        );
        assert!(ToolOutcome::Cancelled.is_error());
        assert!(!ToolOutcome::Done(result(json!({"content": []}))).is_error());
    }
}
