//! How a finding shows where it is: a stretch of the text around the span, the span marked,
//! line breaks and characters that cannot be seen spelled out. Shared by the rules' findings
//! and the judge's.

use std::ops::Range;

/// Whether `c` is a character that shows nothing: tag characters, zero-width characters,
/// bidirectional controls.
pub(crate) fn is_invisible(c: char) -> bool {
    matches!(c as u32,
        0xE0000..=0xE007F          // tag characters
        | 0x200B..=0x200F          // zero-width space, joiners, LRM/RLM
        | 0x202A..=0x202E          // bidirectional embeddings and overrides
        | 0x2060..=0x2064          // word joiner, invisible operators
        | 0x2066..=0x2069          // bidirectional isolates
        | 0xFEFF                   // zero-width no-break space
        | 0x00AD                   // soft hyphen
        | 0x180E                   // Mongolian vowel separator
        | 0xFFF9..=0xFFFB) // interlinear annotations
}

/// `c`, or `<U+XXXX>` for a control or invisible character (a line break is `⏎`).
pub(crate) fn push_visible(out: &mut String, c: char) {
    if c == '\n' {
        out.push('⏎');
    } else if c.is_control() || is_invisible(c) {
        out.push_str(&format!("<U+{:04X}>", c as u32));
    } else {
        out.push(c);
    }
}

/// `span` of `text` with up to 40 characters either side, the span (at most `span_chars` of
/// it, then `…`) between `»` and `«`, every character as [`push_visible`] shows it.
pub(crate) fn excerpt(text: &str, span: &Range<usize>, span_chars: usize) -> String {
    let before: Vec<char> = text[..span.start].chars().rev().take(40).collect();
    let after: String = text[span.end..].chars().take(40).collect();
    let lead =
        if before.iter().map(|c| c.len_utf8()).sum::<usize>() < span.start { "…" } else { "" };
    let tail = if span.end + after.len() < text.len() { "…" } else { "" };
    let mut out = lead.to_owned();
    before.iter().rev().for_each(|&c| push_visible(&mut out, c));
    out.push('»');
    let inside = &text[span.clone()];
    inside.chars().take(span_chars).for_each(|c| push_visible(&mut out, c));
    if inside.chars().count() > span_chars {
        out.push('…');
    }
    out.push('«');
    after.chars().for_each(|c| push_visible(&mut out, c));
    out.push_str(tail);
    out
}

#[cfg(test)]
mod tests {
    use super::excerpt;

    #[test]
    fn an_excerpt_marks_the_span_and_spells_out_what_cannot_be_seen() {
        let text = "line one\nsay \u{200B}hi\u{7} now";
        let at = text.find("say").unwrap();
        assert_eq!(excerpt(text, &(at..at + 10), 80), "line one⏎»say <U+200B>hi<U+0007>« now");
        let long = "x".repeat(100);
        assert_eq!(excerpt(&long, &(50..100), 3), format!("…{}»xxx…«", "x".repeat(40)));
    }
}
