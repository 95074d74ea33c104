//! Pieces of content every dialect writes the same way.

use crate::chat::Part;

/// The texts of `parts` joined by newlines (images left out).
pub(super) fn joined_text(parts: &[Part]) -> String {
    let texts: Vec<&str> = parts
        .iter()
        .filter_map(|part| match part {
            Part::Text { text } => Some(text.as_str()),
            Part::Image { .. } => None,
        })
        .collect();
    texts.join("\n")
}

/// `data:<mime>;base64,<data>`.
pub(super) fn data_url(mime_type: &str, data: &str) -> String {
    format!("data:{mime_type};base64,{data}")
}

/// Whether `parts` holds an image.
pub(super) fn has_image(parts: &[Part]) -> bool {
    parts.iter().any(|part| matches!(part, Part::Image { .. }))
}
