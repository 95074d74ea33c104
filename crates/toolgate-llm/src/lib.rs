//! What toolgate knows about LLMs: how many tokens a text costs a model ([`tokens`]), and how
//! an MCP tool result is handed to each provider's API ([`format`]).
//!
//! No IO: the agent's providers and the `enrich` transform do their HTTP elsewhere and use
//! these for the shapes and the counting.

pub mod format;
pub mod tokens;
