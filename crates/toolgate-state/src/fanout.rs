//! The bus inside one process: each channel a tokio broadcast, which a backend's listener (or,
//! in memory, `publish` itself) delivers to, and a [`Subscription`] receives from.
//!
//! On Redis and PostgreSQL, every replica listens on one backend channel, and each message
//! carries its own channel's name: [`frame`] and [`unframe`]. A channel lives here while it
//! has subscribers; the last one to go removes it, so what callers subscribe to bounds the map.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use bytes::Bytes;
use futures::Stream;
use tokio::sync::broadcast;

/// Messages a subscriber may fall behind by before it loses the oldest (counted in
/// [`Subscription::missed`]).
pub const SUBSCRIBER_BACKLOG: usize = 256;

/// The channels of one process's subscribers.
#[derive(Default)]
pub(crate) struct Fanout {
    /// `None` once closed: the state is gone, and every subscription has ended.
    channels: Mutex<Option<HashMap<String, broadcast::Sender<Bytes>>>>,
}

impl Fanout {
    pub(crate) fn new() -> Arc<Fanout> {
        Arc::new(Fanout { channels: Mutex::new(Some(HashMap::new())) })
    }

    /// A subscription to `channel`, which receives what is delivered from now on.
    pub(crate) fn subscribe(self: &Arc<Self>, channel: &str) -> Subscription {
        let mut channels = self.lock();
        let receiver = match channels.as_mut() {
            Some(channels) => channels
                .entry(channel.to_owned())
                .or_insert_with(|| broadcast::channel(SUBSCRIBER_BACKLOG).0)
                .subscribe(),
            // Closed: a receiver whose sender is already gone ends at once.
            None => broadcast::channel(1).1,
        };
        Subscription {
            channel: channel.to_owned(),
            receiver,
            fanout: Arc::downgrade(self),
            missed: 0,
        }
    }

    /// Gives `payload` to every subscriber of `channel` in this process (none: dropped).
    pub(crate) fn deliver(&self, channel: &str, payload: Bytes) {
        if let Some(sender) = self.lock().as_ref().and_then(|channels| channels.get(channel)) {
            // An error means no receiver is left, which `release` is about to clean up.
            let _ = sender.send(payload);
        }
    }

    /// Ends every subscription (their `recv` returns `None`) and refuses new ones.
    pub(crate) fn close(&self) {
        self.lock().take();
    }

    /// A subscription to `channel` is going: the channel goes too if it was the last.
    fn release(&self, channel: &str) {
        let mut channels = self.lock();
        if let Some(channels) = channels.as_mut()
            && channels.get(channel).is_some_and(|sender| sender.receiver_count() <= 1)
        {
            channels.remove(channel);
        }
    }

    /// How many channels have subscribers, for the tests.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().as_ref().map_or(0, HashMap::len)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<HashMap<String, broadcast::Sender<Bytes>>>> {
        // Nothing panics while holding it; a poisoned map is still a consistent map.
        self.channels.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Messages published to one channel after [`crate::SharedState::subscribe`] returned, from
/// every replica, until the state is dropped.
///
/// The bus is for wake-ups: a message published while the backend is down, or while this
/// replica's listener is reconnecting, is lost, and so are messages a slow subscriber falls
/// more than [`SUBSCRIBER_BACKLOG`] behind on. What must not be lost belongs in a key.
pub struct Subscription {
    channel: String,
    receiver: broadcast::Receiver<Bytes>,
    fanout: Weak<Fanout>,
    missed: u64,
}

impl Subscription {
    /// The next message, or `None` once the [`crate::SharedState`] it came from is dropped.
    pub async fn recv(&mut self) -> Option<Bytes> {
        loop {
            match self.receiver.recv().await {
                Ok(payload) => return Some(payload),
                Err(broadcast::error::RecvError::Lagged(lost)) => self.missed += lost,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// The messages as a stream, ending as [`Subscription::recv`] does.
    pub fn into_stream(self) -> impl Stream<Item = Bytes> + Send + 'static {
        futures::stream::unfold(self, |mut subscription| async move {
            subscription.recv().await.map(|payload| (payload, subscription))
        })
    }

    /// The channel it receives.
    pub fn channel(&self) -> &str {
        &self.channel
    }

    /// Messages lost because this subscriber fell too far behind.
    pub fn missed(&self) -> u64 {
        self.missed
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(fanout) = self.fanout.upgrade() {
            fanout.release(&self.channel);
        }
    }
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("channel", &self.channel)
            .field("missed", &self.missed)
            .finish_non_exhaustive()
    }
}

/// A message on a backend's one channel: `<channel>\n<payload>` (a channel name holds no
/// control character).
pub(crate) fn frame(channel: &str, payload: &[u8]) -> Vec<u8> {
    let mut framed = Vec::with_capacity(channel.len() + 1 + payload.len());
    framed.extend_from_slice(channel.as_bytes());
    framed.push(b'\n');
    framed.extend_from_slice(payload);
    framed
}

/// The channel and payload of a [`frame`]; `None` for anything else on the backend's channel.
pub(crate) fn unframe(framed: &[u8]) -> Option<(&str, &[u8])> {
    let split = framed.iter().position(|&byte| byte == b'\n')?;
    let channel = std::str::from_utf8(&framed[..split]).ok()?;
    Some((channel, &framed[split + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn each_subscriber_gets_its_channels_messages_and_the_last_one_out_removes_it() {
        let fanout = Fanout::new();
        let mut one = fanout.subscribe("a");
        let mut two = fanout.subscribe("a");
        let other = fanout.subscribe("b");
        fanout.deliver("a", Bytes::from_static(b"x"));
        fanout.deliver("nobody", Bytes::from_static(b"y"));
        assert_eq!(one.recv().await.as_deref(), Some(&b"x"[..]));
        assert_eq!(two.recv().await.as_deref(), Some(&b"x"[..]));
        assert!(other.receiver.is_empty());
        assert_eq!(fanout.len(), 2);
        drop(one);
        assert_eq!(fanout.len(), 2, "`a` still has a subscriber");
        drop(two);
        assert_eq!(fanout.len(), 1, "`a` is gone with its last subscriber");
        drop(other);
        assert_eq!(fanout.len(), 0);
    }

    #[tokio::test]
    async fn closing_ends_every_subscription() {
        let fanout = Fanout::new();
        let mut before = fanout.subscribe("a");
        fanout.close();
        assert_eq!(before.recv().await, None);
        let mut after = fanout.subscribe("a");
        assert_eq!(after.recv().await, None);
    }

    #[tokio::test]
    async fn a_slow_subscriber_loses_the_oldest_and_counts_them() {
        let fanout = Fanout::new();
        let mut slow = fanout.subscribe("a");
        for n in 0..SUBSCRIBER_BACKLOG + 3 {
            fanout.deliver("a", Bytes::from(n.to_string()));
        }
        assert_eq!(slow.recv().await, Some(Bytes::from("3")));
        assert_eq!(slow.missed(), 3);
    }

    #[test]
    fn a_frame_holds_its_channel() {
        let framed = frame("list_changed", b"a\nb");
        assert_eq!(unframe(&framed), Some(("list_changed", &b"a\nb"[..])));
        assert_eq!(unframe(b"no newline"), None);
        assert_eq!(unframe(b"\xff\nx"), None);
    }
}
