//! Upstreams nobody here wrote: the reference servers from the npm registry, over every
//! transport they speak.

use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams};
use serde_json::json;

use crate::deps::{self, EverythingServer};
use crate::recorder::*;
use crate::support::*;

/// What every server-everything mount must show.
async fn everything_assertions(client: &RecordingClient, notes: &mut Notes, prefix: &str) {
    let tools = client.list_all_tools().await.expect("tools/list");
    let echo = format!("{prefix}__echo");
    assert!(tools.iter().any(|t| t.name == echo), "{echo} missing: {tools:?}");
    let result = client
        .call_tool(
            CallToolRequestParams::new(echo).with_arguments(object(json!({"message": "hi"}))),
        )
        .await
        .expect("echo");
    assert_eq!(first_text(&result), "Echo: hi");
    let sum = client
        .call_tool(
            CallToolRequestParams::new(format!("{prefix}__get-sum"))
                .with_arguments(object(json!({"a": 2, "b": 5}))),
        )
        .await
        .expect("get-sum");
    assert!(first_text(&sum).contains('7'), "{sum:?}");
    // server-everything registers some resources after its handshake and then announces
    // them with `list_changed`, which toolgate follows: until they are there, wait for it.
    let mut resources = client.list_all_resources().await.expect("resources/list");
    while resources.is_empty() {
        notes.next_matching(|n| matches!(n, Note::ResourcesChanged).then_some(())).await;
        resources = client.list_all_resources().await.expect("resources/list");
    }
    let first = resources.first().expect("server-everything lists resources");
    let read = client
        .read_resource(ReadResourceRequestParams::new(first.uri.clone()))
        .await
        .expect("resources/read");
    assert!(!read.contents.is_empty());
    let prompts = client.list_all_prompts().await.expect("prompts/list");
    assert!(prompts.iter().all(|p| p.name.starts_with(&format!("{prefix}__"))), "{prompts:?}");
}

#[tokio::test]
async fn server_everything_over_stdio() {
    let config =
        ConfigDir::new(&deps::npm_stdio_server("ev", "mcp-server-everything", &["stdio"], &[]));
    let (client, mut notes, _pid) = recording_stdio_client(&config.path()).await;
    everything_assertions(&client, &mut notes, "ev").await;
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn server_everything_over_streamable_http() {
    let server = EverythingServer::start("streamableHttp").await;
    let config = ConfigDir::new(&format!("[servers.ev]\nurl = {}\n", toml_str(&server.url)));
    // A server of the handshake era: the `Auto` probe falls back to `initialize`.
    let servers =
        run_toolgate(&["servers", "--json", "--config", &config.path().to_string_lossy()]).await;
    let rows: serde_json::Value = serde_json::from_slice(&servers.stdout).expect("json");
    assert_eq!(rows[0]["protocol"], "2025-11-25", "{rows}");
    assert_eq!(rows[0]["transport"], "streamable-http", "{rows}");
    let gateway = HttpGateway::start(&config.path()).await;
    let (client, mut notes) = recording_http_client(&gateway.url).await;
    everything_assertions(&client, &mut notes, "ev").await;
    client.cancel().await.expect("close");
    assert!(gateway.terminate().await.success());
}

#[tokio::test]
async fn server_everything_over_legacy_sse() {
    let server = EverythingServer::start("sse").await;
    let config = ConfigDir::new(&format!(
        "[servers.ev]\nurl = {}\ntransport = \"sse\"\n",
        toml_str(&server.url)
    ));
    let (client, mut notes, _pid) = recording_stdio_client(&config.path()).await;
    everything_assertions(&client, &mut notes, "ev").await;
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn server_filesystem_reads_files_and_deny_tools_hides_writes() {
    let root = tempfile::tempdir().expect("temp dir");
    let root_path = root.path().canonicalize().expect("canonical");
    std::fs::write(root_path.join("note.txt"), "hello from a file").expect("write");
    let mut config = deps::npm_stdio_server(
        "files",
        "mcp-server-filesystem",
        &[&root_path.to_string_lossy()],
        &[],
    );
    config.push_str("deny_tools = [\"write_*\", \"move_file\", \"edit_file\"]\n");
    let config = ConfigDir::new(&config);
    let client = stdio_client(&config.path()).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(names.contains(&"files__read_text_file"), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("write") || n.contains("move")), "{names:?}");
    let path = root_path.join("note.txt").to_string_lossy().into_owned();
    let read = client
        .call_tool(
            CallToolRequestParams::new("files__read_text_file")
                .with_arguments(object(json!({"path": path}))),
        )
        .await
        .expect("read_text_file");
    assert!(first_text(&read).contains("hello from a file"), "{read:?}");
    let hidden = client
        .call_tool(
            CallToolRequestParams::new("files__write_file").with_arguments(object(json!({}))),
        )
        .await;
    assert!(hidden.is_err(), "a denied tool cannot be called");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn a_script_tool_combines_two_calls_of_the_official_filesystem_server() {
    let root = tempfile::tempdir().expect("temp dir");
    let root_path = root.path().canonicalize().expect("canonical");
    std::fs::write(root_path.join("a.txt"), "alpha").expect("write");
    std::fs::write(root_path.join("b.txt"), "beta beta").expect("write");
    let config = deps::npm_stdio_server(
        "files",
        "mcp-server-filesystem",
        &[&root_path.to_string_lossy()],
        &[],
    );
    let config = ConfigDir::new(&config);
    let scripts = config.dir().join(".toolgate/scripts");
    std::fs::create_dir_all(&scripts).expect("script folder");
    let example =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scripts/compare.rn");
    std::fs::copy(example, scripts.join("compare.rn")).expect("copy the example");
    let client = stdio_client(&config.dir().join("toolgate.toml")).await;
    let read = |name: &str| {
        json!({"tool": "files__read_text_file",
               "arguments": {"path": root_path.join(name).to_string_lossy()}})
    };
    let compared = client
        .call_tool(
            CallToolRequestParams::new("compare__side_by_side")
                .with_arguments(object(json!({"first": read("a.txt"), "second": read("b.txt")}))),
        )
        .await
        .expect("answered");
    assert_ne!(compared.is_error, Some(true), "{compared:?}");
    let texts: Vec<String> =
        compared.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect();
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(texts[0].starts_with("## files__read_text_file (") && texts[0].ends_with("\nalpha"));
    assert!(texts[1].ends_with("\nbeta beta"), "{texts:?}");
    // The server's own refusal (a path outside its roots) reaches the script as an error.
    let outside = client
        .call_tool(CallToolRequestParams::new("compare__side_by_side").with_arguments(object(
            json!({"first": read("a.txt"),
                   "second": {"tool": "files__read_text_file", "arguments": {"path": "/etc/hostname"}}}),
        )))
        .await
        .expect("answered");
    assert_eq!(outside.is_error, Some(true), "{outside:?}");
    assert!(first_text(&outside).contains("files__read_text_file"), "{outside:?}");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn server_memory_keeps_entities_across_calls() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("memory.jsonl");
    let config = ConfigDir::new(&deps::npm_stdio_server(
        "mem",
        "mcp-server-memory",
        &[],
        &[("MEMORY_FILE_PATH", &file.to_string_lossy())],
    ));
    let client = stdio_client(&config.path()).await;
    client
        .call_tool(CallToolRequestParams::new("mem__create_entities").with_arguments(object(json!({
            "entities": [{"name": "toolgate", "entityType": "project", "observations": ["a gateway"]}]
        }))))
        .await
        .expect("create_entities");
    let graph = client
        .call_tool(CallToolRequestParams::new("mem__read_graph").with_arguments(object(json!({}))))
        .await
        .expect("read_graph");
    assert!(first_text(&graph).contains("a gateway"), "{graph:?}");
    client.cancel().await.expect("close");
}

/// A handshake-era HTTP server restarts and forgets its sessions (`server-everything` then
/// answers 400 "No valid session ID provided", not the 404 the spec asks for): the next call
/// through toolgate re-initialises the session and succeeds, with no error in between.
#[tokio::test]
async fn an_expired_upstream_http_session_is_reinitialised() {
    let server = EverythingServer::start("streamableHttp").await;
    let port = server.port;
    let config = ConfigDir::new(&format!("[servers.ev]\nurl = {}\n", toml_str(&server.url)));
    let gateway = HttpGateway::start(&config.path()).await;
    let client = http_client(&gateway.url).await;
    let echo = |text: &'static str| {
        client.call_tool(
            CallToolRequestParams::new("ev__echo").with_arguments(object(json!({"message": text}))),
        )
    };
    assert_eq!(first_text(&echo("before").await.expect("echo")), "Echo: before");
    server.kill().await;
    let _restarted = EverythingServer::start_on("streamableHttp", port).await;
    let after = echo("after").await.expect("echo after the restart");
    assert_eq!(after.is_error, None, "{after:?}");
    assert_eq!(first_text(&after), "Echo: after");
    assert_eq!(first_text(&echo("again").await.expect("echo")), "Echo: again");
    client.cancel().await.expect("close");
    assert!(gateway.terminate().await.success());
}
