//! Who may talk to the HTTP front at all: the `Host` a request names must be loopback or in
//! `[gateway] allowed_hosts`, and its `Origin`, when it has one (a browser page), loopback or in
//! `[gateway] allowed_origins`. This is what stops DNS rebinding: a page on an attacker's
//! domain that resolves to 127.0.0.1 names the attacker's host and origin, not ours.

use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode, Uri, header};

use crate::cors::Pattern;

/// The hosts and origins the front answers.
#[derive(Debug, Clone)]
pub(crate) struct Guard {
    hosts: Vec<AllowedHost>,
    origins: Vec<Pattern>,
}

/// An allowed `Host`: a name, and a port unless any port will do.
#[derive(Debug, Clone, PartialEq)]
struct AllowedHost {
    host: String,
    port: Option<u16>,
}

impl AllowedHost {
    fn parse(entry: &str) -> Option<AllowedHost> {
        let entry = entry.trim();
        if entry.is_empty() {
            return None;
        }
        match entry.parse::<http::uri::Authority>() {
            Ok(authority) => {
                Some(AllowedHost { host: normalize(authority.host()), port: authority.port_u16() })
            }
            Err(_) => Some(AllowedHost { host: normalize(entry), port: None }),
        }
    }
}

/// A host as compared: lower case, IPv6 without brackets.
fn normalize(host: &str) -> String {
    host.trim_matches(|c| c == '[' || c == ']').to_ascii_lowercase()
}

impl Guard {
    /// A guard that lets `hosts` and `origins` (entries as in the config) in.
    pub(crate) fn new<'a>(
        hosts: impl IntoIterator<Item = &'a str>,
        origins: impl IntoIterator<Item = &'a str>,
    ) -> Guard {
        Guard {
            hosts: hosts.into_iter().filter_map(AllowedHost::parse).collect(),
            origins: origins.into_iter().filter_map(Pattern::parse).collect(),
        }
    }

    /// Checks a request's `Host` (or HTTP/2 `:authority`) and `Origin`; the refusal to send
    /// otherwise (400 for a header that cannot be read, 403 for one not allowed).
    pub(crate) fn check(&self, uri: &Uri, headers: &HeaderMap) -> Result<(), Response> {
        let named = match headers.get(header::HOST) {
            Some(value) => {
                let text = value
                    .to_str()
                    .map_err(|_| refuse(StatusCode::BAD_REQUEST, "the Host header is not text"))?;
                text.parse::<http::uri::Authority>()
                    .map_err(|_| refuse(StatusCode::BAD_REQUEST, "the Host header is not a host"))?
            }
            None => uri
                .authority()
                .cloned()
                .ok_or_else(|| refuse(StatusCode::BAD_REQUEST, "the request names no host"))?,
        };
        let host = normalize(named.host());
        let port = named.port_u16();
        let allowed = self
            .hosts
            .iter()
            .any(|allowed| allowed.host == host && allowed.port.is_none_or(|p| Some(p) == port));
        if !allowed {
            tracing::warn!(host = %named, "refused a request for a host that is not allowed (DNS rebinding?)");
            return Err(refuse(
                StatusCode::FORBIDDEN,
                "Forbidden: the Host header is not allowed (add it to [gateway] allowed_hosts)",
            ));
        }
        let Some(origin) = headers.get(header::ORIGIN) else { return Ok(()) };
        let origin = origin.to_str().map_err(|_| {
            refuse(StatusCode::FORBIDDEN, "Forbidden: the Origin header is not text")
        })?;
        if self.origins.iter().any(|pattern| pattern.matches(origin)) {
            return Ok(());
        }
        tracing::warn!(%origin, "refused a request from an origin that is not allowed");
        Err(refuse(
            StatusCode::FORBIDDEN,
            "Forbidden: the Origin header is not allowed (add it to [gateway] allowed_origins)",
        ))
    }
}

fn refuse(status: StatusCode, why: &'static str) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], why).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard() -> Guard {
        Guard::new(
            ["localhost", "127.0.0.1", "::1", "gateway.example:8443"],
            ["http://localhost:*", "https://app.example"],
        )
    }

    fn check(host: Option<&str>, origin: Option<&str>) -> Option<u16> {
        let mut headers = HeaderMap::new();
        if let Some(host) = host {
            headers.insert(header::HOST, host.parse().unwrap());
        }
        if let Some(origin) = origin {
            headers.insert(header::ORIGIN, origin.parse().unwrap());
        }
        guard().check(&Uri::from_static("/mcp"), &headers).err().map(|r| r.status().as_u16())
    }

    #[test]
    fn loopback_and_configured_hosts_pass() {
        for host in
            ["localhost", "127.0.0.1:9000", "[::1]:80", "LOCALHOST:1", "gateway.example:8443"]
        {
            assert_eq!(check(Some(host), None), None, "{host}");
        }
    }

    #[test]
    fn other_hosts_are_forbidden_and_unreadable_ones_bad() {
        assert_eq!(check(Some("evil.example"), None), Some(403));
        assert_eq!(check(Some("gateway.example:443"), None), Some(403), "another port");
        assert_eq!(check(Some("localhost.evil.example"), None), Some(403));
        assert_eq!(check(Some("a b"), None), Some(400));
        assert_eq!(check(None, None), Some(400), "no host at all");
    }

    #[test]
    fn origins_pass_only_when_allowed() {
        assert_eq!(check(Some("localhost"), Some("http://localhost:5173")), None);
        assert_eq!(check(Some("localhost"), Some("https://app.example")), None);
        assert_eq!(check(Some("localhost"), Some("https://evil.example")), Some(403));
        assert_eq!(check(Some("localhost"), Some("null")), Some(403));
    }
}
