//! Codex's `config.toml`: each mapping, and each setting toolgate does not take.

use std::path::Path;
use std::time::Duration;

use crate::{Config, FixedEnvironment, Format, HttpTransport, TransportConfig};

fn env() -> FixedEnvironment {
    FixedEnvironment::new().with_var("FIGMA_TOKEN", "tok-1").with_var("ORG", "acme")
}

fn load(text: &str) -> Result<Config, String> {
    crate::parse_str(text, Format::Toml, Path::new("/home/ada/.codex"), &env())
        .map_err(|errors| errors.to_string())
}

#[test]
fn a_stdio_server_maps_every_setting() {
    let config = load(
        r#"
        [mcp_servers.docs]
        command = "docs"
        args = ["--port", "4000"]
        env = { A = "1" }
        env_vars = ["PASSED"]
        cwd = "work"
        startup_timeout_sec = 2.5
        tool_timeout_sec = 90
        enabled = false
        required = true
        enabled_tools = ["a*"]
        disabled_tools = ["b"]
        "#,
    )
    .unwrap();
    let docs = &config.servers[0];
    let TransportConfig::Stdio(stdio) = &docs.transport else { panic!("stdio expected") };
    assert_eq!(stdio.args, ["--port", "4000"]);
    assert_eq!(stdio.env["A"].expose(), "1");
    assert_eq!(stdio.env_pass, ["PASSED"]);
    assert_eq!(stdio.cwd.as_deref(), Some(Path::new("/home/ada/.codex/work")));
    assert_eq!(docs.startup_timeout, Duration::from_millis(2500));
    assert_eq!(docs.timeout, Duration::from_secs(90));
    assert!(!docs.enabled && docs.required);
    // The names as written: a `*` in a Codex tool name is not a pattern.
    assert_eq!(docs.tools.allow, ["a[*]"]);
    assert_eq!(docs.tools.deny, ["b"]);
}

#[test]
fn a_remote_server_gets_its_headers_from_variables() {
    let config = load(
        r#"
        [mcp_servers.figma]
        url = "https://mcp.figma.com/mcp"
        bearer_token_env_var = "FIGMA_TOKEN"
        http_headers = { X-Region = "us" }
        env_http_headers = { X-Org = "ORG", X-None = "UNSET" }
        startup_timeout_ms = 1500
        "#,
    )
    .unwrap();
    let figma = &config.servers[0];
    let TransportConfig::Http(http) = &figma.transport else { panic!("http expected") };
    assert_eq!(http.transport, HttpTransport::StreamableHttp);
    assert_eq!(http.headers["Authorization"].expose(), "Bearer tok-1");
    assert_eq!(http.headers["X-Region"].expose(), "us");
    assert_eq!(http.headers["X-Org"].expose(), "acme");
    assert!(!http.headers.contains_key("X-None"));
    assert_eq!(figma.startup_timeout, Duration::from_millis(1500));
    let warnings = config.warnings.join("\n");
    assert!(warnings.contains("env_http_headers.X-None: not sent: variable UNSET"), "{warnings}");
    // The token's variable is toolgate's secret: no stdio server inherits it.
    assert!(config.secret_env.contains("FIGMA_TOKEN") && config.secret_env.contains("ORG"));
}

#[test]
fn an_authorization_header_wins_over_the_bearer_variable() {
    let text = r#"
        [mcp_servers.x]
        url = "https://x.example/mcp"
        bearer_token_env_var = "FIGMA_TOKEN"
        http_headers = { authorization = "Basic abc" }
    "#;
    let config = load(text).unwrap();
    let TransportConfig::Http(http) = &config.servers[0].transport else { panic!() };
    assert_eq!(http.headers["authorization"].expose(), "Basic abc");
    assert!(config.warnings.iter().any(|w| w.contains("bearer_token_env_var: ignored")));
}

#[test]
fn an_unset_bearer_variable_is_an_error() {
    let errors =
        load("[mcp_servers.x]\nurl = \"https://x.example\"\nbearer_token_env_var = \"NOPE\"")
            .unwrap_err();
    assert!(
        errors.contains("mcp_servers.x.bearer_token_env_var: environment variable NOPE is not set")
    );
}

#[test]
fn codex_settings_toolgate_does_not_take_are_reported() {
    let config = load(
        r#"
        model = "o3"
        [mcp_servers.x]
        url = "https://x.example/mcp"
        scopes = ["read"]
        oauth_resource = "https://x.example"
        "#,
    )
    .unwrap();
    let warnings = config.warnings.join("\n");
    assert!(warnings.contains("model: ignored (a Codex setting"), "{warnings}");
    assert!(warnings.contains("mcp_servers.x.scopes: ignored"), "{warnings}");
    assert!(warnings.contains("mcp_servers.x.oauth_resource: ignored"), "{warnings}");
}

#[test]
fn wrong_settings_are_errors_with_their_path() {
    let errors = load(
        r#"
        [mcp_servers.x]
        command = "x"
        bearer_token = "sk"
        env_vars = [""]
        enabled_tools = "all"
        startup_timeout_sec = 0
        "#,
    )
    .unwrap_err();
    for expected in [
        "mcp_servers.x.bearer_token: only valid for a url server",
        "mcp_servers.x.bearer_token: a token written in the file",
        "mcp_servers.x.env_vars[0]: must not be empty",
        "mcp_servers.x.enabled_tools: expected an array of strings",
        "mcp_servers.x.startup_timeout_sec: must be greater than zero",
    ] {
        assert!(errors.contains(expected), "{expected} not in:\n{errors}");
    }
}
