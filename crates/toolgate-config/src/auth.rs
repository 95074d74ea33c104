//! `[auth]`: who may call the HTTP front, as an OAuth 2.1 resource server and with API keys.
//!
//! ```toml
//! [auth]
//! issuer = "https://id.example.com"          # the authorization server (`iss`)
//! audience = "https://gw.example.com/mcp"    # default: the canonical URL of `/mcp`
//! scopes = ["mcp:tools"]                     # required in every token
//! jwks_url = "https://id.example.com/jwks"   # default: from the issuer's metadata
//! principal_claim = "sub"                    # the default
//! groups_claim = "groups"
//! tenant_claim = "tenant"
//! clock_skew = "60s"                         # the default
//! algorithms = ["RS256", "ES256"]            # the default; never `none` or HMAC
//! allow_anonymous = false
//! introspection_url = "https://id.example.com/introspect"  # opaque tokens (RFC 7662)
//! introspection_client_id = "toolgate"       # toolgate's client there
//! introspection_client_secret = "${INTROSPECTION_SECRET}"
//! introspection_cache_size = 1024            # the default; 0: no cache
//! introspection_cache_ttl = "60s"            # the default, at most 300s
//!
//! [auth.api_keys]
//! ci = { hash = "sha256:<64 hex digits>", groups = ["deploy"], tenant = "acme" }
//!
//! [auth.roles]                               # who may use the admin API with these
//! approvers = ["group:oncall"]               # GET /approvals, POST /approvals/{id}
//! admins = ["jwt:alice", "key:ops-*"]        # everything
//! ```
//!
//! Only the file is checked: nothing here contacts the issuer. URLs must be `https`, except
//! to a loopback host. With `introspection_url` (which needs `issuer`; it is not discovered
//! from the issuer's metadata), a credential that is not a JWT and not an API key is an opaque
//! token, sent to that endpoint with the client's id and secret (`client_secret_basic`): it
//! must be active, for the audience (`aud` is required), and is read as a JWT's claims are. An
//! active answer is kept at most `introspection_cache_ttl` and never past the token's `exp`; a
//! refusal is not kept. When the endpoint cannot be asked, the request is refused with 503.
//! The HTTP front (`toolgate-server`) enforces it.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::check::Checker;
use crate::error::key_path;
use crate::model::Secret;
use crate::value::Value;

const AUTH_KEYS: &[&str] = &[
    "issuer",
    "audience",
    "scopes",
    "jwks_url",
    "principal_claim",
    "groups_claim",
    "tenant_claim",
    "clock_skew",
    "algorithms",
    "allow_anonymous",
    "introspection_url",
    "introspection_client_id",
    "introspection_client_secret",
    "introspection_cache_size",
    "introspection_cache_ttl",
    "api_keys",
    "roles",
];
const ROLE_KEYS: &[&str] = &["approvers", "admins"];
const API_KEY_KEYS: &[&str] = &["hash", "groups", "tenant"];

/// Default `clock_skew`: how far `exp` and `nbf` may be off.
pub const DEFAULT_CLOCK_SKEW: Duration = Duration::from_secs(60);
/// The largest `clock_skew` accepted.
pub const MAX_CLOCK_SKEW: Duration = Duration::from_secs(300);
/// Default `introspection_cache_size`: how many introspected tokens are remembered.
pub const DEFAULT_INTROSPECTION_CACHE_SIZE: usize = 1024;
/// The largest `introspection_cache_size` accepted.
pub const MAX_INTROSPECTION_CACHE_SIZE: usize = 1_000_000;
/// Default `introspection_cache_ttl`: how long an active answer is kept, at most.
pub const DEFAULT_INTROSPECTION_CACHE_TTL: Duration = Duration::from_secs(60);
/// The largest `introspection_cache_ttl` accepted: a revoked token is served at most this long.
pub const MAX_INTROSPECTION_CACHE_TTL: Duration = Duration::from_secs(300);
/// Default `principal_claim`.
pub const DEFAULT_PRINCIPAL_CLAIM: &str = "sub";
/// Default `algorithms`.
pub const DEFAULT_ALGORITHMS: &[&str] = &["RS256", "ES256"];
/// The JWS algorithms `algorithms` may name: those with a public key, which a JWKS serves.
pub const JWT_ALGORITHMS: &[&str] =
    &["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA"];

/// `[auth]`.
#[derive(Debug, Clone, PartialEq)]
pub struct AuthConfig {
    /// The authorization server, exactly as tokens write it in `iss`; `None` when only API
    /// keys are accepted.
    pub issuer: Option<String>,
    /// The `aud` tokens must carry; `None`: the canonical URL of `/mcp` (RFC 8707), which
    /// the server knows.
    pub audience: Option<String>,
    /// Scopes every token must carry.
    pub scopes: Vec<String>,
    /// Where the signing keys are; `None`: from the issuer's metadata.
    pub jwks_url: Option<url::Url>,
    /// The claim naming the principal.
    pub principal_claim: String,
    /// The claim listing the principal's groups.
    pub groups_claim: Option<String>,
    /// The claim naming the principal's tenant.
    pub tenant_claim: Option<String>,
    /// How far `exp` and `nbf` may be off.
    pub clock_skew: Duration,
    /// The JWS algorithms accepted, each one of [`JWT_ALGORITHMS`].
    pub algorithms: Vec<String>,
    /// Whether a request without credentials is let through, as `anonymous`.
    pub allow_anonymous: bool,
    /// Opaque tokens checked at the issuer's introspection endpoint (RFC 7662); `None`: not
    /// at all.
    pub introspection: Option<IntrospectionConfig>,
    /// `[auth.api_keys]`, by name.
    pub api_keys: BTreeMap<String, ApiKeyConfig>,
    /// `[auth.roles]`: who may use the admin API with these credentials.
    pub roles: Roles,
}

/// The `introspection_*` keys of `[auth]`.
#[derive(Debug, Clone, PartialEq)]
pub struct IntrospectionConfig {
    /// The introspection endpoint.
    pub url: url::Url,
    /// The client toolgate authenticates as there (`client_secret_basic`).
    pub client_id: String,
    /// Its secret.
    pub client_secret: Secret,
    /// The most tokens remembered; 0: none.
    pub cache_size: usize,
    /// The longest an active answer is remembered (never past the token's `exp`).
    pub cache_ttl: Duration,
}

/// `[auth.roles]`: each role a list of members, each `group:NAME` (everyone in that group)
/// or a principal as `kind:id`, where the id may be a glob (`key:ops-*`). Nobody anonymous is
/// ever a member.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Roles {
    /// May list held calls and decide them.
    pub approvers: Vec<String>,
    /// May use the whole admin API.
    pub admins: Vec<String>,
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            issuer: None,
            audience: None,
            scopes: Vec::new(),
            jwks_url: None,
            principal_claim: DEFAULT_PRINCIPAL_CLAIM.to_owned(),
            groups_claim: None,
            tenant_claim: None,
            clock_skew: DEFAULT_CLOCK_SKEW,
            algorithms: DEFAULT_ALGORITHMS.iter().map(|a| (*a).to_owned()).collect(),
            allow_anonymous: false,
            introspection: None,
            api_keys: BTreeMap::new(),
            roles: Roles::default(),
        }
    }
}

/// One `[auth.api_keys]` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiKeyConfig {
    /// The digest the key is checked against; the key itself is never in the file.
    pub hash: KeyHash,
    /// The groups its holder is in.
    pub groups: Vec<String>,
    /// Its holder's tenant.
    pub tenant: Option<String>,
}

/// An API key's `hash`.
#[derive(Clone, PartialEq, Eq)]
pub enum KeyHash {
    /// `sha256:<64 hex digits>`: SHA-256 of the key (fine for random keys of 32 bytes).
    Sha256([u8; 32]),
    /// `argon2:<PHC string>`, such as `argon2:$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>`.
    Argon2(String),
}

impl std::fmt::Debug for KeyHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyHash::Sha256(digest) => {
                f.write_str("sha256:")?;
                digest.iter().try_for_each(|b| write!(f, "{b:02x}"))
            }
            KeyHash::Argon2(phc) => write!(f, "argon2:{phc}"),
        }
    }
}

pub(crate) fn check_auth(cx: &mut Checker<'_>, value: &Value) -> Option<AuthConfig> {
    let entries = cx.table(value, "auth")?;
    let fields = cx.known_keys(entries, "auth", AUTH_KEYS);
    let at = |key: &str| key_path("auth", key);
    let mut auth = AuthConfig::default();
    let mut ok = true;
    let mut track = |result: Option<()>| ok &= result.is_some();

    if let Some(value) = fields.get("issuer") {
        track(url_text(cx, value, &at("issuer"), true).map(|text| auth.issuer = Some(text)));
    }
    if let Some(value) = fields.get("audience") {
        track(url_text(cx, value, &at("audience"), false).map(|text| auth.audience = Some(text)));
    }
    if let Some(value) = fields.get("jwks_url") {
        track(
            url_text(cx, value, &at("jwks_url"), false)
                .and_then(|text| url::Url::parse(&text).ok())
                .map(|url| auth.jwks_url = Some(url)),
        );
    }
    if let Some(value) = fields.get("scopes") {
        track(scopes(cx, value, &at("scopes")).map(|scopes| auth.scopes = scopes));
    }
    if let Some(value) = fields.get("principal_claim") {
        track(claim(cx, value, &at("principal_claim")).map(|c| auth.principal_claim = c));
    }
    if let Some(value) = fields.get("groups_claim") {
        track(claim(cx, value, &at("groups_claim")).map(|c| auth.groups_claim = Some(c)));
    }
    if let Some(value) = fields.get("tenant_claim") {
        track(claim(cx, value, &at("tenant_claim")).map(|c| auth.tenant_claim = Some(c)));
    }
    if let Some(value) = fields.get("clock_skew") {
        let path = at("clock_skew");
        track(cx.duration(value, &path).and_then(|skew| {
            if skew > MAX_CLOCK_SKEW {
                cx.error(&path, format!("at most {}s", MAX_CLOCK_SKEW.as_secs()));
                return None;
            }
            auth.clock_skew = skew;
            Some(())
        }));
    }
    if let Some(value) = fields.get("algorithms") {
        track(algorithms(cx, value, &at("algorithms")).map(|a| auth.algorithms = a));
    }
    if let Some(value) = fields.get("allow_anonymous") {
        track(cx.boolean(value, &at("allow_anonymous")).map(|b| auth.allow_anonymous = b));
    }
    let introspection_keys: Vec<&str> =
        AUTH_KEYS.iter().copied().filter(|k| k.starts_with("introspection_")).collect();
    if fields.contains_key("introspection_url") {
        track(introspection(cx, &fields).map(|i| auth.introspection = Some(i)));
    } else {
        for key in &introspection_keys {
            if fields.contains_key(key) {
                cx.error(&at(key), "applies to introspection: set auth.introspection_url");
                track(None);
            }
        }
    }
    if let Some(value) = fields.get("api_keys") {
        track(api_keys(cx, value, &at("api_keys")).map(|keys| auth.api_keys = keys));
    }
    if let Some(value) = fields.get("roles") {
        track(roles(cx, value, &at("roles")).map(|roles| auth.roles = roles));
    }
    if ok && auth.issuer.is_none() {
        for key in
            ["audience", "jwks_url", "scopes", "groups_claim", "tenant_claim", "introspection_url"]
        {
            if fields.contains_key(key) {
                cx.error(&at(key), "applies to tokens, which need `issuer`: set auth.issuer");
                ok = false;
            }
        }
        if ok && auth.api_keys.is_empty() && !auth.allow_anonymous {
            cx.error("auth", "accepts no credential: set `issuer` (tokens) or add [auth.api_keys]");
            ok = false;
        }
    }
    ok.then_some(auth)
}

/// The `introspection_*` keys, `introspection_url` among them.
fn introspection(
    cx: &mut Checker<'_>,
    fields: &BTreeMap<&str, &Value>,
) -> Option<IntrospectionConfig> {
    let at = |key: &str| key_path("auth", key);
    let url = url_text(cx, fields["introspection_url"], &at("introspection_url"), false)
        .and_then(|text| url::Url::parse(&text).ok());
    let client_id = match fields.get("introspection_client_id") {
        Some(value) => claim(cx, value, &at("introspection_client_id")),
        None => {
            cx.error(&at("introspection_client_id"), "missing: the client toolgate introspects as");
            None
        }
    };
    let path = at("introspection_client_secret");
    let client_secret = match fields.get("introspection_client_secret") {
        Some(value) => cx.secret(|cx| {
            let text = cx.string(value, &path)?;
            let secret = cx.interpolate(text, &path)?;
            if secret.is_empty() {
                cx.error(&path, "must not be empty");
                return None;
            }
            Some(Secret::new(secret))
        }),
        None => {
            cx.error(&path, "missing: the client's secret, as `${VAR}`");
            None
        }
    };
    let cache_size = match fields.get("introspection_cache_size") {
        Some(value) => {
            let path = at("introspection_cache_size");
            match value {
                Value::Integer(n) if (0..=MAX_INTROSPECTION_CACHE_SIZE as i64).contains(n) => {
                    Some(*n as usize)
                }
                Value::Integer(_) => {
                    cx.error(&path, format!("from 0 to {MAX_INTROSPECTION_CACHE_SIZE}"));
                    None
                }
                other => {
                    cx.expected(&path, "an integer", other);
                    None
                }
            }
        }
        None => Some(DEFAULT_INTROSPECTION_CACHE_SIZE),
    };
    let cache_ttl = match fields.get("introspection_cache_ttl") {
        Some(value) => {
            let path = at("introspection_cache_ttl");
            cx.duration(value, &path).and_then(|ttl| {
                if ttl > MAX_INTROSPECTION_CACHE_TTL {
                    cx.error(&path, format!("at most {}s", MAX_INTROSPECTION_CACHE_TTL.as_secs()));
                    return None;
                }
                Some(ttl)
            })
        }
        None => Some(DEFAULT_INTROSPECTION_CACHE_TTL),
    };
    Some(IntrospectionConfig {
        url: url?,
        client_id: client_id?,
        client_secret: client_secret?,
        cache_size: cache_size?,
        cache_ttl: cache_ttl?,
    })
}

/// A URL written as text, checked: `http(s)`, `https` unless the host is loopback, no
/// fragment, and for an issuer no query (RFC 8414). Returned as written (trimmed), since
/// `iss` and `aud` are compared as strings.
fn url_text(cx: &mut Checker<'_>, value: &Value, path: &str, issuer: bool) -> Option<String> {
    let url = cx.url(value, path)?;
    if url.scheme() != "https" && !is_loopback(&url) {
        cx.error(path, "must be https (http only to a loopback host)");
        return None;
    }
    if url.fragment().is_some() {
        cx.error(path, "must not have a fragment");
        return None;
    }
    if issuer && url.query().is_some() {
        cx.error(path, "an issuer must not have a query (RFC 8414)");
        return None;
    }
    let text = cx.string(value, path)?;
    cx.interpolate(text, path).map(|text| text.trim().to_owned())
}

fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// RFC 6749's `scope-token`: printable ASCII but space, `"` and `\`.
fn is_scope_token(scope: &str) -> bool {
    !scope.is_empty() && scope.bytes().all(|b| matches!(b, 0x21 | 0x23..=0x5B | 0x5D..=0x7E))
}

fn scopes(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<Vec<String>> {
    let items = cx.strings(value, path)?;
    let mut out = Some(Vec::with_capacity(items.len()));
    for (i, scope) in items.into_iter().enumerate() {
        let item = crate::error::index_path(path, i);
        if !is_scope_token(scope) {
            cx.error(&item, "not a scope (printable ASCII without spaces, quotes or backslashes)");
            out = None;
        } else if let Some(out) = &mut out
            && !out.iter().any(|s| s == scope)
        {
            out.push(scope.to_owned());
        }
    }
    out
}

fn roles(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<Roles> {
    let entries = cx.table(value, path)?;
    let fields = cx.known_keys(entries, path, ROLE_KEYS);
    let mut roles = Roles::default();
    let mut ok = true;
    for (key, out) in [("approvers", &mut roles.approvers), ("admins", &mut roles.admins)] {
        let Some(value) = fields.get(key) else { continue };
        let at = key_path(path, key);
        let Some(members) = cx.strings(value, &at) else {
            ok = false;
            continue;
        };
        for (i, member) in members.into_iter().enumerate() {
            match role_member_problem(member) {
                None => out.push(member.to_owned()),
                Some(problem) => {
                    cx.error(&crate::error::index_path(&at, i), problem);
                    ok = false;
                }
            }
        }
    }
    ok.then_some(roles)
}

/// What is wrong with a role's member, if anything: it is `group:NAME` or `kind:id-glob`, and
/// never anonymous.
fn role_member_problem(member: &str) -> Option<String> {
    let Some((kind, rest)) = member.split_once(':') else {
        return Some(format!(
            "{member:?}: write `group:NAME` or a principal as `kind:id` (`jwt:alice`, `key:ci`)"
        ));
    };
    if rest.is_empty() {
        return Some(format!("{member:?}: nothing after `{kind}:`"));
    }
    if kind == "anonymous" || kind.contains(['*', '?', '[']) {
        return Some(format!("{member:?}: a role is for someone who authenticated"));
    }
    if kind != "group"
        && let Err(error) = globset::Glob::new(rest)
    {
        return Some(format!("{member:?}: not a glob: {}", error.kind()));
    }
    None
}

fn claim(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<String> {
    let name = cx.string(value, path)?;
    if name.trim().is_empty() {
        cx.error(path, "must not be empty");
        return None;
    }
    Some(name.to_owned())
}

fn algorithms(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<Vec<String>> {
    let items = cx.strings(value, path)?;
    if items.is_empty() {
        cx.error(path, "must name at least one algorithm");
        return None;
    }
    let mut out = Some(Vec::with_capacity(items.len()));
    for (i, name) in items.into_iter().enumerate() {
        let item = crate::error::index_path(path, i);
        if name.eq_ignore_ascii_case("none") {
            cx.error(&item, "\"none\" is refused: an unsigned token proves nothing");
            out = None;
        } else if name.to_ascii_uppercase().starts_with("HS") {
            cx.error(
                &item,
                format!(
                    "{name:?} is refused: HMAC needs a shared secret, and tokens are checked \
                     against the issuer's public keys"
                ),
            );
            out = None;
        } else if !JWT_ALGORITHMS.contains(&name) {
            cx.error(
                &item,
                format!("unknown algorithm {name:?} (known: {})", JWT_ALGORITHMS.join(", ")),
            );
            out = None;
        } else if let Some(out) = &mut out
            && !out.iter().any(|a| a == name)
        {
            out.push(name.to_owned());
        }
    }
    out
}

fn api_keys(
    cx: &mut Checker<'_>,
    value: &Value,
    path: &str,
) -> Option<BTreeMap<String, ApiKeyConfig>> {
    let entries = cx.table(value, path)?;
    let mut out = Some(BTreeMap::new());
    for (name, value) in entries {
        let entry_path = key_path(path, name);
        let key = api_key(cx, name, value, &entry_path);
        match (key, &mut out) {
            (Some(key), Some(out)) => {
                out.insert(name.clone(), key);
            }
            _ => out = None,
        }
    }
    out
}

/// Whether `name` may name an API key: what `toolgate keys new` accepts too.
pub fn is_api_key_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
}

fn api_key(cx: &mut Checker<'_>, name: &str, value: &Value, path: &str) -> Option<ApiKeyConfig> {
    let entries = cx.table(value, path)?;
    let fields = cx.known_keys(entries, path, API_KEY_KEYS);
    let mut ok = true;
    if !is_api_key_name(name) {
        cx.error(path, "a key's name is 1 to 64 letters, digits, `_`, `-` or `.`");
        ok = false;
    }
    let hash_path = key_path(path, "hash");
    let hash = match fields.get("hash") {
        Some(value) => cx.string(value, &hash_path).and_then(|text| {
            let text = cx.interpolate(text, &hash_path)?;
            match parse_key_hash(&text) {
                Ok(hash) => Some(hash),
                Err(message) => {
                    cx.error(&hash_path, message);
                    None
                }
            }
        }),
        None => {
            cx.error(&hash_path, "missing: the key's digest (`toolgate keys new` prints one)");
            None
        }
    };
    let groups = match fields.get("groups") {
        Some(value) => {
            let groups_path = key_path(path, "groups");
            cx.strings(value, &groups_path).and_then(|groups| {
                let mut good = true;
                for (i, group) in groups.iter().enumerate() {
                    if group.trim().is_empty() {
                        cx.error(&crate::error::index_path(&groups_path, i), "must not be empty");
                        good = false;
                    }
                }
                good.then(|| groups.into_iter().map(str::to_owned).collect())
            })
        }
        None => Some(Vec::new()),
    };
    let tenant = match fields.get("tenant") {
        Some(value) => claim(cx, value, &key_path(path, "tenant")).map(Some),
        None => Some(None),
    };
    match (ok, hash, groups, tenant) {
        (true, Some(hash), Some(groups), Some(tenant)) => {
            Some(ApiKeyConfig { hash, groups, tenant })
        }
        _ => None,
    }
}

/// Reads `sha256:<64 hex digits>` or `argon2:<PHC string>`; the error says what is wrong
/// without repeating the text.
pub fn parse_key_hash(text: &str) -> Result<KeyHash, String> {
    if let Some(hex) = text.strip_prefix("sha256:") {
        let bytes = hex.as_bytes();
        if bytes.len() != 64 || !bytes.iter().all(u8::is_ascii_hexdigit) {
            return Err(format!(
                "`sha256:` must be followed by 64 hexadecimal digits (found {} characters)",
                hex.len()
            ));
        }
        let mut digest = [0u8; 32];
        for (i, pair) in bytes.chunks(2).enumerate() {
            let pair = std::str::from_utf8(pair).expect("hex digits are ASCII");
            digest[i] = u8::from_str_radix(pair, 16).expect("checked hex digits");
        }
        return Ok(KeyHash::Sha256(digest));
    }
    if let Some(phc) = text.strip_prefix("argon2:") {
        let hash = password_hash::PasswordHash::new(phc)
            .map_err(|error| format!("`argon2:` is not followed by a PHC string: {error}"))?;
        if !matches!(hash.algorithm.as_str(), "argon2id" | "argon2i" | "argon2d") {
            return Err(format!(
                "the PHC string is for {:?}, not argon2id, argon2i or argon2d",
                hash.algorithm.as_str()
            ));
        }
        if hash.hash.is_none() || hash.salt.is_none() {
            return Err("the PHC string has no salt or no hash".to_owned());
        }
        return Ok(KeyHash::Argon2(phc.to_owned()));
    }
    Err("expected `sha256:<64 hex digits>` or `argon2:<PHC string>`".to_owned())
}

#[cfg(test)]
mod tests;
