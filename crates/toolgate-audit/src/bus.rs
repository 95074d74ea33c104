//! The event bus: publishing never waits; a subscriber that falls behind loses events, counted.
//!
//! Each subscriber has a bounded queue of its own. [`EventBus::publish`] offers the event to
//! every subscriber whose pattern matches it, without waiting: where a queue is full the event is
//! dropped for that subscriber only and counted, both for it ([`Subscription::dropped`]) and for
//! the bus ([`EventBus::dropped`]). A slow sink therefore never slows a call, and never makes
//! another sink miss events.
//!
//! The subscriber list is copied on write: `publish` holds its lock only to clone an `Arc`, and
//! the only thing it can ever wait for is a concurrent `subscribe` or unsubscribe swapping that
//! `Arc`, never a consumer. With no subscribers, `publish` is one atomic load.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock, Weak};

use tokio::sync::mpsc::{self, error::TrySendError};

use crate::event::Event;
use crate::pattern::EventPattern;

/// Where events are published and subscribed to. Cheap to clone; clones share subscribers.
#[derive(Clone, Default)]
pub struct EventBus {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    subscribers: RwLock<Arc<Vec<Subscriber>>>,
    /// `subscribers.len()`, readable without the lock.
    count: AtomicUsize,
    /// Events dropped for any subscriber.
    dropped: AtomicU64,
    next_id: AtomicU64,
}

#[derive(Clone)]
struct Subscriber {
    id: u64,
    pattern: EventPattern,
    capacity: usize,
    sender: mpsc::Sender<Event>,
    dropped: Arc<AtomicU64>,
}

/// One subscriber's queue of matching events. Dropping it unsubscribes.
pub struct Subscription {
    id: u64,
    receiver: mpsc::Receiver<Event>,
    dropped: Arc<AtomicU64>,
    /// Weak, so that a subscription alone does not keep the bus (and so its own sender) alive:
    /// once every `EventBus` clone is gone, `recv` drains the queue and then returns `None`.
    bus: Weak<Shared>,
}

// === impl EventBus ===

impl EventBus {
    /// A bus with no subscribers.
    pub fn new() -> EventBus {
        EventBus::default()
    }

    /// Offers `event` to every subscriber whose pattern matches its kind. Never waits for a
    /// subscriber: a full queue drops the event for that subscriber and counts it.
    pub fn publish(&self, event: Event) {
        if self.shared.count.load(Ordering::Acquire) == 0 {
            return;
        }
        let subscribers =
            Arc::clone(&self.shared.subscribers.read().unwrap_or_else(PoisonError::into_inner));
        let targets: Vec<&Subscriber> = {
            let segments: Vec<&str> = event.kind.split('/').collect();
            subscribers.iter().filter(|s| s.pattern.matches_segments(&segments)).collect()
        };
        let Some((last, rest)) = targets.split_last() else {
            return;
        };
        for subscriber in rest {
            self.deliver(subscriber, event.clone());
        }
        self.deliver(last, event);
    }

    /// Whether any subscriber would receive an event of `kind`: publishers whose events cost
    /// something to build (token counts) ask first.
    pub fn wants(&self, kind: &str) -> bool {
        if self.shared.count.load(Ordering::Acquire) == 0 {
            return false;
        }
        let subscribers = self.shared.subscribers.read().unwrap_or_else(PoisonError::into_inner);
        let segments: Vec<&str> = kind.split('/').collect();
        subscribers.iter().any(|s| s.pattern.matches_segments(&segments))
    }

    /// Subscribes to the events matching `pattern`, keeping at most `capacity` (at least 1) of
    /// them waiting; more are dropped until the subscriber catches up.
    pub fn subscribe(&self, pattern: EventPattern, capacity: usize) -> Subscription {
        self.subscribe_counted(pattern, capacity, Arc::default())
    }

    /// [`subscribe`](Self::subscribe), counting the events this subscriber loses in `dropped`
    /// (which a sink may share with whoever reads its statistics).
    pub(crate) fn subscribe_counted(
        &self,
        pattern: EventPattern,
        capacity: usize,
        dropped: Arc<AtomicU64>,
    ) -> Subscription {
        let capacity = capacity.max(1);
        let (sender, receiver) = mpsc::channel(capacity);
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let subscriber =
            Subscriber { id, pattern, capacity, sender, dropped: Arc::clone(&dropped) };
        self.shared.edit(|subscribers| subscribers.push(subscriber));
        Subscription { id, receiver, dropped, bus: Arc::downgrade(&self.shared) }
    }

    /// How many events were dropped, over all subscribers, because a queue was full.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// Ends every subscription: each drains what is already queued and then sees the end.
    /// Later events go nowhere. For an orderly exit: close, then await the sinks.
    pub fn close(&self) {
        self.shared.edit(Vec::clear);
    }

    /// How many subscriptions are alive.
    pub fn subscriber_count(&self) -> usize {
        self.shared.count.load(Ordering::Acquire)
    }

    fn deliver(&self, subscriber: &Subscriber, event: Event) {
        match subscriber.sender.try_send(event) {
            Ok(()) => {}
            Err(TrySendError::Full(event)) => {
                self.shared.dropped.fetch_add(1, Ordering::Relaxed);
                if subscriber.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
                    tracing::warn!(
                        pattern = %subscriber.pattern,
                        capacity = subscriber.capacity,
                        kind = %event.kind,
                        "an event subscriber is not keeping up: dropping events it has no room for"
                    );
                }
            }
            // Unsubscribing in progress: its `Drop` is removing it from the list.
            Err(TrySendError::Closed(_)) => {}
        }
    }
}

impl std::fmt::Debug for EventBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventBus")
            .field("subscribers", &self.subscriber_count())
            .field("dropped", &self.dropped())
            .finish()
    }
}

// === impl Shared ===

impl Shared {
    /// Replaces the subscriber list with an edited copy.
    fn edit(&self, change: impl FnOnce(&mut Vec<Subscriber>)) {
        let mut guard = self.subscribers.write().unwrap_or_else(PoisonError::into_inner);
        let mut subscribers = Vec::clone(&guard);
        change(&mut subscribers);
        self.count.store(subscribers.len(), Ordering::Release);
        *guard = Arc::new(subscribers);
    }
}

// === impl Subscription ===

impl Subscription {
    /// The next matching event, waiting for one if need be. `None` once every clone of the bus
    /// is gone and the queue is empty.
    pub async fn recv(&mut self) -> Option<Event> {
        self.receiver.recv().await
    }

    /// The next matching event if one is waiting.
    pub fn try_recv(&mut self) -> Option<Event> {
        self.receiver.try_recv().ok()
    }

    /// How many matching events this subscriber lost because its queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(shared) = self.bus.upgrade() {
            let id = self.id;
            shared.edit(|subscribers| subscribers.retain(|s| s.id != id));
        }
    }
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("queued", &self.receiver.len())
            .field("dropped", &self.dropped())
            .finish()
    }
}

#[cfg(test)]
mod tests;
