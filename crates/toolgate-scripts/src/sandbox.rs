//! One invocation of a script function, contained: at most so many VM instructions, so many
//! bytes of allocations, so much wall-clock time, and a panic in native code caught. A script
//! has no file, network or process access to begin with: the Rune context it is compiled
//! against has only Rune's core modules (no `fs`, `net` or `process`, which live in
//! `rune-modules`, not used here) and toolgate's own (`module.rs`), and output to stdout is
//! switched off, because on stdio that is the MCP channel.
//!
//! A script's own tool runs on the script threads (`pool.rs`), never on a worker of the
//! gateway's runtime, and in slices: the VM runs at most [`SLICE`] instructions, then the
//! sandbox (outside the VM, where the script cannot skip it) looks at the clock, stops the
//! invocation past its deadline or when the budget is spent, and otherwise lets the other
//! invocations of the thread run before resuming it. A hook, on the path of every call, runs
//! on the caller's thread in one go when its budget is at most [`INLINE_BUDGET`] (the default):
//! the budget, which the VM counts and cannot skip, then bounds how long it keeps the thread
//! to milliseconds, without the cost of handing it to another thread (about 50 µs here); a
//! hook given a larger budget runs on the script threads like a tool. The `toolgate` module's
//! native functions are charged by the size of their input, and the memory they use in Rust
//! counts against the memory limit (`meter.rs`), so no single call of one can stall a thread
//! either. The wall-clock timeout also covers the time spent waiting (a native future), which
//! no budget counts.

mod meter;
mod pool;

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt as _;
use rune::alloc::limit;
use rune::runtime::{GeneratorState, RuntimeContext, RuntimeError, ToValue, VmError, budget};
use rune::{Unit, Value, Vm};
use tokio::time::Instant;

use crate::calls::{self, ToolAccess};
pub use meter::{BYTES_PER_INSTRUCTION, MAX_INPUT};
use meter::{Meter, Metered, Stop};
pub(crate) use meter::{charge, out_of_memory, reserve};
pub use pool::MAX_WORKERS;

/// The instructions a VM runs before the sandbox looks at the clock and lets the other
/// invocations of its thread run.
pub const SLICE: usize = 10_000;

/// The limits of one invocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// VM instructions.
    pub instructions: usize,
    /// Bytes the script may allocate.
    pub memory: usize,
    /// Wall-clock time.
    pub timeout: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            instructions: 1_000_000,
            memory: 16 * 1024 * 1024,
            timeout: Duration::from_secs(1),
        }
    }
}

/// Why an invocation gave no value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    #[error("it used up its budget of {0} instructions")]
    Budget(usize),
    #[error("it went over its memory limit of {0} bytes")]
    Memory(usize),
    #[error("it did not finish within {}", toolgate_core::duration::format(*.0))]
    Timeout(Duration),
    #[error("it panicked: {0}")]
    Panic(String),
    #[error("{0}")]
    Error(String),
    /// It returned `Err(reason)`.
    #[error("it returned an error: {0}")]
    Returned(String),
    #[error("it returned a value that is not JSON ({0})")]
    NotJson(String),
}

impl Failure {
    /// A short name of the cause, for events: `budget`, `memory`, `timeout`, `panic`, `error`.
    pub fn cause(&self) -> &'static str {
        match self {
            Failure::Budget(_) => "budget",
            Failure::Memory(_) => "memory",
            Failure::Timeout(_) => "timeout",
            Failure::Panic(_) => "panic",
            Failure::Error(_) | Failure::Returned(_) | Failure::NotJson(_) => "error",
        }
    }
}

/// A JSON value handed to a script as a Rune value.
pub(crate) struct Json(pub(crate) serde_json::Value);

impl ToValue for Json {
    fn to_value(self) -> Result<Value, RuntimeError> {
        serde_json::from_value(self.0).map_err(|error| RuntimeError::panic(error.to_string()))
    }
}

/// The largest instruction budget an invocation may run on the caller's thread with (see
/// [`Placement::Bounded`]): with native functions charged by the size of their input, this
/// many instructions take tens of milliseconds at most.
pub const INLINE_BUDGET: usize = 1_000_000;

/// Where an invocation runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Placement {
    /// On the script threads, in slices, the deadline checked between them: for a script's
    /// own tools, which may run for as long as their `tool_timeout`.
    Pool,
    /// On the caller's thread when the budget bounds how long it can keep it (at most
    /// [`INLINE_BUDGET`] instructions; a hook, on the path of every call, then costs no
    /// hand-over to another thread), and on the script threads otherwise.
    Bounded,
}

/// Calls `function` of `unit` with `args` (at most three) under `limits`, where `placement`
/// says; its value as JSON. `toolgate::call` goes through `access` (none: it is an error),
/// the call itself running on the caller's runtime.
pub(crate) async fn invoke(
    runtime: Arc<RuntimeContext>,
    unit: Arc<Unit>,
    function: String,
    args: Vec<serde_json::Value>,
    limits: Limits,
    access: Option<ToolAccess>,
    placement: Placement,
) -> Result<serde_json::Value, Failure> {
    let home = tokio::runtime::Handle::current();
    if placement == Placement::Bounded && limits.instructions <= INLINE_BUDGET {
        return inline(runtime, unit, &function, args, limits, access, home).await;
    }
    let invocation = move || async move {
        let deadline = Instant::now() + limits.timeout;
        let mut vm = Vm::new(runtime, unit);
        let mut args = args.into_iter().map(Json);
        let name = [function.as_str()];
        let execution = match (args.next(), args.next(), args.next()) {
            (None, _, _) => vm.execute(name, ()),
            (Some(a), None, _) => vm.execute(name, (a,)),
            (Some(a), Some(b), None) => vm.execute(name, (a, b)),
            (Some(a), Some(b), Some(c)) => vm.execute(name, (a, b, c)),
        };
        let mut execution = execution.map_err(|e| classify(&e, limits))?;
        let stepped = async {
            let mut left = limits.instructions;
            loop {
                let slice = next_slice(&mut left, deadline, limits)?;
                let meter = Meter::new(left, deadline);
                let resumed = budget::with(slice, execution.async_resume());
                let (result, meter) = Metered::new(meter, resumed).await;
                left = meter.instructions;
                match ended(result.into_result(), meter.stopped, limits)? {
                    Some(value) => return to_json(&value),
                    None => tokio::task::yield_now().await,
                }
            }
        };
        let running = calls::within(access, home, limit::with(limits.memory, stepped));
        tokio::time::timeout_at(deadline, running)
            .await
            .unwrap_or(Err(Failure::Timeout(limits.timeout)))
    };
    match pool::run(invocation).await {
        Ok(outcome) => outcome,
        Err(pool::Lost::Panicked(message)) => Err(Failure::Panic(message)),
        Err(pool::Lost::NoThread) => {
            Err(Failure::Error("no script thread could be started to run it".to_owned()))
        }
    }
}

/// [`invoke`] on this thread, the whole budget at once: the VM stops when it is spent, a
/// native function when its allowance is or the deadline has passed, and awaits give the
/// thread up as any task's do.
async fn inline(
    runtime: Arc<RuntimeContext>,
    unit: Arc<Unit>,
    function: &str,
    args: Vec<serde_json::Value>,
    limits: Limits,
    access: Option<ToolAccess>,
    home: tokio::runtime::Handle,
) -> Result<serde_json::Value, Failure> {
    let deadline = Instant::now() + limits.timeout;
    let vm = Vm::new(runtime, unit);
    let mut args = args.into_iter().map(Json);
    let execution = match (args.next(), args.next(), args.next()) {
        (None, _, _) => vm.send_execute([function], ()),
        (Some(a), None, _) => vm.send_execute([function], (a,)),
        (Some(a), Some(b), None) => vm.send_execute([function], (a, b)),
        (Some(a), Some(b), Some(c)) => vm.send_execute([function], (a, b, c)),
    }
    .map_err(|e| classify(&e, limits))?;
    let completed =
        budget::with(limits.instructions, limit::with(limits.memory, execution.async_complete()));
    // Native functions cannot draw on the VM's budget while it runs: they have an allowance
    // of the same size.
    let metered = Metered::new(Meter::new(limits.instructions, deadline), completed);
    let caught = AssertUnwindSafe(calls::within(access, home, metered)).catch_unwind();
    let (result, meter) = match tokio::time::timeout_at(deadline, caught).await {
        Err(_) => return Err(Failure::Timeout(limits.timeout)),
        Ok(Err(panic)) => return Err(Failure::Panic(panic_message(&*panic))),
        Ok(Ok(ended)) => ended,
    };
    let value = result.into_result().map(GeneratorState::Complete);
    match ended(value, meter.stopped, limits)? {
        Some(value) => to_json(&value),
        // It ran out of its whole budget.
        None => Err(Failure::Budget(limits.instructions)),
    }
}

/// Calls `function` of `unit` on this thread (for `meta()` and `tools()`, at compile time),
/// in slices as [`invoke`] does; it cannot await.
pub(crate) fn invoke_sync(
    runtime: Arc<RuntimeContext>,
    unit: Arc<Unit>,
    function: &str,
    limits: Limits,
) -> Result<serde_json::Value, Failure> {
    let deadline = Instant::now() + limits.timeout;
    let mut vm = Vm::new(runtime, unit);
    let mut execution = vm.execute([function], ()).map_err(|e| classify(&e, limits))?;
    let stepped = || {
        let mut left = limits.instructions;
        loop {
            let slice = next_slice(&mut left, deadline, limits)?;
            let (result, meter) = meter::with(Meter::new(left, deadline), || {
                budget::with(slice, || execution.resume()).call()
            });
            left = meter.instructions;
            if let Some(value) = ended(result.into_result(), meter.stopped, limits)? {
                return to_json(&value);
            }
        }
    };
    std::panic::catch_unwind(AssertUnwindSafe(|| limit::with(limits.memory, stepped).call()))
        .unwrap_or_else(|panic| Err(Failure::Panic(panic_message(&*panic))))
}

/// The instructions of the next slice, taken from `left`; the failure when the deadline has
/// passed or nothing is left.
fn next_slice(left: &mut usize, deadline: Instant, limits: Limits) -> Result<usize, Failure> {
    if Instant::now() >= deadline {
        return Err(Failure::Timeout(limits.timeout));
    }
    if *left == 0 {
        return Err(Failure::Budget(limits.instructions));
    }
    let slice = (*left).min(SLICE);
    *left -= slice;
    Ok(slice)
}

/// What a slice ended with: the value, `None` to run another slice (it used its budget up),
/// or the failure (a native function's charge that stopped it says why).
fn ended(
    result: Result<GeneratorState, VmError>,
    stopped: Option<Stop>,
    limits: Limits,
) -> Result<Option<Value>, Failure> {
    if let Some(stop) = stopped {
        return Err(match stop {
            Stop::Budget => Failure::Budget(limits.instructions),
            Stop::Memory => Failure::Memory(limits.memory),
            Stop::Deadline => Failure::Timeout(limits.timeout),
        });
    }
    match result {
        Ok(GeneratorState::Complete(value)) => Ok(Some(value)),
        Ok(GeneratorState::Yielded(_)) => Err(Failure::Error(
            "it yielded, as a generator does; a hook or tool returns".to_owned(),
        )),
        // The slice's budget is spent: the VM stopped before its next instruction, and resumes
        // there.
        Err(error) if is_limited(&error) => Ok(None),
        Err(error) => Err(classify(&error, limits)),
    }
}

/// Whether the VM stopped because its budget was spent (the VM's error kinds are private to
/// Rune; their messages are not).
fn is_limited(error: &VmError) -> bool {
    error.to_string().contains("`limited`")
}

/// `value` as JSON; a `Result` is unwrapped: `Ok(v)` is `v`, `Err(e)` is [`Failure::Returned`].
fn to_json(value: &Value) -> Result<serde_json::Value, Failure> {
    if let Ok(result) = value.borrow_ref::<Result<Value, Value>>() {
        return match &*result {
            Ok(value) => to_json(value),
            Err(error) => Err(Failure::Returned(match serde_json::to_value(error) {
                Ok(serde_json::Value::String(text)) => text,
                Ok(other) => other.to_string(),
                Err(_) => "an error that is not JSON".to_owned(),
            })),
        };
    }
    serde_json::to_value(value).map_err(|error| Failure::NotJson(error.to_string()))
}

/// What a VM error says, as a [`Failure`] (the VM's error kinds are private to Rune; their
/// messages are not).
fn classify(error: &VmError, limits: Limits) -> Failure {
    let message = error.to_string();
    if is_limited(error) {
        Failure::Budget(limits.instructions)
    } else if message.contains("allocat") || message.contains("out of memory") {
        Failure::Memory(limits.memory)
    } else if let Some(reason) = message.strip_prefix("Panicked: ") {
        Failure::Panic(reason.to_owned())
    } else {
        Failure::Error(message)
    }
}

pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

#[cfg(test)]
mod tests;
