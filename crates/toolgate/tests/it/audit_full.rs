//! The audit log's disk fills up: with `[audit] required = true` calls are refused rather than
//! run unrecorded, otherwise toolgate warns and keeps serving; either way the chain stays
//! verifiable. The disk is a small tmpfs that only toolgate sees, mounted in a mount namespace
//! of its own (`unshare`, as any user), and read back through `/proc/<pid>/root`.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;

use crate::support::*;

/// The tmpfs: a few dozen records of [`PAYLOAD`] bytes fit.
const DISK: &str = "96k";
/// The size of each call's argument, recorded (redacted where secret) in its started record.
const PAYLOAD: usize = 3000;

/// `toolgate serve --stdio` with the config in `config`, its audit log in `disk` (a tmpfs of
/// its own), and its pid.
async fn toolgate_on_a_small_disk(config: &Path, disk: &Path) -> (Client, u32) {
    let script = format!(
        "mount -t tmpfs -o size={DISK} tmpfs {disk} && head -c 32768 /dev/zero > {disk}/ballast \
         && exec {toolgate} serve --stdio --config {config}",
        disk = disk.display(),
        toolgate = toolgate_bin().display(),
        config = config.display(),
    );
    let mut command = tokio::process::Command::new("unshare");
    command.args(["--user", "--map-root-user", "--mount", "sh", "-c", &script]);
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn toolgate in a mount namespace");
    let pid = transport.id().expect("pid");
    let client = ().serve(transport).await.expect("toolgate answers over stdio");
    (client, pid)
}

fn config(disk: &Path, required: bool) -> ConfigDir {
    let log = disk.join("audit.jsonl");
    ConfigDir::new(&format!(
        "{}\n[audit]\nfile = {}\nrequired = {required}\n",
        fixture_server("fx", "stdio", None),
        toml_str(&log.to_string_lossy())
    ))
}

/// The audit log as toolgate (in its own mount namespace) sees it.
fn seen_by(pid: u32, disk: &Path) -> PathBuf {
    PathBuf::from(format!("/proc/{pid}/root{}", disk.join("audit.jsonl").display()))
}

/// Calls `fx__echo` with a large text until `calls` were made; each answer's text, or its
/// error.
async fn echo_many(client: &Client, calls: usize) -> Vec<Result<String, String>> {
    let mut outcomes = Vec::new();
    for i in 0..calls {
        let text = format!("{i:04}{}", "x".repeat(PAYLOAD));
        let params =
            CallToolRequestParams::new("fx__echo").with_arguments(object(json!({"text": text})));
        let result = client.call_tool(params).await.expect("an answer, not a protocol error");
        let said = first_text(&result);
        outcomes.push(match result.is_error {
            Some(true) => Err(said),
            _ => {
                assert_eq!(said, text);
                Ok(said)
            }
        });
    }
    outcomes
}

/// The started records of calls in the log at `path`, which verifies.
fn started_in(path: &Path) -> usize {
    let report = toolgate_audit::verify(path).expect("the chain verifies");
    let text = std::fs::read_to_string(path).expect("read the log");
    assert_eq!(report.records as usize, text.lines().count());
    text.lines().filter(|line| line.contains("\"kind\":\"tools/call/started\"")).count()
}

#[tokio::test]
async fn with_audit_required_a_full_disk_refuses_calls_and_the_chain_verifies() {
    let disk = tempfile::tempdir().expect("temp dir");
    let config = config(disk.path(), true);
    let (client, pid) = toolgate_on_a_small_disk(&config.path(), disk.path()).await;
    let outcomes = echo_many(&client, 60).await;
    let served = outcomes.iter().take_while(|o| o.is_ok()).count();
    assert!(served > 0 && served < outcomes.len(), "the disk filled up after {served} calls");
    // Once full, every call is refused, saying why.
    for refused in &outcomes[served..] {
        let why = refused.as_ref().expect_err("refused after the disk filled");
        assert!(why.contains("the call was not run"), "{why}");
        assert!(why.contains("No space left on device"), "{why}");
        assert!(why.contains("[audit] required"), "{why}");
    }
    // Every call that ran is on record, and the chain is whole.
    assert_eq!(started_in(&seen_by(pid, disk.path())), served);
    // Room again: calls run again, by themselves, and are recorded.
    let ballast = PathBuf::from(format!("/proc/{pid}/root{}/ballast", disk.path().display()));
    std::fs::remove_file(&ballast).expect("free the disk");
    let again = echo_many(&client, 3).await;
    assert!(again.iter().all(Result::is_ok), "{again:?}");
    assert_eq!(started_in(&seen_by(pid, disk.path())), served + again.len());
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn without_audit_required_a_full_disk_is_warned_about_and_calls_go_on() {
    let disk = tempfile::tempdir().expect("temp dir");
    let config = config(disk.path(), false);
    let (client, pid) = toolgate_on_a_small_disk(&config.path(), disk.path()).await;
    let outcomes = echo_many(&client, 60).await;
    assert!(outcomes.iter().all(Result::is_ok), "every call is served");
    // Fewer were recorded than made (the disk is full), and what was written verifies.
    let recorded = started_in(&seen_by(pid, disk.path()));
    assert!(recorded > 0 && recorded < outcomes.len(), "{recorded} of {} recorded", outcomes.len());
    client.cancel().await.expect("close");
}
