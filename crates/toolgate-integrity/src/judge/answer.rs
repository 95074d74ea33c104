//! The judge's answer, read strictly, and what it adds to the scan.
//!
//! The answer must be one JSON object, `{"verdicts": [...]}`, alone or in one fenced block
//! (```` ```json ````; words around the block are a model's preamble and are not read). Anything
//! else is an error for the whole batch: text after the object, two objects, two fenced blocks,
//! a verdict whose fields have the wrong types, a poisoned verdict without a known family or
//! with a severity other than `medium` or `high`, two verdicts for one item. A verdict for an
//! index the batch does not have is ignored (and counted); an item without a verdict is not
//! judged. Fields the answer adds (`confidence`, say) are ignored.
//!
//! What the model wrote is bounded before it is kept: the answer to [`ANSWER_LIMIT`] bytes, a
//! quote to [`EVIDENCE_CAP`] and a reason to [`REASON_CAP`], control and invisible characters
//! spelled out (`<U+001B>`), so a reason cannot move a terminal's cursor.

use serde::Deserialize;

use super::prompt::Batch;
use super::{ANSWER_LIMIT, Family, JudgeFinding, RULE, Subject};
use crate::excerpt::{excerpt, push_visible};
use crate::scan::Severity;

/// The longest quote kept of a verdict (bytes).
pub const EVIDENCE_CAP: usize = 300;

/// The longest reason kept of a verdict (bytes).
pub const REASON_CAP: usize = 500;

/// Why an answer could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// Longer than [`ANSWER_LIMIT`].
    #[error("the answer is longer than {limit} bytes")]
    TooLong {
        /// The limit.
        limit: usize,
    },
    /// Nothing but white space.
    #[error("the answer is empty")]
    Empty,
    /// Not one JSON object, nor one fenced block of one.
    #[error("the answer is not one JSON object: {0}")]
    NotJson(String),
    /// JSON, but not `{"verdicts": [...]}` with verdicts of the right types.
    #[error("the answer is not {{\"verdicts\": [...]}}: {0}")]
    Shape(String),
    /// A verdict that says poisoned without what the prompt asks for.
    #[error("the verdict for item {index}: {message}")]
    BadVerdict {
        /// The item's index in the batch.
        index: usize,
        /// What is wrong.
        message: String,
    },
    /// Two verdicts for one item.
    #[error("two verdicts for item {0}")]
    Duplicate(usize),
}

/// One item's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Clean,
    Poisoned {
        family: Family,
        /// Medium or high.
        severity: Severity,
        /// The model's quote (bounded, spelled out).
        evidence: String,
        /// The model's reason (bounded, spelled out).
        reason: String,
    },
}

/// A batch's answer, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    /// One entry per item of the batch, in its order; `None` where the answer has no verdict.
    pub verdicts: Vec<Option<Verdict>>,
    /// Verdicts for indices the batch does not have (ignored).
    pub unknown_indices: usize,
}

#[derive(Deserialize)]
struct RawAnswer {
    verdicts: Vec<RawVerdict>,
}

#[derive(Deserialize)]
struct RawVerdict {
    index: u64,
    poisoned: bool,
    #[serde(default)]
    family: Option<String>,
    #[serde(default)]
    severity: Option<String>,
    #[serde(default)]
    evidence: Option<String>,
    #[serde(default)]
    reason: Option<String>,
}

/// Reads `answer` for a batch of `items` items.
pub fn read_answer(answer: &str, items: usize) -> Result<Judged, AnswerError> {
    if answer.len() > ANSWER_LIMIT {
        return Err(AnswerError::TooLong { limit: ANSWER_LIMIT });
    }
    let text = json_text(answer)?;
    let raw: RawAnswer = serde_json::from_str(text).map_err(|error| match error.classify() {
        serde_json::error::Category::Data => AnswerError::Shape(error.to_string()),
        _ => AnswerError::NotJson(error.to_string()),
    })?;
    let mut judged = Judged { verdicts: vec![None; items], unknown_indices: 0 };
    for raw in raw.verdicts {
        let Some(index) = usize::try_from(raw.index).ok().filter(|&i| i < items) else {
            judged.unknown_indices += 1;
            continue;
        };
        let verdict = verdict(index, raw)?;
        if judged.verdicts[index].replace(verdict).is_some() {
            return Err(AnswerError::Duplicate(index));
        }
    }
    Ok(judged)
}

/// The JSON of `answer`: all of it, or what one fenced block holds. A reasoning model's
/// `<think>…</think>` before it is passed over.
fn json_text(answer: &str) -> Result<&str, AnswerError> {
    let mut text = answer.trim();
    if let Some(rest) = text.strip_prefix("<think>")
        && let Some(end) = rest.find("</think>")
    {
        text = rest[end + "</think>".len()..].trim();
    }
    if text.is_empty() {
        return Err(AnswerError::Empty);
    }
    if text.starts_with('{') {
        return Ok(text);
    }
    let fences: Vec<usize> = text.match_indices("```").map(|(at, _)| at).collect();
    let [open, close] = fences[..] else {
        return Err(AnswerError::NotJson(if fences.is_empty() {
            "it neither starts with `{` nor has a ```json block".to_owned()
        } else {
            format!("{} ``` fences, where one block has two", fences.len())
        }));
    };
    let inner = &text[open + 3..close];
    let (tag, body) = inner.split_once('\n').unwrap_or(("", inner));
    if !(tag.trim().is_empty() || tag.trim().eq_ignore_ascii_case("json")) {
        return Err(AnswerError::NotJson(format!("a ```{} block, not ```json", tag.trim())));
    }
    Ok(body.trim())
}

fn verdict(index: usize, raw: RawVerdict) -> Result<Verdict, AnswerError> {
    if !raw.poisoned {
        return Ok(Verdict::Clean);
    }
    let bad = |message: String| AnswerError::BadVerdict { index, message };
    let family = raw.family.ok_or_else(|| bad("poisoned, but no family".to_owned()))?;
    let family = Family::ALL
        .into_iter()
        .find(|f| f.name() == family)
        .ok_or_else(|| bad(format!("unknown family {:?}", bounded(&family, 40))))?;
    let severity = match raw.severity.as_deref() {
        Some("medium") => Severity::Medium,
        Some("high") => Severity::High,
        Some(other) => {
            return Err(bad(format!("severity {:?}, not medium or high", bounded(other, 40))));
        }
        None => return Err(bad("poisoned, but no severity".to_owned())),
    };
    Ok(Verdict::Poisoned {
        family,
        severity,
        evidence: bounded(raw.evidence.as_deref().unwrap_or_default().trim(), EVIDENCE_CAP),
        reason: bounded(raw.reason.as_deref().unwrap_or_default().trim(), REASON_CAP),
    })
}

/// An item the judge gave no verdict for.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NotJudged {
    pub server: String,
    /// `tool` or `prompt`.
    pub kind: &'static str,
    pub item: String,
    /// Why, in words.
    pub why: String,
}

impl NotJudged {
    /// `subject`, not judged because of `why`.
    pub fn new(subject: &Subject, why: impl Into<String>) -> NotJudged {
        NotJudged {
            server: subject.server.clone(),
            kind: subject.kind,
            item: subject.name.clone(),
            why: why.into(),
        }
    }
}

/// What an answer adds to the scan, each with the index of its subject.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Added {
    /// A finding for each poisoned verdict.
    pub findings: Vec<(usize, JudgeFinding)>,
    /// The items the answer has no verdict for.
    pub not_judged: Vec<(usize, NotJudged)>,
}

/// What `judged`, the answer for `batch` of `subjects`, adds: a finding for each poisoned
/// verdict, and the items it has no verdict for, each with the index of its subject.
pub fn findings(subjects: &[Subject], batch: &Batch, judged: &Judged) -> Added {
    let mut found = Vec::new();
    let mut not_judged = Vec::new();
    for (&at, verdict) in batch.items.iter().zip(&judged.verdicts) {
        let subject = &subjects[at];
        match verdict {
            None => {
                not_judged.push((at, NotJudged::new(subject, "the answer has no verdict for it")));
            }
            Some(Verdict::Clean) => {}
            Some(Verdict::Poisoned { family, severity, evidence, reason }) => {
                let located = locate(subject, evidence);
                let (field, span, excerpt) = match located {
                    Some((text, span)) => {
                        let excerpt = excerpt(&text.text, &span, EVIDENCE_CAP);
                        (Some(text.field.clone()), Some(span), excerpt)
                    }
                    None => (None, None, format!("(not in its text) {evidence}")),
                };
                let message = if reason.is_empty() {
                    "(the model gave no reason)".to_owned()
                } else {
                    reason.clone()
                };
                found.push((
                    at,
                    JudgeFinding {
                        rule: RULE,
                        severity: *severity,
                        server: subject.server.clone(),
                        kind: subject.kind,
                        item: subject.name.clone(),
                        field,
                        message,
                        family: *family,
                        evidence: evidence.clone(),
                        span,
                        excerpt,
                    },
                ));
            }
        }
    }
    Added { findings: found, not_judged }
}

/// The text of `subject` that has `quote`, and where: as written, then without the quotation
/// marks or ellipses a model puts around a quote, then ignoring ASCII case.
fn locate<'a>(
    subject: &'a Subject,
    quote: &str,
) -> Option<(&'a super::SubjectText, std::ops::Range<usize>)> {
    let trimmed = quote
        .trim_matches(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '“' | '”' | '…'))
        .trim_end_matches("...")
        .trim_start_matches("...")
        .trim();
    if trimmed.is_empty() {
        return None;
    }
    for needle in [quote, trimmed] {
        if let Some(found) = subject
            .texts
            .iter()
            .find_map(|t| t.text.find(needle).map(|at| (t, at..at + needle.len())))
        {
            return Some(found);
        }
    }
    let lower = trimmed.to_ascii_lowercase();
    subject.texts.iter().find_map(|t| {
        // ASCII lower case keeps every byte offset.
        t.text.to_ascii_lowercase().find(&lower).map(|at| (t, at..at + lower.len()))
    })
}

/// `text` cut to `cap` bytes (with `…` when cut), control and invisible characters spelled
/// out.
fn bounded(text: &str, cap: usize) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if out.len() + c.len_utf8() > cap {
            out.push('…');
            break;
        }
        push_visible(&mut out, c);
    }
    out
}
