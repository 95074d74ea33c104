//! Continue's `config.yaml`: each mapping, and each setting toolgate does not take.

use std::path::Path;
use std::time::Duration;

use crate::{Config, FixedEnvironment, Format, HttpTransport, TransportConfig};

fn load(text: &str) -> Result<Config, String> {
    let env = FixedEnvironment::new().with_var("KEY", "key-1");
    crate::parse_str(text, Format::Yaml, Path::new("/home/ada/.continue"), &env)
        .map_err(|errors| errors.to_string())
}

#[test]
fn servers_map_every_setting() {
    let config = load(
        r#"
name: c
version: 1.0.0
schema: v1
mcpServers:
  - name: SQLite MCP
    type: stdio
    command: uvx
    args: [mcp-server-sqlite, --port, 8080]
    env: { DEBUG: true }
    cwd: project
    connectionTimeout: 2000
  - name: remote
    url: https://r.example/mcp
    apiKey: ${KEY}
    requestOptions: { headers: { X-Team: a } }
  - name: events
    type: sse
    url: https://e.example/sse
"#,
    )
    .unwrap();
    let [sqlite, events, remote] = &config.servers[..] else { panic!("three servers") };
    assert_eq!(sqlite.name, "SQLite-MCP");
    assert_eq!(sqlite.startup_timeout, Duration::from_secs(2));
    let TransportConfig::Stdio(stdio) = &sqlite.transport else { panic!() };
    assert_eq!(stdio.args, ["mcp-server-sqlite", "--port", "8080"]);
    assert_eq!(stdio.env["DEBUG"].expose(), "true");
    assert_eq!(stdio.cwd.as_deref(), Some(Path::new("/home/ada/.continue/project")));
    let TransportConfig::Http(remote) = &remote.transport else { panic!() };
    assert_eq!(remote.transport, HttpTransport::Auto);
    assert_eq!(remote.headers["Authorization"].expose(), "Bearer key-1");
    assert_eq!(remote.headers["X-Team"].expose(), "a");
    let TransportConfig::Http(events) = &events.transport else { panic!() };
    assert_eq!(events.transport, HttpTransport::Sse);
    assert!(config.secret_env.contains("KEY"));
}

#[test]
fn settings_toolgate_does_not_take_are_reported() {
    let config = load(
        r#"
models: []
mcpServers:
  - uses: someone/block
  - name: r
    type: streamable-http
    url: https://r.example/mcp
    faviconUrl: https://r.example/icon.png
    requestOptions: { timeout: 10, verifySsl: false, proxy: "http://p:1", caBundlePath: /ca.pem, headers: { Authorization: "Basic a" } }
    apiKey: k
"#,
    )
    .unwrap();
    assert_eq!(config.servers.len(), 1);
    let warnings = config.warnings.join("\n");
    for expected in [
        "models: ignored",
        "mcpServers[0]: skipped: a block from Continue's hub",
        "mcpServers.r.faviconUrl: ignored",
        "mcpServers.r.requestOptions.timeout: ignored",
        "mcpServers.r.requestOptions.verifySsl: ignored",
        "mcpServers.r.requestOptions.proxy: ignored",
        "mcpServers.r.requestOptions.caBundlePath: ignored",
        "mcpServers.r.apiKey: ignored: the Authorization header is sent instead",
    ] {
        assert!(warnings.contains(expected), "{expected} not in:\n{warnings}");
    }
}

#[test]
fn wrong_servers_are_errors_with_their_path() {
    let errors = load(
        r#"
mcpServers:
  - name: a
    command: x
    type: sse
  - name: b
    url: https://b.example
    connectionTimeout: soon
  - name: c
    command: x
    tools: []
  - name: "!!!"
    command: x
"#,
    )
    .unwrap_err();
    for expected in [
        "mcpServers.a.type: this type needs `url`",
        "mcpServers.b.connectionTimeout: expected a number of milliseconds",
        "mcpServers.c.tools: unknown key",
    ] {
        assert!(errors.contains(expected), "{expected} not in:\n{errors}");
    }
}
