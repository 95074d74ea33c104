//! toolgate's fronts (see ARCHITECTURE.md, `toolgate-server`): the MCP server a client talks
//! to, over stdio ([`serve_stdio`]) and streamable HTTP ([`serve_http`]). A front brings the
//! transport and what a connection or session holds; every request it parses goes to the
//! gateway's one dispatcher (`toolgate_gateway::Dispatcher`).

mod connections;
mod cors;
mod http;
mod jsonrpc;
mod oauth_callback;
mod serve;
mod stdio;

pub use connections::{
    ConnectionLimits, DEFAULT_BODY_TIMEOUT, DEFAULT_HEADER_TIMEOUT, DEFAULT_MAX_CONNECTIONS,
};
pub use http::seal;
pub use http::{
    AuthSetupError, Authenticator, DEFAULT_MAX_LISTEN_STREAMS,
    DEFAULT_MAX_LISTEN_STREAMS_PER_CLIENT, DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_CLIENT,
    DEFAULT_SESSION_IDLE, DEFAULT_STREAM_MAX_AGE, DEFAULT_STREAM_QUEUE,
};
pub use jsonrpc::DEFAULT_MAX_MESSAGE_BYTES;
pub use serve::{
    DEFAULT_GRACE, HttpOptions, MCP_PATH, RESPONSE_FLUSH, ServeError, http_router, serve_http,
    serve_router, serve_stdio,
};
pub use stdio::{MOST_LISTENING, MOST_RUNNING};
