//! `toolgate call --format`: a real upstream's results printed as each LLM API takes them, and
//! `--format responses` following the server's `response_format`.

use serde_json::Value;

use crate::support::*;

/// Runs `toolgate call ARGS --config CONFIG`; the exit code and the JSON printed.
async fn call(config: &ConfigDir, args: &[&str]) -> (Option<i32>, Value) {
    let path = config.path().to_string_lossy().into_owned();
    let mut all = vec!["call"];
    all.extend_from_slice(args);
    all.extend(["--config", &path]);
    let output = run_toolgate(&all).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let json = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!("{args:?}: not JSON ({e}):\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr))
    });
    (output.status.code(), json)
}

fn config() -> ConfigDir {
    let fixture = toml_str(&fixture_bin().to_string_lossy());
    ConfigDir::new(&format!(
        "[servers.fx]\ncommand = {fixture}\n\
         response_format = {{ \"test_image_*\" = \"code_interpreter_call\", \"*\" = \"mcp_call\" }}\n\
         [servers.plain]\ncommand = {fixture}\n"
    ))
}

#[tokio::test]
async fn call_prints_each_api_s_shape() {
    let config = config();

    let (code, anthropic) =
        call(&config, &["fx__test_multiple_content_types", "--format", "anthropic"]).await;
    assert_eq!(code, Some(0));
    assert_eq!(anthropic["type"], "tool_result");
    assert_eq!(anthropic["tool_use_id"], "call_1");
    assert_eq!(anthropic["is_error"], false);
    let kinds: Vec<&str> = anthropic["content"]
        .as_array()
        .expect("blocks")
        .iter()
        .map(|block| block["type"].as_str().expect("a type"))
        .collect();
    assert_eq!(kinds, ["text", "image", "text"], "{anthropic}");
    assert_eq!(anthropic["content"][1]["source"]["media_type"], "image/png");
    assert!(
        anthropic["content"][2]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("[resource test://mixed-content-resource")),
        "{anthropic}"
    );

    let (_, chat) = call(&config, &["fx__test_image_content", "--format", "openai_chat"]).await;
    assert_eq!(chat["role"], "tool");
    let text = chat["content"].as_str().expect("a string");
    assert!(text.starts_with("[left out: image (image/png, "), "{chat}");

    let (code, gemini) = call(
        &config,
        &["fx__fail", "message=disk full", "--format", "gemini", "--call-id", "call_7"],
    )
    .await;
    assert_eq!(code, Some(1), "an error result still fails the command");
    assert_eq!(
        gemini,
        serde_json::json!({"functionResponse": {
            "id": "call_7", "name": "fx__fail", "response": {"error": "disk full"}}})
    );
}

#[tokio::test]
async fn responses_follows_the_server_s_response_format() {
    let config = config();

    let (_, item) = call(&config, &["fx__test_image_content", "--format", "responses"]).await;
    assert_eq!(item["type"], "code_interpreter_call", "the test_image_* glob: {item}");
    assert_eq!(item["container_id"], "fx");
    assert!(
        item["outputs"][0]["url"].as_str().is_some_and(|u| u.starts_with("data:image/png;base64,")),
        "{item}"
    );

    let (_, item) = call(&config, &["fx__echo", "text=hi", "--format", "responses"]).await;
    assert_eq!(item["type"], "mcp_call", "the * glob: {item}");
    assert_eq!(item["server_label"], "fx");
    assert_eq!(item["name"], "fx__echo");
    assert_eq!(item["arguments"], "{\"text\":\"hi\"}");
    assert_eq!(item["output"], "hi");

    let (_, item) = call(&config, &["plain__echo", "text=hi", "--format", "responses"]).await;
    assert_eq!(
        item,
        serde_json::json!({"type": "function_call_output", "call_id": "call_1", "output": "hi"}),
        "a server without response_format"
    );

    // An explicit item is printed as asked, whatever the config says.
    let (_, item) = call(&config, &["fx__echo", "text=hi", "--format", "web_search_call"]).await;
    assert_eq!(item["type"], "web_search_call");
    assert_eq!(item["status"], "completed");
}

#[tokio::test]
async fn unknown_formats_are_refused_with_the_known_names() {
    let output = run_toolgate(&["call", "x__y", "--format", "claude"]).await;
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "unknown format \"claude\" (known: responses, openai_chat, function_call_output, \
             mcp_call, web_search_call, file_search_call, code_interpreter_call, anthropic, gemini)"
        ),
        "{stderr}"
    );
    let both = run_toolgate(&["call", "x__y", "--format", "gemini", "--json"]).await;
    assert_eq!(both.status.code(), Some(2), "{}", String::from_utf8_lossy(&both.stderr));
}
