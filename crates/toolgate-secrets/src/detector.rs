//! [`Selection`] (which kinds to look for, built-in and custom) and [`Detector`] (the compiled
//! patterns): finding, resolving overlaps, and replacing.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;

use regex::{Regex, RegexSet, RegexSetBuilder};

use crate::checks::{self, Check};
use crate::kind::{Builtin, known_names};
use crate::rules::RULES;

/// What [`Selection`] and [`Custom`] refuse. Messages name the detector, never a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DetectorError {
    /// A name that is neither `all` nor a built-in kind.
    #[error("unknown detector {name:?} (known: {known})")]
    UnknownKind {
        /// The name given.
        name: String,
        /// Every name that would do.
        known: String,
    },
    /// A custom detector's name that cannot be one.
    #[error(
        "invalid detector name {name:?}: use 1 to 64 of a-z, 0-9 and _, starting with a letter"
    )]
    BadName {
        /// The name given.
        name: String,
    },
    /// A custom detector named like a built-in one.
    #[error("{name:?} is the name of a built-in detector; give the custom one another name")]
    BuiltinName {
        /// The name given.
        name: String,
    },
    /// Two custom detectors with one name.
    #[error("two custom detectors are named {name:?}")]
    DuplicateName {
        /// The name given twice.
        name: String,
    },
    /// A custom pattern that does not compile (or that matches the empty string).
    #[error("the regex of detector {name:?} {reason}")]
    BadRegex {
        /// The detector's name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// A detector of the operator's own: a name and a regex. When the regex has a group named
/// `secret`, only that group is redacted (`password=(?P<secret>\S+)` keeps `password=`).
#[derive(Clone)]
pub struct Custom {
    name: String,
    regex: Regex,
    group: Option<usize>,
}

impl fmt::Debug for Custom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Custom")
            .field("name", &self.name)
            .field("regex", &self.regex.as_str())
            .finish()
    }
}

impl PartialEq for Custom {
    fn eq(&self, other: &Custom) -> bool {
        self.name == other.name && self.regex.as_str() == other.regex.as_str()
    }
}

impl Custom {
    /// A detector called `name` (1 to 64 of `a-z 0-9 _`, starting with a letter, not a
    /// built-in kind's name) that finds `pattern` (regex crate syntax).
    pub fn new(name: &str, pattern: &str) -> Result<Custom, DetectorError> {
        let valid = !name.is_empty()
            && name.len() <= 64
            && name.starts_with(|c: char| c.is_ascii_lowercase())
            && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !valid {
            return Err(DetectorError::BadName { name: name.to_owned() });
        }
        if name == "all" || Builtin::from_name(name).is_some() {
            return Err(DetectorError::BuiltinName { name: name.to_owned() });
        }
        let bad = |reason: String| DetectorError::BadRegex { name: name.to_owned(), reason };
        let regex =
            Regex::new(pattern).map_err(|e| bad(format!("does not compile: {}", one_line(&e))))?;
        if regex.is_match("") {
            return Err(bad("matches the empty string".to_owned()));
        }
        let group = regex.capture_names().position(|n| n == Some("secret"));
        Ok(Custom { name: name.to_owned(), regex, group })
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its pattern, as given.
    pub fn pattern(&self) -> &str {
        self.regex.as_str()
    }
}

/// A regex error on one line: regex's own message puts the pattern and a caret under the
/// place on lines of their own.
fn one_line(error: &regex::Error) -> String {
    let text = error.to_string();
    let lines: Vec<&str> = text.lines().collect();
    let Some(message) = lines.iter().rev().find_map(|l| l.strip_prefix("error: ")) else {
        return text.split_whitespace().collect::<Vec<_>>().join(" ");
    };
    // The pattern is indented by 4, the caret by 4 plus its place.
    let caret = lines.iter().find(|l| l.trim_start().starts_with('^'));
    match caret.map(|l| l.len() - l.trim_start().len()) {
        Some(indent) if indent >= 4 => format!("{message} (at character {})", indent - 4 + 1),
        _ => message.to_owned(),
    }
}

/// Which kinds to look for: some built-in ones and custom ones.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    builtins: [bool; Builtin::ALL.len()],
    custom: Vec<Custom>,
}

impl Selection {
    /// Every built-in kind.
    pub fn all() -> Selection {
        Selection { builtins: [true; Builtin::ALL.len()], custom: Vec::new() }
    }

    /// Nothing.
    pub fn none() -> Selection {
        Selection::default()
    }

    /// The kinds `names` lists: built-in names, or `all` for every built-in kind.
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> Result<Selection, DetectorError> {
        let mut selection = Selection::none();
        for name in names {
            for kind in parse(name.as_ref())? {
                selection.builtins[kind.index()] = true;
            }
        }
        Ok(selection)
    }

    /// Without the kinds `names` lists (built-in names, or `all`).
    pub fn exclude<S: AsRef<str>>(&mut self, names: &[S]) -> Result<(), DetectorError> {
        for name in names {
            for kind in parse(name.as_ref())? {
                self.builtins[kind.index()] = false;
            }
        }
        Ok(())
    }

    /// With `custom` too; its name must be new.
    pub fn add_custom(&mut self, custom: Custom) -> Result<(), DetectorError> {
        if self.custom.iter().any(|c| c.name == custom.name) {
            return Err(DetectorError::DuplicateName { name: custom.name });
        }
        self.custom.push(custom);
        Ok(())
    }

    /// Everything `other` looks for, too. A custom detector of `other` with the name of one
    /// of these is added only if its pattern differs, under the same name (both find
    /// `[REDACTED:<name>]`).
    pub fn extend(&mut self, other: &Selection) {
        for (mine, theirs) in self.builtins.iter_mut().zip(other.builtins) {
            *mine |= theirs;
        }
        for custom in &other.custom {
            if !self.custom.contains(custom) {
                self.custom.push(custom.clone());
            }
        }
    }

    /// Whether it looks for nothing.
    pub fn is_empty(&self) -> bool {
        !self.builtins.contains(&true) && self.custom.is_empty()
    }

    /// The built-in kinds it looks for, in precedence order.
    pub fn builtins(&self) -> impl Iterator<Item = Builtin> + '_ {
        Builtin::ALL.into_iter().filter(|kind| self.builtins[kind.index()])
    }

    /// Its custom detectors.
    pub fn custom(&self) -> &[Custom] {
        &self.custom
    }

    /// Every kind name it looks for: custom ones first, then built-in ones.
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.custom.iter().map(|c| c.name.as_str()).collect();
        names.extend(self.builtins().map(|kind| -> &str { kind.name() }));
        names
    }
}

fn parse(name: &str) -> Result<Vec<Builtin>, DetectorError> {
    if name == "all" {
        return Ok(Builtin::ALL.to_vec());
    }
    Builtin::from_name(name)
        .map(|kind| vec![kind])
        .ok_or_else(|| DetectorError::UnknownKind { name: name.to_owned(), known: known_names() })
}

/// One compiled pattern.
struct Rule {
    /// Index into [`Detector::kinds`].
    kind: usize,
    regex: Regex,
    group: Option<usize>,
    check: Check,
    retry: bool,
}

/// What was found: the kind's name and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding<'d> {
    /// The kind (`email`, `aws_access_key`, or a custom detector's name).
    pub kind: &'d str,
    /// The byte range of the value in the text.
    pub span: Range<usize>,
}

/// How many values of each kind were redacted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts(BTreeMap<String, usize>);

impl Counts {
    /// `n` more of `kind`.
    pub fn add(&mut self, kind: &str, n: usize) {
        if n > 0 {
            *self.0.entry(kind.to_owned()).or_default() += n;
        }
    }

    /// Adds every count of `other`.
    pub fn merge(&mut self, other: &Counts) {
        for (kind, n) in &other.0 {
            self.add(kind, *n);
        }
    }

    /// How many of `kind`.
    pub fn get(&self, kind: &str) -> usize {
        self.0.get(kind).copied().unwrap_or(0)
    }

    /// How many in all.
    pub fn total(&self) -> usize {
        self.0.values().sum()
    }

    /// Whether nothing was redacted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Each kind and its count, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, usize)> {
        self.0.iter().map(|(kind, n)| (kind.as_str(), *n))
    }

    /// As a JSON object (`{"email": 2}`).
    pub fn to_json(&self) -> serde_json::Value {
        self.0.iter().map(|(kind, n)| (kind.clone(), serde_json::Value::from(*n))).collect()
    }
}

/// A text with its secrets replaced, and how many of each kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted<'a> {
    /// The text; borrowed when nothing was found.
    pub text: Cow<'a, str>,
    /// What was replaced.
    pub counts: Counts,
}

/// The compiled detectors of a [`Selection`]: one [`RegexSet`] pass says which patterns occur
/// at all; only those are searched for their matches. Cheap to share (`Arc` it).
pub struct Detector {
    set: RegexSet,
    rules: Vec<Rule>,
    /// Kind names by precedence (custom first, then built-in in [`Builtin::ALL`] order).
    kinds: Vec<String>,
}

impl fmt::Debug for Detector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Detector").field("kinds", &self.kinds).finish_non_exhaustive()
    }
}

/// What a replaced value becomes: `[REDACTED:<kind>]`.
pub fn marker(kind: &str) -> String {
    format!("[REDACTED:{kind}]")
}

/// A candidate: a span, the precedence of its kind (lower wins), and the kind.
#[derive(Debug, Clone)]
struct Candidate {
    span: Range<usize>,
    kind: usize,
}

impl Detector {
    /// Compiles what `selection` looks for.
    pub fn new(selection: &Selection) -> Detector {
        let mut kinds: Vec<String> = selection.custom.iter().map(|c| c.name.clone()).collect();
        let mut rules: Vec<Rule> = selection
            .custom
            .iter()
            .enumerate()
            .map(|(kind, custom)| Rule {
                kind,
                regex: custom.regex.clone(),
                group: custom.group,
                check: checks::any,
                retry: false,
            })
            .collect();
        for kind in selection.builtins() {
            let index = kinds.len();
            kinds.push(kind.name().to_owned());
            rules.extend(RULES.iter().filter(|rule| rule.kind == kind).map(|rule| Rule {
                kind: index,
                regex: Regex::new(rule.pattern).expect("built-in patterns compile"),
                group: rule.group,
                check: rule.check,
                retry: rule.retry,
            }));
        }
        let set = RegexSetBuilder::new(rules.iter().map(|rule| rule.regex.as_str()))
            // Custom patterns have compiled alone; together they may need more room.
            .size_limit(64 << 20)
            .dfa_size_limit(64 << 20)
            .build()
            .unwrap_or_else(|_| RegexSet::empty());
        Detector { set, rules, kinds }
    }

    /// Every built-in kind.
    pub fn builtin() -> Detector {
        Detector::new(&Selection::all())
    }

    /// Whether it looks for nothing.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The kinds it looks for, by precedence.
    pub fn kinds(&self) -> &[String] {
        &self.kinds
    }

    /// What it finds in `text`, in order, without overlaps: where findings overlap, their
    /// spans are joined into one, of the kind of the longest (of the earlier kind in
    /// precedence order when equally long), so that no part of any finding is left out.
    pub fn find(&self, text: &str) -> Vec<Finding<'_>> {
        let mut candidates = self.candidates(text);
        // What was redacted before is not found again (`[REDACTED:x]` may look like the
        // `user:password` of a URL, or match a custom pattern): redacting is idempotent.
        let markers = markers(text);
        if !markers.is_empty() {
            candidates.retain(|c| {
                !markers.iter().any(|m| m.start <= c.span.start && c.span.end <= m.end)
            });
        }
        if candidates.is_empty() {
            return Vec::new();
        }
        candidates.sort_by_key(|c| c.span.start);
        let mut findings = Vec::new();
        let mut cluster: Vec<Candidate> = Vec::new();
        let mut cluster_end = 0;
        for candidate in candidates {
            if !cluster.is_empty() && candidate.span.start >= cluster_end {
                findings.push(self.resolve(&cluster));
                cluster.clear();
            }
            cluster_end = if cluster.is_empty() {
                candidate.span.end
            } else {
                cluster_end.max(candidate.span.end)
            };
            cluster.push(candidate);
        }
        findings.push(self.resolve(&cluster));
        findings
    }

    /// One finding for overlapping candidates.
    fn resolve(&self, cluster: &[Candidate]) -> Finding<'_> {
        let winner = cluster
            .iter()
            .min_by_key(|c| (std::cmp::Reverse(c.span.len()), c.kind))
            .expect("a cluster is never empty");
        let start = cluster.iter().map(|c| c.span.start).min().unwrap_or(winner.span.start);
        let end = cluster.iter().map(|c| c.span.end).max().unwrap_or(winner.span.end);
        Finding { kind: &self.kinds[winner.kind], span: start..end }
    }

    /// Every candidate every pattern finds and its check accepts.
    fn candidates(&self, text: &str) -> Vec<Candidate> {
        let mut out = Vec::new();
        if self.rules.is_empty() {
            return out;
        }
        let matched = self.set.matches(text);
        let which: Vec<usize> = if self.set.is_empty() {
            // The set could not be built: search with every pattern.
            (0..self.rules.len()).collect()
        } else {
            matched.into_iter().collect()
        };
        for index in which {
            search(&self.rules[index], text, &mut out);
        }
        out
    }

    /// `text` with everything found replaced by `[REDACTED:<kind>]`: nothing is found in what
    /// comes out (see [`MOST_PASSES`] for the one exception).
    pub fn redact<'a>(&self, text: &'a str) -> Redacted<'a> {
        settle(replace(text, self.find(text)), |text| replace(text, self.find(text)))
    }

    /// As [`redact`](Self::redact), for text that may be JSON (a tool's text block): when a
    /// finding spans a `"` or a `\` (a private key block across two JSON strings, a custom
    /// pattern across a quote), replacing it could break the JSON; if the text is a JSON
    /// object or array, its parsed value is redacted instead ([`redact_json`]) and written
    /// back compactly. Markers hold neither character, so otherwise JSON stays JSON and keeps
    /// its layout.
    ///
    /// [`redact_json`]: Self::redact_json
    pub fn redact_text<'a>(&self, text: &'a str) -> Redacted<'a> {
        settle(self.redact_text_once(text), |text| self.redact_text_once(text))
    }

    /// One pass of [`redact_text`](Self::redact_text).
    fn redact_text_once<'a>(&self, text: &'a str) -> Redacted<'a> {
        let findings = self.find(text);
        let trimmed = text.trim_start();
        if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
            return replace(text, findings);
        }
        // JSON text: what comes out must still be JSON, and hold nothing found in its strings
        // as a JSON reader reads them. An escape can hide a value from the text's own reading
        // (`"\nAKIA…"` is `nAKIA…` there, with no word boundary before the key), so text with
        // escapes is read as JSON too.
        let escaped = text.contains('\\');
        if findings.is_empty() && !escaped {
            return replace(text, findings);
        }
        let risky = findings.iter().any(|f| text[f.span.clone()].contains(['"', '\\']));
        if !risky {
            // A marker in place of a number (a card number written as a JSON number) is not
            // JSON either.
            let replaced = replace(text, findings.clone());
            match serde_json::from_str::<serde_json::Value>(&replaced.text) {
                Ok(value) if !escaped || !self.finds_in_json(&value) => return replaced,
                Ok(_) => {}
                Err(_) if serde_json::from_str::<&serde_json::value::RawValue>(text).is_err() => {
                    return replaced;
                }
                Err(_) => {}
            }
        }
        match serde_json::from_str::<serde_json::Value>(text) {
            Ok(mut value) => {
                let counts = self.redact_json(&mut value);
                Redacted { text: Cow::Owned(value.to_string()), counts }
            }
            Err(_) => replace(text, findings),
        }
    }

    /// Redacts `text` in place, adding what it replaced to `counts`; whether it changed.
    pub fn redact_string(&self, text: &mut String, counts: &mut Counts) -> bool {
        let redacted = self.redact(text);
        match redacted.text {
            Cow::Borrowed(_) => false,
            Cow::Owned(new) => {
                counts.merge(&redacted.counts);
                *text = new;
                true
            }
        }
    }
}

/// How many times at most a text is redacted. Replacing a finding can make another: a value
/// that needs a word boundary after it and was written against a URL (`AKIA…https://hooks…`)
/// has one only once the URL is a marker, so what one pass gives is redacted again, until
/// nothing is found. Each pass costs a read of the text; a text made to need more passes (a
/// chain of such values, each found only once the next one is a marker) keeps what the last
/// pass did not get to.
pub const MOST_PASSES: usize = 8;

/// `first` (one pass of redacting a text), redacted again by `again` until nothing more is
/// found, at most [`MOST_PASSES`] passes in all.
fn settle<'a>(first: Redacted<'a>, again: impl Fn(&str) -> Redacted<'_>) -> Redacted<'a> {
    let mut done = first;
    for _ in 1..MOST_PASSES {
        let Cow::Owned(text) = &done.text else { break };
        let next = again(text);
        let Cow::Owned(new) = next.text else { break };
        done.counts.merge(&next.counts);
        done.text = Cow::Owned(new);
    }
    done
}

/// `text` with `findings` (in order, not overlapping) replaced by their markers.
fn replace<'a>(text: &'a str, findings: Vec<Finding<'_>>) -> Redacted<'a> {
    let mut counts = Counts::default();
    if findings.is_empty() {
        return Redacted { text: Cow::Borrowed(text), counts };
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for finding in findings {
        out.push_str(&text[at..finding.span.start]);
        out.push_str("[REDACTED:");
        out.push_str(finding.kind);
        out.push(']');
        counts.add(finding.kind, 1);
        at = finding.span.end;
    }
    out.push_str(&text[at..]);
    Redacted { text: Cow::Owned(out), counts }
}

/// Where `text` holds markers (`[REDACTED:<kind>]`, `<kind>` of `a-z 0-9 _`).
fn markers(text: &str) -> Vec<Range<usize>> {
    const OPEN: &str = "[REDACTED:";
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(OPEN) {
        let start = from + at;
        let kind = &text[start + OPEN.len()..];
        let len = kind.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
        from = start + OPEN.len() + len;
        if len > 0 && kind.as_bytes().get(len) == Some(&b']') {
            out.push(start..from + 1);
        }
    }
    out
}

/// Finds `rule`'s candidates in `text` that pass its check.
fn search(rule: &Rule, text: &str, out: &mut Vec<Candidate>) {
    let mut at = 0;
    while at <= text.len() {
        let (whole, span) = match rule.group {
            Some(group) => {
                let Some(captures) = rule.regex.captures_at(text, at) else { break };
                let whole = captures.get(0).expect("group 0 always matches").range();
                (whole, captures.get(group).map(|m| m.range()))
            }
            None => {
                let Some(found) = rule.regex.find_at(text, at) else { break };
                (found.range(), Some(found.range()))
            }
        };
        let accepted = span.and_then(|span| (rule.check)(text, span)).filter(|s| !s.is_empty());
        let past_start = next_boundary(text, whole.start + 1);
        at = match accepted {
            Some(span) => {
                let end = span.end;
                out.push(Candidate { span, kind: rule.kind });
                end.max(past_start)
            }
            None if rule.retry => past_start,
            None => whole.end.max(past_start),
        };
    }
}

/// The first char boundary of `text` at or after `at` (`text.len() + 1` past the end, which
/// ends the search).
fn next_boundary(text: &str, mut at: usize) -> usize {
    while at < text.len() && !text.is_char_boundary(at) {
        at += 1;
    }
    at
}
