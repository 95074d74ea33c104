//! The demo toolgate serves with no config: harmless tools only, an emptied environment, and a
//! first log line that says how to configure real servers.
//!
//! The same probe runs against the full fixture (`toolgate-fixture`) as a control, to show
//! that it does catch a tool that reads the environment, spawns a process or exits.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use rmcp::ServiceExt as _;
use rmcp::model::{CallToolRequestParams, GetPromptRequestParams, ReadResourceRequestParams};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::Command;

use crate::recorder::{alive, children_of};
use crate::support::*;

/// The variable set on the gateway that nothing the demo says may contain.
const CANARY_VAR: &str = "TOOLGATE_TEST_DEMO_CANARY";
/// Its value.
const CANARY: &str = "canary-7f3a9c1e-do-not-leak";

/// Everything the demo offers as tools, by exposed name.
const DEMO_TOOLS: [&str; 6] = [
    "demo__echo",
    "demo__sample_audio",
    "demo__sample_image",
    "demo__sample_mixed",
    "demo__sample_resource",
    "demo__slow",
];

/// Name parts of tools that read the machine, start processes or end them.
const DANGEROUS_WORDS: [&str; 10] =
    ["env", "spawn", "crash", "exit", "exec", "shell", "process", "kill", "file", "stderr"];

/// A `toolgate` command that finds no config anywhere: it runs in an empty folder, with
/// `HOME` and `XDG_CONFIG_HOME` there too, and the canary in its environment.
fn without_config(home: &Path) -> Command {
    let mut command = Command::new(toolgate_bin());
    command
        .current_dir(home)
        .env_remove("TOOLGATE_CONFIG")
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env(CANARY_VAR, CANARY)
        .stdin(Stdio::null());
    command
}

#[tokio::test]
async fn the_demo_lists_only_harmless_tools() {
    let home = tempfile::tempdir().expect("temp dir");
    let output = without_config(home.path()).args(["tools", "--json"]).output().await.expect("run");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let tools: Value = serde_json::from_slice(&output.stdout).expect("json");
    let mut names: Vec<&str> = tools
        .as_array()
        .expect("an array")
        .iter()
        .map(|tool| tool["name"].as_str().expect("a name"))
        .collect();
    names.sort_unstable();
    assert_eq!(names, DEMO_TOOLS);
    for name in names {
        let lower = name.to_lowercase();
        assert!(
            !DANGEROUS_WORDS.iter().any(|word| lower.contains(word)),
            "{name} sounds like it reads the machine, spawns or exits"
        );
    }
}

#[tokio::test]
async fn the_demo_leaks_nothing_spawns_nothing_and_stays_up() {
    let home = tempfile::tempdir().expect("temp dir");
    let findings = probe(without_config(home.path()), None).await;
    assert_eq!(findings.environment, Vec::<String>::new(), "the demo's environment is emptied");
    assert!(findings.called.len() >= DEMO_TOOLS.len(), "every tool was called: {findings:?}");
    assert!(findings.leaked.is_empty(), "these answers contain the canary: {findings:?}");
    assert!(findings.spawned.is_empty(), "these tools started processes: {findings:?}");
    assert!(findings.exited.is_empty(), "these tools ended the demo: {findings:?}");
}

/// The control: the full fixture, where the probe must catch each of the three.
#[tokio::test]
async fn the_probe_catches_the_fixtures_dangerous_tools() {
    // A stdio server inherits only what its config names: this one names the canary.
    let config = ConfigDir::new(&format!(
        "[servers.fx]\ncommand = {}\nenv_pass = [{}]\n",
        toml_str(&fixture_bin().to_string_lossy()),
        toml_str(CANARY_VAR)
    ));
    let home = tempfile::tempdir().expect("temp dir");
    let mut command = without_config(home.path());
    command.arg("--config").arg(config.path());
    let findings = probe(command, Some(&["fx__env_get", "fx__spawn_child", "fx__crash"])).await;
    assert!(
        findings.environment.iter().any(|entry| entry == &format!("{CANARY_VAR}={CANARY}")),
        "the fixture inherits what env_pass names"
    );
    assert_eq!(findings.leaked, ["fx__env_get"]);
    assert_eq!(findings.spawned, ["fx__spawn_child"]);
    assert_eq!(findings.exited, ["fx__crash"]);
}

#[tokio::test]
async fn serve_without_config_says_how_to_configure_real_servers_first() {
    let home = tempfile::tempdir().expect("temp dir");
    let mut child = without_config(home.path())
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("TOOLGATE_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn toolgate serve");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("a log line in time")
        .expect("read stderr")
        .expect("toolgate logged something");
    for part in ["demo", "toolgate.toml", "--config", "Quick start"] {
        assert!(first.contains(part), "the first log line mentions {part}: {first}");
    }
    let user_file = home.path().join("config").join("toolgate").join("toolgate.toml");
    assert!(first.contains(&*user_file.to_string_lossy()), "it names the user config: {first}");
    child.kill().await.expect("kill");
}

#[tokio::test]
async fn servers_and_call_work_without_config() {
    let home = tempfile::tempdir().expect("temp dir");
    let output =
        without_config(home.path()).args(["servers", "--json"]).output().await.expect("run");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let rows: Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(rows[0]["name"], "demo", "{rows}");
    assert_eq!(rows[0]["state"], "connected", "{rows}");

    let output = without_config(home.path())
        .args(["call", "demo__slow", "steps=2", "step_ms=1"])
        .output()
        .await
        .expect("run");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "done after 2 steps");
}

/// What [`probe`] saw.
#[derive(Debug, Default)]
struct Findings {
    /// The upstream's environment at start, `NAME=value` each.
    environment: Vec<String>,
    /// Tools called, in order.
    called: Vec<String>,
    /// Tools whose answer contained the canary.
    leaked: Vec<String>,
    /// Tools after whose call the upstream had a child process.
    spawned: Vec<String>,
    /// Tools after whose call the upstream process was gone.
    exited: Vec<String>,
}

/// Runs `toolgate serve --stdio` from `command`, calls every tool it lists (or those in
/// `only`, in that order) with arguments made from its schema (every string argument is the
/// canary's name), reads every resource and prompt, and reports what it saw.
async fn probe(mut command: Command, only: Option<&[&str]>) -> Findings {
    command.args(["serve", "--stdio"]).stderr(Stdio::inherit());
    let transport = TokioChildProcess::new(command).expect("spawn toolgate serve --stdio");
    let gateway = transport.id().expect("toolgate pid");
    let client = ().serve(transport).await.expect("client connects");
    let upstream = match children_of(gateway).as_slice() {
        [one] => *one,
        other => panic!("expected one upstream child of toolgate, found {other:?}"),
    };
    let environ = std::fs::read(format!("/proc/{upstream}/environ")).expect("read environ");
    let mut findings = Findings {
        environment: environ
            .split(|byte| *byte == 0)
            .filter(|entry| !entry.is_empty())
            .map(|entry| String::from_utf8_lossy(entry).into_owned())
            .collect(),
        ..Findings::default()
    };

    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<String> = match only {
        Some(only) => only.iter().map(|name| (*name).to_owned()).collect(),
        None => tools.iter().map(|tool| tool.name.to_string()).collect(),
    };
    for name in names {
        let tool = tools.iter().find(|tool| tool.name == name).expect("a listed tool");
        let args = sample_arguments(&Value::Object((*tool.input_schema).clone()));
        let call = CallToolRequestParams::new(name.clone()).with_arguments(args);
        let answer = tokio::time::timeout(Duration::from_secs(30), client.call_tool(call))
            .await
            .expect("every call ends in time");
        let text = match answer {
            Ok(result) => serde_json::to_string(&result).expect("serializes"),
            Err(error) => error.to_string(),
        };
        if text.contains(CANARY) {
            findings.leaked.push(name.clone());
        }
        let grandchildren = children_of(upstream);
        if !grandchildren.is_empty() {
            findings.spawned.push(name.clone());
            for pid in grandchildren {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
        if !alive(upstream) {
            findings.exited.push(name.clone());
        }
        findings.called.push(name);
    }

    if only.is_none() {
        let mut seen = Vec::new();
        for resource in client.list_all_resources().await.expect("resources/list") {
            let read = client
                .read_resource(ReadResourceRequestParams::new(resource.uri.clone()))
                .await
                .expect("resources/read");
            seen.push(serde_json::to_string(&read).expect("serializes"));
        }
        for prompt in client.list_all_prompts().await.expect("prompts/list") {
            let mut request = GetPromptRequestParams::new(prompt.name.clone());
            let args: serde_json::Map<String, Value> = prompt
                .arguments
                .iter()
                .flatten()
                .map(|argument| (argument.name.clone(), json!(CANARY_VAR)))
                .collect();
            if !args.is_empty() {
                request = request.with_arguments(args);
            }
            let got = client.get_prompt(request).await.expect("prompts/get");
            seen.push(serde_json::to_string(&got).expect("serializes"));
        }
        assert!(!seen.is_empty(), "the demo has prompts and resources");
        assert!(seen.iter().all(|text| !text.contains(CANARY)), "a prompt or resource leaked");
        assert!(alive(upstream), "the upstream is still the same process");
    }
    client.cancel().await.expect("close");
    findings
}

/// Arguments for a tool's input schema: every string is the canary's name, every number its
/// minimum (or 0), every boolean false.
fn sample_arguments(schema: &Value) -> serde_json::Map<String, Value> {
    let Some(properties) = schema["properties"].as_object() else { return Default::default() };
    properties
        .iter()
        .filter_map(|(name, property)| {
            let value = match property["type"].as_str()? {
                "string" => json!(CANARY_VAR),
                "integer" | "number" => property.get("minimum").cloned().unwrap_or(json!(0)),
                "boolean" => json!(false),
                _ => return None,
            };
            Some((name.clone(), value))
        })
        .collect()
}

/// The product does not link the test fixture: neither `toolgate` nor any workspace crate it
/// depends on (transitively) has `toolgate-testkit` among its normal dependencies.
#[test]
fn the_binary_does_not_depend_on_the_testkit() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("crates/");
    let mut pending = vec!["toolgate".to_owned()];
    let mut seen = Vec::new();
    while let Some(name) = pending.pop() {
        if seen.contains(&name) {
            continue;
        }
        let manifest = crates.join(&name).join("Cargo.toml");
        let text = std::fs::read_to_string(&manifest)
            .unwrap_or_else(|error| panic!("{}: {error}", manifest.display()));
        let dependencies: Vec<&str> = text
            .split("\n[")
            .filter(|section| section.starts_with("dependencies]"))
            .flat_map(str::lines)
            .filter_map(|line| line.split(['.', ' ', '=']).next())
            .filter(|dependency| dependency.starts_with("toolgate-"))
            .collect();
        assert!(
            !dependencies.contains(&"toolgate-testkit"),
            "{} lists toolgate-testkit as a normal dependency",
            manifest.display()
        );
        pending.extend(dependencies.into_iter().map(str::to_owned));
        seen.push(name);
    }
    assert!(seen.len() >= 8, "toolgate and its library crates were read: {seen:?}");
}
