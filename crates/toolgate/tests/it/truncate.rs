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
