//! `limits` across replicas: with `[state] backend` on Redis or PostgreSQL, every `rate` is
//! also counted in the shared state, so that N calls a minute means N in all, whichever
//! replicas they reach.
//!
//! Each limiter with a rate has one counter per window of its period (a fixed window:
//! `10/min` allows 10 calls from :00 to :59 of each minute, in all), under
//! `limits/{entry}/{limiter}/{window}`: the entry's name (or a hash of it, when it is not a
//! plain word), a hash of what the limiter counts (its key, whose calls, which tool, the
//! rate: no caller's name is in a key) and the window's number since the Unix epoch. A
//! counter expires shortly after its window ends. The local token bucket still applies on each
//! replica, keeping the burst shape there; a call goes when both let it.
//!
//! A call charges every counter at once ([`SharedRates::charge`], one `incr` each, run
//! together) and gives back every charge if any counter is over its limit, so a call refused
//! by one limit uses up nothing of the others (a call racing it may see the brief excess and
//! be refused too). The windows are read on a clock that is the wall-clock time at its first
//! reading plus tokio's time since (so tests can pause it): replicas agree on the windows as
//! far as their clocks agree.
//!
//! When the shared state cannot be reached, the call is not let through unchecked: the error
//! goes to the pipeline, which refuses the call unless the entry says `fail_open = true`, and
//! within the state's timeout (2 s).

use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};
use tokio::time::Instant;
use toolgate_core::duration::{self, Precision};
use toolgate_state::{SharedState, StateError};

use super::{Limiter, Rate, calls};

/// How long a window's counter outlives the window: room for replicas whose clocks lag.
const LINGER: Duration = Duration::from_secs(2);

/// An entry's counters in the shared state.
#[derive(Debug, Clone)]
pub(super) struct SharedRates {
    state: SharedState,
    /// The entry's part of each key.
    entry: String,
}

/// One counter charged for a call, to give back.
#[derive(Debug)]
pub(super) struct Charged {
    key: String,
    ttl: Duration,
}

impl SharedRates {
    /// The counters of the entry named `name`, in `state`.
    pub(super) fn new(state: SharedState, name: &str) -> SharedRates {
        let plain = name.len() <= 64
            && !name.is_empty()
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
        let entry = if plain { name.to_owned() } else { format!("h{}", hex(name.as_bytes())) };
        SharedRates { state, entry }
    }

    /// Charges one call to the counter of each of `limiters` that has a rate, all at once.
    /// `Ok(Ok(charged))`: every counter had room (give `charged` back with [`undo`] if the
    /// call does not go after all); `Ok(Err(reason))`: one did not, and every charge was given
    /// back; `Err`: the state could not be reached (what was charged is given back in the
    /// background).
    ///
    /// [`undo`]: SharedRates::undo
    pub(super) async fn charge(
        &self,
        limiters: &[std::sync::Arc<Limiter>],
    ) -> Result<Result<Vec<Charged>, String>, StateError> {
        let now = unix_millis();
        let counted: Vec<(&Limiter, Rate, Window, String)> = limiters
            .iter()
            .filter_map(|limiter| {
                let rate = limiter.bucket.as_ref()?.rate;
                let window = Window::of(rate, now);
                Some((&**limiter, rate, window, self.key(limiter, &window)))
            })
            .collect();
        let sums = futures::future::join_all(
            counted.iter().map(|(_, _, window, key)| self.state.incr(key, 1, window.ttl())),
        )
        .await;
        let mut charged = Vec::new();
        let mut refusal = None;
        let mut failure = None;
        for ((limiter, rate, window, key), sum) in counted.iter().zip(sums) {
            match sum {
                Ok(sum) => {
                    charged.push(Charged { key: key.clone(), ttl: window.ttl() });
                    if sum > i64::from(rate.calls) && refusal.is_none() {
                        refusal = Some(format!(
                            "{} is limited to {} per {}; try again in {}",
                            limiter.label,
                            calls(rate.calls.into()),
                            rate.per.name(),
                            duration::format_with(window.left, Precision::WaitRoundedUp)
                        ));
                    }
                }
                Err(error) => {
                    failure.get_or_insert(error);
                }
            }
        }
        if let Some(error) = failure {
            let this = self.clone();
            tokio::spawn(async move { this.undo(charged).await });
            return Err(error);
        }
        match refusal {
            Some(reason) => {
                self.undo(charged).await;
                Ok(Err(reason))
            }
            None => Ok(Ok(charged)),
        }
    }

    /// Gives back the calls `charged` (best effort: a counter that cannot be reached keeps
    /// its call until its window ends).
    pub(super) async fn undo(&self, charged: Vec<Charged>) {
        let undone = charged.iter().map(|c| self.state.incr(&c.key, -1, c.ttl));
        for (result, charge) in futures::future::join_all(undone).await.into_iter().zip(&charged) {
            if let Err(error) = result {
                tracing::debug!(key = %charge.key, "cannot give back a rate limit's charge: {error}");
            }
        }
    }

    fn key(&self, limiter: &Limiter, window: &Window) -> String {
        format!("limits/{}/{}/{}", self.entry, limiter.counter, window.number)
    }
}

/// The window of a rate's period that holds `now` (milliseconds since the Unix epoch).
#[derive(Debug, Clone, Copy)]
struct Window {
    number: u64,
    /// Until it ends.
    left: Duration,
}

impl Window {
    fn of(rate: Rate, now: u64) -> Window {
        let period = rate.per.period().as_millis() as u64;
        let number = now / period;
        Window { number, left: Duration::from_millis((number + 1) * period - now) }
    }

    fn ttl(&self) -> Duration {
        self.left + LINGER
    }
}

/// What identifies a limiter's counter: a hash of `identity` (its key, whose calls, which
/// tool) and its rate.
pub(super) fn counter(identity: &str, rate: Option<Rate>) -> String {
    let rate = rate.map(|r| format!("{}/{}", r.calls, r.per.name())).unwrap_or_default();
    hex(format!("{identity}\u{0}{rate}").as_bytes())
}

/// The first 16 bytes of `bytes`' SHA-256, in hex.
fn hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// Milliseconds since the Unix epoch: the wall-clock time at the first reading, plus tokio's
/// time since (behind it, for a runtime whose paused clock lags the first reading's).
pub(super) fn unix_millis() -> u64 {
    static ANCHOR: OnceLock<(Instant, u64)> = OnceLock::new();
    let (at, millis) = *ANCHOR.get_or_init(|| {
        let wall = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        (Instant::now(), wall.as_millis() as u64)
    });
    let now = Instant::now();
    match now.checked_duration_since(at) {
        Some(after) => millis + after.as_millis() as u64,
        None => millis.saturating_sub(at.duration_since(now).as_millis() as u64),
    }
}

#[cfg(test)]
mod tests;
