//! `emit` through the real gateway: a webhook receives the channel's events for calls that
//! succeeded, failed (an error result, a timeout) and were refused; a command receives its
//! event as JSON on stdin; a command that runs far longer than the call does not delay it;
//! commands past `concurrency` are not started, and one past its timeout is killed with its
//! process group. Commands report to the test through FIFOs, so that the test awaits them
//! instead of polling.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::builtins::webhook;
use crate::support::*;

async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(object(args)))
        .await
        .expect("a tool result")
}

/// A FIFO at `dir/name`.
fn fifo(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let made = std::process::Command::new("mkfifo").arg(&path).status().expect("run mkfifo");
    assert!(made.success(), "mkfifo {}", path.display());
    path
}

/// The next thing written to the FIFO at `path`, whole (up to its writer closing it). Read on
/// a thread of its own, which a test that fails leaves blocked without holding up the
/// runtime.
async fn read_fifo(path: &Path) -> String {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let path = path.to_owned();
    std::thread::spawn(move || {
        let _ = sender.send(std::fs::read_to_string(&path));
    });
    tokio::time::timeout(Duration::from_secs(30), receiver)
        .await
        .expect("written to in time")
        .expect("the reader thread answers")
        .expect("the FIFO reads")
}

/// Writes `text` to the FIFO at `path` once a reader has it open, on a thread of its own.
async fn write_fifo(path: &Path, text: &'static str) {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let path = path.to_owned();
    std::thread::spawn(move || {
        let _ = sender.send(std::fs::write(&path, text));
    });
    tokio::time::timeout(Duration::from_secs(30), receiver)
        .await
        .expect("read from in time")
        .expect("the writer thread answers")
        .expect("the FIFO takes it");
}

/// Whether the process `pid` is running (not gone, not a zombie).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "))
}

async fn next(received: &mut mpsc::UnboundedReceiver<Value>) -> Value {
    tokio::time::timeout(Duration::from_secs(30), received.recv())
        .await
        .expect("an event in time")
        .expect("the receiver is up")
}

fn sh(script: &str) -> String {
    serde_json::to_string(&["sh", "-c", script]).expect("json")
}

#[tokio::test]
async fn a_webhook_hears_ok_error_and_refused_calls_and_a_command_gets_its_event() {
    let dir = tempfile::tempdir().expect("temp dir");
    let stdin = fifo(dir.path(), "stdin");
    let (hook, mut received) = webhook().await;
    let config = ConfigDir::new(&format!(
        "{}\n\
         [[pipeline]]\nkind = \"policy\"\ndefault = \"allow\"\n\
         rules = [{{ tools = [\"env_get\"], decision = \"deny\", reason = \"no environment\" }}]\n\n\
         [[pipeline]]\nkind = \"limits\"\ntool.\"fx__slow\" = {{ timeout = \"300ms\" }}\n\n\
         [[pipeline]]\nkind = \"emit\"\nchannel = \"calls\"\n\n\
         [[pipeline]]\nkind = \"emit\"\nname = \"echoes\"\nchannel = \"echoes\"\n\
         tools = [\"echo\"]\noutcomes = [\"ok\"]\ninclude = \"result\"\ncommand = {}\n\n\
         [audit]\n[[audit.webhook]]\nurl = {}\nevents = [\"emit/*\"]\n",
        fixture_server("fx", "stdio", None),
        sh(&format!("cat > '{}'", stdin.display())),
        toml_str(&hook),
    ));
    let gateway = HttpGateway::start(&config.path()).await;
    let client = http_client(&gateway.url).await;

    let said = call(&client, "fx__echo", json!({"text": "hello"})).await;
    assert_eq!(first_text(&said), "hello");
    let failed = call(&client, "fx__fail", json!({"message": "it broke"})).await;
    assert_eq!(failed.is_error, Some(true));
    let refused = call(&client, "fx__env_get", json!({"name": "HOME"})).await;
    assert!(first_text(&refused).starts_with("refused by policy"), "{refused:?}");
    let slow = call(&client, "fx__slow", json!({"steps": 1, "step_ms": 10_000})).await;
    assert_eq!(slow.is_error, Some(true));

    // echo: both channels, in config order.
    let ok = next(&mut received).await;
    assert_eq!((ok["kind"].as_str(), ok["outcome"].as_str()), (Some("emit/calls"), Some("ok")));
    assert_eq!(ok["server"], "fx");
    assert_eq!(ok["tool"], "echo");
    assert_eq!(ok["exposed"], "fx__echo");
    assert_eq!(ok["principal"], "anonymous:anonymous");
    assert!(ok["session"].is_string(), "{ok}");
    assert!(ok["duration_ms"].is_number(), "{ok}");
    assert_eq!(ok["result_sha256"].as_str().map(str::len), Some(64), "{ok}");
    assert!(ok["result_bytes"].as_u64().is_some_and(|n| n > 0), "{ok}");
    assert!(ok.get("result").is_none(), "only the hash by default: {ok}");
    let echoed = next(&mut received).await;
    assert_eq!(echoed["kind"], "emit/echoes");
    assert_eq!(echoed["interceptor"], "echoes");
    assert_eq!(echoed["result"]["content"][0]["text"], "hello");
    // fail: an error result.
    let error = next(&mut received).await;
    assert_eq!(
        (error["kind"].as_str(), error["outcome"].as_str()),
        (Some("emit/calls"), Some("error"))
    );
    assert_eq!(error["tool"], "fail");
    assert_eq!(error["is_error"], true);
    // env_get: refused by policy; it never reached the response phase.
    let denied = next(&mut received).await;
    assert_eq!(denied["outcome"], "refused", "{denied}");
    assert_eq!(denied["tool"], "env_get");
    assert_eq!(denied["refused_by"], "policy");
    assert!(denied["reason"].as_str().is_some_and(|r| r.contains("no environment")), "{denied}");
    assert!(denied.get("result_sha256").is_none(), "no result to hash: {denied}");
    // slow: timed out, so no result either.
    let timed_out = next(&mut received).await;
    assert_eq!(timed_out["outcome"], "error", "{timed_out}");
    assert_eq!(timed_out["tool"], "slow");
    assert!(timed_out["error"].as_str().is_some_and(|e| e.contains("300ms")), "{timed_out}");

    // The command got the echoes event, as the webhook did.
    let written: Value = serde_json::from_str(&read_fifo(&stdin).await).expect("JSON on stdin");
    assert_eq!(written, echoed);

    client.cancel().await.expect("close");
    assert!(gateway.terminate().await.success());
}

#[tokio::test]
async fn a_command_far_slower_than_the_call_does_not_delay_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let started = fifo(dir.path(), "started");
    let config = ConfigDir::new(&format!(
        "{}\n[[pipeline]]\nkind = \"emit\"\nchannel = \"c\"\ncommand = {}\n\
         command_timeout = \"5s\"\n",
        fixture_server("fx", "stdio", None),
        sh(&format!("echo $$ > '{}'; exec sleep 600", started.display())),
    ));
    let gateway = HttpGateway::start(&config.path()).await;
    let client = http_client(&gateway.url).await;
    let said = call(&client, "fx__echo", json!({"text": "quick"})).await;
    assert_eq!(first_text(&said), "quick");
    // The call has its answer; its command has started and is still running.
    let pid: i32 = read_fifo(&started).await.trim().parse().expect("the command's pid");
    assert!(running(pid), "the command runs on after the call returned");
    gateway.wait_for_log(&["emit command ran past its timeout", "5s"]).await;
    assert!(!running(pid), "killed at its timeout");
    client.cancel().await.expect("close");
    assert!(gateway.terminate().await.success());
}

#[tokio::test]
async fn commands_past_concurrency_are_not_started_and_a_command_past_its_timeout_is_killed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let started = fifo(dir.path(), "started");
    let release = fifo(dir.path(), "release");
    // Each command says it started, then waits to be released (or killed at its timeout),
    // holding its slot; a child in its process group waits as long.
    let script = format!(
        "echo $$ > '{}'; sleep 600 & read line < '{}'",
        started.display(),
        release.display()
    );
    let config = ConfigDir::new(&format!(
        "{}\n[[pipeline]]\nkind = \"emit\"\nchannel = \"c\"\ncommand = {}\n\
         concurrency = 1\ncommand_timeout = \"3s\"\n",
        fixture_server("fx", "stdio", None),
        sh(&script),
    ));
    let gateway = HttpGateway::start(&config.path()).await;
    let client = http_client(&gateway.url).await;

    call(&client, "fx__echo", json!({"text": "one"})).await;
    let first: i32 = read_fifo(&started).await.trim().parse().expect("a pid");
    // Its one slot is taken: the next two events are not given to a command.
    call(&client, "fx__echo", json!({"text": "two"})).await;
    call(&client, "fx__echo", json!({"text": "three"})).await;
    gateway.wait_for_log(&["every emit command slot is busy", "dropped=1"]).await;
    gateway.wait_for_log(&["every emit command slot is busy", "dropped=2"]).await;
    assert!(running(first));
    // Never released: killed at its timeout, with its group.
    gateway.wait_for_log(&["emit command ran past its timeout", "3s"]).await;
    assert!(!running(first), "the command was killed");
    // The slot is free again: the next event starts a command, which ends when released.
    call(&client, "fx__echo", json!({"text": "four"})).await;
    let second: i32 = read_fifo(&started).await.trim().parse().expect("a pid");
    assert_ne!(first, second);
    write_fifo(&release, "go\n").await;
    client.cancel().await.expect("close");
    assert!(gateway.terminate().await.success());
    assert!(!running(second), "released, it ended (and shutdown waited for it)");
}

#[tokio::test]
async fn a_one_shot_call_waits_for_its_command_before_exiting() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("event.json");
    // The command takes its time: `toolgate call` must not exit (and so kill it) first.
    let script = format!("sleep 1; cat > '{}'", out.display());
    let config = ConfigDir::new(&format!(
        "{}\n[[pipeline]]\nkind = \"emit\"\nchannel = \"cli\"\ncommand = {}\n",
        fixture_server("fx", "stdio", None),
        sh(&script),
    ));
    let path = config.path().to_string_lossy().into_owned();
    let output = run_toolgate(&["call", "--config", &path, "fx__echo", "text=hi"]).await;
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let written: Value =
        serde_json::from_slice(&std::fs::read(&out).expect("the command ran to its end"))
            .expect("the event as JSON");
    assert_eq!(written["kind"], "emit/cli");
    assert_eq!(written["outcome"], "ok");
    assert_eq!(written["principal"].as_str().map(|p| p.starts_with("cli:")), Some(true));
}
