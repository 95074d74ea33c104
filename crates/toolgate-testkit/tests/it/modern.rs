//! The fixture as a 2026-07-28 server: discovery, MRTR rounds for the tools that ask the client
//! for input, over streamable HTTP (how toolgate's upstream layer talks to it) and over an
//! in-memory stdio-like pipe.

use rmcp::ServiceExt as _;
use rmcp::model as mcp;
use rmcp::transport::StreamableHttpClientTransport;
use tokio_util::sync::CancellationToken;
use toolgate_testkit::Fixture;

use crate::support::{self, Client, within};

/// A 2026-07-28 client of a fresh HTTP fixture; cancel the token to stop the server.
async fn http_client() -> (Client, CancellationToken, tokio::task::JoinHandle<anyhow::Result<()>>) {
    let (opts, client, _observed) = support::setup();
    let shutdown = CancellationToken::new();
    let (url, server) = crate::http::start(opts, shutdown.clone()).await;
    let client =
        support::connect_modern(client, StreamableHttpClientTransport::from_uri(url)).await;
    (client, shutdown, server)
}

fn assert_modern(client: &Client) {
    let info = client.peer_info().expect("the server must have sent its info");
    assert_eq!(info.protocol_version, mcp::ProtocolVersion::V_2026_07_28);
    let server = info.server_info.as_ref().expect("serverInfo must be present");
    assert_eq!(server.name, "toolgate-fixture");
}

async fn call_once(
    client: &Client,
    params: mcp::CallToolRequestParams,
) -> Result<mcp::CallToolResponse, rmcp::ServiceError> {
    within("tools/call", client.call_tool_once(params)).await
}

fn elicitation_params(
    state: Option<String>,
    answer: Option<serde_json::Value>,
) -> mcp::CallToolRequestParams {
    let mut params = mcp::CallToolRequestParams::new("test_elicitation")
        .with_arguments(support::args(serde_json::json!({ "message": "who?" })));
    params.request_state = state;
    params.input_responses =
        answer.map(|answer| mcp::InputResponses::from([("elicitation".to_owned(), answer)]));
    params
}

fn accepted() -> serde_json::Value {
    serde_json::json!({ "action": "accept", "content": { "username": "grace" } })
}

#[tokio::test]
async fn http_input_tools_complete_via_mrtr() {
    let (client, shutdown, server) = http_client().await;
    assert_modern(&client);
    // `RunningService::call_tool` drives the rounds through the TestClient's handler, and
    // the results are exactly the handshake era's.
    support::server_requests(&client).await;

    client.cancel().await.expect("the client must shut down");
    shutdown.cancel();
    let result = within("server shutdown", server).await;
    result.expect("the server task must not panic").expect("the server must shut down cleanly");
}

#[tokio::test]
async fn rounds_are_input_required_then_complete() {
    let (client, _shutdown, _server) = http_client().await;

    let first = call_once(&client, elicitation_params(None, None)).await.expect("round one");
    let mcp::CallToolResponse::InputRequired(first) = first else {
        panic!("expected input_required, got {first:?}");
    };
    let requests = first.input_requests.expect("inputRequests");
    assert_eq!(requests.keys().collect::<Vec<_>>(), ["elicitation"]);
    let Some(mcp::InputRequest::Elicitation(request)) = requests.get("elicitation") else {
        panic!("expected an elicitation, got {requests:?}");
    };
    let wire = serde_json::to_value(request).expect("serializable");
    assert_eq!(wire["method"], "elicitation/create");
    assert_eq!(wire["params"]["message"], "who?");
    assert_eq!(
        wire["params"]["requestedSchema"]["required"],
        serde_json::json!(["username", "email"])
    );
    let state = first.request_state.expect("a requestState");

    // A retry with the state but no answer is asked again.
    let again = call_once(&client, elicitation_params(Some(state.clone()), None)).await;
    assert!(matches!(again, Ok(mcp::CallToolResponse::InputRequired(_))), "{again:?}");

    // The answer completes the call.
    let done = call_once(&client, elicitation_params(Some(state.clone()), Some(accepted())))
        .await
        .expect("round two");
    let mcp::CallToolResponse::Complete(done) = done else {
        panic!("expected a complete result, got {done:?}");
    };
    assert_eq!(done.is_error, Some(false));
    assert_eq!(
        support::only_text(&done),
        r#"User response: action=accept, content={"username":"grace"}"#
    );

    // A declined elicitation is reported like the handshake era reports it.
    let declined = serde_json::json!({ "action": "decline" });
    let done = call_once(&client, elicitation_params(Some(state.clone()), Some(declined))).await;
    let Ok(mcp::CallToolResponse::Complete(done)) = done else {
        panic!("expected a complete result, got {done:?}");
    };
    assert_eq!(support::only_text(&done), "User response: action=decline, content=null");
}

#[tokio::test]
async fn forged_or_missing_request_state_is_rejected() {
    let (client, _shutdown, _server) = http_client().await;
    let rejected = |response: Result<mcp::CallToolResponse, rmcp::ServiceError>| match response {
        Err(rmcp::ServiceError::McpError(error)) => {
            assert_eq!(error.code, mcp::ErrorCode::INVALID_PARAMS, "{error:?}");
            error.message.into_owned()
        }
        other => panic!("expected -32602, got {other:?}"),
    };

    let no_state = call_once(&client, elicitation_params(None, Some(accepted()))).await;
    assert!(rejected(no_state).contains("without a requestState"));

    let forged = call_once(&client, elicitation_params(Some("ab.{}".into()), Some(accepted())));
    assert!(rejected(forged.await).contains("requestState rejected"));

    // A genuine state from another tool's round does not answer this one.
    let params = mcp::CallToolRequestParams::new("test_sampling")
        .with_arguments(support::args(serde_json::json!({ "prompt": "hi" })));
    let Ok(mcp::CallToolResponse::InputRequired(sampling)) = call_once(&client, params).await
    else {
        panic!("test_sampling must ask for input");
    };
    let moved = elicitation_params(sampling.request_state, Some(accepted()));
    assert!(rejected(call_once(&client, moved).await).contains("another tool call"));

    // Nor does one for the same tool with other arguments.
    let Ok(mcp::CallToolResponse::InputRequired(first)) =
        call_once(&client, elicitation_params(None, None)).await
    else {
        panic!("test_elicitation must ask for input");
    };
    let mut other = elicitation_params(first.request_state, Some(accepted()));
    other.arguments = Some(support::args(serde_json::json!({ "message": "someone else?" })));
    assert!(rejected(call_once(&client, other).await).contains("another tool call"));
}

#[tokio::test]
async fn clients_without_the_capability_get_an_error_result() {
    struct Bare;
    impl rmcp::ClientHandler for Bare {}
    let (opts, _client, _observed) = support::setup();
    let shutdown = CancellationToken::new();
    let (url, _server) = crate::http::start(opts, shutdown.clone()).await;
    let lifecycle = rmcp::ClientLifecycleMode::Discover {
        preferred_versions: vec![mcp::ProtocolVersion::V_2026_07_28],
    };
    let transport = StreamableHttpClientTransport::from_uri(url);
    let client = rmcp::ClientServiceExt::serve_with_lifecycle(Bare, transport, lifecycle);
    let client = within("discover", client).await.expect("discover");
    for (name, arguments, text) in [
        (
            "test_sampling",
            serde_json::json!({ "prompt": "p" }),
            "the client does not support sampling",
        ),
        (
            "test_elicitation",
            serde_json::json!({ "message": "m" }),
            "the client does not support elicitation",
        ),
    ] {
        let params = mcp::CallToolRequestParams::new(name).with_arguments(support::args(arguments));
        let result = within(name, client.call_tool(params)).await.expect(name);
        assert_eq!((result.is_error, support::only_text(&result)), (Some(true), text));
    }
    shutdown.cancel();
}

#[tokio::test]
async fn stdio_pipe_speaks_2026_07_28_too() {
    let (opts, client, _observed) = support::setup();
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        let running = Fixture::new(opts).serve(server_io).await?;
        running.waiting().await?;
        anyhow::Ok(())
    });
    let client = support::connect_modern(client, client_io).await;
    assert_modern(&client);
    support::server_requests(&client).await;
    client.cancel().await.expect("the client must shut down");
}
