//! What a child inherits, case by case.

use std::collections::BTreeSet;
use std::ffi::OsString;

use toolgate_config::{Secret, StdioConfig};

use super::{child_environment, child_environment_names};

/// What toolgate's own environment might hold: harmless defaults, the admin token, keys.
fn gateway_environment() -> Vec<(OsString, OsString)> {
    [
        ("HOME", "/home/ada"),
        ("PATH", "/usr/bin"),
        ("USER", "ada"),
        ("LOGNAME", "ada"),
        ("SHELL", "/bin/sh"),
        ("TERM", "xterm"),
        ("LANG", "C.UTF-8"),
        ("LC_ALL", "C.UTF-8"),
        ("TMPDIR", "/tmp"),
        ("ALICE_TOKEN", "admin-token-0123456789"),
        ("OPENAI_API_KEY", "sk-provider"),
        ("AUDIT_KEY", "hmac-key-0123456789"),
        ("GITHUB_TOKEN", "ghp_x"),
        ("AWS_ACCESS_KEY_ID", "AKIA"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
        ("RUST_LOG", "info"),
    ]
    .into_iter()
    .map(|(name, value)| (name.into(), value.into()))
    .collect()
}

fn config(env_pass: &[&str], env_remove: &[&str], withheld: &[&str]) -> StdioConfig {
    let mut config = StdioConfig::new("server", Vec::new());
    config.env_pass = env_pass.iter().map(|s| (*s).to_owned()).collect();
    config.env_remove = env_remove.iter().map(|s| (*s).to_owned()).collect();
    config.withheld = withheld.iter().map(|s| (*s).to_owned()).collect::<BTreeSet<_>>();
    config
}

fn names(config: &StdioConfig) -> Vec<String> {
    child_environment_names(config, gateway_environment())
}

#[test]
fn by_default_a_child_gets_only_the_harmless_variables() {
    let config = config(&[], &[], &["ALICE_TOKEN", "OPENAI_API_KEY", "AUDIT_KEY"]);
    assert_eq!(
        names(&config),
        ["HOME", "LANG", "LC_ALL", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR", "USER"]
    );
}

#[test]
fn env_pass_adds_names_and_globs() {
    let config = config(&["GITHUB_TOKEN", "AWS_*"], &[], &[]);
    let names = names(&config);
    for name in ["GITHUB_TOKEN", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "HOME"] {
        assert!(names.contains(&name.to_owned()), "{name} in {names:?}");
    }
    assert!(!names.contains(&"RUST_LOG".to_owned()));
}

#[test]
fn a_glob_never_passes_a_withheld_variable_but_its_exact_name_does() {
    let withheld = ["ALICE_TOKEN", "OPENAI_API_KEY", "AUDIT_KEY"];
    let everything = config(&["*"], &[], &withheld);
    let names = names(&everything);
    for secret in withheld {
        assert!(!names.contains(&secret.to_owned()), "{secret} passed a glob: {names:?}");
    }
    assert!(names.contains(&"GITHUB_TOKEN".to_owned()) && names.contains(&"RUST_LOG".to_owned()));

    let named = config(&["*", "OPENAI_API_KEY"], &[], &withheld);
    let environment = child_environment(&named, gateway_environment());
    let key = environment.iter().find(|(name, _)| name == "OPENAI_API_KEY");
    assert_eq!(key.map(|(_, value)| value.clone()), Some("sk-provider".into()));
    assert!(!environment.iter().any(|(name, _)| name == "ALICE_TOKEN"));
}

#[test]
fn a_withheld_variable_is_not_inherited_even_from_the_default_list() {
    // A config whose admin token is read from, of all places, `USER`.
    let config = config(&[], &[], &["USER"]);
    assert!(!names(&config).contains(&"USER".to_owned()));
}

#[test]
fn env_remove_applies_to_defaults_and_passed_variables() {
    let config = config(&["AWS_*"], &["AWS_SECRET_*", "LC_*", "HOME"], &[]);
    let names = names(&config);
    assert!(names.contains(&"AWS_ACCESS_KEY_ID".to_owned()));
    for gone in ["AWS_SECRET_ACCESS_KEY", "LC_ALL", "HOME"] {
        assert!(!names.contains(&gone.to_owned()), "{gone} in {names:?}");
    }
    let emptied = self::config(&["*"], &["*"], &[]);
    assert!(self::names(&emptied).is_empty());
}

#[test]
fn env_sets_values_over_anything_inherited_and_env_remove_does_not_touch_it() {
    let mut config = config(&[], &["*"], &["ALICE_TOKEN"]);
    config.env.insert("HOME".into(), Secret::new("/srv/home"));
    // Named in `env`, a withheld variable is the user's own choice.
    config.env.insert("ALICE_TOKEN".into(), Secret::new("given"));
    let environment = child_environment(&config, gateway_environment());
    assert_eq!(
        environment,
        [("ALICE_TOKEN".into(), "given".into()), ("HOME".into(), "/srv/home".into())]
    );
}

#[cfg(unix)]
#[test]
fn names_that_are_not_unicode_and_exported_shell_functions_are_not_inherited() {
    use std::os::unix::ffi::OsStringExt as _;
    let odd = OsString::from_vec(b"LC_\xff".to_vec());
    let inherited = vec![
        (odd, "x".into()),
        ("TERM".into(), "() { :; }; echo pwned".into()),
        ("PATH".into(), "/usr/bin".into()),
    ];
    let config = config(&["*"], &[], &[]);
    assert_eq!(child_environment_names(&config, inherited), ["PATH"]);
}
