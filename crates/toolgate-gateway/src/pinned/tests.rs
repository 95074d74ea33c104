//! Two gateways in one process sharing one memory state, as two replicas share Redis: "a"
//! runs the fixture server, pinned to it; "b" reaches it through the state.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::mpsc;
use toolgate_config::{InProcessConfig, ServerConfig, TransportConfig};
use toolgate_core::mcp;
use toolgate_intercept::{CallContext, Pipeline, Principal};
use toolgate_state::SharedState;
use toolgate_testkit::{Fixture, FixtureEvent, FixtureOptions};
use toolgate_upstream::{CallOptions, InProcessServer, StartupWait};

use super::wire::{self, ChunkError};
use super::{Pins, Timing};
use crate::Gateway;

const TIMING: Timing = Timing {
    heartbeat: Duration::from_millis(200),
    alive_ttl: Duration::from_millis(800),
    offer_ttl: Duration::from_secs(6),
    poll: Duration::from_millis(100),
    answer_ttl: Duration::from_secs(10),
};

fn server() -> ServerConfig {
    ServerConfig {
        timeout: Duration::from_secs(30),
        restart_wait: Duration::ZERO,
        replica: Some("a".to_owned()),
        ..ServerConfig::new(
            "fx",
            TransportConfig::InProcess(InProcessConfig { origin: "test".into() }),
        )
    }
}

/// The fixture served over the pipe the upstream layer opens.
struct Served(Arc<FixtureOptions>);

impl InProcessServer for Served {
    fn serve(&self, stream: tokio::io::DuplexStream) {
        let fixture = Fixture::new(self.0.clone());
        tokio::spawn(async move {
            if let Ok(service) = rmcp::ServiceExt::serve(fixture, stream).await {
                let _ = service.waiting().await;
            }
        });
    }
}

async fn gateway(in_process: Vec<crate::InProcess>) -> Arc<Gateway> {
    let recorder = crate::Recorder::new(toolgate_audit::EventBus::new(), Vec::new());
    Gateway::start_with(&[], in_process, StartupWait::All, Pipeline::default(), recorder, None)
        .await
}

/// Replica "a": the gateway running the fixture, and its pins (hosting it).
async fn replica_a(
    state: &SharedState,
) -> (Arc<Gateway>, Pins, mpsc::UnboundedReceiver<FixtureEvent>) {
    let (events, seen) = mpsc::unbounded_channel();
    let options = Arc::new(FixtureOptions { events: Some(events), ..FixtureOptions::default() });
    let served: Arc<dyn InProcessServer> = Arc::new(Served(options));
    let pins = Pins::new(&[server()], Some("a"), Some(state.clone()), TIMING);
    assert_eq!(pins.local_servers().len(), 1, "a runs the server pinned to it");
    assert!(pins.remote_servers().is_empty());
    let gateway = gateway(vec![(server(), served)]).await;
    pins.attach(&gateway);
    (gateway, pins, seen)
}

/// Replica "b": the gateway reaching the fixture on "a".
async fn replica_b(state: &SharedState) -> (Arc<Gateway>, Pins) {
    let pins = Pins::new(&[server()], Some("b"), Some(state.clone()), TIMING);
    assert!(pins.local_servers().is_empty(), "b does not start the server pinned to a");
    let gateway = gateway(pins.remote_servers()).await;
    pins.attach(&gateway);
    (gateway, pins)
}

fn ctx() -> CallContext {
    CallContext::new(Principal::new("test", "alice"))
}

fn call(name: &str, arguments: serde_json::Value) -> mcp::CallToolRequestParams {
    let arguments = arguments.as_object().cloned().unwrap_or_default();
    mcp::CallToolRequestParams::new(format!("fx__{name}")).with_arguments(arguments)
}

async fn run(
    gateway: &Gateway,
    name: &str,
    arguments: serde_json::Value,
) -> Result<mcp::CallToolResult, crate::GatewayError> {
    gateway.call_tool(call(name, arguments), &CallOptions::default(), &mut ctx()).await
}

fn text(result: &mcp::CallToolResult) -> String {
    result.content.iter().filter_map(|c| c.as_text()).map(|t| t.text.clone()).collect()
}

/// Waits (on the paused clock) until `check` holds.
async fn until(what: &str, mut check: impl AsyncFnMut() -> bool) {
    for _ in 0..600 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("never: {what}");
}

async fn listed(gateway: &Gateway) -> Vec<String> {
    gateway.inventory().tools().iter().map(|t| t.name.to_string()).collect()
}

#[tokio::test(start_paused = true)]
async fn a_server_pinned_to_another_replica_is_listed_and_called_through_the_state() {
    let state = SharedState::memory();
    let (b, _b_pins) = replica_b(&state).await;
    let (a, _a_pins, _seen) = replica_a(&state).await;
    // b started before a published anything: it connects when a does, without waiting out
    // its backoff.
    until("b lists a's tools", async || listed(&b).await.contains(&"fx__echo".to_owned())).await;
    assert_eq!(listed(&b).await, listed(&a).await, "b lists what a lists");

    let result = run(&b, "echo", json!({"text": "hi"}));
    let result = result.await.expect("answered");
    assert_eq!(text(&result), "hi");

    // An error the server answers comes back as it was.
    let failed = run(&b, "fail", json!({"message": "no"}));
    let failed = failed.await.expect("answered");
    assert_eq!(failed.is_error, Some(true));
    assert!(text(&failed).contains("no"), "{failed:?}");

    // An answer larger than one key of the state comes back whole, in chunks.
    let large = run(&b, "large", json!({"kb": 1500}));
    let large = large.await.expect("answered");
    assert!(text(&large).len() >= 1500 * 1024, "{} bytes", text(&large).len());

    // Nothing is left behind in the state but the alive key and the offer.
    let left = state.scan("pinned/", 100).await.expect("scanned");
    let mut keys: Vec<&str> = left.iter().map(|(key, _)| key.as_str()).collect();
    keys.retain(|key| !key.starts_with("pinned/fx/offer"));
    assert_eq!(keys, ["pinned/fx/alive"]);
}

#[tokio::test(start_paused = true)]
async fn a_change_of_the_servers_tools_reaches_the_other_replica() {
    let state = SharedState::memory();
    let (a, _a_pins, _seen) = replica_a(&state).await;
    let (b, _b_pins) = replica_b(&state).await;
    until("b lists a's tools", async || !listed(&b).await.is_empty()).await;
    assert!(!listed(&b).await.contains(&"fx__dynamic_tool".to_owned()));
    let toggled = run(&b, "toggle_tool", json!({"enabled": true}));
    assert_eq!(text(&toggled.await.expect("answered")), "dynamic_tool enabled");
    until("a lists the new tool", async || {
        listed(&a).await.contains(&"fx__dynamic_tool".to_owned())
    })
    .await;
    until("b lists the new tool", async || {
        listed(&b).await.contains(&"fx__dynamic_tool".to_owned())
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_call_given_up_on_is_cancelled_on_the_replica_running_it() {
    let state = SharedState::memory();
    let (_a, _a_pins, mut seen) = replica_a(&state).await;
    let (b, _b_pins) = replica_b(&state).await;
    until("b lists a's tools", async || !listed(&b).await.is_empty()).await;
    let cancel = tokio_util::sync::CancellationToken::new();
    let options = CallOptions { cancel: cancel.clone(), ..CallOptions::default() };
    let slow = call("slow", json!({"steps": 100, "step_ms": 100}));
    let b2 = b.clone();
    let running = tokio::spawn(async move { b2.call_tool(slow, &options, &mut ctx()).await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    cancel.cancel();
    let _ = running.await.expect("the call ends");
    loop {
        match seen.recv().await.expect("the fixture reports") {
            FixtureEvent::SlowCancelled { completed, .. } => {
                assert!(completed < 100, "cancelled after {completed} steps");
                break;
            }
            FixtureEvent::SlowCompleted { .. } => panic!("the call ran to its end on a"),
            _ => {}
        }
    }
}

#[tokio::test(start_paused = true)]
async fn when_the_running_replica_stops_calls_fail_at_once_and_work_again_when_it_is_back() {
    let state = SharedState::memory();
    let (_a, a_pins, _seen) = replica_a(&state).await;
    let (b, _b_pins) = replica_b(&state).await;
    until("b lists a's tools", async || !listed(&b).await.is_empty()).await;

    // A call in flight when a stops running the server fails with an error saying so, long
    // before its timeout (the slow call would take 100 s).
    let b2 = b.clone();
    let slow = json!({"steps": 1000, "step_ms": 100});
    let running = tokio::spawn(async move { run(&b2, "slow", slow).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = tokio::time::Instant::now();
    drop(a_pins);
    let failed = running.await.expect("the call ends").expect("a tool error");
    assert_eq!(failed.is_error, Some(true));
    assert!(text(&failed).contains("stopped while this request was in flight"), "{failed:?}");
    assert!(started.elapsed() < Duration::from_secs(2), "failed after {:?}", started.elapsed());

    // While a is gone, b keeps listing its tools (a rolling restart does not make them come
    // and go), and a call fails at once, naming the replica to wait for.
    let listed_before = listed(&b).await;
    tokio::time::sleep(TIMING.alive_ttl * 2).await;
    assert_eq!(listed(&b).await, listed_before);
    let started = tokio::time::Instant::now();
    let failed = run(&b, "echo", json!({"text": "x"})).await.expect("a tool error");
    assert!(
        text(&failed).contains("fx is pinned to replica a, which is not running it"),
        "{failed:?}"
    );
    assert_eq!(started.elapsed(), Duration::ZERO, "no waiting");

    // a is back, and calls work.
    let (_a, _a_pins, _seen) = replica_a(&state).await;
    until("b calls a again", async || {
        run(&b, "echo", json!({"text": "back"})).await.is_ok_and(|r| text(&r) == "back")
    })
    .await;
}

/// What a replica that runs `fx` writes, written by the test, which then stops renewing it,
/// as a replica killed with SIGKILL does.
async fn publish_and_die(state: &SharedState) {
    let tool = mcp::Tool::new("echo", "echoes", Arc::new(serde_json::Map::new()));
    let capabilities = mcp::ServerCapabilities::builder().enable_tools().build();
    let offer = wire::Offer { capabilities, tools: vec![tool], ..wire::Offer::default() };
    let (bytes, digest) = offer.encode();
    wire::put_chunked(state, &wire::offer_key("fx"), &bytes, TIMING.offer_ttl).await.expect("put");
    let alive = wire::Alive { replica: "a".into(), nonce: "n".into(), digest };
    let alive = serde_json::to_vec(&alive).expect("json");
    state.put(&wire::alive_key("fx"), &alive, TIMING.alive_ttl).await.expect("put");
}

#[tokio::test(start_paused = true)]
async fn a_replica_killed_mid_call_fails_the_call_when_its_key_expires() {
    let state = SharedState::memory();
    publish_and_die(&state).await;
    let (b, _b_pins) = replica_b(&state).await;
    until("b lists the tool", async || listed(&b).await == ["fx__echo"]).await;
    let started = tokio::time::Instant::now();
    let failed = run(&b, "echo", json!({"text": "x"})).await.expect("a tool error");
    assert!(text(&failed).contains("replica a, which runs fx, stopped"), "{failed:?}");
    let waited = started.elapsed();
    assert!(waited <= TIMING.alive_ttl + TIMING.poll * 3, "failed after {waited:?}");
    // Nothing of the request is left in the state.
    let left = state.scan("pinned/fx/request", 10).await.expect("scanned");
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test]
async fn values_larger_than_one_key_travel_in_chunks_and_a_torn_one_is_an_error() {
    let state = SharedState::memory();
    let ttl = Duration::from_secs(60);
    let big: Vec<u8> = (0..3 * toolgate_state::MAX_VALUE_BYTES).map(|i| (i % 251) as u8).collect();
    wire::put_chunked(&state, "k", &big, ttl).await.expect("written");
    assert_eq!(wire::get_chunked(&state, "k").await.expect("read"), Some(big.clone()));
    assert_eq!(wire::take_chunked(&state, "k").await.expect("taken"), Some(big.clone()));
    assert_eq!(wire::take_chunked(&state, "k").await.expect("taken"), None, "taken once");
    assert!(state.scan("k", 10).await.expect("scanned").is_empty(), "no chunk is left");

    wire::put_chunked(&state, "small", b"x", ttl).await.expect("written");
    assert_eq!(wire::take_chunked(&state, "small").await.expect("taken"), Some(b"x".to_vec()));

    wire::put_chunked(&state, "torn", &big, ttl).await.expect("written");
    state.delete("torn/1").await.expect("deleted");
    assert!(matches!(wire::get_chunked(&state, "torn").await, Err(ChunkError::Torn)));
    state.put("odd", b"?", ttl).await.expect("written");
    assert!(matches!(wire::get_chunked(&state, "odd").await, Err(ChunkError::Torn)));
    state.put("many", b"#99", ttl).await.expect("written");
    assert!(matches!(wire::get_chunked(&state, "many").await, Err(ChunkError::Torn)));

    let huge = vec![0u8; (wire::MAX_CHUNKS + 1) * toolgate_state::MAX_VALUE_BYTES];
    assert!(matches!(
        wire::put_chunked(&state, "huge", &huge, ttl).await,
        Err(ChunkError::TooLarge { .. })
    ));
    assert_eq!(state.get("huge").await.expect("read"), None, "nothing of it is written");
}

#[test]
fn ids_from_the_bus_are_checked_before_they_name_a_key() {
    assert!(wire::is_id(&wire::new_id()));
    for bad in ["", "../alive", "0123456789abcdef0123456789abcdeg", &"a".repeat(33)] {
        assert!(!wire::is_id(bad), "{bad}");
    }
}

#[test]
fn this_replicas_marks_are_taken_out_of_relayed_params() {
    let mut meta = serde_json::Map::new();
    meta.insert("progressToken".into(), json!(7));
    meta.insert(toolgate_scripts::calls::CALLER_META.into(), json!({"principal": "alice"}));
    meta.insert("trace".into(), json!("kept"));
    let params = json!({"name": "echo", "arguments": {}, "_meta": meta});
    let relayed = super::remote::relayed_params(&params);
    assert_eq!(relayed["_meta"], json!({"trace": "kept"}));
    let params = json!({"name": "echo", "_meta": {"progressToken": 1}});
    assert!(super::remote::relayed_params(&params).get("_meta").is_none());
}

#[test]
fn servers_divide_between_the_replicas() {
    let state = SharedState::memory();
    let mut other = server();
    other.name = "plain".into();
    other.replica = None;
    let mut off = server();
    off.name = "off".into();
    off.enabled = false;
    let servers = [server(), other, off];
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let a = Pins::new(&servers, Some("a"), Some(state.clone()), TIMING);
        let names =
            |pins: &Pins| pins.local_servers().iter().map(|s| s.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&a), ["fx", "plain"]);
        let b = Pins::new(&servers, Some("b"), Some(state.clone()), TIMING);
        assert_eq!(names(&b), ["plain"]);
        let remote = b.remote_servers();
        assert_eq!(remote.len(), 1);
        assert_eq!(remote[0].0.name, "fx");
        assert!(!remote[0].0.required, "required holds on the replica that runs it");
        // Without shared state, every server runs here.
        let alone = Pins::new(&servers, Some("b"), None, TIMING);
        assert_eq!(names(&alone), ["fx", "plain"]);
    });
}
