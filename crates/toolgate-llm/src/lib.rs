//! What toolgate knows about LLMs: how many tokens a text costs a model ([`tokens`]), what a
//! model reads of an MCP tool result ([`content`]), how that result is handed to each
//! provider's API ([`format`](mod@format)), a conversation in no provider's words ([`chat`]),
//! and the providers themselves ([`provider`]: OpenAI Chat Completions and Responses, Anthropic
//! Messages, OpenAI-compatible servers; streaming), with tool names and schemas adapted to each
//! ([`tool_names`], [`schema`]), and where an API key may be sent ([`key_route`]: never over
//! plain `http://` to another machine), and what tokens cost at list prices ([`pricing`]).
//!
//! Only [`provider`] does IO (HTTP to the model's API).

pub mod chat;
pub mod content;
pub mod format;
pub mod key_route;
pub mod pricing;
pub mod provider;
pub mod schema;
pub mod tokens;
pub mod tool_names;
