//! Which dialect a document is read as, and the readers' shared checks.

use std::path::Path;

use super::{Dialect, is_var_name};
use crate::Format;
use crate::value::{parse_json, parse_toml, parse_yaml};

fn toml(text: &str, path: Option<&str>) -> Dialect {
    let root = parse_toml(text).expect("valid TOML");
    Dialect::recognise(Format::Toml, path.map(Path::new), &root)
}

fn json(text: &str) -> Dialect {
    Dialect::recognise(Format::Json, None, &parse_json(text).expect("valid JSON"))
}

fn yaml(text: &str) -> Dialect {
    Dialect::recognise(Format::Yaml, None, &parse_yaml(text).expect("valid YAML"))
}

#[test]
fn toml_with_mcp_servers_and_nothing_of_toolgate_is_codex() {
    assert_eq!(toml("model = \"o3\"\n[mcp_servers.x]\ncommand = \"x\"", None), Dialect::Codex);
    let home = Some("/home/ada/.codex/config.toml");
    assert_eq!(toml("[mcp_servers.x]\ncommand = \"x\"", home), Dialect::Codex);
}

#[test]
fn a_toolgate_toml_is_never_read_as_codex() {
    // One of toolgate's own keys, or the file's name, says it is toolgate's.
    assert_eq!(
        toml("[servers.a]\ncommand = \"a\"\n[mcp_servers.x]\ncommand = \"x\"", None),
        Dialect::Native
    );
    assert_eq!(toml("import = []\n[mcp_servers.x]\ncommand = \"x\"", None), Dialect::Native);
    let named = Some("/etc/toolgate/toolgate.toml");
    assert_eq!(toml("[mcp_servers.x]\ncommand = \"x\"", named), Dialect::Native);
    assert_eq!(toml("", None), Dialect::Native);
}

#[test]
fn a_toolgate_toml_with_mcp_servers_reports_the_key() {
    let text = "[servers.a]\ncommand = \"a\"\n[mcp_servers.x]\ncommand = \"x\"";
    let errors =
        crate::parse_str(text, Format::Toml, Path::new("/"), &crate::FixedEnvironment::new())
            .unwrap_err()
            .to_string();
    assert!(errors.contains("mcp_servers: unknown key"), "{errors}");
}

#[test]
fn json_with_context_servers_is_zed() {
    assert_eq!(json(r#"{"theme": "x", "context_servers": {}}"#), Dialect::Zed);
    assert_eq!(json(r#"{"context_servers": {}, "mcpServers": {}}"#), Dialect::Client);
    assert_eq!(json(r#"{"mcpServers": {}}"#), Dialect::Client);
    assert_eq!(json("{}"), Dialect::Client);
}

#[test]
fn yaml_is_goose_continue_or_smg_by_its_keys() {
    assert_eq!(yaml("extensions: {}"), Dialect::Goose);
    assert_eq!(yaml("GOOSE_MODEL: gpt-4o"), Dialect::Goose);
    assert_eq!(yaml("mcpServers: []"), Dialect::Continue);
    assert_eq!(yaml("name: a\nversion: 1.0.0\nschema: v1"), Dialect::Continue);
    assert_eq!(yaml("servers: []"), Dialect::Smg);
    assert_eq!(yaml(""), Dialect::Smg);
}

#[test]
fn variable_names_are_plain_identifiers() {
    assert!(is_var_name("FIGMA_TOKEN") && is_var_name("_x1"));
    assert!(!is_var_name("") && !is_var_name("1A") && !is_var_name("A-B") && !is_var_name("A}${B"));
}
