//! What can go wrong while reaching an upstream server.

use std::fmt;
use std::time::Duration;

use toolgate_core::BoxError;

/// An upstream could not be started, reached, or asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamError {
    /// The child process could not be spawned.
    #[error("upstream {upstream}: cannot start `{command}`")]
    Spawn {
        upstream: String,
        command: String,
        #[source]
        source: std::io::Error,
    },
    /// A configured header is not a valid HTTP header.
    #[error("upstream {upstream}: invalid header `{name}`")]
    Header { upstream: String, name: String },
    /// The server did not finish its handshake in time.
    #[error("upstream {upstream}: not ready within {}{stderr}", toolgate_core::duration::format(*timeout))]
    StartupTimeout { upstream: String, timeout: Duration, stderr: StderrTail },
    /// The server could not be reached, or its handshake failed.
    #[error("upstream {upstream}: connection failed{stderr}")]
    Connect {
        upstream: String,
        stderr: StderrTail,
        #[source]
        source: BoxError,
    },
    /// A request to a connected server failed.
    #[error("upstream {upstream}: {operation} failed")]
    Request {
        upstream: String,
        operation: &'static str,
        #[source]
        source: Box<rmcp::ServiceError>,
    },
    /// A request went `timeout` without an answer or progress, or (`in_all`) reached the
    /// hard maximum however much progress it reported. The upstream was sent a cancellation.
    #[error(
        "upstream {upstream}: {operation} `{target}` timed out after {}{}",
        toolgate_core::duration::format(*timeout),
        if *in_all { " in all (the limit however much progress it reports)" } else { " without progress" }
    )]
    Timeout {
        upstream: String,
        operation: &'static str,
        target: String,
        timeout: Duration,
        in_all: bool,
    },
    /// The caller gave up; the upstream was told.
    #[error("upstream {upstream}: {operation} `{target}` cancelled by the client")]
    Cancelled { upstream: String, operation: &'static str, target: String },
    /// The connection was lost while the request was in flight.
    #[error("upstream {upstream}: connection lost during {operation} `{target}`")]
    ConnectionLost { upstream: String, operation: &'static str, target: String },
    /// The server answered with something this request cannot use.
    #[error("upstream {upstream}: unexpected answer to {operation} `{target}`: {detail}")]
    Unexpected { upstream: String, operation: &'static str, target: String, detail: String },
    /// The first connection attempt failed (the cause, flattened to text, is kept so that
    /// every waiter can see it).
    #[error("upstream {upstream}: {reason}")]
    Failed { upstream: String, reason: String },
    /// The server is not connected (any more).
    #[error("upstream {upstream}: not connected")]
    Disconnected { upstream: String },
}

impl UpstreamError {
    /// The name of the upstream this error is about.
    pub fn upstream(&self) -> &str {
        match self {
            UpstreamError::Spawn { upstream, .. }
            | UpstreamError::Header { upstream, .. }
            | UpstreamError::StartupTimeout { upstream, .. }
            | UpstreamError::Connect { upstream, .. }
            | UpstreamError::Request { upstream, .. }
            | UpstreamError::Timeout { upstream, .. }
            | UpstreamError::Cancelled { upstream, .. }
            | UpstreamError::ConnectionLost { upstream, .. }
            | UpstreamError::Unexpected { upstream, .. }
            | UpstreamError::Failed { upstream, .. }
            | UpstreamError::Disconnected { upstream } => upstream,
        }
    }
}

/// The last lines a child wrote to stderr, shown with start-up errors because they usually
/// say what went wrong (`command not found`, a missing token, ...).
#[derive(Debug, Clone, Default)]
pub struct StderrTail(pub Vec<String>);

impl fmt::Display for StderrTail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return Ok(());
        }
        f.write_str(" (its stderr ended with:")?;
        for line in &self.0 {
            write!(f, "\n    {line}")?;
        }
        f.write_str(")")
    }
}

/// Both HTTP transports were tried for a `transport = "auto"` server.
#[derive(Debug, thiserror::Error)]
#[error("streamable HTTP failed ({streamable}), and so did legacy SSE ({sse})")]
pub struct BothTransportsFailed {
    pub(crate) streamable: String,
    pub(crate) sse: String,
}
