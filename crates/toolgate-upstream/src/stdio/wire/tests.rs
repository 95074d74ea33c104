//! The child transport against a real child process writing chosen bytes.

use process_wrap::tokio::{CommandWrap, ProcessGroup};
use std::process::Stdio;

use super::*;

/// A child that writes `output` (through `printf %s`) and then waits for its input to close.
fn wire_over(output: &str, shared: &Arc<Shared>) -> ChildWire {
    let mut command = tokio::process::Command::new("sh");
    command.args(["-c", "printf %s \"$1\"; cat >/dev/null", "sh", output]);
    let mut wrapped = CommandWrap::from(command);
    wrapped.wrap(ProcessGroup::leader());
    wrapped.command_mut().stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
    let child = wrapped.spawn().expect("spawn sh");
    ChildWire::new(child, shared.clone()).expect("piped")
}

fn shared() -> Arc<Shared> {
    Arc::new(Shared::new("t".into(), None))
}

fn method_of(message: &mcp::ServerJsonRpcMessage) -> String {
    let json = serde_json::to_value(message).expect("serializes");
    json["method"].as_str().map(str::to_owned).unwrap_or_else(|| json.to_string())
}

const LIST_CHANGED: &str = r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#;

#[tokio::test]
async fn lines_become_messages_and_what_is_not_one_is_skipped() {
    let shared = shared();
    let output = format!(
        "\n{LIST_CHANGED}\r\nnot json\n\u{feff}{LIST_CHANGED}\n{{\"jsonrpc\":\"2.0\",\"id\":{{}}}}\n  \n{LIST_CHANGED}"
    );
    let mut wire = wire_over(&output, &shared);
    for _ in 0..2 {
        let message = wire.receive().await.expect("a message");
        assert_eq!(method_of(&message), "notifications/tools/list_changed");
    }
    // The child exits once its input is closed: its last line has no newline, and counts.
    wire.close().await.expect("closed");
    let message = wire.receive().await.expect("the last line");
    assert_eq!(method_of(&message), "notifications/tools/list_changed");
    assert!(wire.receive().await.is_none(), "the output ended");
}

#[tokio::test]
async fn a_line_over_the_limit_is_dropped_and_the_next_one_read() {
    let shared = shared();
    let long =
        format!("{{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":\"{}\"}}", "a".repeat(300));
    let mut wire = wire_over(&format!("{long}\n{LIST_CHANGED}\n"), &shared);
    wire.max_line = 100;
    let message = wire.receive().await.expect("a message");
    assert_eq!(method_of(&message), "notifications/tools/list_changed");
    wire.close().await.expect("closed");
}

#[tokio::test]
async fn a_read_cancelled_mid_line_resumes_it() {
    let shared = shared();
    // The child writes half a line, waits for a line on its input, then writes the rest.
    let mut command = tokio::process::Command::new("sh");
    command.args([
        "-c",
        r#"printf %s '{"jsonrpc":"2.0",'; read -r _; printf '%s\n' '"method":"notifications/tools/list_changed"}'; cat >/dev/null"#,
    ]);
    let mut wrapped = CommandWrap::from(command);
    wrapped.command_mut().stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
    let mut wire = ChildWire::new(wrapped.spawn().expect("spawn sh"), shared).expect("piped");
    let first = tokio::time::timeout(Duration::from_millis(200), wire.receive()).await;
    assert!(first.is_err(), "half a line is no message yet");
    let ping = mcp::ClientJsonRpcMessage::notification(
        mcp::ClientNotification::InitializedNotification(mcp::InitializedNotification::default()),
    );
    wire.send(ping).await.expect("written");
    let message = wire.receive().await.expect("the whole line");
    assert_eq!(method_of(&message), "notifications/tools/list_changed");
    wire.close().await.expect("closed");
}

#[tokio::test]
async fn an_answer_wanted_raw_is_kept_as_written_and_rmcp_gets_an_empty_result() {
    let shared = shared();
    let slot = Arc::new(crate::raw::RawSlot::default());
    let (registration, _in_flight) = shared.calls.prepare(None, None, Some(slot.clone()));
    let id = mcp::NumberOrString::Number(3);
    shared.calls.enter(id.clone(), mcp::ProgressToken(id.clone()), &registration);
    let result = r#"{"content":[{"type":"text","text":"caf\u00e9"}],"isError":true}"#;
    let other = r#"{"jsonrpc":"2.0","id":4,"result":{"content":[]}}"#;
    let output = format!("{other}\n{{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{result}}}\n");
    let mut wire = wire_over(&output, &shared);
    match wire.receive().await.expect("a message") {
        mcp::JsonRpcMessage::Response(response) => {
            assert_eq!(response.id, mcp::NumberOrString::Number(4));
            assert!(
                matches!(response.result, mcp::ServerResult::CallToolResult(_)),
                "not wanted raw: parsed"
            );
        }
        other => panic!("expected a response, got {other:?}"),
    }
    assert!(slot.take().is_none());
    match wire.receive().await.expect("a message") {
        mcp::JsonRpcMessage::Response(response) => {
            assert_eq!(response.id, id);
            assert!(matches!(response.result, mcp::ServerResult::EmptyResult(_)));
        }
        other => panic!("expected a response, got {other:?}"),
    }
    let raw = slot.take().expect("kept");
    assert_eq!(raw.json(), result);
    assert!(raw.is_error());
    wire.close().await.expect("closed");
}

#[tokio::test]
async fn closing_ends_a_child_that_exits_when_its_input_closes() {
    let shared = shared();
    let mut wire = wire_over("", &shared);
    tokio::time::timeout(Duration::from_secs(2), wire.close())
        .await
        .expect("no SIGTERM needed")
        .expect("closed");
    let line = mcp::ClientJsonRpcMessage::notification(
        mcp::ClientNotification::InitializedNotification(mcp::InitializedNotification::default()),
    );
    assert!(wire.send(line).await.is_err(), "nothing is written after close");
}

#[tokio::test]
async fn a_child_that_keeps_running_after_its_input_closes_gets_sigterm() {
    let shared = shared();
    // It ignores its closed input, and says so when SIGTERM comes.
    let script = format!(
        "trap 'printf \"%s\\n\" '\\''{LIST_CHANGED}'\\''; exit 0' TERM; exec 0<&-; while :; do sleep 0.05; done"
    );
    let mut command = tokio::process::Command::new("sh");
    command.args(["-c", &script]);
    let mut wrapped = CommandWrap::from(command);
    wrapped.command_mut().stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
    let mut wire = ChildWire::new(wrapped.spawn().expect("spawn sh"), shared).expect("piped");
    wire.close().await.expect("closed");
    let message = wire.receive().await.expect("its last words");
    assert_eq!(method_of(&message), "notifications/tools/list_changed");
}

/// A child that runs `script` with its stdout piped.
fn wire_running(script: &str, shared: &Arc<Shared>) -> ChildWire {
    let mut command = tokio::process::Command::new("sh");
    command.args(["-c", script]);
    let mut wrapped = CommandWrap::from(command);
    wrapped.wrap(ProcessGroup::leader());
    wrapped.command_mut().stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
    ChildWire::new(wrapped.spawn().expect("spawn sh"), shared.clone()).expect("piped")
}

#[tokio::test]
async fn how_a_child_whose_output_ended_exited_is_noted() {
    let shared = shared();
    let mut wire = wire_running("exit 3", &shared);
    let note = wire.exit_note();
    assert!(wire.receive().await.is_none(), "the output ended");
    assert_eq!(*note.borrow(), Some(ExitReason::Status(3)));

    let mut killed = wire_running("kill -9 $$", &shared);
    let note = killed.exit_note();
    assert!(killed.receive().await.is_none());
    assert_eq!(*note.borrow(), Some(ExitReason::Signal(9)));
    assert_eq!(ExitReason::Signal(9).to_string(), "on signal 9 (SIGKILL)");
}

#[tokio::test]
async fn a_child_that_closes_its_output_and_runs_on_is_noted_as_nothing() {
    let shared = shared();
    let mut wire = wire_running("exec 1>&-; sleep 5", &shared);
    let note = wire.exit_note();
    assert!(wire.receive().await.is_none(), "the output ended");
    assert_eq!(*note.borrow(), None, "it has not exited");
    drop(wire); // kills it
}
