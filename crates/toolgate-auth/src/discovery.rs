//! Discovery as an MCP client does it (MCP authorization, 2025-11-25): from a server's 401 to
//! its authorization server's endpoints.
//!
//! The `WWW-Authenticate` value is parsed for its Bearer challenge ([`Challenge`]).
//! The protected resource metadata (RFC 9728) is fetched from the challenge's
//! `resource_metadata`, or else from the well-known URL with the server's path, then the root
//! one; its `resource` must name the server.
//! The metadata of its first authorization server is fetched in the order of
//! [`authorization_server_metadata_urls`] (the same order the server side uses to find an
//! issuer's keys); its `issuer` must be the one named, and it must offer PKCE with `S256`.
//!
//! Every document is read to [`Limits::max_document`] bytes, and every URL fetched or
//! returned is https; plain http only to a loopback host, and only when the MCP server is
//! itself such a host (local development), so a remote server cannot point toolgate at a
//! local port.

use crate::challenge::METADATA_PATH;
use crate::fetch::{Fetch, Limits, secure};

/// The auth-params of a `Bearer` challenge (RFC 6750 §3, RFC 9728 §5.1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    /// Where the protected resource metadata is.
    pub resource_metadata: Option<String>,
    /// The scopes to ask for, split on spaces.
    pub scope: Option<Vec<String>>,
    /// `invalid_token`, `insufficient_scope`, ...
    pub error: Option<String>,
    /// A human-readable reason, for logs.
    pub error_description: Option<String>,
}

impl Challenge {
    /// The first Bearer challenge of a `WWW-Authenticate` value (RFC 7235 §4.1: challenges
    /// separated by commas, each a scheme then a token68 or `name=token` and
    /// `name="quoted string"` parameters; names case-insensitive).
    /// `None` when the value does not parse or has no Bearer challenge.
    /// Of a parameter given twice, the first counts.
    pub fn parse(www_authenticate: &str) -> Option<Challenge> {
        let challenges = parse_challenges(www_authenticate)?;
        let (_, params) =
            challenges.into_iter().find(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))?;
        let get = |name: &str| {
            params.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone())
        };
        Some(Challenge {
            resource_metadata: get("resource_metadata"),
            scope: get("scope").map(|s| s.split_whitespace().map(str::to_owned).collect()),
            error: get("error"),
            error_description: get("error_description"),
        })
    }
}

/// A scheme and its parameters.
type RawChallenge = (String, Vec<(String, String)>);

/// Every challenge of a `WWW-Authenticate` value, or `None` if it does not parse.
fn parse_challenges(value: &str) -> Option<Vec<RawChallenge>> {
    let mut p = Cursor { chars: value.chars().collect(), at: 0 };
    let mut out = Vec::new();
    loop {
        p.skip(|c| c == ',' || is_ws(c));
        if p.done() {
            return Some(out);
        }
        let scheme = p.token()?;
        let mut params = Vec::new();
        // Whether no comma was seen since the scheme: only then may a token68 come.
        let mut first = true;
        loop {
            p.skip(is_ws);
            if p.done() {
                break;
            }
            if p.peek() == Some(',') {
                p.at += 1;
                first = false;
                continue;
            }
            let mark = p.at;
            let name = p.token();
            p.skip(is_ws);
            let Some(name) = name.filter(|_| p.peek() == Some('=')) else {
                if first {
                    // A token68 (`Basic dXNlcg==`): not needed, skipped.
                    p.skip(|c| c != ',');
                    first = false;
                    continue;
                }
                // The scheme of the next challenge.
                p.at = mark;
                break;
            };
            p.at += 1;
            p.skip(is_ws);
            let value = match p.peek() {
                Some('"') => p.quoted()?,
                _ => match p.token() {
                    Some(value) => value,
                    // `name==...`, a token68 ending in `=`.
                    None if first => {
                        p.skip(|c| c != ',');
                        first = false;
                        continue;
                    }
                    None => return None,
                },
            };
            params.push((name.to_ascii_lowercase(), value));
            p.skip(is_ws);
            if !(p.done() || p.peek() == Some(',')) {
                return None;
            }
            first = false;
        }
        out.push((scheme, params));
    }
}

fn is_ws(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// RFC 7230's `tchar`.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

struct Cursor {
    chars: Vec<char>,
    at: usize,
}

impl Cursor {
    fn done(&self) -> bool {
        self.at >= self.chars.len()
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn skip(&mut self, while_: impl Fn(char) -> bool) {
        while self.peek().is_some_and(&while_) {
            self.at += 1;
        }
    }

    /// A token, or `None` (nothing consumed) if none starts here.
    fn token(&mut self) -> Option<String> {
        let start = self.at;
        self.skip(is_tchar);
        (self.at > start).then(|| self.chars[start..self.at].iter().collect())
    }

    /// A quoted string, unescaped, the cursor on its opening quote; `None` if unterminated.
    fn quoted(&mut self) -> Option<String> {
        self.at += 1;
        let mut out = String::new();
        loop {
            let c = self.peek()?;
            self.at += 1;
            match c {
                '"' => return Some(out),
                '\\' => {
                    out.push(self.peek()?);
                    self.at += 1;
                }
                c => out.push(c),
            }
        }
    }
}

/// Where the protected resource metadata of `server_url` may be, in the order tried: the
/// challenge's `resource_metadata` when it has one that is a URL; else the well-known URL with
/// the server's path inserted (RFC 9728 §3.1), then the root one (MCP's fallback).
pub fn protected_resource_metadata_urls(
    server_url: &url::Url,
    challenge: Option<&Challenge>,
) -> Vec<url::Url> {
    if let Some(url) =
        challenge.and_then(|c| c.resource_metadata.as_deref()).and_then(|u| url::Url::parse(u).ok())
    {
        return vec![url];
    }
    let path = server_url.path().trim_end_matches('/');
    let mut urls = vec![at(server_url, &format!("{METADATA_PATH}{path}"))];
    if !path.is_empty() {
        urls.push(at(server_url, METADATA_PATH));
    }
    urls
}

/// Where the metadata of the authorization server `issuer` may be, in the order tried
/// (RFC 8414 §3.1, OpenID discovery, as MCP 2025-11-25 orders them): for an issuer with a path
/// (`https://id.example.com/t1`), `/.well-known/oauth-authorization-server/t1`,
/// `/.well-known/openid-configuration/t1`, then `/t1/.well-known/openid-configuration`;
/// without one, `/.well-known/oauth-authorization-server` then
/// `/.well-known/openid-configuration`. The server side finds an issuer's keys the same way
/// ([`crate::jwks::metadata_urls`]).
pub fn authorization_server_metadata_urls(issuer: &url::Url) -> Vec<url::Url> {
    let path = issuer.path().trim_end_matches('/');
    let mut urls = vec![
        at(issuer, &format!("/.well-known/oauth-authorization-server{path}")),
        at(issuer, &format!("/.well-known/openid-configuration{path}")),
    ];
    if !path.is_empty() {
        urls.push(at(issuer, &format!("{path}/.well-known/openid-configuration")));
    }
    urls
}

/// `base` with this path, without query or fragment.
fn at(base: &url::Url, path: &str) -> url::Url {
    let mut url = base.clone();
    url.set_query(None);
    url.set_fragment(None);
    url.set_path(path);
    url
}

/// What discovery found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovered {
    /// Where the protected resource metadata was read.
    pub resource_metadata_url: url::Url,
    /// The resource it names: what the client asks tokens for (RFC 8707 `resource`).
    pub resource: String,
    /// Its `scopes_supported`.
    pub resource_scopes: Option<Vec<String>>,
    /// Its first authorization server.
    pub authorization_server: AuthorizationServer,
}

/// An authorization server's metadata, as far as the client needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizationServer {
    /// Its issuer identifier, as the protected resource metadata names it.
    pub issuer: String,
    /// Where its metadata was read.
    pub metadata_url: url::Url,
    /// Where the user authorizes.
    pub authorization_endpoint: url::Url,
    /// Where codes and refresh tokens are exchanged.
    pub token_endpoint: url::Url,
    /// Where clients register themselves (RFC 7591), if it lets them.
    pub registration_endpoint: Option<url::Url>,
    /// Whether it takes a URL as `client_id` (a client ID metadata document).
    pub client_id_metadata_document_supported: bool,
    /// Its `scopes_supported`.
    pub scopes_supported: Option<Vec<String>>,
}

/// Why discovery failed. Each names the URL and the check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiscoveryError {
    /// No protected resource metadata URL answered with a JSON object.
    #[error("no protected resource metadata for {server}: {}", tried.join("; "))]
    NoResourceMetadata {
        /// The MCP server.
        server: String,
        /// Each URL tried, and what became of it.
        tried: Vec<String>,
    },
    /// No metadata URL of the authorization server answered with a JSON object.
    #[error("no metadata for authorization server {issuer}: {}", tried.join("; "))]
    NoServerMetadata {
        /// The authorization server.
        issuer: String,
        /// Each URL tried, and what became of it.
        tried: Vec<String>,
    },
    /// The protected resource metadata names another resource (RFC 9728 §3.3).
    #[error("{url}: names resource {resource:?}, not the server {server:?} (RFC 9728 §3.3)")]
    WrongResource {
        /// Where the metadata was read.
        url: String,
        /// The resource it names (empty when it names none).
        resource: String,
        /// The MCP server.
        server: String,
    },
    /// The authorization server's metadata names another issuer (RFC 8414 §3.3).
    #[error("{url}: names issuer {found:?}, not {expected:?} (RFC 8414 §3.3)")]
    WrongIssuer {
        /// Where the metadata was read.
        url: String,
        /// The issuer it names.
        found: Option<String>,
        /// The issuer the protected resource metadata names.
        expected: String,
    },
    /// The authorization server does not offer PKCE with `S256`, which MCP requires.
    #[error("{url}: code_challenge_methods_supported lacks S256 (MCP requires PKCE)")]
    NoPkce {
        /// Where the metadata was read.
        url: String,
    },
    /// A document lacks a member, or has one that is not what it should be.
    #[error("{url}: {reason}")]
    Invalid {
        /// Where the document was read.
        url: String,
        /// What is wrong.
        reason: String,
    },
}

/// Finds the authorization server of the MCP server at `server_url`, from the challenge of
/// its 401 if there was one.
pub async fn discover(
    fetch: &dyn Fetch,
    server_url: &url::Url,
    challenge: Option<&Challenge>,
    limits: Limits,
) -> Result<Discovered, DiscoveryError> {
    let candidates = protected_resource_metadata_urls(server_url, challenge);
    let allowed = |url: &url::Url| {
        url.scheme() == "https"
            || (server_url.scheme() == "http" && secure(server_url) && secure(url))
    };
    let (prm_url, prm) =
        first_object(fetch, candidates, limits, &allowed).await.map_err(|tried| {
            DiscoveryError::NoResourceMetadata { server: server_url.to_string(), tried }
        })?;
    let invalid = |url: &url::Url, reason: &str| DiscoveryError::Invalid {
        url: url.to_string(),
        reason: reason.to_owned(),
    };
    let resource = prm.get("resource").and_then(|v| v.as_str()).unwrap_or_default();
    if !names_server(resource, server_url) {
        return Err(DiscoveryError::WrongResource {
            url: prm_url.to_string(),
            resource: resource.to_owned(),
            server: server_url.to_string(),
        });
    }
    let issuer = prm
        .get("authorization_servers")
        .and_then(|v| v.as_array())
        .and_then(|servers| servers.first())
        .and_then(|v| v.as_str())
        .ok_or_else(|| invalid(&prm_url, "no authorization_servers"))?;
    let issuer_url = url::Url::parse(issuer)
        .ok()
        .filter(allowed)
        .ok_or_else(|| invalid(&prm_url, "authorization_servers[0] is not an https URL"))?;
    let resource_scopes = strings(&prm, "scopes_supported");

    let candidates = authorization_server_metadata_urls(&issuer_url);
    let (url, metadata) = first_object(fetch, candidates, limits, &allowed)
        .await
        .map_err(|tried| DiscoveryError::NoServerMetadata { issuer: issuer.to_owned(), tried })?;
    let found = metadata.get("issuer").and_then(|v| v.as_str());
    if found != Some(issuer) {
        return Err(DiscoveryError::WrongIssuer {
            url: url.to_string(),
            found: found.map(str::to_owned),
            expected: issuer.to_owned(),
        });
    }
    if !strings(&metadata, "code_challenge_methods_supported")
        .is_some_and(|methods| methods.iter().any(|m| m == "S256"))
    {
        return Err(DiscoveryError::NoPkce { url: url.to_string() });
    }
    let endpoint = |name: &str| -> Result<Option<url::Url>, DiscoveryError> {
        let Some(value) = metadata.get(name) else { return Ok(None) };
        value
            .as_str()
            .and_then(|v| url::Url::parse(v).ok())
            .filter(allowed)
            .map(Some)
            .ok_or_else(|| invalid(&url, &format!("{name} is not an https URL")))
    };
    let required = |name: &str| endpoint(name)?.ok_or_else(|| invalid(&url, &format!("no {name}")));
    let authorization_server = AuthorizationServer {
        issuer: issuer.to_owned(),
        authorization_endpoint: required("authorization_endpoint")?,
        token_endpoint: required("token_endpoint")?,
        registration_endpoint: endpoint("registration_endpoint")?,
        client_id_metadata_document_supported: metadata
            .get("client_id_metadata_document_supported")
            .and_then(|v| v.as_bool())
            .unwrap_or(false),
        scopes_supported: strings(&metadata, "scopes_supported"),
        metadata_url: url,
    };
    Ok(Discovered {
        resource_metadata_url: prm_url,
        resource: resource.to_owned(),
        resource_scopes,
        authorization_server,
    })
}

/// The first of `urls` that is `allowed` and answers with a JSON object, or what became of
/// each.
async fn first_object(
    fetch: &dyn Fetch,
    urls: Vec<url::Url>,
    limits: Limits,
    allowed: &(dyn Fn(&url::Url) -> bool + Sync),
) -> Result<(url::Url, serde_json::Map<String, serde_json::Value>), Vec<String>> {
    let mut tried = Vec::new();
    for url in urls {
        if !allowed(&url) {
            tried.push(format!("{url}: not https (http only to a loopback server)"));
            continue;
        }
        match fetch.get(&url, limits.max_document).await {
            Err(error) => tried.push(format!("{url}: {error}")),
            Ok(body) => match serde_json::from_slice(&body) {
                Ok(serde_json::Value::Object(object)) => return Ok((url, object)),
                // A server may answer any path with a page; the next URL may do better.
                _ => tried.push(format!("{url}: not a JSON object")),
            },
        }
    }
    Err(tried)
}

/// The strings of the array member `name`, when it is one; other elements are left out.
fn strings(object: &serde_json::Map<String, serde_json::Value>, name: &str) -> Option<Vec<String>> {
    let array = object.get(name)?.as_array()?;
    Some(array.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
}

/// Whether the metadata's `resource` names the server at `server_url`: the same URL (a
/// trailing slash aside), or, as MCP's fallback to the root metadata needs, the same origin
/// with a path that is a prefix of the server's, segment by segment. Never with a query or
/// fragment the server URL does not have.
fn names_server(resource: &str, server_url: &url::Url) -> bool {
    if resource == server_url.as_str() {
        return true;
    }
    let Ok(resource) = url::Url::parse(resource) else { return false };
    if resource.fragment().is_some()
        || resource.query().is_some()
        || resource.origin() != server_url.origin()
        || !resource.username().is_empty()
        || resource.password().is_some()
    {
        return false;
    }
    let prefix = resource.path().trim_end_matches('/');
    let path = server_url.path().trim_end_matches('/');
    path == prefix || path.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests;
