//! toolgate's fixture MCP server, for tests, benchmarks and the `toolgate` binary's built-in
//! demo upstream (see ARCHITECTURE.md, `toolgate-test`).
//!
//! - [`Fixture`]: the server handler: every fixture of the MCP conformance suite (so the suite
//!   passes against it), plus `echo`, `large`, `slow`, `fail`, `crash`, `env_get`, `env_names`,
//!   `meta_echo`, `list_roots`, `spawn_child`, `stderr` and `rich_echo` for toolgate's own tests, and `toggle_tool` /
//!   `touch_resource` to make it send change notifications. It speaks both protocol eras:
//!   2025-11-25 sessions (server→client requests, `resources/subscribe`) and 2026-07-28
//!   (MRTR `input_required` rounds, `subscriptions/listen`);
//! - [`FixtureHub`]: what the sessions of one server share (`dynamic_tool`, subscribers);
//! - [`serve_stdio`], [`serve_http`], [`serve_sse`]: the fixture on each transport, the last
//!   being the legacy HTTP+SSE transport rmcp no longer has;
//! - [`FixtureProcess`], [`fixture_bin`]: the `toolgate-fixture` binary out of process;
//! - [`fake_llm`]: a fake LLM provider (OpenAI Chat Completions and Responses, Anthropic
//!   Messages; streamed or not) answering from a script and recording what it received, in
//!   process or as `toolgate-fixture fake-llm`;
//! - [`deps`]: where the test dependencies of `scripts/install-test-deps` are, for every
//!   crate's tests, failing the test that needs one that is missing;
//! - [`oidc`]: a real OAuth authorization server (oidc-provider, from the npm test
//!   dependencies) for the tests of toolgate as a resource server;
//! - [`tinyproxy`]: Debian's tinyproxy as a real HTTP proxy, for the egress tests;
//! - [`postgres`]: a throwaway PostgreSQL server of Debian's, for what keeps state in one;
//! - [`redis`]: a throwaway Redis server of Debian's, for the shared state's tests;
//! - [`haproxy`]: Debian's HAProxy as a round-robin load balancer in front of several gateways.

pub mod deps;
mod diagnostic;
pub mod fake_llm;
mod fixture;
pub mod haproxy;
mod http;
mod hub;
mod input;
pub mod oidc;
pub mod postgres;
mod process;
pub mod redis;
mod rug_pull;
pub mod secret_service;
mod sse;
mod stdio;
pub mod tinyproxy;
mod tool;

pub use fixture::{Fixture, FixtureEvent, FixtureOptions};
pub use http::serve_http;
pub use hub::FixtureHub;
pub use process::{FixtureProcess, fixture_bin};
pub use rug_pull::LAST_STAGE as RUG_PULL_LAST_STAGE;
pub use sse::serve_sse;
pub use stdio::serve_stdio;

/// The transports the fixture speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum FixtureTransport {
    /// Newline-delimited JSON-RPC on stdin/stdout.
    Stdio,
    /// Streamable HTTP at `/mcp`.
    Http,
    /// Legacy HTTP+SSE (2024-11-05) at `/sse`.
    Sse,
}

impl FixtureTransport {
    /// The name used on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::Http => "http",
            Self::Sse => "sse",
        }
    }

    /// The path the transport serves, for the network ones.
    pub fn path(self) -> Option<&'static str> {
        match self {
            Self::Stdio => None,
            Self::Http => Some("/mcp"),
            Self::Sse => Some("/sse"),
        }
    }
}

impl std::fmt::Display for FixtureTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
