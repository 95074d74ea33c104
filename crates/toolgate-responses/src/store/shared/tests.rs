//! The shared-state backend on the state's memory backend (its clock paused where time
//! matters): ownership, expiry, the per-owner ring, chunks, deletion, and a state that cannot
//! be reached.

use std::time::Duration;

use serde_json::json;
use toolgate_state::{MAX_VALUE_BYTES, SharedState};

use super::{MAX_STORED_BYTES, digest};
use crate::state::State;
use crate::store::{Retention, Store};

fn now() -> i64 {
    crate::now() as i64
}

fn store(state: &SharedState, ttl: Duration, cap: u64) -> Store {
    Store::shared(state.clone()).with_retention(Retention { ttl, max_per_owner: cap })
}

const HOUR: Duration = Duration::from_secs(3600);

/// Every key the store wrote, without the state's own prefix.
async fn keys(state: &SharedState) -> Vec<String> {
    let mut keys: Vec<String> =
        state.scan("responses/", 100_000).await.unwrap().into_iter().map(|(k, _)| k).collect();
    keys.sort();
    keys
}

#[tokio::test]
async fn a_response_is_its_owners_only_and_deleted_once() {
    let state = SharedState::memory();
    let store = store(&state, HOUR, 100);
    let kept = State { listed: vec!["fs".into()], ..State::default() };
    let response = json!({ "id": "resp_1", "output": [] });
    store.put("resp_1", "user:alice", now(), &response, &kept).await.unwrap();
    let (read, conversation) = store.get("resp_1", "user:alice").await.unwrap().expect("hers");
    assert_eq!(read, response);
    assert_eq!(conversation, kept);
    // Another replica on the same state reads it.
    let other = Store::shared(state.clone());
    assert!(other.get("resp_1", "user:alice").await.unwrap().is_some(), "any replica's");
    assert!(store.get("resp_1", "user:bob").await.unwrap().is_none(), "not bob's");
    assert!(!store.delete("resp_1", "user:bob").await.unwrap(), "bob cannot delete it");
    assert!(store.get("resp_1", "user:alice").await.unwrap().is_some(), "still hers");
    // No principal's name, and no id a caller made up, reaches a key.
    for key in keys(&state).await {
        assert!(!key.contains("alice") && !key.contains("bob"), "{key}");
        assert!(key.starts_with(&format!("responses/{}/", digest("user:alice"))), "{key}");
    }
    assert!(other.delete("resp_1", "user:alice").await.unwrap());
    assert!(!store.delete("resp_1", "user:alice").await.unwrap(), "gone");
    assert!(store.get("resp_1", "user:alice").await.unwrap().is_none());
    assert_eq!(store.count("user:alice").await.unwrap(), 0);
    let left: Vec<String> =
        keys(&state).await.into_iter().filter(|k| k.contains("/h/") || k.contains("/c/")).collect();
    assert!(left.is_empty(), "nothing of it is left but its slot: {left:?}");
    for strange in ["", "../x", "resp_1/0", "resp 1", "r\nx", &"a".repeat(129)] {
        assert!(store.get_json(strange, "user:alice").await.unwrap().is_none(), "{strange:?}");
        assert!(!store.delete(strange, "user:alice").await.unwrap(), "{strange:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_response_expires_with_the_retention_ttl() {
    let state = SharedState::memory();
    let store = store(&state, HOUR, 100);
    let empty = json!({});
    store.put_json("resp_new", "o", now(), &empty, &empty).await.unwrap();
    // Made longer ago than the TTL: kept by nobody (the SQL backends prune it at once).
    store.put_json("resp_old", "o", now() - 7200, &empty, &empty).await.unwrap();
    assert!(store.get_json("resp_old", "o").await.unwrap().is_none());
    assert!(!store.delete("resp_old", "o").await.unwrap());
    assert_eq!(store.count("o").await.unwrap(), 1);
    tokio::time::advance(HOUR - Duration::from_secs(5)).await;
    assert!(store.get_json("resp_new", "o").await.unwrap().is_some(), "not yet");
    tokio::time::advance(Duration::from_secs(10)).await;
    assert!(store.get_json("resp_new", "o").await.unwrap().is_none(), "expired");
    assert_eq!(store.count("o").await.unwrap(), 0);
    // The slot outlives its response a little, then nothing is left.
    tokio::time::advance(Duration::from_secs(120)).await;
    let left: Vec<String> =
        keys(&state).await.into_iter().filter(|k| !k.ends_with("/seq")).collect();
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test(start_paused = true)]
async fn a_ttl_past_thirty_days_is_thirty_days() {
    let state = SharedState::memory();
    let store = store(&state, Duration::from_secs(365 * 86_400), 100);
    store.put_json("resp_1", "o", now(), &json!({}), &json!({})).await.unwrap();
    tokio::time::advance(toolgate_state::MAX_TTL - Duration::from_secs(60)).await;
    assert!(store.get_json("resp_1", "o").await.unwrap().is_some());
    tokio::time::advance(Duration::from_secs(120)).await;
    assert!(store.get_json("resp_1", "o").await.unwrap().is_none(), "the state's longest");
}

#[tokio::test]
async fn a_flood_keeps_each_owners_newest() {
    let state = SharedState::memory();
    let store = store(&state, HOUR, 50);
    for i in 0..1000 {
        let id = format!("resp_{i}");
        store.put(&id, "user:alice", now(), &json!({ "id": id }), &State::default()).await.unwrap();
    }
    store.put("resp_bob", "user:bob", now(), &json!({}), &State::default()).await.unwrap();
    assert_eq!(store.count("user:alice").await.unwrap(), 50);
    assert!(store.get("resp_999", "user:alice").await.unwrap().is_some(), "the newest");
    assert!(store.get("resp_950", "user:alice").await.unwrap().is_some(), "the 50th newest");
    assert!(store.get("resp_949", "user:alice").await.unwrap().is_none(), "the 51st");
    assert!(store.get("resp_0", "user:alice").await.unwrap().is_none(), "the first");
    assert_eq!(store.count("user:bob").await.unwrap(), 1, "bob's are his own");
    // Deleted, not hidden: a header, a chunk and a slot per response kept, and the counter.
    let alice = format!("responses/{}/", digest("user:alice"));
    let hers = keys(&state).await.into_iter().filter(|k| k.starts_with(&alice)).count();
    assert_eq!(hers, 50 * 3 + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_racing_for_one_slot_leave_the_owner_at_the_cap() {
    let state = SharedState::memory();
    let store = store(&state, HOUR, 2);
    let writes = (0..200).map(|i| {
        let store = store.clone();
        tokio::spawn(async move {
            let id = format!("resp_{i}");
            store.put(&id, "o", now(), &json!({}), &State::default()).await
        })
    });
    for written in futures::future::join_all(writes).await {
        let written = written.expect("no panic");
        // A write that lost its place to the racing ones says so; none is left in no slot.
        if let Err(error) = written {
            assert!(error.message.contains("raced"), "{error:?}");
        }
    }
    assert!(store.count("o").await.unwrap() <= 2);
}

#[tokio::test]
async fn a_large_conversation_is_kept_in_chunks_and_a_huge_one_is_refused() {
    let state = SharedState::memory();
    let store = store(&state, HOUR, 10);
    // 2.5 values' worth, with characters of several bytes across the chunks' edges.
    let text = "é€x".repeat(MAX_VALUE_BYTES * 5 / 12);
    let conversation = json!({ "messages": [text] });
    let response = json!({ "id": "resp_big", "output_text": "ok" });
    store.put_json("resp_big", "o", now(), &response, &conversation).await.unwrap();
    let chunks = keys(&state).await.into_iter().filter(|k| k.contains("/c/resp_big/")).count();
    assert_eq!(chunks, 3);
    let (read, kept) = store.get_json("resp_big", "o").await.unwrap().expect("whole");
    assert_eq!((read, kept), (response, conversation));

    // A chunk lost (evicted or deleted while read): the response is gone, never cut.
    let owner = digest("o");
    state.delete(&format!("responses/{owner}/c/resp_big/1")).await.unwrap();
    assert!(store.get_json("resp_big", "o").await.unwrap().is_none());

    let huge = json!({ "messages": ["x".repeat(MAX_STORED_BYTES)] });
    let error = store.put_json("resp_huge", "o", now(), &json!({}), &huge).await.unwrap_err();
    assert_eq!(error.status, axum::http::StatusCode::INTERNAL_SERVER_ERROR);
    assert!(error.message.contains("at most 67108864"), "{error:?}");
    assert!(keys(&state).await.iter().all(|k| !k.contains("resp_huge")), "nothing written");
}

#[tokio::test]
async fn the_same_id_stored_again_is_not_evicted_by_its_old_slot() {
    let state = SharedState::memory();
    let store = store(&state, HOUR, 2);
    let empty = json!({});
    store.put_json("resp_a", "o", now(), &json!({ "v": 1 }), &empty).await.unwrap();
    store.put_json("resp_b", "o", now(), &empty, &empty).await.unwrap();
    store.put_json("resp_a", "o", now(), &json!({ "v": 2 }), &empty).await.unwrap();
    // The third write evicted slot 0, whose resp_a was stored again since: it stays.
    let (read, _) = store.get_json("resp_a", "o").await.unwrap().expect("kept");
    assert_eq!(read, json!({ "v": 2 }));
    store.put_json("resp_c", "o", now(), &empty, &empty).await.unwrap();
    assert!(store.get_json("resp_b", "o").await.unwrap().is_none(), "the oldest goes");
    assert!(store.get_json("resp_a", "o").await.unwrap().is_some());
}

#[tokio::test]
async fn a_state_that_cannot_be_reached_fails_fast_with_a_503_and_no_password() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let config = toolgate_config::StateConfig {
        backend: toolgate_config::StateBackend::Redis(toolgate_config::Secret::new(format!(
            "redis://:hunter2@127.0.0.1:{port}/0"
        ))),
        shared_key: None,
        replica: None,
    };
    let state = SharedState::builder(&config)
        .timeout(Duration::from_millis(500))
        .connect()
        .await
        .expect("unreachable is a warning, not an error");
    let store = Store::shared(state);
    let started = tokio::time::Instant::now();
    let failures: Vec<crate::error::ApiError> = vec![
        store.put_json("resp_1", "o", now(), &json!({}), &json!({})).await.unwrap_err(),
        store.get_json("resp_1", "o").await.unwrap_err(),
        store.delete("resp_1", "o").await.unwrap_err(),
    ];
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    for error in failures {
        assert_eq!(error.status, axum::http::StatusCode::SERVICE_UNAVAILABLE, "{error:?}");
        assert!(error.message.starts_with("the response store is unavailable"), "{error:?}");
        assert!(!error.message.contains("hunter2"), "{error:?}");
    }
    assert!(!format!("{store:?}").contains("hunter2"));
}

#[test]
fn what_is_left_of_the_retention_is_the_keys_ttl() {
    assert_eq!(super::remaining(1000, 400), Some(Duration::from_secs(600)));
    assert_eq!(super::remaining(1000, 1000), None, "expired now");
    assert_eq!(super::remaining(i64::MAX, i64::MIN), Some(toolgate_state::MAX_TTL));
}
