//! Property tests of the whole loader: documents made of the config's own keys (and others),
//! with plausible values (and any values), in each dialect (`toolgate.toml`, a client's JSON,
//! smg-mcp's YAML), are checked to a config or to errors that each say what is wrong; never a
//! panic, and a valid config's servers have distinct names, in order.

use std::path::Path;

use proptest::prelude::*;

use super::parse_str;
use crate::value::Value;
use crate::value::props::{to_toml, to_yaml};
use crate::{Format, env::FixedEnvironment};

/// Keys of every level of every dialect, and a few no dialect knows.
const KEYS: &[&str] = &[
    // toolgate.toml, top level and [gateway]
    "import",
    "gateway",
    "servers",
    "pipeline",
    "audit",
    "admin",
    "agent",
    "llm",
    "pool",
    "scripts",
    "auth",
    "tenants",
    "proxy",
    "telemetry",
    "listen",
    "allowed_hosts",
    "startup_wait",
    "max_sessions",
    "session_idle",
    "http_front",
    "public_url",
    "llm_api",
    "metrics",
    // a server
    "command",
    "args",
    "env",
    "env_pass",
    "env_remove",
    "cwd",
    "url",
    "transport",
    "headers",
    "tls",
    "prefix",
    "allow_tools",
    "deny_tools",
    "protocol",
    "startup_timeout",
    "timeout",
    "restart_wait",
    "required",
    "enabled",
    "integrity",
    "response_format",
    "oauth",
    // [[pipeline]], [audit], [auth], [llm], [tenants]
    "kind",
    "name",
    "mode",
    "fail_open",
    "priority",
    "tools",
    "rules",
    "decision",
    "default",
    "max_tokens",
    "detectors",
    "file",
    "events",
    "webhook",
    "issuer",
    "audience",
    "api_keys",
    "hash",
    "groups",
    "tenant",
    "store",
    "models",
    "provider",
    "model",
    "base_url",
    "api_key_env",
    "http",
    "https",
    "no_proxy",
    "endpoint",
    // client JSON
    "mcpServers",
    "type",
    "disabled",
    "disabledTools",
    "inputs",
    "autoApprove",
    // smg-mcp
    "envs",
    "token",
    "alias",
    "arg_mapping",
    "renames",
    "defaults",
    "overrides",
    "trust_level",
    "builtin_type",
    "internal",
    "warmup",
    "inventory",
    "max_connections",
    "idle_timeout",
    // nobody's
    "urll",
    "x",
    "",
];

/// Strings a config holds.
const STRINGS: &[&str] = &[
    "npx",
    "node",
    "stdio",
    "sse",
    "streamable-http",
    "http",
    "streamable",
    "http://127.0.0.1:8080/mcp",
    "https://example.com/mcp",
    "ftp://x",
    "${HOME}",
    "${UNSET}",
    "${X:-fallback}",
    "$",
    "${",
    "30s",
    "5m",
    "0s",
    "forever",
    "*",
    "write_*",
    "[",
    "allow",
    "deny",
    "ask",
    "enforce",
    "audit",
    "policy",
    "truncate",
    "redact",
    "toon",
    "test_filter",
    "arg_map",
    "limits",
    "approval",
    "all",
    "none",
    "email",
    "RS256",
    "127.0.0.1:0",
    "0.0.0.0:80",
    "sqlite:x.db",
    "off",
    "o200k_base",
    "Bearer x",
    "a",
    "",
    " ",
    "../x",
    "/abs",
    "passthrough",
    "trusted",
    "sandboxed",
];

fn key() -> impl Strategy<Value = String> {
    prop_oneof![8 => prop::sample::select(KEYS).prop_map(str::to_owned), 1 => "\\PC{0,6}"]
}

fn leaf(nulls: bool) -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        6 => prop::sample::select(STRINGS).prop_map(|s| Value::String(s.to_owned())),
        1 => "\\PC{0,10}".prop_map(Value::String),
        2 => prop_oneof![-2i64..70_000, Just(i64::MAX), Just(i64::MIN)].prop_map(Value::Integer),
        1 => prop_oneof![Just(0.5), Just(-1.0), Just(1e30)].prop_map(Value::Float),
        2 => any::<bool>().prop_map(Value::Boolean),
    ];
    if nulls { prop_oneof![1 => Just(Value::Null), 10 => leaf].boxed() } else { leaf.boxed() }
}

/// A value of up to five levels, its tables keyed by [`KEYS`].
fn value(nulls: bool) -> impl Strategy<Value = Value> {
    leaf(nulls).prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            table(inner),
        ]
    })
}

fn table(values: impl Strategy<Value = Value>) -> impl Strategy<Value = Value> {
    prop::collection::vec((key(), values), 0..6).prop_map(|entries| {
        let mut table: Vec<(String, Value)> = Vec::new();
        for (key, value) in entries {
            if !table.iter().any(|(k, _)| *k == key) {
                table.push((key, value));
            }
        }
        Value::Table(table)
    })
}

/// A named set of server entries: `{name: {key: value}}`.
fn servers(nulls: bool) -> impl Strategy<Value = Value> {
    let server = table(prop_oneof![3 => leaf(nulls), 1 => value(nulls)]);
    prop::collection::vec(("[a-z][a-z0-9_-]{0,6}|\\PC{0,4}", server), 0..4).prop_map(Value::Table)
}

/// `toolgate.toml`: a `servers` table, a `pipeline` array and other sections.
fn native() -> impl Strategy<Value = Value> {
    let pipeline =
        prop::collection::vec(table(prop_oneof![3 => leaf(false), 1 => value(false)]), 0..3)
            .prop_map(Value::Array);
    (servers(false), pipeline, table(value(false))).prop_map(|(servers, pipeline, rest)| {
        let Value::Table(mut entries) = rest else { unreachable!("a table") };
        entries.retain(|(k, _)| k != "servers" && k != "pipeline");
        entries.push(("servers".into(), servers));
        entries.push(("pipeline".into(), pipeline));
        Value::Table(entries)
    })
}

/// A client's JSON: `mcpServers` or `servers`, and other keys.
fn client() -> impl Strategy<Value = Value> {
    (prop::sample::select(&["mcpServers", "servers"][..]), servers(true), table(value(true)))
        .prop_map(|(key, servers, rest)| {
            let Value::Table(mut entries) = rest else { unreachable!("a table") };
            entries.retain(|(k, _)| k != key);
            entries.insert(0, (key.to_owned(), servers));
            Value::Table(entries)
        })
}

/// smg-mcp's `mcp.yaml`: a list of servers with names, and other sections.
fn smg() -> impl Strategy<Value = Value> {
    let server = ("[a-z][a-z0-9_]{0,6}", table(prop_oneof![3 => leaf(true), 1 => value(true)]))
        .prop_map(|(name, server)| {
            let Value::Table(mut entries) = server else { unreachable!("a table") };
            entries.retain(|(k, _)| k != "name");
            entries.insert(0, ("name".into(), Value::String(name)));
            Value::Table(entries)
        });
    (prop::collection::vec(server, 0..4), table(value(true))).prop_map(|(servers, rest)| {
        let Value::Table(mut entries) = rest else { unreachable!("a table") };
        entries.retain(|(k, _)| k != "servers");
        entries.insert(0, ("servers".into(), Value::Array(servers)));
        Value::Table(entries)
    })
}

/// Checks `text` as `format`: a config whose servers have distinct names in order, or errors
/// that each say something.
fn check(text: &str, format: Format) -> Result<(), TestCaseError> {
    let env = FixedEnvironment::new().with_var("HOME", "/home/props").with_home_dir("/home/props");
    // A folder that does not exist: whatever the document names in it is not there.
    let base = Path::new("/nonexistent-toolgate-props");
    match parse_str(text, format, base, &env) {
        Ok(config) => {
            let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
            prop_assert!(names.windows(2).all(|w| w[0] < w[1]), "{:?}", names);
        }
        Err(errors) => {
            prop_assert!(!errors.errors().is_empty(), "no error in the errors of {}", text);
            for error in errors.errors() {
                prop_assert!(
                    !error.message.trim().is_empty(),
                    "an empty message at {:?}",
                    error.path
                );
            }
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn any_toml_document_is_a_config_or_errors(document in native()) {
        let toml::Value::Table(table) = to_toml(&document) else { unreachable!("a table") };
        let text = toml::to_string(&table).expect("TOML writes any table");
        check(&text, Format::Toml)?;
    }

    #[test]
    fn any_client_json_document_is_a_config_or_errors(document in client()) {
        check(&document.to_json().to_string(), Format::Json)?;
    }

    #[test]
    fn any_smg_yaml_document_is_a_config_or_errors(document in smg()) {
        let mut text = String::new();
        saphyr::YamlEmitter::new(&mut text).dump(&to_yaml(&document)).expect("YAML writes any tree");
        check(&text, Format::Yaml)?;
    }
}
