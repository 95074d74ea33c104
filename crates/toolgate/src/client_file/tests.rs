//! Each client file kind edited as install and uninstall do: entries listed, removed, put back,
//! comments kept where the format allows, and the gateway's entry recognised.

use serde_json::json;

use super::*;
use crate::clients;

fn layout(client: &str) -> Layout {
    clients::find(client).expect("known client").layout
}

fn gateway() -> GatewayEntry {
    GatewayEntry::new(
        std::path::Path::new("/opt/toolgate/bin/toolgate"),
        std::path::Path::new("/home/u/toolgate.toml"),
        vec![("GH_TOKEN".into(), toolgate_config::Secret::new("ghp_x"))],
    )
}

#[test]
fn json_keeps_comments_and_other_settings() {
    let text = r#"{
  // the editor's own settings
  "theme": "One Dark",
  "context_servers": {
    "notes": { "source": "custom", "command": "notes-mcp", "args": ["--dir", "~/n"] }, // mine
    "ext": { "source": "extension", "settings": {} },
  },
}
"#;
    let zed = layout("zed");
    let mut file = ClientFile::parse(zed, text, None).expect("parses");
    let entries = file.entries();
    assert_eq!(entries.len(), 2);
    assert!(is_server(zed, &entries[0].1));
    assert!(!is_server(zed, &entries[1].1), "an extension's server is Zed's to run");
    file.remove("notes");
    let value = gateway_value(zed, &gateway());
    assert!(is_gateway(zed, &value));
    file.put(gateway_entry::NAME, &value);
    let out = file.render();
    assert!(out.contains("// the editor's own settings"), "{out}");
    assert!(out.contains("\"theme\": \"One Dark\""), "{out}");
    assert!(!out.contains("notes-mcp"), "{out}");
    let reread = ClientFile::parse(zed, &out, None).expect("still JSONC");
    let entry = reread.entry("toolgate").expect("written");
    assert_eq!(entry["source"], "custom");
    assert_eq!(entry["args"], json!(["serve", "--stdio", "--config", "/home/u/toolgate.toml"]));
    assert_eq!(entry["env"]["GH_TOKEN"], "ghp_x");
    // Put back, the server reads as it did.
    let mut back = reread;
    back.remove("toolgate");
    back.put("notes", &entries[0].1);
    assert_eq!(back.entry("notes"), Some(entries[0].1.clone()));
}

#[test]
fn json_strings_are_escaped_and_a_missing_key_is_made() {
    let plain = layout("claude-desktop");
    let mut file = ClientFile::parse(plain, "", None).expect("an empty file is a new one");
    assert!(file.entries().is_empty());
    let odd = json!({ "command": "C:\\Tools\\a \"b\".exe", "args": ["\n", "é"] });
    file.put("odd", &odd);
    let out = file.render();
    let value: serde_json::Value = serde_json::from_str(&out).expect("strict JSON");
    assert_eq!(value["mcpServers"]["odd"], odd);
}

#[test]
fn json_with_servers_of_the_wrong_shape_is_refused() {
    let error = ClientFile::parse(layout("cursor"), r#"{"mcpServers": []}"#, None).err();
    assert!(error.expect("refused").contains("mcpServers"));
    assert!(ClientFile::parse(layout("cursor"), "[1]", None).is_err());
    assert!(ClientFile::parse(layout("cursor"), "{", None).is_err());
}

#[test]
fn codex_keeps_the_rest_of_its_toml() {
    let text = "# my settings\nmodel = \"o3\"\n\n[mcp_servers.docs]\ncommand = \"docs\"\n\
                [mcp_servers.docs.env]\nTOKEN = \"t\"\n\n[profiles.fast]\nmodel = \"mini\"\n";
    let codex = layout("codex");
    let mut file = ClientFile::parse(codex, text, None).expect("parses");
    let entries = file.entries();
    assert_eq!(entries, [("docs".to_owned(), json!({"command": "docs", "env": {"TOKEN": "t"}}))]);
    file.remove("docs");
    file.put("toolgate", &gateway_value(codex, &gateway()));
    let out = file.render();
    assert!(out.starts_with("# my settings\nmodel = \"o3\""), "{out}");
    assert!(out.contains("[profiles.fast]"), "{out}");
    let reread = ClientFile::parse(codex, &out, None).expect("TOML");
    assert!(is_gateway(codex, &reread.entry("toolgate").expect("written")));
    assert!(reread.entry("docs").is_none());
    let mut back = reread;
    back.remove("toolgate");
    back.put("docs", &entries[0].1);
    assert_eq!(
        back.meaning(),
        ClientFile::parse(codex, text, None).expect("parses").meaning(),
        "the same document again"
    );
}

#[test]
fn goose_moves_only_what_goose_does_not_run_itself() {
    let text = "GOOSE_PROVIDER: openai\nextensions:\n  developer:\n    type: builtin\n    \
                name: developer\n    enabled: true\n  fetch:\n    type: stdio\n    cmd: uvx\n    \
                args: [mcp-server-fetch]\n    enabled: true\n";
    let goose = layout("goose");
    let mut file = ClientFile::parse(goose, text, None).expect("parses");
    let servers: Vec<String> = file
        .entries()
        .into_iter()
        .filter(|(_, v)| is_server(goose, v))
        .map(|(name, _)| name)
        .collect();
    assert_eq!(servers, ["fetch"]);
    file.remove("fetch");
    file.put("toolgate", &gateway_value(goose, &gateway()));
    let out = file.render();
    let reread = ClientFile::parse(goose, &out, None).expect("YAML");
    assert!(reread.entry("developer").is_some());
    let entry = reread.entry("toolgate").expect("written");
    assert!(is_gateway(goose, &entry));
    assert_eq!(entry["envs"]["GH_TOKEN"], "ghp_x");
    assert_eq!(reread.meaning()["GOOSE_PROVIDER"], "openai");
    assert!(!file.keeps_comments());
}

#[test]
fn continue_keeps_its_list_by_name() {
    let text = "name: Local\nversion: 1.0.0\nschema: v1\nmcpServers:\n  - name: SQLite\n    \
                command: npx\n    args: [\"-y\", \"mcp-sqlite\", \"/db\"]\n";
    let cont = layout("continue");
    let mut file = ClientFile::parse(cont, text, None).expect("parses");
    let entries = file.entries();
    assert_eq!(entries[0].0, "SQLite");
    file.remove("SQLite");
    file.put("toolgate", &gateway_value(cont, &gateway()));
    file.put("toolgate", &gateway_value(cont, &gateway()));
    let reread = ClientFile::parse(cont, &file.render(), None).expect("YAML");
    assert_eq!(reread.entries().len(), 1, "put twice is one entry");
    assert_eq!(reread.meaning()["schema"], "v1");
    assert!(ClientFile::parse(cont, "mcpServers: {a: 1}", None).is_err());
}

#[test]
fn claude_codes_local_scope_is_this_directorys_and_goes_back_there() {
    let text = r#"{
  "numStartups": 3,
  "mcpServers": {"user": {"command": "u"}, "docs": {"command": "docs-user"}},
  "projects": {
    "/projects/app": {"mcpServers": {"docs": {"command": "docs-local"}, "db": {"command": "db"}}},
    "/projects/other": {"mcpServers": {"elsewhere": {"command": "x"}}}
  }
}"#;
    let claude = layout("claude-code");
    let here = std::path::Path::new("/projects/app");
    let before = ClientFile::parse(claude, text, Some(here)).expect("parses");
    let names: Vec<String> = before.entries().into_iter().map(|(name, _)| name).collect();
    assert_eq!(names, ["user", "docs", "db"], "another project's are not this directory's");
    assert_eq!(before.entry("docs").expect("docs")["command"], "docs-local");
    let mut file = ClientFile::parse(claude, text, Some(here)).expect("parses");
    for name in &names {
        file.remove(name);
    }
    let out = file.render();
    assert!(out.contains("elsewhere") && !out.contains("docs-local"), "{out}");
    assert!(out.contains("docs-user"), "the user-wide one the local scope hid stays: {out}");
    // Put back where each was.
    let mut back = ClientFile::parse(claude, &out, Some(here)).expect("parses");
    for (name, value) in before.entries() {
        back.restore(&name, &value, &before);
    }
    let value: serde_json::Value = serde_json::from_str(&back.render()).expect("JSON");
    assert_eq!(value["projects"]["/projects/app"]["mcpServers"]["db"]["command"], "db");
    assert_eq!(value["projects"]["/projects/app"]["mcpServers"]["docs"]["command"], "docs-local");
    assert_eq!(value["mcpServers"]["user"]["command"], "u");
    // Elsewhere, the file's servers are the user-wide ones.
    let there = ClientFile::parse(claude, text, Some(std::path::Path::new("/x"))).expect("parses");
    assert_eq!(there.entries().len(), 2);
}
