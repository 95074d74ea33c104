//! The clients themselves check `toolgate install`: Claude Code's, Gemini CLI's and Codex's own
//! command lines (from npm, pinned in tests/deps/npm), which list and health-check their MCP
//! servers without a model. Before: each client's own server, connected. After install:
//! toolgate alone, connected (Claude Code and Gemini CLI start it and shake hands; Codex lists
//! it, and its entry as Codex reads it serves the moved server's tools). After uninstall: the
//! client's own server again.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::Value;
use toolgate_testkit::deps::{node22, npm_bin, npm_dir, require};

use crate::support::{fixture_bin, toolgate_bin};

/// Where a client's program is. Claude Code's package puts its native binary in place with an
/// install script, which the test setup does not run (`npm ci --ignore-scripts`): the binary
/// is run from the platform's package itself.
fn program_path(program: &str) -> PathBuf {
    if program == "claude" {
        let path = npm_dir().join("node_modules/@anthropic-ai/claude-code-linux-x64/claude");
        return require(path, "Claude Code's native binary", "TOOLGATE_TEST_NPM_DIR");
    }
    npm_bin(program)
}

/// A client's command line, run with `home` as HOME in `project`, to completion.
async fn client(home: &Path, project: &Path, program: &str, args: &[&str]) -> String {
    let node_dir = node22().parent().expect("node's folder").to_path_buf();
    let path = std::env::join_paths(
        std::iter::once(node_dir)
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .expect("PATH");
    let mut command = tokio::process::Command::new(program_path(program));
    command
        .args(args)
        .current_dir(project)
        .env("HOME", home)
        .env("PATH", path)
        .env_remove("TOOLGATE_CONFIG")
        .env_remove("XDG_CONFIG_HOME")
        // No updates, telemetry or other traffic of their own (no network here anyway).
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .unwrap_or_else(|_| panic!("{program} {args:?} did not finish in 120 s"))
        .expect("run the client");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{program} {args:?} failed: {text}");
    text
}

/// The line of `listing` about server `name` (`name: ...`), if any.
fn line_of<'a>(listing: &'a str, name: &str) -> Option<&'a str> {
    listing.lines().find(|line| {
        line.trim_start_matches(|c: char| !c.is_ascii_alphanumeric())
            .starts_with(&format!("{name}:"))
    })
}

fn connected(listing: &str, name: &str) -> bool {
    line_of(listing, name)
        .is_some_and(|line| line.contains("Connected") && !line.contains("Disconnected"))
}

/// The JSON value that starts at the first `open` of `text` (Codex may warn around it).
fn first_json(text: &str, open: char) -> Value {
    let start = text.find(open).unwrap_or_else(|| panic!("no JSON in {text}"));
    let mut values = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
    values.next().expect("a value").expect("JSON")
}

/// The servers `codex mcp list --json` names.
fn codex_names(listing: &str) -> Vec<String> {
    let value = first_json(listing, '[');
    value
        .as_array()
        .expect("a list")
        .iter()
        .map(|s| s["name"].as_str().expect("name").to_owned())
        .collect()
}

fn toolgate(home: &Path, config: &Path, args: &[&str]) {
    let output = std::process::Command::new(toolgate_bin())
        .arg("--config")
        .arg(config)
        .args(args)
        .env("HOME", home)
        .env_remove("TOOLGATE_CONFIG")
        .stdin(Stdio::null())
        .output()
        .expect("run toolgate");
    assert!(
        output.status.success(),
        "toolgate {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn write(path: PathBuf, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_gemini_and_codex_see_toolgate_connected_and_then_their_own_server_again() {
    let dir = tempfile::tempdir().expect("temp dir");
    let home = dir.path().join("home");
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).expect("mkdir");
    let config = project.join("toolgate.toml");
    let fixture = serde_json::to_string(&fixture_bin().display().to_string()).expect("JSON");
    write(
        home.join(".claude.json"),
        &format!(
            r#"{{"mcpServers": {{"fx": {{"type": "stdio", "command": {fixture}, "args": []}}}}}}"#
        ),
    );
    write(
        home.join(".gemini/settings.json"),
        &format!(r#"{{"mcpServers": {{"fx": {{"command": {fixture}}}}}}}"#),
    );
    // Gemini CLI starts no server in a folder it has not been told to trust.
    let trusted = serde_json::json!({ project.display().to_string(): "TRUST_FOLDER" });
    write(home.join(".gemini/trustedFolders.json"), &trusted.to_string());
    write(home.join(".codex/config.toml"), &format!("[mcp_servers.fx]\ncommand = {fixture}\n"));

    let claude = || client(&home, &project, "claude", &["mcp", "list"]);
    let gemini = || client(&home, &project, "gemini", &["mcp", "list"]);
    let codex = || client(&home, &project, "codex", &["mcp", "list", "--json"]);

    let (c, g, x) = (claude().await, gemini().await, codex().await);
    assert!(connected(&c, "fx"), "Claude Code, before: {c}");
    assert!(connected(&g, "fx"), "Gemini CLI, before: {g}");
    assert_eq!(codex_names(&x), ["fx"], "Codex, before: {x}");

    for name in ["claude-code", "gemini", "codex"] {
        toolgate(&home, &config, &["install", "--client", name]);
    }
    let (c, g, x) = (claude().await, gemini().await, codex().await);
    assert!(
        connected(&c, "toolgate") && line_of(&c, "fx").is_none(),
        "Claude Code, installed: {c}"
    );
    assert!(connected(&g, "toolgate") && line_of(&g, "fx").is_none(), "Gemini CLI, installed: {g}");
    assert_eq!(codex_names(&x), ["toolgate"], "Codex, installed: {x}");

    // The entry as Codex reads it serves the server that moved out of Codex's file.
    let got = client(&home, &project, "codex", &["mcp", "get", "toolgate", "--json"]).await;
    let entry = first_json(&got, '{');
    let transport = &entry["transport"];
    let mut command = tokio::process::Command::new(transport["command"].as_str().expect("command"));
    for arg in transport["args"].as_array().expect("args") {
        command.arg(arg.as_str().expect("text"));
    }
    command.env("HOME", &home).env_remove("TOOLGATE_CONFIG");
    let session =
        ().serve(TokioChildProcess::new(command).expect("spawn")).await.expect("connects");
    let tools = session.list_all_tools().await.expect("tools/list");
    assert!(
        tools.iter().any(|tool| tool.name == "fx__echo"),
        "{:?}",
        tools.iter().map(|t| &t.name).collect::<Vec<_>>()
    );
    session.cancel().await.expect("close");

    for name in ["claude-code", "gemini", "codex"] {
        toolgate(&home, &config, &["uninstall", "--client", name]);
    }
    let (c, g, x) = (claude().await, gemini().await, codex().await);
    assert!(connected(&c, "fx") && line_of(&c, "toolgate").is_none(), "Claude Code, after: {c}");
    assert!(connected(&g, "fx") && line_of(&g, "toolgate").is_none(), "Gemini CLI, after: {g}");
    assert_eq!(codex_names(&x), ["fx"], "Codex, after: {x}");
}
