//! What can go wrong while reaching an upstream server.

use std::fmt;
use std::time::Duration;

/// An upstream could not be started, reached, or asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamError {
    /// A connection attempt failed.
    #[error("upstream {upstream}: {error}")]
    Connect { upstream: String, error: ConnectError },
    /// A request to a connected server failed.
    #[error("upstream {upstream}: {operation} failed: {}", crate::cause::describe(source.as_ref(), None))]
    Request {
        upstream: String,
        operation: &'static str,
        // Not `#[source]`: its chain is told in words above (rmcp's own text names types).
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
    #[error(
        "upstream {upstream}: connection lost during {operation} `{target}` (it may or may not \
         have been carried out)"
    )]
    ConnectionLost { upstream: String, operation: &'static str, target: String },
    /// The connection was dropped by a restart ([`crate::Upstream::restart`]) while the
    /// request was in flight.
    #[error(
        "upstream {upstream}: the server was restarted during {operation} `{target}` (it may or \
         may not have been carried out); try again"
    )]
    Restarted { upstream: String, operation: &'static str, target: String },
    /// A restart ([`crate::Upstream::restart`]) dropped the connection, and no new one could
    /// be made; the supervisor goes on trying with backoff.
    #[error("upstream {upstream}: restarted, but it did not come back: {reason}")]
    NotBack { upstream: String, reason: String },
    /// The server answered with something this request cannot use.
    #[error("upstream {upstream}: unexpected answer to {operation} `{target}`: {detail}")]
    Unexpected { upstream: String, operation: &'static str, target: String, detail: String },
    /// A 2026-07-28 server asked for input while serving the request, and the client (or
    /// toolgate's pipeline on its behalf) did not give it.
    #[error(
        "upstream {upstream}: {operation} `{target}` needed an answer to {method} from the \
         client, and got none: {message}"
    )]
    InputRefused {
        upstream: String,
        operation: &'static str,
        target: String,
        method: &'static str,
        message: String,
    },
    /// The server is restarting and did not come back within `waited`.
    #[error(
        "upstream {upstream}: the server is restarting, and did not come back within {} to \
         take {operation} `{target}`; try again shortly",
        toolgate_core::duration::format(*waited)
    )]
    Restarting { upstream: String, operation: &'static str, target: String, waited: Duration },
    /// The server is not connected (any more).
    #[error("upstream {upstream}: not connected")]
    Disconnected { upstream: String },
    /// The server wants a login (OAuth) that toolgate has not got, or that has expired.
    #[error("upstream {upstream} needs a login: run `toolgate login {upstream}`")]
    NeedsLogin { upstream: String },
}

/// Why one attempt to connect to an upstream failed, in words; [`UpstreamError::Connect`]
/// adds which upstream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The child process could not be spawned.
    #[error("cannot start `{command}`: {cause}")]
    Spawn { command: String, cause: String },
    /// A configured header is not a valid HTTP header.
    #[error("invalid header `{name}`")]
    Header { name: String },
    /// The server did not complete its handshake and listing in time.
    #[error("{endpoint} did not complete the MCP handshake within {}{stderr}", toolgate_core::duration::format(*timeout))]
    StartupTimeout { endpoint: Endpoint, timeout: Duration, stderr: StderrTail },
    /// The server could not be reached, or its handshake failed.
    #[error("{}{cause}{stderr}", endpoint.failed_prefix())]
    Failed { endpoint: Endpoint, cause: String, stderr: StderrTail },
    /// A child process ended before completing the MCP handshake, in the way `exit` says.
    #[error("{endpoint}: the process exited {exit} before completing the MCP handshake{stderr}")]
    Exited { endpoint: Endpoint, exit: ExitReason, stderr: StderrTail },
    /// The supervisor stopped before the first attempt ended.
    #[error("stopped before connecting")]
    Stopped,
    /// Another upstream already has its name.
    #[error("another server already has this name")]
    Duplicate,
    /// The server wants a login (OAuth) that toolgate has not got, or that has expired.
    #[error("needs a login: run `toolgate login {server}`")]
    NeedsLogin { server: String },
}

/// Where an upstream is: a URL, or the command that starts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// An HTTP server.
    Url(String),
    /// A child process, by its command line.
    Command(String),
    /// A server inside toolgate, by what serves it (a script's file).
    InProcess(String),
}

impl Endpoint {
    fn failed_prefix(&self) -> String {
        match self {
            Endpoint::Url(url) => format!("cannot connect to {url}: "),
            Endpoint::Command(command) => format!("`{command}`: "),
            Endpoint::InProcess(origin) => format!("{origin}: "),
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Url(url) => f.write_str(url),
            Endpoint::Command(command) => write!(f, "`{command}`"),
            Endpoint::InProcess(origin) => f.write_str(origin),
        }
    }
}

impl UpstreamError {
    /// The HTTP status an HTTP server answered with, when that is why the request failed.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            UpstreamError::Request { source, .. } => crate::cause::http_status_of(source.as_ref()),
            UpstreamError::Connect { error, .. } => crate::cause::http_status_of(error),
            _ => None,
        }
    }

    /// The name of the upstream this error is about.
    pub fn upstream(&self) -> &str {
        match self {
            UpstreamError::Connect { upstream, .. }
            | UpstreamError::Request { upstream, .. }
            | UpstreamError::Timeout { upstream, .. }
            | UpstreamError::Cancelled { upstream, .. }
            | UpstreamError::ConnectionLost { upstream, .. }
            | UpstreamError::Restarted { upstream, .. }
            | UpstreamError::NotBack { upstream, .. }
            | UpstreamError::Unexpected { upstream, .. }
            | UpstreamError::InputRefused { upstream, .. }
            | UpstreamError::Restarting { upstream, .. }
            | UpstreamError::Disconnected { upstream }
            | UpstreamError::NeedsLogin { upstream } => upstream,
        }
    }
}

/// How a child process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitReason {
    /// It exited with this status.
    Status(i32),
    /// A signal ended it.
    Signal(i32),
}

impl From<std::process::ExitStatus> for ExitReason {
    fn from(status: std::process::ExitStatus) -> ExitReason {
        use std::os::unix::process::ExitStatusExt as _;
        match (status.code(), status.signal()) {
            (Some(code), _) => ExitReason::Status(code),
            (None, Some(signal)) => ExitReason::Signal(signal),
            // Neither is for a stopped or continued child, which `wait` does not report.
            (None, None) => ExitReason::Status(-1),
        }
    }
}

impl fmt::Display for ExitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExitReason::Status(code) => write!(f, "with status {code}"),
            ExitReason::Signal(signal) => match nix::sys::signal::Signal::try_from(*signal) {
                Ok(name) => write!(f, "on signal {signal} ({name})"),
                Err(_) => write!(f, "on signal {signal}"),
            },
        }
    }
}

/// The last lines a child wrote to stderr, shown with start-up errors because they usually
/// say what went wrong (`command not found`, a missing token, ...).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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
