//! The store and the rule: where trust is kept, how privately, and when it holds.

use std::path::Path;

use toolgate_config::FixedEnvironment;

use super::{TrustStore, Trusted, Untrusted, canonical, require, shell_word};

fn env(state: &Path) -> FixedEnvironment {
    FixedEnvironment::new()
        .with_var("XDG_STATE_HOME", state.display().to_string())
        .with_home_dir("/nonexistent-home")
}

fn trust_now(path: &Path, env: &FixedEnvironment) {
    let file = TrustStore::location(env).expect("location");
    let mut store = TrustStore::open(&file).expect("open");
    let path = canonical(path).expect("canonical");
    let fingerprint = toolgate_config::fingerprint(&path, env).expect("fingerprint");
    store.trust(Trusted {
        path,
        digest: fingerprint.digest,
        files: fingerprint.files,
        trusted_at: "2026-01-01T00:00:00Z".to_owned(),
    });
    store.save().expect("save");
}

#[test]
fn the_store_lives_in_the_state_directory() {
    let with_xdg = env(Path::new("/state"));
    assert_eq!(
        TrustStore::location(&with_xdg).expect("location"),
        Path::new("/state/toolgate/trusted.json")
    );
    let relative = FixedEnvironment::new().with_var("XDG_STATE_HOME", "rel").with_home_dir("/h");
    assert_eq!(
        TrustStore::location(&relative).expect("location"),
        Path::new("/h/.local/state/toolgate/trusted.json")
    );
    assert!(TrustStore::location(&FixedEnvironment::new()).is_err());
}

#[test]
fn trust_holds_until_the_file_changes() {
    let state = tempfile::tempdir().expect("temp dir");
    let checkout = tempfile::tempdir().expect("temp dir");
    let config = checkout.path().join("toolgate.toml");
    std::fs::write(&config, "[servers.a]\ncommand = \"a\"\n").expect("write");
    let env = env(state.path());

    let refused = require(&config, &env).expect_err("not trusted yet");
    assert!(matches!(refused.downcast_ref(), Some(Untrusted::New { .. })), "{refused}");
    let message = refused.to_string();
    assert!(!message.contains('\n'), "one line: {message}");
    assert!(message.contains("toolgate trust "), "{message}");

    trust_now(&config, &env);
    require(&config, &env).expect("trusted");

    std::fs::write(&config, "[servers.a]\ncommand = \"b\"\n").expect("write");
    let refused = require(&config, &env).expect_err("changed");
    assert!(matches!(refused.downcast_ref(), Some(Untrusted::Changed { .. })), "{refused}");
}

#[cfg(unix)]
#[test]
fn the_store_is_private_and_written_whole() {
    use std::os::unix::fs::PermissionsExt as _;
    let state = tempfile::tempdir().expect("temp dir");
    let checkout = tempfile::tempdir().expect("temp dir");
    let config = checkout.path().join("toolgate.toml");
    std::fs::write(&config, "").expect("write");
    let env = env(state.path());
    trust_now(&config, &env);
    let file = TrustStore::location(&env).expect("location");
    let mode = |path: &Path| std::fs::metadata(path).expect("metadata").permissions().mode();
    assert_eq!(mode(&file) & 0o777, 0o600);
    assert_eq!(mode(file.parent().expect("folder")) & 0o777, 0o700);
    let leftovers: Vec<_> = std::fs::read_dir(file.parent().expect("folder"))
        .expect("read dir")
        .map(|entry| entry.expect("entry").file_name())
        .collect();
    assert_eq!(leftovers, ["trusted.json"]);

    let mut store = TrustStore::open(&file).expect("open");
    assert_eq!(store.entries().len(), 1);
    let path = canonical(&config).expect("canonical");
    assert!(store.revoke(&path).is_some());
    assert!(store.revoke(&path).is_none());
    store.save().expect("save");
    assert!(TrustStore::open(&file).expect("open").entries().is_empty());
}

#[test]
fn a_damaged_store_is_an_error_naming_it() {
    let state = tempfile::tempdir().expect("temp dir");
    let file = state.path().join("trusted.json");
    std::fs::write(&file, "not json").expect("write");
    let error = TrustStore::open(&file).expect_err("damaged");
    assert!(error.to_string().contains("trusted.json"), "{error}");
}

#[test]
fn paths_become_one_shell_word() {
    assert_eq!(shell_word(Path::new("/w/repo/toolgate.toml")), "/w/repo/toolgate.toml");
    assert_eq!(shell_word(Path::new("/w/my repo/it's.toml")), r"'/w/my repo/it'\''s.toml'");
}
