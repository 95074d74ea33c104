//! What `toolgate audit verify` says about a log: [`check`] gives its [`Verdict`], the chain
//! whole or the first place it breaks in plain words ([`Finding`]), as one line of text
//! ([`Verdict::line`]) or a JSON report ([`Verdict::json`]).

use std::path::Path;

use serde_json::{Map, Value, json};

use crate::chain::{VerifyReport, verify, verify_with_head};
use crate::error::{AuditError, ChainProblem};

/// What checking a log found.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The chain is whole (and ends at the expected head, when one was given).
    Intact {
        /// How many records, and the head.
        report: VerifyReport,
        /// Whether an expected head was checked.
        head_checked: bool,
    },
    /// The chain breaks, or does not end at the expected head.
    Broken(Finding),
}

/// Checks the log at `file` (and that it ends at `head`, when given). An error only when the
/// file cannot be read; a broken chain is a [`Verdict::Broken`]. Reads the whole file: call it
/// on a blocking thread.
pub fn check(file: &Path, head: Option<&str>) -> Result<Verdict, AuditError> {
    let result = match head {
        Some(head) => verify_with_head(file, head),
        None => verify(file),
    };
    match result {
        Ok(report) => Ok(Verdict::Intact { report, head_checked: head.is_some() }),
        Err(error) => Finding::of(&error).map(Verdict::Broken).ok_or(error),
    }
}

impl Verdict {
    /// Whether the chain is whole.
    pub fn is_intact(&self) -> bool {
        matches!(self, Verdict::Intact { .. })
    }

    /// One line for a person, without its newline: `ok: 6 records, head <hash>`, or
    /// `FAILED: <file>: line 3, record 3: edited: <what happened>`.
    pub fn line(&self, file: &Path) -> String {
        match self {
            Verdict::Intact { report, .. } => {
                let records = if report.records == 1 { "record" } else { "records" };
                format!("ok: {} {records}, head {}", report.records, report.head)
            }
            Verdict::Broken(finding) => {
                let record = finding.seq.map(|seq| format!(", record {seq}")).unwrap_or_default();
                format!(
                    "FAILED: {}: line {}{record}: {}: {}",
                    file.display(),
                    finding.line,
                    finding.problem.replace('_', " "),
                    finding.message
                )
            }
        }
    }

    /// The JSON report: `ok`, `file`, then `records`, `head` and `head_checked`, or `problem`,
    /// `line`, `seq`, `message` and the problem's own numbers.
    pub fn json(&self, file: &Path) -> Value {
        match self {
            Verdict::Intact { report, head_checked } => json!({
                "ok": true,
                "file": file.display().to_string(),
                "records": report.records,
                "head": report.head,
                "head_checked": head_checked,
            }),
            Verdict::Broken(finding) => {
                let mut report = Map::new();
                report.insert("ok".into(), json!(false));
                report.insert("file".into(), json!(file.display().to_string()));
                report.insert("problem".into(), json!(finding.problem));
                report.insert("line".into(), json!(finding.line));
                report.insert("seq".into(), json!(finding.seq));
                report.insert("message".into(), json!(finding.message));
                report.extend(finding.details.clone());
                Value::Object(report)
            }
        }
    }
}

/// Where and how a log's chain breaks, in plain words.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// `edited`, `removed`, `inserted`, `reordered`, `malformed`, `bad_genesis` or
    /// `head_mismatch` (every [`ChainProblem`] has its word: a new one does not compile until
    /// it is given one).
    pub problem: &'static str,
    /// The line (from 1) where it shows.
    pub line: u64,
    /// The `seq` of the record concerned, when known.
    pub seq: Option<u64>,
    /// What happened there, in a sentence.
    pub message: String,
    /// The problem's own numbers, for the JSON report.
    pub details: Map<String, Value>,
}

impl Finding {
    /// The finding for a broken chain; `None` for other errors (the file cannot be read).
    pub fn of(error: &AuditError) -> Option<Finding> {
        let finding = |problem, line, seq, message: String, details: Value| Finding {
            problem,
            line,
            seq,
            message,
            details: match details {
                Value::Object(details) => details,
                _ => Map::new(),
            },
        };
        if let AuditError::HeadMismatch { records, expected, found, expected_at, .. } = error {
            let why = match expected_at {
                Some(line) => format!(
                    "the expected head is record {line}: {} record(s) were added after it",
                    records - line
                ),
                None => {
                    "records were removed from its end, or its last record was changed".to_owned()
                }
            };
            return Some(finding(
                "head_mismatch",
                *records,
                Some(*records),
                format!(
                    "the log ends at record {records} with head {found}, not at the expected \
                     head {expected}: {why}"
                ),
                json!({
                    "records": records,
                    "expected_head": expected,
                    "found_head": found,
                    "expected_at": expected_at,
                }),
            ));
        }
        let (line, problem) = error.problem()?;
        Some(match problem {
            ChainProblem::Edited => finding(
                "edited",
                line,
                Some(line),
                format!(
                    "record {line} was changed after it was written (its hash is not the `prev` \
                     of the next record, line {})",
                    line + 1
                ),
                json!({}),
            ),
            ChainProblem::BadGenesis => finding(
                "bad_genesis",
                line,
                Some(1),
                "the first record's `prev` is not 64 zeros: it was changed, or the file does \
                 not start at the beginning of its chain"
                    .to_owned(),
                json!({}),
            ),
            ChainProblem::Removed { expected, found } => {
                let missing = if found - expected == 1 {
                    format!("record {expected} is missing")
                } else {
                    format!("records {expected} to {} are missing", found - 1)
                };
                finding(
                    "removed",
                    line,
                    Some(*found),
                    format!("{missing}: this line holds record {found} where {expected} belongs"),
                    json!({ "expected": expected, "found": found }),
                )
            }
            ChainProblem::Inserted { seq, also_at } => finding(
                "inserted",
                line,
                Some(*seq),
                format!(
                    "a record was inserted: this line holds a record {seq}, and line {also_at} \
                     holds one too"
                ),
                json!({ "also_at": also_at }),
            ),
            ChainProblem::Reordered { expected, found, expected_at } => finding(
                "reordered",
                line,
                Some(*found),
                format!(
                    "records were moved: this line holds record {found} where {expected} \
                     belongs, and record {expected} is at line {expected_at}"
                ),
                json!({ "expected": expected, "found": found, "expected_at": expected_at }),
            ),
            ChainProblem::Malformed { reason } => finding(
                "malformed",
                line,
                None,
                format!("the line is not a valid record: {reason}"),
                json!({ "reason": reason }),
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AuditLog, Event, kind};

    #[test]
    fn a_whole_chain_and_an_edited_one_in_words_and_json() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("audit.jsonl");
        let mut log = AuditLog::open(&path).expect("open");
        for tool in ["read", "write"] {
            log.append(&Event::new(kind::TOOLS_CALL_STARTED).with("tool", tool)).expect("append");
        }
        let head = log.head().to_owned();
        drop(log);

        let verdict = check(&path, Some(&head)).expect("readable");
        assert!(verdict.is_intact());
        assert_eq!(verdict.line(&path), format!("ok: 2 records, head {head}"));
        let report = verdict.json(&path);
        assert_eq!(
            (report["ok"].clone(), report["head_checked"].clone()),
            (json!(true), json!(true))
        );

        let text = std::fs::read_to_string(&path).expect("read").replace("\"read\"", "\"READ\"");
        std::fs::write(&path, text).expect("write");
        let verdict = check(&path, None).expect("readable");
        assert!(!verdict.is_intact());
        let line = verdict.line(&path);
        assert!(
            line.starts_with(&format!("FAILED: {}: line 1, record 1: edited: ", path.display())),
            "{line}"
        );
        let report = verdict.json(&path);
        assert_eq!(
            (report["ok"].clone(), report["problem"].clone()),
            (json!(false), json!("edited"))
        );

        assert!(check(&dir.path().join("none.jsonl"), None).is_err(), "unreadable: an error");
    }
}
