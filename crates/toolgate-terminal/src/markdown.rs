//! Answers rendered as Markdown while they stream in.
//!
//! A model's answer arrives in small pieces. [`MarkdownStream`] keeps the lines of the block
//! being written until the block is complete (a blank line outside a code fence, or
//! [`MarkdownStream::finish`]), then renders it for the terminal: headings bold and
//! underlined, emphasis, `code` in a colour, lists with bullets and numbers, block quotes with
//! a bar, links as their text and a dim URL, tables with aligned columns, rules, all wrapped to
//! the terminal's width. A fenced code block that starts a block is shown line by line as each
//! line is complete, since its lines are shown as they are anyway.
//!
//! A blank line followed by an indented line does not end a block: the indented line continues
//! a list item (or an indented code block), so rendering waits for it.
//!
//! When the output is not a terminal ([`Mode::Plain`]), the text is written as it arrives,
//! unchanged.
//!
//! Parsing is pulldown-cmark's (CommonMark with tables, strikethrough and task lists): it
//! gives events to render from, with no renderer of its own to work around, and is parsed
//! again for each block, which is cheap. termimad was the other candidate; it renders a
//! Markdown subset of its own into a whole terminal area and has no notion of text that is
//! still arriving.
//!
//! Link reference definitions apply only within the block they are in: `[text][ref]` with the
//! definition in a later block is shown as written.

use std::io::{self, Write};

use super::{Paint, color_enabled, sanitize, terminal_width};

mod render;

pub(crate) use render::render;
use render::{code_footer, code_header, code_line};

/// Widest text is wrapped to, however wide the terminal: long lines are hard to read.
const MAX_WIDTH: usize = 120;

/// How a [`MarkdownStream`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// As it arrives, unchanged: for output that is not a terminal.
    Plain,
    /// Rendered for a terminal `width` columns wide, with styles when `color`.
    Rendered { color: bool, width: usize },
}

impl Mode {
    /// What suits an output: rendered to the terminal's width (at most 120 columns) with
    /// colours unless `NO_COLOR` when `is_tty`, plain otherwise.
    pub(crate) fn for_output(is_tty: bool) -> Mode {
        if is_tty {
            Mode::Rendered { color: color_enabled(true), width: terminal_width().min(MAX_WIDTH) }
        } else {
            Mode::Plain
        }
    }
}

/// `text` dimmed (for reasoning as it streams), or as it is without colours; control
/// characters are written out visibly when `color` (the output is a terminal).
pub(crate) fn dim(text: &str, color: bool) -> String {
    if color { Paint::new(true).dim(&sanitize(text)) } else { text.to_owned() }
}

/// Markdown written to `out` as it streams in; see the module documentation.
#[derive(Debug)]
pub(crate) struct MarkdownStream<W: Write> {
    out: W,
    mode: Mode,
    /// The line being received (no newline yet).
    partial: String,
    /// The complete lines of the block waiting to be rendered.
    block: String,
    /// The block's last line is blank (the next line decides whether the block ended).
    after_blank: bool,
    /// A code fence opened inside `block` and not closed yet.
    block_fence: Option<Fence>,
    /// A fenced code block being shown line by line.
    streaming: Option<Fence>,
    /// Something was written: the next block is set apart by a blank line.
    wrote: bool,
    /// Plain: what was passed through does not end with a newline (yet).
    open_line: bool,
}

impl<W: Write> MarkdownStream<W> {
    pub(crate) fn new(out: W, mode: Mode) -> MarkdownStream<W> {
        MarkdownStream {
            out,
            mode,
            partial: String::new(),
            block: String::new(),
            after_blank: false,
            block_fence: None,
            streaming: None,
            wrote: false,
            open_line: false,
        }
    }

    /// The output.
    #[cfg(test)]
    pub(crate) fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// The output, when done.
    #[cfg(test)]
    pub(crate) fn into_inner(self) -> W {
        self.out
    }

    /// Takes the next piece of the answer; writes what is complete.
    pub(crate) fn push(&mut self, delta: &str) -> io::Result<()> {
        let Mode::Rendered { .. } = self.mode else {
            if !delta.is_empty() {
                self.open_line = !delta.ends_with('\n');
            }
            self.out.write_all(delta.as_bytes())?;
            return self.out.flush();
        };
        self.partial.push_str(delta);
        let mut wrote = false;
        while let Some(end) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=end).collect();
            let line = line.trim_end_matches(['\n', '\r']);
            wrote |= self.line(line)?;
        }
        // The first character of the line after a blank one tells whether the block ended.
        if self.after_blank
            && self.block_fence.is_none()
            && self.partial.starts_with(|c: char| !c.is_whitespace())
        {
            wrote |= self.render_block()?;
        }
        if wrote {
            self.out.flush()?;
        }
        Ok(())
    }

    /// The answer is complete: renders what is still waiting, ends the output with a newline
    /// (when rendering), and starts afresh for the next answer.
    pub(crate) fn finish(&mut self) -> io::Result<()> {
        if let Mode::Rendered { .. } = self.mode {
            if !self.partial.is_empty() {
                let line = std::mem::take(&mut self.partial);
                self.line(line.trim_end_matches('\r'))?;
            }
            if self.streaming.take().is_some() {
                let footer = code_footer(self.paint());
                self.out.write_all(footer.as_bytes())?;
            }
            self.render_block()?;
            self.wrote = false;
        } else if std::mem::take(&mut self.open_line) {
            // A piped answer ends its last line, as a command's output does.
            self.out.write_all(b"\n")?;
        }
        self.out.flush()
    }

    fn paint(&self) -> Paint {
        match self.mode {
            Mode::Rendered { color, .. } => Paint::new(color),
            Mode::Plain => Paint::new(false),
        }
    }

    /// One complete line; whether anything was written.
    fn line(&mut self, line: &str) -> io::Result<bool> {
        let paint = self.paint();
        if let Some(fence) = &self.streaming {
            let text = if fence.closed_by(line) {
                let footer = code_footer(paint);
                self.streaming = None;
                footer
            } else {
                code_line(strip_indent(line, fence.indent), paint)
            };
            self.out.write_all(text.as_bytes())?;
            return Ok(true);
        }
        let blank = line.trim().is_empty();
        if let Some(fence) = &self.block_fence {
            if fence.closed_by(line) {
                self.block_fence = None;
            }
            push_line(&mut self.block, line);
            return Ok(false);
        }
        let mut wrote = false;
        if self.after_blank {
            if blank {
                push_line(&mut self.block, line);
                return Ok(false);
            }
            self.after_blank = false;
            if !line.starts_with([' ', '\t']) {
                wrote |= self.render_block()?;
            }
        }
        if blank {
            if !self.block.is_empty() {
                push_line(&mut self.block, line);
                self.after_blank = true;
            }
            return Ok(wrote);
        }
        if let Some(fence) = Fence::opened_by(line) {
            if fence.indent == 0 || self.block.is_empty() {
                self.render_block()?;
                self.separate()?;
                let header = code_header(&fence.info, paint);
                self.out.write_all(header.as_bytes())?;
                self.streaming = Some(fence);
                return Ok(true);
            }
            self.block_fence = Some(fence);
        } else if is_atx_heading(line) {
            // A heading at the margin is a block of its own.
            wrote |= self.render_block()?;
            push_line(&mut self.block, line);
            return Ok(self.render_block()? || wrote);
        }
        push_line(&mut self.block, line);
        Ok(wrote)
    }

    /// Renders the waiting block, if any; whether anything was written.
    fn render_block(&mut self) -> io::Result<bool> {
        self.after_blank = false;
        self.block_fence = None;
        if self.block.trim().is_empty() {
            self.block.clear();
            return Ok(false);
        }
        let Mode::Rendered { color, width } = self.mode else { return Ok(false) };
        let text = render(&self.block, width, color);
        self.block.clear();
        if text.is_empty() {
            return Ok(false);
        }
        self.separate()?;
        self.out.write_all(text.as_bytes())?;
        Ok(true)
    }

    /// A blank line before a block when one was written before it.
    fn separate(&mut self) -> io::Result<()> {
        if self.wrote {
            self.out.write_all(b"\n")?;
        }
        self.wrote = true;
        Ok(())
    }
}

fn push_line(block: &mut String, line: &str) {
    block.push_str(line);
    block.push('\n');
}

fn is_atx_heading(line: &str) -> bool {
    let hashes = line.bytes().take_while(|b| *b == b'#').count();
    (1..=6).contains(&hashes) && matches!(line.as_bytes().get(hashes), None | Some(b' ' | b'\t'))
}

/// `line` without up to `indent` leading spaces.
fn strip_indent(line: &str, indent: usize) -> &str {
    let spaces = line.bytes().take(indent).take_while(|b| *b == b' ').count();
    &line[spaces..]
}

/// An opening code fence.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fence {
    marker: u8,
    len: usize,
    indent: usize,
    info: String,
}

impl Fence {
    fn opened_by(line: &str) -> Option<Fence> {
        let indent = line.bytes().take_while(|b| *b == b' ').count();
        if indent > 3 {
            return None;
        }
        let rest = &line[indent..];
        let marker = *rest.as_bytes().first()?;
        if marker != b'`' && marker != b'~' {
            return None;
        }
        let len = rest.bytes().take_while(|b| *b == marker).count();
        let info = rest[len..].trim();
        if len < 3 || (marker == b'`' && info.contains('`')) {
            return None;
        }
        Some(Fence { marker, len, indent, info: info.to_owned() })
    }

    fn closed_by(&self, line: &str) -> bool {
        let indent = line.bytes().take_while(|b| *b == b' ').count();
        if indent > 3 {
            return false;
        }
        let rest = &line[indent..];
        let len = rest.bytes().take_while(|b| *b == self.marker).count();
        len >= self.len && rest[len..].trim().is_empty()
    }
}

#[cfg(test)]
mod tests;
