//! The relay between two "replicas" in one process, over one in-memory state (whose bus
//! delivers to every subscriber of the process): answers reach the copy that asked, a
//! notification nobody reads here reaches the copy whose stream is read, and what waits for
//! the bus is bounded. A bus that cannot be reached makes an answer fail at once.

#![allow(deprecated)] // roots are deprecated in 2026-07-28 (SEP-2577)

use std::time::Duration;

use bytes::Bytes;
use toolgate_gateway::link::{Notify as _, RequestLink as _};
use toolgate_intercept::Principal;
use toolgate_state::MAX_PAYLOAD_BYTES;

use super::*;
use crate::http::client::ClientKey;
use crate::http::outbox::Outbox;
use crate::http::seal::SessionSeal;
use crate::http::session::{SessionRequest, StreamRef};
use crate::http::sessions::{Bounds, Lookup};

const KEY: &[u8] = b"the key both replicas share, 32+ bytes";

fn params() -> mcp::InitializeRequestParams {
    serde_json::from_value(serde_json::json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {"roots": {}},
        "clientInfo": {"name": "t", "version": "1"}
    }))
    .expect("params")
}

/// A replica's sessions, relayed by `relay`.
fn replica(relay: &Arc<Relay>) -> HttpSessions {
    let bounds = Bounds { most: 10, most_per_client: 10, idle: Duration::from_secs(60), queue: 16 };
    HttpSessions::sealed(bounds, Some(SessionSeal::new(KEY))).relayed(Some(relay.clone()))
}

fn two_relays(state: &SharedState) -> (Arc<Relay>, Arc<Relay>) {
    let shutdown = CancellationToken::new();
    (Relay::start(state.clone(), shutdown.clone()), Relay::start(state.clone(), shutdown))
}

/// A session opened on `a`, and its copy on `b`.
fn one_session_on_both(a: &HttpSessions, b: &HttpSessions) -> (Arc<HttpSession>, Arc<HttpSession>) {
    let owner = Principal::anonymous();
    let version = mcp::ProtocolVersion::V_2025_11_25;
    let on_a = a.open(owner.clone(), ClientKey::Loopback, &params(), version).expect("opened");
    let Lookup::Reopened(on_b) = b.find(&on_a.id, &owner, ClientKey::Loopback) else {
        panic!("the sealed id opens on the other replica")
    };
    assert_eq!(on_a.relay_name(), on_b.relay_name());
    assert!(on_a.relay_name().is_some());
    (on_a, on_b)
}

fn roots() -> mcp::ServerRequest {
    mcp::ServerRequest::ListRootsRequest(mcp::ListRootsRequest::default())
}

fn updated(uri: &str) -> mcp::ServerNotification {
    mcp::ServerNotification::ResourceUpdatedNotification(mcp::ResourceUpdatedNotification::new(
        mcp::ResourceUpdatedNotificationParam::new(uri),
    ))
}

fn notify(session: &HttpSession, notification: mcp::ServerNotification) {
    let Some(StreamRef::Standalone(standalone)) = session.stream(0) else { panic!("standalone") };
    drop(standalone.notify(notification));
}

/// The next event a stream reader gets that is a message (not the priming event).
async fn next_message(reader: &mut mpsc::Receiver<Bytes>) -> serde_json::Value {
    loop {
        let event = tokio::time::timeout(Duration::from_secs(5), reader.recv())
            .await
            .expect("an event in time")
            .expect("the stream goes on");
        let text = std::str::from_utf8(&event).expect("UTF-8");
        let data = text.lines().find_map(|line| line.strip_prefix("data: ")).unwrap_or("");
        if !data.trim().is_empty() {
            return serde_json::from_str(data).expect("JSON");
        }
    }
}

#[tokio::test]
async fn an_answer_posted_to_the_other_replica_reaches_the_copy_that_asked() {
    let state = SharedState::memory();
    let (a, b) = two_relays(&state);
    let (sessions_a, sessions_b) = (replica(&a), replica(&b));
    let (on_a, on_b) = one_session_on_both(&sessions_a, &sessions_b);
    let mut answers = state.subscribe(wire::ANSWERS).await.expect("listening");

    let (outbox, mut sent) = Outbox::new();
    let asking = SessionRequest { session: on_a.clone(), outbox };
    let answer = asking.ask(roots());
    let question: serde_json::Value =
        serde_json::from_slice(&sent.recv().await.expect("the question").0).expect("JSON");
    let id: mcp::RequestId = serde_json::from_value(question["id"].clone()).expect("an id");
    assert!(on_b.asked_elsewhere(&id) && !on_a.asked_elsewhere(&id));
    assert!(on_a.asked_here(&id) && !on_b.asked_here(&id));
    assert!(!on_b.asked_elsewhere(&mcp::RequestId::String("1".into())), "never one of ours");

    // A root with a long URI: too large for the bus, it waits in a key.
    let uri = format!("file:///{}", "r".repeat(MAX_PAYLOAD_BYTES));
    let result: mcp::ClientResult =
        serde_json::from_value(serde_json::json!({"roots": [{"uri": uri}]})).expect("a result");
    assert!(matches!(result, mcp::ClientResult::ListRootsResult(_)), "{result:?}");
    b.answer(on_b.relay_name().expect("named"), &id, Ok(result)).await.expect("relayed");
    let payload = answers.recv().await.expect("published");
    let key = Envelope::unpack(&payload).and_then(|envelope| envelope.key).expect("in a key");
    // Replica B did not ask it: it leaves it (and its key) alone; A takes it.
    b.bus.deliver_answer(&sessions_b, &payload).await;
    assert!(state.get(&key).await.expect("memory").is_some(), "left for the asker");
    a.bus.deliver_answer(&sessions_a, &payload).await;
    let Ok(mcp::ClientResult::ListRootsResult(listed)) = answer.await else { panic!("answered") };
    assert_eq!(listed.roots[0].uri, uri);
    assert_eq!(state.get(&key).await.expect("memory"), None, "taken once");
}

#[tokio::test]
async fn a_notification_nobody_reads_here_reaches_the_copy_whose_stream_is_read() {
    let state = SharedState::memory();
    let (a, b) = two_relays(&state);
    let (sessions_a, sessions_b) = (replica(&a), replica(&b));
    let (on_a, on_b) = one_session_on_both(&sessions_a, &sessions_b);
    let mut reader = on_b.standalone().read();
    let reading = on_b.closed().child_token();
    b.follow(on_b.clone(), reading.clone()).await;

    // list_changed does not travel to one session (every replica tells its own of it).
    notify(&on_a, mcp::ServerNotification::ToolListChangedNotification(Default::default()));
    notify(&on_a, updated("test://one"));
    let got = next_message(&mut reader).await;
    assert_eq!(got["method"], "notifications/resources/updated", "{got}");
    assert_eq!(got["params"]["uri"], "test://one");

    // Read on A as well: it stays there.
    let mut on_a_reader = on_a.standalone().read();
    notify(&on_a, updated("test://read-on-a"));
    while next_message(&mut on_a_reader).await["params"]["uri"] != "test://read-on-a" {}
    drop(on_a_reader);
    notify(&on_a, updated("test://two"));
    assert_eq!(next_message(&mut reader).await["params"]["uri"], "test://two", "not the one read");

    // Once B's stream is no longer read, B stops listening.
    reading.cancel();
    let channel = wire::session_channel(on_b.relay_name().expect("named"));
    let mut watcher = state.subscribe(&channel).await.expect("listening");
    notify(&on_a, updated("test://three"));
    assert!(watcher.recv().await.is_some(), "published");
    tokio::task::yield_now().await;
    assert!(reader.try_recv().is_err(), "B did not deliver it");
}

#[tokio::test]
async fn notifications_waiting_for_the_bus_are_bounded() {
    // On this one thread, the publishing task cannot run before the test yields.
    let relay = Relay::start(SharedState::memory(), CancellationToken::new());
    let outlet = relay.outlet("s1.some-session");
    let message = mcp::ServerJsonRpcMessage::notification(updated("test://x"));
    for _ in 0..OUTGOING + 10 {
        outlet.send(&message);
    }
    assert_eq!(relay.bus.dropped.load(Ordering::Relaxed), 10);
}

#[tokio::test]
async fn a_bus_that_cannot_be_reached_fails_an_answer_at_once() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        listener.local_addr().expect("its address").port()
    };
    let config = toolgate_config::StateConfig {
        backend: toolgate_config::StateBackend::Redis(toolgate_config::Secret::new(format!(
            "redis://127.0.0.1:{port}"
        ))),
        shared_key: None,
        replica: None,
    };
    let state = SharedState::builder(&config)
        .timeout(Duration::from_millis(500))
        .connect()
        .await
        .expect("a warning, not an error");
    let relay = Relay::start(state, CancellationToken::new());
    let started = tokio::time::Instant::now();
    let answer = Ok(mcp::ClientResult::ListRootsResult(mcp::ListRootsResult::default()));
    let name = wire::session_name("s1.x");
    let failed = relay.answer(&name, &mcp::RequestId::Number(7), answer).await;
    assert!(matches!(failed, Err(Unrelayed::Bus(_))), "{failed:?}");
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    assert!(relay.bus.down.load(Ordering::Relaxed), "noted, for a warning once");
}
