//! The interceptor pipeline on every path: stdio and HTTP downstreams and `toolgate call`
//! all meet the same policy, in what they may call and in what they are shown.

use rmcp::model::CallToolRequestParams;
use serde_json::json;

use crate::support::*;

/// The fixture behind a policy that allows `echo` and nothing else.
fn guarded() -> ConfigDir {
    ConfigDir::new(&format!(
        "{}\n[[pipeline]]\nkind = \"policy\"\ndefault = \"deny\"\n\
         rules = [{{ tools = [\"echo\"], decision = \"allow\", reason = \"echo is harmless\" }}]\n",
        fixture_server("fx", "stdio", None)
    ))
}

async fn assert_guarded(client: &Client) {
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["fx__echo"], "a caller is shown only what it may call");
    let echo = client
        .call_tool(
            CallToolRequestParams::new("fx__echo").with_arguments(object(json!({"text": "hi"}))),
        )
        .await
        .expect("echo");
    assert_eq!(first_text(&echo), "hi");
    let refused = client
        .call_tool(
            CallToolRequestParams::new("fx__env_get")
                .with_arguments(object(json!({"name": "HOME"}))),
        )
        .await
        .expect("a refusal is a tool result");
    assert_eq!(refused.is_error, Some(true));
    let text = first_text(&refused);
    assert!(text.starts_with("refused by policy: the policy's default"), "{text}");
}

#[tokio::test]
async fn no_path_reaches_an_upstream_without_the_pipeline() {
    let config = guarded();
    // stdio
    let client = stdio_client(&config.path()).await;
    assert_guarded(&client).await;
    client.cancel().await.expect("close");
    // streamable HTTP
    let gateway = HttpGateway::start(&config.path()).await;
    let client = http_client(&gateway.url).await;
    assert_guarded(&client).await;
    client.cancel().await.expect("close");
    assert!(gateway.terminate().await.success());
    // toolgate call
    let path = config.path();
    let path = path.to_string_lossy();
    let output = run_toolgate(&["call", "--config", &path, "fx__env_get", "name=HOME"]).await;
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("refused by policy"), "{stdout}");
    let output = run_toolgate(&["call", "--config", &path, "fx__echo", "text=ok"]).await;
    assert!(output.status.success(), "{output:?}");
}

#[tokio::test]
async fn a_pipeline_that_cannot_be_built_is_a_config_error_naming_the_entry() {
    let config = ConfigDir::new(&format!(
        "{}\n[[pipeline]]\nkind = \"policy\"\ndefault = \"perhaps\"\n\n[[pipeline]]\nkind = \"telepathy\"\n",
        fixture_server("fx", "stdio", None)
    ));
    let output =
        run_toolgate(&["call", "--config", &config.path().to_string_lossy(), "fx__echo"]).await;
    assert_eq!(output.status.code(), Some(64));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("pipeline[0].default"), "{stderr}");
    assert!(
        stderr.contains("pipeline[1].kind: unknown interceptor kind \"telepathy\""),
        "{stderr}"
    );
}

/// A client of the 2026-07-28 era (`server/discover`, no session) meets the same policy: it
/// is shown only what it may call, the allowed call runs, the denied one is refused by name.
#[tokio::test]
async fn a_2026_07_28_client_meets_the_same_pipeline() {
    use rmcp::ClientServiceExt;
    use rmcp::model::ProtocolVersion;
    use rmcp::service::ClientLifecycleMode;

    let config = guarded();
    let gateway = HttpGateway::start(&config.path()).await;
    let lifecycle =
        ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(gateway.url.as_str());
    let client = ().serve_with_lifecycle(transport, lifecycle).await.expect("discover");
    let version = client.peer().peer_info().map(|info| info.protocol_version.clone());
    assert_eq!(version, Some(ProtocolVersion::V_2026_07_28), "the era this test is about");
    assert_guarded(&client).await;
    client.cancel().await.expect("close");
    assert!(gateway.terminate().await.success());
}
