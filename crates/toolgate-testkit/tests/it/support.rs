//! The test client, its observations, and the assertions every transport must pass.

use std::time::Duration;

use rmcp::model as mcp;
use rmcp::service::{NotificationContext, PeerRequestOptions, RequestContext, RunningService};
use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt as _, ErrorData as McpError, RoleClient,
    ServiceExt as _,
};
use tokio::sync::mpsc;
use toolgate_testkit::{FixtureEvent, FixtureOptions};

/// How long any single awaited observation may take before the test fails.
pub(crate) const PATIENCE: Duration = Duration::from_secs(10);

pub(crate) type Client = RunningService<RoleClient, TestClient>;

/// A client that supports sampling and elicitation and reports what the server sent it.
pub(crate) struct TestClient {
    progress: mpsc::UnboundedSender<mcp::ProgressNotificationParam>,
    logs: mpsc::UnboundedSender<mcp::LoggingMessageNotificationParam>,
    changes: mpsc::UnboundedSender<Change>,
}

/// What the server sent the [`TestClient`] and the fixture reported.
pub(crate) struct Observed {
    pub(crate) progress: mpsc::UnboundedReceiver<mcp::ProgressNotificationParam>,
    pub(crate) logs: mpsc::UnboundedReceiver<mcp::LoggingMessageNotificationParam>,
    pub(crate) events: mpsc::UnboundedReceiver<FixtureEvent>,
    /// Handshake-era change notifications (2026-07-28 ones arrive on a listen stream).
    pub(crate) changes: mpsc::UnboundedReceiver<Change>,
}

/// A change notification a [`TestClient`] received through its handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    ToolsListChanged,
    ResourceUpdated(String),
}

/// Fixture options that report events, the client, and where to watch both.
pub(crate) fn setup() -> (FixtureOptions, TestClient, Observed) {
    let (events_tx, events) = mpsc::unbounded_channel();
    let opts = FixtureOptions { events: Some(events_tx), ..FixtureOptions::default() };
    let (client, mut observed) = client();
    observed.events = events;
    (opts, client, observed)
}

/// Another client, with its own observations (whose `events` never yield).
pub(crate) fn client() -> (TestClient, Observed) {
    let (progress_tx, progress) = mpsc::unbounded_channel();
    let (logs_tx, logs) = mpsc::unbounded_channel();
    let (changes_tx, changes) = mpsc::unbounded_channel();
    let client = TestClient { progress: progress_tx, logs: logs_tx, changes: changes_tx };
    let events = mpsc::unbounded_channel().1;
    (client, Observed { progress, logs, events, changes })
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> mcp::ClientConfig {
        let capabilities =
            mcp::ClientCapabilities::builder().enable_sampling().enable_elicitation().build();
        mcp::ClientConfig::new(capabilities, mcp::Implementation::new("testkit-tests", "0.0.0"))
            .with_protocol_version(mcp::ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn on_progress(
        &self,
        params: mcp::ProgressNotificationParam,
        _cx: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params);
    }

    async fn on_logging_message(
        &self,
        params: mcp::LoggingMessageNotificationParam,
        _cx: NotificationContext<RoleClient>,
    ) {
        let _ = self.logs.send(params);
    }

    async fn on_tool_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        let _ = self.changes.send(Change::ToolsListChanged);
    }

    async fn on_resource_updated(
        &self,
        params: mcp::ResourceUpdatedNotificationParam,
        _cx: NotificationContext<RoleClient>,
    ) {
        let _ = self.changes.send(Change::ResourceUpdated(params.uri));
    }

    async fn create_message(
        &self,
        _params: mcp::CreateMessageRequestParams,
        _cx: RequestContext<RoleClient>,
    ) -> Result<mcp::CreateMessageResult, McpError> {
        Ok(mcp::CreateMessageResult::new(
            mcp::SamplingMessage::assistant_text("sampled"),
            "test-model".to_owned(),
        ))
    }

    async fn create_elicitation(
        &self,
        _params: mcp::ElicitRequestParams,
        _cx: RequestContext<RoleClient>,
    ) -> Result<mcp::ElicitResult, McpError> {
        Ok(mcp::ElicitResult::new(mcp::ElicitationAction::Accept)
            .with_content(serde_json::json!({ "username": "ada", "email": "ada@example.com" })))
    }
}

/// Connects `client` over `transport`.
pub(crate) async fn connect<T, E, A>(client: TestClient, transport: T) -> Client
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    client.serve(transport).await.expect("the client must complete the handshake")
}

/// Connects `client` over `transport` as a 2026-07-28 client (`server/discover`, no
/// `initialize`).
pub(crate) async fn connect_modern<T, E, A>(client: TestClient, transport: T) -> Client
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![mcp::ProtocolVersion::V_2026_07_28],
    };
    let connected = client.serve_with_lifecycle(transport, lifecycle);
    within("discover", connected).await.expect("the client must discover the server")
}

/// The next change notification the client's handler saw.
pub(crate) async fn next_change(observed: &mut Observed) -> Change {
    within("a change notification", observed.changes.recv()).await.expect("channel open")
}

/// Awaits `future`, failing the test after [`PATIENCE`].
pub(crate) async fn within<F: Future>(what: &str, future: F) -> F::Output {
    tokio::time::timeout(PATIENCE, future).await.unwrap_or_else(|_| panic!("timed out: {what}"))
}

pub(crate) fn args(value: serde_json::Value) -> mcp::JsonObject {
    serde_json::from_value(value).expect("arguments must be a JSON object")
}

pub(crate) async fn call(
    client: &Client,
    name: &str,
    arguments: serde_json::Value,
) -> mcp::CallToolResult {
    let params = mcp::CallToolRequestParams::new(name.to_owned()).with_arguments(args(arguments));
    within(name, client.call_tool(params)).await.unwrap_or_else(|e| panic!("{name} failed: {e}"))
}

/// The text of a result that must be exactly one text block.
pub(crate) fn only_text(result: &mcp::CallToolResult) -> &str {
    match result.content.as_slice() {
        [block] => &block.as_text().expect("the block must be text").text,
        other => panic!("expected one block, got {other:?}"),
    }
}

/// What every transport must do.
pub(crate) async fn standard_assertions(client: &Client, observed: &mut Observed) {
    server_info(client);
    lists(client).await;
    tools(client).await;
    server_requests(client).await;
    resources(client).await;
    prompts(client).await;
    completion_and_ping(client).await;
    logging(client, observed).await;
    slow_reports_progress(client, observed).await;
    slow_honours_cancellation(client, observed).await;
}

fn server_info(client: &Client) {
    let info = client.peer_info().expect("the server must have sent its info");
    let server = info.server_info.as_ref().expect("serverInfo must be present");
    assert_eq!(server.name, "toolgate-fixture");
    assert_eq!(info.protocol_version, mcp::ProtocolVersion::V_2025_11_25);
    let caps = &info.capabilities;
    assert!(caps.tools.as_ref().and_then(|t| t.list_changed).unwrap_or(false));
    let resources = caps.resources.as_ref().expect("resources capability");
    assert_eq!((resources.subscribe, resources.list_changed), (Some(true), Some(true)));
    assert!(caps.prompts.as_ref().and_then(|p| p.list_changed).unwrap_or(false));
    assert!(caps.logging.is_some() && caps.completions.is_some());
}

async fn lists(client: &Client) {
    let tools = within("tools/list", client.list_all_tools()).await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    for expected in [
        "echo",
        "large",
        "slow",
        "fail",
        "crash",
        "env_get",
        "env_names",
        "spawn_child",
        "stderr",
        "rich_echo",
        "test_simple_text",
        "test_image_content",
        "test_audio_content",
        "test_embedded_resource",
        "test_multiple_content_types",
        "test_tool_with_logging",
        "test_tool_with_progress",
        "test_error_handling",
        "test_sampling",
        "test_elicitation",
        "test_elicitation_sep1034_defaults",
        "test_elicitation_sep1330_enums",
        "meta_echo",
        "list_roots",
        "toggle_tool",
        "touch_resource",
        "test_missing_capability",
        "test_streaming_elicitation",
        "test_logging_tool",
        "test_trigger_tool_change",
        "test_trigger_prompt_change",
        "test_input_required_result_elicitation",
        "test_input_required_result_sampling",
        "test_input_required_result_list_roots",
        "test_input_required_result_request_state",
        "test_input_required_result_multiple_inputs",
        "test_input_required_result_multi_round",
        "test_input_required_result_tampered_state",
        "test_input_required_result_capabilities",
    ] {
        assert!(names.contains(&expected), "{expected} missing from {names:?}");
    }
    assert!(!names.contains(&"dynamic_tool"), "dynamic_tool is listed only once toggled");
    for tool in &tools {
        assert!(tool.description.is_some(), "{} has no description", tool.name);
        assert_eq!(tool.input_schema.get("type"), Some(&serde_json::json!("object")));
    }
    let tool = |name: &str| tools.iter().find(|tool| tool.name == name).expect("listed above");
    let echo = tool("echo");
    assert_eq!(echo.annotations.as_ref().and_then(|a| a.read_only_hint), Some(true));
    assert_eq!(echo.input_schema["required"], serde_json::json!(["text"]));
    let crash = tool("crash");
    assert_eq!(crash.annotations.as_ref().and_then(|a| a.destructive_hint), Some(true));
    let slow = tool("slow");
    assert_eq!(slow.input_schema["properties"]["step_ms"]["default"], serde_json::json!(200));
    assert_eq!(slow.input_schema["required"], serde_json::json!(["steps"]));

    let resources = within("resources/list", client.list_all_resources()).await.expect("list");
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["test://static-text", "test://static-binary", "test://watched-resource"]);
    let templates =
        within("templates", client.list_all_resource_templates()).await.expect("templates/list");
    assert_eq!(templates[0].uri_template, "test://template/{id}/data");
    let prompts = within("prompts/list", client.list_all_prompts()).await.expect("prompts/list");
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "test_simple_prompt",
            "test_prompt_with_arguments",
            "test_prompt_with_embedded_resource",
            "test_prompt_with_image",
            "test_input_required_result_prompt"
        ]
    );
}

async fn tools(client: &Client) {
    let echo = call(client, "echo", serde_json::json!({ "text": "héllo\nworld" })).await;
    assert_eq!(echo.is_error, Some(false));
    assert_eq!(only_text(&echo), "héllo\nworld");

    let fail = call(client, "fail", serde_json::json!({ "message": "boom" })).await;
    assert_eq!(fail.is_error, Some(true));
    assert_eq!(only_text(&fail), "boom");

    let large = call(client, "large", serde_json::json!({ "kb": 64 })).await;
    assert_eq!(only_text(&large).len(), 64 * 1024);

    let path = std::env::var("PATH").expect("tests run with PATH set");
    let env = call(client, "env_get", serde_json::json!({ "name": "PATH" })).await;
    assert_eq!(only_text(&env), path);
    let env = call(client, "env_get", serde_json::json!({ "name": "TOOLGATE_SURELY_UNSET" })).await;
    assert_eq!(only_text(&env), "<unset>");

    let stderr = call(client, "stderr", serde_json::json!({ "line": "fixture stderr test" })).await;
    assert_eq!(only_text(&stderr), "ok");

    let simple = call(client, "test_simple_text", serde_json::json!({})).await;
    assert_eq!(only_text(&simple), "This is a simple text response for testing.");
    let error = call(client, "test_error_handling", serde_json::json!({})).await;
    assert_eq!(error.is_error, Some(true));
    let mixed = call(client, "test_multiple_content_types", serde_json::json!({})).await;
    assert_eq!(mixed.content.len(), 3);
    let audio = call(client, "test_audio_content", serde_json::json!({})).await;
    assert_eq!(audio.content[0].as_audio().map(|a| a.mime_type.as_str()), Some("audio/wav"));

    // Bad arguments fail, as a protocol error or an `isError` result.
    let params =
        mcp::CallToolRequestParams::new("echo").with_arguments(args(serde_json::json!({})));
    match within("echo without text", client.call_tool(params)).await {
        Err(_) => {}
        Ok(result) => assert_eq!(result.is_error, Some(true), "echo without text: {result:?}"),
    }
}

/// The sampling and elicitation tools, whichever way the era makes them ask.
pub(crate) async fn server_requests(client: &Client) {
    let sampled = call(client, "test_sampling", serde_json::json!({ "prompt": "hi" })).await;
    assert_eq!(only_text(&sampled), "LLM response: sampled");

    let elicited = call(client, "test_elicitation", serde_json::json!({ "message": "who?" })).await;
    assert_eq!(
        only_text(&elicited),
        r#"User response: action=accept, content={"username":"ada","email":"ada@example.com"}"#
    );
    for name in ["test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums"] {
        let result = call(client, name, serde_json::json!({})).await;
        assert_eq!(result.is_error, Some(false), "{name}: {result:?}");
        assert!(only_text(&result).starts_with("Elicitation completed: action=accept"));
    }
}

async fn read(client: &Client, uri: &str) -> mcp::ResourceContents {
    let result = within(uri, client.read_resource(mcp::ReadResourceRequestParams::new(uri)))
        .await
        .unwrap_or_else(|e| panic!("reading {uri}: {e}"));
    let [contents] = <[_; 1]>::try_from(result.contents).expect("one content item");
    contents
}

async fn resources(client: &Client) {
    match read(client, "test://static-text").await {
        mcp::ResourceContents::TextResourceContents { text, mime_type, .. } => {
            assert_eq!(text, "This is the content of the static text resource.");
            assert_eq!(mime_type.as_deref(), Some("text/plain"));
        }
        other => panic!("expected text, got {other:?}"),
    }
    match read(client, "test://static-binary").await {
        mcp::ResourceContents::BlobResourceContents { blob, mime_type, .. } => {
            assert!(blob.starts_with("iVBORw0KGgo"), "a PNG: {blob}");
            assert_eq!(mime_type.as_deref(), Some("image/png"));
        }
        other => panic!("expected a blob, got {other:?}"),
    }
    match read(client, "test://template/42/data").await {
        mcp::ResourceContents::TextResourceContents { text, .. } => {
            let value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
            assert_eq!(value["id"], "42");
        }
        other => panic!("expected text, got {other:?}"),
    }
    let missing = client.read_resource(mcp::ReadResourceRequestParams::new("test://nope")).await;
    assert!(missing.is_err(), "an unknown resource must be an error");

    let watched = "test://watched-resource";
    within("subscribe", client.subscribe(mcp::SubscribeRequestParams::new(watched)))
        .await
        .expect("subscribe");
    match read(client, watched).await {
        mcp::ResourceContents::TextResourceContents { text, .. } => {
            assert!(text.contains("subscribed: true"), "{text}");
        }
        other => panic!("expected text, got {other:?}"),
    }
    within("unsubscribe", client.unsubscribe(mcp::UnsubscribeRequestParams::new(watched)))
        .await
        .expect("unsubscribe");
}

async fn prompts(client: &Client) {
    let get = |name: &str, arguments: serde_json::Value| {
        let params = mcp::GetPromptRequestParams::new(name).with_arguments(args(arguments));
        client.get_prompt(params)
    };
    let simple = within("simple", get("test_simple_prompt", serde_json::json!({}))).await;
    assert_eq!(simple.expect("simple prompt").messages.len(), 1);
    let with_args = within(
        "with args",
        get("test_prompt_with_arguments", serde_json::json!({ "arg1": "a1", "arg2": "b2" })),
    )
    .await
    .expect("prompt with arguments");
    let text = serde_json::to_string(&with_args.messages).expect("serializable");
    assert!(text.contains("arg1='a1', arg2='b2'"), "{text}");
    let missing = within("missing", get("test_prompt_with_arguments", serde_json::json!({}))).await;
    assert!(missing.is_err(), "missing arguments must be an error");
    let embedded = within(
        "embedded",
        get("test_prompt_with_embedded_resource", serde_json::json!({ "resourceUri": "test://x" })),
    )
    .await
    .expect("embedded");
    assert!(embedded.messages[0].content.as_resource().is_some());
    let image = within("image", get("test_prompt_with_image", serde_json::json!({}))).await;
    assert!(image.expect("image").messages[0].content.as_image().is_some());
}

async fn completion_and_ping(client: &Client) {
    let params = mcp::CompleteRequestParams::new(
        mcp::Reference::for_prompt("test_prompt_with_arguments"),
        mcp::ArgumentInfo::new("arg1", "par"),
    );
    let result = within("complete", client.complete(params)).await.expect("completion/complete");
    assert_eq!(result.completion.values, ["paris", "park", "party"]);
    let request = mcp::ClientRequest::PingRequest(mcp::PingRequest::default());
    within("ping", client.send_request(request)).await.expect("ping");
}

async fn logging(client: &Client, observed: &mut Observed) {
    let params = mcp::SetLevelRequestParams::new(mcp::LoggingLevel::Info);
    within("setLevel", client.set_level(params)).await.expect("logging/setLevel");
    call(client, "test_tool_with_logging", serde_json::json!({})).await;
    let mut texts = Vec::new();
    while texts.len() < 3 {
        let log = within("log message", observed.logs.recv()).await.expect("log channel open");
        assert_eq!(log.level, mcp::LoggingLevel::Info);
        texts.push(log.data);
    }
    assert_eq!(
        texts,
        ["Tool execution started", "Tool processing data", "Tool execution completed"]
    );
}

/// Starts `slow` with a progress token; returns the request handle.
async fn start_slow(
    client: &Client,
    steps: u32,
    step_ms: u64,
) -> rmcp::service::RequestHandle<RoleClient> {
    let params = mcp::CallToolRequestParams::new("slow")
        .with_arguments(args(serde_json::json!({ "steps": steps, "step_ms": step_ms })));
    let request = mcp::ClientRequest::CallToolRequest(mcp::CallToolRequest::new(params));
    within("send slow", client.send_request_with_option(request, PeerRequestOptions::no_options()))
        .await
        .expect("slow must be sent")
}

/// The next progress notification for `token`.
async fn next_progress(observed: &mut Observed, token: &mcp::ProgressToken) -> (f64, Option<f64>) {
    loop {
        let progress = within("progress", observed.progress.recv()).await.expect("channel open");
        if &progress.progress_token == token {
            return (progress.progress, progress.total);
        }
    }
}

/// The next event from `slow`, skipping session events.
async fn next_slow_event(observed: &mut Observed) -> FixtureEvent {
    loop {
        let event = within("a fixture event", observed.events.recv()).await.expect("channel open");
        if matches!(event, FixtureEvent::SlowCompleted { .. } | FixtureEvent::SlowCancelled { .. })
        {
            return event;
        }
    }
}

async fn slow_reports_progress(client: &Client, observed: &mut Observed) {
    let handle = start_slow(client, 3, 10).await;
    let token = handle.progress_token.clone();
    let response = within("slow", handle.await_response()).await.expect("slow must succeed");
    let mcp::ServerResult::CallToolResult(result) = response else {
        panic!("unexpected response {response:?}");
    };
    assert_eq!(only_text(&result), "done 3");
    for step in 1..=3 {
        assert_eq!(next_progress(observed, &token).await, (f64::from(step), Some(3.0)));
    }
    assert_eq!(next_slow_event(observed).await, FixtureEvent::SlowCompleted { steps: 3 });
}

async fn slow_honours_cancellation(client: &Client, observed: &mut Observed) {
    let handle = start_slow(client, 1000, 20).await;
    let token = handle.progress_token.clone();
    assert_eq!(next_progress(observed, &token).await, (1.0, Some(1000.0)));
    within("cancel", handle.cancel(Some("test".to_owned()))).await.expect("cancel must be sent");
    match next_slow_event(observed).await {
        FixtureEvent::SlowCancelled { completed, steps: 1000 } => {
            assert!((1..1000).contains(&completed), "completed {completed}");
        }
        other => panic!("expected SlowCancelled, got {other:?}"),
    }
}
