//! The lines of a text as written and as read: colour codes and carriage-return overdraws
//! removed, so that the parsers recognise a runner's lines whatever the terminal settings.

use std::borrow::Cow;

/// A text cut into lines, each kept as written (with its line ending) and as read.
pub(crate) struct Lines<'a> {
    raw: Vec<&'a str>,
    plain: Vec<Cow<'a, str>>,
}

impl<'a> Lines<'a> {
    pub(crate) fn new(text: &'a str) -> Lines<'a> {
        let raw: Vec<&str> = text.split_inclusive('\n').collect();
        let plain = raw.iter().map(|line| plain(line)).collect();
        Lines { raw, plain }
    }

    pub(crate) fn len(&self) -> usize {
        self.raw.len()
    }

    /// Line `i` as written, with its line ending.
    pub(crate) fn raw(&self, i: usize) -> &'a str {
        self.raw[i]
    }

    /// Line `i` as read: no line ending, no colour codes, only what follows its last
    /// carriage return.
    pub(crate) fn plain(&self, i: usize) -> &str {
        &self.plain[i]
    }

    /// Whether line `i` is blank.
    pub(crate) fn blank(&self, i: usize) -> bool {
        self.plain[i].trim().is_empty()
    }
}

/// `line` as a reader sees it (see [`Lines::plain`]).
fn plain(line: &str) -> Cow<'_, str> {
    let line = line.strip_suffix('\n').unwrap_or(line);
    let line = line.strip_suffix('\r').unwrap_or(line);
    let line = match line.rfind('\r') {
        Some(at) => &line[at + 1..],
        None => line,
    };
    if line.contains('\u{1b}') { Cow::Owned(strip_ansi(line)) } else { Cow::Borrowed(line) }
}

/// `text` without ANSI escape sequences: CSI (`ESC [ ... final`, colours and cursor moves),
/// OSC (`ESC ] ... BEL` or `ESC ] ... ESC \`, links and titles), character set designations
/// (`ESC ( B`) and the other two-character escapes.
pub(crate) fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('[') => {
                // Parameters and intermediates, then one final byte in @..~.
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\u{7}' {
                        break;
                    }
                    if c == '\u{1b}' {
                        if chars.peek() == Some(&'\\') {
                            chars.next();
                        }
                        break;
                    }
                }
            }
            Some('(' | ')' | '*' | '+' | '-' | '.' | '/' | '#' | '%') => {
                chars.next();
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_links_and_charset_designations_are_removed() {
        assert_eq!(strip_ansi("\u{1b}[1m\u{1b}[92mok\u{1b}(B\u{1b}[m done"), "ok done");
        assert_eq!(strip_ansi("\u{1b}]8;;http://x\u{7}link\u{1b}]8;;\u{1b}\\ end"), "link end");
        assert_eq!(strip_ansi("a\u{1b}[2Kb\u{1b}=c"), "abc");
        assert_eq!(strip_ansi("trailing \u{1b}["), "trailing ");
    }

    #[test]
    fn a_line_reads_as_its_last_overdraw_without_its_ending() {
        let lines = Lines::new("one\r\nprogress 1\rprogress 2\n\u{1b}[31mred\u{1b}[0m");
        assert_eq!(lines.len(), 3);
        assert_eq!(lines.plain(0), "one");
        assert_eq!(lines.plain(1), "progress 2");
        assert_eq!(lines.plain(2), "red");
        assert_eq!(lines.raw(1), "progress 1\rprogress 2\n");
        assert!(Lines::new("  \t\n").blank(0));
    }
}
