//! OAuth access tokens that are JWTs, checked against the issuer's keys.
//!
//! In order: the token's size and shape; the header's `alg`, which must be in the allowlist
//! (`none` and HMAC never are, whatever the settings say); the key named by `kid` (from the
//! [`JwksCache`]); then, by `jsonwebtoken`, the signature, `exp` and `nbf` with the clock
//! skew, `iss` and `aud`; then the claims toolgate reads and the required scopes. The first
//! failure is the [`TokenError`], naming the check.

use std::collections::BTreeSet;
use std::time::Duration;

use base64::Engine as _;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};
use toolgate_config::AuthConfig;

use crate::jwks::{JwksCache, JwksError, fits};
use crate::{Identity, Method};

/// The longest token looked at.
pub const MAX_TOKEN_LEN: usize = 16 * 1024;
/// The longest `kid`, principal, group, tenant or scope taken from a token.
pub const MAX_CLAIM_LEN: usize = 256;
/// The most groups or scopes taken from a token.
pub const MAX_CLAIM_ITEMS: usize = 256;

/// What a token is checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtSettings {
    /// `iss`, exactly.
    pub issuer: String,
    /// `aud` must contain it.
    pub audience: String,
    /// Scopes every token must carry.
    pub scopes: Vec<String>,
    /// The claim naming the principal.
    pub principal_claim: String,
    /// The claim listing groups.
    pub groups_claim: Option<String>,
    /// The claim naming the tenant.
    pub tenant_claim: Option<String>,
    /// How far `exp` and `nbf` may be off.
    pub clock_skew: Duration,
    /// The accepted algorithms.
    pub algorithms: Vec<Algorithm>,
}

/// Why settings cannot check tokens.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    /// `[auth]` has no issuer: it accepts API keys only.
    #[error("auth.issuer is not set: tokens cannot be checked")]
    NoIssuer,
    /// An algorithm that is refused or unknown.
    #[error("auth.algorithms: {0:?} is not accepted (a public-key JWS algorithm is needed)")]
    Algorithm(String),
}

impl JwtSettings {
    /// From `[auth]`; `default_audience` is the canonical URL of `/mcp`, used when
    /// `audience` is not set.
    pub fn from_config(auth: &AuthConfig, default_audience: &str) -> Result<Self, SettingsError> {
        let issuer = auth.issuer.clone().ok_or(SettingsError::NoIssuer)?;
        let algorithms = auth
            .algorithms
            .iter()
            .map(|name| {
                name.parse::<Algorithm>()
                    .ok()
                    .filter(|alg| public_key(*alg))
                    .ok_or_else(|| SettingsError::Algorithm(name.clone()))
            })
            .collect::<Result<_, _>>()?;
        Ok(JwtSettings {
            issuer,
            audience: auth.audience.clone().unwrap_or_else(|| default_audience.to_owned()),
            scopes: auth.scopes.clone(),
            principal_claim: auth.principal_claim.clone(),
            groups_claim: auth.groups_claim.clone(),
            tenant_claim: auth.tenant_claim.clone(),
            clock_skew: auth.clock_skew,
            algorithms,
        })
    }
}

fn public_key(alg: Algorithm) -> bool {
    !matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512)
}

/// Why a token was refused. [`TokenError::InsufficientScope`] is a 403 with step-up; the
/// others are a 401 with `error="invalid_token"`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Longer than [`MAX_TOKEN_LEN`].
    #[error("token of {len} bytes, longer than {MAX_TOKEN_LEN}")]
    TooLong {
        /// Its length.
        len: usize,
    },
    /// Not a JWS in compact form, or its header or claims unreadable.
    #[error("malformed token: {0}")]
    Malformed(String),
    /// `alg: none`: unsigned.
    #[error("unsigned token (alg \"none\") refused")]
    AlgorithmNone,
    /// An algorithm not in the allowlist (HMAC never is).
    #[error("algorithm {0:?} not accepted")]
    AlgorithmNotAllowed(String),
    /// No key to check it with.
    #[error(transparent)]
    Key(#[from] JwksError),
    /// The key named does not fit the algorithm, or cannot be used.
    #[error("key {kid:?} cannot check a token signed with {alg}: {reason}")]
    KeyMismatch {
        /// The key.
        kid: Option<String>,
        /// The token's algorithm.
        alg: String,
        /// Why.
        reason: String,
    },
    /// The signature does not verify.
    #[error("bad signature")]
    BadSignature,
    /// `exp` is past, beyond the skew.
    #[error("token expired")]
    Expired,
    /// `nbf` is ahead, beyond the skew.
    #[error("token not yet valid (nbf)")]
    NotYetValid,
    /// `iss` is not the issuer.
    #[error("wrong issuer (expected {expected})")]
    WrongIssuer {
        /// The configured issuer.
        expected: String,
    },
    /// `aud` does not contain the audience.
    #[error("wrong audience (expected {expected})")]
    WrongAudience {
        /// The configured audience.
        expected: String,
    },
    /// A claim that must be there is not.
    #[error("missing claim {0:?}")]
    MissingClaim(String),
    /// A claim is not of the form expected, or too large.
    #[error("claim {claim:?}: {reason}")]
    InvalidClaim {
        /// The claim.
        claim: String,
        /// What is wrong.
        reason: String,
    },
    /// The authorization server says the token is not active (unknown, revoked, expired), or
    /// it is not an access token.
    #[error("token not active at the authorization server")]
    Inactive,
    /// The token could not be checked: the introspection endpoint did not answer, or not as
    /// RFC 7662 says. Not the token's fault: a 503, and nothing is cached.
    #[error("introspection failed: {0}")]
    Unavailable(String),
    /// The token lacks required scopes.
    #[error("insufficient scope: missing {}", missing.join(" "))]
    InsufficientScope {
        /// The scopes required and not granted.
        missing: Vec<String>,
    },
}

impl TokenError {
    /// The scopes to ask for, when the token was refused for lacking them (a 403).
    pub fn missing_scopes(&self) -> Option<&[String]> {
        match self {
            TokenError::InsufficientScope { missing } => Some(missing),
            _ => None,
        }
    }

    /// Whether the token could not be checked at all (a 503, not a 401).
    pub fn is_unavailable(&self) -> bool {
        matches!(self, TokenError::Unavailable(_))
    }
}

/// Checks tokens of one issuer.
#[derive(Debug)]
pub struct JwtVerifier {
    settings: JwtSettings,
    keys: JwksCache,
}

#[derive(serde::Deserialize)]
struct RawHeader {
    alg: String,
    #[serde(default)]
    kid: Option<String>,
    #[serde(default)]
    crit: Option<Value>,
}

impl JwtVerifier {
    /// A verifier of tokens per `settings`, with the issuer's keys from `keys`.
    pub fn new(settings: JwtSettings, keys: JwksCache) -> Result<JwtVerifier, SettingsError> {
        if let Some(alg) = settings.algorithms.iter().find(|alg| !public_key(**alg)) {
            return Err(SettingsError::Algorithm(format!("{alg:?}")));
        }
        // jsonwebtoken picks its backend from its features, and with both (a crate elsewhere
        // in a build asking for aws-lc) panics at first use; name ours, unless the program
        // installed one first.
        let _ = jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER.install_default();
        Ok(JwtVerifier { settings, keys })
    }

    /// The settings.
    pub fn settings(&self) -> &JwtSettings {
        &self.settings
    }

    /// Who `token` belongs to, or the first check it failed.
    pub async fn verify(&self, token: &str) -> Result<Identity, TokenError> {
        if token.len() > MAX_TOKEN_LEN {
            return Err(TokenError::TooLong { len: token.len() });
        }
        let header = read_header(token)?;
        if header.alg.eq_ignore_ascii_case("none") {
            return Err(TokenError::AlgorithmNone);
        }
        let alg = header
            .alg
            .parse::<Algorithm>()
            .ok()
            .filter(|alg| public_key(*alg) && self.settings.algorithms.contains(alg))
            .ok_or_else(|| TokenError::AlgorithmNotAllowed(header.alg.clone()))?;
        if header.crit.is_some() {
            return Err(TokenError::Malformed(
                "critical header extensions (crit) are not understood".into(),
            ));
        }
        if header.kid.as_ref().is_some_and(|kid| kid.len() > MAX_CLAIM_LEN) {
            return Err(TokenError::Malformed(format!("kid longer than {MAX_CLAIM_LEN}")));
        }
        let jwk = self.keys.key(header.kid.as_deref(), alg).await?;
        let mismatch = |reason: String| TokenError::KeyMismatch {
            kid: header.kid.clone(),
            alg: header.alg.clone(),
            reason,
        };
        if !fits(&jwk, alg) {
            return Err(mismatch("another key type".into()));
        }
        if let Some(key_alg) = jwk.common.key_algorithm
            && key_alg.to_string() != header.alg
        {
            return Err(mismatch(format!("the key is for {key_alg}")));
        }
        let key = DecodingKey::from_jwk(&jwk).map_err(|error| mismatch(error.to_string()))?;
        let claims = self.decode(token, alg, &key)?;
        identity(&self.settings, &claims, Method::Jwt)
    }

    fn decode(
        &self,
        token: &str,
        alg: Algorithm,
        key: &DecodingKey,
    ) -> Result<Map<String, Value>, TokenError> {
        let mut validation = Validation::new(alg);
        validation.algorithms = vec![alg];
        validation.leeway = self.settings.clock_skew.as_secs();
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.settings.issuer]);
        validation.set_audience(&[&self.settings.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        match jsonwebtoken::decode::<Map<String, Value>>(token, key, &validation) {
            Ok(data) => Ok(data.claims),
            Err(error) => Err(match error.into_kind() {
                ErrorKind::InvalidSignature => TokenError::BadSignature,
                ErrorKind::ExpiredSignature => TokenError::Expired,
                ErrorKind::ImmatureSignature => TokenError::NotYetValid,
                ErrorKind::InvalidIssuer => {
                    TokenError::WrongIssuer { expected: self.settings.issuer.clone() }
                }
                ErrorKind::InvalidAudience => {
                    TokenError::WrongAudience { expected: self.settings.audience.clone() }
                }
                ErrorKind::MissingRequiredClaim(claim) => TokenError::MissingClaim(claim),
                ErrorKind::InvalidClaimFormat(claim) => {
                    TokenError::InvalidClaim { claim, reason: "wrong type".into() }
                }
                other => TokenError::Malformed(format!("{other:?}")),
            }),
        }
    }
}

/// The identity `claims` give per `settings` (principal, groups, tenant, scopes), or why not;
/// the required scopes are checked last. For a JWT, and for an introspection's answer.
pub(crate) fn identity(
    settings: &JwtSettings,
    claims: &Map<String, Value>,
    method: Method,
) -> Result<Identity, TokenError> {
    let principal = match claims.get(&settings.principal_claim) {
        Some(Value::String(text)) if !text.is_empty() => bounded(&settings.principal_claim, text)?,
        Some(_) => {
            return Err(TokenError::InvalidClaim {
                claim: settings.principal_claim.clone(),
                reason: "not a non-empty string".into(),
            });
        }
        None => return Err(TokenError::MissingClaim(settings.principal_claim.clone())),
    };
    let groups = match &settings.groups_claim {
        Some(claim) => strings(claim, claims.get(claim))?,
        None => Vec::new(),
    };
    let tenant = match &settings.tenant_claim {
        Some(claim) => match claims.get(claim) {
            Some(Value::String(text)) if !text.is_empty() => Some(bounded(claim, text)?),
            None => None,
            Some(_) => {
                return Err(TokenError::InvalidClaim {
                    claim: claim.clone(),
                    reason: "not a non-empty string".into(),
                });
            }
        },
        None => None,
    };
    let scopes = match (claims.get("scope"), claims.get("scp")) {
        (Some(scope), _) => strings("scope", Some(scope))?,
        (None, scp) => strings("scp", scp)?,
    };
    let granted: BTreeSet<&str> = scopes.iter().map(String::as_str).collect();
    let missing: Vec<String> =
        settings.scopes.iter().filter(|s| !granted.contains(s.as_str())).cloned().collect();
    if !missing.is_empty() {
        return Err(TokenError::InsufficientScope { missing });
    }
    Ok(Identity { principal, groups, tenant, method, scopes })
}

fn bounded(claim: &str, text: &str) -> Result<String, TokenError> {
    if text.len() > MAX_CLAIM_LEN {
        return Err(TokenError::InvalidClaim {
            claim: claim.to_owned(),
            reason: format!("longer than {MAX_CLAIM_LEN}"),
        });
    }
    Ok(text.to_owned())
}

/// A claim holding strings: an array of them, or one string of space-separated items.
fn strings(claim: &str, value: Option<&Value>) -> Result<Vec<String>, TokenError> {
    let invalid = |reason: String| TokenError::InvalidClaim { claim: claim.to_owned(), reason };
    let items: Vec<&str> = match value {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(text)) => text.split_whitespace().collect(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().ok_or_else(|| invalid("an item is not a string".into())))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(invalid("neither a string nor an array of strings".into())),
    };
    if items.len() > MAX_CLAIM_ITEMS {
        return Err(invalid(format!("more than {MAX_CLAIM_ITEMS} items")));
    }
    items.into_iter().map(|item| bounded(claim, item)).collect()
}

fn read_header(token: &str) -> Result<RawHeader, TokenError> {
    let mut parts = token.split('.');
    let (Some(header), Some(_), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(TokenError::Malformed("not three dot-separated parts".into()));
    };
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(header)
        .map_err(|_| TokenError::Malformed("header is not base64url".into()))?;
    serde_json::from_slice(&bytes)
        .map_err(|error| TokenError::Malformed(format!("header: {error}")))
}

#[cfg(test)]
mod tests;
