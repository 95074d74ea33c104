//! Egress: how toolgate's requests leave the machine. `[proxy]` for MCP traffic, and each
//! HTTP server's `proxy` and `tls`; `[agent]` and the `enrich` interceptor take a `proxy` of
//! the same spelling for their model's traffic.
//!
//! ```toml
//! [proxy]                                  # MCP traffic only; replaces HTTP(S)_PROXY/NO_PROXY
//! http = "http://proxy.corp:3128"          # for http:// servers
//! https = "http://user:${PROXY_PASS}@proxy.corp:3128"   # for https:// servers (a secret)
//! no_proxy = ["localhost", ".internal", "10.0.0.0/8"]   # or "localhost,.internal"
//!
//! [servers.x]
//! url = "https://mcp.example.com/mcp"
//! proxy = "http://other:3128"              # this server only; `false`: direct
//! tls = { ca = "ca.pem", client_cert = "me.pem", client_key = "me.key", pin_sha256 = ["..."] }
//! ```
//!
//! Which proxy a server's requests take, first that applies: its own `proxy`, then `[proxy]`,
//! then the usual variables (`HTTP_PROXY`, `HTTPS_PROXY`, `NO_PROXY`, `ALL_PROXY`, and their
//! lowercase forms), read by the HTTP client as it is built. It is resolved here, into each
//! server's [`HttpConfig::proxy`](crate::HttpConfig::proxy).
//!
//! The TLS files are read and their PEM checked here, relative to the file that names them, so
//! that a missing file or a bad PEM is a config error naming the field.

use base64::Engine as _;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::check::{Checker, optional};
use crate::error::{index_path, io_reason, key_path};
use crate::model::{PemFile, ProxyChoice, ProxyConfig, Secret, TlsConfig};
use crate::value::Value;

const PROXY_KEYS: &[&str] = &["http", "https", "no_proxy"];
const TLS_KEYS: &[&str] =
    &["ca", "client_cert", "client_key", "pin_sha256", "insecure_skip_verify"];

/// `[proxy]`.
pub(crate) fn check_proxy_table(cx: &mut Checker<'_>, value: &Value) -> Option<ProxyConfig> {
    let entries = cx.table(value, "proxy")?;
    let fields = cx.known_keys(entries, "proxy", PROXY_KEYS);
    let at = |key: &str| key_path("proxy", key);
    let http = optional(fields.get("http").copied(), |v| proxy_url(cx, v, &at("http")));
    let https = optional(fields.get("https").copied(), |v| proxy_url(cx, v, &at("https")));
    let no_proxy = optional(fields.get("no_proxy").copied(), |v| no_proxy(cx, v, &at("no_proxy")));
    Some(ProxyConfig { http: http?, https: https?, no_proxy: no_proxy?.unwrap_or_default() })
}

/// A `proxy` of its own (a server's, `[agent]`'s, `enrich`'s): a URL, or `false` for none.
pub(crate) fn check_proxy_choice(
    cx: &mut Checker<'_>,
    value: &Value,
    path: &str,
) -> Option<ProxyChoice> {
    match value {
        Value::Boolean(false) => Some(ProxyChoice::Direct),
        Value::String(_) => {
            proxy_url(cx, value, path).map(|url| ProxyChoice::Via(ProxyConfig::all(url)))
        }
        Value::Boolean(true) => {
            cx.error(path, "`true` says nothing: write the proxy's URL, or false to go direct");
            None
        }
        other => {
            cx.expected(path, "a proxy URL (\"http://host:port\") or false", other);
            None
        }
    }
}

/// A proxy's URL: `http://` or `https://`, a host, no path. A secret (it may hold
/// `user:pass@`): never quoted in a message.
pub(crate) fn proxy_url(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<Secret> {
    let text = cx.string(value, path)?;
    let text = cx.secret(|cx| cx.interpolate(text, path))?;
    let text = text.trim();
    if let Err(why) = proxy_url_problem(text) {
        cx.error(path, format!("invalid proxy URL: {why} (expected \"http://host:port\")"));
        return None;
    }
    Some(Secret::new(text))
}

/// What is wrong with a proxy URL, if anything (in words that do not quote it).
pub fn proxy_url_problem(text: &str) -> Result<(), &'static str> {
    if !text.contains("://") {
        return Err("no scheme (write http:// before the host)");
    }
    let url = url::Url::parse(text).map_err(|_| "not a URL")?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err("the scheme must be http or https");
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("no host");
    }
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err("a proxy URL has no path, query or fragment");
    }
    Ok(())
}

/// `no_proxy`: a list, or one comma-separated string as the variable writes it.
fn no_proxy(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<Vec<String>> {
    let entries: Vec<(String, String)> = match value {
        Value::String(text) => {
            let text = cx.interpolate(text, path)?;
            text.split(',')
                .map(str::trim)
                .filter(|entry| !entry.is_empty())
                .map(|entry| (path.to_owned(), entry.to_owned()))
                .collect()
        }
        Value::Array(_) => {
            let items = cx.strings(value, path)?;
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                out.push((
                    index_path(path, i),
                    cx.interpolate(item, &index_path(path, i))?.trim().to_owned(),
                ));
            }
            out
        }
        other => {
            cx.expected(path, "a list of hosts, or a comma-separated string of them", other);
            return None;
        }
    };
    let mut ok = true;
    for (at, entry) in &entries {
        if let Err(why) = no_proxy_entry(entry) {
            cx.error(at, format!("invalid no_proxy entry {entry:?}: {why}"));
            ok = false;
        }
    }
    ok.then(|| entries.into_iter().map(|(_, entry)| entry).collect())
}

/// One `no_proxy` entry: `*`, an IP address, a CIDR range, or a host name (a leading `.`
/// allowed).
pub(crate) fn no_proxy_entry(entry: &str) -> Result<(), &'static str> {
    if entry == "*" || entry.parse::<std::net::IpAddr>().is_ok() {
        return Ok(());
    }
    if let Some((address, bits)) = entry.split_once('/') {
        let address: std::net::IpAddr =
            address.parse().map_err(|_| "a range is an IP address, '/', and a prefix length")?;
        let most = if address.is_ipv4() { 32 } else { 128 };
        return match bits.parse::<u8>() {
            Ok(bits) if bits <= most => Ok(()),
            _ => Err("the prefix length is out of range"),
        };
    }
    let name = entry.strip_prefix('.').unwrap_or(entry);
    let valid = !name.is_empty()
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
        });
    if valid {
        Ok(())
    } else {
        Err("expected a host name, a .domain, an IP address, a CIDR range, or *")
    }
}

/// A server's `tls = { ... }`; `https` says whether its URL is an `https://` one.
pub(crate) fn check_tls(
    cx: &mut Checker<'_>,
    value: &Value,
    path: &str,
    https: bool,
) -> Option<TlsConfig> {
    let entries = cx.table(value, path)?;
    let fields = cx.known_keys(entries, path, TLS_KEYS);
    let at = |key: &str| key_path(path, key);
    let ca =
        optional(fields.get("ca").copied(), |v| pem_file(cx, v, &at("ca"), Kind::Certificates));
    let client_cert = optional(fields.get("client_cert").copied(), |v| {
        pem_file(cx, v, &at("client_cert"), Kind::Certificates)
    });
    let client_key = optional(fields.get("client_key").copied(), |v| {
        pem_file(cx, v, &at("client_key"), Kind::PrivateKey)
    });
    let pins = optional(fields.get("pin_sha256").copied(), |v| pins(cx, v, &at("pin_sha256")));
    let insecure = optional(fields.get("insecure_skip_verify").copied(), |v| {
        cx.boolean(v, &at("insecure_skip_verify"))
    });
    let mut ok = true;
    match (fields.contains_key("client_cert"), fields.contains_key("client_key")) {
        (true, false) => {
            cx.error(&at("client_cert"), "needs client_key (the certificate's private key)");
            ok = false;
        }
        (false, true) => {
            cx.error(&at("client_key"), "needs client_cert (the certificate it is the key of)");
            ok = false;
        }
        _ => {}
    }
    if insecure.flatten() == Some(true) {
        for key in ["ca", "pin_sha256"].into_iter().filter(|key| fields.contains_key(key)) {
            cx.error(
                &at(key),
                "means nothing with insecure_skip_verify = true, which checks no certificate \
                 (remove one of them)",
            );
            ok = false;
        }
        cx.warn(
            &at("insecure_skip_verify"),
            "the server's certificate is not verified: anyone on the way can read and change \
             this server's traffic",
        );
    }
    if !https && !entries.is_empty() {
        cx.error(path, "only for a server with an https:// url");
        ok = false;
    }
    let tls = TlsConfig {
        ca: ca?,
        client_cert: client_cert?,
        client_key: client_key?,
        pin_sha256: pins?.unwrap_or_default(),
        insecure_skip_verify: insecure?.unwrap_or(false),
    };
    ok.then_some(tls)
}

#[derive(Clone, Copy)]
enum Kind {
    Certificates,
    PrivateKey,
}

/// Reads the PEM file named at `path` and checks that it holds `kind`.
fn pem_file(cx: &mut Checker<'_>, value: &Value, path: &str, kind: Kind) -> Option<PemFile> {
    let text = cx.string(value, path)?;
    let name = cx.interpolate(text, path)?;
    if name.is_empty() {
        cx.error(path, "must not be empty");
        return None;
    }
    let file = cx.resolve_path(&name);
    let bytes = match std::fs::read(&file) {
        Ok(bytes) => bytes,
        Err(error) => {
            cx.error(path, format!("cannot read {name:?}: {}", io_reason(&error)));
            return None;
        }
    };
    let problem = match kind {
        Kind::Certificates => {
            let mut count = 0;
            let mut problem = None;
            for item in CertificateDer::pem_slice_iter(&bytes) {
                match item {
                    Ok(_) => count += 1,
                    Err(error) => {
                        problem = Some(format!("{name:?} is not valid PEM ({error})"));
                        break;
                    }
                }
            }
            problem.or_else(|| {
                (count == 0).then(|| {
                    format!("{name:?} holds no certificate (expected PEM: BEGIN CERTIFICATE)")
                })
            })
        }
        // Not quoted: what a bad key file holds is nobody's business.
        Kind::PrivateKey => match PrivateKeyDer::from_pem_slice(&bytes) {
            Ok(_) => None,
            Err(rustls_pki_types::pem::Error::NoItemsFound) => Some(format!(
                "{name:?} holds no private key (expected PEM: BEGIN PRIVATE KEY, RSA PRIVATE KEY \
                 or EC PRIVATE KEY)"
            )),
            Err(_) => Some(format!("{name:?} is not valid PEM")),
        },
    };
    if let Some(problem) = problem {
        cx.error(path, problem);
        return None;
    }
    let Ok(pem) = String::from_utf8(bytes) else {
        cx.error(path, format!("{name:?} is not valid PEM (not text)"));
        return None;
    };
    Some(PemFile { path: file, pem: Secret::new(pem) })
}

/// `pin_sha256`: SHA-256 digests in hex (colons allowed) or base64.
fn pins(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<Vec<[u8; 32]>> {
    let texts = cx.strings(value, path)?;
    if texts.is_empty() {
        cx.error(path, "is empty: leave it out for no pin, or give at least one digest");
        return None;
    }
    let mut out = Some(Vec::with_capacity(texts.len()));
    for (i, text) in texts.into_iter().enumerate() {
        match (parse_pin(text), &mut out) {
            (Some(pin), Some(out)) => out.push(pin),
            (Some(_), None) => {}
            (None, _) => {
                cx.error(
                    &index_path(path, i),
                    format!(
                        "invalid pin {text:?}: expected the SHA-256 of the certificate's DER, in \
                         hex (64 digits, colons allowed) or base64 (44 characters)"
                    ),
                );
                out = None;
            }
        }
    }
    out
}

/// A SHA-256 digest written in hex (with or without colons) or base64 (standard or URL-safe).
pub(crate) fn parse_pin(text: &str) -> Option<[u8; 32]> {
    let text = text.trim();
    let hex: String = text.chars().filter(|c| *c != ':').collect();
    if hex.len() == 64 && hex.chars().all(|c| c.is_ascii_hexdigit()) {
        let mut out = [0u8; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
        }
        return Some(out);
    }
    let engines = [
        base64::engine::general_purpose::STANDARD,
        base64::engine::general_purpose::URL_SAFE,
        base64::engine::general_purpose::STANDARD_NO_PAD,
        base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ];
    engines.iter().find_map(|engine| engine.decode(text).ok()?.try_into().ok())
}

#[cfg(test)]
mod tests;
