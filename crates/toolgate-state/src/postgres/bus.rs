//! The PostgreSQL bus: a connection of its own that `LISTEN`s on [`sql::BUS_CHANNEL`], whose
//! notifications go to the process's [`Fanout`]. When the connection ends (the database went,
//! or stopped answering the empty query sent every [`PING_EVERY`]), it is made again and
//! listens again, after a pause that doubles from [`FIRST_PAUSE`] to [`LAST_PAUSE`]; what was
//! notified in between is lost.
//!
//! A notification's text is `<channel>\n<base64 of the payload>`: NOTIFY carries text only.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use futures::StreamExt as _;
use tokio::sync::{mpsc, watch};
use tokio::time::timeout;
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres::{AsyncMessage, Client, Notification, Socket};
use tokio_postgres_rustls::MakeRustlsConnect;
use tokio_util::sync::CancellationToken;

use super::sql;

use crate::fanout::Fanout;
use crate::redact::Redactor;

/// How often a quiet connection is asked whether it is still there.
const PING_EVERY: Duration = Duration::from_secs(5);
const FIRST_PAUSE: Duration = Duration::from_millis(50);
const LAST_PAUSE: Duration = Duration::from_secs(1);

/// Notifications read off the connection and not yet delivered, at most.
const BACKLOG: usize = 1024;

/// What the bus's task needs.
pub(super) struct Bus {
    pub(super) config: tokio_postgres::Config,
    pub(super) tls: Option<MakeRustlsConnect>,
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
        match timeout(bus.timeout, open(bus)).await {
            Ok(Ok((client, notifications))) => {
                live.send_replace(true);
                if lost {
                    tracing::info!(state = %bus.target, "the message bus is connected again");
                }
                pause = FIRST_PAUSE;
                let why = listen(bus, &client, notifications).await;
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

/// A connection that listens, and its notifications.
async fn open(bus: &Bus) -> Result<(Client, mpsc::Receiver<Notification>), tokio_postgres::Error> {
    let (client, notifications) = match &bus.tls {
        None => connect(&bus.config, tokio_postgres::NoTls).await?,
        Some(tls) => connect(&bus.config, tls.clone()).await?,
    };
    client.batch_execute(&sql::LISTEN).await?;
    Ok((client, notifications))
}

/// Connects, and drives the connection in a task of its own that forwards its notifications
/// (ending when the connection does, or when the client is dropped).
async fn connect<T>(
    config: &tokio_postgres::Config,
    tls: T,
) -> Result<(Client, mpsc::Receiver<Notification>), tokio_postgres::Error>
where
    T: MakeTlsConnect<Socket>,
    T::Stream: Send + 'static,
    T::TlsConnect: Send,
    <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
{
    let (client, mut connection) = config.connect(tls).await?;
    let (forward, notifications) = mpsc::channel(BACKLOG);
    tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(Ok(message)) = messages.next().await {
            if let AsyncMessage::Notification(notification) = message
                && forward.send(notification).await.is_err()
            {
                break;
            }
        }
    });
    Ok((client, notifications))
}

/// Delivers what comes until the connection ends; why it ended.
async fn listen(
    bus: &Bus,
    client: &Client,
    mut notifications: mpsc::Receiver<Notification>,
) -> String {
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.tick().await;
    loop {
        tokio::select! {
            notification = notifications.recv() => {
                let Some(notification) = notification else { return "closed".to_owned() };
                if let Some((channel, payload)) = read(notification.payload()) {
                    bus.fanout.deliver(channel, payload.into());
                }
            }
            _ = ping.tick() => {
                match timeout(bus.timeout, client.simple_query("")).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(error)) => return bus.redactor.redact(&toolgate_core::ErrorChain(&error).to_string()),
                    Err(_) => return format!("no answer to a ping within {:?}", bus.timeout),
                }
            }
        }
    }
}

/// The channel and payload of a notification's text.
fn read(text: &str) -> Option<(&str, Vec<u8>)> {
    let (channel, encoded) = text.split_once('\n')?;
    let payload = base64::engine::general_purpose::STANDARD.decode(encoded).ok()?;
    Some((channel, payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notification_carries_its_channel_and_the_payload_in_base64() {
        assert_eq!(read("c\nAP8="), Some(("c", vec![0, 255])));
        assert_eq!(read("c\n"), Some(("c", vec![])));
        assert_eq!(read("no newline"), None);
        assert_eq!(read("c\n!!"), None);
    }
}
