//! API keys: fresh keys, their config lines, and checking presented keys.

use std::collections::BTreeMap;
use std::path::Path;

use argon2::password_hash::{PasswordHasher as _, SaltString};
use toolgate_config::{FixedEnvironment, Format};

use super::*;

/// The `[auth.api_keys]` table of a config made of `lines`, checked by toolgate-config.
fn keys_of(lines: &[String]) -> BTreeMap<String, ApiKeyConfig> {
    let text = format!("[auth.api_keys]\n{}\n", lines.join("\n"));
    let config =
        toolgate_config::parse_str(&text, Format::Toml, Path::new("/"), &FixedEnvironment::new())
            .unwrap_or_else(|errors| panic!("{text}\n{errors}"));
    config.auth.expect("[auth]").api_keys
}

fn argon2_phc(key: &str) -> String {
    // Small parameters: a test, not a deployment.
    let params = argon2::Params::new(64, 1, 1, None).expect("valid parameters");
    let argon2 = Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
    let salt = SaltString::from_b64("c2FsdHNhbHRzYWx0").expect("valid salt");
    argon2.hash_password(key.as_bytes(), &salt).expect("hashing succeeds").to_string()
}

#[test]
fn a_fresh_key_has_the_documented_form() {
    let new = generate_key().expect("random bytes");
    let rest = new.key.strip_prefix("tg_").expect("prefix");
    assert_eq!(rest.len(), 43, "32 bytes in unpadded base64url");
    assert!(rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
    assert_ne!(generate_key().expect("random bytes").key, new.key);
    assert!(!format!("{new:?}").contains(&new.key), "Debug hides the key");
}

#[test]
fn the_config_line_verifies_the_key_it_was_made_for() {
    let new = generate_key().expect("random bytes");
    let groups = vec!["deploy".to_owned(), "with \"quote\"".to_owned()];
    let line = new.config_line("ci.bot", &groups, Some("acme"));
    let keys = ApiKeys::new(&keys_of(&[line])).expect("usable");
    let identity = keys.verify(&new.key).expect("the key matches its own line");
    assert_eq!(
        identity,
        Identity {
            principal: "ci.bot".into(),
            groups,
            tenant: Some("acme".into()),
            method: Method::ApiKey,
            scopes: Vec::new(),
        }
    );
    assert_eq!(keys.verify(&format!("{}x", new.key)), None);
    assert_eq!(keys.verify(""), None);
}

#[test]
fn the_matching_entry_among_several() {
    let (a, b) = (generate_key().unwrap(), generate_key().unwrap());
    let keys =
        ApiKeys::new(&keys_of(&[a.config_line("a", &[], None), b.config_line("b", &[], None)]))
            .expect("usable");
    assert_eq!(keys.verify(&a.key).unwrap().principal, "a");
    assert_eq!(keys.verify(&b.key).unwrap().principal, "b");
    assert_eq!(keys.verify("tg_nothing").map(|i| i.principal), None);
}

#[test]
fn argon2_entries() {
    let phc = argon2_phc("correct horse battery staple");
    let line = format!("person = {{ hash = \"argon2:{phc}\", groups = [\"ops\"] }}");
    let keys = ApiKeys::new(&keys_of(&[line])).expect("usable");
    let identity = keys.verify("correct horse battery staple").expect("matches");
    assert_eq!(identity.principal, "person");
    assert_eq!(identity.groups, ["ops"]);
    assert_eq!(keys.verify("correct horse battery stapler"), None);
}

#[test]
fn keys_longer_than_the_limit_are_not_hashed() {
    let long = "k".repeat(MAX_KEY_LEN + 1);
    let digest: [u8; 32] = Sha256::digest(long.as_bytes()).into();
    let config = BTreeMap::from([(
        "long".to_owned(),
        ApiKeyConfig { hash: KeyHash::Sha256(digest), groups: Vec::new(), tenant: None },
    )]);
    assert_eq!(ApiKeys::new(&config).unwrap().verify(&long), None);
}

#[test]
fn toml_strings_escape() {
    assert_eq!(toml_string("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000A\"");
    assert_eq!(toml_key("ci"), "ci");
    assert_eq!(toml_key("ci.bot"), "\"ci.bot\"");
}
