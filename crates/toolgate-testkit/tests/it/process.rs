//! The `toolgate-fixture` binary, through [`FixtureProcess`].

use rmcp::transport::StreamableHttpClientTransport;
use toolgate_testkit::{FixtureProcess, FixtureTransport, fixture_bin};

use crate::support::{self, within};

#[test]
fn finds_the_binary() {
    let bin = fixture_bin();
    assert!(bin.is_file(), "{}", bin.display());
    assert_eq!(bin, std::path::Path::new(env!("CARGO_BIN_EXE_toolgate-fixture")));
}

#[tokio::test]
async fn http_process_serves_and_exits_on_sigterm() {
    let mut fixture = FixtureProcess::spawn(FixtureTransport::Http).await.expect("spawn");
    let url = fixture.url().to_owned();
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"), "{url}");

    let (_opts, client, _observed) = support::setup();
    let client = support::connect(client, StreamableHttpClientTransport::from_uri(url)).await;
    let echo =
        support::call(&client, "echo", serde_json::json!({ "text": "out of process" })).await;
    assert_eq!(support::only_text(&echo), "out of process");

    let pid = fixture.id().expect("running").to_string();
    let status = std::process::Command::new("kill").args(["-TERM", &pid]).status().expect("kill");
    assert!(status.success());
    let exit = within("exit after SIGTERM", fixture.wait()).await.expect("wait");
    assert!(exit.success(), "{exit}");
}

#[tokio::test]
async fn crash_exits_with_the_code() {
    let mut fixture = FixtureProcess::spawn(FixtureTransport::Http).await.expect("spawn");
    let (_opts, client, _observed) = support::setup();
    let transport = StreamableHttpClientTransport::from_uri(fixture.url().to_owned());
    let client = support::connect(client, transport).await;

    let params = rmcp::model::CallToolRequestParams::new("crash")
        .with_arguments(support::args(serde_json::json!({ "code": 3 })));
    let request =
        rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params));
    // Not awaited: rmcp's streamable HTTP client does not notice a server that died
    // mid-request (it waited > 45 s when tried).
    let _pending =
        within("send crash", client.send_request_with_option(request, Default::default()))
            .await
            .expect("crash must be sent");
    let exit = within("exit after crash", fixture.wait()).await.expect("wait");
    assert_eq!(exit.code(), Some(3));
}

#[tokio::test]
async fn sse_process_prints_its_url() {
    let fixture = FixtureProcess::spawn(FixtureTransport::Sse).await.expect("spawn");
    let url = fixture.url();
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/sse"), "{url}");
    let response = within("GET /sse", reqwest::get(url)).await.expect("GET /sse");
    assert_eq!(response.status(), reqwest::StatusCode::OK);
}

#[tokio::test]
async fn startup_delay_holds_the_handshake() {
    let fixture =
        FixtureProcess::spawn_with_args(FixtureTransport::Http, ["--startup-delay", "300ms"])
            .await
            .expect("spawn");
    let started = tokio::time::Instant::now();
    let (_opts, client, _observed) = support::setup();
    let transport = StreamableHttpClientTransport::from_uri(fixture.url().to_owned());
    let _client = support::connect(client, transport).await;
    let elapsed = started.elapsed();
    assert!(elapsed >= std::time::Duration::from_millis(250), "handshake after {elapsed:?}");
}

#[tokio::test]
async fn stdio_has_no_url() {
    let error = FixtureProcess::spawn(FixtureTransport::Stdio).await.expect_err("stdio");
    assert!(error.to_string().contains("no URL"), "{error:#}");
}
