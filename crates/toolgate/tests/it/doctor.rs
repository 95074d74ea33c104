//! `toolgate doctor` against a temporary HOME where eight clients (each in its own file
//! format) have one working server, one whose command is missing and one that fails, with
//! PATH limited to a folder holding `node`: the real binary starts each for real and says
//! why each failure happened (a missing command and what to install, a package npm or uv
//! does not have, a port in use, an exit, a variable not set, nothing listening). A server
//! found only in the working directory's own file is not run, toolgate's own entry is no
//! server, and no secret is printed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::deps::{node, npm_bin};
use crate::support::{fixture_bin, toolgate_bin};

const SECRET: &str = "sk-doctor-0123456789abcdef";
const UNSET: &str = "DOCTOR_TEST_UNSET_TOKEN";

/// npm 11's answer to a package it does not have.
const NPM_11_E404: &str = "npm error code E404
npm error 404 Not Found - GET https://registry.npmjs.org/@modelcontextprotocol%2fserver-doesnotexist
npm error 404
npm error 404  The requested resource '@modelcontextprotocol/server-doesnotexist@*' could not be found or you do not have permission to access it.
npm error 404
npm error A complete log of this run can be found in: /tmp/_logs/debug-0.log";

/// npm 10's.
const NPM_10_E404: &str = "npm ERR! code E404
npm ERR! 404 Not Found - GET https://registry.npmjs.org/mcp-nope - Not found
npm ERR! 404  'mcp-nope@latest' is not in this registry.";

/// uvx's.
const UVX_NOT_FOUND: &str = "  × No solution found when resolving tool dependencies:
  ╰─▶ Because mcp-server-nope was not found in the package registry and you require mcp-server-nope, we can conclude that your requirements are unsatisfiable.";

/// A temporary HOME with the clients' files, a PATH folder, the failing servers' scripts,
/// a project folder, and two ports held by the test.
struct Scene {
    dir: tempfile::TempDir,
    held: [std::net::TcpListener; 2],
    closed_port: u16,
}

impl Scene {
    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn port(&self, n: usize) -> u16 {
        self.held[n].local_addr().expect("address").port()
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// A shell script that prints `stderr` to stderr and exits with `status`.
fn failing_script(dir: &Path, name: &str, stderr: &str, status: i32) -> String {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join(name);
    let body = stderr.replace('\'', "'\\''");
    write(&path, &format!("#!/bin/sh\nprintf '%s\\n' '{body}' >&2\nexit {status}\n"));
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path.to_string_lossy().into_owned()
}

/// `node`, as an absolute path.
fn real_node() -> PathBuf {
    let node = node();
    if node.is_absolute() {
        return node;
    }
    let path = std::env::var_os("PATH").expect("PATH");
    std::env::split_paths(&path)
        .map(|dir| dir.join(&node))
        .find(|candidate| candidate.is_file())
        .expect("node on PATH (or TOOLGATE_TEST_NODE)")
}

fn scene() -> Scene {
    let dir = tempfile::tempdir().expect("temp dir");
    let home = dir.path().join("home");
    let bin = dir.path().join("bin");
    let scripts = dir.path().join("scripts");
    std::fs::create_dir_all(&bin).expect("mkdir");
    std::fs::create_dir_all(&scripts).expect("mkdir");
    std::os::unix::fs::symlink(real_node(), bin.join("node")).expect("node on PATH");
    let held = [0, 1].map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("bind"));
    let closed_port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a port")
        .port();
    let scene = Scene { dir, held, closed_port };

    let fixture = fixture_bin().to_string_lossy().into_owned();
    let everything = npm_bin("mcp-server-everything").to_string_lossy().into_owned();
    let port_server = scripts.join("listen.js");
    write(
        &port_server,
        "require('net').createServer().listen(Number(process.argv[2]), '127.0.0.1');\n",
    );
    let port_server = port_server.to_string_lossy().into_owned();
    let e404 = failing_script(&scripts, "e404", NPM_11_E404, 1);
    let old_npm = failing_script(&scripts, "old-npm", NPM_10_E404, 1);
    let uv_nope = failing_script(&scripts, "uv-nope", UVX_NOT_FOUND, 1);
    let quits = scripts.join("quits");
    write(&quits, "#!/bin/sh\necho \"bad key $API_KEY\" >&2\necho 'missing API key' >&2\nexit 3\n");
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&quits, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let quits = quits.to_string_lossy().into_owned();
    let (busy1, busy2, closed) = (scene.port(0), scene.port(1), scene.closed_port);
    let json = |value: Value| value.to_string();

    write(
        &home.join(".config/Claude/claude_desktop_config.json"),
        &json(serde_json::json!({"mcpServers": {
            "fixture": {"command": fixture},
            "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]},
            "e404": {"command": e404},
            "toolgate": {"command": "/opt/toolgate/bin/toolgate", "args": ["serve", "--stdio"]},
        }})),
    );
    write(
        &home.join(".cursor/mcp.json"),
        &json(serde_json::json!({"mcpServers": {
            "fixture": {"command": fixture},
            "uvx-thing": {"command": "uvx", "args": ["mcp-server-fetch"]},
            "busy": {"command": "node", "args": [port_server, busy1.to_string()]},
        }})),
    );
    write(
        &home.join(".config/Code/User/mcp.json"),
        &json(serde_json::json!({"servers": {
            "fixture": {"type": "stdio", "command": fixture},
            "docker-thing": {"type": "stdio", "command": "docker", "args": ["run", "-i", "x"]},
            "quits": {"type": "stdio", "command": quits, "env": {"API_KEY": SECRET}},
        }})),
    );
    write(
        &home.join(".gemini/settings.json"),
        &json(serde_json::json!({"mcpServers": {
            "everything": {"command": everything, "args": ["stdio"]},
            "python-thing": {"command": "python3", "args": ["-m", "mcp_thing"]},
            "uvnope": {"command": uv_nope, "args": ["mcp-server-nope"]},
        }})),
    );
    write(
        &home.join(".codex/config.toml"),
        &format!(
            "model = \"gpt-5-codex\"\n\
             [mcp_servers.everything]\ncommand = {everything:?}\nargs = [\"stdio\"]\n\
             [mcp_servers.npx-thing]\ncommand = \"npx\"\nargs = [\"-y\", \"mcp-other\"]\n\
             [mcp_servers.remote]\nurl = \"http://127.0.0.1:{closed}/mcp\"\nbearer_token_env_var = \"{UNSET}\"\n"
        ),
    );
    write(
        &home.join(".config/goose/config.yaml"),
        &format!(
            "extensions:\n  everything:\n    type: stdio\n    cmd: {everything:?}\n    args: [stdio]\n    enabled: true\n\
             \x20 deno-thing:\n    type: stdio\n    cmd: deno\n    args: [run, x.ts]\n    enabled: true\n\
             \x20 http-down:\n    type: streamable_http\n    uri: http://127.0.0.1:{closed}/mcp\n    enabled: true\n"
        ),
    );
    write(
        &home.join(".config/zed/settings.json"),
        &json(serde_json::json!({"theme": "One Dark", "context_servers": {
            "fixture": {"command": fixture, "args": []},
            "bunx-thing": {"command": "bunx", "args": ["mcp-x"]},
            "old-npm": {"command": old_npm, "args": ["mcp-nope@latest"]},
        }})),
    );
    write(
        &home.join(".continue/config.yaml"),
        &format!(
            "name: mine\nversion: 1.0.0\nschema: v1\nmcpServers:\n\
             \x20 - name: everything\n    command: {everything:?}\n    args: [stdio]\n\
             \x20 - name: uv-thing\n    command: uv\n    args: [run, server.py]\n\
             \x20 - name: busy2\n    command: node\n    args: [{port_server:?}, \"{busy2}\"]\n"
        ),
    );
    // The working directory's own file: its command would leave a mark if it ran.
    let mark = scene.dir.path().join("ran");
    write(
        &scene.dir.path().join("project/.mcp.json"),
        &json(serde_json::json!({"mcpServers": {
            "local": {"command": "/bin/sh", "args": ["-c", format!("touch {}", mark.display())]},
        }})),
    );
    write(
        &scene.dir.path().join("project/toolgate.toml"),
        &format!(
            "[servers.fixture]\ncommand = {fixture:?}\n\n[servers.off]\ncommand = \"true\"\nenabled = false\n"
        ),
    );
    scene
}

/// Runs `toolgate --config toolgate.toml doctor ARGS` in the scene's project folder, with
/// its HOME and PATH.
fn doctor(scene: &Scene, args: &[&str]) -> Output {
    Command::new(toolgate_bin())
        .args(["--config", "toolgate.toml", "doctor", "--timeout", "20s"])
        .args(args)
        .current_dir(scene.dir.path().join("project"))
        .env_clear()
        .env("HOME", scene.home())
        .env("PATH", scene.dir.path().join("bin"))
        .stdin(Stdio::null())
        .output()
        .expect("run toolgate doctor")
}

fn server<'a>(report: &'a Value, name: &str) -> &'a Value {
    let servers = report["servers"].as_array().expect("servers");
    let mut found = servers.iter().filter(|s| s["name"] == name);
    let server = found.next().unwrap_or_else(|| panic!("{name} is not reported: {report:#}"));
    assert!(found.next().is_none(), "{name} is reported twice");
    server
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key].as_str().unwrap_or_else(|| panic!("no {key} in {value:#}"))
}

#[test]
fn doctor_reports_each_server_of_eight_clients_with_its_cause() {
    let scene = scene();
    let output = doctor(&scene, &["--json"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(1),
        "failures: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!stdout.contains(SECRET), "a secret was printed: {stdout}");
    let report: Value = serde_json::from_slice(&output.stdout).expect("one JSON object");

    // The working ones, each tried once for all the files that define it.
    let fixture = server(&report, "fixture");
    assert_eq!(text(fixture, "state"), "ok", "{fixture:#}");
    assert_eq!(fixture["server"], "toolgate-fixture");
    assert!(fixture["tools"].as_u64().expect("tools") >= 5, "{fixture:#}");
    assert_eq!(
        fixture["from"],
        serde_json::json!(["toolgate.toml", "claude-desktop", "cursor", "vscode", "zed"])
    );
    let everything = server(&report, "everything");
    assert_eq!(text(everything, "state"), "ok", "{everything:#}");
    assert!(everything["tools"].as_u64().expect("tools") >= 5, "{everything:#}");
    assert_eq!(everything["from"], serde_json::json!(["gemini", "continue", "goose", "codex"]));

    // The missing commands, each named, with what to install.
    for (name, command, install) in [
        ("github", "npx", "install Node.js"),
        ("uvx-thing", "uvx", "install uv"),
        ("docker-thing", "docker", "install Docker"),
        ("python-thing", "python3", "install Python"),
        ("npx-thing", "npx", "install Node.js"),
        ("deno-thing", "deno", "install Deno"),
        ("bunx-thing", "bunx", "install Bun"),
        ("uv-thing", "uv", "install uv"),
    ] {
        let row = server(&report, name);
        assert_eq!(
            (text(row, "state"), text(row, "cause"), text(row, "subject")),
            ("failed", "missing_command", command),
            "{row:#}"
        );
        assert!(text(row, "next_step").starts_with(install), "{name}: {row:#}");
    }

    // The failing ones, each with its cause.
    let failing = |name: &str, cause: &str| {
        let row = server(&report, name).clone();
        assert_eq!((text(&row, "state"), text(&row, "cause")), ("failed", cause), "{row:#}");
        row
    };
    let e404 = failing("e404", "package_not_found");
    assert_eq!(e404["subject"], "@modelcontextprotocol/server-doesnotexist");
    assert_eq!(failing("old-npm", "package_not_found")["subject"], "mcp-nope");
    assert_eq!(failing("uvnope", "package_not_found")["subject"], "mcp-server-nope");
    assert_eq!(failing("busy", "port_in_use")["subject"], scene.port(0).to_string());
    assert_eq!(failing("busy2", "port_in_use")["subject"], scene.port(1).to_string());
    let quits = failing("quits", "exited");
    assert!(text(&quits, "detail").contains("exited with status 3"), "{quits:#}");
    assert!(text(&quits, "next_step").contains("missing API key"), "{quits:#}");
    assert!(text(&quits, "detail").contains("bad key ***"), "the secret is hidden: {quits:#}");
    let remote = failing("remote", "missing_variable");
    assert_eq!(remote["subject"], UNSET);
    let down = failing("http-down", "unreachable");
    assert_eq!(down["subject"], format!("http://127.0.0.1:{}/mcp", scene.closed_port));

    // Not started: disabled, or only in the working directory's own file.
    assert_eq!(server(&report, "off")["state"], "disabled");
    assert_eq!(server(&report, "local")["state"], "skipped");
    assert!(!scene.dir.path().join("ran").exists(), "a project's server was run");
    assert!(
        report["servers"].as_array().unwrap().iter().all(|s| s["name"] != "toolgate"),
        "toolgate's own entry is no server"
    );
    assert_eq!(report["servers"].as_array().unwrap().len(), 2 + 8 + 8 + 2);

    // The clients.
    let client = |name: &str| {
        let clients = report["clients"].as_array().expect("clients");
        clients.iter().find(|c| c["name"] == name).expect(name).clone()
    };
    for name in
        ["claude-desktop", "cursor", "vscode", "gemini", "codex", "goose", "zed", "continue"]
    {
        let c = client(name);
        assert_eq!(c["installed"], true, "{c:#}");
        assert_eq!(c["files"][0]["servers"], 3, "{c:#}");
        assert_eq!(c["files"][0]["project"], false, "{c:#}");
    }
    assert_eq!(client("claude-desktop")["toolgate"], true);
    assert_eq!(client("cursor")["toolgate"], false);
    let windsurf = client("windsurf");
    assert_eq!(
        (&windsurf["installed"], &windsurf["files"]),
        (&Value::Bool(false), &serde_json::json!([]))
    );
    assert_eq!(client("claude-code")["files"][0]["project"], true);

    // toolgate and the tools.
    assert_eq!(report["toolgate"]["ok"], true, "{:#}", report["toolgate"]);
    assert!(text(&report["toolgate"], "config").ends_with("toolgate.toml"));
    let tool = |name: &str| {
        report["tools"].as_array().unwrap().iter().find(|t| t["name"] == name).expect(name).clone()
    };
    assert!(text(&tool("node"), "version").starts_with('v'), "{:#}", tool("node"));
    assert_eq!(tool("npx")["path"], Value::Null);
    assert_eq!(tool("npx")["error"], "not found");
}

#[test]
fn doctor_text_for_one_client_is_short_and_says_what_to_do() {
    let scene = scene();
    let output = doctor(&scene, &["--client", "vscode"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(!stdout.contains(SECRET), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    let line = |start: &str| {
        lines
            .iter()
            .position(|l| l.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("no {start:?} in:\n{stdout}"))
    };
    assert!(lines[line("ok       fixture [vscode]")].contains("toolgate-fixture"), "{stdout}");
    let missing = line("failed   docker-thing [vscode]: command not found: docker");
    assert!(lines[missing + 1].trim_start().starts_with("next: install Docker"), "{stdout}");
    let quits = line("failed   quits [vscode]: exited during start-up");
    assert!(lines[quits + 1].contains("missing API key"), "{stdout}");
    assert!(lines[line("VS Code: installed")].contains(".config/Code"), "{stdout}");
    assert!(stdout.contains("3 servers: 1 ok, 2 failed"), "{stdout}");
    assert!(!stdout.contains("Cursor"), "--client leaves the others out: {stdout}");
    assert!(!stdout.contains("github"), "{stdout}");

    let usage = doctor(&scene, &["--client", "notepad"]);
    assert_eq!(usage.status.code(), Some(2), "{}", String::from_utf8_lossy(&usage.stderr));
    assert!(String::from_utf8_lossy(&usage.stderr).contains("unknown client \"notepad\""));
}
