//! Tests of the markdown module.

use super::*;

/// Rendered without colours at `width`.
fn plain(markdown: &str, width: usize) -> String {
    render(markdown, width, false)
}

/// Streams `markdown` in pieces of `size` bytes (at char boundaries), rendered without
/// colours at 40 columns; what was written after each piece, and in all.
fn stream(markdown: &str, size: usize) -> (Vec<String>, String) {
    let mut md = MarkdownStream::new(Vec::new(), Mode::Rendered { color: false, width: 40 });
    let mut seen = Vec::new();
    let mut rest = markdown;
    while !rest.is_empty() {
        let mut end = size.min(rest.len());
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        md.push(&rest[..end]).unwrap();
        rest = &rest[end..];
        seen.push(String::from_utf8(md.get_mut().clone()).unwrap());
    }
    md.finish().unwrap();
    let all = String::from_utf8(md.into_inner()).unwrap();
    (seen, all)
}

#[test]
fn blocks_render_without_colour() {
    let markdown = "# Title\n\nSome *emphasis*, **strong**, `code` and [a link](https://x.test/a).\n\n\
                    - one\n- two\n  - nested\n- [x] done\n\n3. three\n4. four\n\n> quoted\n> text\n\n---\n";
    let expected = "Title\n\nSome emphasis, strong, code and a link\n(https://x.test/a).\n\n\
                    • one\n• two\n  ◦ nested\n• [x] done\n\n3. three\n4. four\n\n│ quoted text\n\n\
                    ────────────────────────────────────────\n";
    assert_eq!(plain(markdown, 40), expected);
}

#[test]
fn styles_are_ansi_escapes() {
    let got = render("## Two words\n\n**b** *i* `c` ~~s~~ [a link](u)\n", 40, true);
    // Spaces take the style around them: the heading and the link are underlined whole.
    assert_eq!(
        got,
        "\x1b[1m\x1b[4mTwo words\x1b[0m\n\n\x1b[1mb\x1b[0m \x1b[3mi\x1b[0m \x1b[36mc\x1b[0m \
         \x1b[9ms\x1b[0m \x1b[4ma link\x1b[0m\x1b[2m (u)\x1b[0m\n"
    );
}

#[test]
fn paragraphs_wrap_to_the_width_inside_containers() {
    let got = plain("> - alpha beta gamma delta epsilon zeta eta theta\n", 24);
    assert_eq!(got, "│ • alpha beta gamma\n│   delta epsilon zeta\n│   eta theta\n");
    // A word longer than the line is cut.
    assert_eq!(
        plain(&"x".repeat(45), 20),
        format!("{}\n{}\n{}\n", "x".repeat(20), "x".repeat(20), "x".repeat(5))
    );
    // A hard break is kept.
    assert_eq!(plain("one  \ntwo\n", 40), "one\ntwo\n");
}

#[test]
fn code_blocks_keep_their_lines_and_name_the_language() {
    let got = plain(
        "```rust\nfn main() {\n    let x = 1; // a long line that is not wrapped at all\n}\n```\n",
        20,
    );
    assert_eq!(
        got,
        "── rust\n  fn main() {\n      let x = 1; // a long line that is not wrapped at all\n  }\n──\n"
    );
    let got = render("```\nx\n```\n", 40, true);
    assert_eq!(got, "\x1b[2m──\x1b[0m\n  \x1b[33mx\x1b[0m\n\x1b[2m──\x1b[0m\n");
}

#[test]
fn tables_are_aligned_or_kept_as_rows_when_too_wide() {
    let markdown = "| name | n | where |\n|:--|--:|:-:|\n| alpha | 1 | here |\n| b | 200 | x |\n";
    assert_eq!(
        plain(markdown, 40),
        "name  │   n │ where\n──────┼─────┼──────\nalpha │   1 │ here\nb     │ 200 │   x\n"
    );
    let wide = "| a | b |\n|---|---|\n| a long cell of text | another long cell here |\n";
    assert_eq!(plain(wide, 20), "a │ b\na long cell of text\n│ another long cell\nhere\n");
}

#[test]
fn links_images_and_autolinks() {
    assert_eq!(plain("<https://a.test/>\n", 40), "https://a.test/\n");
    assert_eq!(plain("<me@a.test>\n", 40), "me@a.test\n");
    assert_eq!(plain("![a cat](cat.png)\n", 40), "[image: a cat] (cat.png)\n");
}

#[test]
fn loose_lists_and_items_with_paragraphs() {
    let got = plain("1. first\n\n   more of it\n2. second\n", 40);
    assert_eq!(got, "1. first\n\n   more of it\n\n2. second\n");
}

#[test]
fn escapes_from_the_model_are_shown_not_obeyed() {
    assert_eq!(plain("a \x1b[2J b\n", 40), "a \\u{1b}[2J b\n");
    assert_eq!(dim("x\x1b]0;t\x07", true), "\x1b[2mx\\u{1b}]0;t\\u{7}\x1b[0m");
    assert_eq!(dim("x", false), "x");
}

#[test]
fn a_block_is_written_when_complete() {
    let (seen, all) = stream("Hello **wor", 4);
    assert!(seen.iter().all(String::is_empty), "{seen:?}");
    assert_eq!(all, "Hello **wor\n");

    let (seen, all) = stream("One two\nthree.\n\nNext", 3);
    // Nothing until the blank line is followed by an unindented line.
    let first = seen.iter().position(|s| !s.is_empty()).unwrap();
    assert_eq!(seen[first], "One two three.\n");
    // Pieces: "One", " tw", "o\nt", "hre", "e.\n", "\nNe": written with the sixth.
    assert_eq!(first, 5);
    assert_eq!(all, "One two three.\n\nNext\n");
}

#[test]
fn an_indented_line_after_a_blank_continues_the_block() {
    let (_, all) = stream("- item\n\n  continued\n- next\n\nafter\n", 5);
    assert_eq!(all, "• item\n\n  continued\n\n• next\n\nafter\n");
}

#[test]
fn a_fenced_block_streams_line_by_line() {
    let text = "Intro:\n```sh\necho 1\n\necho 2\n```\nafter\n";
    let mut md = MarkdownStream::new(Vec::new(), Mode::Rendered { color: false, width: 40 });
    md.push("Intro:\n```sh\necho 1\n").unwrap();
    assert_eq!(String::from_utf8_lossy(md.get_mut()), "Intro:\n\n── sh\n  echo 1\n");
    md.push("\necho 2\n```\nafter\n").unwrap();
    md.finish().unwrap();
    assert_eq!(
        String::from_utf8(md.into_inner()).unwrap(),
        "Intro:\n\n── sh\n  echo 1\n\n  echo 2\n──\n\nafter\n"
    );
    // The same in one piece, and in pieces of one byte.
    assert_eq!(stream(text, 1).1, stream(text, text.len()).1);
}

#[test]
fn a_fence_inside_a_list_is_rendered_with_its_block() {
    let (_, all) = stream("- run:\n  ```\n  a\n\n  b\n  ```\n", 2);
    assert_eq!(all, "• run:\n  ──\n    a\n\n    b\n  ──\n");
}

#[test]
fn an_unclosed_fence_ends_with_the_answer() {
    let (_, all) = stream("```\nlet x", 3);
    assert_eq!(all, "──\n  let x\n──\n");
}

#[test]
fn a_heading_is_written_at_once() {
    let mut md = MarkdownStream::new(Vec::new(), Mode::Rendered { color: false, width: 40 });
    md.push("text\n## Heading\nmore").unwrap();
    assert_eq!(String::from_utf8_lossy(md.get_mut()), "text\n\nHeading\n");
}

#[test]
fn plain_mode_passes_text_through_as_it_arrives() {
    let mut md = MarkdownStream::new(Vec::new(), Mode::Plain);
    md.push("# Title\n\n**b").unwrap();
    assert_eq!(md.get_mut().as_slice(), b"# Title\n\n**b");
    md.push("** \x1b").unwrap();
    md.finish().unwrap();
    // The last line is ended, once; an answer that ended its line gets nothing more.
    md.finish().unwrap();
    md.push("next\n").unwrap();
    md.finish().unwrap();
    assert_eq!(md.into_inner(), b"# Title\n\n**b** \x1b\nnext\n");
}

#[test]
fn finish_starts_afresh() {
    let mut md = MarkdownStream::new(Vec::new(), Mode::Rendered { color: false, width: 40 });
    md.push("one").unwrap();
    md.finish().unwrap();
    md.push("two\n\nthree").unwrap();
    md.finish().unwrap();
    assert_eq!(String::from_utf8(md.into_inner()).unwrap(), "one\ntwo\n\nthree\n");
}
