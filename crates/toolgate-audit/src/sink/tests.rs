//! Tests of the audit log and tracing sinks: order, counted losses, and write errors.

use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::bus::EventBus;
use crate::chain::{AuditLog, verify};
use crate::event::{Event, kind};
use crate::pattern::EventPattern;

use super::{SINK_CAPACITY, spawn_audit_sink, spawn_tracing_sink};

fn records(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("the log must be readable");
    text.lines().map(|line| serde_json::from_str(line).expect("records are JSON")).collect()
}

/// Collects what a `tracing` subscriber on this thread writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    fn install(&self) -> tracing::subscriber::DefaultGuard {
        let captured = self.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || captured.clone())
            .finish();
        tracing::subscriber::set_default(subscriber)
    }

    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn the_audit_sink_appends_matching_events_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let bus = EventBus::new();
    let log = AuditLog::open(&path).unwrap();
    let sink = spawn_audit_sink(&bus, "tools/call/*".parse().unwrap(), log);

    bus.publish(Event::new(kind::TOOLS_CALL_STARTED).with("n", 1));
    bus.publish(Event::new(kind::UPSTREAM_CONNECTED).with("n", 2));
    bus.publish(Event::new(kind::TOOLS_CALL_FINISHED).with("n", 3));
    drop(bus);
    sink.await.expect("the sink must end cleanly once the bus is gone");

    assert_eq!(verify(&path).unwrap().records, 2);
    let records = records(&path);
    assert_eq!(records[0]["kind"], json!(kind::TOOLS_CALL_STARTED));
    assert_eq!(records[1]["kind"], json!(kind::TOOLS_CALL_FINISHED));
    assert_eq!(records[1]["n"], json!(3));
}

#[tokio::test]
async fn events_the_audit_sink_lost_are_recorded_as_a_count() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let bus = EventBus::new();
    let sink = spawn_audit_sink(&bus, EventPattern::all(), AuditLog::open(&path).unwrap());

    // The sink task cannot run before this test awaits, so its queue overflows.
    let published = SINK_CAPACITY as u64 + 904;
    for n in 0..published {
        bus.publish(Event::new(kind::TOOLS_CALL_STARTED).with("n", n));
    }
    assert_eq!(bus.dropped(), 904);
    drop(bus);
    sink.await.unwrap();

    let records = records(&path);
    assert_eq!(verify(&path).unwrap().records, SINK_CAPACITY as u64 + 1);
    let drops: Vec<&Value> =
        records.iter().filter(|r| r["kind"] == json!(kind::AUDIT_DROPPED)).collect();
    assert_eq!(drops.len(), 1);
    assert_eq!(drops[0]["count"], json!(904));
    // The events that made it are the first ones, in order.
    let kept: Vec<u64> = records.iter().filter_map(|r| r["n"].as_u64()).collect();
    assert_eq!(kept, (0..SINK_CAPACITY as u64).collect::<Vec<_>>());
}

#[tokio::test]
async fn the_audit_sink_logs_write_errors_and_carries_on() {
    let captured = Captured::default();
    let _guard = captured.install();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("read-only.jsonl");
    let bus = EventBus::new();
    let sink = spawn_audit_sink(&bus, EventPattern::all(), AuditLog::unwritable(&path));

    bus.publish(Event::new(kind::TOOLS_CALL_STARTED));
    tokio::task::yield_now().await;
    bus.publish(Event::new(kind::TOOLS_CALL_FINISHED));
    drop(bus);
    sink.await.expect("a write error must not end the sink abnormally");

    let text = captured.text();
    assert!(text.contains("cannot write to the audit log"), "{text}");
    assert!(text.contains(&path.display().to_string()), "{text}");
    // Both events were tried (in one batch or two): the sink carried on after the first error.
    let failed: u64 = text
        .split("failed=")
        .skip(1)
        .map(|rest| rest.split(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(failed, 2, "{text}");
    assert_eq!(std::fs::read(&path).unwrap(), b"");
}

#[tokio::test]
async fn the_tracing_sink_logs_each_matching_event() {
    let captured = Captured::default();
    let _guard = captured.install();
    let bus = EventBus::new();
    let sink = spawn_tracing_sink(&bus, "*/denied".parse().unwrap());

    bus.publish(Event::new(kind::TOOLS_CALL_DENIED).with("tool", "fs__write").with("by", "policy"));
    bus.publish(Event::new(kind::TOOLS_CALL_STARTED).with("tool", "fs__read"));
    drop(bus);
    sink.await.unwrap();

    let text = captured.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert!(lines[0].contains("INFO toolgate::event: tools/call/denied"), "{text}");
    assert!(lines[0].contains(r#"fields={"tool":"fs__write","by":"policy"}"#), "{text}");
}

/// Opening a log others can read says so in toolgate's log, naming the file.
#[cfg(unix)]
#[test]
fn opening_a_log_others_can_read_logs_a_warning_naming_it() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    std::fs::write(&path, "").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let captured = Captured::default();
    {
        let _guard = captured.install();
        AuditLog::open(&path).expect("opens");
    }
    let text = captured.text();
    assert!(text.contains("WARN") && text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains("can be read or written by others"), "{text}");
}

/// Write-ahead: a publisher learns that its event is in the log, or why it is not.
#[tokio::test]
async fn a_publisher_waiting_for_its_event_learns_it_was_written_or_why_not() {
    let within = std::time::Duration::from_secs(10);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let bus = EventBus::new();
    let sink = spawn_audit_sink(&bus, EventPattern::all(), AuditLog::open(&path).unwrap());
    let (event, written) = Event::new(kind::TOOLS_CALL_STARTED).awaiting_write();
    bus.publish(event);
    written.wait(within).await.expect("written");
    assert_eq!(records(&path).len(), 1, "in the file when the wait ends");
    drop(bus);
    sink.await.unwrap();

    let bus = EventBus::new();
    let unwritable = dir.path().join("read-only.jsonl");
    let sink = spawn_audit_sink(&bus, EventPattern::all(), AuditLog::unwritable(&unwritable));
    let (event, written) = Event::new(kind::TOOLS_CALL_STARTED).awaiting_write();
    bus.publish(event);
    let why = written.wait(within).await.expect_err("not written");
    assert!(matches!(why, crate::NotWritten::Failed(_)), "{why:?}");
    assert!(why.to_string().contains("read-only.jsonl"), "{why}");
    drop(bus);
    sink.await.unwrap();

    // A pattern that does not choose the event: nobody writes it, and the wait says so at once.
    let bus = EventBus::new();
    let pattern = EventPattern::parse("approval/*").unwrap();
    let sink = spawn_audit_sink(&bus, pattern, AuditLog::open(dir.path().join("b.jsonl")).unwrap());
    let (event, written) = Event::new(kind::TOOLS_CALL_STARTED).awaiting_write();
    bus.publish(event);
    assert_eq!(written.wait(within).await, Err(crate::NotWritten::Lost));
    drop(bus);
    sink.await.unwrap();
}
