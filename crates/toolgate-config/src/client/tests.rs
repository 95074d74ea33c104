//! The `mcpServers` keys of Windsurf and Gemini CLI, and Claude Code's local scope.

use std::path::Path;

use crate::{Config, FixedEnvironment, Format, HttpTransport, TransportConfig};

fn load(text: &str) -> Result<Config, String> {
    let env = FixedEnvironment::new().with_var("TOKEN", "tok-1");
    crate::parse_str(text, Format::Json, Path::new("/home/ada/.gemini"), &env)
        .map_err(|errors| errors.to_string())
}

#[test]
fn windsurf_server_url_is_the_url() {
    let config = load(r#"{"mcpServers": {"w": {"serverUrl": "https://w.example/mcp"}}}"#).unwrap();
    let TransportConfig::Http(http) = &config.servers[0].transport else { panic!() };
    assert_eq!(http.url.as_str(), "https://w.example/mcp");
    assert_eq!(http.transport, HttpTransport::Auto);
}

#[test]
fn gemini_http_url_is_streamable_http_and_tool_lists_filter() {
    let config = load(
        r#"{"mcpServers": {
            "g": { "httpUrl": "https://g.example/mcp", "headers": { "Authorization": "Bearer ${TOKEN}" },
                   "includeTools": ["a", "b*"], "excludeTools": ["c"], "disabledTools": ["d"] }
        }}"#,
    )
    .unwrap();
    let g = &config.servers[0];
    let TransportConfig::Http(http) = &g.transport else { panic!() };
    assert_eq!(http.transport, HttpTransport::StreamableHttp);
    assert_eq!(g.tools.allow, ["a", "b[*]"]);
    assert_eq!(g.tools.deny, ["d", "c"]);
}

#[test]
fn gemini_allowed_and_excluded_disable_servers() {
    let config = load(
        r#"{"mcp": {"allowed": ["a", "b"], "excluded": ["b", "ghost"], "serverCommand": "x"},
            "mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}, "c": {"command": "c"}}}"#,
    )
    .unwrap();
    let enabled: Vec<bool> = config.servers.iter().map(|server| server.enabled).collect();
    assert_eq!(enabled, [true, false, false]);
    let warnings = config.warnings.join("\n");
    assert!(
        warnings.contains("mcp.excluded: names no server defined here: \"ghost\""),
        "{warnings}"
    );
    assert!(warnings.contains("mcp.serverCommand: ignored"), "{warnings}");
}

#[test]
fn gemini_client_only_settings_are_reported() {
    let config = load(
        r#"{"mcpServers": {"g": {"httpUrl": "https://g.example/mcp", "trust": true,
            "oauth": {"enabled": true}, "authProviderType": "google_credentials"}}}"#,
    )
    .unwrap();
    let warnings = config.warnings.join("\n");
    for key in ["trust", "oauth", "authProviderType"] {
        assert!(warnings.contains(&format!("mcpServers.g.{key}: ignored")), "{key}: {warnings}");
    }
}

#[test]
fn one_url_per_server() {
    let errors = load(
        r#"{"mcpServers": {
            "two": {"url": "https://a.example", "serverUrl": "https://b.example"},
            "mixed": {"command": "x", "httpUrl": "https://b.example"},
            "sse": {"httpUrl": "https://b.example", "type": "sse"}
        }}"#,
    )
    .unwrap_err();
    for expected in [
        "mcpServers.two.serverUrl: also given as url",
        "mcpServers.mixed: has both command and url",
        "mcpServers.sse.type: \"sse\" disagrees with httpUrl",
    ] {
        assert!(errors.contains(expected), "{expected} not in:\n{errors}");
    }
}

#[test]
fn claude_codes_local_scope_is_read_for_this_directory() {
    let text = r#"{
        "numStartups": 7,
        "mcpServers": {"shared": {"command": "user-wide"}, "docs": {"command": "docs-user"}},
        "projects": {
            "/projects/app": {"allowedTools": [], "mcpServers": {"docs": {"command": "docs-local"}, "db": {"command": "db"}}},
            "/projects/other": {"mcpServers": {"elsewhere": {"command": "x"}}}
        }
    }"#;
    let env = FixedEnvironment::new().with_current_dir("/projects/app");
    let config = crate::parse_str(text, Format::Json, Path::new("/home/ada"), &env).unwrap();
    let mut names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["db", "docs", "shared"], "another project's servers are not read");
    let docs = config.servers.iter().find(|s| s.name == "docs").expect("docs");
    let TransportConfig::Stdio(docs) = &docs.transport else { panic!() };
    assert_eq!(docs.command, "docs-local", "the local one stands in for the user-wide one");
    // Elsewhere, only the user-wide servers.
    let env = FixedEnvironment::new().with_current_dir("/somewhere");
    let config = crate::parse_str(text, Format::Json, Path::new("/home/ada"), &env).unwrap();
    assert_eq!(config.servers.len(), 2);
}
