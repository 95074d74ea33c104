//! The poisoning scan: offline, deterministic checks of what servers tell the model about their
//! tools and prompts, for instructions hidden there ("tool poisoning").
//!
//! Prose (descriptions, titles, parameter and argument descriptions) is read sentence by
//! sentence for what it asks of the model (`scan/intent.rs`): dropping its instructions, keeping
//! something from the user, taking a role, fetching secrets, sending data out, steering to
//! other tools. Beside that: tags that mark text for the model (`<IMPORTANT>`), invisible
//! characters, blank-space padding, overlong descriptions, non-ASCII look-alike names, and one
//! server's descriptions naming another server's tools (shadowing). [`scan`] returns
//! [`Finding`]s with the offending span, which [`Finding::highlighted`] shows between `»` and
//! `«`. Nothing is sent anywhere.
//!
//! How well it does is measured on a corpus with a development and a held-out half
//! (`tests/scan_corpus.rs`, `docs/scan.md`).

use std::collections::BTreeSet;
use std::fmt;
use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;
use serde_json::Value;

use crate::contract::{Contract, Kind};
use crate::excerpt::{excerpt, is_invisible};

mod intent;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Low,
    Medium,
    High,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
        })
    }
}

/// One thing found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The rule that found it (`hidden-tag`, `credential-access`, ...).
    pub rule: &'static str,
    pub severity: Severity,
    /// The server whose item it is in.
    pub server: String,
    /// `tool`, `prompt`, ...
    pub kind: &'static str,
    /// The item's name (or URI).
    pub item: String,
    /// Where in the item: `description`, `inputSchema.properties.path.description`, `name`.
    pub field: String,
    /// What the rule says about it.
    pub message: &'static str,
    /// The text scanned, and the byte range of the offending span in it.
    #[serde(skip)]
    pub text: String,
    pub span: Range<usize>,
    /// The span with some context, the span itself between `»` and `«` (invisible characters
    /// written as `<U+XXXX>`).
    pub excerpt: String,
}

impl Finding {
    /// The excerpt, for people.
    pub fn highlighted(&self) -> &str {
        &self.excerpt
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} `{}` of `{}`, {}: [{}] {}: {}",
            self.severity,
            self.kind,
            self.item,
            self.server,
            self.field,
            self.rule,
            self.message,
            self.excerpt
        )
    }
}

/// A text of one item, and where in the item it is.
struct Text<'a> {
    field: String,
    text: &'a str,
    /// Whether it is a name (checked for look-alike characters) rather than prose.
    is_name: bool,
}

impl Text<'_> {
    /// Whether it describes an argument of a call: a tool's parameter or a prompt's argument.
    fn is_argument(&self) -> bool {
        self.field.starts_with("inputSchema.") || self.field.starts_with("arguments[")
    }
}

/// What every rule looks at: `server`'s `items`, and the names of every other server's tools
/// (for shadowing).
pub struct Scanned<'a> {
    pub server: &'a str,
    pub items: &'a [Contract],
}

/// Descriptions longer than this are reported (`overlong-description`).
pub const LONG_DESCRIPTION: usize = 4000;

/// How much of one text is read for what it asks (64 KiB); a longer text is a finding of its
/// own (`unread-text`).
pub const READ_LIMIT: usize = 64 * 1024;

/// Scans every server's items; findings in server, item, field, position order.
pub fn scan(servers: &[Scanned<'_>]) -> Vec<Finding> {
    let mut findings = Vec::new();
    for scanned in servers {
        let others: BTreeSet<&str> = servers
            .iter()
            .filter(|other| other.server != scanned.server)
            .flat_map(|other| other.items.iter())
            .filter(|c| c.kind == Kind::Tool && c.key.len() >= 4)
            .map(|c| c.key.as_str())
            .collect();
        let own: BTreeSet<&str> = scanned.items.iter().map(|c| c.key.as_str()).collect();
        for item in scanned.items {
            let fields = schema_names(item);
            for text in texts(item) {
                let mut found = Vec::new();
                if text.is_name {
                    name_rules(text.text, &mut found);
                } else {
                    let context = intent::Context {
                        argument: text.is_argument(),
                        own: &own,
                        fields: &fields,
                        name: &item.key,
                        argument_name: argument_name(item, &text.field),
                    };
                    prose_rules(text.text, &context, &mut found);
                    shadowing(text.text, &others, &own, &fields, &mut found);
                }
                for (rule, severity, message, span) in found {
                    findings.push(Finding {
                        rule,
                        severity,
                        server: scanned.server.to_owned(),
                        kind: item.kind.noun(),
                        item: item.key.clone(),
                        field: text.field.clone(),
                        message,
                        excerpt: excerpt(text.text, &span, 80),
                        text: text.text.to_owned(),
                        span,
                    });
                }
            }
        }
    }
    findings
}

/// The names `item`'s own schemas give: its parameters' and their properties' names, the
/// values its enums allow, its prompt arguments' names. A description that says "use
/// `anchor_position`" or "use 'recommended_time_window'" names one of these, not a tool.
fn schema_names(item: &Contract) -> BTreeSet<&str> {
    fn walk<'a>(value: &'a Value, out: &mut BTreeSet<&'a str>) {
        match value {
            Value::Object(object) => {
                for (key, value) in object {
                    match (key.as_str(), value) {
                        ("properties", Value::Object(properties)) => {
                            out.extend(properties.keys().map(String::as_str));
                        }
                        ("enum", Value::Array(values)) => {
                            out.extend(values.iter().filter_map(Value::as_str));
                        }
                        ("name", Value::String(name)) => {
                            out.insert(name);
                        }
                        _ => {}
                    }
                    walk(value, out);
                }
            }
            Value::Array(items) => items.iter().for_each(|item| walk(item, out)),
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    for field in ["inputSchema", "arguments"] {
        if let Some(value) = item.field(field) {
            walk(value, &mut out);
        }
    }
    out
}

/// The texts of `item` a model reads: its name, title and description, and every
/// `description` and `title` inside its schemas or arguments.
fn texts(item: &Contract) -> Vec<Text<'_>> {
    let mut out = Vec::new();
    if let Some(name) = item.field("name").and_then(Value::as_str) {
        out.push(Text { field: "name".into(), text: name, is_name: true });
    }
    for field in ["title", "description"] {
        if let Some(text) = item.field(field).and_then(Value::as_str) {
            out.push(Text { field: field.into(), text, is_name: false });
        }
    }
    for field in ["inputSchema", "outputSchema", "arguments", "annotations"] {
        if let Some(value) = item.field(field) {
            nested_texts(value, field.to_owned(), &mut out);
        }
    }
    out
}

/// The name of the argument a text at `field` describes: the property of a tool's input schema
/// (`inputSchema.properties.prompt.description`), or a prompt's argument (`arguments[0]…`).
fn argument_name<'a>(item: &'a Contract, field: &'a str) -> Option<&'a str> {
    if let Some(rest) = field.strip_prefix("inputSchema.") {
        let (before, _) = rest.rsplit_once('.')?;
        let (path, name) = before.rsplit_once('.')?;
        return path.ends_with("properties").then_some(name);
    }
    let index: usize = field.strip_prefix("arguments[")?.split(']').next()?.parse().ok()?;
    item.field("arguments")?.get(index)?.get("name")?.as_str()
}

fn nested_texts<'a>(value: &'a Value, path: String, out: &mut Vec<Text<'a>>) {
    match value {
        Value::Object(object) => {
            for (key, value) in object {
                let here = format!("{path}.{key}");
                match value {
                    Value::String(text) if matches!(key.as_str(), "description" | "title") => {
                        out.push(Text { field: here, text, is_name: false });
                    }
                    _ => nested_texts(value, here, out),
                }
            }
        }
        Value::Array(items) => {
            for (index, value) in items.iter().enumerate() {
                nested_texts(value, format!("{path}[{index}]"), out);
            }
        }
        _ => {}
    }
}

type Found = Vec<(&'static str, Severity, &'static str, Range<usize>)>;

/// A rule over prose.
struct Rule {
    id: &'static str,
    severity: Severity,
    message: &'static str,
    pattern: &'static str,
}

/// The prose rules found by a pattern alone. Each pattern is case-insensitive and matched
/// anywhere; everything else a sentence asks is read by [`intent`].
const RULES: &[Rule] = &[Rule {
    id: "hidden-tag",
    severity: Severity::High,
    message: "a tag that marks text meant for the model, not the user",
    // `<secret>` alone is a placeholder ("key=<secret>"); a tag that marks text opens and
    // closes (`<secret>…</secret>`), except the few that only ever mean the model.
    pattern: r"<\s*/?\s*(important|system|instructions?|critical|note_to_(?:ai|model|assistant))\b[^>]*>|<\s*/\s*(secret|hidden|admin|assistant)\s*>|\[/?INST\]|<\|im_start\|>",
}];

static COMPILED: LazyLock<Vec<(Regex, &'static Rule)>> = LazyLock::new(|| {
    RULES
        .iter()
        .map(|rule| {
            let regex = Regex::new(&format!("(?i){}", rule.pattern)).expect("a valid pattern");
            (regex, rule)
        })
        .collect()
});

fn prose_rules(text: &str, context: &intent::Context<'_>, found: &mut Found) {
    for (regex, rule) in COMPILED.iter() {
        if let Some(m) = regex.find(text) {
            found.push((rule.id, rule.severity, rule.message, m.range()));
        }
    }
    // What the sentences ask is read in the first READ_LIMIT bytes: reading costs time in
    // proportion to the text, and a server controls how long its texts are.
    let read = &text[..boundary_at_or_after(text, READ_LIMIT.min(text.len()))];
    let mut asked = Vec::new();
    intent::read(read, context, &mut asked);
    for ((rule, severity, message), span) in asked {
        found.push((rule, severity, message, span));
    }
    if read.len() < text.len() {
        found.push((
            "unread-text",
            Severity::Medium,
            "too long to read whole: what it asks past the first 64 KiB is not known",
            read.len()..text.len(),
        ));
    }
    if let Some(span) = padding(text) {
        found.push((
            "padding",
            Severity::Medium,
            "a long run of blank space (it pushes what follows out of sight)",
            span,
        ));
    }
    if let Some(span) = invisible(text) {
        found.push((
            "invisible-unicode",
            Severity::High,
            "invisible or direction-changing characters (text the user does not see)",
            span,
        ));
    }
    if text.len() > LONG_DESCRIPTION {
        found.push((
            "overlong-description",
            Severity::Low,
            "far longer than a tool needs (room to hide instructions)",
            boundary_at_or_after(text, LONG_DESCRIPTION)..text.len(),
        ));
    }
}

/// The first character boundary of `text` at or after `at` (a span must not split a
/// character: the excerpt slices at it).
fn boundary_at_or_after(text: &str, at: usize) -> usize {
    (at..=text.len()).find(|&i| text.is_char_boundary(i)).unwrap_or(text.len())
}

/// A run of at least [`BLANK_RUN`] whitespace characters, or of [`BLANK_LINES`] line breaks.
fn padding(text: &str) -> Option<Range<usize>> {
    static RUN: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(&format!(
            r"[\s\u{{2000}}-\u{{200A}}\u{{3000}}]{{{BLANK_RUN},}}|(\s*\n){{{BLANK_LINES},}}"
        ))
        .expect("a valid pattern")
    });
    RUN.find(text).map(|m| m.range())
}

/// Blank space that long is padding, not layout.
const BLANK_RUN: usize = 120;
const BLANK_LINES: usize = 12;

fn name_rules(name: &str, found: &mut Found) {
    if let Some(span) = invisible(name) {
        found.push(("invisible-unicode", Severity::High, "invisible characters in a name", span));
    } else if let Some((at, c)) = name.char_indices().find(|(_, c)| !c.is_ascii()) {
        found.push((
            "lookalike-name",
            Severity::High,
            "a non-ASCII character in a name (it may imitate another tool's)",
            at..at + c.len_utf8(),
        ));
    }
}

/// One server's description naming another server's tool: medium when the sentence that
/// names it also gives an order or a condition about it (`when send_email is used, add …`),
/// low when it only mentions it. A name the server has too is its own; a name that is a plain
/// word (`fetch`, `type`) counts only when it is quoted and called a tool or called, since
/// prose and schemas use it as a word.
fn shadowing(
    text: &str,
    others: &BTreeSet<&str>,
    own: &BTreeSet<&str>,
    fields: &BTreeSet<&str>,
    found: &mut Found,
) {
    let mut low = None;
    let mut steering = intent::Steering::new(text);
    // A name the item's own schema gives (an enum value, a parameter) is the item's word.
    for name in others.iter().filter(|name| !own.contains(*name) && !fields.contains(*name)) {
        // A word (`query`, or `Initialize` opening a sentence) names a tool only when it is
        // quoted as code; `listDocumentTabs` or `run_query` is a name wherever it is.
        let mut chars = name.chars();
        let plain = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_lowercase());
        let mut from = 0;
        while let Some(at) = text[from..].find(name).map(|i| i + from) {
            let end = at + name.len();
            from = end;
            // `-` and `$` join words of names (`atlas-list-projects`, `$search`).
            let word = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '$');
            // A namespaced mention (`mcp__server__name`, `server.name`, `server/name`) names it
            // too.
            let prefix = &text[..at];
            let before =
                prefix.chars().next_back().is_none_or(|c| !word(c)) || prefix.ends_with("__");
            let after = text[end..].chars().next().is_none_or(|c| !word(c));
            if !(before && after) {
                continue;
            }
            if plain && !(quoted(text, at..end) && named_as_code_or_tool(text, at..end)) {
                continue;
            }
            if steering.at(at) {
                found.push((
                    "shadowing",
                    Severity::Medium,
                    "gives orders about a tool of another server (it may change how that one \
                     is used)",
                    at..end,
                ));
                return;
            }
            low.get_or_insert(at..end);
        }
    }
    if let Some(span) = low {
        found.push(("shadowing", Severity::Low, "names a tool of another server", span));
    }
}

/// Whether the name at `span` of `text` is written as code or in quotes.
fn quoted(text: &str, span: Range<usize>) -> bool {
    let before = text[..span.start].chars().next_back();
    let after = text[span.end..].chars().next();
    matches!(
        (before, after),
        (Some('`'), Some('`')) | (Some('\''), Some('\'')) | (Some('"'), Some('"'))
    )
}

/// Whether the name at `span` of `text` is called a tool (`the fetch tool`, `` `fetch` tool``)
/// or is what the sentence calls (`call fetch`, ``use `fetch` ``).
fn named_as_code_or_tool(text: &str, span: Range<usize>) -> bool {
    let before = text[..span.start].trim_end_matches(' ');
    let after = text[span.end..].trim_start_matches(' ');
    let called = |verb: &str| before.to_ascii_lowercase().ends_with(verb);
    ["tool", "function"]
        .iter()
        .any(|word| after.trim_start_matches('`').to_ascii_lowercase().starts_with(word))
        || ["call", "invoke", "use"].iter().any(|verb| called(verb) || called(&format!("{verb} `")))
}

/// The span of the first run of invisible characters.
fn invisible(text: &str) -> Option<Range<usize>> {
    let start = text.char_indices().find(|(_, c)| is_invisible(*c))?.0;
    let end = text[start..]
        .char_indices()
        .find(|(_, c)| !is_invisible(*c))
        .map_or(text.len(), |(i, _)| start + i);
    Some(start..end)
}

#[cfg(test)]
mod tests;
