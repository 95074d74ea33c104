//! toolgate's scripts in Rune (see ARCHITECTURE.md, `toolgate-scripts`).
//!
//! - [`Engine`]: the Rune context with the `toolgate` module (`module.rs`), and the limits
//!   every invocation runs under;
//! - [`Script`]: one `.rn` file, compiled (`compile.rs`), swapped whole when it changes, its
//!   functions called in the sandbox (`sandbox.rs`: instructions, memory, wall-clock time,
//!   panics);
//! - [`Scripts`]: the scripts of the process by file, and what a change to a file does;
//! - [`hooks`]: what the interceptor hooks take and return, as JSON;
//! - [`tools`]: a script's own tools, and [`calls`]: how they call other tools;
//! - [`serve`]: a script's tools served as an MCP server;
//! - [`watch`]: the files watched, debounced, and reloaded.

pub mod calls;
mod compile;
pub mod hooks;
mod meta;
mod module;
mod registry;
mod sandbox;
mod script;
pub mod serve;
pub mod tools;
pub mod watch;

pub use compile::{CompileError, Diagnostic};
pub use meta::ScriptMeta;
pub use module::{API, ApiItem, MAX_RATE_KEY, reference};
pub use registry::{LoadError, Scripts, discover};
pub use sandbox::{
    BYTES_PER_INSTRUCTION, Failure, INLINE_BUDGET, Limits, MAX_INPUT, MAX_WORKERS, SLICE,
};
pub use script::{Compiled, Engine, EngineError, Script};

/// The functions a script may define that make it an interceptor.
pub const HOOKS: &[&str] = &["before_call", "after_call", "on_list_tools"];

/// How long one call of a script's own tool may take when `[scripts] tool_timeout` does not
/// say (it may call other tools, which take their time).
pub const DEFAULT_TOOL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// A script's starting point, for `toolgate script new`.
pub const TEMPLATE: &str = include_str!("template.rn");
