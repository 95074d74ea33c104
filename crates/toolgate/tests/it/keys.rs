//! `toolgate keys new`: the key it prints is verified by the line it prints, through
//! toolgate-config and toolgate-auth.

use std::path::Path;
use std::process::Command;

use crate::support::*;

fn keys_new(args: &[&str]) -> std::process::Output {
    Command::new(toolgate_bin()).args(["keys", "new"]).args(args).output().expect("toolgate runs")
}

/// The API keys of a config made of `line` under `[auth.api_keys]`.
fn api_keys(line: &str) -> toolgate_auth::ApiKeys {
    let text = format!("[auth.api_keys]\n{line}\n");
    let env = toolgate_config::FixedEnvironment::new();
    let config =
        toolgate_config::parse_str(&text, toolgate_config::Format::Toml, Path::new("/"), &env)
            .unwrap_or_else(|errors| panic!("the printed line must be valid:\n{text}\n{errors}"));
    toolgate_auth::ApiKeys::new(&config.auth.expect("[auth]").api_keys).expect("usable keys")
}

#[test]
fn the_printed_line_verifies_the_printed_key() {
    let output = keys_new(&["ci.bot", "--groups", "deploy,readers", "--tenant", "acme"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8(output.stdout).expect("UTF-8");
    assert!(stdout.contains("shown only now"), "{stdout}");
    let key = stdout.lines().map(str::trim).find(|l| l.starts_with("tg_")).expect("the key");
    let line =
        stdout.lines().map(str::trim).find(|l| l.starts_with("\"ci.bot\" = ")).expect("the line");
    assert!(!line.contains(key), "the line holds the hash, not the key");
    let identity = api_keys(line).verify(key).expect("the key matches its line");
    assert_eq!(identity.principal, "ci.bot");
    assert_eq!(identity.groups, ["deploy", "readers"]);
    assert_eq!(identity.tenant.as_deref(), Some("acme"));
    assert_eq!(identity.method, toolgate_auth::Method::ApiKey);
}

#[test]
fn json_output() {
    let output = keys_new(&["ci", "--json"]);
    assert!(output.status.success());
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let key = report["key"].as_str().expect("key");
    let line = report["config_line"].as_str().expect("config_line");
    assert!(report["hash"].as_str().expect("hash").starts_with("sha256:"));
    assert_eq!(api_keys(line).verify(key).expect("matches").principal, "ci");
    // Each run makes a new key.
    let again: serde_json::Value =
        serde_json::from_slice(&keys_new(&["ci", "--json"]).stdout).unwrap();
    assert_ne!(again["key"], report["key"]);
}

#[test]
fn a_bad_name_is_refused() {
    let output = keys_new(&["no spaces"]);
    assert_eq!(output.status.code(), Some(64), "a usage error");
    assert!(String::from_utf8_lossy(&output.stderr).contains("invalid key name"));
    assert!(output.stdout.is_empty(), "no key printed");
}
