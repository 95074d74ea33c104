//! Tests of the event bus: pattern routing, never waiting on a slow subscriber, and closing.

use crate::event::{Event, kind};
use crate::pattern::EventPattern;

use super::{EventBus, Subscription};

fn pattern(text: &str) -> EventPattern {
    text.parse().expect("test pattern must parse")
}

/// Every event waiting in `subscription`, by kind.
fn drain(subscription: &mut Subscription) -> Vec<String> {
    std::iter::from_fn(|| subscription.try_recv()).map(|event| event.kind).collect()
}

#[tokio::test]
async fn events_go_to_the_subscribers_whose_pattern_matches() {
    let bus = EventBus::new();
    let mut calls = bus.subscribe(pattern("tools/call/*"), 16);
    let mut denials = bus.subscribe(pattern("*/denied, */refused"), 16);
    let mut everything = bus.subscribe(EventPattern::all(), 16);

    for kind in [
        kind::TOOLS_CALL_STARTED,
        kind::UPSTREAM_CONNECTED,
        kind::TOOLS_CALL_DENIED,
        kind::APPROVAL_REFUSED,
        kind::TOOLS_LIST_CHANGED,
    ] {
        bus.publish(Event::new(kind).with("n", 1));
    }

    let first = calls.recv().await.expect("a matching event must arrive");
    assert_eq!(first.kind, kind::TOOLS_CALL_STARTED);
    assert_eq!(first.get("n"), Some(&serde_json::json!(1)));
    assert_eq!(drain(&mut calls), [kind::TOOLS_CALL_DENIED]);
    assert_eq!(drain(&mut denials), [kind::TOOLS_CALL_DENIED, kind::APPROVAL_REFUSED]);
    assert_eq!(drain(&mut everything).len(), 5);
    assert_eq!(bus.dropped(), 0);
}

#[tokio::test]
async fn a_burst_never_waits_for_a_subscriber_that_does_not_read() {
    const BURST: u64 = 100_000;
    const CAPACITY: usize = 64;
    let bus = EventBus::new();
    let mut stuck = bus.subscribe(EventPattern::all(), CAPACITY);
    let mut unrelated = bus.subscribe(pattern("approval/*"), 1);

    for n in 0..BURST {
        bus.publish(Event::new(kind::TOOLS_CALL_FINISHED).with("n", n));
    }

    let expected = BURST - CAPACITY as u64;
    assert_eq!(stuck.dropped(), expected);
    assert_eq!(bus.dropped(), expected);
    assert_eq!(unrelated.dropped(), 0);
    assert_eq!(unrelated.try_recv(), None);
    // The queue kept the oldest events, in order.
    for n in 0..CAPACITY as u64 {
        let event = stuck.recv().await.expect("queued events must be delivered");
        assert_eq!(event.get("n"), Some(&serde_json::json!(n)));
    }
    assert_eq!(stuck.try_recv(), None);
}

#[tokio::test]
async fn a_slow_subscriber_does_not_cost_a_fast_one_events() {
    let bus = EventBus::new();
    let mut slow = bus.subscribe(EventPattern::all(), 1);
    let mut fast = bus.subscribe(EventPattern::all(), 100);
    for _ in 0..10 {
        bus.publish(Event::new("a/b"));
    }
    assert_eq!(slow.dropped(), 9);
    assert_eq!(fast.dropped(), 0);
    assert_eq!(drain(&mut fast).len(), 10);
    assert_eq!(drain(&mut slow).len(), 1);
    assert_eq!(bus.dropped(), 9);
}

#[tokio::test]
async fn a_closed_subscriber_is_removed() {
    let bus = EventBus::new();
    let kept = bus.subscribe(EventPattern::all(), 4);
    let closed = bus.subscribe(EventPattern::all(), 4);
    assert_eq!(bus.subscriber_count(), 2);

    drop(closed);
    assert_eq!(bus.subscriber_count(), 1);
    bus.publish(Event::new("a"));
    assert_eq!(bus.dropped(), 0);
    drop(kept);
    assert_eq!(bus.subscriber_count(), 0);
    bus.publish(Event::new("a"));
}

#[tokio::test]
async fn publishing_without_subscribers_is_a_no_op() {
    let bus = EventBus::new();
    for _ in 0..1000 {
        bus.publish(Event::new(kind::UPSTREAM_FAILED));
    }
    assert_eq!(bus.dropped(), 0);
    assert_eq!(bus.subscriber_count(), 0);
}

#[tokio::test]
async fn clones_share_subscribers_and_recv_ends_with_the_last_clone() {
    let bus = EventBus::new();
    let mut subscription = bus.subscribe(EventPattern::all(), 4);
    let clone = bus.clone();
    clone.publish(Event::new("from/clone"));
    drop(bus);
    clone.publish(Event::new("after/drop"));
    drop(clone);

    assert_eq!(subscription.recv().await.map(|e| e.kind).as_deref(), Some("from/clone"));
    assert_eq!(subscription.recv().await.map(|e| e.kind).as_deref(), Some("after/drop"));
    assert_eq!(subscription.recv().await, None);
}

#[tokio::test]
async fn zero_capacity_means_one() {
    let bus = EventBus::new();
    let mut subscription = bus.subscribe(EventPattern::all(), 0);
    bus.publish(Event::new("a"));
    bus.publish(Event::new("b"));
    assert_eq!(drain(&mut subscription), ["a"]);
    assert_eq!(subscription.dropped(), 1);
}

#[tokio::test]
async fn close_ends_subscriptions_after_what_is_queued() {
    let bus = EventBus::new();
    let mut subscription = bus.subscribe(EventPattern::all(), 8);
    bus.publish(Event::new("a/b"));
    bus.close();
    bus.publish(Event::new("a/c"));
    assert_eq!(subscription.recv().await.map(|e| e.kind), Some("a/b".to_owned()));
    assert!(subscription.recv().await.is_none(), "closed: nothing more, even with the bus alive");
    assert_eq!(bus.subscriber_count(), 0);
}
