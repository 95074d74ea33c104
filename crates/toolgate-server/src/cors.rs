//! CORS for browser clients of the HTTP front: a page served from an allowed origin (loopback,
//! or `[gateway] allowed_origins`) may send its preflight `OPTIONS /mcp` and read the answers,
//! including the `Mcp-Session-Id` and `Mcp-Protocol-Version` headers it needs to go on. Other
//! origins get no CORS headers (and their requests are refused by the origin check anyway).
//!
//! Origins are matched as the origin check (`crate::http::guard`) matches them, by the same
//! [`Pattern`]: `scheme://host:port` for that port only (a port the scheme implies too, written
//! or not: `https://a.example:443` is not `https://a.example:8443`), `:*` for any port, and an
//! entry without a port for any port.
//!
//! The request headers a page may send are what its preflight asks for: the MCP headers include
//! `Mcp-Param-<Name>` for any name a tool's schema chooses, which no fixed list covers, and the
//! origin is already one the operator allowed.

use std::time::Duration;

use http::{HeaderName, Method};
use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer};

/// The answer headers a browser client must be able to read.
// `www-authenticate`: a browser client reads the 401's challenge to find where to log in.
const EXPOSED_HEADERS: [&str; 3] = ["mcp-session-id", "mcp-protocol-version", "www-authenticate"];

/// How long a browser may keep a preflight's answer.
const MAX_AGE: Duration = Duration::from_secs(3600);

/// The CORS layer for `origins` (entries as in the config).
pub(crate) fn layer(origins: impl IntoIterator<Item = String>) -> CorsLayer {
    let allowed: Vec<Pattern> = origins.into_iter().filter_map(|o| Pattern::parse(&o)).collect();
    CorsLayer::new()
        .allow_origin(AllowOrigin::predicate(move |origin, _| {
            origin.to_str().is_ok_and(|origin| allowed.iter().any(|p| p.matches(origin)))
        }))
        .allow_methods([Method::GET, Method::POST, Method::DELETE])
        .allow_headers(AllowHeaders::mirror_request())
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
        // The url crate forgets a port the scheme implies; the entry's own text says whether one
        // was written.
        let authority = base.split_once("://").map_or(base, |(_, rest)| rest);
        let written = authority
            .rsplit_once(':')
            .is_some_and(|(_, port)| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()));
        Some(Pattern {
            scheme: url.scheme().to_owned(),
            host: url.host_str()?.to_ascii_lowercase(),
            port: if any_port || !written { None } else { url.port_or_known_default() },
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
        assert_eq!(default.port, Some(443), "a written port is that port, implied or not");
        assert!(
            default.matches("https://app.example") && default.matches("https://app.example:443")
        );
        assert!(!default.matches("https://app.example:8443"));
        let ipv6 = Pattern::parse("http://[::1]:*").expect("pattern");
        assert!(ipv6.matches("http://[::1]:5173"));
        let ipv6_portless = Pattern::parse("http://[::1]").expect("pattern");
        assert_eq!(ipv6_portless.port, None, "the colons of an IPv6 address are no port");
        let portless = Pattern::parse("https://app.example").expect("pattern");
        assert!(
            portless.matches("https://app.example") && portless.matches("https://app.example:9")
        );

        assert!(!any.matches("null"), "an opaque origin is not a loopback page");
        assert_eq!(Pattern::parse("not an origin"), None);
    }
}
