//! `toolgate import`: the servers of several clients' config files (under a temporary HOME)
//! written into toolgate.toml by the real binary, which `config check` then loads; a second
//! import changes nothing, an existing file keeps its comments, a server in two clients is
//! written once, two servers with one name get two names, and no literal secret is copied.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::support::toolgate_bin;

const GITHUB_TOKEN: &str = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
const BEARER: &str = "s3cr3tvalue0123456789";

/// A HOME with Claude Desktop's, Cursor's and Codex's files, and a project folder.
fn scaffold() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let home = dir.path().join("home");
    let write = |relative: &str, text: &str| {
        let path = home.join(relative);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write(
        ".config/Claude/claude_desktop_config.json",
        r#"{
          "globalShortcut": "Ctrl+Space",
          "mcpServers": {
            "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv/notes"]},
            "github": {"command": "docker", "args": ["run", "-i", "--rm", "ghcr.io/github/github-mcp-server"],
                       "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_PAT}"}}
          }
        }"#,
    );
    write(
        ".cursor/mcp.json",
        &format!(
            r#"{{"mcpServers": {{
              "filesystem": {{"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv/notes"]}},
              "github": {{"command": "gh-mcp", "env": {{"GITHUB_TOKEN": "{GITHUB_TOKEN}", "LOG": "debug"}}}},
              "remote": {{"url": "https://api.example.com/mcp", "headers": {{"Authorization": "Bearer {BEARER}", "X-Org": "acme"}}}}
            }}}}"#
        ),
    );
    write(
        ".codex/config.toml",
        "model = \"gpt-5-codex\"\n[mcp_servers.docs]\ncommand = \"docs-server\"\nargs = [\"--port\", \"4000\"]\n\
         env_vars = [\"LOCAL_TOKEN\"]\ntool_timeout_sec = 45\n",
    );
    std::fs::create_dir_all(dir.path().join("project")).expect("mkdir");
    dir
}

/// Runs `toolgate ARGS` with `dir`'s HOME, in its project folder, with the variables the
/// imported servers reference set.
fn toolgate(dir: &Path, args: &[&str]) -> Output {
    Command::new(toolgate_bin())
        .args(args)
        .current_dir(dir.join("project"))
        .env("HOME", dir.join("home"))
        .env_remove("TOOLGATE_CONFIG")
        .env_remove("XDG_CONFIG_HOME")
        .envs([("GITHUB_PAT", "p"), ("GITHUB_TOKEN", "t"), ("REMOTE_AUTHORIZATION", "r")])
        .stdin(Stdio::null())
        .output()
        .expect("run toolgate")
}

fn import_json(dir: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["--config", "toolgate.toml", "import", "--json"];
    args.extend_from_slice(extra);
    let output = toolgate(dir, &args);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("JSON report")
}

fn names(report: &Value, key: &str) -> Vec<String> {
    report[key]
        .as_array()
        .expect(key)
        .iter()
        .map(|v| v["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn import_every_client_found_keeps_the_file_and_no_secret() {
    let dir = scaffold();
    let file = dir.path().join("project/toolgate.toml");
    std::fs::write(&file, "# my gateway\n[gateway]\n# keep me\nlisten = \"127.0.0.1:0\"\n")
        .unwrap();

    let report = import_json(dir.path(), &[]);
    assert_eq!(
        names(&report, "added"),
        ["filesystem", "github", "github-cursor", "remote", "docs"]
    );
    assert_eq!(names(&report, "merged"), ["filesystem"]);
    assert_eq!(report["renamed"][0]["original"], "github");
    assert_eq!(report["written"], true);
    let secrets: Vec<(&str, &str)> = report["secrets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["field"].as_str().unwrap(), s["variable"].as_str().unwrap()))
        .collect();
    assert_eq!(
        secrets,
        [("env.GITHUB_TOKEN", "GITHUB_TOKEN"), ("headers.Authorization", "REMOTE_AUTHORIZATION")]
    );

    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with("# my gateway\n[gateway]\n# keep me\n"), "{text}");
    assert!(text.contains("\"${GITHUB_PAT}\""), "a reference stays one: {text}");
    assert!(text.contains("\"Bearer ${REMOTE_AUTHORIZATION}\""), "{text}");
    assert!(text.contains("env_pass = [\"LOCAL_TOKEN\"]"), "{text}");
    assert!(!text.contains(GITHUB_TOKEN) && !text.contains(BEARER), "a secret was copied: {text}");
    let stdout =
        String::from_utf8(toolgate(dir.path(), &["--config", "toolgate.toml", "import"]).stderr)
            .unwrap();
    assert!(!stdout.contains(GITHUB_TOKEN) && !stdout.contains(BEARER), "{stdout}");

    // What was written loads.
    let check = toolgate(dir.path(), &["--config", "toolgate.toml", "config", "check", "--json"]);
    let checked: Value = serde_json::from_slice(&check.stdout).expect("JSON");
    assert_eq!(checked["ok"], true, "{checked}");

    // A second import changes nothing.
    let again = import_json(dir.path(), &[]);
    assert_eq!(again["written"], false);
    assert!(names(&again, "added").is_empty());
    assert_eq!(names(&again, "unchanged").len(), 5);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
}

#[test]
fn import_leaves_a_different_server_alone_unless_forced() {
    let dir = scaffold();
    let file = dir.path().join("project/toolgate.toml");
    let mine = "[servers.remote]\nurl = \"https://mine.example.com/mcp\"\n";
    std::fs::write(&file, mine).unwrap();

    let report = import_json(dir.path(), &["cursor"]);
    assert_eq!(names(&report, "skipped"), ["remote"]);
    assert!(std::fs::read_to_string(&file).unwrap().contains("mine.example.com"));

    let report = import_json(dir.path(), &["cursor", "--force"]);
    assert_eq!(names(&report, "replaced"), ["remote"]);
    assert!(std::fs::read_to_string(&file).unwrap().contains("api.example.com"));
}

#[test]
fn import_dry_run_prints_a_diff_and_writes_nothing() {
    let dir = scaffold();
    let output =
        toolgate(dir.path(), &["--config", "toolgate.toml", "import", "--dry-run", "codex"]);
    assert!(output.status.success());
    let diff = String::from_utf8(output.stdout).unwrap();
    assert!(diff.contains("+[servers.docs]"), "{diff}");
    assert!(!dir.path().join("project/toolgate.toml").exists());
}

#[test]
fn import_of_an_unknown_client_or_a_missing_one_fails() {
    let dir = scaffold();
    let output = toolgate(dir.path(), &["--config", "toolgate.toml", "import", "notepad"]);
    assert_eq!(output.status.code(), Some(64));
    let output = toolgate(dir.path(), &["--config", "toolgate.toml", "import", "zed"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("no config file of Zed found"));
}
