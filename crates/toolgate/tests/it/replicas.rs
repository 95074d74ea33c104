//! Two `toolgate serve` replicas with the same config (the fixture over stdio in each) behind
//! HAProxy, round robin with no stickiness (`toolgate_testkit::haproxy`): with `[state]
//! shared_key`, one 2025-11-25 session of the official SDK clients is served by both, and goes
//! on when one replica is killed; without it, the other replica does not know the session. A
//! 2026-07-28 client needs neither. What stays on the replica that made it (a question to the
//! client, an answer's stream) fails at once when it reaches the other.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::process::Command;
use toolgate_testkit::haproxy::Haproxy;

use crate::deps;
use crate::http_front::{ACCEPT, EventReader, RawSession, initialize};
use crate::support::*;

/// The shared key of these tests' replicas (32 bytes or more, as `[state]` asks).
pub(crate) const SHARED_KEY: &str = "replicas-test-key-0123456789abcdefghij";

/// Two replicas of one config, and the load balancer in front of them.
pub(crate) struct Replicas {
    _config: ConfigDir,
    pub(crate) replicas: Vec<HttpGateway>,
    balancer: Haproxy,
}

impl Replicas {
    /// Two replicas, sealing session ids with [`SHARED_KEY`] when `shared_key`.
    async fn start(shared_key: bool) -> Replicas {
        let state = format!("\n[state]\nshared_key = {}\n", toml_str(SHARED_KEY));
        Replicas::start_with(if shared_key { &state } else { "" }).await
    }

    /// Two replicas of the fixture's config with `extra` at its end.
    pub(crate) async fn start_with(extra: &str) -> Replicas {
        let mut text = fixture_server("fx", "stdio", None);
        text.push_str(extra);
        let config = ConfigDir::new(&text);
        let path = config.path();
        let (one, two) = tokio::join!(HttpGateway::start(&path), HttpGateway::start(&path));
        let balancer = Haproxy::start(&[one.address(), two.address()]).await;
        Replicas { _config: config, replicas: vec![one, two], balancer }
    }

    /// The load balancer's `/mcp`.
    pub(crate) fn url(&self) -> String {
        format!("{}/mcp", self.balancer.url())
    }

    /// The session of each tool call replica `n` (0 or 1) has finished (`""` for none).
    pub(crate) fn calls(&self, n: usize) -> Vec<String> {
        finished_calls(&self.replicas[n])
    }
}

/// The session of each tool call `gateway` logged as finished (`""` for a call of none). The
/// session is read from the line as it is, not as JSON: the log's secret scrubber may have
/// taken a long run of digits in another field for a card number.
fn finished_calls(gateway: &HttpGateway) -> Vec<String> {
    gateway
        .log_lines()
        .iter()
        .filter(|line| line.contains(" tools/call/finished "))
        .map(|line| {
            let Some((_, rest)) = line.split_once("\"session\":\"") else { return String::new() };
            rest.split('"').next().unwrap_or_default().to_owned()
        })
        .collect()
}

/// `count` calls of `fx__echo` as client script steps, then a `ping`.
fn calls_script(count: usize) -> Value {
    let mut steps = vec![json!({"op": "info"}), json!({"op": "list_tools"})];
    steps.extend((0..count).map(|i| {
        json!({"op": "call_tool", "name": "fx__echo", "arguments": {"text": format!("call {i}")}})
    }));
    Value::Array(steps)
}

pub(crate) fn python() -> Command {
    let mut command = Command::new(deps::python());
    command.arg(deps::client_script("py_client.py"));
    command
}

fn node() -> Command {
    let mut command = Command::new(deps::node());
    command.arg(deps::client_script("ts_client.mjs")).env("TOOLGATE_TEST_NPM_DIR", deps::npm_dir());
    command
}

/// Runs an SDK client script against `url` in `mode`: its report.
async fn run_sdk(command: Command, mode: &str, script: &Value, url: &str) -> Value {
    run_sdk_with(command, &["--mode", mode, "--timeout", "60"], script, url).await
}

/// Runs an SDK client script against `url` with `options` (before `--script`): its report.
pub(crate) async fn run_sdk_with(
    mut command: Command,
    options: &[&str],
    script: &Value,
    url: &str,
) -> Value {
    command.args(options).arg("--script").arg(script.to_string());
    command.args(["http", url]).kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(180), command.output())
        .await
        .expect("the client finishes in time")
        .expect("run the SDK client");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
        panic!(
            "the client printed no report: {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    assert_eq!(report["connected"], true, "{report}");
    report
}

/// Every step of `report` succeeded, and each call echoed its text.
fn all_ok(report: &Value) {
    for step in report["steps"].as_array().expect("steps") {
        assert_eq!(step["ok"], true, "{step} in {report}");
        if step["op"] == "call_tool" {
            assert!(
                step["result"]["content"][0]["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("call "))
            );
        }
    }
}

/// One 2025-11-25 session of an SDK client through the load balancer: both replicas served
/// its calls, all of them in that one session, whose id is sealed.
async fn one_session_on_both(replicas: &Replicas, client: Command, calls: usize) {
    let report = run_sdk(client, "legacy", &calls_script(calls), &replicas.url()).await;
    assert_eq!(report["protocolVersion"], "2025-11-25", "{report}");
    all_ok(&report);
    let (one, two) = (replicas.calls(0), replicas.calls(1));
    assert!(!one.is_empty() && !two.is_empty(), "both replicas served calls: {one:?} {two:?}");
    assert_eq!(one.len() + two.len(), calls);
    let sessions: BTreeSet<&String> = one.iter().chain(&two).collect();
    assert_eq!(sessions.len(), 1, "one session: {sessions:?}");
    let session = sessions.first().expect("one");
    assert!(session.starts_with("s1."), "a sealed id: {session}");
}

#[tokio::test]
async fn replicas_serve_one_python_sdk_session_on_both() {
    let replicas = Replicas::start(true).await;
    one_session_on_both(&replicas, python(), 6).await;
}

#[tokio::test]
async fn replicas_serve_one_typescript_sdk_session_on_both() {
    let replicas = Replicas::start(true).await;
    one_session_on_both(&replicas, node(), 6).await;
}

/// 2026-07-28 requests carry their version and client in `_meta` and need no session: both
/// replicas serve them, with no shared key at all.
#[tokio::test]
async fn replicas_serve_2026_07_28_requests_on_both_without_a_key() {
    let replicas = Replicas::start(false).await;
    let script = json!([
        {"op": "list_tools"},
        {"op": "call_tool", "name": "fx__echo", "arguments": {"text": "call 0"}},
        {"op": "call_tool", "name": "fx__echo", "arguments": {"text": "call 1"}},
        {"op": "call_tool", "name": "fx__echo", "arguments": {"text": "call 2"}},
        {"op": "call_tool", "name": "fx__echo", "arguments": {"text": "call 3"}},
    ]);
    let report = run_sdk(python(), "2026-07-28", &script, &replicas.url()).await;
    assert_eq!(report["protocolVersion"], "2026-07-28", "{report}");
    all_ok(&report);
    let (one, two) = (replicas.calls(0), replicas.calls(1));
    assert!(!one.is_empty() && !two.is_empty(), "both served calls: {one:?} {two:?}");
    assert_eq!(one.len() + two.len(), 4);
    assert!(one.iter().chain(&two).all(String::is_empty), "no session: {one:?} {two:?}");
}

/// A replica killed (SIGKILL) in the middle of a session, while its client waits between
/// calls: the client's next calls go on in the same session on the other replica. HAProxy
/// retries a request whose connection the dead replica refuses on the other one, and its
/// health check takes the dead one out.
#[tokio::test]
async fn replicas_a_killed_replica_leaves_its_sessions_to_the_other() {
    let mut replicas = Replicas::start(true).await;
    let mut script = calls_script(4);
    let steps = script.as_array_mut().expect("steps");
    steps.push(json!({"op": "sleep", "ms": 5000}));
    steps.extend((4..8).map(|i| {
        json!({"op": "call_tool", "name": "fx__echo", "arguments": {"text": format!("call {i}")}})
    }));
    let url = replicas.url();
    let client = tokio::spawn(async move { run_sdk(python(), "legacy", &script, &url).await });

    // While the client waits after its fourth call, the first replica dies.
    let (mut one, mut two) = (replicas.replicas[0].log_watch(), replicas.replicas[1].log_watch());
    let four_calls = async {
        while replicas.calls(0).len() + replicas.calls(1).len() < 4 {
            tokio::select! {
                changed = one.changed() => changed.expect("the log is kept"),
                changed = two.changed() => changed.expect("the log is kept"),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), four_calls).await.expect("four calls finish");
    let before = replicas.calls(1).len();
    let dead = replicas.replicas.remove(0);
    assert!(!dead.kill().await.success(), "killed");

    let report = client.await.expect("the client ran");
    assert_eq!(report["protocolVersion"], "2025-11-25", "{report}");
    all_ok(&report);
    let survivor = replicas.calls(0);
    assert_eq!(survivor.len() - before, 4, "the survivor served the calls after the kill");
    let sessions: BTreeSet<&String> = survivor.iter().collect();
    assert_eq!(sessions.len(), 1, "all in one session: {sessions:?}");
    replicas.balancer.wait_down(1).await;
}

/// The same requests through the same load balancer, replicas without a shared key: the
/// replica that did not open the session does not know it (404), and the SDK's session fails
/// there. With the key, every request of the session is answered.
#[tokio::test]
async fn replicas_without_a_shared_key_lose_the_session_on_the_other() {
    async fn statuses(url: &str) -> Vec<u16> {
        let http = reqwest::Client::new();
        let opened = initialize(&http, url, json!({})).await;
        assert_eq!(opened.status().as_u16(), 200);
        let session = opened.headers()["mcp-session-id"].to_str().expect("ASCII").to_owned();
        let mut statuses = Vec::new();
        for i in 0..4 {
            let call = json!({
                "jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                "params": {"name": "fx__echo", "arguments": {"text": "hi"}}
            });
            let response = http
                .post(url)
                .header("content-type", "application/json")
                .header("accept", ACCEPT)
                .header("mcp-session-id", &session)
                .header("mcp-protocol-version", "2025-11-25")
                .body(call.to_string())
                .send()
                .await
                .expect("answered");
            statuses.push(response.status().as_u16());
        }
        statuses
    }

    let without = Replicas::start(false).await;
    let refused = statuses(&without.url()).await;
    assert!(refused.contains(&404) && refused.contains(&200), "{refused:?}");
    let report = run_sdk(python(), "legacy", &calls_script(4), &without.url()).await;
    let failed: Vec<&Value> =
        report["steps"].as_array().expect("steps").iter().filter(|s| s["ok"] != true).collect();
    assert!(!failed.is_empty(), "the SDK's session fails on the other replica: {report}");
    assert!(
        failed.iter().all(|s| s["error"]["message"].to_string().contains("no such session")),
        "{failed:?}"
    );

    let with = Replicas::start(true).await;
    assert_eq!(statuses(&with.url()).await, [200; 4]);
}

/// What stays on the replica that made it, reaching the other replica of a sealed session:
/// the client's answer to a question the first replica asked is refused at once (409, saying
/// why) instead of being taken for nothing, and a `Last-Event-ID` of the first replica's
/// answer stream gets 404 at once instead of an empty stream the SDKs would reconnect to for
/// ever; one of its standalone stream gets the second replica's. The call goes on where it
/// runs, and the answer sent there completes it.
#[tokio::test]
async fn replicas_an_answer_or_a_resumption_on_the_wrong_replica_fails_at_once() {
    let replicas = Replicas::start(true).await;
    let (a, b) = (&replicas.replicas[0], &replicas.replicas[1]);
    let on_a = RawSession::open_with(&a.url, json!({"elicitation": {"form": {}}})).await;
    let on_b = RawSession {
        http: reqwest::Client::new(),
        url: b.url.clone(),
        session: on_a.session.clone(),
    };
    let in_time = Duration::from_secs(10);

    let call = json!({
        "jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "fx__test_elicitation", "arguments": {"message": "who are you?"}}
    });
    let mut stream = EventReader::new(on_a.send(call).await);
    let (event_id, question) = tokio::time::timeout(Duration::from_secs(20), stream.next_with_id())
        .await
        .expect("the question comes")
        .expect("on the call's stream");
    assert_eq!(question["method"], "elicitation/create", "{question}");
    let event_id = event_id.expect("an event id");
    let (mark, _) = event_id.split_once(':').expect("a sealed session's event ids are marked");

    let answer = json!({
        "jsonrpc": "2.0", "id": question["id"],
        "result": {"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}
    });
    let (status, _, body) =
        tokio::time::timeout(in_time, on_b.post(answer.clone())).await.expect("at once");
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("another replica asked it"), "{body}");

    let resume = |last_event_id: String| {
        on_b.http
            .get(&on_b.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &on_b.session)
            .header("mcp-protocol-version", "2025-11-25")
            .header("last-event-id", last_event_id)
            .send()
    };
    let answer_stream =
        tokio::time::timeout(in_time, resume(event_id.clone())).await.expect("at once").unwrap();
    assert_eq!(answer_stream.status().as_u16(), 404);
    let body = answer_stream.text().await.expect("the body");
    assert!(body.contains("not on this replica"), "{body}");
    let standalone = tokio::time::timeout(in_time, resume(format!("{mark}:0/3")))
        .await
        .expect("at once")
        .unwrap();
    assert_eq!(standalone.status().as_u16(), 200);
    assert_eq!(standalone.headers()["content-type"], "text/event-stream");
    drop(standalone);

    let (status, _, body) = on_a.post(answer).await;
    assert_eq!(status, 202, "{body}");
    let result = tokio::time::timeout(Duration::from_secs(20), stream.next())
        .await
        .expect("the call's answer comes")
        .expect("on the same stream");
    assert_eq!(result["id"], 9, "{result}");
    assert!(result["result"]["content"][0]["text"].as_str().is_some_and(|t| t.contains("ada")));
}
