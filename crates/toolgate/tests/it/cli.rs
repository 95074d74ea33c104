//! The command line: help, tools, call, servers, config check, demo mode, completions, man.

use serde_json::Value;

use crate::support::*;

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test]
async fn help_lists_every_subcommand() {
    let output = run_toolgate(&["--help"]).await;
    assert!(output.status.success());
    let text = stdout(&output);
    for command in ["serve", "tools", "call", "servers", "config", "completions", "man"] {
        assert!(text.contains(command), "{command} missing from --help:\n{text}");
    }
    assert!(!text.contains("demo-server"), "internal commands stay hidden");
}

#[tokio::test]
async fn tools_json_names_each_upstream() {
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let path = config.path().to_string_lossy().into_owned();
    let output = run_toolgate(&["tools", "--json", "--config", &path]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let tools: Value = serde_json::from_slice(&output.stdout).expect("json");
    let echo =
        tools.as_array().expect("array").iter().find(|t| t["name"] == "fx__echo").expect("echo");
    assert_eq!(echo["server"], "fx");
    assert_eq!(echo["original"], "echo");
    assert!(echo["inputSchema"].is_object());

    let table = run_toolgate(&["tools", "--config", &path]).await;
    assert!(stdout(&table).lines().any(|l| l.starts_with("fx__echo") && l.contains(" fx ")));
}

#[tokio::test]
async fn call_prints_results_and_sets_the_exit_status() {
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let path = config.path().to_string_lossy().into_owned();

    let ok = run_toolgate(&["call", "fx__echo", "text=42", "--config", &path]).await;
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert_eq!(stdout(&ok).trim(), "42", "a string argument stays a string");

    let json = run_toolgate(&[
        "call",
        "fx__echo",
        "--args",
        r#"{"text":"hi"}"#,
        "--json",
        "--config",
        &path,
    ])
    .await;
    let result: Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(result["content"][0]["text"], "hi");

    let failed = run_toolgate(&["call", "fx__fail", "message=bad thing", "--config", &path]).await;
    assert_eq!(failed.status.code(), Some(1));
    assert!(stdout(&failed).contains("bad thing"));

    let unknown = run_toolgate(&["call", "fx__missing", "--config", &path]).await;
    assert_eq!(unknown.status.code(), Some(1));
    assert!(stderr(&unknown).contains("unknown tool `fx__missing`"), "{}", stderr(&unknown));

    let bad_args = run_toolgate(&["call", "fx__echo", "--args", "[1]", "--config", &path]).await;
    assert_eq!(bad_args.status.code(), Some(1));
    assert!(stderr(&bad_args).contains("JSON object"), "{}", stderr(&bad_args));
}

#[tokio::test]
async fn servers_reports_state_transport_protocol_and_failures() {
    let config = ConfigDir::new(&format!(
        "{}\n[servers.broken]\ncommand = \"/nonexistent/toolgate-test-server\"\n\n\
         [servers.off]\ncommand = \"x\"\nenabled = false\n",
        fixture_server("fx", "stdio", None)
    ));
    let output =
        run_toolgate(&["servers", "--json", "--config", &config.path().to_string_lossy()]).await;
    assert_eq!(output.status.code(), Some(1), "a failed server makes `servers` exit 1");
    let rows: Value = serde_json::from_slice(&output.stdout).expect("json");
    let row =
        |name: &str| rows.as_array().unwrap().iter().find(|r| r["name"] == name).unwrap().clone();
    assert_eq!(row("fx")["state"], "connected");
    assert_eq!(row("fx")["transport"], "stdio");
    assert!(row("fx")["protocol"].as_str().is_some_and(|p| p.starts_with("20")));
    assert!(row("fx")["tools"].as_u64().unwrap() > 10);
    assert_eq!(row("broken")["state"], "failed");
    assert!(row("broken")["error"].as_str().unwrap().contains("/nonexistent/toolgate-test-server"));
    assert_eq!(row("off")["state"], "disabled");
}

#[tokio::test]
async fn config_check_reports_every_problem_and_exits_64() {
    let config = ConfigDir::new(
        "[gateway]\nlisten = \"nope\"\n[servers.a]\ncomand = \"x\"\n[servers.b]\nurl = \"not a url\"\n",
    );
    let output =
        run_toolgate(&["config", "check", "--config", &config.path().to_string_lossy()]).await;
    assert_eq!(output.status.code(), Some(64));
    let text = stdout(&output);
    for path in ["gateway.listen", "servers.a.comand", "servers.b.url"] {
        assert!(text.contains(path), "{path} missing from:\n{text}");
    }

    let good = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let ok = run_toolgate(&["config", "check", "--config", &good.path().to_string_lossy()]).await;
    assert!(ok.status.success(), "{}", stdout(&ok));
}

#[tokio::test]
async fn every_command_refuses_an_invalid_config_with_64() {
    let config = ConfigDir::new("[servers.a]\nbogus = 1\n");
    let path = config.path().to_string_lossy().into_owned();
    for args in [vec!["tools"], vec!["servers"], vec!["call", "x"], vec!["serve", "--stdio"]] {
        let mut args = args.clone();
        args.extend(["--config", &path]);
        let output = run_toolgate(&args).await;
        assert_eq!(output.status.code(), Some(64), "{args:?}: {}", stderr(&output));
        assert!(stderr(&output).contains("servers.a.bogus"), "{}", stderr(&output));
    }
}

#[tokio::test]
async fn claude_desktop_json_works_as_a_whole_config() {
    let json = serde_json::json!({
        "mcpServers": { "fx": { "command": fixture_bin() } }
    });
    let config = ConfigDir::with_file("claude_desktop_config.json", &json.to_string());
    let output = run_toolgate(&[
        "call",
        "fx__echo",
        "text=from json",
        "--config",
        &config.path().to_string_lossy(),
    ])
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output).trim(), "from json");
}

#[tokio::test]
async fn without_any_config_the_demo_server_is_used() {
    let empty = tempfile::tempdir().expect("temp dir");
    let mut command = tokio::process::Command::new(toolgate_bin());
    command
        .args(["call", "demo__echo", "text=hi there"])
        .current_dir(empty.path())
        .env_remove("TOOLGATE_CONFIG")
        .env("HOME", empty.path())
        .env("XDG_CONFIG_HOME", empty.path().join("config"));
    let output = command.output().await.expect("run");
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output).trim(), "hi there");
}

#[tokio::test]
async fn toolgate_toml_in_the_working_directory_is_found_once_trusted() {
    let config = ConfigDir::new(&fixture_server("here", "stdio", None));
    let state = tempfile::tempdir().expect("temp dir");
    let in_config_dir = |args: &[&str]| {
        let mut command = tokio::process::Command::new(toolgate_bin());
        command
            .args(args)
            .current_dir(config.dir())
            .env_remove("TOOLGATE_CONFIG")
            .env("XDG_STATE_HOME", state.path());
        command
    };
    // Found, and refused until trusted (tests/it/trust.rs has the rest).
    let refused = in_config_dir(&["call", "here__echo", "text=found"]).output().await.expect("run");
    assert_eq!(refused.status.code(), Some(64), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("toolgate trust"), "{}", stderr(&refused));
    let trusted = in_config_dir(&["trust"]).output().await.expect("run");
    assert!(trusted.status.success(), "{}", stderr(&trusted));
    let output = in_config_dir(&["call", "here__echo", "text=found"]).output().await.expect("run");
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output).trim(), "found");
}

/// The visible subcommands, which completions and the manual must all know.
const SUBCOMMANDS: [&str; 16] = [
    "serve",
    "import",
    "install",
    "uninstall",
    "doctor",
    "tools",
    "call",
    "servers",
    "login",
    "logout",
    "interceptors",
    "config",
    "audit",
    "trust",
    "completions",
    "man",
];

#[tokio::test]
async fn completions_cover_every_subcommand_in_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let output = run_toolgate(&["completions", shell]).await;
        assert!(output.status.success(), "{shell}: {}", stderr(&output));
        let script = stdout(&output);
        assert!(script.contains("toolgate"), "{shell}: the script names the program");
        for command in SUBCOMMANDS {
            assert!(script.contains(command), "{shell}: {command} missing from:\n{script}");
        }
        assert!(!script.contains("demo-server"), "{shell}: hidden commands stay hidden");
    }
    let unknown = run_toolgate(&["completions", "tcsh"]).await;
    assert_eq!(unknown.status.code(), Some(2), "an unknown shell is a usage error");
}

#[tokio::test]
async fn man_prints_a_page_naming_every_subcommand() {
    let output = run_toolgate(&["man"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let page = stdout(&output);
    assert!(page.starts_with(".ie") || page.contains("\n.TH toolgate 1"), "a roff page:\n{page}");
    assert!(page.contains(".TH toolgate 1"), "titled toolgate(1):\n{page}");
    for command in SUBCOMMANDS {
        assert!(page.contains(&format!("toolgate\\-{command}(1)")), "{command} missing:\n{page}");
    }
    assert!(!page.contains("demo\\-server"), "hidden commands stay hidden");
}

#[tokio::test]
async fn man_dir_writes_one_page_per_command() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("man1");
    let output = run_toolgate(&["man", "--dir", &out.to_string_lossy()]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    for page in ["toolgate.1", "toolgate-serve.1", "toolgate-audit-verify.1", "toolgate-man.1"] {
        let text =
            std::fs::read_to_string(out.join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text.contains(".TH toolgate"), "{page} is a manual page");
    }
    assert!(!out.join("toolgate-demo-server.1").exists(), "hidden commands get no page");
}
