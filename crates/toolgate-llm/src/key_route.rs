//! Where an API key may be sent: over `https://`, or over plain `http://` only to this
//! machine.
//!
//! A key sent over plain `http://` to another host can be read by anyone on the path (a
//! shared Wi-Fi, a proxy, the LAN), and a config from a checkout could point `base_url` at a
//! host of its own choosing. A model server on this machine (Ollama, llama.cpp, vLLM on
//! `localhost`) is the one place plain HTTP is fine: the key never leaves the machine. The
//! agent's providers ([`crate::provider::connect`]) and the `enrich` interceptor both refuse,
//! naming the setting, when [`plain_http_host`] finds a key would travel in the clear.

use std::net::{IpAddr, Ipv6Addr};

use url::{Host, Url};

/// `host[:port]` of `url` when a key sent to it would travel in the clear: its scheme is
/// `http` and its host is not this machine (`localhost`, `127.0.0.0/8`, `[::1]`). `None` for
/// `https://`, for a loopback `http://`, and for what is not a URL (reported elsewhere).
pub fn plain_http_host(url: &str) -> Option<String> {
    let url = Url::parse(url).ok()?;
    if url.scheme() != "http" || is_loopback(&url) {
        return None;
    }
    let host = url.host_str()?;
    Some(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    })
}

/// Whether `url`'s host is this machine.
fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => is_loopback_v6(ip),
        None => false,
    }
}

fn is_loopback_v6(ip: Ipv6Addr) -> bool {
    ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| IpAddr::V4(v4).is_loopback())
}

#[cfg(test)]
mod tests;
