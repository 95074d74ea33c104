//! What the tests share: states on each backend, and waiting for a message.

#![allow(dead_code, unreachable_pub)]

pub mod contract;

use std::time::Duration;

use bytes::Bytes;
use toolgate_config::{Secret, StateBackend, StateConfig};
use toolgate_state::{SharedState, StateError, Subscription};

pub fn redis(url: &str) -> StateConfig {
    StateConfig { backend: StateBackend::Redis(Secret::new(url)), shared_key: None, replica: None }
}

pub fn postgres(url: &str) -> StateConfig {
    StateConfig {
        backend: StateBackend::Postgres(Secret::new(url)),
        shared_key: None,
        replica: None,
    }
}

/// A state on `config`, bounded by `timeout`.
pub async fn connect(config: &StateConfig, timeout: Duration) -> SharedState {
    SharedState::builder(config).timeout(timeout).connect().await.expect("the state")
}

/// The next message, within five seconds.
pub async fn next(subscription: &mut Subscription) -> Bytes {
    tokio::time::timeout(Duration::from_secs(5), subscription.recv())
        .await
        .unwrap_or_else(|_| panic!("no message on {} within 5 s", subscription.channel()))
        .expect("the state is still there")
}

/// `error` and its causes, as one line.
pub fn chain(error: &StateError) -> String {
    let mut text = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(error) = cause {
        text.push_str(": ");
        text.push_str(&error.to_string());
        cause = error.source();
    }
    text
}
