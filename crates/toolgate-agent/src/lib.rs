//! toolgate's agent: a conversation with a model that calls the gateway's tools, and the
//! sessions it is stored in.
//!
//! - [`store`]: conversations in SQLite (messages, tool calls and results, usage), resumable.
//! - [`trim`]: a long conversation fitted to the model's context, oldest tool results first.

pub mod store;
pub mod trim;
