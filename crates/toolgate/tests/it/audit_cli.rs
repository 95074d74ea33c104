//! `toolgate audit verify` and `toolgate audit tail`, on logs written by the real `AuditLog`.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};
use toolgate_audit::{AuditLog, Event, kind};

use crate::support::*;

/// Longest a test waits for `tail --follow` to print something.
const PATIENCE: Duration = Duration::from_secs(15);

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The records every test log holds, in order.
fn events() -> Vec<Event> {
    let at =
        |millis: u64| std::time::UNIX_EPOCH + Duration::from_millis(1_714_566_896_000 + millis);
    vec![
        Event::new(kind::TOOLS_CALL_STARTED)
            .at(at(1))
            .with("server", "files")
            .with("tool", "read_file")
            .with("principal", "alice"),
        Event::new(kind::TOOLS_CALL_FINISHED)
            .at(at(2))
            .with("server", "files")
            .with("tool", "read_file")
            .with("duration_ms", 12),
        Event::new(kind::TOOLS_CALL_DENIED)
            .at(at(3))
            .with("server", "files")
            .with("tool", "write_file")
            .with("principal", "alice")
            .with("reason", "policy: writes need approval")
            .with("arguments", serde_json::json!({"path": "/etc/passwd"})),
        Event::new(kind::UPSTREAM_CONNECTED).at(at(4)).with("server", "files"),
        Event::new(kind::TOOLS_CALL_STARTED)
            .at(at(5))
            .with("server", "git")
            .with("tool", "log")
            .with("principal", "bob"),
        Event::new(kind::TOOLS_CALL_FINISHED)
            .at(at(6))
            .with("server", "git")
            .with("tool", "log")
            .with("duration_ms", 40),
    ]
}

/// A folder holding `audit.jsonl` with [`events`], and the log's head.
fn write_log() -> (tempfile::TempDir, PathBuf, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("audit.jsonl");
    let mut log = AuditLog::open(&path).expect("open the log");
    for event in events() {
        log.append(&event).expect("append");
    }
    let head = log.head().to_owned();
    (dir, path, head)
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).expect("read the log").lines().map(str::to_owned).collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.iter().map(|line| format!("{line}\n")).collect::<String>())
        .expect("write the log");
}

async fn audit(args: &[&str], path: &Path) -> Output {
    let mut args = args.to_vec();
    let path = path.to_string_lossy();
    args.push(&path);
    run_toolgate(&args).await
}

/// Changes a fresh log with `tamper`, runs `audit verify` on it, and checks that it fails and
/// that its one line says `expected`.
async fn assert_caught(tamper: impl FnOnce(&mut Vec<String>), expected: &str) {
    let (_dir, path, _) = write_log();
    let mut records = lines(&path);
    tamper(&mut records);
    write_lines(&path, &records);
    let output = audit(&["audit", "verify"], &path).await;
    assert_eq!(output.status.code(), Some(1), "{}{}", stdout(&output), stderr(&output));
    let text = stdout(&output);
    assert!(text.starts_with(&format!("FAILED: {}: ", path.display())), "{text}");
    assert!(text.contains(expected), "expected {expected:?} in:\n{text}");
    assert_eq!(text.lines().count(), 1, "{text}");
}

// === verify ===

#[tokio::test]
async fn verify_passes_a_whole_chain_and_prints_its_head() {
    let (_dir, path, head) = write_log();
    let output = audit(&["audit", "verify"], &path).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), format!("ok: 6 records, head {head}\n"));

    let output = audit(&["audit", "verify", "--head", &head], &path).await;
    assert!(output.status.success(), "{}", stderr(&output));

    let output = audit(&["audit", "verify", "--json"], &path).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(report["ok"], true);
    assert_eq!(report["records"], 6);
    assert_eq!(report["head"], head.as_str());
}

#[tokio::test]
async fn verify_reads_the_file_named_in_the_config() {
    let (_dir, path, head) = write_log();
    let config =
        ConfigDir::new(&format!("[audit]\nfile = {}\n", toml_str(&path.to_string_lossy())));
    let output =
        run_toolgate(&["audit", "verify", "--config", &config.path().to_string_lossy()]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), format!("ok: 6 records, head {head}\n"));

    let without = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let output =
        run_toolgate(&["audit", "verify", "--config", &without.path().to_string_lossy()]).await;
    assert_eq!(output.status.code(), Some(64), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(text.contains("no audit log to read"), "{text}");
    assert!(text.contains("`[audit] file`"), "{text}");
}

#[tokio::test]
async fn verify_reports_a_missing_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = audit(&["audit", "verify"], &dir.path().join("nope.jsonl")).await;
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("nope.jsonl"), "{}", stderr(&output));
}

#[tokio::test]
async fn verify_catches_an_edited_field() {
    assert_caught(
        |lines| lines[1] = lines[1].replace("\"duration_ms\":12", "\"duration_ms\":1"),
        "line 2, record 2: edited: record 2 was changed after it was written",
    )
    .await;
}

#[tokio::test]
async fn verify_catches_an_edited_genesis() {
    assert_caught(
        |lines| lines[0] = lines[0].replacen("\"prev\":\"0", "\"prev\":\"1", 1),
        "line 1, record 1: bad genesis: the first record's `prev` is not 64 zeros",
    )
    .await;
}

#[tokio::test]
async fn verify_catches_a_deleted_line() {
    assert_caught(
        |lines| {
            lines.remove(2);
        },
        "line 3, record 4: removed: record 3 is missing",
    )
    .await;
}

#[tokio::test]
async fn verify_catches_swapped_lines() {
    assert_caught(
        |lines| lines.swap(1, 3),
        "line 2, record 4: reordered: records were moved: this line holds record 4 where 2 \
         belongs, and record 2 is at line 4",
    )
    .await;
}

#[tokio::test]
async fn verify_catches_an_inserted_line() {
    assert_caught(
        |lines| {
            let copy = lines[1].clone();
            lines.insert(4, copy);
        },
        "line 5, record 2: inserted: a record was inserted: this line holds a record 2, and \
         line 2 holds one too",
    )
    .await;
}

#[tokio::test]
async fn verify_catches_a_garbled_line() {
    assert_caught(
        |lines| lines[2] = lines[2][..30].to_owned(),
        "line 3: malformed: the line is not a valid record: not valid JSON",
    )
    .await;
}

#[tokio::test]
async fn verify_with_the_head_catches_a_truncated_log() {
    let (_dir, path, head) = write_log();
    let mut records = lines(&path);
    records.pop();
    write_lines(&path, &records);

    // The chain itself is whole: only the head shows that a record is gone.
    let output = audit(&["audit", "verify"], &path).await;
    assert!(output.status.success(), "{}", stdout(&output));

    let output = audit(&["audit", "verify", "--head", &head], &path).await;
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(text.contains("line 5, record 5: head mismatch: the log ends at record 5"), "{text}");
    assert!(text.contains("records were removed from its end"), "{text}");

    let output = audit(&["audit", "verify", "--json", "--head", &head], &path).await;
    assert_eq!(output.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(report["ok"], false);
    assert_eq!(report["problem"], "head_mismatch");
    assert_eq!(report["records"], 5);
    assert_eq!(report["expected_head"], head.as_str());

    let output = audit(&["audit", "verify", "--head", "abc"], &path).await;
    assert_eq!(output.status.code(), Some(2), "a malformed head is a usage error");
}

#[tokio::test]
async fn verify_json_names_the_record_and_the_problem() {
    let (_dir, path, _) = write_log();
    let mut records = lines(&path);
    records.remove(2);
    write_lines(&path, &records);
    let output = audit(&["audit", "verify", "--json"], &path).await;
    assert_eq!(output.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(report["ok"], false);
    assert_eq!(report["problem"], "removed");
    assert_eq!(report["line"], 3);
    assert_eq!(report["seq"], 4);
    assert_eq!(report["expected"], 3);
    assert_eq!(report["found"], 4);
    assert!(report["message"].as_str().is_some_and(|m| m.contains("record 3 is missing")));
}

// === tail ===

#[tokio::test]
async fn tail_prints_the_last_records_readably() {
    let (_dir, path, _) = write_log();
    let output = audit(&["audit", "tail"], &path).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output).lines().count(), 6, "all 6 of the default 10");

    let output = audit(&["audit", "tail", "-n", "2"], &path).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "2024-05-01T12:34:56.005Z #5 tools/call/started server=git tool=log principal=bob\n\
         2024-05-01T12:34:56.006Z #6 tools/call/finished server=git tool=log duration_ms=40\n"
    );
}

#[tokio::test]
async fn tail_selects_records_by_pattern() {
    let (_dir, path, _) = write_log();
    let output = audit(&["audit", "tail", "--pattern", "*/denied"], &path).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "2024-05-01T12:34:56.003Z #3 tools/call/denied server=files tool=write_file \
         principal=alice reason=\"policy: writes need approval\"\n"
    );

    let output =
        audit(&["audit", "tail", "-p", "upstream/*", "--pattern", "tools/call/started"], &path)
            .await;
    let kinds: Vec<String> = stdout(&output)
        .lines()
        .map(|line| line.split(' ').nth(2).expect("a kind").to_owned())
        .collect();
    assert_eq!(kinds, ["tools/call/started", "upstream/connected", "tools/call/started"]);

    let output = audit(&["audit", "tail", "--pattern", "tools/*", "-n", "1"], &path).await;
    assert!(stdout(&output).contains("#6 tools/call/finished"), "{}", stdout(&output));

    let output = audit(&["audit", "tail", "--pattern", "tools/**"], &path).await;
    assert_eq!(output.status.code(), Some(2), "a bad pattern is a usage error");
    assert!(stderr(&output).contains("`*` must be a whole segment"), "{}", stderr(&output));
}

#[tokio::test]
async fn tail_json_prints_the_records_as_they_are() {
    let (_dir, path, _) = write_log();
    let output = audit(&["audit", "tail", "--json", "-n", "3"], &path).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let all = lines(&path);
    assert_eq!(stdout(&output).lines().collect::<Vec<_>>(), all[3..]);

    let output = audit(&["audit", "tail", "--json", "--pattern", "*/denied"], &path).await;
    let record: Value = serde_json::from_str(stdout(&output).trim()).expect("one JSON record");
    assert_eq!(record["arguments"]["path"], "/etc/passwd", "every field is there");
}

#[tokio::test]
async fn tail_of_a_missing_file_fails_without_follow() {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = audit(&["audit", "tail"], &dir.path().join("nope.jsonl")).await;
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("nope.jsonl"), "{}", stderr(&output));
}

/// `toolgate audit tail --follow ARGS FILE`, its stdout read line by line.
struct Follow {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Follow {
    fn start(args: &[&str], path: &Path) -> Follow {
        let mut child = Command::new(toolgate_bin())
            .args(["audit", "tail", "--follow"])
            .args(args)
            .arg(path)
            .env_remove("TOOLGATE_CONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn toolgate audit tail");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        Follow { child, lines }
    }

    async fn next_line(&mut self) -> String {
        tokio::time::timeout(PATIENCE, self.lines.next_line())
            .await
            .expect("tail --follow prints the line in time")
            .expect("read stdout")
            .expect("tail --follow is still running")
    }

    /// Sends `signal` and returns the exit code.
    async fn stop(mut self, signal: nix::sys::signal::Signal) -> Option<i32> {
        let pid = nix::unistd::Pid::from_raw(self.child.id().expect("running") as i32);
        nix::sys::signal::kill(pid, signal).expect("signal");
        let status = tokio::time::timeout(PATIENCE, self.child.wait())
            .await
            .expect("tail --follow ends after the signal")
            .expect("wait");
        assert!(self.lines.next_line().await.expect("read stdout").is_none(), "no more output");
        status.code()
    }
}

#[tokio::test]
async fn tail_follow_prints_appended_records_and_ends_cleanly_on_sigterm() {
    let (_dir, path, _) = write_log();
    let mut follow = Follow::start(&["-n", "1", "--pattern", "tools/*"], &path);
    assert!(follow.next_line().await.contains("#6 tools/call/finished"));

    let mut log = AuditLog::open(&path).expect("reopen the log");
    log.append(&Event::new(kind::UPSTREAM_FAILED).with("server", "git")).expect("append");
    log.append(&Event::new(kind::TOOLS_CALL_DENIED).with("tool", "rm").with("reason", "no"))
        .expect("append");
    let line = follow.next_line().await;
    assert!(line.contains("#8 tools/call/denied tool=rm reason=no"), "{line}");

    assert_eq!(follow.stop(nix::sys::signal::Signal::SIGTERM).await, Some(0));
}

#[tokio::test]
async fn tail_follow_waits_for_the_file_and_rereads_a_replaced_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("audit.jsonl");
    let mut follow = Follow::start(&["--json"], &path);

    let mut log = AuditLog::open(&path).expect("create the log");
    log.append(&Event::new(kind::UPSTREAM_CONNECTED).with("server", "first")).expect("append");
    let line = follow.next_line().await;
    assert_eq!(line, lines(&path)[0]);

    // Rotated: a new log moved into place.
    let next = dir.path().join("audit.jsonl.new");
    let mut rotated = AuditLog::open(&next).expect("create the new log");
    rotated.append(&Event::new(kind::UPSTREAM_CONNECTED).with("server", "second")).expect("append");
    std::fs::rename(&next, &path).expect("rename");
    let line = follow.next_line().await;
    let record: Value = serde_json::from_str(&line).expect("json");
    assert_eq!((record["seq"].as_u64(), record["server"].as_str()), (Some(1), Some("second")));

    assert_eq!(follow.stop(nix::sys::signal::Signal::SIGINT).await, Some(0));
}
