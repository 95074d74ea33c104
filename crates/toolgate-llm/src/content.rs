//! What a model reads of an MCP tool result, once for every reader: the result formats
//! ([`crate::format`]) and the agent ([`parts`]).
//!
//! A result's content becomes pieces of text and media, in order. Text blocks stay text;
//! images, audio and blob resources are media (what a reader cannot pass on becomes a note);
//! an embedded text resource is its text after a `[resource <uri> (<mime>)]` line; a resource
//! link is a line naming it (and its description); a block of a kind this module does not know
//! is its JSON. Blocks whose `audience` leaves out the assistant are for the person only and
//! are left out. When no text block is left for the model, the compact JSON of
//! `structuredContent` comes first (the MCP spec asks servers to send it as text too, so when
//! they do, the text blocks stand for it).
//!
//! [`model_text`] is the text alone, as the transforms count it.
//!
//! [`parts`] is the agent's reading, as the parts of a [`chat`](crate::chat) tool result.
//! It still words three things as the agent did before it read results here, differently from
//! the formats (the tests of each pin their own words): a resource link
//! (`[resource link <uri>: <description>]`), and the audio and blobs it cannot pass
//! (`[audio (<mime>) not shown: 3 B]`, `[resource <uri>: 3 B of binary data (<mime>) not
//! shown]`).

use std::borrow::Cow;

use serde_json::Value;
use toolgate_core::mcp;

use crate::chat::Part;

/// The text alone a model reads of a tool result, as the transforms count its tokens: every
/// text block, the text of every embedded text resource, and `structuredContent` as compact
/// JSON, one per line. Images, audio, blobs and links are not text and are left out.
pub fn model_text(result: &mcp::CallToolResult) -> String {
    let mut text = String::new();
    let mut push = |part: &str| {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(part);
    };
    for block in &result.content {
        match block {
            mcp::ContentBlock::Text(t) => push(&t.text),
            mcp::ContentBlock::Resource(r) => {
                if let mcp::ResourceContents::TextResourceContents { text, .. } = &r.resource {
                    push(text);
                }
            }
            _ => {}
        }
    }
    if let Some(structured) = &result.structured_content {
        push(&structured.to_string());
    }
    text
}

/// The text of a `resources/read` result: every text content, one per line.
pub fn resource_text(result: &mcp::ReadResourceResult) -> String {
    let texts: Vec<&str> = result
        .contents
        .iter()
        .filter_map(|c| match c {
            mcp::ResourceContents::TextResourceContents { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n")
}

/// One piece of a result, as the formats see it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Piece<'a> {
    /// Text for the model: a text block, the serialized `structuredContent`, a text resource
    /// (after a line naming it), a resource link in words, or a block of an unknown kind.
    Text(Cow<'a, str>),
    /// Base64 data: an image or audio block, or a blob resource.
    Media(Media<'a>),
}

/// Base64 data with its type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Media<'a> {
    /// An image, an audio clip, or a blob resource.
    pub(crate) kind: MediaKind,
    /// Its MIME type (`application/octet-stream` when a resource has none).
    pub(crate) mime: &'a str,
    /// The base64 data, as the server sent it.
    pub(crate) data: &'a str,
    /// The resource's URI (blob resources only).
    pub(crate) uri: Option<&'a str>,
}

/// Where a [`Media`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MediaKind {
    Image,
    Audio,
    Resource,
}

/// The MIME type assumed for a blob resource without one.
const OCTET_STREAM: &str = "application/octet-stream";

impl Media<'_> {
    /// `data:<mime>;base64,<data>`
    pub(crate) fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.mime, self.data)
    }

    /// Whether its type is one of `mimes` (ignoring case and parameters such as `; charset`).
    pub(crate) fn is(&self, mimes: &[&str]) -> bool {
        let essence = self.mime.split(';').next().unwrap_or_default().trim();
        mimes.iter().any(|mime| mime.eq_ignore_ascii_case(essence))
    }

    /// Whether it is an image (an image block, or a resource of an `image/*` type).
    pub(crate) fn is_image(&self) -> bool {
        self.kind == MediaKind::Image
            || (self.kind == MediaKind::Resource
                && self.mime.to_ascii_lowercase().starts_with("image/"))
    }

    /// What the model is told instead of this, and why: `[left out: image (image/png, 68
    /// bytes); <why>]`.
    pub(crate) fn note(&self, why: &str) -> String {
        let size = size_in_words(decoded_len(self.data));
        match (self.kind, self.uri) {
            (MediaKind::Image, _) => format!("[left out: image ({}, {size}); {why}]", self.mime),
            (MediaKind::Audio, _) => format!("[left out: audio ({}, {size}); {why}]", self.mime),
            (MediaKind::Resource, uri) => format!(
                "[left out: resource {} ({}, {size}); {why}]",
                uri.unwrap_or_default(),
                self.mime
            ),
        }
    }

    /// The last segment of the resource's URI, for APIs that want a file name.
    pub(crate) fn file_name(&self) -> &str {
        let uri = self.uri.unwrap_or_default();
        let path = uri.split(['?', '#']).next().unwrap_or_default();
        match path.rsplit('/').next() {
            Some(name) if !name.is_empty() => name,
            _ => "resource",
        }
    }
}

/// How many bytes `base64` decodes to (from its length; the data itself is not checked).
fn decoded_len(base64: &str) -> usize {
    let trimmed = base64.trim_end();
    let padding = trimmed.bytes().rev().take_while(|&b| b == b'=').count();
    (trimmed.len() * 3 / 4).saturating_sub(padding)
}

/// `68 bytes`, `2.0 KiB`, `1.5 MiB`.
pub fn size_in_words(bytes: usize) -> String {
    const KIB: usize = 1024;
    #[expect(clippy::cast_precision_loss, reason = "a size shown with one decimal")]
    let scaled = |unit: usize| bytes as f64 / unit as f64;
    if bytes < KIB {
        format!("{bytes} bytes")
    } else if bytes < KIB * KIB {
        format!("{:.1} KiB", scaled(KIB))
    } else {
        format!("{:.1} MiB", scaled(KIB * KIB))
    }
}

/// Whether a block with these annotations is meant for the model: no `audience`, or one that
/// names the assistant.
fn for_the_model(annotations: Option<&mcp::Annotations>) -> bool {
    annotations
        .and_then(|a| a.audience.as_ref())
        .is_none_or(|audience| audience.contains(&mcp::Role::Assistant))
}

/// The result's content as pieces, in order. Blocks whose `audience` leaves out the assistant
/// are dropped; when no text block is left and `structuredContent` is there, its compact JSON
/// comes first (the MCP spec asks servers to send it as text too, so when they do, the text
/// blocks stand for it).
pub(crate) fn pieces(result: &mcp::CallToolResult) -> Vec<Piece<'_>> {
    let mut pieces = Vec::with_capacity(result.content.len() + 1);
    pieces.extend(structured_text(result));
    pieces.extend(result.content.iter().filter_map(piece));
    pieces
}

/// The compact JSON of `structuredContent` as a piece, when there is no text block for the
/// model.
pub(crate) fn structured_text(result: &mcp::CallToolResult) -> Option<Piece<'static>> {
    let has_text = result.content.iter().any(|block| {
        matches!(block, mcp::ContentBlock::Text(text) if for_the_model(text.annotations.as_ref()))
    });
    if has_text {
        return None;
    }
    structured(result).map(|value| Piece::Text(Cow::Owned(value.to_string())))
}

/// One block as a piece; `None` when it is not meant for the model.
pub(crate) fn piece(block: &mcp::ContentBlock) -> Option<Piece<'_>> {
    let (annotations, piece) = match block {
        mcp::ContentBlock::Text(text) => {
            (text.annotations.as_ref(), Piece::Text(Cow::Borrowed(text.text.as_str())))
        }
        mcp::ContentBlock::Image(image) => (
            image.annotations.as_ref(),
            Piece::Media(Media {
                kind: MediaKind::Image,
                mime: &image.mime_type,
                data: &image.data,
                uri: None,
            }),
        ),
        mcp::ContentBlock::Audio(audio) => (
            audio.annotations.as_ref(),
            Piece::Media(Media {
                kind: MediaKind::Audio,
                mime: &audio.mime_type,
                data: &audio.data,
                uri: None,
            }),
        ),
        mcp::ContentBlock::Resource(embedded) => {
            (embedded.annotations.as_ref(), resource(&embedded.resource))
        }
        mcp::ContentBlock::ResourceLink(link) => {
            (link.annotations.as_ref(), Piece::Text(Cow::Owned(link_in_words(link))))
        }
        other => (None, Piece::Text(Cow::Owned(compact(other)))),
    };
    for_the_model(annotations).then_some(piece)
}

/// `structuredContent`, unless absent or `null`.
pub(crate) fn structured(result: &mcp::CallToolResult) -> Option<&Value> {
    result.structured_content.as_ref().filter(|value| !value.is_null())
}

/// `structuredContent`, or else the first text block that is a JSON object or array: the data
/// the built-in Responses items read their fields from.
pub(crate) fn data(result: &mcp::CallToolResult) -> Option<Cow<'_, Value>> {
    if let Some(structured) = structured(result) {
        return Some(Cow::Borrowed(structured));
    }
    result.content.iter().find_map(|block| match block {
        mcp::ContentBlock::Text(text) => serde_json::from_str::<Value>(text.text.trim())
            .ok()
            .filter(|value| value.is_object() || value.is_array())
            .map(Cow::Owned),
        _ => None,
    })
}

fn resource(contents: &mcp::ResourceContents) -> Piece<'_> {
    match contents {
        mcp::ResourceContents::TextResourceContents { uri, mime_type, text, .. } => {
            let header = match mime_type {
                Some(mime) => format!("[resource {uri} ({mime})]"),
                None => format!("[resource {uri}]"),
            };
            Piece::Text(Cow::Owned(format!("{header}\n{text}")))
        }
        mcp::ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => {
            Piece::Media(Media {
                kind: MediaKind::Resource,
                mime: mime_type.as_deref().unwrap_or(OCTET_STREAM),
                data: blob,
                uri: Some(uri),
            })
        }
        other => Piece::Text(Cow::Owned(compact(other))),
    }
}

/// `[resource link: file:///a.txt "a.txt" (text/plain, 12 bytes)]` and its description on the
/// next line.
fn link_in_words(link: &mcp::Resource) -> String {
    let mut facts = vec![format!("{:?}", link.title.as_deref().unwrap_or(&link.name))];
    facts.extend(link.mime_type.clone());
    facts.extend(link.size.map(|size| format!("{size} bytes")));
    let mut text = format!("[resource link: {} {}]", link.uri, facts.join(", "));
    if let Some(description) = &link.description {
        text.push('\n');
        text.push_str(description);
    }
    text
}

/// A block of a kind this module does not know, as compact JSON.
fn compact(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// Each piece as text (media as the note `why` explains), joined by newlines.
pub(crate) fn text_of(pieces: &[Piece<'_>], why: &str) -> String {
    let texts: Vec<Cow<'_, str>> = pieces
        .iter()
        .map(|piece| match piece {
            Piece::Text(text) => Cow::Borrowed(text.as_ref()),
            Piece::Media(media) => Cow::Owned(media.note(why)),
        })
        .collect();
    texts.join("\n")
}

/// For APIs with no error flag: the first text says that the tool failed (`Error: ...`, unless
/// it already starts with "error"), or a first text saying so is added.
pub(crate) fn mark_error(pieces: &mut Vec<Piece<'_>>) {
    if let Some(Piece::Text(text)) = pieces.first_mut() {
        let starts_with_error =
            text.get(..5).is_some_and(|head| head.eq_ignore_ascii_case("error"));
        if !starts_with_error {
            *text = Cow::Owned(format!("Error: {text}"));
        }
        return;
    }
    pieces.insert(0, Piece::Text(Cow::Borrowed("Error: the tool reported a failure.")));
}

// === The agent's reading ===

/// What the model reads of `result`, as the parts of a tool result message: the pieces in
/// order, images (image blocks, and blob resources of an image type) as images, everything else
/// as text; `(the tool returned nothing)` when nothing is left. The words that differ from the
/// formats' are in the module doc.
pub fn parts(result: &mcp::CallToolResult) -> Vec<Part> {
    let mut parts = Vec::with_capacity(result.content.len() + 1);
    if let Some(Piece::Text(text)) = structured_text(result) {
        parts.push(Part::text(text));
    }
    for block in &result.content {
        let part = match (block, piece(block)) {
            (_, None) => continue,
            (mcp::ContentBlock::ResourceLink(link), Some(_)) => Part::text(format!(
                "[resource link {}{}]",
                link.uri,
                link.description.as_ref().map(|d| format!(": {d}")).unwrap_or_default()
            )),
            (_, Some(Piece::Text(text))) => Part::text(text),
            (_, Some(Piece::Media(media))) if media.is_image() => {
                Part::Image { mime_type: media.mime.to_owned(), data: media.data.to_owned() }
            }
            (_, Some(Piece::Media(media))) => Part::text(media.not_shown()),
        };
        parts.push(part);
    }
    if parts.is_empty() {
        parts.push(Part::text("(the tool returned nothing)"));
    }
    parts
}

impl Media<'_> {
    /// The agent's note for media it does not pass: `[audio (audio/wav) not shown: 3 B]`,
    /// `[resource <uri>: 3 B of binary data (<mime>) not shown]`.
    fn not_shown(&self) -> String {
        let size = bytes(decoded_len(self.data));
        match self.uri {
            Some(uri) => {
                format!("[resource {uri}: {size} of binary data ({}) not shown]", self.mime)
            }
            None => format!("[audio ({}) not shown: {size}]", self.mime),
        }
    }
}

/// The size of `n` bytes in short words (`340 B`, `1.2 KiB`, `3.0 MiB`, `1.5 GiB`).
pub fn bytes(n: usize) -> String {
    const KIB: f64 = 1024.0;
    #[expect(clippy::cast_precision_loss, reason = "a size shown with one decimal")]
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

    #[test]
    fn the_model_reads_text_embedded_text_and_structured_content() {
        let mut result = mcp::CallToolResult::success(vec![
            mcp::ContentBlock::text("one"),
            mcp::ContentBlock::image("AAAA", "image/png"),
            mcp::ContentBlock::Resource(mcp::EmbeddedResource::new(mcp::ResourceContents::text(
                "two",
                "file:///x",
            ))),
        ]);
        result.structured_content = Some(json!({"a": [1, 2]}));
        assert_eq!(model_text(&result), "one\ntwo\n{\"a\":[1,2]}");
    }

    #[test]
    fn sizes_are_counted_from_the_base64_length() {
        assert_eq!(decoded_len(""), 0);
        assert_eq!(decoded_len("aGk="), 2);
        assert_eq!(decoded_len("aGkh"), 3);
        assert_eq!(decoded_len("aA=="), 1);
        assert_eq!(size_in_words(68), "68 bytes");
        assert_eq!(size_in_words(2048), "2.0 KiB");
        assert_eq!(size_in_words(3 * 1024 * 1024 / 2), "1.5 MiB");
    }

    #[test]
    fn mime_types_compare_without_case_or_parameters() {
        let media = Media { kind: MediaKind::Image, mime: "Image/PNG; x=1", data: "", uri: None };
        assert!(media.is(&["image/png"]));
        assert!(!media.is(&["image/jpeg"]));
    }

    #[test]
    fn file_names_come_from_the_uri() {
        let named = |uri| Media { kind: MediaKind::Resource, mime: "", data: "", uri: Some(uri) };
        assert_eq!(named("file:///srv/report.pdf").file_name(), "report.pdf");
        assert_eq!(named("https://x.test/a/b.pdf?v=2#p1").file_name(), "b.pdf");
        assert_eq!(named("https://x.test/").file_name(), "resource");
    }

    #[test]
    fn error_marks_keep_an_existing_error_word() {
        let mut pieces = vec![Piece::Text(Cow::Borrowed("ERROR: no such file"))];
        mark_error(&mut pieces);
        assert_eq!(pieces, vec![Piece::Text(Cow::Borrowed("ERROR: no such file"))]);
        let mut pieces = vec![Piece::Text(Cow::Borrowed("no such file"))];
        mark_error(&mut pieces);
        assert_eq!(pieces, vec![Piece::Text(Cow::Borrowed("Error: no such file"))]);
        let mut pieces = Vec::new();
        mark_error(&mut pieces);
        assert_eq!(pieces, vec![Piece::Text(Cow::Borrowed("Error: the tool reported a failure."))]);
    }

    fn result(value: serde_json::Value) -> mcp::CallToolResult {
        serde_json::from_value(value).expect("a CallToolResult")
    }

    #[test]
    fn each_kind_of_block_becomes_something_the_model_can_read() {
        let parts = parts(&result(json!({"content": [
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
        let parts = parts(&result(json!({"content": [], "structuredContent": {"n": 1}})));
        assert_eq!(parts, vec![Part::text(r#"{"n":1}"#)]);
        let parts = super::parts(&result(json!({"content": []})));
        assert_eq!(parts, vec![Part::text("(the tool returned nothing)")]);
    }
}
