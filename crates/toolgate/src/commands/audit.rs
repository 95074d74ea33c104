//! `toolgate audit`: check the audit log's hash chain (`verify`) and read it (`tail`).

use std::collections::VecDeque;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use serde_json::{Map, Value};
use tokio::signal::unix::{SignalKind, signal};
use toolgate_audit::{EventPattern, Follower};

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
    let verdict =
        tokio::task::spawn_blocking(move || toolgate_audit::verdict::check(&file, head.as_deref()))
            .await
            .context("the verification task failed")??;
    let mut out = io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &verdict.json(path))?;
        writeln!(out)?;
    } else {
        writeln!(out, "{}", verdict.line(path))?;
    }
    Ok(if verdict.is_intact() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
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
        Err(error) => return Err(error.into()),
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
            Err(error) => return Err(error.into()),
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

#[cfg(test)]
mod tests {
    use serde_json::json;

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
}
