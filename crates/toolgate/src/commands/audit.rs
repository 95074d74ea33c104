//! `toolgate audit`: check the audit log's hash chain (`verify`) and read it (`tail`).

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufRead as _, BufReader, Seek as _, SeekFrom, Write as _};
use std::os::unix::fs::{FileExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use clap::{Args, Subcommand};
use serde_json::{Map, Value, json};
use tokio::signal::unix::{SignalKind, signal};
use toolgate_audit::{AuditError, ChainProblem, EventPattern, VerifyReport};

use crate::GlobalArgs;
use crate::commands::tools::shorten;
use crate::setup;

/// How often `tail --follow` looks at the file.
const POLL_INTERVAL: Duration = Duration::from_millis(200);
/// Fields `tail` shows first, in this order, when a record has them.
const FIRST_FIELDS: &[&str] = &[
    "server",
    "upstream",
    "tool",
    "principal",
    "client",
    "interceptor",
    "decision",
    "reason",
    "error",
    "status",
    "duration_ms",
    "duration",
];
/// The record's envelope: shown in place, not as fields.
const ENVELOPE: &[&str] = &["seq", "prev", "time", "kind"];
/// Longest field value `tail` shows, in characters.
const VALUE_WIDTH: usize = 80;

#[derive(Debug, Subcommand)]
pub(crate) enum AuditCommand {
    /// Check the audit log's hash chain; exit 1 naming the first broken record.
    Verify(VerifyArgs),
    /// Print the last records of the audit log (with --follow, and the ones appended later).
    Tail(TailArgs),
}

#[derive(Debug, Args)]
#[command(after_help = "Each record holds the SHA-256 of the one before it, so an edited, \
    removed, inserted or reordered record breaks the chain where it happened. Only the last \
    record is not covered: keep the head this command prints somewhere safe and pass it with \
    --head next time to catch records cut from the end, or a changed last record.\n\n\
    Exit status: 0 when the chain is whole, 1 when it is broken or the file cannot be read, \
    64 when there is no log to check.")]
pub(crate) struct VerifyArgs {
    /// The audit log (default: `[audit] file` in the config).
    #[arg(value_name = "FILE")]
    file: Option<PathBuf>,
    /// The head the log must end at: the hash printed by an earlier `verify`.
    #[arg(long, value_name = "HASH", value_parser = parse_head)]
    head: Option<String>,
    /// Print a JSON report.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    toolgate audit tail -n 50\n  \
    toolgate audit tail --follow --pattern 'tools/call/*' --pattern '*/denied'\n  \
    toolgate audit tail --json /var/log/toolgate/audit.jsonl | jq .tool\n\n\
    Patterns match the record's kind segment by segment; `*` stands for one or more segments.")]
pub(crate) struct TailArgs {
    /// The audit log (default: `[audit] file` in the config).
    #[arg(value_name = "FILE")]
    file: Option<PathBuf>,
    /// How many of the last matching records to print.
    #[arg(short = 'n', long = "lines", value_name = "N", default_value_t = 10)]
    lines: usize,
    /// Keep printing records as they are appended, until interrupted (Ctrl-C).
    #[arg(short = 'f', long)]
    follow: bool,
    /// Only records whose kind matches, such as `tools/*` or `*/denied` (repeatable; default
    /// all).
    #[arg(short = 'p', long = "pattern", value_name = "PATTERN")]
    patterns: Vec<EventPattern>,
    /// Print the records as they are in the file, one JSON object a line (every field).
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(global: &GlobalArgs, command: AuditCommand) -> anyhow::Result<ExitCode> {
    setup::init_logging(global, "warn");
    let file = match &command {
        AuditCommand::Verify(args) => &args.file,
        AuditCommand::Tail(args) => &args.file,
    };
    let path = match audit_file(global, file.clone()) {
        Ok(path) => path,
        Err(error) if error.is::<NoAuditLog>() => {
            eprintln!("toolgate: {error}");
            return Ok(ExitCode::from(setup::EXIT_USAGE));
        }
        Err(error) => return Err(error),
    };
    match command {
        AuditCommand::Verify(args) => verify(&path, args).await,
        AuditCommand::Tail(args) => tail(&path, args).await,
    }
}

/// Neither an argument nor the config says which audit log to read: exits with
/// [`setup::EXIT_USAGE`].
#[derive(Debug, thiserror::Error)]
#[error("no audit log to read: {0}")]
struct NoAuditLog(String);

/// The log to read: `file`, else the config's `[audit] file`.
fn audit_file(global: &GlobalArgs, file: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    if let Some(file) = file {
        return Ok(file);
    }
    match setup::load(global)? {
        Some(loaded) => loaded.config.audit.file.ok_or_else(|| {
            NoAuditLog(format!(
                "{} sets no `[audit] file`; give the log's path as an argument",
                loaded.path.display()
            ))
            .into()
        }),
        None => Err(NoAuditLog(
            "give the log's path as an argument, or set `[audit] file` in the config (none \
             found: --config, $TOOLGATE_CONFIG, ./toolgate.toml, \
             ~/.config/toolgate/toolgate.toml)"
                .to_owned(),
        )
        .into()),
    }
}

fn parse_head(text: &str) -> Result<String, String> {
    if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(text.to_ascii_lowercase())
    } else {
        Err("a head is 64 hex digits (the SHA-256 printed by `toolgate audit verify`)".to_owned())
    }
}

// === verify ===

async fn verify(path: &Path, args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let file = path.to_path_buf();
    let head = args.head.clone();
    let result = tokio::task::spawn_blocking(move || match head {
        Some(head) => toolgate_audit::verify_with_head(&file, &head),
        None => toolgate_audit::verify(&file),
    })
    .await
    .context("the verification task failed")?;
    let finding = match result {
        Ok(report) => {
            print_intact(path, &report, args.head.is_some(), args.json)?;
            return Ok(ExitCode::SUCCESS);
        }
        Err(error) => match Finding::of(&error) {
            Some(finding) => finding,
            None => return Err(error.into()),
        },
    };
    let mut out = io::stdout().lock();
    if args.json {
        let mut report = Map::new();
        report.insert("ok".into(), json!(false));
        report.insert("file".into(), json!(path.display().to_string()));
        report.insert("problem".into(), json!(finding.problem));
        report.insert("line".into(), json!(finding.line));
        report.insert("seq".into(), json!(finding.seq));
        report.insert("message".into(), json!(finding.message));
        report.extend(finding.details);
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        let record = finding.seq.map(|seq| format!(", record {seq}")).unwrap_or_default();
        writeln!(
            out,
            "FAILED: {}: line {}{record}: {}: {}",
            path.display(),
            finding.line,
            finding.problem.replace('_', " "),
            finding.message
        )?;
    }
    Ok(ExitCode::FAILURE)
}

fn print_intact(
    path: &Path,
    report: &VerifyReport,
    head_checked: bool,
    json: bool,
) -> io::Result<()> {
    let mut out = io::stdout().lock();
    if json {
        let report = json!({
            "ok": true,
            "file": path.display().to_string(),
            "records": report.records,
            "head": report.head,
            "head_checked": head_checked,
        });
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)
    } else {
        let records = if report.records == 1 { "record" } else { "records" };
        writeln!(out, "ok: {} {records}, head {}", report.records, report.head)
    }
}

/// What `verify` found wrong, in plain words.
struct Finding {
    /// `edited`, `removed`, `inserted`, `reordered`, `malformed`, `bad_genesis`,
    /// `head_mismatch`, or `broken` for a kind this command does not know yet.
    problem: &'static str,
    /// The line (from 1) where it shows.
    line: u64,
    /// The `seq` of the record concerned, when known.
    seq: Option<u64>,
    message: String,
    /// The problem's own numbers, for `--json`.
    details: Map<String, Value>,
}

impl Finding {
    /// The finding for a broken chain; `None` for other errors (the file cannot be read).
    fn of(error: &AuditError) -> Option<Finding> {
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
            other => finding("broken", line, None, other.to_string(), json!({})),
        })
    }
}

// === tail ===

async fn tail(path: &Path, args: TailArgs) -> anyhow::Result<ExitCode> {
    // Before anything is printed, so that a signal sent after the first line ends us cleanly.
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot watch for Ctrl-C")?;
    let mut terminate = signal(SignalKind::terminate()).context("cannot watch for SIGTERM")?;
    let filter = Filter { patterns: args.patterns, json: args.json, path: path.to_path_buf() };
    let mut follower = Follower::new(path);

    let mut last: VecDeque<Record> = VecDeque::with_capacity(args.lines.min(1024));
    let mut keep = |line_number: u64, bytes: &[u8]| {
        if args.lines == 0 {
            return;
        }
        if let Some(record) = filter.select(line_number, bytes) {
            if last.len() == args.lines {
                last.pop_front();
            }
            last.push_back(record);
        }
    };
    match follower.poll(&mut keep) {
        Ok(_) => {}
        Err(error) if args.follow && error.kind() == io::ErrorKind::NotFound => {
            eprintln!("toolgate: {} does not exist yet; waiting for it", path.display());
        }
        Err(error) => {
            return Err(error).with_context(|| format!("cannot read {}", path.display()));
        }
    }
    let mut text = String::new();
    for record in &last {
        filter.write(&mut text, record);
    }
    write_out(&text)?;
    if !args.follow {
        return Ok(ExitCode::SUCCESS);
    }

    let mut ticks = tokio::time::interval(POLL_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = interrupt.recv() => return Ok(ExitCode::SUCCESS),
            _ = terminate.recv() => return Ok(ExitCode::SUCCESS),
            _ = ticks.tick() => {}
        }
        let mut text = String::new();
        let mut print = |line_number: u64, bytes: &[u8]| {
            if let Some(record) = filter.select(line_number, bytes) {
                filter.write(&mut text, &record);
            }
        };
        match follower.poll(&mut print) {
            Ok(Some(restart)) => {
                eprintln!("toolgate: {} {restart}; reading it from the start", path.display())
            }
            Ok(None) => {}
            // Gone for now (being replaced, say): look again at the next tick.
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => {
                return Err(error).with_context(|| format!("cannot read {}", path.display()));
            }
        }
        write_out(&text)?;
    }
}

fn write_out(text: &str) -> io::Result<()> {
    if text.is_empty() {
        return Ok(());
    }
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// One line of the log that `tail` shows.
struct Record {
    /// The line as it is in the file.
    raw: String,
    object: Map<String, Value>,
}

/// Which records `tail` shows, and how.
struct Filter {
    patterns: Vec<EventPattern>,
    json: bool,
    path: PathBuf,
}

impl Filter {
    /// The record on `bytes` if it is one and its kind matches. Lines that are not records are
    /// reported on stderr and skipped.
    fn select(&self, line_number: u64, bytes: &[u8]) -> Option<Record> {
        let raw = String::from_utf8_lossy(bytes).into_owned();
        let Ok(Value::Object(object)) = serde_json::from_str::<Value>(&raw) else {
            eprintln!(
                "toolgate: {} line {line_number}: not a JSON record; skipped (see `toolgate \
                 audit verify`)",
                self.path.display()
            );
            return None;
        };
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or_default();
        let selected =
            self.patterns.is_empty() || self.patterns.iter().any(|pattern| pattern.matches(kind));
        selected.then_some(Record { raw, object })
    }

    /// Appends `record` as one line of output.
    fn write(&self, out: &mut String, record: &Record) {
        if self.json {
            out.push_str(&record.raw);
        } else {
            out.push_str(&readable(&record.object));
        }
        out.push('\n');
    }
}

/// `TIME #SEQ KIND key=value ...`: the fields most worth reading first, then the other plain
/// ones (objects and arrays only in `--json`).
fn readable(record: &Map<String, Value>) -> String {
    let text = |key: &str| match record.get(key) {
        Some(Value::String(text)) => text.clone(),
        Some(value) => value.to_string(),
        None => "-".to_owned(),
    };
    let mut line = format!("{} #{} {}", text("time"), text("seq"), text("kind"));
    let first = FIRST_FIELDS.iter().filter_map(|&key| Some((key, record.get(key)?)));
    let rest = record
        .iter()
        .filter(|(key, _)| {
            !ENVELOPE.contains(&key.as_str()) && !FIRST_FIELDS.contains(&key.as_str())
        })
        .map(|(key, value)| (key.as_str(), value));
    for (key, value) in first.chain(rest) {
        let value = match value {
            Value::Object(_) | Value::Array(_) => continue,
            Value::String(text) => quoted(&shorten(text, VALUE_WIDTH)),
            other => other.to_string(),
        };
        line.push(' ');
        line.push_str(key);
        line.push('=');
        line.push_str(&value);
    }
    line
}

/// `text` as is when it is one plain word, else as a JSON string.
fn quoted(text: &str) -> String {
    let plain = !text.is_empty()
        && text.chars().all(|c| !c.is_whitespace() && !c.is_control() && !matches!(c, '"' | '='));
    if plain { text.to_owned() } else { Value::String(text.to_owned()).to_string() }
}

// === impl Follower ===

/// Reads the lines appended to a file since the last look, noticing when the file is replaced,
/// truncated or rewritten (and then reading it again from the start).
struct Follower {
    path: PathBuf,
    /// Device and inode of the file being read, once it was found.
    identity: Option<(u64, u64)>,
    /// Bytes read so far.
    offset: u64,
    /// What was read after the last newline: the start of a line still being written.
    partial: Vec<u8>,
    /// The last whole line read (without its newline) and where it starts.
    last_line: Option<(u64, Vec<u8>)>,
    /// The number of the last whole line read.
    line_number: u64,
    /// Size and modification time when last looked at.
    seen: Option<(u64, Option<SystemTime>)>,
}

/// Why a [`Follower`] went back to the start of the file.
#[derive(Debug, Clone, Copy)]
enum Restart {
    Replaced,
    Truncated,
    Rewritten,
}

impl std::fmt::Display for Restart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Restart::Replaced => "was replaced",
            Restart::Truncated => "was truncated",
            Restart::Rewritten => "was rewritten",
        })
    }
}

impl Follower {
    fn new(path: &Path) -> Follower {
        Follower {
            path: path.to_path_buf(),
            identity: None,
            offset: 0,
            partial: Vec::new(),
            last_line: None,
            line_number: 0,
            seen: None,
        }
    }

    /// Calls `on_line` with each whole line added since the last call (its number from 1, and
    /// its bytes without the newline). Says so when it had to start over. `NotFound` when the
    /// file does not exist (it is read from the start once it does).
    fn poll(&mut self, on_line: &mut dyn FnMut(u64, &[u8])) -> io::Result<Option<Restart>> {
        let file = match File::open(&self.path) {
            Ok(file) => file,
            Err(error) => {
                if error.kind() == io::ErrorKind::NotFound {
                    self.start_over();
                    self.identity = None;
                }
                return Err(error);
            }
        };
        let metadata = file.metadata()?;
        let identity = (metadata.dev(), metadata.ino());
        let seen = (metadata.len(), metadata.modified().ok());
        let restart = if self.identity.is_some_and(|known| known != identity) {
            Some(Restart::Replaced)
        } else if metadata.len() < self.offset {
            Some(Restart::Truncated)
        } else if self.seen.is_some_and(|known| known != seen) && !self.last_line_intact(&file) {
            Some(Restart::Rewritten)
        } else {
            None
        };
        if restart.is_some() {
            self.start_over();
        }
        self.identity = Some(identity);
        self.seen = Some(seen);
        if metadata.len() > self.offset {
            self.read_lines(file, on_line)?;
        }
        Ok(restart)
    }

    fn read_lines(&mut self, file: File, on_line: &mut dyn FnMut(u64, &[u8])) -> io::Result<()> {
        let mut reader = BufReader::new(file);
        reader.seek(SeekFrom::Start(self.offset))?;
        let mut line = std::mem::take(&mut self.partial);
        let mut last = Vec::new();
        let mut last_start = None;
        loop {
            let read = reader.read_until(b'\n', &mut line)?;
            self.offset += read as u64;
            if line.last() != Some(&b'\n') {
                // The end of the file, maybe in the middle of a line.
                break;
            }
            line.pop();
            self.line_number += 1;
            on_line(self.line_number, &line);
            last_start = Some(self.offset - line.len() as u64 - 1);
            std::mem::swap(&mut line, &mut last);
            line.clear();
        }
        self.partial = line;
        if let Some(start) = last_start {
            self.last_line = Some((start, last));
        }
        Ok(())
    }

    /// Whether the last line read is still where it was, as it was.
    fn last_line_intact(&self, file: &File) -> bool {
        let Some((start, line)) = &self.last_line else { return true };
        let mut found = vec![0; line.len() + 1];
        file.read_exact_at(&mut found, *start).is_ok()
            && found[..line.len()] == line[..]
            && found[line.len()] == b'\n'
    }

    fn start_over(&mut self) {
        self.offset = 0;
        self.partial.clear();
        self.last_line = None;
        self.line_number = 0;
        self.seen = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(value: Value) -> Map<String, Value> {
        value.as_object().cloned().expect("a JSON object")
    }

    #[test]
    fn readable_lines_put_the_useful_fields_first() {
        let line = readable(&record(json!({
            "seq": 7,
            "prev": "00",
            "time": "2024-05-01T12:34:56.789Z",
            "kind": "tools/call/denied",
            "arguments": {"path": "/etc"},
            "count": 2,
            "reason": "policy: writes need approval",
            "tool": "write_file",
            "server": "files",
        })));
        assert_eq!(
            line,
            "2024-05-01T12:34:56.789Z #7 tools/call/denied server=files tool=write_file \
             reason=\"policy: writes need approval\" count=2"
        );
    }

    #[test]
    fn plain_words_are_not_quoted() {
        assert_eq!(quoted("files__read"), "files__read");
        assert_eq!(quoted(""), "\"\"");
        assert_eq!(quoted("a=b"), "\"a=b\"");
        assert_eq!(quoted("two words"), "\"two words\"");
    }

    #[test]
    fn a_head_is_64_hex_digits() {
        assert!(parse_head(&"A".repeat(64)).is_ok_and(|head| head == "a".repeat(64)));
        assert!(parse_head("abc").is_err());
        assert!(parse_head(&"g".repeat(64)).is_err());
    }

    #[test]
    fn the_follower_reads_whole_lines_and_notices_rewrites() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("log.jsonl");
        let mut follower = Follower::new(&path);
        let mut lines = Vec::new();
        let mut poll = |follower: &mut Follower| {
            let mut got = Vec::new();
            let restart = follower
                .poll(&mut |n, bytes| got.push((n, String::from_utf8_lossy(bytes).into_owned())));
            lines.push(got);
            restart
        };
        assert!(poll(&mut follower).is_err_and(|e| e.kind() == io::ErrorKind::NotFound));

        std::fs::write(&path, "one\ntw").expect("write");
        assert!(poll(&mut follower).expect("readable").is_none());
        let mut file = std::fs::OpenOptions::new().append(true).open(&path).expect("open");
        file.write_all(b"o\nthree\n").expect("append");
        assert!(poll(&mut follower).expect("readable").is_none());
        assert!(poll(&mut follower).expect("readable").is_none());

        // Rewritten in place, longer than before: the old offset means nothing any more.
        std::fs::write(&path, "uno\ndos\ntres\ncuatro\n").expect("rewrite");
        assert!(matches!(poll(&mut follower), Ok(Some(Restart::Rewritten))));
        std::fs::write(&path, "x\n").expect("truncate");
        assert!(matches!(poll(&mut follower), Ok(Some(Restart::Truncated))));

        let owned = |v: &[(u64, &str)]| -> Vec<(u64, String)> {
            v.iter().map(|(n, s)| (*n, s.to_string())).collect()
        };
        assert_eq!(lines[1], owned(&[(1, "one")]));
        assert_eq!(lines[2], owned(&[(2, "two"), (3, "three")]));
        assert_eq!(lines[3], owned(&[]));
        assert_eq!(lines[4], owned(&[(1, "uno"), (2, "dos"), (3, "tres"), (4, "cuatro")]));
        assert_eq!(lines[5], owned(&[(1, "x")]));
    }
}
