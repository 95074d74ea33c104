//! A refused call leaves the upstream untouched: proven at the upstream itself, not only by the
//! refusal the client reads. `server-filesystem` (npm) shows it by the file a call with valid
//! arguments would have written; the recording upstream by the requests it received.

use rmcp::model::CallToolRequestParams;
use serde_json::json;

use crate::deps;
use crate::recording_upstream::{Received, RecordingUpstream};
use crate::support::*;

/// `server-filesystem` mounted twice on the same folder: `guarded` (with `guarded_extra` in
/// its table) and `open`, the control that shows the same call does write when allowed.
fn filesystem_pair(root: &std::path::Path, guarded_extra: &str, pipeline: &str) -> ConfigDir {
    let root = root.to_string_lossy();
    let guarded = deps::npm_stdio_server("guarded", "mcp-server-filesystem", &[&root], &[]);
    let open = deps::npm_stdio_server("open", "mcp-server-filesystem", &[&root], &[]);
    ConfigDir::new(&format!("{guarded}{guarded_extra}\n{open}\n{pipeline}"))
}

/// `write_file` arguments that are valid for the folder.
fn write_args(file: &std::path::Path) -> rmcp::model::JsonObject {
    object(json!({"path": file.to_string_lossy(), "content": "written through toolgate"}))
}

/// The control: `open__write_file` with the same arguments writes the file.
async fn assert_the_same_call_writes_when_allowed(client: &Client, file: &std::path::Path) {
    let written = client
        .call_tool(CallToolRequestParams::new("open__write_file").with_arguments(write_args(file)))
        .await
        .expect("open__write_file");
    assert_ne!(written.is_error, Some(true), "{written:?}");
    assert_eq!(std::fs::read_to_string(file).expect("written"), "written through toolgate");
}

#[tokio::test]
async fn a_tool_hidden_by_deny_tools_writes_nothing() {
    let root = tempfile::tempdir().expect("temp dir");
    let root = root.path().canonicalize().expect("canonical");
    let config = filesystem_pair(&root, "deny_tools = [\"write_file\"]\n", "");
    let client = stdio_client(&config.path()).await;
    let file = root.join("denied.txt");

    let refused = client
        .call_tool(
            CallToolRequestParams::new("guarded__write_file").with_arguments(write_args(&file)),
        )
        .await
        .expect_err("a hidden tool is unknown");
    match refused {
        rmcp::ServiceError::McpError(error) => {
            assert_eq!(error.code, rmcp::model::ErrorCode::INVALID_PARAMS);
            assert_eq!(error.message, "Unknown tool: guarded__write_file");
        }
        other => panic!("expected an MCP error: {other:?}"),
    }
    assert!(!file.exists(), "the denied call wrote {}", file.display());

    assert_the_same_call_writes_when_allowed(&client, &file).await;
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn a_call_the_policy_denies_writes_nothing() {
    let root = tempfile::tempdir().expect("temp dir");
    let root = root.path().canonicalize().expect("canonical");
    let policy = "[[pipeline]]\nkind = \"policy\"\ndefault = \"allow\"\n\
         rules = [{ servers = [\"guarded\"], tools = [\"write_file\"], decision = \"deny\", \
         reason = \"the guarded mount is read-only\" }]\n";
    let config = filesystem_pair(&root, "", policy);
    let client = stdio_client(&config.path()).await;
    let file = root.join("denied.txt");

    let refused = client
        .call_tool(
            CallToolRequestParams::new("guarded__write_file").with_arguments(write_args(&file)),
        )
        .await
        .expect("a refusal is a tool result");
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    assert_eq!(
        first_text(&refused),
        "refused by policy: the guarded mount is read-only (rules[0])"
    );
    assert!(!file.exists(), "the denied call wrote {}", file.display());

    assert_the_same_call_writes_when_allowed(&client, &file).await;
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn a_denied_call_sends_the_upstream_nothing() {
    let upstream = RecordingUpstream::start().await;
    let config = ConfigDir::new(&format!(
        "[servers.rec]\nurl = {}\ntransport = \"streamable-http\"\ndeny_tools = [\"env_get\"]\n\n\
         [[pipeline]]\nkind = \"policy\"\ndefault = \"allow\"\n\
         rules = [{{ tools = [\"echo\"], decision = \"deny\", reason = \"no echoes\" }}]\n",
        toml_str(&upstream.url)
    ));
    let client = stdio_client(&config.path()).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "rec__test_simple_text"), "{tools:?}");
    let before = upstream.received();
    assert!(
        before.iter().any(|r| r.method == "tools/list"),
        "toolgate listed the upstream's tools: {before:?}"
    );
    assert_eq!(upstream.tools_called(), Vec::<String>::new());

    let denied = client
        .call_tool(
            CallToolRequestParams::new("rec__echo").with_arguments(object(json!({"text": "x"}))),
        )
        .await
        .expect("a refusal is a tool result");
    assert_eq!(first_text(&denied), "refused by policy: no echoes (rules[0])");
    let hidden = client
        .call_tool(
            CallToolRequestParams::new("rec__env_get")
                .with_arguments(object(json!({"name": "HOME"}))),
        )
        .await;
    match hidden {
        Err(rmcp::ServiceError::McpError(error)) => {
            assert_eq!(error.message, "Unknown tool: rec__env_get")
        }
        other => panic!("a tool hidden by deny_tools is unknown: {other:?}"),
    }
    // A call that is allowed comes after them on the same connection: once it has arrived,
    // anything the refused calls had sent would have arrived too.
    let allowed = client
        .call_tool(CallToolRequestParams::new("rec__test_simple_text"))
        .await
        .expect("allowed");
    assert_eq!(first_text(&allowed), "This is a simple text response for testing.");
    upstream.wait_for_calls("test_simple_text", 1).await;

    // The stream the gateway keeps open for list changes (`subscriptions/listen`, on
    // 2026-07-28 connections) is opened in the background and may arrive at any point here.
    let after: Vec<Received> = upstream.received()[before.len()..]
        .iter()
        .filter(|r| r.method != "subscriptions/listen")
        .cloned()
        .collect();
    assert_eq!(
        after,
        [Received { method: "tools/call".into(), tool: Some("test_simple_text".into()) }],
        "the upstream received only the allowed call after its listing"
    );
    client.cancel().await.expect("close");
}
