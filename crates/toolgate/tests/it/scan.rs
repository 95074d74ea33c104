//! `toolgate scan` through the binary: the fixture's `weather` at rug-pull stage 1 hides
//! instructions in its description; at stage 0 it does not, and neither do the fixture's other
//! tools nor the npm memory server's.

use serde_json::Value;

use crate::deps;
use crate::support::*;

fn config(stage: u8) -> ConfigDir {
    let mut text = fixture_server("fx", "stdio", None);
    text.push_str(&format!("args = [\"--rug-pull\", \"{stage}\"]\n"));
    text.push_str(&deps::npm_stdio_server("mem", "mcp-server-memory", &[], &[]));
    ConfigDir::new(&text)
}

async fn scan(config: &ConfigDir, extra: &[&str]) -> (i32, String) {
    let path = config.path();
    let mut args = vec!["scan", "--config", path.to_str().expect("UTF-8")];
    args.extend_from_slice(extra);
    let output = run_toolgate(&args).await;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    (output.status.code().expect("exited"), format!("{stdout}{stderr}"))
}

#[tokio::test]
async fn scan_finds_the_poisoned_description_and_nothing_else() {
    let (code, out) = scan(&config(0), &[]).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("0 findings in "), "{out}");

    let poisoned = config(1);
    let (code, out) = scan(&poisoned, &[]).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("high    tool `weather` of `fx`, description"), "{out}");
    assert!(out.contains("»<IMPORTANT>«"), "{out}");

    let (code, out) = scan(&poisoned, &["--json"]).await;
    assert_eq!(code, 1);
    let report: Value = serde_json::from_str(&out).expect("JSON");
    let findings = report["findings"].as_array().expect("findings");
    let rules: Vec<&str> = findings.iter().map(|f| f["rule"].as_str().unwrap()).collect();
    assert_eq!(rules, ["hidden-tag", "credential-access", "conceal-from-user"], "{report}");
    assert!(findings.iter().all(|f| f["server"] == "fx" && f["item"] == "weather"));

    let (code, out) = scan(&poisoned, &["--server", "mem"]).await;
    assert_eq!((code, out.starts_with("0 findings")), (0, true), "{out}");
}

/// A client's JSON config (Claude Desktop's `mcpServers`) works as it is.
#[tokio::test]
async fn scan_reads_a_clients_json_config() {
    let fixture = fixture_bin().to_string_lossy().into_owned();
    let json = serde_json::json!({"mcpServers": {"fx": {"command": fixture, "args": ["--rug-pull", "1"]}}});
    let config = ConfigDir::with_file("claude_desktop_config.json", &json.to_string());
    let (code, out) = scan(&config, &["--json"]).await;
    assert_eq!(code, 1, "{out}");
    let report: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(report["findings"][0]["item"], "weather", "{report}");
}
