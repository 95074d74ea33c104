//! Tests of where an audit log may go: missing, unwritable or wrong-kind directories and files.

use std::path::{Path, PathBuf};

use super::check_place;
use crate::error::{AuditError, PlaceProblem};

fn problem(path: &Path) -> Option<PlaceProblem> {
    match check_place(path) {
        Ok(()) => None,
        Err(AuditError::Place { path: named, problem }) => {
            assert_eq!(named, path, "the error names the log");
            Some(problem)
        }
        Err(other) => panic!("unexpected error: {other}"),
    }
}

/// A directory nobody may create files in, this process included. Mode 0555 is enough for
/// other users; root ignores mode bits, so as root the directory is made immutable
/// (`chattr +i`, which binds root too) and made mutable again on drop.
struct Locked {
    dir: PathBuf,
    immutable: bool,
}

impl Locked {
    fn new(dir: PathBuf) -> Locked {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::create_dir(&dir).expect("create the directory");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).expect("chmod");
        let immutable = nix::unistd::geteuid().is_root();
        if immutable {
            let status = std::process::Command::new("chattr").arg("+i").arg(&dir).status();
            assert!(
                status.is_ok_and(|s| s.success()),
                "as root this test needs `chattr +i` on the temp dir's file system"
            );
        }
        Locked { dir, immutable }
    }
}

impl Drop for Locked {
    fn drop(&mut self) {
        if self.immutable {
            let _ = std::process::Command::new("chattr").arg("-i").arg(&self.dir).status();
        }
    }
}

#[test]
fn a_new_log_in_a_writable_directory_is_fine() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(problem(&dir.path().join("audit.jsonl")), None);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing was created");
}

#[test]
fn an_existing_log_is_fine() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    std::fs::write(&path, "").unwrap();
    assert_eq!(problem(&path), None);
}

#[test]
fn a_missing_directory_is_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    assert_eq!(
        problem(&missing.join("audit.jsonl")),
        Some(PlaceProblem::NoDirectory { dir: missing.clone() })
    );
    assert!(!missing.exists());
}

#[test]
fn a_file_where_the_directory_should_be() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, "x").unwrap();
    assert_eq!(
        problem(&file.join("audit.jsonl")),
        Some(PlaceProblem::NotADirectory { path: file.clone() })
    );
    assert_eq!(
        problem(&file.join("deeper/audit.jsonl")),
        Some(PlaceProblem::NotADirectory { path: file.clone() })
    );
}

#[test]
fn a_directory_where_the_log_should_be() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(problem(dir.path()), Some(PlaceProblem::NotAFile));
}

#[test]
fn a_directory_that_takes_no_new_files() {
    let dir = tempfile::tempdir().unwrap();
    let locked = Locked::new(dir.path().join("locked"));
    let found = problem(&locked.dir.join("audit.jsonl"));
    assert!(
        matches!(&found, Some(PlaceProblem::DirectoryNotWritable { dir, .. }) if *dir == locked.dir),
        "{found:?}"
    );
}
