//! Checks of the repository itself: every module says what it is, and nothing points outside.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The root of the repository (this crate lives at `crates/toolgate`).
fn repository_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or_else(|error| panic!("{}: {error}", root.display()))
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|error| panic!("{}: {error}", dir.display()));
    for entry in entries {
        let path = entry.unwrap_or_else(|error| panic!("{}: {error}", dir.display())).path();
        if path.is_dir() {
            rust_files(&path, &mut *found);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            found.push(path);
        }
    }
}

/// The first line of `text` that is not blank, if any.
fn first_non_blank_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).find(|line| !line.is_empty())
}

#[test]
fn every_rust_file_opens_with_a_module_doc_line() {
    let root = repository_root();
    let mut files = Vec::new();
    rust_files(&root.join("crates"), &mut files);
    files.sort();
    // A walk of the wrong folder would pass vacuously.
    assert!(files.len() > 100, "found only {} .rs files under crates/", files.len());

    let undocumented: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let text = fs::read_to_string(path)
                .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
            let first = first_non_blank_line(&text).unwrap_or("");
            let relative = path.strip_prefix(&root).unwrap_or(path);
            (!first.starts_with("//!"))
                .then(|| format!("  {}: starts with `{first}`", relative.display()))
        })
        .collect();
    assert!(
        undocumented.is_empty(),
        "every module opens with a `//!` line saying what it is; these do not:\n{}",
        undocumented.join("\n")
    );
}

#[test]
fn the_module_doc_check_reads_the_first_non_blank_line() {
    assert_eq!(first_non_blank_line("\n  \n//! doc\nuse x;"), Some("//! doc"));
    assert_eq!(first_non_blank_line("use x;\n//! late"), Some("use x;"));
    assert_eq!(first_non_blank_line(" \n\n"), None);
}

/// Paths of the tracked files, relative to the root.
fn tracked_files(root: &Path) -> Vec<PathBuf> {
    let output =
        Command::new("git").args(["ls-files", "-z"]).current_dir(root).output().unwrap_or_else(
            |error| panic!("cannot run `git ls-files` in {}: {error}", root.display()),
        );
    assert!(
        output.status.success(),
        "`git ls-files` failed in {}: {}",
        root.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    output
        .stdout
        .split(|byte| *byte == 0)
        .filter(|name| !name.is_empty())
        .map(|name| PathBuf::from(String::from_utf8_lossy(name).into_owned()))
        .collect()
}

/// Where in `haystack` `needle` occurs (1-based line numbers).
fn lines_containing(haystack: &[u8], needle: &[u8]) -> Vec<usize> {
    haystack
        .split(|byte| *byte == b'\n')
        .enumerate()
        .filter(|(_, line)| line.windows(needle.len()).any(|window| window == needle))
        .map(|(index, _)| index + 1)
        .collect()
}

#[test]
fn no_tracked_file_refers_outside_the_repository() {
    let root = repository_root();
    // Built from pieces so that this file does not match itself.
    let mut needles = vec![[".", ".", "/shared"].concat()];
    // Paths in the home directory of whoever runs this are paths of one machine.
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from)
        && home.is_absolute()
        && home.parent().is_some()
    {
        needles.push(format!("{}/", home.display()));
    }

    let files = tracked_files(&root);
    assert!(files.len() > 100, "`git ls-files` listed only {} files", files.len());
    let mut found = Vec::new();
    for file in &files {
        let path = root.join(file);
        // A file deleted in the work tree but not yet in the index has nothing to check.
        let Ok(content) = fs::read(&path) else { continue };
        for needle in &needles {
            for line in lines_containing(&content, needle.as_bytes()) {
                found.push(format!("  {}:{line}: `{needle}`", file.display()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "the repository must stand on its own; these tracked files refer outside it:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_reference_check_finds_every_line() {
    assert_eq!(lines_containing(b"a\nsee ../x here\n../x\n", b"../x"), vec![2, 3]);
    assert_eq!(lines_containing(b"nothing", b"../x"), Vec::<usize>::new());
}

/// A retry lets a test that fails by chance pass by chance: nextest retries stay off in every
/// profile, and nothing CI runs asks for them (`scripts/test --stress N` is how flaky tests
/// are found; a slow test gets a longer slow-timeout instead).
#[test]
fn no_test_is_ever_retried() {
    let root = repository_root();
    let config = fs::read_to_string(root.join(".config/nextest.toml"))
        .expect(".config/nextest.toml sets retries = 0 explicitly");
    let mut said_zero = false;
    for (n, line) in config.lines().enumerate() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if let Some(value) = line.strip_prefix("retries").map(str::trim_start)
            && let Some(value) = value.strip_prefix('=')
        {
            assert_eq!(value.trim(), "0", ".config/nextest.toml:{}: retries must be 0", n + 1);
            said_zero = true;
        }
    }
    assert!(said_zero, ".config/nextest.toml must say retries = 0");
    for script in [".ci/run", "scripts/test", "scripts/stress"] {
        let text = fs::read_to_string(root.join(script)).expect("read the script");
        assert!(!text.contains("--retries"), "{script} asks nextest for retries");
        assert!(!text.contains("NEXTEST_RETRIES"), "{script} asks nextest for retries");
    }
}
