//! A server that wants a login toolgate has not got: listed as such, and its calls answer a
//! tool error that names the command that mends it, not "unknown tool".

use std::path::Path;

use tokio::process::Command;

use crate::support::{ConfigDir, toolgate_bin};

/// A server that answers every request `401` with a challenge, as an MCP server behind OAuth
/// does before anyone signs in. Returns its URL.
async fn guarded() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let challenge = format!(
        "Bearer resource_metadata=\"http://{address}/.well-known/oauth-protected-resource/mcp\", \
         scope=\"files:read\""
    );
    let app = axum::Router::new().fallback(move || {
        let challenge = challenge.clone();
        async move { (axum::http::StatusCode::UNAUTHORIZED, [("www-authenticate", challenge)], "") }
    });
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.expect("serve");
    });
    (format!("http://{address}/mcp"), task)
}

fn toolgate(config: &ConfigDir, home: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(toolgate_bin());
    command
        .args(args)
        .arg("--config")
        .arg(config.path())
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .stdin(std::process::Stdio::null());
    command
}

#[tokio::test]
async fn a_server_that_wants_a_login_is_listed_so_and_its_calls_say_how() {
    let (url, server) = guarded().await;
    let config = ConfigDir::new(&format!(
        "[servers.files]\nurl = \"{url}\"\nprefix = \"files\"\nrestart_wait = \"100ms\"\n"
    ));
    let home = tempfile::tempdir().expect("temp dir");

    let listed =
        toolgate(&config, home.path(), &["servers", "--json"]).output().await.expect("run");
    let rows: serde_json::Value =
        serde_json::from_slice(&listed.stdout).unwrap_or_else(|e| panic!("{e}: {listed:?}"));
    let row = &rows[0];
    assert_eq!(row["state"], "failed", "{row}");
    assert_eq!(row["sign_in"]["state"], "needs_login", "{row}");
    assert_eq!(row["sign_in"]["scopes"], serde_json::json!(["files:read"]), "{row}");
    assert!(row["error"].as_str().unwrap_or("").contains("toolgate login files"), "{row}");

    let table = toolgate(&config, home.path(), &["servers"]).output().await.expect("run");
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("SIGN-IN") && text.contains("needs login"), "{text}");

    let called = toolgate(&config, home.path(), &["call", "files__read", "path=/x"])
        .output()
        .await
        .expect("run");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&called.stdout),
        String::from_utf8_lossy(&called.stderr)
    );
    assert!(!called.status.success(), "{said}");
    assert!(said.contains("toolgate login files"), "{said}");
    assert!(!said.to_lowercase().contains("unknown tool"), "{said}");

    // With its own Authorization header, toolgate does not sign in: the 401 is only an error.
    let config = ConfigDir::new(&format!(
        "[servers.files]\nurl = \"{url}\"\nheaders = {{ Authorization = \"Bearer static\" }}\n"
    ));
    let listed =
        toolgate(&config, home.path(), &["servers", "--json"]).output().await.expect("run");
    let rows: serde_json::Value = serde_json::from_slice(&listed.stdout).expect("json");
    assert_eq!(rows[0]["sign_in"]["state"], "none", "{}", rows[0]);
    server.abort();
}
