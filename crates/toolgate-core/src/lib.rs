//! toolgate's shared vocabulary (see ARCHITECTURE.md, `toolgate-core`).
//!
//! Names of exposed tools and prompts, error helpers, retry backoff, durations as text, an
//! interceptor's [`Mode`], the names of the [`ResultFormat`]s of tool results for LLM APIs,
//! canonical JSON and the hashes taken over it, trace context in `_meta` ([`trace`]), and the MCP model types re-exported as
//! [`mcp`]. Nothing in this crate does IO.

pub mod backoff;
pub mod canonical;
pub mod duration;
pub mod error;
pub mod hash;
pub mod log_level;
pub mod mode;
pub mod name;
pub mod result_format;
pub mod trace;

/// The MCP wire types (rmcp's model), used qualified: `mcp::Tool`, `mcp::ErrorData`.
pub use rmcp::model as mcp;

pub use error::{BoxError, ErrorChain};
pub use mode::Mode;
pub use result_format::ResultFormat;
