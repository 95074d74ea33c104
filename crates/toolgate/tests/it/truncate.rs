//! `truncate` through the real gateway, in front of the official filesystem server: a file too
//! large for the budget arrives cut, and `toolgate__read_result` gives back all of it, page by
//! page, to the session it was cut for only; a policy can deny the gateway's own tool like any
//! other.

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use toolgate_llm::tokens::Encoding;

use crate::deps;
use crate::support::*;

/// A source file of 3000 numbered lines, in a folder served by server-filesystem.
fn served_file() -> (tempfile::TempDir, String, String) {
    let root = tempfile::tempdir().expect("temp dir");
    let root_path = root.path().canonicalize().expect("canonical");
    let text: String = (0..3000)
        .map(|i| format!("fn step_{i}(x: u64) -> u64 {{ x.wrapping_mul({i}) ^ 0x5eed }} // {i}\n"))
        .collect();
    let path = root_path.join("steps.rs");
    std::fs::write(&path, &text).expect("write");
    (root, path.to_string_lossy().into_owned(), text)
}

fn config(root: &std::path::Path, pipeline: &str) -> ConfigDir {
    let mut config =
        deps::npm_stdio_server("files", "mcp-server-filesystem", &[&root.to_string_lossy()], &[]);
    config.push_str(pipeline);
    ConfigDir::new(&config)
}

async fn call(client: &Client, tool: &str, args: Value) -> rmcp::model::CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(object(args)))
        .await
        .expect("a tool result")
}

fn texts(result: &rmcp::model::CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn a_large_file_arrives_cut_and_can_be_read_whole_by_its_session_only() {
    let (root, path, text) = served_file();
    let config = config(root.path(), "\n[[pipeline]]\nkind = \"truncate\"\nmax_tokens = 1500\n");
    let gateway = HttpGateway::start(&config.path()).await;
    let client = http_client(&gateway.url).await;

    let tools = client.list_all_tools().await.expect("tools/list");
    let read_result = tools.iter().find(|t| t.name == "toolgate__read_result").expect("listed");
    assert_eq!(read_result.annotations.as_ref().and_then(|a| a.read_only_hint), Some(true));

    let cut = call(&client, "files__read_text_file", json!({"path": path})).await;
    assert_ne!(cut.is_error, Some(true), "{cut:?}");
    let shown = texts(&cut);
    let structured = cut.structured_content.as_ref().map(Value::to_string).unwrap_or_default();
    let cost = Encoding::O200kBase.count(&format!("{shown}\n{structured}"));
    assert!(cost <= 1500, "{cost} tokens");
    assert!(shown.starts_with("fn step_0(x: u64)"), "{shown}");
    assert!(shown.contains("fn step_2999(x: u64)"), "the tail is kept: {shown}");
    let meta = cut.meta.as_ref().expect("_meta");
    let handle = meta.0["io.toolgate/truncated"]["handle"].as_str().expect("handle").to_owned();
    assert!(shown.contains(&handle), "the note names the handle");

    // Page by page, the whole file.
    let mut offset = 0u64;
    let mut whole = String::new();
    loop {
        let page =
            call(&client, "toolgate__read_result", json!({"handle": handle, "offset": offset}))
                .await;
        assert_ne!(page.is_error, Some(true), "{page:?}");
        let page_text = texts(&page);
        assert!(Encoding::O200kBase.count(&page_text) <= 1500 + 50);
        whole.push_str(&page_text[..page_text.rfind("[toolgate:").expect("a note")]);
        match page.structured_content.as_ref().expect("structured")["next_offset"].as_u64() {
            Some(next) => offset = next,
            None => break,
        }
    }
    assert!(
        whole.starts_with(&text),
        "the pages hold the whole file ({} bytes of {})",
        whole.len(),
        text.len()
    );

    // Another session: the handle is unknown there.
    let stranger = http_client(&gateway.url).await;
    let refused = call(&stranger, "toolgate__read_result", json!({"handle": handle})).await;
    assert_eq!(refused.is_error, Some(true));
    assert!(texts(&refused).contains("no kept result has the handle"), "{refused:?}");

    client.cancel().await.expect("close");
    stranger.cancel().await.expect("close");
    assert!(gateway.terminate().await.success());
}

#[tokio::test]
async fn the_gateways_own_tool_passes_the_pipeline_like_any_other() {
    let (root, path, _) = served_file();
    let config = config(
        root.path(),
        "\n[[pipeline]]\nkind = \"policy\"\ndefault = \"allow\"\n\
         rules = [{ servers = [\"toolgate\"], tools = [\"read_result\"], decision = \"deny\", reason = \"no paging here\" }]\n\n\
         [[pipeline]]\nkind = \"truncate\"\nmax_tokens = 800\n",
    );
    let client = stdio_client(&config.path()).await;
    let cut = call(&client, "files__read_text_file", json!({"path": path})).await;
    let handle = cut.meta.as_ref().expect("_meta").0["io.toolgate/truncated"]["handle"]
        .as_str()
        .expect("handle")
        .to_owned();
    let denied = call(&client, "toolgate__read_result", json!({"handle": handle})).await;
    assert_eq!(denied.is_error, Some(true));
    assert!(texts(&denied).contains("no paging here"), "{denied:?}");
    client.cancel().await.expect("close");
}

/// A 2026-07-28 `tools/call` without a session, sent from the loopback address `from`: the
/// JSON-RPC result.
async fn stateless_call(url: &str, from: [u8; 4], tool: &str, arguments: Value) -> Value {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "truncate-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": tool, "arguments": arguments, "_meta": meta}});
    let http = reqwest::Client::builder()
        .local_address(std::net::IpAddr::from(from))
        .build()
        .expect("a client");
    let response = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .body(call.to_string())
        .send()
        .await
        .expect("called");
    let body = response.text().await.expect("body");
    let answer: Value = serde_json::from_str(&body).expect("one JSON answer");
    answer["result"].clone()
}

/// 2026-07-28 clients have no session: a result kept for one is read back by requests from
/// its address, and neither by a request from another address nor by a client in a session,
/// although all of them are `anonymous:anonymous`.
#[tokio::test]
async fn a_result_kept_for_a_client_without_a_session_is_read_from_its_address_only() {
    let mut text = fixture_server("fx", "stdio", None);
    text.push_str("\n[[pipeline]]\nkind = \"truncate\"\nmax_bytes = 2000\n");
    let config = ConfigDir::new(&text);
    let gateway = HttpGateway::start(&config.path()).await;
    let here = [127, 0, 0, 1];
    let cut = stateless_call(&gateway.url, here, "fx__large", json!({"kb": 16})).await;
    let handle = cut["_meta"]["io.toolgate/truncated"]["handle"]
        .as_str()
        .unwrap_or_else(|| panic!("a cut result: {cut}"))
        .to_owned();
    let read = json!({"handle": handle, "limit": 1});
    let mine = stateless_call(&gateway.url, here, "toolgate__read_result", read.clone()).await;
    assert_ne!(mine["isError"], true, "{mine}");

    let elsewhere =
        stateless_call(&gateway.url, [127, 0, 0, 2], "toolgate__read_result", read.clone()).await;
    assert_eq!(elsewhere["isError"], true, "{elsewhere}");
    assert!(elsewhere.to_string().contains("no kept result has the handle"), "{elsewhere}");

    let in_a_session = http_client(&gateway.url).await;
    let refused = call(&in_a_session, "toolgate__read_result", read).await;
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    in_a_session.cancel().await.expect("close");
    assert!(gateway.terminate().await.success());
}
