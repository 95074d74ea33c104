//! What a stdio server inherits from toolgate (issue 23): the SDKs' short list of harmless
//! variables, what its `env_pass` names and its `env`; never a variable toolgate's own secrets
//! come from (admin tokens, the audit key, the agent's and `enrich`'s keys) unless `env_pass`
//! names it exactly. The fixture's `env_names` tool prints what it got.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::process::Command;

use crate::support::*;

/// What toolgate runs with: the usual variables, its own secrets, and other things of the
/// user's.
const GATEWAY_ENV: [(&str, &str); 9] = [
    ("ALICE_TOKEN", "alice-admin-token-0123456789"),
    ("AUDIT_KEY", "audit-hmac-key-0123456789"),
    ("MY_AGENT_KEY", "agent-key-0123456789"),
    ("SUMMARY_KEY", "summary-key-0123456789"),
    ("OPENAI_API_KEY", "sk-provider-0123456789"),
    ("GITHUB_TOKEN", "ghp-user-token-0123456789"),
    ("AWS_REGION", "eu-west-1"),
    ("LANG", "C.UTF-8"),
    ("TOOLGATE_TEST_UNRELATED", "unrelated"),
];

/// The variables toolgate's secrets come from, in the config below.
const SECRETS: [&str; 5] =
    ["ALICE_TOKEN", "AUDIT_KEY", "MY_AGENT_KEY", "SUMMARY_KEY", "OPENAI_API_KEY"];

/// Three servers: `plain` (the defaults), `globbed` (`env_pass = ["*"]`), `named` (names two
/// variables exactly, one of them a secret), with the admin API, the audit key, the agent's and
/// an `enrich` entry's keys read from variables.
fn config() -> String {
    let fixture = toml_str(&fixture_bin().to_string_lossy());
    format!(
        "[servers.plain]\ncommand = {fixture}\n\n\
         [servers.globbed]\ncommand = {fixture}\nenv_pass = [\"*\"]\n\n\
         [servers.named]\ncommand = {fixture}\nenv_pass = [\"GITHUB_TOKEN\", \"MY_AGENT_KEY\", \"AWS_*\"]\n\
         env_remove = [\"LANG\"]\nenv = {{ GIVEN = \"by the config\" }}\n\n\
         [[pipeline]]\nkind = \"enrich\"\nbase_url = \"https://summaries.invalid/v1\"\n\
         model = \"m\"\napi_key_env = \"SUMMARY_KEY\"\nmin_tokens = 1000000\n\n\
         [agent]\napi_key_env = \"MY_AGENT_KEY\"\n\n\
         [audit]\nhash_key = \"${{AUDIT_KEY}}\"\n\n\
         [admin]\nlisten = \"127.0.0.1:0\"\ntokens = {{ alice = \"${{ALICE_TOKEN}}\" }}\n"
    )
}

/// `toolgate ARGS` with [`GATEWAY_ENV`] added to the test's own environment.
async fn toolgate_with_secrets(args: &[&str]) -> std::process::Output {
    let mut command = Command::new(toolgate_bin());
    command.args(args).stdin(Stdio::null()).env_remove("TOOLGATE_CONFIG");
    command.envs(GATEWAY_ENV);
    tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("toolgate finishes in time")
        .expect("run toolgate")
}

/// What `<server>__env_names` answers: the names the server's process has.
async fn names_seen_by(config: &Path, server: &str) -> BTreeSet<String> {
    let tool = format!("{server}__env_names");
    let output =
        toolgate_with_secrets(&["call", "--config", &config.to_string_lossy(), &tool]).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_str(stdout.trim()).expect("a JSON array of names")
}

/// The default list, as `toolgate_config::DEFAULT_INHERITED_ENV` has it.
fn harmless(name: &str) -> bool {
    ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "TMPDIR"].contains(&name)
        || name.starts_with("LC_")
}

#[tokio::test]
async fn a_server_gets_the_default_variables_and_none_of_toolgates_secrets() {
    let config = ConfigDir::new(&config());
    let plain = names_seen_by(&config.path(), "plain").await;
    assert!(plain.iter().all(|name| harmless(name)), "only harmless variables: {plain:?}");
    assert!(plain.contains("PATH") && plain.contains("LANG"), "{plain:?}");

    // The reproduction: the admin token's variable is not there to read.
    let output = toolgate_with_secrets(&[
        "call",
        "--config",
        &config.path().to_string_lossy(),
        "plain__env_get",
        "name=ALICE_TOKEN",
    ])
    .await;
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "<unset>");
}

#[tokio::test]
async fn a_glob_passes_the_users_variables_but_never_toolgates_secrets() {
    let config = ConfigDir::new(&config());
    let globbed = names_seen_by(&config.path(), "globbed").await;
    for name in ["GITHUB_TOKEN", "AWS_REGION", "TOOLGATE_TEST_UNRELATED", "PATH"] {
        assert!(globbed.contains(name), "{name} passes `*`: {globbed:?}");
    }
    for secret in SECRETS {
        assert!(!globbed.contains(secret), "{secret} passed a glob: {globbed:?}");
    }
}

#[tokio::test]
async fn env_pass_env_remove_and_env_together() {
    let config = ConfigDir::new(&config());
    let named = names_seen_by(&config.path(), "named").await;
    let expected_extra = ["GITHUB_TOKEN", "MY_AGENT_KEY", "AWS_REGION", "GIVEN"];
    for name in expected_extra {
        assert!(named.contains(name), "{name}: {named:?}");
    }
    assert!(!named.contains("LANG"), "env_remove applies to the defaults too: {named:?}");
    for other in ["ALICE_TOKEN", "TOOLGATE_TEST_UNRELATED"] {
        assert!(!named.contains(other), "{other}: {named:?}");
    }
    // A secret named exactly is the user's choice, and passes with its value.
    let output = toolgate_with_secrets(&[
        "call",
        "--config",
        &config.path().to_string_lossy(),
        "named__env_get",
        "name=MY_AGENT_KEY",
    ])
    .await;
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "agent-key-0123456789");
}

#[tokio::test]
async fn servers_json_lists_each_servers_variable_names_and_no_value() {
    let config = ConfigDir::new(&config());
    let output =
        toolgate_with_secrets(&["servers", "--json", "--config", &config.path().to_string_lossy()])
            .await;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    for (_, value) in GATEWAY_ENV {
        assert!(!stdout.contains(value), "a value is shown: {stdout}");
    }
    let rows: Value = serde_json::from_str(&stdout).expect("JSON");
    let env_of = |server: &str| -> BTreeSet<String> {
        let row = rows.as_array().expect("rows").iter().find(|row| row["name"] == server);
        serde_json::from_value(row.expect("the server's row")["env"].clone()).expect("names")
    };
    // What `servers` says is what the server itself sees.
    assert_eq!(env_of("named"), names_seen_by(&config.path(), "named").await);
    assert!(env_of("plain").iter().all(|name| harmless(name)));
    assert!(!env_of("globbed").contains("ALICE_TOKEN"));
}

#[tokio::test]
async fn a_client_json_config_starts_servers_as_the_clients_do() {
    let json = serde_json::json!({
        "mcpServers": { "desk": { "command": fixture_bin(), "env": { "GIVEN": "by the entry" } } }
    });
    let config = ConfigDir::with_file("claude_desktop_config.json", &json.to_string());
    let names = names_seen_by(&config.path(), "desk").await;
    assert!(names.contains("GIVEN") && names.contains("PATH"), "{names:?}");
    assert!(
        names.iter().all(|name| harmless(name) || name == "GIVEN"),
        "the defaults and the entry's env only: {names:?}"
    );
}
