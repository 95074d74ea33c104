//! What toolgate knows about LLMs: how many tokens a text costs a model ([`tokens`]), how an
//! MCP tool result is handed to each provider's API ([`format`]), a conversation in no
//! provider's words ([`chat`]), and the providers themselves ([`provider`]: OpenAI Chat
//! Completions and Responses, Anthropic Messages, OpenAI-compatible servers; streaming).
//!
//! Only [`provider`] does IO (HTTP to the model's API).

pub mod chat;
pub mod format;
pub mod provider;
pub mod tokens;
