//! `toolgate install --client X` and `uninstall` on every client's file kind, under a
//! temporary HOME, with the real binary: each client's servers move into toolgate.toml and the
//! client keeps only toolgate's entry (its other settings and, where the format allows, its
//! comments stay); the entry, run as the client runs it, serves every moved server's tools and
//! hands a moved secret to its server; a second install changes nothing; uninstall gives back
//! the very file. Also: servers added after an install, a file that did not exist, a name
//! toolgate.toml already uses for another server.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

use crate::support::{fixture_bin, toolgate_bin};

const SECRET: &str = "sk-live-0123456789abcdefghijklmnop";

/// Each client, its file under HOME, and that file holding one fixture server `fx-CLIENT`
/// among settings of the client's own.
fn client_files(fixture: &str) -> Vec<(&'static str, &'static str, String)> {
    let f = serde_json::to_string(fixture).expect("a JSON string");
    vec![
        (
            "claude-desktop",
            ".config/Claude/claude_desktop_config.json",
            format!(
                r#"{{"globalShortcut": "Ctrl+Space", "mcpServers": {{"fx-claude-desktop": {{"command": {f}, "env": {{"API_TOKEN": "{SECRET}"}}}}}}}}"#
            ),
        ),
        (
            "claude-code",
            ".claude.json",
            format!(
                r#"{{"numStartups": 3, "mcpServers": {{"fx-claude-code": {{"type": "stdio", "command": {f}, "args": []}}}}}}"#
            ),
        ),
        (
            "cursor",
            ".cursor/mcp.json",
            format!(
                "{{\n  // servers for the editor\n  \"mcpServers\": {{\n    \"fx-cursor\": {{ \"command\": {f} }},\n  }},\n}}\n"
            ),
        ),
        (
            "vscode",
            ".config/Code/User/mcp.json",
            format!(
                "{{\n  \"inputs\": [],\n  \"servers\": {{\n    // local\n    \"fx-vscode\": {{ \"type\": \"stdio\", \"command\": {f} }}\n  }}\n}}\n"
            ),
        ),
        (
            "windsurf",
            ".codeium/windsurf/mcp_config.json",
            format!(r#"{{"mcpServers": {{"fx-windsurf": {{"command": {f}, "args": []}}}}}}"#),
        ),
        (
            "gemini",
            ".gemini/settings.json",
            format!(
                r#"{{"theme": "Default", "mcpServers": {{"fx-gemini": {{"command": {f}, "trust": false}}}}}}"#
            ),
        ),
        (
            "zed",
            ".config/zed/settings.json",
            format!(
                "// Zed settings\n{{\n  \"theme\": \"One Dark\",\n  \"context_servers\": {{\n    \"fx-zed\": {{ \"source\": \"custom\", \"command\": {f}, \"args\": [] }}\n  }}\n}}\n"
            ),
        ),
        (
            "continue",
            ".continue/config.yaml",
            format!(
                "name: Local Assistant\nversion: 1.0.0\nschema: v1\nmcpServers:\n  - name: fx-continue\n    command: {f}\n"
            ),
        ),
        (
            "goose",
            ".config/goose/config.yaml",
            format!(
                "GOOSE_PROVIDER: openai\nextensions:\n  developer:\n    enabled: true\n    type: builtin\n    name: developer\n    timeout: 300\n  fx-goose:\n    enabled: true\n    type: stdio\n    name: fx-goose\n    cmd: {f}\n    args: []\n    timeout: 300\n"
            ),
        ),
        (
            "codex",
            ".codex/config.toml",
            format!(
                "# my Codex\nmodel = \"gpt-5-codex\"\n\n[mcp_servers.fx-codex]\ncommand = {f}\n"
            ),
        ),
    ]
}

/// A temporary HOME and project folder.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("home")).expect("mkdir");
        std::fs::create_dir_all(dir.path().join("project")).expect("mkdir");
        Home { dir }
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("project/toolgate.toml")
    }

    fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.home().join(relative);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, text).expect("write");
        path
    }

    /// `toolgate --config <project>/toolgate.toml ARGS`, with this HOME.
    fn toolgate(&self, args: &[&str]) -> Output {
        self.toolgate_as(&toolgate_bin(), args)
    }

    /// [`Home::toolgate`], run as `program`.
    fn toolgate_as(&self, program: &Path, args: &[&str]) -> Output {
        Command::new(program)
            .arg("--config")
            .arg(self.config())
            .args(args)
            .current_dir(self.dir.path().join("project"))
            .env("HOME", self.home())
            .env_remove("TOOLGATE_CONFIG")
            .env_remove("XDG_CONFIG_HOME")
            .stdin(Stdio::null())
            .output()
            .expect("run toolgate")
    }

    /// `toolgate ARGS --json`, which must succeed: its report.
    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let output = self.toolgate(&all);
        assert!(
            output.status.success(),
            "toolgate {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).expect("a JSON report")
    }

    /// How many servers toolgate reads in `file` now.
    fn servers_in(&self, file: &Path) -> u64 {
        let scratch = self.dir.path().join("scratch.toml");
        let output = Command::new(toolgate_bin())
            .arg("--config")
            .arg(&scratch)
            .args(["import", "--dry-run", "--json"])
            .arg(file)
            .env("HOME", self.home())
            .output()
            .expect("run toolgate import");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let report: Value = serde_json::from_slice(&output.stdout).expect("JSON");
        report["sources"][0]["servers"].as_u64().expect("a count")
    }
}

/// The command, arguments and variables of toolgate's entry in a client's strict JSON file.
fn entry_in(file: &Path, key: &str) -> (String, Vec<String>, Vec<(String, String)>) {
    let value: Value =
        serde_json::from_str(&std::fs::read_to_string(file).expect("read")).expect("JSON");
    let entry = &value[key]["toolgate"];
    let command = entry["command"].as_str().expect("a command").to_owned();
    let args = entry["args"].as_array().expect("args");
    let args = args.iter().map(|a| a.as_str().expect("text").to_owned()).collect();
    let env = entry["env"].as_object().into_iter().flatten();
    let env = env.map(|(k, v)| (k.clone(), v.as_str().expect("text").to_owned())).collect();
    (command, args, env)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_client_keeps_its_servers_behind_toolgate_and_gets_its_file_back() {
    let home = Home::new();
    let fixture = fixture_bin().display().to_string();
    let files: Vec<(&str, PathBuf, String)> = client_files(&fixture)
        .into_iter()
        .map(|(client, relative, text)| (client, home.write(relative, &text), text))
        .collect();

    for (client, path, _) in &files {
        let report = home.json(&["install", "--client", client]);
        assert_eq!(report["moved"], json!([format!("fx-{client}")]), "{client}: {report:#}");
        assert_eq!(report["written"], true, "{client}");
        let text = std::fs::read_to_string(path).expect("read");
        assert!(text.contains("serve") && text.contains("--stdio"), "{client}: {text}");
        assert_eq!(home.servers_in(path), 0, "{client}: only toolgate's entry is left: {text}");
        assert!(!text.contains(&format!("fx-{client}")), "{client}: {text}");
    }
    // What each client had besides its servers stays.
    let read = |i: usize| std::fs::read_to_string(&files[i].1).expect("read");
    assert!(read(2).contains("// servers for the editor"), "Cursor's comment: {}", read(2));
    assert!(read(6).contains("// Zed settings") && read(6).contains("One Dark"));
    assert!(read(9).starts_with("# my Codex\nmodel = \"gpt-5-codex\""), "{}", read(9));
    assert!(read(8).contains("GOOSE_PROVIDER: openai") && read(8).contains("builtin"));
    assert!(read(7).contains("schema: v1"));
    assert!(read(1).contains("numStartups"));

    // toolgate.toml has every server; the secret is a reference there, a value in the client.
    let config = std::fs::read_to_string(home.config()).expect("toolgate.toml");
    assert!(!config.contains(SECRET), "{config}");
    assert!(config.contains("${API_TOKEN}"), "{config}");
    let desktop = std::fs::read_to_string(&files[0].1).expect("read");
    assert!(desktop.contains(SECRET), "the secret moved into toolgate's entry: {desktop}");

    // Claude Desktop's entry, run as Claude Desktop runs it, serves every client's server.
    let (command, args, env) = entry_in(&files[0].1, "mcpServers");
    let mut child = tokio::process::Command::new(&command);
    child.args(&args).envs(env).env_remove("TOOLGATE_CONFIG");
    let client = ().serve(TokioChildProcess::new(child).expect("spawn")).await.expect("connects");
    let tools = client.list_all_tools().await.expect("tools/list");
    for (name, _, _) in &files {
        let prefix = format!("fx-{name}__");
        assert!(tools.iter().any(|t| t.name.starts_with(&prefix)), "no {prefix}* tool");
    }
    let result = client
        .call_tool(
            CallToolRequestParams::new("fx-claude-desktop__env_get")
                .with_arguments(json!({"name": "API_TOKEN"}).as_object().cloned().expect("object")),
        )
        .await
        .expect("tools/call");
    let text = serde_json::to_string(&result.content).expect("JSON");
    assert!(text.contains(SECRET), "the server got its secret through toolgate: {text}");
    client.cancel().await.expect("close");

    // A dry run's diff does not show the secret.
    let output = home.toolgate(&["uninstall", "--client", "claude-desktop", "--dry-run"]);
    let diff = String::from_utf8_lossy(&output.stdout);
    assert!(diff.contains("fx-claude-desktop") && diff.contains("***"), "{diff}");
    assert!(!diff.contains(SECRET), "{diff}");

    // Again: nothing changes.
    for (client, _, _) in &files {
        let report = home.json(&["install", "--client", client]);
        assert_eq!(report["changed"], false, "{client}: {report:#}");
    }
    // Uninstall: the very file again, and no backup left.
    for (client, path, original) in &files {
        let report = home.json(&["uninstall", "--client", client]);
        assert_eq!(report["installed"], true, "{client}");
        let text = std::fs::read_to_string(path).expect("read");
        assert_eq!(&text, original, "{client}: the file as it was");
        let backup = format!("{}.toolgate-backup", path.display());
        assert!(!Path::new(&backup).exists(), "{client}: backup removed");
        let again = home.json(&["uninstall", "--client", client]);
        assert_eq!(again["installed"], false, "{client}: a second uninstall does nothing");
    }
    let config_after = std::fs::read_to_string(home.config()).expect("toolgate.toml");
    assert_eq!(config_after, config, "the servers stay in toolgate.toml");
}

#[test]
fn servers_added_after_install_come_back_with_the_others() {
    let home = Home::new();
    let fixture = serde_json::to_string(&fixture_bin().display().to_string()).expect("JSON");
    let path = home.write(
        ".cursor/mcp.json",
        &format!("{{\"mcpServers\": {{\"one\": {{\"command\": {fixture}}}}}}}\n"),
    );
    home.json(&["install", "--client", "cursor"]);
    // The user adds a server to the client after the install, and installs again...
    let add = |name: &str| {
        let mut value: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("JSON");
        value["mcpServers"][name] = json!({"command": fixture_bin(), "args": [name]});
        std::fs::write(&path, serde_json::to_string_pretty(&value).expect("JSON")).expect("write");
    };
    add("two");
    let report = home.json(&["install", "--client", "cursor"]);
    assert_eq!(report["moved"], json!(["two"]));
    // ...and adds another without installing again.
    add("three");
    let report = home.json(&["uninstall", "--client", "cursor"]);
    assert_eq!(report["restored"], json!(["one", "two"]), "{report:#}");
    let value: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("JSON");
    let names: Vec<&String> = value["mcpServers"].as_object().expect("servers").keys().collect();
    assert_eq!(names, ["three", "one", "two"], "nothing lost, toolgate gone");
}

#[test]
fn a_file_install_made_is_removed_by_uninstall() {
    let home = Home::new();
    let path = home.home().join(".config/Claude/claude_desktop_config.json");
    let report = home.json(&["install", "--client", "claude-desktop"]);
    assert_eq!(report["moved"], json!([]));
    assert!(path.exists(), "the client's file is made");
    let report = home.json(&["uninstall", "--client", "claude-desktop"]);
    assert_eq!(report["removed_file"], true, "{report:#}");
    assert!(!path.exists());
}

#[test]
fn a_name_toolgate_uses_for_another_server_stops_the_install() {
    let home = Home::new();
    std::fs::write(home.config(), "[servers.fx]\ncommand = \"something-else\"\n").expect("write");
    let text = format!(
        "{{\"mcpServers\": {{\"fx\": {{\"command\": {}}}}}}}\n",
        serde_json::to_string(&fixture_bin().display().to_string()).expect("JSON")
    );
    let path = home.write(".cursor/mcp.json", &text);
    let output = home.toolgate(&["install", "--client", "cursor"]);
    assert_eq!(output.status.code(), Some(64), "a usage error");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("fx") && stderr.contains("--force"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        text,
        "the client's file is untouched"
    );
    assert!(!Path::new(&format!("{}.toolgate-backup", path.display())).exists());
    // --dry-run shows both changes and writes neither; the secret-free diff names the files.
    let output = home.toolgate(&["install", "--client", "cursor", "--force", "--dry-run"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let diff = String::from_utf8_lossy(&output.stdout);
    assert!(diff.contains("toolgate.toml") && diff.contains("mcp.json"), "{diff}");
    assert_eq!(std::fs::read_to_string(&path).expect("read"), text);
}

/// A toolgate reached through a link on PATH (as a package manager installs it) is written
/// as that link, which stays right when the package is upgraded; one that is not on PATH as
/// the binary itself.
#[test]
fn the_entry_runs_toolgate_by_its_name_on_path() {
    let home = Home::new();
    let bin = home.dir.path().join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let link = bin.join("toolgate");
    std::os::unix::fs::symlink(toolgate_bin(), &link).expect("symlink");
    let path = std::env::join_paths(
        std::iter::once(bin)
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .expect("PATH");
    let output = Command::new(&link)
        .arg("--config")
        .arg(home.config())
        .args(["install", "--client", "cursor"])
        .env("HOME", home.home())
        .env("PATH", path)
        .env_remove("TOOLGATE_CONFIG")
        .output()
        .expect("run toolgate");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let (command, _, _) = entry_in(&home.home().join(".cursor/mcp.json"), "mcpServers");
    assert_eq!(Path::new(&command), link);

    let other = Home::new();
    let output = other.toolgate_as(&link, &["install", "--client", "cursor"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let (command, _, _) = entry_in(&other.home().join(".cursor/mcp.json"), "mcpServers");
    let real = toolgate_bin().canonicalize().expect("the binary");
    assert_eq!(Path::new(&command), real, "not on PATH: the binary itself");
}

/// Claude Code keeps the servers `claude mcp add` adds by default (its local scope) per
/// directory in `~/.claude.json`, which it rewrites all the time: install moves this
/// directory's along with the user-wide ones, and uninstall, on a file Claude Code has changed
/// since, puts each back in its own scope; another directory's stay where they are.
#[test]
fn claude_codes_local_servers_move_and_come_back_to_their_scope() {
    let home = Home::new();
    let project = home.dir.path().join("project").canonicalize().expect("project");
    let key = project.display().to_string();
    let fixture = fixture_bin().display().to_string();
    let text = serde_json::to_string_pretty(&json!({
        "numStartups": 3,
        "mcpServers": { "u": { "type": "stdio", "command": fixture, "args": [] } },
        "projects": {
            key.clone(): { "allowedTools": [], "mcpServers": { "l": { "type": "stdio", "command": fixture, "args": ["l"] } } },
            "/elsewhere": { "mcpServers": { "x": { "command": "x" } } }
        }
    }))
    .expect("JSON");
    let path = home.write(".claude.json", &text);
    let report = home.json(&["install", "--client", "claude-code"]);
    assert_eq!(report["moved"], json!(["u", "l"]), "{report:#}");
    let read = || -> Value {
        serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("JSON")
    };
    let installed = read();
    let top: Vec<&String> = installed["mcpServers"].as_object().expect("servers").keys().collect();
    assert_eq!(top, ["toolgate"]);
    assert_eq!(installed["projects"][&key]["mcpServers"], json!({}));
    assert_eq!(installed["projects"]["/elsewhere"]["mcpServers"]["x"]["command"], "x");
    let config = std::fs::read_to_string(home.config()).expect("toolgate.toml");
    assert!(config.contains("[servers.u]") && config.contains("[servers.l]"), "{config}");

    // Claude Code writes the file again, as it does on every start.
    let mut changed = read();
    changed["numStartups"] = json!(4);
    std::fs::write(&path, serde_json::to_string_pretty(&changed).expect("JSON")).expect("write");
    let report = home.json(&["uninstall", "--client", "claude-code"]);
    assert_eq!(report["restored"], json!(["u", "l"]), "{report:#}");
    let after = read();
    assert_eq!(after["numStartups"], 4, "Claude Code's change stays");
    assert_eq!(after["mcpServers"]["u"]["command"], fixture.as_str());
    assert!(after["mcpServers"].get("toolgate").is_none());
    assert_eq!(
        after["projects"][&key]["mcpServers"]["l"]["args"],
        json!(["l"]),
        "back in its scope"
    );
    assert!(after["mcpServers"].get("l").is_none());
    assert_eq!(after["projects"]["/elsewhere"]["mcpServers"]["x"]["command"], "x");
}
