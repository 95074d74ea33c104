//! Test-runner logs in the corpus: the output of real test runners (cargo test, nextest,
//! pytest, jest, vitest, ...) on small generated projects, passing and failing, as
//! `scripts/make-test-logs OUT_DIR` writes them (`OUT_DIR/<runner>-<pass|fail>[-variant].txt`). Each
//! becomes the text result of a pretend shell tool (`shell` server, `run_command` tool), the
//! kind of tool `test_filter` is meant for.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde_json::json;
use toolgate_core::mcp;

use super::Item;

/// The server and tool the logs pretend to come from.
pub(crate) const SERVER: &str = "shell";
pub(crate) const TOOL: &str = "run_command";

/// The script's path in the repository.
const SCRIPT: &str = "scripts/make-test-logs";

/// `scripts/make-test-logs` of the repository around `dir` (`dir` or an ancestor), if any.
pub(crate) fn find_script(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().map(|d| d.join(SCRIPT)).find(|path| path.is_file())
}

/// Runs `script OUT_DIR` into `out`.
pub(crate) async fn make(script: &Path, out: &Path) -> anyhow::Result<()> {
    let output = tokio::process::Command::new(script)
        .arg(out)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .with_context(|| format!("cannot run {}", script.display()))?;
    if !output.status.success() {
        bail!(
            "{} failed ({}): {}",
            script.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

/// Every `<runner>-<pass|fail>.txt` in `dir`, as items, by name.
pub(crate) fn read(dir: &Path) -> anyhow::Result<Vec<Item>> {
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    let mut items = Vec::new();
    for entry in entries {
        let path = entry?.path();
        let Some(stem) =
            path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".txt"))
        else {
            continue;
        };
        // <runner>-<pass|fail>[-variant], or <runner>-<variant>-<pass|fail>
        let parts: Vec<&str> = stem.split('-').collect();
        let Some(outcome) = parts.iter().skip(1).find(|p| matches!(**p, "pass" | "fail")) else {
            continue;
        };
        let runner = parts[0];
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        items.push(item(stem, runner, outcome, text));
    }
    items.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(items)
}

fn item(stem: &str, runner: &str, outcome: &str, text: String) -> Item {
    let command = match runner {
        "cargo" => "cargo test",
        "nextest" => "cargo nextest run",
        "pytest" => "python -m pytest",
        "jest" => "npx jest",
        "vitest" => "npx vitest run",
        "go" => "go test ./...",
        _ => runner,
    };
    Item {
        name: format!("{SERVER}-{stem}"),
        source: format!(
            "{runner}, {outcome}ing run on a generated project (scripts/make-test-logs)"
        ),
        server: SERVER.to_owned(),
        tool: tool(),
        arguments: json!({"command": command}).as_object().cloned().unwrap_or_default(),
        result: mcp::CallToolResult::success(vec![mcp::ContentBlock::text(text)]),
    }
}

/// The pretend shell tool's definition.
fn tool() -> mcp::Tool {
    let schema = json!({
        "type": "object",
        "properties": {"command": {"type": "string", "description": "The command line to run"}},
        "required": ["command"],
    });
    mcp::Tool::new(
        TOOL,
        "Runs a command in the project's folder and returns what it printed",
        schema.as_object().cloned().unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_logs_by_name_and_skips_other_files() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "cargo-fail.txt",
            "cargo-compile-fail.txt",
            "pytest-pass.txt",
            "notes.txt",
            "x-fail.log",
        ] {
            std::fs::write(dir.path().join(name), format!("log {name}")).unwrap();
        }
        let items = read(dir.path()).unwrap();
        let names: Vec<&str> = items.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["shell-cargo-compile-fail", "shell-cargo-fail", "shell-pytest-pass"]);
        assert_eq!(
            items[0].source,
            "cargo, failing run on a generated project (scripts/make-test-logs)"
        );
        assert_eq!(items[2].arguments["command"], "python -m pytest");
        assert_eq!(
            toolgate_interceptors::transform::model_text(&items[1].result),
            "log cargo-fail.txt"
        );
    }
}
