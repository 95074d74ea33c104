//! Why an upstream could not be reached, started or asked, in words a person can act on:
//! `connection refused`, `cannot resolve host`, a TLS failure, an HTTP status with what it
//! usually means, an answer that is not MCP, a process that exited.
//!
//! rmcp's errors name Rust types (`Transport [toolgate_upstream::...]`) and end their cause
//! chains where a transport error is boxed, so the chain is walked by hand, through the rmcp
//! types that hide their causes, down to the error that says what happened.

use std::error::Error;
use std::io;

use rmcp::ServiceError;
use rmcp::service::ClientInitializeError;
use rmcp::transport::streamable_http_client::StreamableHttpError;
use rmcp::transport::worker::WorkerQuitReason;

use crate::sse::SseError;

type Node<'a> = &'a (dyn Error + 'static);

/// The errors in `error`'s chain, outermost first, including the causes rmcp's types hold
/// without exposing them as `source()`.
pub(crate) fn chain(error: Node<'_>) -> Vec<Node<'_>> {
    let mut nodes = Vec::new();
    let mut next = Some(error);
    while let Some(node) = next {
        nodes.push(node);
        next = hidden_cause(node).or_else(|| node.source());
        if nodes.len() > 32 {
            break;
        }
    }
    nodes
}

/// The cause an rmcp error holds but does not return from `source()`.
fn hidden_cause(error: Node<'_>) -> Option<Node<'_>> {
    if let Some(error) = error.downcast_ref::<ClientInitializeError>() {
        return match error {
            ClientInitializeError::TransportError { error, .. } => Some(error.error.as_ref()),
            // Discovery failed and so did `initialize`: the second says more (the first is
            // usually a method-not-found from a server of the older era).
            ClientInitializeError::LegacyFallbackFailed { fallback, .. } => Some(fallback.as_ref()),
            _ => None,
        };
    }
    if let Some(ServiceError::TransportSend(error)) = error.downcast_ref::<ServiceError>() {
        return Some(error.error.as_ref());
    }
    type Worker = WorkerQuitReason<StreamableHttpError<reqwest::Error>>;
    if let Some(WorkerQuitReason::Fatal { error, .. }) = error.downcast_ref::<Worker>() {
        return Some(error);
    }
    if let Some(StreamableHttpError::Client(error)) =
        error.downcast_ref::<StreamableHttpError<reqwest::Error>>()
    {
        return Some(error);
    }
    None
}

/// The HTTP status an HTTP server answered with, when that is what went wrong (anywhere in
/// `error`'s chain).
pub(crate) fn http_status_of(error: Node<'_>) -> Option<u16> {
    chain(error).into_iter().find_map(|node| {
        if let Some(reqwest) = node.downcast_ref::<reqwest::Error>() {
            return reqwest.status().map(|status| status.as_u16());
        }
        if let Some(error) = node.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            return match error {
                StreamableHttpError::AuthRequired(_) => Some(401),
                StreamableHttpError::InsufficientScope(_) => Some(403),
                StreamableHttpError::HttpStatus(status) => Some(status.status),
                StreamableHttpError::UnexpectedServerResponse(text) => {
                    status_in(text).map(|(code, _)| code)
                }
                _ => None,
            };
        }
        if let Some(SseError::Status { status, .. }) = node.downcast_ref::<SseError>() {
            return Some(status.as_u16());
        }
        None
    })
}

/// What went wrong, in words, for a server at `url` (`None` for a child process).
pub(crate) fn describe(error: Node<'_>, url: Option<&str>) -> String {
    let nodes = chain(error);
    // A handshake the other side ended says more than the closed pipe under it.
    for node in &nodes {
        if let Some(closed @ ClientInitializeError::ConnectionClosed(_)) =
            node.downcast_ref::<ClientInitializeError>()
        {
            return handshake(closed, url).unwrap_or_default();
        }
    }
    // Otherwise the most specific cause is usually the deepest one that is recognised.
    for node in nodes.iter().rev() {
        if let Some(words) = recognise(*node, url) {
            return words;
        }
    }
    // Nothing recognised: the deepest message, which is the most specific, without the
    // operating system's error numbers.
    let deepest = nodes.last().map(ToString::to_string).unwrap_or_default();
    strip_os_error(&deepest)
}

/// Words for one error of a kind that says something a person can act on.
fn recognise(error: Node<'_>, url: Option<&str>) -> Option<String> {
    if let Some(io) = error.downcast_ref::<io::Error>() {
        return Some(io_error(io, url));
    }
    if let Some(reqwest) = error.downcast_ref::<reqwest::Error>() {
        if reqwest.is_timeout() {
            return Some("timed out waiting for an answer".to_owned());
        }
        if let Some(status) = reqwest.status() {
            return Some(http_status(status.as_u16(), status.canonical_reason()));
        }
        let text = reqwest.to_string();
        if text.contains("dns error") {
            return Some(unresolved(url));
        }
        return None;
    }
    if let Some(error) = error.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        return streamable_http(error);
    }
    if let Some(error) = error.downcast_ref::<SseError>() {
        return match error {
            SseError::Status { status, .. } => {
                Some(http_status(status.as_u16(), status.canonical_reason()))
            }
            SseError::NotEventStream { content_type, .. } => Some(not_mcp(content_type)),
            SseError::NoEndpoint => Some(
                "the server closed its event stream without naming where to send messages \
                 (not a legacy SSE MCP server)"
                    .to_owned(),
            ),
            SseError::BadEndpoint(endpoint) => Some(format!(
                "the server named {endpoint:?} as the place to send messages, which is not \
                 a URL on the same server"
            )),
            _ => None,
        };
    }
    if let Some(error) = error.downcast_ref::<ClientInitializeError>() {
        return handshake(error, url);
    }
    if let Some(error) = error.downcast_ref::<crate::egress::EgressError>() {
        return Some(error.to_string());
    }
    if let Some(error) = error.downcast_ref::<ServiceError>() {
        return match error {
            ServiceError::TransportClosed => Some("the connection closed".to_owned()),
            ServiceError::Cancelled { .. } => Some("the request was cancelled".to_owned()),
            ServiceError::UnexpectedResponse => {
                Some("the server answered with something of the wrong kind".to_owned())
            }
            ServiceError::McpError(error) => {
                Some(format!("the server answered with an error: {}", error.message))
            }
            _ => None,
        };
    }
    if error.to_string().starts_with("dns error") {
        return Some(unresolved(url));
    }
    None
}

fn io_error(error: &io::Error, url: Option<&str>) -> String {
    let tls = url.is_some_and(|u| u.starts_with("https:"));
    match error.kind() {
        io::ErrorKind::ConnectionRefused => "connection refused".to_owned(),
        io::ErrorKind::TimedOut => "timed out".to_owned(),
        io::ErrorKind::ConnectionReset => "the server reset the connection".to_owned(),
        io::ErrorKind::ConnectionAborted => "the connection was aborted".to_owned(),
        io::ErrorKind::NotFound if url.is_none() => "command not found".to_owned(),
        io::ErrorKind::PermissionDenied if url.is_none() => {
            "permission denied (is it executable?)".to_owned()
        }
        io::ErrorKind::NetworkUnreachable | io::ErrorKind::HostUnreachable => {
            "the network or host is unreachable".to_owned()
        }
        io::ErrorKind::UnexpectedEof | io::ErrorKind::BrokenPipe if url.is_none() => {
            "the process exited (or closed its input) before it answered".to_owned()
        }
        io::ErrorKind::UnexpectedEof | io::ErrorKind::BrokenPipe => {
            "the connection closed".to_owned()
        }
        _ if error.to_string().contains("failed to lookup address") => unresolved(url),
        _ if tls => tls_failure(&error.to_string()),
        _ => strip_os_error(&error.to_string()),
    }
}

/// A TLS failure, in words (rustls's own texts name its enums).
fn tls_failure(text: &str) -> String {
    if text.contains("corrupt message") || text.contains("InvalidContentType") {
        "the TLS handshake failed: the server does not speak TLS there (should the URL be \
         http: rather than https:?)"
            .to_owned()
    } else if text.contains("received fatal alert: CertificateRequired") {
        "the TLS handshake failed: the server asks for a client certificate (tls.client_cert and \
         tls.client_key)"
            .to_owned()
    } else if text.contains("invalid peer certificate: UnknownIssuer") {
        "the server's TLS certificate was not accepted: it is not signed by a trusted authority \
         (UnknownIssuer; `tls.ca` adds one)"
            .to_owned()
    } else if let Some(rest) = text.split("invalid peer certificate:").nth(1) {
        format!("the server's TLS certificate was not accepted ({})", rest.trim())
    } else if let Some(rest) = text.split("unexpected error: ").nth(1) {
        // rustls's `General` errors: ours (`egress`), written to be read as they are.
        format!("the TLS handshake failed: {}", strip_os_error(rest))
    } else {
        format!("the TLS handshake failed: {}", strip_os_error(text))
    }
}

fn streamable_http(error: &StreamableHttpError<reqwest::Error>) -> Option<String> {
    Some(match error {
        StreamableHttpError::AuthRequired(_) => http_status(401, Some("Unauthorized")),
        StreamableHttpError::InsufficientScope(_) => http_status(403, Some("Forbidden")),
        StreamableHttpError::HttpStatus(status) => http_status(status.status, None),
        StreamableHttpError::UnexpectedServerResponse(text) => match status_in(text) {
            Some((code, reason)) => http_status(code, Some(reason)),
            None => format!("the server's answer is not MCP: {text}"),
        },
        StreamableHttpError::UnexpectedContentType(content_type) => {
            not_mcp(content_type.as_deref().unwrap_or("no content type"))
        }
        StreamableHttpError::Deserialize(_) => {
            "the server's answer is not MCP (not a JSON-RPC message)".to_owned()
        }
        StreamableHttpError::UnexpectedEndOfStream => {
            "the server ended its answer before sending it whole".to_owned()
        }
        StreamableHttpError::SessionExpired => {
            "the server forgot the session (404 for a session it had given)".to_owned()
        }
        _ => return None,
    })
}

fn handshake(error: &ClientInitializeError, url: Option<&str>) -> Option<String> {
    Some(match error {
        ClientInitializeError::ConnectionClosed(_) if url.is_none() => {
            "the process exited (or closed its output) before completing the MCP handshake"
                .to_owned()
        }
        ClientInitializeError::ConnectionClosed(_) => {
            "the server closed the connection before completing the MCP handshake".to_owned()
        }
        ClientInitializeError::JsonRpcError(error) => {
            format!("the server refused the MCP handshake: {}", error.message)
        }
        ClientInitializeError::ExpectedInitResponse(_)
        | ClientInitializeError::ExpectedInitResult(_)
        | ClientInitializeError::ConflictInitResponseId(..)
        | ClientInitializeError::UncorrelatedErrorResponse { .. } => {
            "the server answered the MCP handshake with something else (is it an MCP server?)"
                .to_owned()
        }
        ClientInitializeError::NoCompatibleProtocolVersion { server_supported, .. } => {
            let versions: Vec<String> = server_supported.iter().map(ToString::to_string).collect();
            format!(
                "the server speaks no protocol version toolgate speaks (it offers {})",
                versions.join(", ")
            )
        }
        _ => return None,
    })
}

/// `HTTP 403 Forbidden: ...` in rmcp's text for an unexpected response.
fn status_in(text: &str) -> Option<(u16, &str)> {
    let rest = text.strip_prefix("HTTP ")?;
    let (code, rest) = rest.split_once(' ')?;
    let reason = rest.split(':').next().unwrap_or_default().trim();
    Some((code.parse().ok()?, reason))
}

/// An HTTP status, with what it usually means for an MCP server.
fn http_status(code: u16, reason: Option<&str>) -> String {
    let status = match reason {
        Some(reason) if !reason.is_empty() => format!("{code} {reason}"),
        _ => code.to_string(),
    };
    let hint = match code {
        401 => "it wants credentials: set `headers`, such as Authorization",
        403 => "the credentials were refused, or do not allow this",
        404 => {
            "nothing is served at this URL; check its path, often /mcp, or /sse for legacy servers"
        }
        405 => "this URL does not take MCP requests: check its path",
        406 | 415 => "it does not accept MCP's content types",
        429 => "too many requests: it asks toolgate to slow down",
        500..=599 => "the server failed",
        _ => "",
    };
    if hint.is_empty() {
        format!("the server answered {status}")
    } else {
        format!("the server answered {status} ({hint})")
    }
}

fn not_mcp(content_type: &str) -> String {
    format!(
        "the server answered with {content_type}, which is not MCP (expected JSON or an event \
         stream)"
    )
}

fn unresolved(url: Option<&str>) -> String {
    let host =
        url.and_then(|u| url::Url::parse(u).ok()).and_then(|u| u.host_str().map(str::to_owned));
    match host {
        Some(host) => format!("cannot resolve host `{host}`"),
        None => "cannot resolve the host name".to_owned(),
    }
}

/// `No such file or directory (os error 2)` without `(os error 2)`.
fn strip_os_error(text: &str) -> String {
    match text.find(" (os error ") {
        Some(at) if text.ends_with(')') => text[..at].to_owned(),
        _ => text.to_owned(),
    }
}

#[cfg(test)]
mod tests;
