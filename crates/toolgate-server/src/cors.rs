//! CORS for browser clients of the HTTP front: a page served from an allowed origin (loopback,
//! or `[gateway] allowed_origins`) may send its preflight `OPTIONS /mcp` and read the answers,
//! including the `Mcp-Session-Id` and `Mcp-Protocol-Version` headers it needs to go on. Other
//! origins get no CORS headers (and their requests are refused by the origin check anyway).
//!
//! Origins are matched as the origin check matches them: `scheme://host:port`, with `:*` for
//! any port, and an entry without a port matching any port.

use std::time::Duration;

use http::{HeaderName, Method, header};
use tower_http::cors::{AllowOrigin, CorsLayer};

/// The headers a browser client sends besides the simple ones.
const REQUEST_HEADERS: [&str; 3] = ["mcp-session-id", "mcp-protocol-version", "last-event-id"];

/// The answer headers a browser client must be able to read.
const EXPOSED_HEADERS: [&str; 2] = ["mcp-session-id", "mcp-protocol-version"];

/// How long a browser may keep a preflight's answer.
const MAX_AGE: Duration = Duration::from_secs(3600);

/// The CORS layer for `origins` (entries as in the config).
pub(crate) fn layer(origins: impl IntoIterator<Item = String>) -> CorsLayer {
    let allowed: Vec<Pattern> = origins.into_iter().filter_map(|o| Pattern::parse(&o)).collect();
    let mut request_headers = vec![header::CONTENT_TYPE, header::ACCEPT, header::AUTHORIZATION];
    request_headers.extend(REQUEST_HEADERS.map(HeaderName::from_static));
    CorsLayer::new()
        .allow_origin(AllowOrigin::predicate(move |origin, _| {
            origin.to_str().is_ok_and(|origin| allowed.iter().any(|p| p.matches(origin)))
        }))
        .allow_methods([Method::GET, Method::POST, Method::DELETE])
        .allow_headers(request_headers)
        .expose_headers(EXPOSED_HEADERS.map(HeaderName::from_static))
        .max_age(MAX_AGE)
}

/// One allowed origin.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Pattern {
    scheme: String,
    host: String,
    /// `None`: any port.
    port: Option<u16>,
}

impl Pattern {
    pub(crate) fn parse(entry: &str) -> Option<Pattern> {
        let entry = entry.trim().trim_end_matches('/');
        let (base, any_port) = match entry.strip_suffix(":*") {
            Some(base) => (base, true),
            None => (entry, false),
        };
        let url = url::Url::parse(base).ok()?;
        let written_port = url.port();
        Some(Pattern {
            scheme: url.scheme().to_owned(),
            host: url.host_str()?.to_ascii_lowercase(),
            port: if any_port { None } else { written_port },
        })
    }

    /// Whether the `Origin` header value `origin` is this one.
    pub(crate) fn matches(&self, origin: &str) -> bool {
        let Ok(url) = url::Url::parse(origin) else { return false };
        let same = url.scheme() == self.scheme
            && url.host_str().is_some_and(|host| host.eq_ignore_ascii_case(&self.host));
        same && self.port.is_none_or(|port| url.port_or_known_default() == Some(port))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_match_by_scheme_host_and_port() {
        let any = Pattern::parse("http://localhost:*").expect("pattern");
        assert!(any.matches("http://localhost:5173"));
        assert!(any.matches("http://LOCALHOST:80"));
        assert!(!any.matches("https://localhost:5173"), "another scheme");
        assert!(!any.matches("http://localhost.evil.example:5173"), "another host");

        let exact = Pattern::parse("https://app.example:8443/").expect("pattern");
        assert!(exact.matches("https://app.example:8443"));
        assert!(!exact.matches("https://app.example"), "the default port is another one");

        let default = Pattern::parse("https://app.example:443").expect("pattern");
        assert_eq!(default.port, None, "url leaves the scheme's own port out: any port");
        let portless = Pattern::parse("https://app.example").expect("pattern");
        assert!(
            portless.matches("https://app.example") && portless.matches("https://app.example:9")
        );

        assert!(!any.matches("null"), "an opaque origin is not a loopback page");
        assert_eq!(Pattern::parse("not an origin"), None);
    }
}
