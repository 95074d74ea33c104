//! How a complete block of Markdown looks on a terminal: pulldown-cmark's events rendered
//! with styles and wrapped to the width (the stream in `markdown.rs` decides when a block is
//! complete); and the lines of a code block shown as it streams.

use anstyle::{AnsiColor, Effects, Style};
use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::super::{Paint, sanitize};

/// Narrowest a wrapped line is made, however deeply it is nested.
const MIN_WIDTH: usize = 20;

fn code_style() -> Style {
    Style::new().fg_color(Some(AnsiColor::Yellow.into()))
}

fn inline_code_style() -> Style {
    Style::new().fg_color(Some(AnsiColor::Cyan.into()))
}

/// The line above a code block: its language, if given.
pub(super) fn code_header(info: &str, paint: Paint) -> String {
    let language = info.split_whitespace().next().unwrap_or("");
    if language.is_empty() {
        format!("{}\n", paint.dim("──"))
    } else {
        format!("{}\n", paint.dim(&format!("── {}", sanitize(language))))
    }
}

pub(super) fn code_line(line: &str, paint: Paint) -> String {
    if line.is_empty() {
        return "\n".to_owned();
    }
    format!("  {}\n", paint.paint(code_style(), &sanitize(line)))
}

pub(super) fn code_footer(paint: Paint) -> String {
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
