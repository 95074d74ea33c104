//! The bound on responses being made at once, in all and per caller: a request past either is
//! answered `429` with `Retry-After`, before any work. A streamed response holds its place until
//! it ends, also when its client has gone (it is still finished and stored when it asked to be;
//! one nobody will read is cancelled, see `responses`), so a caller that opens streams and walks
//! away cannot pile up work.
//!
//! Counted under one lock rather than with semaphores: a per-caller semaphore would be a map
//! entry that must be removed when its last permit goes, which is this count with more steps.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use axum::http::StatusCode;

use crate::error::ApiError;

/// The default of `[llm] max_in_flight`.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 64;
/// The default of `[llm] max_in_flight_per_caller`.
pub const DEFAULT_MAX_IN_FLIGHT_PER_CALLER: usize = 16;

/// How many responses are being made, in all and by whom.
#[derive(Debug)]
pub(crate) struct InFlight {
    most: usize,
    most_per_caller: usize,
    counts: Mutex<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    /// Only callers with a response being made: at most `most` entries.
    by_caller: HashMap<String, usize>,
}

/// A place taken; given back when dropped.
#[derive(Debug)]
pub(crate) struct Place {
    in_flight: Arc<InFlight>,
    caller: String,
}

impl InFlight {
    pub(crate) fn new(most: usize, most_per_caller: usize) -> Arc<InFlight> {
        Arc::new(InFlight {
            most: most.max(1),
            most_per_caller: most_per_caller.max(1),
            counts: Mutex::default(),
        })
    }

    /// A place for one of `caller`'s responses, or the 429 that refuses it.
    pub(crate) fn admit(self: &Arc<Self>, caller: &str) -> Result<Place, ApiError> {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        if counts.total >= self.most {
            return Err(busy(format!(
                "the gateway is making {} responses, its most ([llm] max_in_flight); try again \
                 shortly",
                self.most
            )));
        }
        let mine = counts.by_caller.get(caller).copied().unwrap_or(0);
        if mine >= self.most_per_caller {
            return Err(busy(format!(
                "you have {mine} responses being made, the most for one caller ([llm] \
                 max_in_flight_per_caller); wait for one to end"
            )));
        }
        counts.total += 1;
        *counts.by_caller.entry(caller.to_owned()).or_default() += 1;
        Ok(Place { in_flight: Arc::clone(self), caller: caller.to_owned() })
    }

    /// Responses being made now.
    #[cfg(test)]
    fn total(&self) -> usize {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner).total
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut counts = self.in_flight.counts.lock().unwrap_or_else(PoisonError::into_inner);
        counts.total = counts.total.saturating_sub(1);
        if let Some(mine) = counts.by_caller.get_mut(&self.caller) {
            *mine -= 1;
            if *mine == 0 {
                counts.by_caller.remove(&self.caller);
            }
        }
    }
}

fn busy(message: String) -> ApiError {
    ApiError {
        status: StatusCode::TOO_MANY_REQUESTS,
        kind: "requests",
        message,
        param: None,
        code: Some("rate_limit_exceeded"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_past_its_share_is_refused_and_others_are_not() {
        let in_flight = InFlight::new(3, 2);
        let a1 = in_flight.admit("user:a").expect("first");
        let _a2 = in_flight.admit("user:a").expect("second");
        let refused = in_flight.admit("user:a").expect_err("a third of a's");
        assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
        assert!(refused.message.contains("max_in_flight_per_caller"), "{}", refused.message);
        let _b = in_flight.admit("user:b").expect("b has its own share");
        let full = in_flight.admit("user:c").expect_err("all three places taken");
        assert!(full.message.contains("[llm] max_in_flight)"), "{}", full.message);
        drop(a1);
        assert_eq!(in_flight.total(), 2);
        let _c = in_flight.admit("user:c").expect("a place came back");
    }

    #[test]
    fn callers_leave_no_entry_behind() {
        let in_flight = InFlight::new(10, 10);
        for i in 0..1000 {
            drop(in_flight.admit(&format!("user:{i}")).unwrap());
        }
        let counts = in_flight.counts.lock().unwrap();
        assert_eq!(counts.total, 0);
        assert!(counts.by_caller.is_empty(), "{:?}", counts.by_caller.len());
    }
}
