//! Opaque access tokens, checked at the issuer's introspection endpoint (RFC 7662).
//!
//! A token is POSTed as `token=<t>&token_type_hint=access_token`, toolgate authenticating as
//! the configured client with `client_secret_basic`. The answer is read strictly: at most
//! [`MAX_RESPONSE`] bytes of a JSON object whose `active` is `true`; a `token_type`, when
//! given, is `Bearer`. Then what a JWT is checked for: `exp` (required) and `nbf` with the
//! skew, `iss` (when present) is the issuer, `aud` contains the audience (required: a token
//! that does not say it is for this resource is not, RFC 8707), the claims toolgate reads and
//! the required scopes (`scope`, space-separated). An answer without `sub` is the `client_id`'s
//! when the principal claim is `sub`, as RFC 9068 writes `sub` for a client's own token.
//!
//! An active answer is cached under the SHA-256 of the token (never the token itself), at most
//! `cache_size` entries (the oldest goes first) each for at most `cache_ttl` and never past the
//! token's `exp`: a token revoked at the issuer is served at most `cache_ttl` longer. A refusal
//! is not cached, nor is a failure to ask. An endpoint that cannot be reached or answers
//! otherwise is [`TokenError::Unavailable`]: the token was not checked, the request does not
//! pass, and the front answers 503, not 401, so that a client keeps a token that may be good.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use serde_json::{Map, Value};
use sha2::Digest as _;
use tokio::time::Instant;
use toolgate_config::{IntrospectionConfig, Secret};

use crate::fetch::FetchError;
use crate::jwt::{JwtSettings, MAX_TOKEN_LEN, TokenError, identity};
use crate::{HttpFetch, Identity, Method};

/// The largest introspection answer read.
pub const MAX_RESPONSE: usize = 64 * 1024;

/// POSTs a form: [`HttpFetch`], or a test's own.
pub trait PostForm: Send + Sync {
    /// The body of the answer to `body` (`application/x-www-form-urlencoded`) POSTed to `url`
    /// with this `Authorization` header, at most `limit` bytes, or why not. Redirects are not
    /// followed: they would carry the client's secret elsewhere.
    fn post_form<'a>(
        &'a self,
        url: &'a url::Url,
        authorization: &'a Secret,
        body: String,
        limit: usize,
    ) -> Pin<Box<dyn Future<Output = Result<Vec<u8>, FetchError>> + Send + 'a>>;
}

impl PostForm for HttpFetch {
    fn post_form<'a>(
        &'a self,
        url: &'a url::Url,
        authorization: &'a Secret,
        body: String,
        limit: usize,
    ) -> Pin<Box<dyn Future<Output = Result<Vec<u8>, FetchError>> + Send + 'a>> {
        Box::pin(async move {
            let request = self
                .no_redirect
                .post(url.clone())
                .header("authorization", authorization.expose())
                .header("content-type", "application/x-www-form-urlencoded")
                .header("accept", "application/json")
                .body(body);
            self.read(request, limit).await
        })
    }
}

/// How many introspection requests may be in flight at once; more wait for one to end. Every
/// unknown token costs the issuer a request (refusals are not cached: a stranger makes a new
/// token for free), so a flood of made-up tokens reaches the issuer at this pace at most.
pub const MOST_IN_FLIGHT: usize = 16;

/// Checks opaque tokens at one introspection endpoint, with a cache.
pub struct Introspector {
    settings: JwtSettings,
    endpoint: url::Url,
    /// `Basic <base64(id:secret)>`.
    authorization: Secret,
    post: Arc<dyn PostForm>,
    cache_size: usize,
    cache_ttl: Duration,
    cache: Mutex<Cache>,
    /// [`MOST_IN_FLIGHT`] permits.
    in_flight: tokio::sync::Semaphore,
}

impl std::fmt::Debug for Introspector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Introspector")
            .field("endpoint", &self.endpoint.as_str())
            .field("cache_size", &self.cache_size)
            .field("cache_ttl", &self.cache_ttl)
            .finish_non_exhaustive()
    }
}

impl Introspector {
    /// An introspector of tokens for `settings` (issuer, audience, scopes, claims, skew; its
    /// algorithms do not apply) at the endpoint of `config`, asking through `post`.
    pub fn new(
        settings: JwtSettings,
        config: &IntrospectionConfig,
        post: Arc<dyn PostForm>,
    ) -> Introspector {
        // RFC 6749 §2.3.1: the id and secret are form-encoded before they are joined.
        let encode =
            |text: &str| url::form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>();
        let pair =
            format!("{}:{}", encode(&config.client_id), encode(config.client_secret.expose()));
        let authorization = Secret::new(format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        ));
        Introspector {
            settings,
            endpoint: config.url.clone(),
            authorization,
            post,
            cache_size: config.cache_size,
            cache_ttl: config.cache_ttl,
            cache: Mutex::new(Cache::default()),
            in_flight: tokio::sync::Semaphore::new(MOST_IN_FLIGHT),
        }
    }

    /// The settings.
    pub fn settings(&self) -> &JwtSettings {
        &self.settings
    }

    /// How many answers the cache holds now.
    pub fn cached(&self) -> usize {
        self.cache.lock().expect("the cache's lock").entries.len()
    }

    /// Who `token` belongs to, from the cache or the endpoint, or the first check it failed.
    pub async fn verify(&self, token: &str) -> Result<Identity, TokenError> {
        if token.len() > MAX_TOKEN_LEN {
            return Err(TokenError::TooLong { len: token.len() });
        }
        let key: [u8; 32] = sha2::Sha256::digest(token.as_bytes()).into();
        if let Some(identity) = self.cache.lock().expect("the cache's lock").get(&key) {
            return Ok(identity);
        }
        let claims = {
            let _permit = self.in_flight.acquire().await.expect("never closed");
            self.ask(token).await?
        };
        let (identity, exp) = self.check(&claims)?;
        if self.cache_size > 0 {
            let left = exp.saturating_sub(unix_now());
            let keep = self.cache_ttl.min(Duration::from_secs(left));
            if !keep.is_zero() {
                let mut cache = self.cache.lock().expect("the cache's lock");
                cache.insert(key, identity.clone(), Instant::now() + keep, self.cache_size);
            }
        }
        Ok(identity)
    }

    /// The endpoint's answer, a JSON object, or why there is none.
    async fn ask(&self, token: &str) -> Result<Map<String, Value>, TokenError> {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("token", token)
            .append_pair("token_type_hint", "access_token")
            .finish();
        let unavailable = |why: String| {
            tracing::warn!(endpoint = %self.endpoint, %why, "token introspection failed");
            TokenError::Unavailable(why)
        };
        let answer = self
            .post
            .post_form(&self.endpoint, &self.authorization, body, MAX_RESPONSE)
            .await
            .map_err(|error| unavailable(error.to_string()))?;
        match serde_json::from_slice::<Value>(&answer) {
            Ok(Value::Object(claims)) => Ok(claims),
            Ok(_) => Err(unavailable("the answer is not a JSON object".into())),
            Err(error) => Err(unavailable(format!("the answer is not JSON: {error}"))),
        }
    }

    /// The identity an answer gives, and the token's `exp`.
    fn check(&self, claims: &Map<String, Value>) -> Result<(Identity, u64), TokenError> {
        if claims.get("active") != Some(&Value::Bool(true)) {
            return Err(TokenError::Inactive);
        }
        if let Some(kind) = claims.get("token_type")
            && !kind.as_str().is_some_and(|kind| kind.eq_ignore_ascii_case("bearer"))
        {
            return Err(TokenError::Inactive);
        }
        let skew = self.settings.clock_skew.as_secs();
        let now = unix_now();
        let exp = match claims.get("exp") {
            Some(exp) => time(exp, "exp")?,
            None => return Err(TokenError::MissingClaim("exp".into())),
        };
        if now > exp.saturating_add(skew) {
            return Err(TokenError::Expired);
        }
        if let Some(nbf) = claims.get("nbf")
            && time(nbf, "nbf")? > now.saturating_add(skew)
        {
            return Err(TokenError::NotYetValid);
        }
        if let Some(iss) = claims.get("iss")
            && iss.as_str() != Some(self.settings.issuer.as_str())
        {
            return Err(TokenError::WrongIssuer { expected: self.settings.issuer.clone() });
        }
        let audience = self.settings.audience.as_str();
        let for_us = match claims.get("aud") {
            None => return Err(TokenError::MissingClaim("aud".into())),
            Some(Value::String(aud)) => aud == audience,
            Some(Value::Array(auds)) => auds.iter().any(|aud| aud.as_str() == Some(audience)),
            Some(_) => false,
        };
        if !for_us {
            return Err(TokenError::WrongAudience { expected: audience.to_owned() });
        }
        let identity = if self.settings.principal_claim == "sub"
            && !claims.contains_key("sub")
            && let Some(client) = claims.get("client_id")
        {
            let mut claims = claims.clone();
            claims.insert("sub".into(), client.clone());
            identity(&self.settings, &claims, Method::Introspection)?
        } else {
            identity(&self.settings, claims, Method::Introspection)?
        };
        Ok((identity, exp))
    }
}

/// A time claim: seconds since the epoch.
fn time(value: &Value, claim: &str) -> Result<u64, TokenError> {
    value.as_u64().or_else(|| value.as_f64().filter(|t| *t >= 0.0).map(|t| t as u64)).ok_or_else(
        || TokenError::InvalidClaim {
            claim: claim.to_owned(),
            reason: "not a number of seconds".into(),
        },
    )
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

struct Entry {
    identity: Identity,
    until: Instant,
    seq: u64,
}

/// Active answers by the SHA-256 of their token, and their order of insertion.
#[derive(Default)]
struct Cache {
    entries: HashMap<[u8; 32], Entry>,
    order: BTreeMap<u64, [u8; 32]>,
    next: u64,
}

impl Cache {
    fn get(&mut self, key: &[u8; 32]) -> Option<Identity> {
        let entry = self.entries.get(key)?;
        if Instant::now() < entry.until {
            return Some(entry.identity.clone());
        }
        let seq = entry.seq;
        self.entries.remove(key);
        self.order.remove(&seq);
        None
    }

    fn insert(&mut self, key: [u8; 32], identity: Identity, until: Instant, size: usize) {
        if let Some(old) = self.entries.remove(&key) {
            self.order.remove(&old.seq);
        }
        while self.entries.len() >= size {
            let Some((_, oldest)) = self.order.pop_first() else { break };
            self.entries.remove(&oldest);
        }
        let seq = self.next;
        self.next += 1;
        self.order.insert(seq, key);
        self.entries.insert(key, Entry { identity, until, seq });
    }
}

#[cfg(test)]
mod tests;
