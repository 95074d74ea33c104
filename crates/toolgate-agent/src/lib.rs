//! toolgate's agent: a conversation with a model that calls the gateway's tools, and the
//! sessions it is stored in.
//!
//! - [`agent`]: the loop (prompt, streamed answer, tool calls in parallel, results back,
//!   until a final answer or the turn limit);
//! - [`host`]: what the loop works with: the tools ([`host::ToolHost`]), the person's screen
//!   ([`host::Frontend`]) and questions ([`host::Interaction`]);
//! - [`gateway_host`]: the gateway in the same process as the host, so every call passes the
//!   pipeline with the agent as its principal; the agent as an MCP client (sampling,
//!   elicitation, roots, progress);
//! - [`settings`]: which provider and model, from config, environment and flags;
//! - [`store`]: conversations in SQLite (messages, tool calls and results, usage), resumable.
//! - [`trim`]: a long conversation fitted to the model's context, oldest tool results first.

// Sampling and roots are deprecated in MCP 2026-07-28 (SEP-2577), and still answered here for
// the servers of the era before.
#![allow(deprecated)]

pub mod agent;
pub mod gateway_host;
pub mod host;
pub mod settings;
pub mod store;
pub mod trim;
