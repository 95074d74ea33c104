//! The issuer's signing keys: found, fetched, cached, and refreshed when a token names a key
//! the cache does not have, at most once per floor.
//!
//! Where the keys are comes from `jwks_url`, or from the issuer's metadata: RFC 8414's
//! `/.well-known/oauth-authorization-server` first, then OpenID discovery's
//! `/.well-known/openid-configuration`. For an issuer with a path (`https://id.example.com/t1`)
//! the well-known part goes between the host and the path (RFC 8414 §3.1), and OpenID's
//! appended form (`https://id.example.com/t1/.well-known/openid-configuration`) is tried last.
//! The metadata must name the same issuer (RFC 8414 §3.3).
//!
//! Every document is read to [`Limits::max_document`] bytes, a key set holds at most
//! [`Limits::max_keys`] keys, and symmetric (`oct`) keys are dropped: tokens are checked with
//! public keys only.

use std::sync::Arc;

use jsonwebtoken::Algorithm;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk};
use tokio::time::Instant;

use crate::fetch::{Fetch, FetchError, Limits, secure};

/// Where the keys are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// `jwks_url`, given.
    JwksUrl(url::Url),
    /// From the metadata of this issuer (as written in `iss`).
    Issuer(String),
}

impl KeySource {
    /// Where `[auth]` says the keys are: `jwks_url` when set, else the issuer's metadata;
    /// `None` without an issuer (API keys only).
    pub fn from_config(auth: &toolgate_config::AuthConfig) -> Option<KeySource> {
        match (&auth.jwks_url, &auth.issuer) {
            (Some(url), _) => Some(KeySource::JwksUrl(url.clone())),
            (None, Some(issuer)) => Some(KeySource::Issuer(issuer.clone())),
            (None, None) => None,
        }
    }
}

/// Why no key could be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwksError {
    /// A document could not be fetched.
    #[error("{url}: {source}")]
    Fetch {
        /// What was fetched.
        url: String,
        /// Why it failed.
        source: FetchError,
    },
    /// A document is not what it should be.
    #[error("{url}: {reason}")]
    Invalid {
        /// What was fetched.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The key set has more keys than the limit.
    #[error("{url}: {count} keys, more than the {max} accepted")]
    TooManyKeys {
        /// The key set.
        url: String,
        /// How many it has.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// No metadata document of the issuer could be read.
    #[error("no metadata for issuer {issuer}: {}", tried.join("; "))]
    Discovery {
        /// The issuer.
        issuer: String,
        /// Each URL tried, and what became of it.
        tried: Vec<String>,
    },
    /// The key set has no key with this `kid` (none fitting the algorithm, for a token without
    /// one), even after a refresh, or a refresh was not allowed yet.
    #[error("no signing key {} ({})", which_kid(kid.as_deref()), refresh_word(*refreshed))]
    UnknownKey {
        /// The token's `kid`.
        kid: Option<String>,
        /// Whether the key set was refetched for it.
        refreshed: bool,
    },
}

fn which_kid(kid: Option<&str>) -> String {
    kid.map_or("for a token without kid".to_owned(), |kid| format!("{kid:?}"))
}

fn refresh_word(refreshed: bool) -> &'static str {
    if refreshed {
        "the key set was refetched"
    } else {
        "the key set was fetched less than the refresh floor ago"
    }
}

#[derive(Default)]
struct State {
    jwks_url: Option<url::Url>,
    keys: Vec<Jwk>,
    last_fetch: Option<Instant>,
}

/// The cache of one issuer's keys.
pub struct JwksCache {
    source: KeySource,
    fetch: Arc<dyn Fetch>,
    limits: Limits,
    /// Held only to read or write, never across a fetch: a token whose key is known is
    /// checked while a fetch for another runs.
    state: std::sync::Mutex<State>,
    /// Held across a fetch, so that there is one at a time.
    fetching: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for JwksCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwksCache")
            .field("source", &self.source)
            .field("limits", &self.limits)
            .finish()
    }
}

impl JwksCache {
    /// A cache that fetches nothing until a key is asked for.
    pub fn new(source: KeySource, fetch: Arc<dyn Fetch>, limits: Limits) -> JwksCache {
        JwksCache {
            source,
            fetch,
            limits,
            state: std::sync::Mutex::new(State::default()),
            fetching: tokio::sync::Mutex::new(()),
        }
    }

    /// The key a token signed with `alg` and naming `kid` is checked with. The key set is
    /// fetched the first time, and again when it has no such key, unless it was fetched less
    /// than [`Limits::refresh_floor`] ago. One fetch runs at a time; a key already known is
    /// given while it runs.
    pub async fn key(&self, kid: Option<&str>, alg: Algorithm) -> Result<Jwk, JwksError> {
        if let Some(key) = self.known(kid, alg) {
            return Ok(key);
        }
        let _fetching = self.fetching.lock().await;
        // The fetch waited for may have brought it.
        let url = {
            let mut state = self.state();
            if state.last_fetch.is_some()
                && let Some(key) = lookup(&state.keys, kid, alg)
            {
                return Ok(key.clone());
            }
            if let Some(last) = state.last_fetch
                && last.elapsed() < self.limits.refresh_floor
            {
                let kid = kid.map(str::to_owned);
                return Err(JwksError::UnknownKey { kid, refreshed: false });
            }
            // A failed fetch counts too: a broken issuer is not asked more often than the floor.
            state.last_fetch = Some(Instant::now());
            state.jwks_url.clone()
        };
        let url = match url {
            Some(url) => url,
            None => {
                let url = self.jwks_url().await?;
                self.state().jwks_url = Some(url.clone());
                url
            }
        };
        let keys = self.fetch_keys(&url).await?;
        let found = lookup(&keys, kid, alg).cloned();
        self.state().keys = keys;
        found.ok_or_else(|| JwksError::UnknownKey { kid: kid.map(str::to_owned), refreshed: true })
    }

    /// The key, when the key set was fetched and has it.
    fn known(&self, kid: Option<&str>, alg: Algorithm) -> Option<Jwk> {
        let state = self.state();
        state.last_fetch?;
        lookup(&state.keys, kid, alg).cloned()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    async fn jwks_url(&self) -> Result<url::Url, JwksError> {
        let issuer = match &self.source {
            KeySource::JwksUrl(url) => return Ok(url.clone()),
            KeySource::Issuer(issuer) => issuer,
        };
        let candidates = metadata_urls(issuer)
            .map_err(|reason| JwksError::Invalid { url: issuer.clone(), reason })?;
        let mut tried = Vec::new();
        for url in candidates {
            let body = match self.fetch.get(&url, self.limits.max_document).await {
                Ok(body) => body,
                Err(error) => {
                    tried.push(format!("{url}: {error}"));
                    continue;
                }
            };
            let invalid = |reason: String| JwksError::Invalid { url: url.to_string(), reason };
            let document: serde_json::Value = serde_json::from_slice(&body)
                .map_err(|error| invalid(format!("not JSON: {error}")))?;
            let found = document.get("issuer").and_then(|v| v.as_str());
            if found != Some(issuer.as_str()) {
                return Err(invalid(format!(
                    "names issuer {found:?}, not {issuer:?} (RFC 8414 §3.3)"
                )));
            }
            let jwks_uri = document
                .get("jwks_uri")
                .and_then(|v| v.as_str())
                .ok_or_else(|| invalid("no jwks_uri".to_owned()))?;
            let jwks_uri = url::Url::parse(jwks_uri)
                .map_err(|error| invalid(format!("jwks_uri is not a URL: {error}")))?;
            if !secure(&jwks_uri) {
                return Err(invalid(
                    "jwks_uri must be https (http only to a loopback host)".to_owned(),
                ));
            }
            return Ok(jwks_uri);
        }
        Err(JwksError::Discovery { issuer: issuer.clone(), tried })
    }

    async fn fetch_keys(&self, url: &url::Url) -> Result<Vec<Jwk>, JwksError> {
        let body = self
            .fetch
            .get(url, self.limits.max_document)
            .await
            .map_err(|source| JwksError::Fetch { url: url.to_string(), source })?;
        let invalid = |reason: String| JwksError::Invalid { url: url.to_string(), reason };
        #[derive(serde::Deserialize)]
        struct RawSet {
            keys: Vec<serde_json::Value>,
        }
        let set: RawSet = serde_json::from_slice(&body)
            .map_err(|error| invalid(format!("not a JWK set: {error}")))?;
        if set.keys.len() > self.limits.max_keys {
            return Err(JwksError::TooManyKeys {
                url: url.to_string(),
                count: set.keys.len(),
                max: self.limits.max_keys,
            });
        }
        let mut keys = Vec::with_capacity(set.keys.len());
        for raw in set.keys {
            // A key this crate cannot use (another key type, a symmetric key, one for
            // encryption) is left out, not an error: the set may serve other parties too.
            let Ok(key) = serde_json::from_value::<Jwk>(raw) else { continue };
            let signing = key
                .common
                .public_key_use
                .as_ref()
                .is_none_or(|u| *u == jsonwebtoken::jwk::PublicKeyUse::Signature);
            if signing && !matches!(key.algorithm, AlgorithmParameters::OctetKey(_)) {
                keys.push(key);
            }
        }
        tracing::debug!(url = %url, keys = keys.len(), "fetched the issuer's signing keys");
        Ok(keys)
    }
}

/// The key for `kid`, or for a token without one the only key that fits `alg`.
fn lookup<'k>(keys: &'k [Jwk], kid: Option<&str>, alg: Algorithm) -> Option<&'k Jwk> {
    match kid {
        Some(kid) => keys.iter().find(|key| key.common.key_id.as_deref() == Some(kid)),
        None => {
            let mut fitting = keys.iter().filter(|key| fits(key, alg));
            match (fitting.next(), fitting.next()) {
                (Some(key), None) => Some(key),
                _ => None,
            }
        }
    }
}

/// Whether `key` is of the type `alg` signs with.
pub(crate) fn fits(key: &Jwk, alg: Algorithm) -> bool {
    use Algorithm::*;
    match &key.algorithm {
        AlgorithmParameters::RSA(_) => matches!(alg, RS256 | RS384 | RS512 | PS256 | PS384 | PS512),
        AlgorithmParameters::EllipticCurve(_) => matches!(alg, ES256 | ES384),
        AlgorithmParameters::OctetKeyPair(_) => matches!(alg, EdDSA),
        AlgorithmParameters::OctetKey(_) => false,
    }
}

/// Where the metadata of `issuer` may be, in the order they are tried (RFC 8414 section 3.1,
/// then OpenID discovery, as MCP 2025-11-25 orders them): for an issuer with a path
/// (`https://id.example.com/t1`), `/.well-known/oauth-authorization-server/t1`,
/// `/.well-known/openid-configuration/t1`, then `/t1/.well-known/openid-configuration`;
/// without one, `/.well-known/oauth-authorization-server` then
/// `/.well-known/openid-configuration`.
pub fn metadata_urls(issuer: &str) -> Result<Vec<url::Url>, String> {
    let base = url::Url::parse(issuer).map_err(|error| format!("not a URL: {error}"))?;
    if !secure(&base) {
        return Err("must be https (http only to a loopback host)".to_owned());
    }
    let path = base.path().trim_end_matches('/');
    let at = |path: &str| {
        let mut url = base.clone();
        url.set_query(None);
        url.set_fragment(None);
        url.set_path(path);
        url
    };
    let mut urls = vec![
        at(&format!("/.well-known/oauth-authorization-server{path}")),
        at(&format!("/.well-known/openid-configuration{path}")),
    ];
    if !path.is_empty() {
        urls.push(at(&format!("{path}/.well-known/openid-configuration")));
    }
    Ok(urls)
}

#[cfg(test)]
pub(crate) mod tests;
