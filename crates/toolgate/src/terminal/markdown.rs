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

use anstyle::{AnsiColor, Effects, Style};
use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::{Paint, color_enabled, sanitize, terminal_width};

/// Widest text is wrapped to, however wide the terminal: long lines are hard to read.
const MAX_WIDTH: usize = 120;
/// Narrowest a wrapped line is made, however deeply it is nested.
const MIN_WIDTH: usize = 20;

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
            if let Some(fence) = self.streaming.take() {
                let footer = code_footer(&fence, self.paint());
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
                let footer = code_footer(fence, paint);
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

fn code_style() -> Style {
    Style::new().fg_color(Some(AnsiColor::Yellow.into()))
}

fn inline_code_style() -> Style {
    Style::new().fg_color(Some(AnsiColor::Cyan.into()))
}

/// The line above a code block: its language, if given.
fn code_header(info: &str, paint: Paint) -> String {
    let language = info.split_whitespace().next().unwrap_or("");
    if language.is_empty() {
        format!("{}\n", paint.dim("──"))
    } else {
        format!("{}\n", paint.dim(&format!("── {}", sanitize(language))))
    }
}

fn code_line(line: &str, paint: Paint) -> String {
    if line.is_empty() {
        return "\n".to_owned();
    }
    format!("  {}\n", paint.paint(code_style(), &sanitize(line)))
}

fn code_footer(_fence: &Fence, paint: Paint) -> String {
    format!("{}\n", paint.dim("──"))
}

/// `markdown` (complete blocks) rendered for a terminal `width` columns wide, with styles
/// when `color`; each line ends with a newline, none is blank at the start or the end.
pub(crate) fn render(markdown: &str, width: usize, color: bool) -> String {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut renderer = Renderer::new(width.max(MIN_WIDTH), Paint::new(color));
    for event in Parser::new_ext(markdown, options) {
        renderer.event(event);
    }
    renderer.flush_inline();
    renderer.out
}

/// A piece of inline text in one style.
#[derive(Debug, Clone)]
struct Piece {
    text: String,
    style: Style,
}

#[derive(Debug)]
enum Container {
    Quote,
    Item { marker: String, shown: bool },
}

#[derive(Debug)]
struct Table {
    alignments: Vec<Alignment>,
    rows: Vec<Vec<Vec<Piece>>>,
    row: Vec<Vec<Piece>>,
}

#[derive(Debug)]
struct Renderer {
    width: usize,
    paint: Paint,
    out: String,
    containers: Vec<Container>,
    /// Inline text of the paragraph, heading, item or cell being read.
    pieces: Vec<Piece>,
    styles: Vec<Style>,
    /// Open links: their URL and where their text starts in `pieces`.
    links: Vec<(String, usize)>,
    /// The next number of each open list (`None`: bullets).
    lists: Vec<Option<u64>>,
    code: Option<(String, String)>,
    table: Option<Table>,
    pending_blank: bool,
}

impl Renderer {
    fn new(width: usize, paint: Paint) -> Renderer {
        Renderer {
            width,
            paint,
            out: String::new(),
            containers: Vec::new(),
            pieces: Vec::new(),
            styles: Vec::new(),
            links: Vec::new(),
            lists: Vec::new(),
            code: None,
            table: None,
            pending_blank: false,
        }
    }

    fn style(&self) -> Style {
        self.styles.iter().fold(Style::new(), |all, s| combine(all, *s))
    }

    fn text(&mut self, text: &str, style: Style) {
        let text = sanitize(text).into_owned();
        self.pieces.push(Piece { text, style });
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => {
                if let Some((_, code)) = &mut self.code {
                    code.push_str(&text);
                } else {
                    let style = self.style();
                    self.text(&text, style);
                }
            }
            Event::Code(text) => {
                let style = combine(self.style(), inline_code_style());
                self.text(&text, style);
            }
            Event::InlineMath(text) | Event::DisplayMath(text) | Event::InlineHtml(text) => {
                let style = self.style();
                self.text(&text, style);
            }
            Event::Html(text) => {
                for line in text.lines() {
                    self.line(&sanitize(line));
                }
            }
            Event::FootnoteReference(name) => {
                let style = self.style();
                self.text(&format!("[^{name}]"), style);
            }
            Event::SoftBreak => self.text(" ", Style::new()),
            Event::HardBreak => self.text("\n", Style::new()),
            Event::Rule => {
                self.start_block();
                let width = self.available().min(80);
                let rule = self.paint.dim(&"─".repeat(width));
                self.line(&rule);
                self.pending_blank = true;
            }
            Event::TaskListMarker(done) => {
                let style = self.style();
                self.text(if done { "[x] " } else { "[ ] " }, style);
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph | Tag::HtmlBlock | Tag::MetadataBlock(_) => self.start_block(),
            Tag::Heading { level, .. } => {
                self.start_block();
                let style = match level {
                    HeadingLevel::H1 => {
                        Style::new().bold().underline().fg_color(Some(AnsiColor::Magenta.into()))
                    }
                    HeadingLevel::H2 => Style::new().bold().underline(),
                    _ => Style::new().bold(),
                };
                self.styles.push(style);
            }
            Tag::BlockQuote(_) => {
                self.start_block();
                self.containers.push(Container::Quote);
            }
            Tag::CodeBlock(kind) => {
                self.start_block();
                let info = match kind {
                    CodeBlockKind::Fenced(info) => info.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((info, String::new()));
            }
            Tag::List(start) => {
                if self.lists.is_empty() {
                    self.start_block();
                } else {
                    self.flush_inline();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush_inline();
                let depth = self.lists.len();
                let marker = match self.lists.last_mut() {
                    Some(Some(next)) => {
                        let marker = format!("{next}. ");
                        *next += 1;
                        marker
                    }
                    _ => match depth {
                        0 | 1 => "• ".to_owned(),
                        2 => "◦ ".to_owned(),
                        _ => "▪ ".to_owned(),
                    },
                };
                self.containers.push(Container::Item { marker, shown: false });
            }
            Tag::Table(alignments) => {
                self.start_block();
                self.table = Some(Table { alignments, rows: Vec::new(), row: Vec::new() });
            }
            Tag::TableHead | Tag::TableRow | Tag::TableCell => self.pieces.clear(),
            Tag::Emphasis => self.styles.push(Style::new().italic()),
            Tag::Strong => self.styles.push(Style::new().bold()),
            Tag::Strikethrough => self.styles.push(Style::new().strikethrough()),
            Tag::Superscript | Tag::Subscript => self.styles.push(Style::new()),
            Tag::Link { dest_url, .. } => {
                self.links.push((dest_url.to_string(), self.pieces.len()));
                self.styles.push(Style::new().underline());
            }
            Tag::Image { dest_url, .. } => {
                let style = self.style();
                self.text("[image: ", style);
                self.links.push((dest_url.to_string(), self.pieces.len()));
                self.styles.push(Style::new());
            }
            Tag::FootnoteDefinition(name) => {
                self.start_block();
                let style = self.style();
                self.text(&format!("[^{name}]: "), style);
            }
            Tag::DefinitionList | Tag::DefinitionListTitle | Tag::DefinitionListDefinition => {
                self.start_block();
            }
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph
            | TagEnd::HtmlBlock
            | TagEnd::MetadataBlock(_)
            | TagEnd::FootnoteDefinition
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition => {
                self.flush_inline();
                self.pending_blank = true;
            }
            TagEnd::Heading(_) => {
                self.flush_inline();
                self.styles.pop();
                self.pending_blank = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush_inline();
                self.containers.pop();
                self.pending_blank = true;
            }
            TagEnd::CodeBlock => {
                if let Some((info, code)) = self.code.take() {
                    let header = code_header(&info, self.paint);
                    self.line(header.trim_end_matches('\n'));
                    for line in code.lines() {
                        let line = code_line(line, self.paint);
                        self.line(line.trim_end_matches('\n'));
                    }
                    let footer = self.paint.dim("──");
                    self.line(&footer);
                }
                self.pending_blank = true;
            }
            TagEnd::List(_) => {
                self.flush_inline();
                self.lists.pop();
                // A nested list ends inside its item: the next item follows without a gap.
                self.pending_blank = self.lists.is_empty();
            }
            TagEnd::Item => {
                self.flush_inline();
                if let Some(Container::Item { shown: false, .. }) = self.containers.last() {
                    self.line("");
                }
                self.containers.pop();
            }
            TagEnd::TableCell => {
                let cell = std::mem::take(&mut self.pieces);
                if let Some(table) = &mut self.table {
                    table.row.push(cell);
                }
            }
            TagEnd::TableHead | TagEnd::TableRow => {
                if let Some(table) = &mut self.table {
                    let row = std::mem::take(&mut table.row);
                    table.rows.push(row);
                }
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    self.table(table);
                }
                self.pending_blank = true;
            }
            TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Superscript
            | TagEnd::Subscript => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some((url, from)) = self.links.pop() {
                    let text: String =
                        self.pieces[from..].iter().map(|p| p.text.as_str()).collect();
                    let shown = url.strip_prefix("mailto:").unwrap_or(&url);
                    if !url.is_empty() && text != shown {
                        let style = combine(self.style(), Style::new().dimmed());
                        self.text(&format!(" ({url})"), style);
                    }
                }
            }
            TagEnd::Image => {
                self.styles.pop();
                let style = self.style();
                self.text("]", style);
                if let Some((url, _)) = self.links.pop()
                    && !url.is_empty()
                {
                    let style = combine(style, Style::new().dimmed());
                    self.text(&format!(" ({url})"), style);
                }
            }
        }
    }

    /// Before a block: the inline text of an item before it, and the gap after the block
    /// before it.
    fn start_block(&mut self) {
        self.flush_inline();
        if self.pending_blank && !self.out.is_empty() {
            self.blank_line();
        }
        self.pending_blank = false;
    }

    /// Columns left for text inside the open containers.
    fn available(&self) -> usize {
        let used: usize = self
            .containers
            .iter()
            .map(|c| match c {
                Container::Quote => 2,
                Container::Item { marker, .. } => marker.width(),
            })
            .sum();
        self.width.saturating_sub(used).max(MIN_WIDTH)
    }

    fn prefix(&mut self) -> String {
        let mut prefix = String::new();
        for container in &mut self.containers {
            match container {
                Container::Quote => prefix.push_str(&self.paint.fg(AnsiColor::Blue, "│ ")),
                Container::Item { marker, shown } => {
                    if *shown {
                        prefix.push_str(&" ".repeat(marker.width()));
                    } else {
                        *shown = true;
                        prefix.push_str(marker);
                    }
                }
            }
        }
        prefix
    }

    fn line(&mut self, content: &str) {
        let prefix = self.prefix();
        self.out.push_str(if content.is_empty() { prefix.trim_end() } else { &prefix });
        self.out.push_str(content);
        self.out.push('\n');
    }

    fn blank_line(&mut self) {
        let bars = self.containers.iter().filter(|c| matches!(c, Container::Quote)).count();
        if bars > 0 && matches!(self.containers.first(), Some(Container::Quote)) {
            let bars = self.paint.fg(AnsiColor::Blue, &vec!["│"; bars].join(" "));
            self.out.push_str(&bars);
        }
        self.out.push('\n');
    }

    /// Writes the inline text read so far, wrapped.
    fn flush_inline(&mut self) {
        if self.pieces.is_empty() || self.table.is_some() {
            return;
        }
        let pieces = std::mem::take(&mut self.pieces);
        if pieces.iter().all(|p| p.text.trim().is_empty()) {
            return;
        }
        for line in wrap(&pieces, self.available()) {
            let text = self.styled(&line);
            self.line(&text);
        }
    }

    fn styled(&self, pieces: &[Piece]) -> String {
        let mut text = String::new();
        for piece in pieces {
            text.push_str(&self.paint.paint(piece.style, &piece.text));
        }
        text
    }

    fn table(&mut self, table: Table) {
        let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0; columns];
        for row in &table.rows {
            for (i, cell) in row.iter().enumerate() {
                widths[i] = widths[i].max(pieces_width(cell));
            }
        }
        let total = widths.iter().sum::<usize>() + 3 * columns.saturating_sub(1);
        let separator = self.paint.dim(" │ ");
        if total > self.available() {
            // Too wide to align: each row as it is, its cells set apart, wrapped.
            for row in &table.rows {
                let mut pieces = Vec::new();
                for (i, cell) in row.iter().enumerate() {
                    if i > 0 {
                        pieces.push(Piece { text: " │ ".into(), style: Style::new().dimmed() });
                    }
                    pieces.extend(cell.iter().cloned());
                }
                for line in wrap(&pieces, self.available()) {
                    let text = self.styled(&line);
                    self.line(&text);
                }
            }
            return;
        }
        for (r, row) in table.rows.iter().enumerate() {
            let mut cells = Vec::new();
            for (i, width) in widths.iter().enumerate() {
                let cell = row.get(i).map(Vec::as_slice).unwrap_or(&[]);
                let pad = width - pieces_width(cell);
                let (left, right) = match table.alignments.get(i) {
                    Some(Alignment::Right) => (pad, 0),
                    Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                    _ => (0, pad),
                };
                let mut style = Style::new();
                if r == 0 {
                    style = style.bold();
                }
                let text = cell
                    .iter()
                    .map(|p| self.paint.paint(combine(style, p.style), &p.text))
                    .collect::<String>();
                cells.push(format!("{}{text}{}", " ".repeat(left), " ".repeat(right)));
            }
            let line = cells.join(&separator);
            self.line(line.trim_end());
            if r == 0 {
                let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                let rule = self.paint.dim(&rule.join("─┼─"));
                self.line(&rule);
            }
        }
    }
}

fn combine(base: Style, over: Style) -> Style {
    let effects: Effects = base.get_effects() | over.get_effects();
    Style::new()
        .effects(effects)
        .fg_color(over.get_fg_color().or(base.get_fg_color()))
        .bg_color(over.get_bg_color().or(base.get_bg_color()))
}

fn pieces_width(pieces: &[Piece]) -> usize {
    pieces.iter().map(|p| p.text.width()).sum()
}

/// Inline pieces broken into lines of at most `width` columns, at spaces where possible, at
/// newlines (hard breaks) always; a word longer than a line is cut.
fn wrap(pieces: &[Piece], width: usize) -> Vec<Vec<Piece>> {
    // Words: runs of non-space text, each made of the pieces (styles) it spans.
    enum Token {
        Word(Vec<Piece>),
        Space(Style),
        Break,
    }
    let mut tokens: Vec<Token> = Vec::new();
    let mut word: Vec<Piece> = Vec::new();
    for piece in pieces {
        let mut run = String::new();
        for c in piece.text.chars() {
            if c == ' ' || c == '\n' || c == '\t' {
                if !run.is_empty() {
                    word.push(Piece { text: std::mem::take(&mut run), style: piece.style });
                }
                if !word.is_empty() {
                    tokens.push(Token::Word(std::mem::take(&mut word)));
                }
                tokens.push(if c == '\n' { Token::Break } else { Token::Space(piece.style) });
            } else {
                run.push(c);
            }
        }
        if !run.is_empty() {
            word.push(Piece { text: run, style: piece.style });
        }
    }
    if !word.is_empty() {
        tokens.push(Token::Word(word));
    }

    let mut lines: Vec<Vec<Piece>> = vec![Vec::new()];
    let mut used = 0;
    // The style of the space before the next word (underlined in a link, for example).
    let mut space: Option<Style> = None;
    for token in tokens {
        match token {
            Token::Space(style) => {
                if used > 0 && space.is_none() {
                    space = Some(style);
                }
            }
            Token::Break => {
                lines.push(Vec::new());
                used = 0;
                space = None;
            }
            Token::Word(word) => {
                let w = pieces_width(&word);
                if used > 0 && used + usize::from(space.is_some()) + w > width {
                    lines.push(Vec::new());
                    used = 0;
                } else if let Some(style) = space
                    && used > 0
                {
                    push_piece(lines.last_mut().expect("a line"), " ", style);
                    used += 1;
                }
                space = None;
                for piece in word {
                    for c in piece.text.chars() {
                        let cw = c.width().unwrap_or(0);
                        if used > 0 && used + cw > width {
                            lines.push(Vec::new());
                            used = 0;
                        }
                        let line = lines.last_mut().expect("a line");
                        push_piece(line, c.encode_utf8(&mut [0; 4]), piece.style);
                        used += cw;
                    }
                }
            }
        }
    }
    while lines.last().is_some_and(Vec::is_empty) && lines.len() > 1 {
        lines.pop();
    }
    lines
}

/// Appends `text` to `line`, to its last piece when that has the same style.
fn push_piece(line: &mut Vec<Piece>, text: &str, style: Style) {
    match line.last_mut() {
        Some(last) if last.style == style => last.text.push_str(text),
        _ => line.push(Piece { text: text.to_owned(), style }),
    }
}

#[cfg(test)]
mod tests {
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
        let markdown =
            "| name | n | where |\n|:--|--:|:-:|\n| alpha | 1 | here |\n| b | 200 | x |\n";
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
}
