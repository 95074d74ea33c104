//! The contract every backend keeps, run against each (`tests/contract.rs`): two replicas'
//! states on one backend (for memory, two clones of one state: memory is one process's).
//!
//! TTLs are 1 s and waits 1.2 s: instant on memory, whose tests pause tokio's clock, and real
//! time on Redis and PostgreSQL, where the server's clock decides.

use std::time::Duration;

use futures::{StreamExt as _, TryStreamExt as _};
use toolgate_state::{
    MAX_PAYLOAD_BYTES, MAX_SCAN, MAX_TTL, MAX_VALUE_BYTES, SharedState, StateError,
};

use super::next;

const LONG: Duration = Duration::from_secs(60);
const SHORT: Duration = Duration::from_secs(1);
const PAST_SHORT: Duration = Duration::from_millis(1200);

/// Every case, on `one` and `two` (two replicas of one backend).
pub async fn run(one: &SharedState, two: &SharedState) {
    keys(one, two).await;
    claims_and_takes(one, two).await;
    counters(one, two).await;
    scans(one, two).await;
    expiry(one, two).await;
    limits(one).await;
    bus(one, two).await;
}

async fn keys(one: &SharedState, two: &SharedState) {
    assert_eq!(one.get("k").await.unwrap(), None);
    one.put("k", b"first", LONG).await.unwrap();
    assert_eq!(two.get("k").await.unwrap().as_deref(), Some(&b"first"[..]), "the other sees it");
    two.put("k", b"second", LONG).await.unwrap();
    assert_eq!(one.get("k").await.unwrap().as_deref(), Some(&b"second"[..]), "replaced");
    let binary: Vec<u8> = (0..=255).collect();
    one.put("binary", &binary, LONG).await.unwrap();
    assert_eq!(two.get("binary").await.unwrap(), Some(binary));
    one.put("empty", b"", LONG).await.unwrap();
    assert_eq!(two.get("empty").await.unwrap(), Some(Vec::new()), "empty is not missing");
    assert!(two.delete("k").await.unwrap());
    assert!(!one.delete("k").await.unwrap(), "already gone");
    assert_eq!(one.get("k").await.unwrap(), None);
}

async fn claims_and_takes(one: &SharedState, two: &SharedState) {
    // Replicas claiming one key at once: one of them has it.
    let (a, b) =
        tokio::join!(one.put_new("claim", b"one", LONG), two.put_new("claim", b"two", LONG));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert!(a ^ b, "exactly one claim: {a} {b}");
    let winner: &[u8] = if a { b"one" } else { b"two" };
    assert_eq!(one.get("claim").await.unwrap().as_deref(), Some(winner), "the loser wrote nothing");
    assert!(!one.put_new("claim", b"three", LONG).await.unwrap());

    // A decision taken by replicas at once: one of them gets it.
    one.put("decision", b"approve", LONG).await.unwrap();
    let (a, b) = tokio::join!(one.take("decision"), two.take("decision"));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert!(a.is_some() ^ b.is_some(), "exactly one take: {a:?} {b:?}");
    assert_eq!(a.or(b).as_deref(), Some(&b"approve"[..]));
    assert_eq!(one.take("decision").await.unwrap(), None);
    assert_eq!(two.get("decision").await.unwrap(), None);
}

async fn counters(one: &SharedState, two: &SharedState) {
    assert_eq!(one.incr("hits", 1, LONG).await.unwrap(), 1);
    assert_eq!(two.incr("hits", 5, LONG).await.unwrap(), 6);
    assert_eq!(one.incr("hits", -2, LONG).await.unwrap(), 4);
    assert_eq!(two.get("hits").await.unwrap().as_deref(), Some(&b"4"[..]), "decimal text");
    // Replicas counting at once lose nothing.
    let adds = (0..20)
        .map(|n| if n % 2 == 0 { one.incr("hits", 1, LONG) } else { two.incr("hits", 1, LONG) });
    let mut seen: Vec<i64> = futures::future::try_join_all(adds).await.unwrap();
    seen.sort_unstable();
    assert_eq!(seen, (5..25).collect::<Vec<_>>(), "each increment saw its own sum");

    one.put("text", b"not a number", LONG).await.unwrap();
    for key in ["text", "binary"] {
        let refused = two.incr(key, 1, LONG).await.expect_err("not a counter");
        assert!(matches!(refused, StateError::NotACounter { .. }), "{key}: {refused:?}");
    }
    assert_eq!(one.get("text").await.unwrap().as_deref(), Some(&b"not a number"[..]), "kept");
    for odd in [&b"+1"[..], b"01", b" 1"] {
        one.put("odd", odd, LONG).await.unwrap();
        let refused = one.incr("odd", 1, LONG).await.expect_err("not canonical");
        assert!(matches!(refused, StateError::NotACounter { .. }), "{odd:?}: {refused:?}");
    }
    one.put("big", i64::MAX.to_string().as_bytes(), LONG).await.unwrap();
    let refused = two.incr("big", 1, LONG).await.expect_err("overflow");
    assert!(matches!(refused, StateError::NotACounter { .. }), "{refused:?}");
    assert_eq!(one.incr("big", -1, LONG).await.unwrap(), i64::MAX - 1);
}

/// `state`'s entries under `prefix`, sorted.
async fn listed(state: &SharedState, prefix: &str, limit: usize) -> Vec<(String, Vec<u8>)> {
    let mut found = state.scan(prefix, limit).await.unwrap();
    found.sort();
    found
}

fn entries(pairs: &[(&str, &[u8])]) -> Vec<(String, Vec<u8>)> {
    pairs.iter().map(|(key, value)| ((*key).to_owned(), value.to_vec())).collect()
}

async fn scans(one: &SharedState, two: &SharedState) {
    assert_eq!(one.scan("held:", 10).await.unwrap(), [], "nothing yet");
    one.put("held:a", b"1", LONG).await.unwrap();
    two.put("held:b", b"2", LONG).await.unwrap();
    one.put("held:c", b"", LONG).await.unwrap();
    // Not under the prefix: shorter, a sibling, the prefix elsewhere in the key.
    for other in ["held", "held-d", "other:held:e"] {
        one.put(other, b"x", LONG).await.unwrap();
    }
    let all = entries(&[("held:a", b"1"), ("held:b", b"2"), ("held:c", b"")]);
    assert_eq!(listed(two, "held:", 10).await, all, "each replica's, as written");
    assert_eq!(listed(one, "held:b", 10).await, entries(&[("held:b", b"2")]));
    let two_of_them = listed(one, "held:", 2).await;
    assert_eq!(two_of_them.len(), 2, "{two_of_them:?}");
    assert!(two_of_them.iter().all(|entry| all.contains(entry)), "{two_of_them:?}");
    assert_eq!(one.scan("held:", 0).await.unwrap(), []);
    two.delete("held:b").await.unwrap();
    assert_eq!(listed(one, "held:", 10).await, entries(&[("held:a", b"1"), ("held:c", b"")]));

    // A prefix is taken literally: a glob's or LIKE's metacharacters match only themselves.
    let keys = [
        "meta:ab",
        "meta:a*",
        "meta:a?",
        "meta:a[b]",
        "meta:a]",
        "meta:a%",
        "meta:a_",
        r"meta:a\b",
    ];
    for key in keys {
        one.put(key, key.as_bytes(), LONG).await.unwrap();
    }
    // Each lists itself alone; unescaped, `a*`, `a?`, `a[b]` and `a\b` would list `meta:ab` on
    // Redis, and `a%`, `a_` and `a\b` on PostgreSQL.
    for key in &keys[1..] {
        let found = listed(two, key, 10).await;
        assert_eq!(found, entries(&[(key, key.as_bytes())]), "{key}");
    }

    // More than one `SCAN` call on Redis (it looks at about 1000 keys a call).
    let many = 1200;
    futures::stream::iter(0..many)
        .map(|n| async move { one.put(&format!("many:{n}"), b"v", LONG).await })
        .buffer_unordered(32)
        .try_collect::<()>()
        .await
        .unwrap();
    let found = two.scan("many:", usize::MAX).await.unwrap();
    assert_eq!(found.len(), many, "every one, each once");
    let distinct: std::collections::HashSet<_> = found.iter().map(|(key, _)| key).collect();
    assert_eq!(distinct.len(), many);
    assert_eq!(two.scan("many:", many - 100).await.unwrap().len(), many - 100, "the limit");
    assert!(many < MAX_SCAN);
}

async fn expiry(one: &SharedState, two: &SharedState) {
    one.put("short", b"v", SHORT).await.unwrap();
    one.put("listed:short", b"v", SHORT).await.unwrap();
    one.put("listed:long", b"v", LONG).await.unwrap();
    assert_eq!(listed(two, "listed:", 10).await.len(), 2);
    assert!(!two.put_new("short", b"w", LONG).await.unwrap(), "live");
    one.put("taken", b"v", SHORT).await.unwrap();
    one.put("deleted", b"v", SHORT).await.unwrap();
    // A counter's window starts with its first increment: later ones do not extend it.
    assert_eq!(one.incr("window", 1, SHORT).await.unwrap(), 1);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(two.incr("window", 1, LONG).await.unwrap(), 2);
    tokio::time::sleep(PAST_SHORT - Duration::from_millis(500)).await;

    assert_eq!(two.get("short").await.unwrap(), None, "expired");
    assert_eq!(two.take("taken").await.unwrap(), None, "expired, not taken");
    assert!(!two.delete("deleted").await.unwrap(), "expired, so not live when deleted");
    assert_eq!(listed(two, "listed:", 10).await, entries(&[("listed:long", b"v")]), "expired");
    assert_eq!(one.incr("window", 1, SHORT).await.unwrap(), 1, "a new window");
    assert!(two.put_new("short", b"w", SHORT).await.unwrap(), "expired: free to claim");
    assert_eq!(one.get("short").await.unwrap().as_deref(), Some(&b"w"[..]));
}

async fn limits(state: &SharedState) {
    let largest = vec![7u8; MAX_VALUE_BYTES];
    state.put("largest", &largest, LONG).await.unwrap();
    assert_eq!(state.get("largest").await.unwrap().map(|v| v.len()), Some(MAX_VALUE_BYTES));
    let over = vec![7u8; MAX_VALUE_BYTES + 1];
    for refused in [
        state.put("over", &over, LONG).await.expect_err("too large"),
        state.put_new("over", &over, LONG).await.expect_err("too large"),
    ] {
        assert!(
            matches!(refused, StateError::ValueTooLarge { len, max, .. } if len == MAX_VALUE_BYTES + 1 && max == MAX_VALUE_BYTES),
            "{refused:?}"
        );
    }
    assert_eq!(state.get("over").await.unwrap(), None);
    for ttl in [Duration::ZERO, MAX_TTL + Duration::from_secs(1)] {
        let refused = state.put("ttl", b"v", ttl).await.expect_err("no such TTL");
        assert!(matches!(refused, StateError::InvalidTtl { .. }), "{refused:?}");
        let refused = state.incr("ttl", 1, ttl).await.expect_err("no such TTL");
        assert!(matches!(refused, StateError::InvalidTtl { .. }), "{refused:?}");
    }
    for key in ["", "new\nline", &"k".repeat(513)] {
        let refused = state.get(key).await.expect_err("no such key");
        assert!(matches!(refused, StateError::InvalidKey { .. }), "{refused:?}");
        let refused = state.scan(key, 10).await.expect_err("no such prefix");
        assert!(matches!(refused, StateError::InvalidKey { .. }), "{refused:?}");
    }
    state.publish("limits", &vec![b'x'; MAX_PAYLOAD_BYTES]).await.unwrap();
    let refused = state.publish("limits", &vec![b'x'; MAX_PAYLOAD_BYTES + 1]).await.unwrap_err();
    assert!(
        matches!(refused, StateError::PayloadTooLarge { len, .. } if len == MAX_PAYLOAD_BYTES + 1),
        "{refused:?}"
    );
    let refused = state.subscribe("a\nb").await.expect_err("no such channel");
    assert!(matches!(refused, StateError::InvalidChannel { .. }), "{refused:?}");
}

async fn bus(one: &SharedState, two: &SharedState) {
    let mut first = one.subscribe("changed").await.unwrap();
    let mut second = two.subscribe("changed").await.unwrap();
    let mut other = two.subscribe("other").await.unwrap();
    // Each replica's messages reach both, in order; binary payloads as they were.
    let binary: Vec<u8> = vec![0, b'\n', 255, b'x'];
    one.publish("changed", b"from one").await.unwrap();
    two.publish("changed", &binary).await.unwrap();
    let largest = vec![b'y'; MAX_PAYLOAD_BYTES];
    one.publish("changed", &largest).await.unwrap();
    for subscription in [&mut first, &mut second] {
        assert_eq!(next(subscription).await, &b"from one"[..]);
        assert_eq!(next(subscription).await, binary);
        assert_eq!(next(subscription).await, largest);
    }
    // The other channel got none of them: its first message is its own.
    one.publish("other", b"for other").await.unwrap();
    assert_eq!(next(&mut other).await, &b"for other"[..]);
    // A subscriber that is gone receives nothing, and the others go on.
    drop(first);
    two.publish("changed", b"again").await.unwrap();
    assert_eq!(next(&mut second).await, &b"again"[..]);
}
