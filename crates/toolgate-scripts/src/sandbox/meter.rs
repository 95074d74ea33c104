//! What the `toolgate` module's native functions cost a script: the VM counts its own
//! instructions, but a native function (`tokens`, `regex`, `json`) does work in Rust that the
//! VM does not see, and a megabyte string makes one call of it as slow as a million
//! instructions. Each native function therefore [`charge`]s the invocation by the size of its
//! input before doing any work: one instruction per [`BYTES_PER_INSTRUCTION`] bytes, against
//! the same budget as the VM's instructions; an input over [`MAX_INPUT`] bytes is refused; the
//! memory it will use in Rust is [`reserve`]d against the invocation's memory limit; and past
//! the invocation's deadline every charge fails.
//!
//! A failed charge stops the VM (the native function returns a VM error, which a script
//! cannot catch) and records why, so the invocation fails as `budget`, `memory` or `timeout`
//! rather than as an error of the script.
//!
//! The meter is per thread, installed by [`Metered`] around each poll of an invocation (as
//! Rune's own budget is), so a native function finds the meter of the invocation that called
//! it. Outside an invocation (a native function called by a test) nothing is charged.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use rune::runtime::{VmError, VmResult};
use tokio::time::Instant;

/// The largest input one call of a native function takes, in bytes.
pub const MAX_INPUT: usize = 4 << 20;

/// How many bytes of input cost one instruction.
pub const BYTES_PER_INSTRUCTION: usize = 4;

/// Why an invocation was stopped from outside the VM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    Budget,
    Memory,
    Deadline,
}

/// The part of an invocation's budget that its native functions draw on, and its deadline.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Meter {
    /// Instructions left beyond the VM's current slice.
    pub(crate) instructions: usize,
    pub(crate) deadline: Instant,
    /// Set when a charge failed.
    pub(crate) stopped: Option<Stop>,
}

impl Meter {
    pub(crate) fn new(instructions: usize, deadline: Instant) -> Meter {
        Meter { instructions, deadline, stopped: None }
    }
}

thread_local! {
    static METER: Cell<Option<Meter>> = const { Cell::new(None) };
}

/// Runs `f` with `meter` installed on this thread; the meter as `f` left it.
pub(crate) fn with<T>(meter: Meter, f: impl FnOnce() -> T) -> (T, Meter) {
    let before = METER.with(|m| m.replace(Some(meter)));
    let out = f();
    let after = METER.with(|m| m.replace(before)).unwrap_or(meter);
    (out, after)
}

/// A future run with a meter installed around each of its polls.
pub(crate) struct Metered<F> {
    meter: Meter,
    future: Pin<Box<F>>,
}

impl<F: Future> Metered<F> {
    pub(crate) fn new(meter: Meter, future: F) -> Metered<F> {
        Metered { meter, future: Box::pin(future) }
    }
}

impl<F: Future> Future for Metered<F> {
    type Output = (F::Output, Meter);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let (poll, meter) = with(this.meter, || this.future.as_mut().poll(cx));
        this.meter = meter;
        poll.map(|out| (out, meter))
    }
}

/// Charges the running invocation for a native function's `bytes` of input: refused over
/// [`MAX_INPUT`], past the deadline, or when the budget cannot pay for it.
pub(crate) fn charge(bytes: usize) -> VmResult<()> {
    if bytes > MAX_INPUT {
        return VmResult::err(VmError::panic(format!(
            "an input of {bytes} bytes is more than the {MAX_INPUT} a toolgate function takes"
        )));
    }
    let cost = bytes / BYTES_PER_INSTRUCTION + 1;
    let stop = METER.with(|cell| {
        let mut meter = cell.get()?;
        let stop = if Instant::now() >= meter.deadline {
            Some(Stop::Deadline)
        } else if cost <= meter.instructions {
            meter.instructions -= cost;
            None
        } else {
            Some(Stop::Budget)
        };
        meter.stopped = meter.stopped.or(stop);
        cell.set(Some(meter));
        stop
    });
    match stop {
        None => VmResult::Ok(()),
        Some(stop) => stopped(stop),
    }
}

/// Memory held against the invocation's memory limit while a native function works with
/// memory the VM does not see; given back when dropped.
pub(crate) struct Reservation {
    _held: rune::alloc::Vec<u8>,
}

/// Reserves `bytes` of the invocation's memory limit (Rune's allocation limit, which counts
/// every allocation the VM makes; the reservation is an allocation whose pages are never
/// touched).
pub(crate) fn reserve(bytes: usize) -> VmResult<Reservation> {
    match rune::alloc::Vec::try_with_capacity(bytes) {
        Ok(held) => VmResult::Ok(Reservation { _held: held }),
        Err(_) => {
            METER.with(|cell| {
                if let Some(mut meter) = cell.get() {
                    meter.stopped = meter.stopped.or(Some(Stop::Memory));
                    cell.set(Some(meter));
                }
            });
            stopped(Stop::Memory)
        }
    }
}

/// Records that the running invocation went over its memory limit (a native function's
/// output did not fit) and stops it.
pub(crate) fn out_of_memory<T>() -> VmResult<T> {
    METER.with(|cell| {
        if let Some(mut meter) = cell.get() {
            meter.stopped = meter.stopped.or(Some(Stop::Memory));
            cell.set(Some(meter));
        }
    });
    stopped(Stop::Memory)
}

fn stopped<T>(stop: Stop) -> VmResult<T> {
    VmResult::err(VmError::panic(match stop {
        Stop::Budget => "the instruction budget is spent",
        Stop::Memory => "the memory limit is reached",
        Stop::Deadline => "the deadline has passed",
    }))
}
