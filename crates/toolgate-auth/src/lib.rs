//! Who a bearer credential belongs to (see ARCHITECTURE.md, `toolgate-auth`).
//!
//! The HTTP front (`toolgate-server`) calls it for every request to `/mcp`.
//!
//! - [`api_key`]: `[auth.api_keys]` entries checked against a presented key (`sha256:` in
//!   constant time, `argon2:` PHC strings), and fresh keys for `toolgate keys new`.
//! - [`jwt`]: OAuth 2.1 access tokens (JWTs) checked against the issuer's keys: signature,
//!   `alg` from an allowlist (never `none` or HMAC), `iss`, `aud`, `exp`/`nbf` with a skew,
//!   required scopes. Every failure is a [`TokenError`] naming the check.
//! - [`jwks`]: the issuer's signing keys, found through its metadata (RFC 8414, then OpenID
//!   discovery) or `jwks_url`, cached, and refetched on an unknown `kid` at most once per
//!   floor. Everything a remote document controls is bounded.
//! - [`introspect`]: opaque access tokens, checked at the issuer's introspection endpoint
//!   (RFC 7662) as a JWT's claims are, with a cache bounded in size and time.
//! - [`challenge`]: what the server answers: RFC 9728 protected resource metadata and the
//!   `WWW-Authenticate` values of a 401 and a 403.
//! - [`fetch`]: reading a remote document within bounds, for all of the above.
//!
//! The client side, signing in to the servers toolgate connects to, is `toolgate-oauth`.
//!
//! No server code; the only IO is fetching metadata and keys, and introspecting.

pub mod api_key;
pub mod challenge;
pub mod fetch;
pub mod introspect;
pub mod jwks;
pub mod jwt;

pub use api_key::{ApiKeyError, ApiKeys, NewKey, generate_key};
pub use fetch::{Fetch, FetchError, HttpFetch, Limits};
pub use introspect::{Introspector, PostForm};
pub use jwks::{JwksCache, JwksError, KeySource};
pub use jwt::{JwtSettings, JwtVerifier, SettingsError, TokenError};

/// How a principal proved who it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// An OAuth access token (a JWT) from the configured issuer.
    Jwt,
    /// An `[auth.api_keys]` entry.
    ApiKey,
    /// An opaque OAuth access token, which the issuer's introspection endpoint vouched for.
    Introspection,
}

impl Method {
    /// `jwt`, `api_key` or `introspection`, as events and the audit log will name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Jwt => "jwt",
            Method::ApiKey => "api_key",
            Method::Introspection => "introspection",
        }
    }
}

/// Who a credential belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The principal: the token's (or introspection answer's) `principal_claim`, or the API
    /// key's name.
    pub principal: String,
    /// Its groups: the token's `groups_claim`, or the key's `groups`.
    pub groups: Vec<String>,
    /// Its tenant: the token's `tenant_claim`, or the key's `tenant`.
    pub tenant: Option<String>,
    /// How it authenticated.
    pub method: Method,
    /// The scopes the token granted; empty for an API key, which is not scoped.
    pub scopes: Vec<String>,
}
