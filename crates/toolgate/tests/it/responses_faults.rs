//! `/v1/responses` when something behind it fails: an MCP server named by URL that answers a
//! call with an HTTP error status (an `mcp_call` with the API's `http_error`), and a model
//! that refuses the request (a 502 in OpenAI's error shape; streamed, `response.failed`).

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use toolgate_testkit::fake_llm::{FakeLlm, Script, Turn};

use crate::support::*;

/// A proxy in front of an MCP server over streamable HTTP that answers every `tools/call`
/// with `503 Service Unavailable` and passes everything else on.
async fn failing_calls(upstream: String) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let app = axum::Router::new().fallback(forward).with_state(upstream);
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    format!("http://{address}/mcp")
}

async fn forward(State(upstream): State<String>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 1 << 20).await.expect("body");
    if String::from_utf8_lossy(&body).contains("\"tools/call\"") {
        return (StatusCode::SERVICE_UNAVAILABLE, "down for maintenance").into_response();
    }
    let client = reqwest::Client::builder().no_proxy().build().expect("client");
    let mut sent = client.request(parts.method, &upstream).body(body.to_vec());
    for (name, value) in &parts.headers {
        if name != "host" && name != "content-length" {
            sent = sent.header(name, value);
        }
    }
    let answer = sent.send().await.expect("the fixture answers");
    let mut response = Response::builder().status(answer.status());
    for (name, value) in answer.headers() {
        if name != "content-length" && name != "transfer-encoding" {
            response = response.header(name, value);
        }
    }
    response.body(Body::from_stream(answer.bytes_stream())).expect("response")
}

async fn create(origin: &str, body: Value) -> (u16, String) {
    let response = reqwest::Client::new()
        .post(format!("{origin}/v1/responses"))
        .json(&body)
        .send()
        .await
        .expect("answered");
    (response.status().as_u16(), response.text().await.expect("body"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_error_and_a_failing_model_are_answered_in_the_apis_own_terms() {
    let fixture = FixtureUpstream::start("http").await;
    let proxy = failing_calls(fixture.url.clone()).await;
    let turns = vec![
        Turn::tool_call("flaky__echo", r#"{"text":"hi"}"#),
        Turn::text("The server was down."),
        Turn::fail(400),
        Turn::fail(400),
    ];
    let fake = FakeLlm::start(Script::turns(turns)).await.expect("the fake LLM starts");
    let config = ConfigDir::new(&format!(
        "{}\n[gateway]\nllm_api = true\n\n[agent]\nprovider = \"compatible\"\nbase_url = {}\n\
         model = \"m\"\n\n[llm]\nstore = \"off\"\nallowed_server_urls = [\"http://127.0.0.1:*\"]\n",
        fixture_server("fx", "stdio", None),
        toml_str(&fake.base_url()),
    ));
    let gateway = HttpGateway::start(&config.path()).await;
    let origin = gateway.url.strip_suffix("/mcp").expect("an /mcp URL").to_owned();

    let (status, body) = create(
        &origin,
        json!({
            "model": "m", "input": "echo", "store": false,
            "tools": [{ "type": "mcp", "server_label": "flaky", "server_url": proxy,
                        "require_approval": "never" }],
        }),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let response: Value = serde_json::from_str(&body).expect("JSON");
    let call = &response["output"][1];
    assert_eq!(call["type"], "mcp_call", "{response}");
    assert_eq!(call["status"], "failed", "{call}");
    assert_eq!(call["error"]["type"], "http_error", "{call}");
    assert_eq!(call["error"]["code"], 503, "{call}");

    // The model refuses: a 502 saying so, in OpenAI's shape.
    let (status, body) =
        create(&origin, json!({ "model": "m", "input": "x", "store": false })).await;
    assert_eq!(status, 502, "{body}");
    let error: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(error["error"]["type"], "server_error", "{error}");
    assert!(error["error"]["message"].as_str().unwrap_or_default().contains("400"), "{error}");

    // Streamed: the stream ends with `response.failed`, carrying the error.
    let (status, body) =
        create(&origin, json!({ "model": "m", "input": "x", "store": false, "stream": true }))
            .await;
    assert_eq!(status, 200);
    let events: Vec<Value> = body
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).expect("JSON event"))
        .collect();
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(kinds, ["response.created", "response.in_progress", "response.failed"], "{body}");
    let failed = &events[2]["response"];
    assert_eq!(failed["status"], "failed");
    assert!(failed["error"]["message"].as_str().unwrap_or_default().contains("400"), "{failed}");
    gateway.terminate().await;
}
