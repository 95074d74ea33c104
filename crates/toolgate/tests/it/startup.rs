//! `serve` does not wait on a slow server: it serves once the required servers are up and the
//! others had `startup_wait`, and servers that come later join with `list_changed`.

use std::time::Duration;

use tokio::net::TcpListener;

use crate::recorder::*;
use crate::support::*;

/// Longer than any test here may take: a gateway that waited for it would fail the test.
const NEVER: &str = "10m";

/// A stdio server whose process starts but never answers its handshake (the fixture, told to
/// wait an hour before it reads).
fn silent_stdio_server(name: &str) -> String {
    format!(
        "[servers.{name}]\ncommand = {}\nargs = [\"--startup-delay\", \"1h\"]\nstartup_timeout = \"{NEVER}\"\n",
        toml_str(&fixture_bin().to_string_lossy())
    )
}

/// An HTTP server that accepts connections and never answers a byte, with its URL.
async fn silent_http_server() -> (String, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    (format!("http://{address}/mcp"), task)
}

fn silent_http_config(name: &str, url: &str) -> String {
    format!(
        "[servers.{name}]\nurl = {}\ntransport = \"streamable-http\"\nstartup_timeout = \"{NEVER}\"\n",
        toml_str(url)
    )
}

/// A gateway config with `good`, a fixture that answers at once, and `late`, one that takes
/// `delay` to answer its handshake, waiting at most `startup_wait` for servers not required.
fn good_and_late(startup_wait: &str, delay: &str, late_required: bool) -> ConfigDir {
    ConfigDir::new(&format!(
        "[gateway]\nstartup_wait = \"{startup_wait}\"\n\n{}\n[servers.late]\ncommand = {}\nargs = [\"--startup-delay\", \"{delay}\"]\nrequired = {late_required}\n",
        fixture_server("good", "stdio", None),
        toml_str(&fixture_bin().to_string_lossy()),
    ))
}

async fn tool_names(client: &RecordingClient) -> Vec<String> {
    client.list_all_tools().await.expect("tools/list").iter().map(|t| t.name.to_string()).collect()
}

fn assert_only_good(names: &[String]) {
    assert!(names.contains(&"good__echo".to_owned()), "the good server is served: {names:?}");
    assert!(
        names.iter().all(|n| n.starts_with("good__")),
        "nothing of the silent server is listed: {names:?}"
    );
}

#[tokio::test]
async fn serve_on_stdio_answers_without_a_server_that_never_answers() {
    let (url, _silent_http) = silent_http_server().await;
    let config = ConfigDir::new(&format!(
        "[gateway]\nstartup_wait = \"200ms\"\n\n{}\n{}\n{}",
        fixture_server("good", "stdio", None),
        silent_stdio_server("mute"),
        silent_http_config("deaf", &url),
    ));
    // The client's `initialize` is answered within the bound, or this fails.
    let (client, _notes, _pid) =
        tokio::time::timeout(Duration::from_secs(30), recording_stdio_client(&config.path()))
            .await
            .expect("serve --stdio answered initialize without waiting for the silent servers");
    assert_only_good(&tool_names(&client).await);
    let echo = client
        .call_tool(
            rmcp::model::CallToolRequestParams::new("good__echo")
                .with_arguments(object(serde_json::json!({"text": "here"}))),
        )
        .await
        .expect("the good server's tools work at once");
    assert_eq!(first_text(&echo), "here");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn serve_on_http_listens_without_a_server_that_never_answers() {
    let (url, _silent_http) = silent_http_server().await;
    let config = ConfigDir::new(&format!(
        "[gateway]\nstartup_wait = \"200ms\"\n\n{}\n{}\n{}",
        fixture_server("good", "stdio", None),
        silent_stdio_server("mute"),
        silent_http_config("deaf", &url),
    ));
    // `start` fails unless toolgate says it serves within 30 s (the silent servers' start-up
    // timeout is 10 minutes).
    let gateway = HttpGateway::start(&config.path()).await;
    let line = gateway.wait_for_log(&["serving without"]).await;
    assert!(line.contains("mute") && line.contains("deaf"), "names who is late: {line}");
    let (client, _notes) = recording_http_client(&gateway.url).await;
    assert_only_good(&tool_names(&client).await);
    drop(client);
    assert!(gateway.terminate().await.success());
}

#[tokio::test]
async fn a_server_that_starts_late_joins_with_list_changed() {
    let config = good_and_late("100ms", "2s", false);
    let (client, mut notes, _pid) = recording_stdio_client(&config.path()).await;
    let before = tool_names(&client).await;
    assert!(!before.iter().any(|n| n.starts_with("late__")), "not there yet: {before:?}");
    notes.next_matching(|n| matches!(n, Note::ToolsChanged).then_some(())).await;
    let after = tool_names(&client).await;
    assert!(after.contains(&"late__echo".to_owned()), "it joined: {after:?}");
    assert!(after.contains(&"good__echo".to_owned()), "{after:?}");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn a_required_server_is_waited_for() {
    let config = good_and_late("100ms", "1s", true);
    let (client, _notes, _pid) = recording_stdio_client(&config.path()).await;
    let names = tool_names(&client).await;
    assert!(names.contains(&"late__echo".to_owned()), "served only once it was up: {names:?}");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn one_shot_commands_wait_for_every_server() {
    let config = good_and_late("100ms", "1s", false);
    let output =
        run_toolgate(&["tools", "--json", "--config", &config.path().to_string_lossy()]).await;
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let listed = String::from_utf8_lossy(&output.stdout);
    assert!(listed.contains("late__echo"), "`tools` waited for the late server: {listed}");
}
