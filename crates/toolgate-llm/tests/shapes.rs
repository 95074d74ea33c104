//! The golden files of the result formats (`src/format/snapshots`) checked against types nobody
//! here wrote: the pydantic types of the official `openai`, `anthropic` and `google-genai`
//! Python packages (`tests/shapes.py`), pinned in `tests/deps/python/requirements.txt`.
//!
//! Needs the Python venv of scripts/install-test-deps (`deps::python`: `TOOLGATE_TEST_PYTHON`,
//! which scripts/test sets, or `tests/deps/`); without it the test fails, saying so.

use std::path::{Path, PathBuf};

use serde_json::Value;
use toolgate_llm::format::ResultFormat;
use toolgate_testkit::deps;

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn snapshots() -> Vec<PathBuf> {
    let dir = crate_dir().join("src/format/snapshots");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "snap"))
        .collect();
    paths.sort();
    paths
}

/// Runs the checker over `paths`: its exit success and its output.
#[track_caller]
fn check(paths: &[PathBuf]) -> (bool, String) {
    deps::run_python(&crate_dir().join("tests/shapes.py"), paths)
}

/// The snapshot at `path` with a key no API knows added to every case, written to `dir`.
fn spoiled(path: &Path, dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(path).expect("snapshot");
    let body_at = text.match_indices("---\n").nth(1).map(|(at, _)| at + 4).expect("a header");
    let mut cases: Value = serde_json::from_str(&text[body_at..]).expect("JSON body");
    for case in cases.as_object_mut().expect("cases by name").values_mut() {
        // Gemini's cases are parts; the key goes into the function response.
        let target = if case.get("functionResponse").is_some() {
            &mut case["functionResponse"]
        } else {
            case
        };
        target.as_object_mut().expect("an object").insert("toolgate_unknown".into(), 1.into());
    }
    let out = dir.join(path.file_name().expect("a file name"));
    std::fs::write(&out, format!("{}{cases}", &text[..body_at])).expect("write");
    out
}

#[test]
fn the_goldens_are_valid_for_the_providers_sdks() {
    // The venv first: a missing one fails before anything is written.
    deps::python();
    let paths = snapshots();
    assert_eq!(paths.len(), ResultFormat::ALL.len(), "one snapshot per format: {paths:?}");

    let (ok, output) = check(&paths);
    assert!(ok, "the SDK types refuse a golden file:\n{output}");
    let summary = output.lines().last().unwrap_or_default();
    assert!(summary.ends_with("cases checked, 0 failed"), "{output}");

    // The checker itself refuses what the APIs would: every case with an unknown key fails.
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("shapes-spoiled");
    std::fs::create_dir_all(&dir).expect("temp dir");
    let spoiled: Vec<PathBuf> = paths.iter().map(|path| spoiled(path, &dir)).collect();
    let (ok, spoiled_output) = check(&spoiled);
    assert!(!ok, "spoiled goldens passed:\n{spoiled_output}");
    let checked = summary.split(' ').next().expect("a count");
    assert!(
        spoiled_output.ends_with(&format!("{checked} cases checked, {checked} failed\n")),
        "not every spoiled case failed:\n{spoiled_output}"
    );
}
