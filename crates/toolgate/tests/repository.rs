//! Checks of the repository itself: every module says what it is, nothing points outside, and
//! every figure the documentation quotes names the command and the committed output behind it.

#[path = "repository/figures.rs"]
mod figures;

use std::collections::BTreeSet;
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

/// README.md and docs/*.md, relative to the root: the documentation whose figures must be
/// reproducible.
fn documentation(root: &Path) -> Vec<String> {
    let mut pages = vec!["README.md".to_owned()];
    let docs = fs::read_dir(root.join("docs")).expect("read docs/");
    for entry in docs {
        let name = entry.expect("read docs/").file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            pages.push(format!("docs/{name}"));
        }
    }
    pages.sort();
    pages
}

fn tracked_names(root: &Path) -> BTreeSet<String> {
    tracked_files(root).iter().map(|path| path.to_string_lossy().into_owned()).collect()
}

/// A figure without its output cannot be checked or reproduced: every `bench/results` path the
/// documentation quotes is a committed file (or a folder holding some).
#[test]
fn every_quoted_bench_output_is_committed() {
    let root = repository_root();
    let tracked = tracked_names(&root);
    let mut quoted = 0;
    let mut missing = Vec::new();
    for page in documentation(&root) {
        let text = fs::read_to_string(root.join(&page)).expect("read the page");
        for (line, path) in figures::quoted_results_paths(&text) {
            quoted += 1;
            if !figures::is_tracked(&path, &tracked) {
                missing.push(format!("  {page}:{line}: `{path}`"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "the documentation quotes bench outputs that are not committed (run the command its \
         Source line names and commit the output, or drop the figure):\n{}",
        missing.join("\n")
    );
    // Reading the wrong pages would pass vacuously.
    assert!(quoted > 10, "found only {quoted} quoted bench/results paths");
}

/// Every `Source:` line names a command and committed outputs (or, where allowed, says the
/// figures were measured by hand); on the pages of measurements every figure has one after it.
#[test]
fn every_figure_names_its_command_and_output() {
    let root = repository_root();
    let tracked = tracked_names(&root);
    let mut sources = 0;
    let mut problems = Vec::new();
    for page in documentation(&root) {
        let text = fs::read_to_string(root.join(&page)).expect("read the page");
        for block in figures::blocks(&text) {
            let by_hand = figures::MEASURED_BY_HAND
                .iter()
                .any(|(file, section)| *file == page && *section == block.section);
            for (offset, line) in block.lines.iter().enumerate() {
                if !figures::is_source(line) {
                    continue;
                }
                sources += 1;
                if let Some(problem) = figures::source_problem(line, &tracked, by_hand) {
                    problems.push(format!("  {page}:{}: {problem}", block.line + offset));
                }
            }
        }
        let scopes: Vec<Option<&str>> = if figures::FIGURE_PAGES.contains(&page.as_str()) {
            vec![None]
        } else {
            figures::FIGURE_SECTIONS
                .iter()
                .filter(|(file, _)| *file == page)
                .map(|(_, section)| Some(*section))
                .collect()
        };
        for scope in scopes {
            for (line, quoted) in figures::figures_without_source(&text, scope) {
                problems.push(format!(
                    "  {page}:{line}: {} with no `Source:` line after it in its section",
                    quoted.join(", ")
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "a figure names the command that produces it and the committed output it is read from, \
         as `Source: `COMMAND` → `bench/results/…`` after it (see the top of \
         docs/benchmarks.md):\n{}",
        problems.join("\n")
    );
    // Reading the wrong pages would pass vacuously.
    assert!(sources > 10, "found only {sources} Source lines");
}

#[test]
fn the_figure_reader_tells_measurements_from_settings() {
    let quoted = figures::figures(
        "takes 0.66 ms p50 (+435 µs), 86 % fewer, 1.05–1.16 × its throughput, 5,579 calls/s, \
         an idle session 1.3 KiB",
    );
    assert_eq!(quoted, ["0.66 ms", "435 µs", "86 %", "1.05–1.16 ×", "5,579 calls/s", "1.3 KiB"]);
    // Settings, targets, names and versions are not figures.
    let none = figures::figures(
        "a 100 KiB payload, idle for 4 s, at most 50 µs, at least 0.8 ×, o200k_base, \
         server 2026.8.31 (x86_64), `0.66 ms` in code, 10,000 tools, half of it (0.5)",
    );
    assert_eq!(none, Vec::<String>::new());
    // In tables and printed outputs the unit is in the header: a bare decimal is a figure.
    let table = figures::figures("| path | p50 ms | calls/s |\n| direct | 0.229 | 3675 |");
    assert_eq!(table, ["0.229"]);
    let output = figures::figures("```text\nrustc 1.95.0\ndirect-stdio  0.229\n```\n0.5 of it");
    assert_eq!(output, ["0.229"]);
}

#[test]
fn a_figure_needs_a_source_line_after_it_in_its_section() {
    let page = "# Page\n\nIt takes 0.66 ms.\n\nSource: `bench/run` → `bench/results/latest/x.txt`\n\n\
                ## Other\n\nAnd 86 % fewer.\n\n## Last\n\n<!-- bench:x -->\n```text\n\n1.3 ms\n```\n\
                <!-- /bench:x -->\n\nSource: `bench/run` → `bench/results/latest/x.txt`\n";
    let missing = figures::figures_without_source(page, None);
    assert_eq!(missing, [(9, vec!["86 %".to_owned()])]);
    assert_eq!(figures::figures_without_source(page, Some("Page")), []);
}

#[test]
fn a_source_line_names_a_command_and_committed_outputs() {
    let tracked: BTreeSet<String> =
        ["bench/results/latest/latency.txt".to_owned(), "crates/x/tests/t.rs".to_owned()].into();
    let problem = |line: &str, by_hand| figures::source_problem(line, &tracked, by_hand);
    assert_eq!(problem("Source: `bench/run` → `bench/results/latest/latency.txt`", false), None);
    assert_eq!(problem("Source: `bench/run` → `bench/results/latest/`", false), None);
    let noted = "Source: `bench/run` → `bench/results/latest/latency.txt` (`row/name`)";
    assert_eq!(problem(noted, false), None);
    assert_eq!(problem("Source: `cargo test` → asserted by `crates/x/tests/t.rs`", false), None);
    assert_eq!(problem("Source: by hand: `ls -l target/release/toolgate`", true), None);
    for wrong in [
        "Source: `bench/run` → `bench/results/latest/gone.txt`",
        "Source: `bench/run` → `crates/x/tests/t.rs`",
        "Source: bench/run → `bench/results/latest/latency.txt`",
        "Source: `bench/run`, see the page",
    ] {
        assert!(problem(wrong, false).is_some(), "accepted: {wrong}");
    }
    assert!(problem("Source: by hand: `ls -l`", false).is_some(), "by hand outside its sections");
    assert!(problem("Source: by hand, somehow", true).is_some(), "by hand without a command");
    assert_eq!(
        figures::quoted_results_paths(
            "see [it](../bench/results/latest/a.svg). Or `bench/results/latest/`."
        ),
        [(1, "bench/results/latest/a.svg".to_owned()), (1, "bench/results/latest/".to_owned())]
    );
}

/// Committed bench outputs are read on other machines: none names a folder of the machine it
/// ran on (the reports write `$CARGO_TARGET_DIR`, `$TMPDIR`, `~` and paths relative to the
/// root instead).
#[test]
fn committed_bench_outputs_name_no_folder_of_a_machine() {
    let root = repository_root();
    // Built from pieces so that this file does not match the check of the home folder above.
    let needles: Vec<String> = ["root", "home", "work", "tmp", "Users"]
        .iter()
        .map(|folder| format!("/{folder}/"))
        .collect();
    let outputs: Vec<String> = tracked_names(&root)
        .into_iter()
        .filter(|name| name.starts_with(figures::RESULTS))
        .collect();
    assert!(outputs.len() > 5, "found only {} committed files under bench/results", outputs.len());
    let mut found = Vec::new();
    for output in &outputs {
        let Ok(content) = fs::read(root.join(output)) else { continue };
        for needle in &needles {
            for line in lines_containing(&content, needle.as_bytes()) {
                found.push(format!("  {output}:{line}: `{needle}`"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "committed bench outputs name folders of the machine they ran on:\n{}",
        found.join("\n")
    );
}
