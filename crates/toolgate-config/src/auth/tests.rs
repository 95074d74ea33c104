//! `[auth]` checks beyond the golden fixtures: what is kept as written, and the hash forms.

use std::path::Path;

use super::*;
use crate::{FixedEnvironment, Format};

fn auth(text: &str) -> Result<AuthConfig, String> {
    let env = FixedEnvironment::new().with_var("KEY_HASH", format!("sha256:{}", "ab".repeat(32)));
    crate::parse_str(text, Format::Toml, Path::new("/"), &env)
        .map(|config| config.auth.expect("[auth] was written"))
        .map_err(|errors| errors.to_string())
}

#[test]
fn issuer_and_audience_are_kept_as_written() {
    // `url` would add a slash to a bare origin; `iss` and `aud` are compared as strings.
    let auth =
        auth("[auth]\nissuer = \"https://id.example.com\"\naudience = \"https://gw.example.com\"")
            .expect("valid");
    assert_eq!(auth.issuer.as_deref(), Some("https://id.example.com"));
    assert_eq!(auth.audience.as_deref(), Some("https://gw.example.com"));
}

#[test]
fn defaults() {
    let auth = auth("[auth]\nissuer = \"https://id.example.com\"").expect("valid");
    assert_eq!(
        auth,
        AuthConfig { issuer: Some("https://id.example.com".into()), ..AuthConfig::default() }
    );
    assert_eq!(auth.principal_claim, "sub");
    assert_eq!(auth.clock_skew, Duration::from_secs(60));
    assert_eq!(auth.algorithms, ["RS256", "ES256"]);
    assert!(!auth.allow_anonymous);
}

#[test]
fn plain_http_only_to_loopback() {
    for host in ["localhost", "127.0.0.1", "127.1.2.3", "[::1]"] {
        let text = format!("[auth]\nissuer = \"http://{host}:9000\"");
        assert!(auth(&text).is_ok(), "{host} is loopback");
    }
    for host in ["example.com", "10.0.0.1", "localhost.example.com"] {
        let text = format!("[auth]\nissuer = \"http://{host}:9000\"");
        let error = auth(&text).expect_err(host);
        assert_eq!(error, "auth.issuer: must be https (http only to a loopback host)");
    }
}

#[test]
fn an_issuer_has_no_query() {
    let error = auth("[auth]\nissuer = \"https://id.example.com/?realm=x\"").unwrap_err();
    assert_eq!(error, "auth.issuer: an issuer must not have a query (RFC 8414)");
    // An audience may.
    let text = "[auth]\nissuer = \"https://id.example.com\"\naudience = \"https://gw.example.com/mcp?t=1\"";
    assert!(auth(text).is_ok());
}

#[test]
fn hashes_are_interpolated_and_parsed() {
    let auth = auth("[auth.api_keys]\nci = { hash = \"${KEY_HASH}\" }").expect("valid");
    assert_eq!(auth.api_keys["ci"].hash, KeyHash::Sha256([0xab; 32]));
    assert!(auth.issuer.is_none());
}

#[test]
fn sha256_hashes_print_as_written() {
    let text = format!("sha256:{}", "0f".repeat(32));
    let hash = parse_key_hash(&text).expect("valid");
    assert_eq!(hash, KeyHash::Sha256([0x0f; 32]));
    assert_eq!(format!("{hash:?}"), text);
}

#[test]
fn malformed_hashes_say_what_is_wrong_without_repeating_them() {
    let cases = [
        ("sha256:xyz", "64 hexadecimal digits (found 3 characters)"),
        (&*format!("sha256:{}", "g".repeat(64)), "64 hexadecimal digits"),
        ("plain", "expected `sha256:<64 hex digits>` or `argon2:<PHC string>`"),
        ("argon2:not-phc", "not followed by a PHC string"),
        ("argon2:$pbkdf2-sha256$i=1000$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaA", "not argon2id"),
        ("argon2:$argon2id$v=19$m=19456,t=2,p=1", "no salt or no hash"),
    ];
    for (text, needle) in cases {
        let error = parse_key_hash(text).expect_err(text);
        assert!(error.contains(needle), "{text}: {error}");
    }
}

#[test]
fn api_key_names() {
    for name in ["ci", "ops.bot", "a-b_c9"] {
        assert!(is_api_key_name(name), "{name}");
    }
    for name in ["", "a b", "é", &"x".repeat(65)] {
        assert!(!is_api_key_name(name), "{name}");
    }
}

#[test]
fn roles_name_groups_and_principals_never_strangers() {
    let text = "[auth]\nallow_anonymous = true\n[auth.roles]\napprovers = [\"group:oncall\", \"jwt:alice\"]\nadmins = [\"key:ops-*\"]\n";
    let roles = auth(text).expect("valid").roles;
    assert_eq!(roles.approvers, ["group:oncall", "jwt:alice"]);
    assert_eq!(roles.admins, ["key:ops-*"]);
    for (member, problem) in [
        ("alice", "write `group:NAME`"),
        ("anonymous:anonymous", "someone who authenticated"),
        ("*:alice", "someone who authenticated"),
        ("jwt:", "nothing after"),
        ("key:[", "not a glob"),
    ] {
        let text = format!("[auth]\nallow_anonymous = true\n[auth.roles]\nadmins = [{member:?}]\n");
        let error = auth(&text).expect_err(member);
        assert!(error.starts_with("auth.roles.admins[0]: "), "{error}");
        assert!(error.contains(problem), "{member}: {error}");
    }
    let error = auth("[auth]\nallow_anonymous = true\n[auth.roles]\nowners = []\n").unwrap_err();
    assert!(error.contains("auth.roles.owners"), "{error}");
}

#[test]
fn introspection_defaults_and_its_secret_is_interpolated_and_hidden() {
    let text = "[auth]\nissuer = \"https://id.example.com\"\n\
                introspection_url = \"https://id.example.com/introspect\"\n\
                introspection_client_id = \"toolgate\"\n\
                introspection_client_secret = \"${KEY_HASH}\"\n";
    let introspection = auth(text).expect("valid").introspection.expect("introspection");
    assert_eq!(introspection.url.as_str(), "https://id.example.com/introspect");
    assert_eq!(introspection.client_id, "toolgate");
    assert_eq!(introspection.client_secret.expose(), format!("sha256:{}", "ab".repeat(32)));
    assert!(!format!("{introspection:?}").contains("abab"), "the secret is never shown");
    assert_eq!(introspection.cache_size, DEFAULT_INTROSPECTION_CACHE_SIZE);
    assert_eq!(introspection.cache_ttl, DEFAULT_INTROSPECTION_CACHE_TTL);
}

#[test]
fn introspection_needs_its_client_and_its_cache_may_be_off() {
    let base = "[auth]\nissuer = \"https://id.example.com\"\n\
                introspection_url = \"http://127.0.0.1:9/introspect\"\n";
    let error = auth(base).unwrap_err();
    assert!(error.contains("auth.introspection_client_id: missing"), "{error}");
    assert!(error.contains("auth.introspection_client_secret: missing"), "{error}");
    let text = format!(
        "{base}introspection_client_id = \"t\"\nintrospection_client_secret = \"s\"\n\
         introspection_cache_size = 0\nintrospection_cache_ttl = \"1s\"\n"
    );
    let introspection = auth(&text).expect("valid").introspection.expect("introspection");
    assert_eq!((introspection.cache_size, introspection.cache_ttl), (0, Duration::from_secs(1)));
}
