//! `[state]`: the backends, the shared key, and every error with its path.

use std::path::Path;

use super::*;
use crate::{FixedEnvironment, Format};

fn load(text: &str, env: &FixedEnvironment) -> Result<StateConfig, String> {
    crate::parse_str(text, Format::Toml, Path::new("/etc/toolgate"), env)
        .map(|config| config.state)
        .map_err(|errors| errors.to_string())
}

fn state(text: &str, env: &FixedEnvironment) -> StateConfig {
    load(text, env).unwrap_or_else(|e| panic!("{text}\nmust be valid:\n{e}"))
}

const KEY: &str = "0123456789abcdef0123456789abcdef";

#[test]
fn without_a_section_state_is_in_memory_and_nothing_is_sealed() {
    let config = state("", &FixedEnvironment::new());
    assert_eq!(config, StateConfig::default());
    assert_eq!(config.backend, StateBackend::Memory);
    assert!(config.shared_key.is_none());
}

#[test]
fn backends_and_the_key_come_from_variables_as_secrets() {
    let env = FixedEnvironment::new()
        .with_var("KEY", KEY)
        .with_var("REDIS_URL", "redis://:pw@127.0.0.1:6379/0");
    let text = "[state]\nbackend = \"${REDIS_URL}\"\nshared_key = \"${KEY}\"\n";
    let config = state(text, &env);
    assert_eq!(config.backend, StateBackend::Redis(Secret::new("redis://:pw@127.0.0.1:6379/0")));
    assert_eq!(config.shared_key.as_ref().map(Secret::expose), Some(KEY));
    let parsed = crate::parse_str(text, Format::Toml, Path::new("/etc"), &env).expect("valid");
    assert!(parsed.secret_env.contains("KEY") && parsed.secret_env.contains("REDIS_URL"));
    // The password is no part of what Debug prints.
    assert!(!format!("{config:?}").contains("pw@"), "{config:?}");

    let text = format!("[state]\nbackend = \"postgresql://db/toolgate\"\nshared_key = \"{KEY}\"\n");
    let config = state(&text, &FixedEnvironment::new());
    assert_eq!(config.backend, StateBackend::Postgres(Secret::new("postgresql://db/toolgate")));
    let text = format!("[state]\nbackend = \"rediss://cache:6380\"\nshared_key = \"{KEY}\"\n");
    assert!(matches!(state(&text, &FixedEnvironment::new()).backend, StateBackend::Redis(_)));
    // Memory with a key: one process that seals (a single replica that may become several).
    let text = format!("[state]\nbackend = \"memory\"\nshared_key = \"{KEY}\"\n");
    assert!(state(&text, &FixedEnvironment::new()).shared_key.is_some());
}

#[test]
fn every_mistake_is_named_with_its_path() {
    let env = FixedEnvironment::new();
    let cases = [
        ("[state]\nbackend = \"mysql://db\"\n", "state.backend: expected \"memory\""),
        ("[state]\nbackend = 7\n", "state.backend"),
        ("[state]\nshared_key = \"short\"\n", "state.shared_key: is 5 bytes long"),
        ("[state]\nbackend = \"redis://cache\"\n", "state.shared_key: a shared backend"),
        ("[state]\nbakend = \"memory\"\n", "state.bakend"),
        ("state = 1\n", "state"),
    ];
    for (text, expected) in cases {
        let errors = load(text, &env).expect_err(text);
        assert!(errors.contains(expected), "{text}\n{errors}");
    }
    // A URL that cannot be read is not echoed (it may hold a password).
    let errors = load("[state]\nbackend = \"sqlite:pw\"\n", &env).expect_err("not a backend");
    assert!(!errors.contains("sqlite:pw"), "{errors}");
}

#[test]
fn replicas_sharing_state_are_warned_off_a_store_of_their_own() {
    let env = FixedEnvironment::new().with_var("KEY", KEY);
    let warnings = |llm: &str, backend: &str| {
        let text = format!(
            "[gateway]\nllm_api = true\n\n[llm]\n{llm}\n\n[state]\n\
             backend = \"{backend}\"\nshared_key = \"${{KEY}}\"\n"
        );
        let config = crate::parse_str(&text, Format::Toml, Path::new("/etc"), &env)
            .unwrap_or_else(|e| panic!("{text}\n{e}"));
        config.warnings.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
    };
    let redis = "redis://127.0.0.1:6379/0";
    let own = warnings("store = \"sqlite:responses.db\"", redis);
    assert!(own.contains("llm.store") && own.contains("its own SQLite file"), "{own}");
    assert!(own.contains("\"state\""), "says what to write instead: {own}");
    // The default with a shared state is the state: nothing to warn of.
    assert_eq!(warnings("", redis), "");
    assert_eq!(warnings("store = \"state\"", redis), "");
    assert!(!warnings("store = \"postgres://db/toolgate\"", redis).contains("llm.store"));
    assert!(!warnings("store = \"off\"", redis).contains("llm.store"));
    // One process: its own file is fine, and "state" is its memory.
    assert_eq!(warnings("store = \"sqlite:responses.db\"", "memory"), "");
    let memory = warnings("store = \"state\"", "memory");
    assert!(memory.contains("llm.store") && memory.contains("lost when it stops"), "{memory}");
    // The state keeps nothing past 30 days.
    let long = warnings("store_ttl = \"90d\"", redis);
    assert!(long.contains("llm.store_ttl") && long.contains("30 days"), "{long}");
    assert_eq!(warnings("store_ttl = \"30d\"", redis), "");
    assert_eq!(warnings("store_ttl = \"90d\"\nstore = \"sqlite:r.db\"", "memory"), "");
}

#[test]
fn a_replica_is_named_from_its_environment_and_a_pin_needs_shared_named_replicas() {
    let env = FixedEnvironment::new().with_var("TOOLGATE_REPLICA", "eu-1");
    let text = format!(
        "[state]\nbackend = \"redis://cache\"\nshared_key = \"{KEY}\"\n\
         replica = \"${{TOOLGATE_REPLICA}}\"\n\
         [servers.memory]\ncommand = \"mcp-memory\"\nreplica = \"eu-1\"\n"
    );
    let config = crate::parse_str(&text, Format::Toml, Path::new("/etc"), &env).expect("valid");
    assert_eq!(config.state.replica.as_deref(), Some("eu-1"));
    assert_eq!(config.servers[0].replica.as_deref(), Some("eu-1"));

    let cases = [
        // Pinned, but nothing is shared: the other replicas could not reach it.
        (
            "[servers.memory]\ncommand = \"m\"\nreplica = \"a\"\n".to_owned(),
            "servers.memory.replica: pins the server to replica \"a\"",
        ),
        // Shared, but this replica has no name to compare.
        (
            format!(
                "[state]\nbackend = \"redis://cache\"\nshared_key = \"{KEY}\"\n\
                 [servers.memory]\ncommand = \"m\"\nreplica = \"a\"\n"
            ),
            "set [state] replica",
        ),
        ("[state]\nreplica = \"a b\"\n".to_owned(), "state.replica: \"a b\" is not a replica name"),
        ("[state]\nreplica = \"\"\n".to_owned(), "state.replica"),
        (format!("[state]\nreplica = \"{}\"\n", "r".repeat(65)), "is not a replica name"),
        (
            "[servers.memory]\ncommand = \"m\"\nreplica = \"a/b\"\n".to_owned(),
            "servers.memory.replica: \"a/b\" is not a replica name",
        ),
    ];
    for (text, wanted) in cases {
        let error = load(&text, &FixedEnvironment::new()).expect_err(&text);
        assert!(error.contains(wanted), "{text}\nwanted {wanted:?} in:\n{error}");
    }
}
