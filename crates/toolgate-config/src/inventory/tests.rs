//! `[inventory]` and a server's refresh keys: defaults, a server's own winning, off, mistakes.

use std::path::Path;
use std::time::Duration;

use crate::model::Refresh;
use crate::{FixedEnvironment, Format};

fn load(text: &str) -> Result<crate::Config, String> {
    crate::parse_str(text, Format::Toml, Path::new("/etc/toolgate"), &FixedEnvironment::new())
        .map_err(|errors| errors.to_string())
}

fn refresh_of(config: &crate::Config, name: &str) -> Refresh {
    config.servers.iter().find(|s| s.name == name).expect("the server").refresh
}

#[test]
fn without_settings_nothing_is_refreshed() {
    let config = load("[servers.a]\ncommand = \"a\"\n").expect("valid");
    let refresh = refresh_of(&config, "a");
    assert_eq!(refresh, Refresh::default());
    assert_eq!((refresh.ttl(), refresh.every(), refresh.on_unknown_tool()), (None, None, false));
}

#[test]
fn inventory_is_every_servers_unless_a_server_says_otherwise() {
    let text = "[inventory]\ntool_ttl = \"5m\"\nrefresh_interval = 60\nrefresh_on_error = true\n\
                [servers.a]\ncommand = \"a\"\n\
                [servers.b]\ncommand = \"b\"\nrefresh_interval = false\ntool_ttl = \"30s\"\n\
                refresh_on_error = false\n";
    let config = load(text).expect("valid");
    let a = refresh_of(&config, "a");
    assert_eq!(a.ttl(), Some(Duration::from_secs(300)));
    assert_eq!(a.every(), Some(Duration::from_secs(60)));
    assert!(a.on_unknown_tool());
    let b = refresh_of(&config, "b");
    assert_eq!(b.ttl(), Some(Duration::from_secs(30)));
    assert_eq!(b.every(), None, "false turns off what [inventory] sets");
    assert!(!b.on_unknown_tool());
}

#[test]
fn inventory_applies_to_imported_servers_too() {
    let dir = tempfile::tempdir().expect("temp dir");
    let client = dir.path().join("mcp.json");
    std::fs::write(&client, r#"{"mcpServers": {"c": {"command": "c"}}}"#).expect("write");
    let text = format!(
        "import = [{:?}]\n[inventory]\nrefresh_interval = \"2m\"\n",
        client.display().to_string()
    );
    let config = load(&text).expect("valid");
    assert_eq!(refresh_of(&config, "c").every(), Some(Duration::from_secs(120)));
}

#[test]
fn every_mistake_is_named_with_its_path() {
    let cases = [
        ("[inventory]\ntool_ttl = \"soon\"\n", "inventory.tool_ttl: invalid duration"),
        ("[inventory]\nrefresh_on_error = \"yes\"\n", "inventory.refresh_on_error"),
        ("[inventory]\nrefresh = 1\n", "inventory.refresh"),
        ("[inventory]\nrefresh_interval = true\n", "inventory.refresh_interval"),
        ("[servers.a]\ncommand = \"a\"\ntool_ttl = -1\n", "servers.a.tool_ttl"),
        ("[servers.a]\ncommand = \"a\"\nrefresh_on_error = 1\n", "servers.a.refresh_on_error"),
    ];
    for (text, wanted) in cases {
        let error = load(text).expect_err(text);
        assert!(error.contains(wanted), "{text}\nwanted {wanted:?} in:\n{error}");
    }
}
