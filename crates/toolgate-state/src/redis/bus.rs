//! The Redis bus: one connection subscribed to [`super::BUS_CHANNEL`], whose messages go to the
//! process's [`Fanout`]. When the connection ends (the server went, or stopped answering the
//! `PING` sent every [`PING_EVERY`]), it is made again and subscribed again, after a pause that
//! doubles from [`FIRST_PAUSE`] to [`LAST_PAUSE`]; what was published in between is lost.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use redis::Client;
use tokio::sync::watch;
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;

use super::BUS_CHANNEL;

use crate::fanout::{Fanout, unframe};
use crate::redact::Redactor;

/// How often a quiet connection is asked whether it is still there.
const PING_EVERY: Duration = Duration::from_secs(5);
const FIRST_PAUSE: Duration = Duration::from_millis(50);
const LAST_PAUSE: Duration = Duration::from_secs(1);

/// What the bus's task needs.
pub(super) struct Bus {
    pub(super) client: Client,
    pub(super) fanout: Arc<Fanout>,
    pub(super) stop: CancellationToken,
    /// Each connection attempt's, and each ping's, bound.
    pub(super) timeout: Duration,
    pub(super) target: String,
    pub(super) redactor: Arc<Redactor>,
}

/// Starts the bus's task; the receiver says whether it listens now.
pub(super) fn spawn(bus: Bus) -> watch::Receiver<bool> {
    let (live, listening) = watch::channel(false);
    tokio::spawn(async move {
        let stop = bus.stop.clone();
        tokio::select! {
            () = run(&bus, &live) => {}
            () = stop.cancelled() => {}
        }
        live.send_replace(false);
    });
    listening
}

async fn run(bus: &Bus, live: &watch::Sender<bool>) {
    let mut pause = FIRST_PAUSE;
    let mut lost = false;
    loop {
        match timeout(bus.timeout, subscribe(&bus.client)).await {
            Ok(Ok(pubsub)) => {
                live.send_replace(true);
                if lost {
                    tracing::info!(state = %bus.target, "the message bus is connected again");
                }
                pause = FIRST_PAUSE;
                let why = listen(bus, pubsub).await;
                live.send_replace(false);
                tracing::warn!(
                    state = %bus.target,
                    "the message bus lost its connection ({why}); messages published until it \
                     is back are lost"
                );
                lost = true;
            }
            Ok(Err(error)) if !lost => {
                let why = bus.redactor.redact(&toolgate_core::ErrorChain(&error).to_string());
                tracing::warn!(state = %bus.target, "the message bus cannot connect: {why}");
                lost = true;
            }
            Err(_) if !lost => {
                tracing::warn!(state = %bus.target, "the message bus cannot connect in time");
                lost = true;
            }
            Ok(Err(_)) | Err(_) => {}
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(LAST_PAUSE);
    }
}

async fn subscribe(client: &Client) -> Result<redis::aio::PubSub, redis::RedisError> {
    let mut pubsub = client.get_async_pubsub().await?;
    pubsub.subscribe(BUS_CHANNEL).await?;
    Ok(pubsub)
}

/// Delivers what comes until the connection ends; why it ended.
async fn listen(bus: &Bus, pubsub: redis::aio::PubSub) -> String {
    let (mut sink, mut messages) = pubsub.split();
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.tick().await;
    loop {
        tokio::select! {
            message = messages.next() => {
                let Some(message) = message else { return "closed".to_owned() };
                if let Some((channel, payload)) = unframe(message.get_payload_bytes()) {
                    bus.fanout.deliver(channel, bytes::Bytes::copy_from_slice(payload));
                }
            }
            _ = ping.tick() => {
                match timeout(bus.timeout, sink.ping::<redis::Value>()).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(error)) => return bus.redactor.redact(&toolgate_core::ErrorChain(&error).to_string()),
                    Err(_) => return format!("no answer to a ping within {:?}", bus.timeout),
                }
            }
        }
    }
}
