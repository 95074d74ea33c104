//! The failure matrix: missing servers, bad input, hostile requests, and what must never leak.

use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use serde_json::json;

use crate::recorder::ended;
use crate::support::*;

#[tokio::test]
async fn a_missing_required_server_stops_serve_with_its_name_and_cause() {
    let config = ConfigDir::new(&format!(
        "{}\n[servers.vital]\ncommand = \"/nonexistent/vital-server\"\nrequired = true\n",
        fixture_server("fx", "stdio", None)
    ));
    let output =
        run_toolgate(&["serve", "--stdio", "--config", &config.path().to_string_lossy()]).await;
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("vital"), "{stderr}");
    assert!(stderr.contains("/nonexistent/vital-server"), "{stderr}");
}

#[tokio::test]
async fn a_missing_optional_server_leaves_the_others_working() {
    let config = ConfigDir::new(&format!(
        "{}\n[servers.gone]\nurl = \"http://127.0.0.1:9/mcp\"\nstartup_timeout = \"5s\"\n",
        fixture_server("fx", "stdio", None)
    ));
    let client = stdio_client(&config.path()).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "fx__echo"));
    assert!(tools.iter().all(|t| !t.name.starts_with("gone__")));
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_at_startup() {
    // `sleep` never reads the handshake, let alone answers it.
    let config = ConfigDir::new(
        "[servers.mute]\ncommand = \"sleep\"\nargs = [\"600\"]\nstartup_timeout = \"1s\"\nrequired = true\n",
    );
    let output = run_toolgate(&["tools", "--config", &config.path().to_string_lossy()]).await;
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("upstream mute: `sleep` did not complete the MCP handshake within 1s"),
        "{stderr}"
    );
}

#[tokio::test]
async fn the_child_environment_is_the_defaults_plus_env_pass_minus_removals_plus_env() {
    // Only what the default list and `env_pass` name is inherited (tests/it/child_env.rs has
    // the rest); `env_remove` then takes some back, and `env` is set last.
    let config = ConfigDir::new(&format!(
        "[servers.fx]\ncommand = {}\nenv_pass = [\"TOOLGATE_TEST_*\"]\n\
         env = {{ GIVEN = \"${{TOOLGATE_TEST_SOURCE:-unset}}-suffix\" }}\nenv_remove = [\"TOOLGATE_TEST_SECRET_*\"]\n",
        toml_str(&fixture_bin().to_string_lossy())
    ));
    let path = config.path().to_string_lossy().into_owned();
    let call = |name: &'static str| {
        let path = path.clone();
        async move {
            let mut command = tokio::process::Command::new(toolgate_bin());
            command
                .args(["call", "fx__env_get", &format!("name={name}"), "--config", &path])
                .env("TOOLGATE_TEST_SOURCE", "value")
                .env("TOOLGATE_TEST_SECRET_KEY", "hidden")
                .env("TOOLGATE_TEST_KEPT", "kept")
                .env("NOT_NAMED_ANYWHERE", "left behind");
            let output = command.output().await.expect("run");
            assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
            String::from_utf8_lossy(&output.stdout).trim().to_owned()
        }
    };
    assert_eq!(call("GIVEN").await, "value-suffix");
    assert_eq!(call("TOOLGATE_TEST_SECRET_KEY").await, "<unset>");
    assert_eq!(call("TOOLGATE_TEST_KEPT").await, "kept");
    assert_eq!(call("NOT_NAMED_ANYWHERE").await, "<unset>");
}

#[tokio::test]
async fn child_stderr_goes_to_the_log_tagged_never_to_stdout() {
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let output = run_toolgate(&[
        "call",
        "fx__stderr",
        "line=MARKER-7f3a",
        "--log",
        "info",
        "--config",
        &config.path().to_string_lossy(),
    ])
    .await;
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = stderr.lines().find(|l| l.contains("MARKER-7f3a")).expect("forwarded to the log");
    assert!(line.contains("fx"), "tagged with the server name: {line}");
    assert!(!String::from_utf8_lossy(&output.stdout).contains("MARKER-7f3a"));
}

fn alive(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

#[tokio::test]
async fn stopping_toolgate_ends_the_whole_process_group_of_each_child() {
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let client = stdio_client(&config.path()).await;
    let spawned =
        client.call_tool(CallToolRequestParams::new("fx__spawn_child")).await.expect("spawn_child");
    let grandchild: i32 = first_text(&spawned).trim().parse().expect("a pid");
    assert!(alive(grandchild));
    client.cancel().await.expect("close: toolgate sees stdin close and exits");
    assert!(
        ended(grandchild as u32, Duration::from_secs(10)).await,
        "grandchild {grandchild} outlived toolgate"
    );
}

#[tokio::test]
async fn hostile_http_requests_are_refused_and_the_server_stays_healthy() {
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let gateway = HttpGateway::start(&config.path()).await;
    // No connection reuse: the server may close a connection after refusing a huge body.
    let http = reqwest::Client::builder().pool_max_idle_per_host(0).build().expect("client");
    let post = |body: Vec<u8>| {
        http.post(&gateway.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body)
    };

    let malformed = post(b"{not json".to_vec()).send().await.expect("answered");
    assert!(malformed.status().is_client_error(), "{}", malformed.status());

    let not_jsonrpc = post(br#"{"hello": "world"}"#.to_vec()).send().await.expect("answered");
    assert!(not_jsonrpc.status().is_client_error(), "{}", not_jsonrpc.status());

    // The server may answer 413 and close while the body is still being sent; either way it
    // must not accept it.
    let huge = post(vec![b' '; 8 * 1024 * 1024]).send().await;
    if let Ok(response) = huge {
        assert_eq!(response.status(), reqwest::StatusCode::PAYLOAD_TOO_LARGE);
    }
    let over_limit = post(vec![b' '; 4 * 1024 * 1024 + 1]).send().await;
    if let Ok(response) = over_limit {
        assert_eq!(response.status(), reqwest::StatusCode::PAYLOAD_TOO_LARGE);
    }

    let rebinding = http
        .post(&gateway.url)
        .header("host", "evil.example")
        .header("content-type", "application/json")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        .send()
        .await
        .expect("answered");
    assert_eq!(rebinding.status(), reqwest::StatusCode::FORBIDDEN);

    let foreign_origin = post(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_vec())
        .header("origin", "https://evil.example")
        .send()
        .await
        .expect("answered");
    assert_eq!(foreign_origin.status(), reqwest::StatusCode::FORBIDDEN);

    assert_http_healthy(&gateway.url).await;
    assert!(gateway.terminate().await.success());
}

#[tokio::test]
async fn unknown_meta_passes_through_untouched() {
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let client = stdio_client(&config.path()).await;
    let mut params =
        CallToolRequestParams::new("fx__echo").with_arguments(object(json!({"text": "m"})));
    params.meta = Some(serde_json::from_value(json!({"com.example/trace": "t-1"})).expect("meta"));
    let result = client.call_tool(params).await.expect("call with _meta");
    assert_eq!(first_text(&result), "m");
    client.cancel().await.expect("close");
}
