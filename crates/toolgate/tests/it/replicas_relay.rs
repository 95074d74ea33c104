//! Two replicas sharing state on a real Redis (`[state] backend`), behind HAProxy round
//! robin or reached one by one: what reaches the wrong replica is relayed to the right one. A
//! client's answer to a question the other replica asked completes the call that asked it; a
//! resource update and a `list_changed` caused on one replica reach the client whose GET
//! stream is open on the other. With Redis stopped, every request still answers at once (an
//! answer on the wrong replica gets 409 again), and when it is back, relaying works again.

use std::time::Duration;

use serde_json::{Value, json};
use toolgate_testkit::redis::RedisServer;

use crate::http_front::{EventReader, RawSession};
use crate::replicas::{Replicas, SHARED_KEY, python, run_sdk_with};
use crate::support::toml_str;

/// How long anything here may take when it works; a call that waited for a lost answer
/// would take the SDK's whole timeout (more than this).
const IN_TIME: Duration = Duration::from_secs(10);

/// The `[state]` of replicas that share `redis`.
fn shared_state(redis: &RedisServer) -> String {
    format!(
        "\n[state]\nbackend = {}\nshared_key = {}\n",
        toml_str(&redis.url()),
        toml_str(SHARED_KEY)
    )
}

/// Ten calls of a tool that elicits, from the Python SDK through the load balancer: round
/// robin sends about half of the answers to the replica that did not ask, and every call
/// completes with the client's answer, none waiting for the SDK's timeout.
#[tokio::test]
async fn replicas_relay_every_answer_to_the_replica_that_asked() {
    let redis = RedisServer::start().await;
    let replicas = Replicas::start_with(&shared_state(&redis)).await;
    let steps: Vec<Value> = (0..10)
        .map(|i| {
            json!({"op": "call_tool", "name": "fx__test_elicitation",
                   "arguments": {"message": format!("who are you? ({i})")}})
        })
        .collect();
    let options = ["--mode", "legacy", "--timeout", "30", "--answer-input"];
    let report = run_sdk_with(python(), &options, &Value::Array(steps), &replicas.url()).await;
    assert_eq!(report["protocolVersion"], "2025-11-25", "{report}");
    assert_eq!(report["asked"].as_array().map(Vec::len), Some(10), "{report}");
    for step in report["steps"].as_array().expect("steps") {
        assert_eq!(step["ok"], true, "{step}");
        let text = step["result"]["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.contains("ada"), "the client's answer: {step}");
        let ms = step["ms"].as_f64().expect("its time");
        assert!(ms < IN_TIME.as_millis() as f64, "no call waits for a lost answer: {step}");
    }
    let (one, two) = (replicas.calls(0), replicas.calls(1));
    assert!(!one.is_empty() && !two.is_empty(), "both replicas asked: {one:?} {two:?}");
    assert_eq!(one.len() + two.len(), 10);
}

/// A session opened on replica A, its GET stream open on replica B (both reached directly),
/// following `test://watched-resource` on A.
struct Split {
    on_a: RawSession,
    stream: EventReader,
}

const WATCHED: &str = "test://watched-resource";

impl Split {
    async fn open(replicas: &Replicas) -> Split {
        let (a, b) = (&replicas.replicas[0], &replicas.replicas[1]);
        let on_a = RawSession::open_with(&a.url, json!({"elicitation": {"form": {}}})).await;
        let subscribe = json!({
            "jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": WATCHED}
        });
        let (status, _, body) = on_a.post(subscribe).await;
        assert_eq!(status, 200, "{body}");
        let on_b = RawSession {
            http: reqwest::Client::new(),
            url: b.url.clone(),
            session: on_a.session.clone(),
        };
        // The GET answers once B listens for what A relays.
        let stream = EventReader::new(on_b.watch().await);
        Split { on_a, stream }
    }

    /// Calls `tool` on replica A: its result's text (at once, or the test fails).
    async fn call_on_a(&self, tool: &str, arguments: Value) -> String {
        let call = json!({
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}
        });
        let (status, _, body) =
            tokio::time::timeout(IN_TIME, self.on_a.post(call)).await.expect("answered at once");
        assert_eq!(status, 200, "{body}");
        let answer: Value = serde_json::from_str(&body).expect("a JSON answer");
        answer["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned()
    }

    /// Touches the watched resource on A: the update reaches the stream on B.
    async fn update_reaches_b(&mut self) {
        let touched = self.call_on_a("fx__touch_resource", json!({"uri": WATCHED})).await;
        assert!(touched.starts_with("touched"), "{touched}");
        let message = self.next().await;
        assert_eq!(message["method"], "notifications/resources/updated", "{message}");
        assert_eq!(message["params"]["uri"], WATCHED);
    }

    /// The next message on B's stream.
    async fn next(&mut self) -> Value {
        tokio::time::timeout(IN_TIME, self.stream.next())
            .await
            .expect("a message on B's stream in time")
            .expect("B's stream goes on")
    }
}

#[tokio::test]
async fn replicas_relay_notifications_to_the_stream_on_the_other_replica() {
    let redis = RedisServer::start().await;
    let replicas = Replicas::start_with(&shared_state(&redis)).await;
    let mut split = Split::open(&replicas).await;

    // A's subscription, A's upstream's update: to the stream on B.
    split.update_reaches_b().await;
    // A's upstream's tools change: A's inventory, and B tells its sessions.
    let toggled = split.call_on_a("fx__toggle_tool", json!({"enabled": true})).await;
    assert_eq!(toggled, "dynamic_tool enabled");
    let message = split.next().await;
    assert_eq!(message["method"], "notifications/tools/list_changed", "{message}");
}

#[tokio::test]
async fn replicas_relay_without_redis_answers_at_once_and_relays_again_when_it_is_back() {
    let mut redis = RedisServer::start().await;
    let replicas = Replicas::start_with(&shared_state(&redis)).await;
    let (a, b) = (&replicas.replicas[0], &replicas.replicas[1]);
    let mut split = Split::open(&replicas).await;
    split.update_reaches_b().await;

    redis.stop().await;
    // Every request still answers at once, with or without something to relay.
    let echoed = split.call_on_a("fx__echo", json!({"text": "still here"})).await;
    assert_eq!(echoed, "still here");
    let touched = split.call_on_a("fx__touch_resource", json!({"uri": WATCHED})).await;
    assert!(touched.starts_with("touched"), "{touched}");
    a.wait_for_log(&["the relay between replicas cannot use the bus"]).await;
    // An answer to A's question POSTed to B: 409 at once, as without shared state.
    let on_b = RawSession {
        http: reqwest::Client::new(),
        url: b.url.clone(),
        session: split.on_a.session.clone(),
    };
    let call = json!({
        "jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "fx__test_elicitation", "arguments": {"message": "who are you?"}}
    });
    let mut asking = EventReader::new(split.on_a.send(call).await);
    let question = tokio::time::timeout(IN_TIME, asking.next())
        .await
        .expect("the question in time")
        .expect("on the call's stream");
    assert_eq!(question["method"], "elicitation/create", "{question}");
    let answer = json!({
        "jsonrpc": "2.0", "id": question["id"],
        "result": {"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}
    });
    let (status, _, body) =
        tokio::time::timeout(IN_TIME, on_b.post(answer.clone())).await.expect("at once");
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("the bus between replicas is down"), "{body}");
    let (status, _, body) = split.on_a.post(answer).await;
    assert_eq!(status, 202, "{body}");
    let result = tokio::time::timeout(IN_TIME, asking.next()).await.expect("in time").expect("it");
    assert!(result["result"]["content"][0]["text"].as_str().is_some_and(|t| t.contains("ada")));

    // Back: B listens again by itself, and what A relays reaches the same stream.
    redis.restart().await;
    b.wait_for_log(&["the message bus is connected again"]).await;
    split.update_reaches_b().await;
    a.wait_for_log(&["the relay between replicas works again"]).await;
}
