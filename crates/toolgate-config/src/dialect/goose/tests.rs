//! goose's `config.yaml`: each mapping, and each setting toolgate does not take.

use std::path::Path;
use std::time::Duration;

use crate::{Config, FixedEnvironment, Format, HttpTransport, TransportConfig};

fn load(text: &str) -> Result<Config, String> {
    let env = FixedEnvironment::new().with_var("TOKEN", "tok-1");
    crate::parse_str(text, Format::Yaml, Path::new("/home/ada/.config/goose"), &env)
        .map_err(|errors| errors.to_string())
}

#[test]
fn a_stdio_extension_maps_every_setting() {
    let config = load(
        r#"
extensions:
  files:
    type: stdio
    name: files
    cmd: npx
    args: [-y, server, 8080]
    envs: { PORT: 8080 }
    env_keys: [GITHUB_TOKEN]
    timeout: 120
    enabled: false
    available_tools: [read_file]
"#,
    )
    .unwrap();
    let files = &config.servers[0];
    let TransportConfig::Stdio(stdio) = &files.transport else { panic!("stdio expected") };
    assert_eq!(stdio.command, "npx");
    assert_eq!(stdio.args, ["-y", "server", "8080"]);
    assert_eq!(stdio.env["PORT"].expose(), "8080");
    assert_eq!(stdio.env_pass, ["GITHUB_TOKEN"]);
    assert_eq!(files.timeout, Duration::from_secs(120));
    assert!(!files.enabled);
    assert_eq!(files.tools.allow, ["read_file"]);
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
}

#[test]
fn remote_extensions_are_streamable_http_or_sse() {
    let config = load(
        r#"
extensions:
  a: { type: streamable_http, uri: "https://a.example/mcp", headers: { Authorization: "Bearer ${TOKEN}" } }
  b: { type: sse, uri: "https://b.example/sse", envs: {}, env_keys: [] }
"#,
    )
    .unwrap();
    let [a, b] = &config.servers[..] else { panic!("two servers") };
    let TransportConfig::Http(a) = &a.transport else { panic!() };
    let TransportConfig::Http(b) = &b.transport else { panic!() };
    assert_eq!(a.transport, HttpTransport::StreamableHttp);
    assert_eq!(a.headers["Authorization"].expose(), "Bearer tok-1");
    assert_eq!(b.transport, HttpTransport::Sse);
    assert!(config.secret_env.contains("TOKEN"));
}

#[test]
fn goose_internal_extensions_and_labels_are_reported() {
    let config = load(
        r#"
GOOSE_MODEL: gpt-4o
extensions:
  developer: { type: builtin, bundled: true, enabled: true }
  cc: { type: platform }
  x: { type: stdio, cmd: x, name: Other, display_name: X, description: d, bundled: false }
  r: { type: streamable_http, uri: "https://r.example/mcp", env_keys: [A] }
"#,
    )
    .unwrap();
    assert_eq!(config.servers.len(), 2);
    let warnings = config.warnings.join("\n");
    for expected in [
        "GOOSE_MODEL: ignored",
        "extensions.developer: skipped: a builtin extension",
        "extensions.cc: skipped: a platform extension",
        "extensions.x.name: ignored: toolgate names this server \"x\"",
        "extensions.x.display_name: ignored",
        "extensions.x.description: ignored",
        "extensions.x.bundled: ignored",
        "extensions.r.env_keys: ignored: a remote extension starts no process",
    ] {
        assert!(warnings.contains(expected), "{expected} not in:\n{warnings}");
    }
}

#[test]
fn wrong_extensions_are_errors_with_their_path() {
    let errors = load(
        r#"
extensions:
  a: { cmd: x }
  b: { type: stdio, uri: "https://b.example" }
  c: { type: stdio, cmd: x, timeout: 0, cwd: /tmp }
"#,
    )
    .unwrap_err();
    for expected in [
        "extensions.a: missing `type`",
        "extensions.b.uri: only for a remote extension",
        "extensions.b: needs `cmd`",
        "extensions.c.timeout: must be greater than zero",
        "extensions.c.cwd: unknown key",
    ] {
        assert!(errors.contains(expected), "{expected} not in:\n{errors}");
    }
}
