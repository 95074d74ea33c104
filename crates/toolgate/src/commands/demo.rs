//! `toolgate demo-server` (hidden): the built-in demo MCP server, which toolgate starts on
//! stdio as its only upstream when it finds no config, so that a fresh install has something
//! to show.
//!
//! Everything it offers is harmless by construction: it echoes, returns fixed samples of each
//! kind of content, waits with progress, and reads nothing of the machine it runs on (no
//! environment variable, no file, no process). The full test fixture, with `crash`,
//! `env_get` and `spawn_child`, is `toolgate-fixture` in `toolgate-testkit` and is not part of
//! this binary.

use std::process::ExitCode;
use std::sync::LazyLock;
use std::time::Duration;

use base64::Engine as _;
use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model as mcp;
use rmcp::service::RequestContext;
use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler, ServiceExt as _, prompt, prompt_handler,
    prompt_router, tool, tool_handler, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::GlobalArgs;

/// The most steps `slow` takes.
const MAX_STEPS: u32 = 60;
/// The longest step `slow` takes, in milliseconds.
const MAX_STEP_MS: u64 = 5_000;

/// The readme resource.
const README_URI: &str = "demo://readme";
/// The image resource.
const IMAGE_URI: &str = "demo://gate.png";
/// What the readme resource says.
const README: &str = "\
This is toolgate's built-in demo server. toolgate runs it when it finds no config file.

It offers harmless samples only: `echo`, `slow` (progress notifications), and tools that \
return an image, audio, an embedded resource, or all of them at once.

To put your own MCP servers behind toolgate, list them in a `toolgate.toml` (in the current \
directory, in ~/.config/toolgate/, or passed with --config FILE); a Claude Desktop, Cursor or \
VS Code JSON config works as it is. See \"Quick start\" in toolgate's README.
";

/// An 8×8 PNG: a green gate on white.
static GATE_PNG: LazyLock<String> = LazyLock::new(|| {
    base64::engine::general_purpose::STANDARD.encode(include_bytes!("demo/gate.png"))
});
/// A tenth of a second of a 440 Hz tone: 8 kHz, 8-bit mono WAV.
static BEEP_WAV: LazyLock<String> = LazyLock::new(|| {
    base64::engine::general_purpose::STANDARD.encode(include_bytes!("demo/beep.wav"))
});

/// Serves the demo on this process's stdin/stdout until the client hangs up.
pub(crate) async fn run(global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    crate::setup::init_logging(global, "warn");
    let running = DemoServer::new().serve(rmcp::transport::stdio()).await?;
    let reason = running.waiting().await?;
    tracing::debug!(?reason, "demo session ended");
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    text: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct SlowArgs {
    /// Number of steps (1 to 60); progress is reported after each one.
    #[serde(default = "default_steps")]
    #[schemars(default = "default_steps", range(min = 1, max = 60))]
    steps: u32,
    /// Length of one step in milliseconds (at most 5000).
    #[serde(default = "default_step_ms")]
    #[schemars(default = "default_step_ms", range(max = 5000))]
    step_ms: u64,
}

fn default_steps() -> u32 {
    5
}

fn default_step_ms() -> u64 {
    500
}

#[derive(Debug, Deserialize, JsonSchema)]
struct GreetingArgs {
    /// Who to greet.
    name: String,
}

/// The demo server: one per session.
#[derive(Debug, Clone)]
pub(crate) struct DemoServer {
    tools: ToolRouter<Self>,
    prompts: PromptRouter<Self>,
}

impl DemoServer {
    pub(crate) fn new() -> Self {
        Self { tools: Self::tool_router(), prompts: Self::prompt_router() }
    }
}

#[tool_router]
impl DemoServer {
    /// Returns `text` unchanged.
    #[tool(annotations(read_only_hint = true, idempotent_hint = true, open_world_hint = false))]
    async fn echo(&self, Parameters(args): Parameters<EchoArgs>) -> mcp::CallToolResult {
        text_result(args.text)
    }

    /// Waits `steps` × `step_ms`, reporting progress after each step when the request asks
    /// for it; stops early when cancelled.
    #[tool(annotations(read_only_hint = true, idempotent_hint = true, open_world_hint = false))]
    async fn slow(
        &self,
        Parameters(args): Parameters<SlowArgs>,
        cx: RequestContext<RoleServer>,
    ) -> Result<mcp::CallToolResult, McpError> {
        let SlowArgs { steps, step_ms } = args;
        if !(1..=MAX_STEPS).contains(&steps) || step_ms > MAX_STEP_MS {
            return Ok(mcp::CallToolResult::error(vec![mcp::ContentBlock::text(format!(
                "steps must be 1 to {MAX_STEPS} and step_ms at most {MAX_STEP_MS}"
            ))]));
        }
        let token = cx.meta.get_progress_token();
        for step in 1..=steps {
            tokio::select! {
                biased;
                () = cx.ct.cancelled() => return Err(McpError::internal_error("cancelled", None)),
                () = tokio::time::sleep(Duration::from_millis(step_ms)) => {}
            }
            if let Some(token) = &token {
                let progress = mcp::ProgressNotificationParam::new(token.clone(), f64::from(step))
                    .with_total(f64::from(steps))
                    .with_message(format!("step {step} of {steps}"));
                if let Err(error) = cx.peer.notify_progress(progress).await {
                    tracing::debug!(%error, "slow: could not send progress");
                }
            }
        }
        Ok(text_result(format!("done after {steps} steps")))
    }

    /// Returns an image (a small PNG).
    #[tool(annotations(read_only_hint = true, idempotent_hint = true, open_world_hint = false))]
    async fn sample_image(&self) -> mcp::CallToolResult {
        mcp::CallToolResult::success(vec![png()])
    }

    /// Returns audio (a short WAV tone).
    #[tool(annotations(read_only_hint = true, idempotent_hint = true, open_world_hint = false))]
    async fn sample_audio(&self) -> mcp::CallToolResult {
        mcp::CallToolResult::success(vec![mcp::ContentBlock::audio(BEEP_WAV.as_str(), "audio/wav")])
    }

    /// Returns an embedded resource (the demo's readme).
    #[tool(annotations(read_only_hint = true, idempotent_hint = true, open_world_hint = false))]
    async fn sample_resource(&self) -> mcp::CallToolResult {
        mcp::CallToolResult::success(vec![mcp::ContentBlock::resource(readme())])
    }

    /// Returns text, an image, audio and an embedded resource in one result.
    #[tool(annotations(read_only_hint = true, idempotent_hint = true, open_world_hint = false))]
    async fn sample_mixed(&self) -> mcp::CallToolResult {
        mcp::CallToolResult::success(vec![
            mcp::ContentBlock::text("One of each kind of content:"),
            png(),
            mcp::ContentBlock::audio(BEEP_WAV.as_str(), "audio/wav"),
            mcp::ContentBlock::resource(readme()),
        ])
    }
}

#[prompt_router]
impl DemoServer {
    /// Asks the model to greet someone and say what toolgate is.
    #[prompt]
    async fn greeting(
        &self,
        Parameters(args): Parameters<GreetingArgs>,
    ) -> Vec<mcp::PromptMessage> {
        vec![mcp::PromptMessage::new_text(
            mcp::Role::User,
            format!("Greet {} and say in one sentence what an MCP gateway does.", args.name),
        )]
    }

    /// Asks the model to describe an image.
    #[prompt]
    async fn describe_image(&self) -> Vec<mcp::PromptMessage> {
        vec![
            mcp::PromptMessage::new(mcp::Role::User, png()),
            mcp::PromptMessage::new_text(
                mcp::Role::User,
                "Describe the image above in one sentence.",
            ),
        ]
    }
}

#[tool_handler(router = self.tools)]
#[prompt_handler(router = self.prompts)]
impl ServerHandler for DemoServer {
    fn get_info(&self) -> mcp::ServerConfig {
        let capabilities = mcp::ServerCapabilities::builder()
            .enable_tools()
            .enable_prompts()
            .enable_resources()
            .build();
        mcp::ServerConfig::new(capabilities)
            .with_server_info(mcp::Implementation::new("toolgate-demo", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "toolgate's built-in demo server: harmless sample tools, prompts and resources. \
                 Configure real MCP servers in toolgate.toml (see the README's Quick start).",
            )
    }

    async fn list_resources(
        &self,
        _request: Option<mcp::PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<mcp::ListResourcesResult, McpError> {
        Ok(mcp::ListResourcesResult::with_all_items(vec![
            mcp::Resource::new(README_URI, "readme")
                .with_description("What this demo is, and how to configure real servers")
                .with_mime_type("text/markdown"),
            mcp::Resource::new(IMAGE_URI, "gate.png")
                .with_description("A small PNG")
                .with_mime_type("image/png"),
        ]))
    }

    async fn read_resource(
        &self,
        request: mcp::ReadResourceRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<mcp::ReadResourceResponse, McpError> {
        let contents = match request.uri.as_str() {
            README_URI => readme(),
            IMAGE_URI => mcp::ResourceContents::blob(GATE_PNG.as_str(), IMAGE_URI)
                .with_mime_type("image/png"),
            other => {
                return Err(McpError::resource_not_found(
                    format!("the demo has no resource {other}"),
                    Some(serde_json::json!({ "uri": other })),
                ));
            }
        };
        Ok(mcp::ReadResourceResult::new(vec![contents]).into())
    }
}

fn text_result(text: impl Into<String>) -> mcp::CallToolResult {
    mcp::CallToolResult::success(vec![mcp::ContentBlock::text(text)])
}

fn png() -> mcp::ContentBlock {
    mcp::ContentBlock::image(GATE_PNG.as_str(), "image/png")
}

fn readme() -> mcp::ResourceContents {
    mcp::ResourceContents::text(README, README_URI).with_mime_type("text/markdown")
}

#[cfg(test)]
mod tests;
