//! One invocation of a script function, contained: at most so many VM instructions, so many
//! bytes of allocations, so much wall-clock time, and a panic in native code caught. A script
//! has no file, network or process access to begin with: the Rune context it is compiled
//! against has only Rune's core modules (no `fs`, `net` or `process`, which live in
//! `rune-modules`, not used here) and toolgate's own (`module.rs`), and output to stdout is
//! switched off, because on stdio that is the MCP channel.
//!
//! The instruction budget is what stops a loop: the VM counts instructions and halts when the
//! budget is spent, so a busy script occupies its thread for at most that many instructions.
//! The wall-clock timeout covers time spent waiting (a native future), which the budget does
//! not count.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt as _;
use rune::alloc::limit;
use rune::runtime::{Args, RuntimeContext, RuntimeError, ToValue, budget};
use rune::{Unit, Value, Vm};

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

/// Calls `function` of `unit` with `args` under `limits`; its value as JSON.
pub(crate) async fn invoke(
    runtime: Arc<RuntimeContext>,
    unit: Arc<Unit>,
    function: &str,
    args: impl Args + Send,
    limits: Limits,
) -> Result<serde_json::Value, Failure> {
    let vm = Vm::new(runtime, unit);
    let execution =
        vm.send_execute([function], args).map_err(|e| classify(&e.to_string(), limits))?;
    let running =
        budget::with(limits.instructions, limit::with(limits.memory, execution.async_complete()));
    let caught = AssertUnwindSafe(running).catch_unwind();
    let value = match tokio::time::timeout(limits.timeout, caught).await {
        Err(_) => return Err(Failure::Timeout(limits.timeout)),
        Ok(Err(panic)) => return Err(Failure::Panic(panic_message(&*panic))),
        Ok(Ok(result)) => result.into_result().map_err(|e| classify(&e.to_string(), limits))?,
    };
    to_json(&value)
}

/// Calls `function` of `unit` synchronously (for `meta()`, at compile time).
pub(crate) fn invoke_sync(
    runtime: Arc<RuntimeContext>,
    unit: Arc<Unit>,
    function: &str,
    limits: Limits,
) -> Result<serde_json::Value, Failure> {
    let mut vm = Vm::new(runtime, unit);
    let call = || vm.call([function], ());
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
        budget::with(limits.instructions, limit::with(limits.memory, call)).call()
    }));
    match result {
        Err(panic) => Err(Failure::Panic(panic_message(&*panic))),
        Ok(Err(error)) => Err(classify(&error.to_string(), limits)),
        Ok(Ok(value)) => to_json(&value),
    }
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
fn classify(message: &str, limits: Limits) -> Failure {
    if message.contains("`limited`") {
        Failure::Budget(limits.instructions)
    } else if message.contains("allocat") || message.contains("out of memory") {
        Failure::Memory(limits.memory)
    } else if let Some(reason) = message.strip_prefix("Panicked: ") {
        Failure::Panic(reason.to_owned())
    } else {
        Failure::Error(message.to_owned())
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}
