//! Zed's `settings.json`: each mapping, and each setting toolgate does not take.

use std::path::Path;

use crate::{Config, FixedEnvironment, Format, HttpTransport, TransportConfig};

fn load(text: &str) -> Result<Config, String> {
    let env = FixedEnvironment::new().with_var("TOKEN", "tok-1");
    crate::parse_str(text, Format::Json, Path::new("/home/ada/.config/zed"), &env)
        .map_err(|errors| errors.to_string())
}

#[test]
fn both_command_forms_and_remote_servers_are_read() {
    let config = load(
        r#"{
          // Zed writes comments and trailing commas.
          "context_servers": {
            "flat": { "source": "custom", "command": "a", "args": ["1"], "env": { "K": "v" } },
            "nested": { "command": { "path": "b", "args": ["2"], "env": { "L": "w" } }, "settings": {} },
            "remote": { "url": "https://r.example/mcp", "headers": { "X-T": "${TOKEN}" }, "enabled": false },
          },
        }"#,
    )
    .unwrap();
    let [flat, nested, remote] = &config.servers[..] else { panic!("three servers") };
    let TransportConfig::Stdio(flat) = &flat.transport else { panic!() };
    assert_eq!((flat.command.as_str(), flat.args.as_slice()), ("a", &["1".to_owned()][..]));
    assert_eq!(flat.env["K"].expose(), "v");
    let TransportConfig::Stdio(nested) = &nested.transport else { panic!() };
    assert_eq!((nested.command.as_str(), &nested.args[..]), ("b", &["2".to_owned()][..]));
    assert_eq!(nested.env["L"].expose(), "w");
    assert!(!remote.enabled);
    let TransportConfig::Http(remote) = &remote.transport else { panic!() };
    assert_eq!(remote.transport, HttpTransport::Auto);
    assert_eq!(remote.headers["X-T"].expose(), "tok-1");
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
}

#[test]
fn extension_servers_and_their_settings_are_reported() {
    let config = load(
        r#"{
          "vim_mode": true,
          "context_servers": {
            "ext": { "source": "extension", "settings": { "token": "x" } },
            "only-settings": { "settings": { "token": "x" } },
            "custom": { "command": "c", "settings": { "a": 1 } }
          }
        }"#,
    )
    .unwrap();
    assert_eq!(config.servers.len(), 1);
    let warnings = config.warnings.join("\n");
    for expected in [
        "vim_mode: ignored",
        "context_servers.ext: skipped: a Zed extension",
        "context_servers.only-settings: skipped: a Zed extension",
        "context_servers.custom.settings: ignored",
    ] {
        assert!(warnings.contains(expected), "{expected} not in:\n{warnings}");
    }
}

#[test]
fn wrong_servers_are_errors_with_their_path() {
    let errors = load(
        r#"{"context_servers": {
            "a": { "command": { "path": "x", "cwd": "/" } },
            "b": { "command": "x", "headers": {} },
            "c": { "url": "https://c.example", "enabled": "no" }
        }}"#,
    )
    .unwrap_err();
    for expected in [
        "context_servers.a.command.cwd: unknown key",
        "context_servers.b.headers: only valid for a url server",
        "context_servers.c.enabled: expected a boolean",
    ] {
        assert!(errors.contains(expected), "{expected} not in:\n{errors}");
    }
}
