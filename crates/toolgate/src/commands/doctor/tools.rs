//! The programs MCP servers are usually started with, found on PATH, and their versions:
//! each asked `--version` (and nothing else), with a short timeout. No other program on PATH
//! is ever run.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use super::detect::find_program;

/// The programs looked for, each with the names it goes by (the first found is used).
pub(crate) const TOOLS: &[(&str, &[&str])] = &[
    ("node", &["node"]),
    ("npx", &["npx"]),
    ("npm", &["npm"]),
    ("uv", &["uv"]),
    ("uvx", &["uvx"]),
    ("python", &["python3", "python"]),
    ("docker", &["docker"]),
];

/// How long `--version` may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(5);

/// The most characters of a version kept.
const VERSION_MAX: usize = 120;

/// One program, found or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tool {
    pub(crate) name: &'static str,
    /// Where it is; `None` when it is not on PATH.
    pub(crate) path: Option<PathBuf>,
    /// What `--version` printed (its first line), or why there is nothing.
    pub(crate) version: Result<String, String>,
}

/// Every program of [`TOOLS`], looked for in `path` and asked its version, all at once.
pub(crate) async fn survey(path: &[PathBuf]) -> Vec<Tool> {
    futures::future::join_all(TOOLS.iter().map(|(name, names)| async move {
        let found = names.iter().find_map(|program| find_program(program, path));
        let version = match &found {
            Some(program) => version_of(program).await,
            None => Err("not found".to_owned()),
        };
        Tool { name, path: found, version }
    }))
    .await
}

/// The first line `program --version` prints (on stdout, else on stderr).
async fn version_of(program: &PathBuf) -> Result<String, String> {
    let run = tokio::process::Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let output = match tokio::time::timeout(VERSION_TIMEOUT, run).await {
        Ok(Ok(output)) => output,
        Ok(Err(error)) => return Err(format!("cannot run it: {error}")),
        Err(_) => {
            return Err(format!(
                "no answer to --version within {}",
                toolgate_core::duration::format(VERSION_TIMEOUT)
            ));
        }
    };
    let first_line = |bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes);
        let line = text.lines().map(str::trim).find(|line| !line.is_empty())?.to_owned();
        Some(line.chars().take(VERSION_MAX).collect::<String>())
    };
    let line = first_line(&output.stdout).or_else(|| first_line(&output.stderr));
    match (output.status.success(), line) {
        (true, Some(line)) => Ok(line),
        (true, None) => Err("--version printed nothing".to_owned()),
        (false, line) => Err(format!(
            "--version failed ({}){}",
            output.status,
            line.map(|l| format!(": {l}")).unwrap_or_default()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(dir: &std::path::Path, name: &str, body: &str) {
        use std::os::unix::fs::PermissionsExt as _;
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[tokio::test]
    async fn versions_are_read_and_what_is_missing_or_broken_says_so() {
        let dir = tempfile::tempdir().unwrap();
        script(dir.path(), "node", "echo v22.1.0");
        script(dir.path(), "python", "echo 'Python 3.12.1' >&2");
        script(dir.path(), "docker", "echo 'no daemon' >&2; exit 2");
        let tools = survey(&[dir.path().to_owned()]).await;
        let tool = |name: &str| tools.iter().find(|t| t.name == name).unwrap();
        assert_eq!(tool("node").version.as_deref(), Ok("v22.1.0"));
        assert_eq!(tool("node").path, Some(dir.path().join("node")));
        assert_eq!(tool("python").version.as_deref(), Ok("Python 3.12.1"), "python3 or python");
        assert_eq!(tool("npx").version, Err("not found".to_owned()));
        assert!(tool("npx").path.is_none());
        let docker = tool("docker").version.clone().unwrap_err();
        assert!(
            docker.starts_with("--version failed") && docker.ends_with(": no daemon"),
            "{docker}"
        );
        assert_eq!(tools.len(), TOOLS.len());
    }
}
