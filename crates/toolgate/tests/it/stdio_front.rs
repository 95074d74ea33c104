//! The stdio front over each kind of standard stream a client may hand it: a socket pair (what
//! Node-based clients use), a pipe (the other tests' rmcp client), and regular files (a
//! scripted session; these stay on tokio's blocking pool).

use std::os::fd::OwnedFd;
use std::process::Stdio;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

use crate::support::*;

/// The messages of a short session: handshake, one call, in the 2025-11-25 era.
fn session_lines() -> String {
    [
        json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"}
            }
        }),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "fx__echo", "arguments": {"text": "over stdio"}}
        }),
    ]
    .iter()
    .map(|message| format!("{message}\n"))
    .collect()
}

fn serve_stdio(config: &std::path::Path) -> Command {
    let mut command = Command::new(toolgate_bin());
    command.arg("serve").arg("--stdio").arg("--config").arg(config);
    command.stderr(Stdio::inherit()).kill_on_drop(true);
    command
}

/// The answer with `id` among `lines`.
fn answer(lines: &[Value], id: i64) -> &Value {
    lines
        .iter()
        .find(|line| line["id"] == id)
        .unwrap_or_else(|| panic!("no answer {id}: {lines:?}"))
}

#[tokio::test]
async fn a_socket_pair_as_stdin_and_stdout_carries_a_session() {
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().expect("socket pair");
    let theirs = OwnedFd::from(theirs);
    let mut child = serve_stdio(&config.path())
        .stdin(Stdio::from(theirs.try_clone().expect("dup")))
        .stdout(Stdio::from(theirs))
        .spawn()
        .expect("spawn toolgate");
    ours.set_nonblocking(true).expect("non-blocking");
    let ours = tokio::net::UnixStream::from_std(ours).expect("tokio socket");
    let (read, mut write) = ours.into_split();
    write.write_all(session_lines().as_bytes()).await.expect("write");

    let mut lines = BufReader::new(read).lines();
    let mut answers = Vec::new();
    while answers.len() < 2 {
        let line = tokio::time::timeout(std::time::Duration::from_secs(20), lines.next_line())
            .await
            .expect("answered in time")
            .expect("read")
            .expect("a line before the end");
        answers.push(serde_json::from_str::<Value>(&line).expect("JSON"));
    }
    assert_eq!(answer(&answers, 1)["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(answer(&answers, 2)["result"]["content"][0]["text"], "over stdio");

    // Closing our end is the end of the session: toolgate exits cleanly.
    drop(write);
    drop(lines);
    let status = tokio::time::timeout(std::time::Duration::from_secs(20), child.wait())
        .await
        .expect("exits in time")
        .expect("wait");
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn regular_files_as_stdin_and_stdout_carry_a_scripted_session() {
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let config_path = config.path();
    let input_path = config.dir().join("input.jsonl");
    std::fs::write(&input_path, session_lines()).expect("input");
    let input = std::fs::File::open(&input_path).expect("input");
    let output_path = config.dir().join("output.jsonl");
    let output = std::fs::File::create(&output_path).expect("output");
    let status = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        serve_stdio(&config_path).stdin(Stdio::from(input)).stdout(Stdio::from(output)).status(),
    )
    .await
    .expect("ends in time")
    .expect("run toolgate");
    assert!(status.success(), "{status}");
    let written = std::fs::read_to_string(&output_path).expect("read output");
    let answers: Vec<Value> =
        written.lines().map(|line| serde_json::from_str(line).expect("JSON")).collect();
    assert_eq!(answer(&answers, 2)["result"]["content"][0]["text"], "over stdio", "{written}");
}

/// The stdio front runs at most `MOST_RUNNING` (1,024) of a client's requests at once: one
/// more is refused at once, saying why, while the others keep running.
#[tokio::test]
async fn one_request_past_the_running_bound_is_refused_saying_why() {
    const MOST_RUNNING: i64 = 1_024;
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let mut child = serve_stdio(&config.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn toolgate");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut session = session_lines().lines().take(2).map(|l| format!("{l}\n")).collect::<String>();
    // Each call would run for a minute: none ends before the last is sent.
    for id in 100..100 + MOST_RUNNING {
        let call = json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "fx__slow", "arguments": {"steps": 1, "step_ms": 60_000}}
        });
        session.push_str(&format!("{call}\n"));
    }
    let past = json!({
        "jsonrpc": "2.0", "id": 9_999, "method": "tools/call",
        "params": {"name": "fx__echo", "arguments": {"text": "one too many"}}
    });
    session.push_str(&format!("{past}\n"));
    stdin.write_all(session.as_bytes()).await.expect("write the session");
    loop {
        let line = stdout.next_line().await.expect("read").expect("an answer to request 9999");
        let message: Value = serde_json::from_str(&line).expect("JSON");
        if message["id"] == 9_999 {
            assert_eq!(message["error"]["code"], -32000, "{message}");
            let text = message["error"]["message"].as_str().expect("a message");
            assert!(text.contains("1024 requests of this client are running"), "{text}");
            break;
        }
        // Only the handshake's answer (id 1) comes before it: the calls are all still running.
        assert_eq!(message["id"], 1, "{message}");
    }
    child.kill().await.expect("kill");
}
