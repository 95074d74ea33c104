//! Tests of the hash chain: a clean log verifies, and each kind of tampering is named at its line.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::error::{AuditError, ChainProblem};
use crate::event::Event;
use toolgate_core::hash::sha256_hex;

use super::{AuditLog, GENESIS, verify, verify_with_head};

/// A log of `records` events in a fresh directory; the directory lives as long as the guard.
fn log_of(records: u64) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary directory must be available");
    let path = dir.path().join("audit.jsonl");
    let mut log = AuditLog::open(&path).expect("a new log must open");
    for n in 1..=records {
        log.append(&event(n)).expect("append must succeed");
    }
    (dir, path)
}

fn event(n: u64) -> Event {
    Event::new("tools/call/finished").with("server", "fs").with("n", n)
}

fn lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).expect("the log must be readable");
    text.lines().map(str::to_owned).collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(path, text).expect("the log must be writable");
}

/// Applies `tamper` to the log's lines and returns where and how verification says it broke.
#[track_caller]
fn tampered(records: u64, tamper: impl FnOnce(&mut Vec<String>)) -> (u64, ChainProblem) {
    let (_dir, path) = log_of(records);
    let mut lines = lines(&path);
    tamper(&mut lines);
    write_lines(&path, &lines);
    let error = verify(&path).expect_err("a tampered log must fail verification");
    let message = error.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    match error {
        AuditError::Broken { line, problem, .. } => {
            assert!(message.contains(&format!("line {line}:")), "{message}");
            (line, problem)
        }
        other => panic!("expected a broken chain, got {other:?}"),
    }
}

fn parse(line: &str) -> Value {
    serde_json::from_str(line).expect("a record must be JSON")
}

#[test]
fn a_clean_log_verifies() {
    let (_dir, path) = log_of(5);
    let lines = lines(&path);
    assert_eq!(lines.len(), 5);
    let report = verify(&path).expect("a clean log must verify");
    assert_eq!(report.records, 5);
    assert_eq!(report.head, sha256_hex(lines[4].as_bytes()));

    let mut prev = GENESIS.to_owned();
    for (i, line) in lines.iter().enumerate() {
        let record = parse(line);
        let keys: Vec<&str> = record.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["seq", "prev", "time", "kind", "server", "n"]);
        assert_eq!(record["seq"], json!(i + 1));
        assert_eq!(record["prev"], json!(prev));
        assert_eq!(record["n"], json!(i + 1));
        prev = sha256_hex(line.as_bytes());
    }
}

#[test]
fn an_empty_log_verifies_with_the_genesis_head() {
    let (_dir, path) = log_of(0);
    let report = verify(&path).expect("an empty log must verify");
    assert_eq!((report.records, report.head.as_str()), (0, GENESIS));
}

#[test]
fn a_missing_file_is_an_io_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nope.jsonl");
    let error = verify(&path).expect_err("a missing file must not verify");
    assert!(matches!(error, AuditError::Io { action: "open", .. }), "{error:?}");
    assert!(error.to_string().contains("nope.jsonl"), "{error}");
}

#[test]
fn an_edited_middle_record_is_caught_at_its_line() {
    let (line, problem) = tampered(5, |lines| {
        lines[2] = lines[2].replace(r#""n":3"#, r#""n":30"#);
    });
    assert_eq!((line, problem), (3, ChainProblem::Edited));
}

#[test]
fn an_edited_first_prev_is_caught() {
    let (line, problem) = tampered(3, |lines| {
        lines[0] = lines[0].replace(GENESIS, &"1".repeat(64));
    });
    assert_eq!((line, problem), (1, ChainProblem::BadGenesis));
}

#[test]
fn a_removed_middle_record_is_caught() {
    let (line, problem) = tampered(5, |lines| {
        lines.remove(2);
    });
    assert_eq!((line, problem), (3, ChainProblem::Removed { expected: 3, found: 4 }));
}

#[test]
fn several_removed_records_are_caught() {
    let (line, problem) = tampered(6, |lines| {
        lines.drain(1..4);
    });
    assert_eq!(problem.to_string(), "seq 5 where 2 was expected: records 2 to 4 were removed");
    assert_eq!((line, problem), (2, ChainProblem::Removed { expected: 2, found: 5 }));
}

#[test]
fn a_removed_first_record_is_caught() {
    let (line, problem) = tampered(4, |lines| {
        lines.remove(0);
    });
    assert_eq!((line, problem), (1, ChainProblem::Removed { expected: 1, found: 2 }));
}

#[test]
fn a_copied_record_inserted_later_is_caught() {
    let (line, problem) = tampered(5, |lines| {
        let copy = lines[1].clone();
        lines.insert(4, copy);
    });
    assert_eq!((line, problem), (5, ChainProblem::Inserted { seq: 2, also_at: 2 }));
}

#[test]
fn a_copied_record_inserted_earlier_is_caught() {
    let (line, problem) = tampered(5, |lines| {
        let copy = lines[3].clone();
        lines.insert(1, copy);
    });
    assert_eq!((line, problem), (2, ChainProblem::Inserted { seq: 4, also_at: 5 }));
}

#[test]
fn a_record_repeated_in_place_is_caught() {
    let (line, problem) = tampered(3, |lines| {
        let copy = lines[1].clone();
        lines.insert(2, copy);
    });
    assert_eq!((line, problem), (3, ChainProblem::Inserted { seq: 2, also_at: 2 }));
}

#[test]
fn swapped_records_are_caught() {
    let (line, problem) = tampered(5, |lines| lines.swap(1, 3));
    assert_eq!(
        (line, problem),
        (2, ChainProblem::Reordered { expected: 2, found: 4, expected_at: 4 })
    );
}

#[test]
fn swapped_neighbours_are_caught() {
    let (line, problem) = tampered(4, |lines| lines.swap(2, 3));
    assert_eq!(
        (line, problem),
        (3, ChainProblem::Reordered { expected: 3, found: 4, expected_at: 4 })
    );
}

#[test]
fn a_garbled_line_is_malformed() {
    let (line, problem) = tampered(4, |lines| {
        let half = lines[2].len() / 2;
        lines[2].truncate(half);
    });
    assert_eq!(line, 3);
    assert!(
        matches!(&problem, ChainProblem::Malformed { reason } if reason.starts_with("not valid JSON")),
        "{problem:?}"
    );
}

#[test]
fn records_without_chain_fields_are_malformed() {
    let cases: [(&str, &str); 7] = [
        ("", "empty line"),
        ("garbage", "not a JSON object"),
        (r#"[1, "abc"]"#, "not a JSON object"),
        (r#"{"prev":"x"}"#, "no `seq`"),
        (r#"{"seq":1}"#, "no `prev`"),
        (r#"{"seq":0,"prev":"x"}"#, "`seq` is 0"),
        (r#"{"seq":1,"prev":"ABC"}"#, "`prev` is \"ABC\""),
    ];
    for (text, reason) in cases {
        let (line, problem) = tampered(3, |lines| lines[1] = text.to_owned());
        assert_eq!(line, 2, "{text}");
        assert!(
            matches!(&problem, ChainProblem::Malformed { reason: r } if r.contains(reason)),
            "{text}: {problem:?}"
        );
    }
}

#[test]
fn a_duplicated_chain_key_is_malformed() {
    let (line, problem) = tampered(3, |lines| {
        lines[1] = lines[1].replacen(r#"{"seq":2,"#, r#"{"seq":2,"seq":2,"#, 1);
    });
    assert_eq!(line, 2);
    assert!(matches!(problem, ChainProblem::Malformed { .. }), "{problem:?}");
}

#[test]
fn reopening_continues_the_chain() {
    let (_dir, path) = log_of(3);
    let head = verify(&path).unwrap().head;
    let mut log = AuditLog::open(&path).expect("a clean log must reopen");
    assert_eq!(log.records(), 3);
    assert_eq!(log.head(), head);
    log.append(&event(4)).unwrap();
    log.append(&event(5)).unwrap();
    log.sync().unwrap();
    let new_head = log.head().to_owned();
    drop(log);

    let lines = lines(&path);
    let fourth = parse(&lines[3]);
    assert_eq!(fourth["seq"], json!(4));
    assert_eq!(fourth["prev"], json!(head));
    let report = verify(&path).expect("the continued log must verify");
    assert_eq!((report.records, report.head), (5, new_head));
}

#[test]
fn open_refuses_a_broken_log_and_leaves_it_alone() {
    let (_dir, path) = log_of(4);
    let mut lines = lines(&path);
    lines.remove(1);
    write_lines(&path, &lines);
    let before = std::fs::read(&path).unwrap();

    let error = AuditLog::open(&path).expect_err("a broken log must not be appended to");
    assert_eq!(error.problem(), Some((2, &ChainProblem::Removed { expected: 2, found: 3 })));
    let message = error.to_string();
    assert!(
        message.contains(&path.display().to_string()) && message.contains("line 2"),
        "{message}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn open_creates_the_file_but_not_its_directory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let mut log = AuditLog::open(&path).expect("open must create the file");
    assert_eq!((log.records(), log.head()), (0, GENESIS));
    log.append(&event(1)).unwrap();
    assert_eq!(log.path(), path);
    assert_eq!(verify(&path).unwrap().records, 1);

    let nested = dir.path().join("a/b/audit.jsonl");
    let error = AuditLog::open(&nested).expect_err("the directory is missing");
    assert!(matches!(error, AuditError::Place { .. }), "{error}");
    assert!(error.to_string().ends_with("/a/b does not exist"), "{error}");
    assert!(!dir.path().join("a").exists());
}

#[test]
fn check_finds_what_open_would_refuse_and_changes_nothing() {
    let (_dir, path) = log_of(3);
    assert!(AuditLog::check(&path).is_ok());
    let mut lines = lines(&path);
    lines.swap(0, 1);
    write_lines(&path, &lines);
    let before = std::fs::read(&path).unwrap();
    let error = AuditLog::check(&path).expect_err("the chain is broken");
    assert!(error.problem().is_some(), "{error}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert!(AuditLog::open(&path).is_err());

    let dir = tempfile::tempdir().unwrap();
    let fresh = dir.path().join("audit.jsonl");
    assert!(AuditLog::check(&fresh).is_ok());
    assert!(!fresh.exists(), "check must not create the log");
}

#[test]
fn a_last_record_without_its_newline_is_completed_on_open() {
    let (_dir, path) = log_of(2);
    let mut bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.pop(), Some(b'\n'));
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(verify(&path).unwrap().records, 2);

    let mut log = AuditLog::open(&path).unwrap();
    log.append(&event(3)).unwrap();
    drop(log);
    assert_eq!(verify(&path).unwrap().records, 3);
    assert_eq!(lines(&path).len(), 3);
}

#[test]
fn a_truncated_tail_is_caught_by_the_expected_head() {
    let (_dir, path) = log_of(5);
    let head = verify(&path).unwrap().head;
    assert_eq!(verify_with_head(&path, &head).unwrap().records, 5);

    let mut lines = lines(&path);
    lines.pop();
    write_lines(&path, &lines);
    // The chain that is left is whole: only the head shows what is missing.
    assert_eq!(verify(&path).unwrap().records, 4);
    let error = verify_with_head(&path, &head).expect_err("a truncated log must not verify");
    match &error {
        AuditError::HeadMismatch { records, expected, found, expected_at, .. } => {
            assert_eq!((*records, expected, *expected_at), (4, &head, None));
            assert_eq!(found, &sha256_hex(lines[3].as_bytes()));
        }
        other => panic!("expected a head mismatch, got {other:?}"),
    }
    assert!(error.to_string().contains("removed from its end"), "{error}");
}

#[test]
fn an_edited_last_record_is_caught_by_the_expected_head() {
    let (_dir, path) = log_of(3);
    let head = verify(&path).unwrap().head;
    let mut lines = lines(&path);
    lines[2] = lines[2].replace(r#""n":3"#, r#""n":4"#);
    write_lines(&path, &lines);
    assert!(verify(&path).is_ok());
    let error = verify_with_head(&path, &head).expect_err("the edit must be caught");
    assert!(matches!(error, AuditError::HeadMismatch { expected_at: None, .. }), "{error:?}");
}

#[test]
fn a_log_that_grew_past_the_expected_head_says_where_it_was() {
    let (_dir, path) = log_of(2);
    let head = verify(&path).unwrap().head;
    let mut log = AuditLog::open(&path).unwrap();
    log.append(&event(3)).unwrap();
    drop(log);
    let error = verify_with_head(&path, &head).expect_err("the head moved on");
    assert!(matches!(error, AuditError::HeadMismatch { expected_at: Some(2), .. }), "{error:?}");
}

#[test]
fn a_prev_must_be_exactly_64_lowercase_hex_digits() {
    let not_hashes = [
        "abc".to_owned(), // hex, too short
        "a".repeat(65),   // hex, too long
        "g".repeat(64),   // the right length, not hex
        "A".repeat(64),   // upper case
    ];
    for prev in not_hashes {
        let text = format!(r#"{{"seq":2,"prev":"{prev}"}}"#);
        let (line, problem) = tampered(3, |lines| lines[1] = text.clone());
        assert_eq!(line, 2, "{text}");
        assert!(
            matches!(&problem, ChainProblem::Malformed { reason } if reason.contains("`prev` is")),
            "{text}: {problem:?}"
        );
    }
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).expect("metadata").permissions().mode() & 0o777
}

/// The log holds who called what with which arguments: toolgate creates it for its owner only.
#[cfg(unix)]
#[test]
fn a_new_log_is_readable_by_its_owner_only() {
    let (_dir, path) = log_of(1);
    assert_eq!(mode(&path), 0o600);
    assert_eq!(AuditLog::access_warning(&path), None);
}

/// A log others may read is opened as it is (it is the user's file), and named in a warning.
#[cfg(unix)]
#[test]
fn a_log_others_can_read_is_named_in_a_warning() {
    use std::os::unix::fs::PermissionsExt;
    let (_dir, path) = log_of(1);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let warning = AuditLog::access_warning(&path).expect("a warning");
    assert!(warning.contains(&path.display().to_string()), "{warning}");
    assert!(warning.contains("mode 0644") && warning.contains("chmod 600"), "{warning}");
    AuditLog::open(&path).expect("still opens");
    assert_eq!(mode(&path), 0o644, "the user's file is left as it is");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o620)).unwrap();
    assert!(AuditLog::access_warning(&path).is_some(), "writable by the group counts too");
    assert_eq!(AuditLog::access_warning(path.with_extension("absent")), None);
}
