//! The poisoning scan: offline, deterministic checks of what servers tell the model about their
//! tools and prompts, for instructions hidden there ("tool poisoning").
//!
//! Each [`Rule`] has an id, a severity and a way to find its spans in one text (a description,
//! a title, a parameter's description) or in a name; [`scan`] runs every rule over every text of
//! every item and returns [`Finding`]s with the offending span, which [`Finding::highlighted`]
//! shows between `»` and `«`. The patterns are regular expressions (`regex`), case-insensitive;
//! the Unicode checks look at code points. Nothing is sent anywhere.

use std::collections::BTreeSet;
use std::fmt;
use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;
use serde_json::Value;

use crate::contract::{Contract, Kind};

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

/// What every rule looks at: `server`'s `items`, and the names of every other server's tools
/// (for shadowing).
pub struct Scanned<'a> {
    pub server: &'a str,
    pub items: &'a [Contract],
}

/// Descriptions longer than this are reported (`overlong-description`).
pub const LONG_DESCRIPTION: usize = 4000;

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
        for item in scanned.items {
            for text in texts(item) {
                let mut found = Vec::new();
                if text.is_name {
                    name_rules(text.text, &mut found);
                } else {
                    prose_rules(text.text, &mut found);
                    shadowing(text.text, &others, &mut found);
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
                        excerpt: excerpt(text.text, &span),
                        text: text.text.to_owned(),
                        span,
                    });
                }
            }
        }
    }
    findings
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

/// The prose rules. Each pattern is case-insensitive and matched anywhere.
const RULES: &[Rule] = &[
    Rule {
        id: "hidden-tag",
        severity: Severity::High,
        message: "a tag that marks text meant for the model, not the user",
        pattern: r"<\s*/?\s*(important|system|instructions?|secret|hidden|admin|assistant|critical|note_to_(?:ai|model|assistant))\b[^>]*>|\[/?INST\]|<\|im_start\|>",
    },
    Rule {
        id: "override-instructions",
        severity: Severity::High,
        message: "tells the model to drop its instructions",
        pattern: r"\b(ignore|disregard|forget|override|bypass)\b[^.\n]{0,40}\b(previous|prior|above|earlier|all|other|system|safety|original)\b[^.\n]{0,20}\b(instructions?|prompts?|rules|guidelines|directions)\b",
    },
    Rule {
        id: "credential-access",
        severity: Severity::High,
        message: "points the model at credentials, keys or dotfiles",
        pattern: r#"~/\.ssh|\bid_(rsa|ed25519|ecdsa|dsa)\b|\.ssh/|\.aws/credentials|\.netrc\b|\.npmrc\b|\.pypirc\b|\.git-credentials|\.kube/config|\.docker/config\.json|/etc/(passwd|shadow)\b|\.bash_history\b|\.zsh_history\b|\.env($|[\s,;:)'"`])|\b(private|secret|api|access)[ _-]?keys?\b[^.\n]{0,40}\b(read|send|include|pass|provide|append|copy|attach|upload)\b|\b(read|send|include|pass|provide|append|copy|attach|upload)\b[^.\n]{0,40}\b(private keys?|secret keys?|api keys?|access tokens?|passwords?|credentials|mcp\.json|cursor.?config)\b"#,
    },
    Rule {
        id: "exfiltration",
        severity: Severity::High,
        message: "asks for data to be sent somewhere",
        pattern: r"\b(send|post|upload|forward|transmit|exfiltrate|leak|report|copy)\b[^.\n]{0,60}\b(to|at|via)\b\s*(https?://|ftp://|wss?://|[\w.-]+@[\w-]+\.[\w.]+|the (following|this) (url|endpoint|address|webhook))|\bcurl\b[^\n]{0,60}https?://|\bwget\b[^\n]{0,60}https?://",
    },
    Rule {
        id: "conceal-from-user",
        severity: Severity::High,
        message: "asks the model to keep something from the user",
        pattern: r"\b(do not|don't|dont|never|must not|should not)\s+(tell|inform|mention|reveal|show|notify|alert|say)\b[^.\n]{0,30}\b(user|human|them|anyone)\b|\bwithout\s+(telling|informing|notifying|alerting)\s+(the\s+)?(user|human)\b|\b(keep|leave)\s+(this|it)\s+(secret|hidden|confidential)\b|\bthe\s+user\s+(must|should)\s+not\s+(know|see|find out)\b|\bsilently\s+(add|send|upload|forward|copy|include|run|execute|call|change|modify|delete|record|store)\b",
    },
    Rule {
        id: "tool-steering",
        severity: Severity::Medium,
        message: "tells the model which other tools to use or avoid",
        pattern: r"\b(before|after)\s+(calling|using|invoking|running)\s+(this|any|the|every|another)\b[^.\n]{0,30}\b(tool|function)\b[^.\n]{0,10},?\s*(you\s+)?(must|should|always|first)\b|\b(instead of|rather than)\s+(using|calling)\b[^.\n]{0,40}\btool\b|\b(do not|don't|never)\s+(use|call|invoke)\s+(the\s+)?[\w-]+\s+tool\b|\balways\s+(call|use|invoke)\s+this\s+tool\b",
    },
    Rule {
        id: "model-imperative",
        severity: Severity::Medium,
        message: "addresses the model with orders rather than describing the tool",
        pattern: r"\b(you|the (ai|assistant|model|llm))\s+(must|shall|are required to|have to)\s+(always|first|now|immediately|also)\b|\bas an ai\b|\b(ai|assistant|model|llm)\s*(:|,)\s*(you must|always|ignore)\b",
    },
];

static COMPILED: LazyLock<Vec<(Regex, &'static Rule)>> = LazyLock::new(|| {
    RULES
        .iter()
        .map(|rule| {
            let regex = Regex::new(&format!("(?i){}", rule.pattern)).expect("a valid pattern");
            (regex, rule)
        })
        .collect()
});

fn prose_rules(text: &str, found: &mut Found) {
    for (regex, rule) in COMPILED.iter() {
        if let Some(m) = regex.find(text) {
            found.push((rule.id, rule.severity, rule.message, m.range()));
        }
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
            LONG_DESCRIPTION..text.len(),
        ));
    }
}

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

/// One server's description naming another server's tool.
fn shadowing(text: &str, others: &BTreeSet<&str>, found: &mut Found) {
    for name in others {
        let mut from = 0;
        while let Some(at) = text[from..].find(name).map(|i| i + from) {
            let end = at + name.len();
            let word = |c: char| c.is_alphanumeric() || c == '_';
            let before = text[..at].chars().next_back().is_none_or(|c| !word(c));
            let after = text[end..].chars().next().is_none_or(|c| !word(c));
            if before && after {
                found.push((
                    "shadowing",
                    Severity::Medium,
                    "names a tool of another server (it may try to change how that one is used)",
                    at..end,
                ));
                return;
            }
            from = end;
        }
    }
}

/// Whether `c` is invisible or changes the text's direction: tag characters, zero-width
/// characters, bidirectional controls, and other format characters a person does not see.
fn is_invisible(c: char) -> bool {
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

/// The span of the first run of invisible characters.
fn invisible(text: &str) -> Option<Range<usize>> {
    let start = text.char_indices().find(|(_, c)| is_invisible(*c))?.0;
    let end = text[start..]
        .char_indices()
        .find(|(_, c)| !is_invisible(*c))
        .map_or(text.len(), |(i, _)| start + i);
    Some(start..end)
}

/// `span` of `text` with up to 40 characters around it, the span between `»` and `«`,
/// invisible characters spelled out, line breaks as `⏎`.
fn excerpt(text: &str, span: &Range<usize>) -> String {
    let before: String =
        text[..span.start].chars().rev().take(40).collect::<Vec<_>>().into_iter().rev().collect();
    let after: String = text[span.end..].chars().take(40).collect();
    let lead = if before.len() < span.start { "…" } else { "" };
    let tail = if span.end + after.len() < text.len() { "…" } else { "" };
    let mut span_text = String::new();
    for c in text[span.start..span.end].chars().take(80) {
        if is_invisible(c) {
            span_text.push_str(&format!("<U+{:04X}>", c as u32));
        } else {
            span_text.push(c);
        }
    }
    if text[span.start..span.end].chars().count() > 80 {
        span_text.push('…');
    }
    let visible = |s: &str| s.replace('\n', "⏎");
    format!("{lead}{}»{}«{}{tail}", visible(&before), visible(&span_text), visible(&after))
}

#[cfg(test)]
mod tests;
