//! toolgate's downstream MCP server (see ARCHITECTURE.md, `toolgate-server`).
//!
//! [`Gateway`] owns the upstreams and the inventory and dispatches requests by exposed name;
//! [`GatewayHandler`] is the rmcp server over it; [`serve_stdio`] and [`serve_http`] put it on a
//! transport. `error` is the one place where errors become MCP answers.

mod admin;
mod caller;
mod connections;
mod cors;
mod error;
mod gateway;
mod handler;
mod http;
mod jsonrpc;
mod line_transport;
mod link;
pub mod methods;
mod mrtr;
mod protocol;
mod record;
mod script_tools;
mod serve;
mod session;
mod stdio;

pub use admin::{AdminTokens, admin_router, serve_admin};
pub use connections::{
    ConnectionLimits, DEFAULT_BODY_TIMEOUT, DEFAULT_HEADER_TIMEOUT, DEFAULT_MAX_CONNECTIONS,
};
pub use error::GatewayError;
pub use gateway::{FailedUpstream, Gateway, InProcess, SubscriptionBounds};
pub use handler::{GatewayHandler, INTERCEPTORS_LIST, interceptors_list};
pub use http::{
    DEFAULT_MAX_LISTEN_STREAMS, DEFAULT_MAX_LISTEN_STREAMS_PER_CLIENT, DEFAULT_MAX_SESSIONS,
    DEFAULT_MAX_SESSIONS_PER_CLIENT, DEFAULT_SESSION_IDLE, DEFAULT_STREAM_MAX_AGE,
    DEFAULT_STREAM_QUEUE,
};
pub use jsonrpc::DEFAULT_MAX_MESSAGE_BYTES;
pub use record::Recorder;
pub use script_tools::{GatewayCaller, ScriptTools};
pub use serve::{
    DEFAULT_GRACE, HttpOptions, MCP_PATH, RESPONSE_FLUSH, ServeError, http_router, serve_http,
    serve_stdio,
};
pub use session::{MOST_SUBSCRIBED_BYTES, MOST_SUBSCRIPTIONS, Session, Sessions};
pub use toolgate_upstream::StartupWait;
