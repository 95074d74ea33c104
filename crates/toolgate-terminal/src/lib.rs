//! The agent on a terminal: what `toolgate run` and `toolgate chat` show and ask, behind the
//! agent's [`Frontend`](toolgate_agent::host::Frontend) and
//! [`Interaction`](toolgate_agent::host::Interaction), kept apart from the agent loop (and from
//! the binary, which parses arguments and wires things together) so that each piece can be
//! tested with in-memory readers and writers.
//!
//! - [`Console`]: the frontend and interaction `run` and `chat` hand the agent.
//! - [`PromptEditor`]: the line `chat` reads prompts with (history, multi-line input).
//! - [`markdown`]: answers rendered as Markdown while they stream in (plain text when piped),
//!   and reasoning shown dimmed.
//! - [`form`]: an MCP elicitation (`elicitation/create`) asked field by field.
//! - [`approval`]: the question asked when a tool call needs a person's approval.
//! - [`status`]: one compact line per tool call, with a spinner while it runs.
//!
//! Everything a server or a model sends is passed through [`sanitize`] before it reaches a
//! terminal, so that no escape sequence from them can move the cursor, rewrite what was shown
//! or hide text.

use std::borrow::Cow;
use std::io::{self, Write};

pub(crate) mod approval;
mod console;
pub(crate) mod form;
pub(crate) mod markdown;
mod prompt_editor;
pub(crate) mod status;

pub use console::{Console, ConsoleOptions};
pub use prompt_editor::{EditorError, PromptEditor, ReadLine};

/// Whether colours and styles may be written to an output: only to a terminal, and not when
/// `NO_COLOR` is set to something (<https://no-color.org>) or `TERM` is `dumb`.
pub(crate) fn color_enabled(is_tty: bool) -> bool {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
    is_tty && !no_color && !dumb
}

/// The width of the terminal on stdout, else on stderr, else 80 columns.
pub(crate) fn terminal_width() -> usize {
    let size = terminal_size::terminal_size_of(io::stdout())
        .or_else(|| terminal_size::terminal_size_of(io::stderr()));
    match size {
        Some((terminal_size::Width(w), _)) if w >= 20 => usize::from(w),
        _ => 80,
    }
}

/// `text` with every control character but newline and tab, and every bidirectional
/// override, written out visibly (`\u{1b}`), so that it is shown as it is and cannot act on
/// the terminal.
pub fn sanitize(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_unsafe(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// [`sanitize`], also writing newlines and tabs out: for text that must stay on one line.
pub(crate) fn one_line(text: &str) -> String {
    sanitize(text).replace('\n', "\\n").replace('\r', "\\r").replace('\t', " ")
}

fn is_unsafe(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Where the questions of [`form`] and [`approval`] read their answers from.
///
/// `Reader` (in tests) reads lines from any [`BufRead`](io::BufRead); the REPL
/// can implement it over its line editor (mapping its Ctrl-C to `Ok(None)`, which cancels).
pub(crate) trait LineInput {
    /// Shows `prompt` (on `out`, or however the editor shows prompts) and reads one line,
    /// without its line end. `Ok(None)` at the end of input (Ctrl-D).
    fn read_line(&mut self, prompt: &str, out: &mut dyn Write) -> io::Result<Option<String>>;
}

/// A [`LineInput`] over a [`BufRead`](io::BufRead): the prompt is written to `out`, then a line is read
/// (the tests' scripted answers).
#[cfg(test)]
pub(crate) struct Reader<R>(pub(crate) R);

#[cfg(test)]
impl<R: io::BufRead> LineInput for Reader<R> {
    fn read_line(&mut self, prompt: &str, out: &mut dyn Write) -> io::Result<Option<String>> {
        out.write_all(prompt.as_bytes())?;
        out.flush()?;
        let mut line = String::new();
        if self.0.read_line(&mut line)? == 0 {
            // Ends the prompt's line, as a terminal would after Ctrl-D.
            out.write_all(b"\n")?;
            return Ok(None);
        }
        let trimmed = line.strip_suffix('\n').unwrap_or(&line);
        let trimmed = trimmed.strip_suffix('\r').unwrap_or(trimmed);
        Ok(Some(trimmed.to_owned()))
    }
}

/// Styles for the questions and status lines: real ones, or none.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Paint {
    color: bool,
}

impl Paint {
    /// With colours and styles when `color` (see [`color_enabled`]).
    pub(crate) fn new(color: bool) -> Paint {
        Paint { color }
    }

    /// Whether styles are written.
    pub(crate) fn color(self) -> bool {
        self.color
    }

    /// `text` in `style`, or as it is without colours.
    pub(crate) fn paint(self, style: anstyle::Style, text: &str) -> String {
        if self.color && style != anstyle::Style::new() {
            format!("{}{text}{}", style.render(), style.render_reset())
        } else {
            text.to_owned()
        }
    }

    pub(crate) fn dim(self, text: &str) -> String {
        self.paint(anstyle::Style::new().dimmed(), text)
    }

    pub(crate) fn bold(self, text: &str) -> String {
        self.paint(anstyle::Style::new().bold(), text)
    }

    pub(crate) fn fg(self, color: anstyle::AnsiColor, text: &str) -> String {
        self.paint(anstyle::Style::new().fg_color(Some(color.into())), text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_writes_escapes_and_bidi_overrides_out() {
        assert_eq!(sanitize("plain\ttext\n"), "plain\ttext\n");
        assert!(matches!(sanitize("plain"), Cow::Borrowed(_)));
        assert_eq!(sanitize("a\x1b[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(sanitize("x\u{202e}y\u{9b}z\r"), "x\\u{202e}y\\u{9b}z\\u{d}");
        assert_eq!(one_line("a\nb\tc"), "a\\nb c");
    }

    #[test]
    fn reader_writes_the_prompt_and_reads_lines() {
        let mut input = Reader("one\r\ntwo".as_bytes());
        let mut out = Vec::new();
        assert_eq!(input.read_line("? ", &mut out).unwrap().as_deref(), Some("one"));
        assert_eq!(input.read_line("? ", &mut out).unwrap().as_deref(), Some("two"));
        assert_eq!(input.read_line("? ", &mut out).unwrap(), None);
        assert_eq!(String::from_utf8(out).unwrap(), "? ? ? \n");
    }

    #[test]
    fn paint_without_colour_is_the_text() {
        assert!(!Paint::new(false).color());
        assert_eq!(Paint::new(false).bold("x"), "x");
        assert_eq!(Paint::new(true).bold("x"), "\x1b[1mx\x1b[0m");
        assert_eq!(Paint::new(true).dim("x"), "\x1b[2mx\x1b[0m");
    }
}
