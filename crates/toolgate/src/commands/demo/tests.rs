//! Tests of the demo server: what it lists, and that each tool, prompt and resource does what it says.

use base64::Engine as _;
use rmcp::model as mcp;
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt as _};
use tokio::sync::mpsc;

use super::*;

/// A client that passes on the progress notifications it receives.
struct ProgressClient(mpsc::UnboundedSender<mcp::ProgressNotificationParam>);

impl ClientHandler for ProgressClient {
    async fn on_progress(
        &self,
        params: mcp::ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(params);
    }
}

type Client = RunningService<RoleClient, ProgressClient>;

/// The demo on one end of an in-memory pipe, a client on the other.
async fn connect() -> (Client, mpsc::UnboundedReceiver<mcp::ProgressNotificationParam>) {
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let running = DemoServer::new().serve(server_io).await.expect("demo handshake");
        let _ = running.waiting().await;
    });
    let (progress, received) = mpsc::unbounded_channel();
    let client = ProgressClient(progress).serve(client_io).await.expect("client handshake");
    (client, received)
}

async fn call(client: &Client, name: &str, args: serde_json::Value) -> mcp::CallToolResult {
    let mut params = mcp::CallToolRequestParams::new(name.to_owned());
    if let serde_json::Value::Object(args) = args {
        params = params.with_arguments(args);
    }
    client.call_tool(params).await.unwrap_or_else(|error| panic!("{name} answers: {error}"))
}

fn decode(base64_text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(base64_text).expect("valid base64")
}

fn kind(block: &mcp::ContentBlock) -> String {
    serde_json::to_value(block).expect("serializes")["type"].as_str().unwrap_or("?").to_owned()
}

#[tokio::test]
async fn lists_only_read_only_closed_world_tools() {
    let (client, _) = connect().await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let mut names: Vec<_> = tools.iter().map(|tool| tool.name.to_string()).collect();
    names.sort();
    assert_eq!(
        names,
        ["echo", "sample_audio", "sample_image", "sample_mixed", "sample_resource", "slow"]
    );
    for tool in &tools {
        let hints = tool.annotations.as_ref().expect("every demo tool is annotated");
        assert_eq!(hints.read_only_hint, Some(true), "{} is read-only", tool.name);
        assert_eq!(hints.open_world_hint, Some(false), "{} reaches nothing outside", tool.name);
    }
}

#[tokio::test]
async fn echo_returns_its_text() {
    let (client, _) = connect().await;
    let result = call(&client, "echo", serde_json::json!({ "text": "hello" })).await;
    assert_eq!(result.content[0].as_text().map(|t| t.text.as_str()), Some("hello"));
    assert_ne!(result.is_error, Some(true));
}

#[tokio::test]
async fn content_samples_are_what_they_say() {
    let (client, _) = connect().await;

    let image = call(&client, "sample_image", serde_json::json!({})).await;
    let image = image.content[0].as_image().expect("an image block");
    assert_eq!(image.mime_type, "image/png");
    assert!(decode(&image.data).starts_with(b"\x89PNG\r\n\x1a\n"));

    let audio = call(&client, "sample_audio", serde_json::json!({})).await;
    let audio = serde_json::to_value(&audio.content[0]).expect("serializes");
    assert_eq!(audio["mimeType"], "audio/wav");
    let wav = decode(audio["data"].as_str().expect("audio data"));
    assert!(wav.starts_with(b"RIFF") && &wav[8..12] == b"WAVE", "a WAV file");

    let resource = call(&client, "sample_resource", serde_json::json!({})).await;
    let resource = serde_json::to_value(&resource.content[0]).expect("serializes");
    assert_eq!(resource["resource"]["uri"], README_URI);
    assert!(resource["resource"]["text"].as_str().expect("text").contains("toolgate.toml"));

    let mixed = call(&client, "sample_mixed", serde_json::json!({})).await;
    let kinds: Vec<_> = mixed.content.iter().map(kind).collect();
    assert_eq!(kinds, ["text", "image", "audio", "resource"]);
}

#[tokio::test(start_paused = true)]
async fn slow_reports_progress_after_each_step() {
    let (client, mut progress) = connect().await;
    let params = mcp::CallToolRequestParams::new("slow").with_arguments(
        serde_json::json!({ "steps": 3, "step_ms": 500 }).as_object().cloned().unwrap(),
    );
    let request = mcp::ClientRequest::CallToolRequest(mcp::CallToolRequest::new(params));
    let started = tokio::time::Instant::now();
    let handle = client
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .expect("sent");
    let token = handle.progress_token.clone();
    let response = handle.await_response().await.expect("slow answers");
    assert_eq!(started.elapsed(), Duration::from_millis(1500), "three steps of 500 ms");
    let mcp::ServerResult::CallToolResult(result) = response else { panic!("{response:?}") };
    assert_eq!(result.content[0].as_text().map(|t| t.text.as_str()), Some("done after 3 steps"));
    for step in 1..=3 {
        let note = progress.recv().await.expect("progress");
        assert_eq!(note.progress_token, token);
        assert_eq!((note.progress, note.total), (f64::from(step), Some(3.0)));
        assert_eq!(note.message.as_deref(), Some(format!("step {step} of 3").as_str()));
    }
}

#[tokio::test(start_paused = true)]
async fn slow_stops_when_cancelled() {
    let (client, mut progress) = connect().await;
    let params = mcp::CallToolRequestParams::new("slow").with_arguments(
        serde_json::json!({ "steps": 60, "step_ms": 1000 }).as_object().cloned().unwrap(),
    );
    let request = mcp::ClientRequest::CallToolRequest(mcp::CallToolRequest::new(params));
    let handle = client
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .expect("sent");
    assert_eq!(progress.recv().await.expect("first progress").progress, 1.0);
    handle.cancel(Some("enough".to_owned())).await.expect("cancel sent");
    // Long enough for every remaining step, had it gone on.
    tokio::time::sleep(Duration::from_secs(120)).await;
    let mut later = 0;
    while progress.try_recv().is_ok() {
        later += 1;
    }
    assert!(later <= 1, "{later} progress notifications after the cancellation");
}

#[tokio::test]
async fn slow_refuses_out_of_range_arguments() {
    let (client, _) = connect().await;
    for args in [
        serde_json::json!({ "steps": 0 }),
        serde_json::json!({ "steps": MAX_STEPS + 1 }),
        serde_json::json!({ "step_ms": MAX_STEP_MS + 1 }),
    ] {
        let result = call(&client, "slow", args.clone()).await;
        assert_eq!(result.is_error, Some(true), "{args} is refused");
    }
}

#[tokio::test]
async fn prompts_are_listed_and_rendered() {
    let (client, _) = connect().await;
    let prompts = client.list_all_prompts().await.expect("prompts/list");
    let mut names: Vec<_> = prompts.iter().map(|prompt| prompt.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["describe_image", "greeting"]);

    let greeting = client
        .get_prompt(
            mcp::GetPromptRequestParams::new("greeting")
                .with_arguments(serde_json::json!({ "name": "Ada" }).as_object().cloned().unwrap()),
        )
        .await
        .expect("greeting renders");
    let text = serde_json::to_string(&greeting.messages).expect("serializes");
    assert!(text.contains("Greet Ada"), "{text}");

    let image = client
        .get_prompt(mcp::GetPromptRequestParams::new("describe_image"))
        .await
        .expect("describe_image renders");
    let first = serde_json::to_value(&image.messages[0]).expect("serializes");
    assert_eq!(first["content"]["type"], "image");
}

#[tokio::test]
async fn resources_are_listed_and_read() {
    let (client, _) = connect().await;
    let resources = client.list_all_resources().await.expect("resources/list");
    let uris: Vec<_> = resources.iter().map(|resource| resource.uri.as_str()).collect();
    assert_eq!(uris, [README_URI, IMAGE_URI]);

    let readme = client
        .read_resource(mcp::ReadResourceRequestParams::new(README_URI))
        .await
        .expect("readme reads");
    let readme = serde_json::to_value(&readme.contents[0]).expect("serializes");
    assert!(readme["text"].as_str().expect("text").contains("Quick start"));

    let image = client
        .read_resource(mcp::ReadResourceRequestParams::new(IMAGE_URI))
        .await
        .expect("image reads");
    let image = serde_json::to_value(&image.contents[0]).expect("serializes");
    assert!(decode(image["blob"].as_str().expect("blob")).starts_with(b"\x89PNG"));

    let missing = client.read_resource(mcp::ReadResourceRequestParams::new("demo://nothing")).await;
    assert!(missing.is_err(), "an unknown URI is an error");
}
