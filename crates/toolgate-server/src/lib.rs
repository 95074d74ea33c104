//! toolgate's downstream MCP server (see ARCHITECTURE.md, `toolgate-server`).
//!
//! [`Gateway`] owns the upstreams and the inventory and dispatches requests by exposed name;
//! [`GatewayHandler`] is the rmcp server over it; [`serve_stdio`] and [`serve_http`] put it on a
//! transport. `error` is the one place where errors become MCP answers.

mod caller;
mod error;
mod gateway;
mod handler;
mod jsonrpc;
mod line_transport;
mod serve;
mod session;

pub use gateway::{FailedUpstream, Gateway, GatewayError};
pub use handler::GatewayHandler;
pub use jsonrpc::DEFAULT_MAX_MESSAGE_BYTES;
pub use serve::{
    DEFAULT_GRACE, HttpOptions, MCP_PATH, RESPONSE_FLUSH, ServeError, http_router, serve_http,
    serve_stdio,
};
pub use session::{Session, Sessions};
