//! The lock file: round trip, refusals of broken or hand-edited files, drift, partial pins.

use serde_json::json;

use super::{Lock, LockError};
use crate::contract::{Contract, Kind};

fn tool(name: &str, description: &str) -> Contract {
    Contract::new(
        Kind::Tool,
        name,
        json!({"name": name, "description": description, "inputSchema": {"type": "object"}}),
    )
}

fn lock_of(contracts: Vec<Contract>) -> Lock {
    let mut lock = Lock::default();
    lock.pin_server("fs", contracts);
    lock
}

#[test]
fn a_lock_file_round_trips_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolgate.lock");
    let prompt =
        Contract::new(Kind::Prompt, "greet", json!({"name": "greet", "description": "Hi"}));
    let lock = lock_of(vec![tool("write", "Write"), tool("read", "Read \u{e9}\n"), prompt]);
    lock.write(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let back = Lock::read(&path).unwrap().expect("a lock");
    assert_eq!(back, lock);
    back.write(&path).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "rewriting changes nothing");
    // Stable order: tools by name, keys of a contract sorted.
    let read_at = text.find("\"read\"").unwrap();
    let write_at = text.find("\"write\"").unwrap();
    assert!(read_at < write_at, "{text}");
    assert!(text.contains("\"prompts\"") && text.ends_with("}\n"), "{text}");
}

#[test]
fn a_missing_lock_file_is_none_and_a_broken_one_says_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolgate.lock");
    assert!(Lock::read(&path).unwrap().is_none());

    std::fs::write(&path, "{ not json").unwrap();
    let error = Lock::read(&path).unwrap_err();
    assert!(matches!(error, LockError::Parse { .. }), "{error}");
    assert!(error.to_string().contains("is not a toolgate lock file"), "{error}");

    std::fs::write(&path, r#"{"version": 2, "servers": {}}"#).unwrap();
    let error = Lock::read(&path).unwrap_err();
    assert!(error.to_string().contains("version 2"), "{error}");
}

#[test]
fn a_contract_edited_by_hand_without_its_digest_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolgate.lock");
    lock_of(vec![tool("read", "Read a file")]).write(&path).unwrap();
    let edited = std::fs::read_to_string(&path).unwrap().replace("Read a file", "Read any file");
    std::fs::write(&path, edited).unwrap();
    let error = Lock::read(&path).unwrap_err();
    assert!(matches!(error, LockError::Mismatch { .. }), "{error}");
    assert!(error.to_string().contains("tool `read` of server `fs`"), "{error}");
}

#[test]
fn drift_lists_what_was_added_removed_and_changed() {
    let lock = lock_of(vec![tool("read", "Read"), tool("write", "Write"), tool("gone", "Gone")]);
    let now = [tool("read", "Read"), tool("write", "Write anything"), tool("new", "New")];
    let drift = lock.drift("fs", &now);
    assert!(drift.pinned);
    assert_eq!(drift.server, "fs");
    assert_eq!(drift.added.iter().map(|c| c.key.as_str()).collect::<Vec<_>>(), ["new"]);
    assert_eq!(drift.removed.iter().map(|c| c.key.as_str()).collect::<Vec<_>>(), ["gone"]);
    assert_eq!(drift.changed.len(), 1);
    assert_eq!(drift.changed[0].0.key, "write");
    assert!(!drift.is_empty());

    let same =
        lock.drift("fs", &[tool("read", "Read"), tool("write", "Write"), tool("gone", "Gone")]);
    assert!(same.is_empty());
}

#[test]
fn a_server_never_pinned_is_drift_even_when_it_offers_nothing() {
    let lock = Lock::default();
    let drift = lock.drift("new", &[]);
    assert!(!drift.pinned);
    assert!(!drift.is_empty());
}

#[test]
fn pinning_one_contract_or_one_server_leaves_the_rest() {
    let mut lock = lock_of(vec![tool("read", "Read")]);
    lock.pin_server("git", vec![tool("log", "Log")]);
    lock.pin("fs", tool("write", "Write"));
    assert_eq!(lock.contracts("fs").len(), 2);
    assert_eq!(lock.servers().collect::<Vec<_>>(), ["fs", "git"]);
    assert!(lock.unpin("fs", Kind::Tool, "write"));
    assert!(!lock.unpin("fs", Kind::Tool, "write"));
    assert!(lock.forget_server("git"));
    assert_eq!(lock.servers().collect::<Vec<_>>(), ["fs"]);
}

#[test]
fn a_lock_file_that_cannot_be_read_is_an_error_not_an_empty_lock() {
    let dir = tempfile::tempdir().unwrap();
    // A folder where the file should be.
    let error = Lock::read(dir.path()).unwrap_err();
    assert!(matches!(error, LockError::Read { .. }), "{error}");
    assert!(error.to_string().starts_with("cannot read "), "{error}");
}

#[test]
fn digests_are_found_by_server_kind_and_key() {
    let lock = lock_of(vec![tool("read", "Read")]);
    let pinned = lock.contract("fs", Kind::Tool, "read").expect("pinned");
    assert_eq!(lock.digest("fs", Kind::Tool, "read"), Some(pinned.digest.as_str()));
    assert_eq!(lock.digest("fs", Kind::Prompt, "read"), None);
    assert_eq!(lock.digest("git", Kind::Tool, "read"), None);
}

#[test]
fn the_temporary_file_is_made_in_the_locks_own_folder() {
    // The whole file appears at once (a temporary file renamed), and nothing else is left.
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("a").join("toolgate.lock");
    std::fs::create_dir(dir.path().join("a")).unwrap();
    lock_of(vec![tool("read", "Read")]).write(&nested).unwrap();
    let names: Vec<_> =
        std::fs::read_dir(dir.path().join("a")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["toolgate.lock"]);
}

/// The pins are toolgate's word on what may run: a lock it writes is its owner's only, also
/// when it replaces one others could read.
#[cfg(unix)]
#[test]
fn a_written_lock_file_is_the_owners_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolgate.lock");
    let mode =
        |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    lock_of(vec![tool("read", "Read")]).write(&path).unwrap();
    assert_eq!(mode(&path), 0o600);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    lock_of(vec![tool("write", "Write")]).write(&path).unwrap();
    assert_eq!(mode(&path), 0o600);
}
