//! `subscriptions/listen` (2026-07-28): a request whose answer is a stream of the notifications
//! its client asked for (list changes, updates of named resources), acknowledged first with
//! what toolgate accepted (of the resources, those an upstream offers), each tagged with the
//! request's id as `subscriptionId`. It lasts until the client closes it, or until
//! `[gateway] stream_max_age`, or until shutdown; the last two end it with its result, and
//! the client listens again if it still wants to.
//!
//! Bounded: at most `max_listen_streams` open at once and `max_listen_streams_per_client` per
//! client (`client`), each following at most what `[gateway] max_subscriptions` and
//! `max_subscription_bytes` allow, and holding at most `stream_queue` events for a client that
//! reads them slowly (past that its stream ends).

#![allow(deprecated)] // the resource subscriptions it makes are legacy upstream

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::response::Response;
use futures::future::BoxFuture;
use http::StatusCode;
use tokio_util::sync::CancellationToken;
use toolgate_core::mcp;

use super::Front;
use super::client::ClientKey;
use super::reply::{event_stream, json_message};
use super::sse::{EventBody, Offered, Queue, Urgency, event};
use toolgate_gateway::link::{Closed, Listener};
use toolgate_gateway::listen::Subscription;
use toolgate_gateway::protocol::{Client, Era};
use toolgate_gateway::session::OpenedBy;

/// How many listen streams may be open at once by default.
pub const DEFAULT_MAX_LISTEN_STREAMS: usize = 256;

/// How many of them one client may hold by default.
pub const DEFAULT_MAX_LISTEN_STREAMS_PER_CLIENT: usize = 32;

/// The bounds on listen streams.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ListenBounds {
    pub(crate) most: usize,
    pub(crate) most_per_client: usize,
}

/// The listen streams open now, in all and per client.
#[derive(Debug)]
pub(crate) struct ListenStreams {
    bounds: ListenBounds,
    open: Mutex<Open>,
}

#[derive(Debug, Default)]
struct Open {
    all: usize,
    per_client: HashMap<ClientKey, usize>,
}

/// A listen stream's place, given back when dropped.
struct Place {
    streams: Arc<ListenStreams>,
    client: ClientKey,
}

impl ListenStreams {
    pub(crate) fn new(bounds: ListenBounds) -> ListenStreams {
        ListenStreams { bounds, open: Mutex::default() }
    }

    fn open(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().expect("listen streams lock must not be poisoned")
    }

    /// A place for one more stream of `client`, or the answer that refuses it (503 when the
    /// gateway holds as many as it may, 429 when this client does).
    fn take(self: &Arc<Self>, client: ClientKey, id: &mcp::RequestId) -> Result<Place, Response> {
        let mut open = self.open();
        let refusal = if open.all >= self.bounds.most {
            Some((
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "this gateway already has {} open subscriptions/listen streams, the most it \
                     keeps; try again when one has closed",
                    self.bounds.most
                ),
            ))
        } else if open.per_client.get(&client).copied().unwrap_or(0) >= self.bounds.most_per_client
        {
            Some((
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "this client already has {} open subscriptions/listen streams, the most one \
                     client may hold; close one before opening another",
                    self.bounds.most_per_client
                ),
            ))
        } else {
            None
        };
        if let Some((status, why)) = refusal {
            tracing::debug!(%client, "refused a subscriptions/listen stream: {why}");
            let error = mcp::ErrorData::new(mcp::ErrorCode(-32000), why, None);
            return Err(json_message(
                status,
                &mcp::ServerJsonRpcMessage::error(error, Some(id.clone())),
            ));
        }
        open.all += 1;
        *open.per_client.entry(client.clone()).or_default() += 1;
        Ok(Place { streams: self.clone(), client })
    }

    /// How many are open.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.open().all
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut open = self.streams.open();
        open.all -= 1;
        if let Some(held) = open.per_client.get_mut(&self.client) {
            *held -= 1;
            if *held == 0 {
                open.per_client.remove(&self.client);
            }
        }
    }
}

/// Opens the stream.
pub(crate) async fn listen(
    front: Arc<Front>,
    id: mcp::RequestId,
    params: mcp::SubscriptionsListenRequestParams,
    era: &Era,
    client: Client,
    address: ClientKey,
) -> Response {
    if !era.modern {
        // The handshake era follows changes on the session's GET stream instead.
        let error = mcp::ErrorData::new(
            mcp::ErrorCode::METHOD_NOT_FOUND,
            "Method not found: subscriptions/listen (a method of protocol 2026-07-28; a session \
             follows changes on its GET stream)",
            None,
        );
        return json_message(StatusCode::OK, &mcp::ServerJsonRpcMessage::error(error, Some(id)));
    }
    let place = match front.listening.take(address, &id) {
        Ok(place) => place,
        Err(refused) => return refused,
    };
    let gateway = front.gateway().clone();
    let subscription = match Subscription::open(&gateway, &client, id.clone(), params).await {
        Ok(subscription) => subscription,
        Err(error) => {
            return json_message(
                StatusCode::OK,
                &mcp::ServerJsonRpcMessage::error(error, Some(id)),
            );
        }
    };
    let (queue, receiver) = Queue::new(front.stream_queue, 0);
    let ended = CancellationToken::new();
    let listener = Arc::new(StreamListener { subscription, queue, ended: ended.clone() });
    listener.acknowledge();
    let registered: Arc<dyn Listener> = listener.clone();
    let described =
        OpenedBy::now(None, client.principal.clone(), "streamable-http", era.version.clone());
    gateway.sessions().add_listener(registered.clone(), described);
    let gone = CancellationToken::new();
    // The body ends when the task below lets go of the last sender.
    let body = EventBody::new(Some(receiver), CancellationToken::new()).on_drop(gone.clone());
    let max_age = front.stream_max_age;
    tokio::spawn(async move {
        let _place = place;
        tokio::select! {
            () = gone.cancelled() => {}
            // Its reader fell too far behind: the stream ends (what it has is still read).
            () = ended.cancelled() => {}
            () = front.shutdown.cancelled() => listener.finish(),
            () = tokio::time::sleep(max_age) => listener.finish(),
        }
        gateway.sessions().remove_listener(&registered);
        listener.subscription.close(&gateway).await;
    });
    event_stream(Body::from_stream(body))
}

/// One listen stream, as the gateway's sessions see it.
#[derive(Debug)]
struct StreamListener {
    /// What it follows, and how its messages are written.
    subscription: Subscription,
    queue: Queue,
    /// Fired when its reader falls too far behind.
    ended: CancellationToken,
}

impl StreamListener {
    fn send(&self, message: &mcp::ServerJsonRpcMessage) -> Result<(), Closed> {
        if self.ended.is_cancelled() {
            return Err(Closed);
        }
        let json = serde_json::to_vec(message).map_err(|_| Closed)?;
        match self.queue.offer(event(None, &json), Urgency::of(message)) {
            Offered::Queued | Offered::Dropped => Ok(()),
            Offered::Full => {
                let id = self.subscription.id();
                tracing::debug!(%id, "a listen stream's client reads too slowly; it ends");
                self.ended.cancel();
                Err(Closed)
            }
            Offered::Gone => Err(Closed),
        }
    }

    /// `notifications/subscriptions/acknowledged`, with what was accepted.
    fn acknowledge(&self) {
        let _ = self.send(&self.subscription.acknowledgment());
    }

    /// The result that ends the stream (at shutdown, or when it has lasted long enough).
    fn finish(&self) {
        let _ = self.send(&self.subscription.ending());
    }
}

impl Listener for StreamListener {
    fn offer(
        &self,
        notification: mcp::ServerNotification,
    ) -> BoxFuture<'static, Result<(), Closed>> {
        let sent = if self.queue.is_closed() || self.ended.is_cancelled() {
            Err(Closed)
        } else {
            match self.subscription.message(notification) {
                Some(message) => self.send(&message),
                None => Ok(()),
            }
        };
        Box::pin(async move { sent })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_streams_are_bounded_in_all_and_per_client() {
        let streams = Arc::new(ListenStreams::new(ListenBounds { most: 3, most_per_client: 2 }));
        let id = mcp::RequestId::Number(1);
        let status = |taken: Result<Place, Response>| taken.err().map(|r| r.status().as_u16());
        let local = ClientKey::of("127.0.0.1".parse().unwrap());
        let a = streams.take(local.clone(), &id).expect("one");
        let _b = streams.take(ClientKey::of("127.0.0.9".parse().unwrap()), &id).expect("two");
        assert_eq!(status(streams.take(local.clone(), &id)), Some(429), "loopback is one client");
        let other = ClientKey::of("10.0.0.1".parse().unwrap());
        let _c = streams.take(other.clone(), &id).expect("three");
        assert_eq!(status(streams.take(other, &id)), Some(503), "the gateway is full");
        drop(a);
        assert_eq!(streams.len(), 2);
        streams.take(local, &id).expect("a place that freed");
    }
}
