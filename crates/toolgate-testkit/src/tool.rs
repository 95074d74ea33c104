//! The fixture's tools: the conformance suite's `test_*` tools (with the exact texts its checks
//! expect) and the tools toolgate's own tests and benchmarks drive.
//!
//! Tool failures are `isError` results, never JSON-RPC errors, except for a cancelled `slow`
//! (whose response nobody reads) and a 2026-07-28 retry whose `requestState` does not verify
//! (`-32602`).
//!
//! The sampling and elicitation tools ask the client through [`crate::input`]: a
//! server→client request on handshake-era connections, an MRTR round on 2026-07-28 ones;
//! either way the client's answer makes the same result.
//!
//! `toggle_tool` and `touch_resource` are test hooks for change notifications; they act on
//! the server's [`FixtureHub`](crate::FixtureHub), so every session sees their effect.

// Logging and sampling are SEP-2577-deprecated in rmcp, and the conformance suite still
// exercises them.
#![allow(deprecated)]

use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::handler::server::tool::{InputResponses, RequestState};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model as mcp;
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::fixture::{Fixture, FixtureEvent, PNG_BASE64, RICH_ECHO_URI, WAV_BASE64};
use crate::input::{self, Asked, Retry};

/// The tool `toggle_tool` adds to and removes from the list.
pub(crate) const DYNAMIC_TOOL: &str = "dynamic_tool";

/// The largest result `large` will build, in KiB (256 MiB).
const MAX_LARGE_KB: u32 = 256 * 1024;

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct EchoArgs {
    /// The text to send back.
    text: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct RichEchoArgs {
    /// The text to send back, three ways.
    text: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct LargeArgs {
    /// Size of the text result in KiB (1024 bytes each).
    kb: u32,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct SlowArgs {
    /// Number of steps; progress is reported after each one.
    steps: u32,
    /// Length of one step in milliseconds.
    #[serde(default = "default_step_ms")]
    #[schemars(default = "default_step_ms")]
    step_ms: u64,
}

fn default_step_ms() -> u64 {
    200
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct FailArgs {
    /// The error message to return.
    message: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct CrashArgs {
    /// The process exit code.
    code: i32,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct EnvGetArgs {
    /// The environment variable to read.
    name: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct StderrArgs {
    /// The line to write to stderr (without its newline).
    line: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct SamplingArgs {
    /// The prompt to send to the client's LLM.
    prompt: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ElicitationArgs {
    /// The message to show the user.
    message: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ToggleArgs {
    /// Show (`true`) or hide (`false`) `dynamic_tool`; flips it when absent.
    #[serde(default)]
    enabled: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct NotesArgs {
    /// The text of the log message, and of the progress message.
    text: String,
    /// The log message's level (RFC 5424 name); `info` when absent.
    #[serde(default)]
    level: Option<mcp::LoggingLevel>,
    /// Send the log message this many milliseconds after the call has returned (about no
    /// call, then) instead of while it runs.
    #[serde(default)]
    after_ms: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct TouchArgs {
    /// The resource to report as updated.
    uri: String,
}

// === impl Fixture ===

#[tool_router(vis = "pub(crate)")]
impl Fixture {
    // --- tools for toolgate's tests and benchmarks ---

    /// Returns `text` unchanged as one text block.
    #[tool(annotations(read_only_hint = true, idempotent_hint = true, open_world_hint = false))]
    async fn echo(&self, Parameters(args): Parameters<EchoArgs>) -> mcp::CallToolResult {
        success(args.text)
    }

    /// Returns `text` as a text block, as `structuredContent` `{"text": ...}` and as an
    /// embedded text resource (`test://rich-echo`); `resources/read` of `test://rich-echo`
    /// returns the last text it was given.
    #[tool(annotations(read_only_hint = true, idempotent_hint = true, open_world_hint = false))]
    async fn rich_echo(&self, Parameters(args): Parameters<RichEchoArgs>) -> mcp::CallToolResult {
        self.hub.set_rich_echo(args.text.clone());
        let mut result = mcp::CallToolResult::success(vec![
            mcp::ContentBlock::text(args.text.clone()),
            mcp::ContentBlock::resource(mcp::ResourceContents::text(
                args.text.clone(),
                RICH_ECHO_URI,
            )),
        ]);
        result.structured_content = Some(serde_json::json!({ "text": args.text }));
        result
    }

    /// Returns a text result of exactly `kb` × 1024 bytes.
    #[tool(annotations(read_only_hint = true, idempotent_hint = true, open_world_hint = false))]
    async fn large(&self, Parameters(args): Parameters<LargeArgs>) -> mcp::CallToolResult {
        if args.kb > MAX_LARGE_KB {
            return failure(format!("kb must be at most {MAX_LARGE_KB}"));
        }
        success("x".repeat(args.kb as usize * 1024))
    }

    /// Sleeps `steps` × `step_ms`, reporting progress after each step when asked to; stops
    /// early when the request is cancelled. Returns `done <steps>`.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn slow(
        &self,
        Parameters(args): Parameters<SlowArgs>,
        cx: RequestContext<RoleServer>,
    ) -> Result<mcp::CallToolResult, McpError> {
        let SlowArgs { steps, step_ms } = args;
        let token = cx.meta.get_progress_token();
        for step in 1..=steps {
            tokio::select! {
                biased;
                () = cx.ct.cancelled() => {
                    tracing::info!(completed = step - 1, steps, "slow: cancelled");
                    self.emit(FixtureEvent::SlowCancelled { completed: step - 1, steps });
                    return Err(McpError::internal_error("cancelled", None));
                }
                () = tokio::time::sleep(Duration::from_millis(step_ms)) => {}
            }
            if let Some(token) = &token {
                let progress = mcp::ProgressNotificationParam::new(token.clone(), f64::from(step))
                    .with_total(f64::from(steps));
                if let Err(error) = cx.peer.notify_progress(progress).await {
                    tracing::debug!(%error, "slow: could not send progress");
                }
            }
        }
        self.emit(FixtureEvent::SlowCompleted { steps });
        Ok(success(format!("done {steps}")))
    }

    /// Returns an `isError` result carrying `message`.
    #[tool(annotations(read_only_hint = true, idempotent_hint = true, open_world_hint = false))]
    async fn fail(&self, Parameters(args): Parameters<FailArgs>) -> mcp::CallToolResult {
        failure(args.message)
    }

    /// Exits the server process immediately with `code` (no response is sent).
    #[tool(annotations(destructive_hint = true, open_world_hint = false))]
    async fn crash(&self, Parameters(args): Parameters<CrashArgs>) -> mcp::CallToolResult {
        tracing::warn!(code = args.code, "crash: exiting");
        // Here, not on the function: another attribute there costs the tool its description.
        #[allow(
            clippy::disallowed_methods,
            reason = "simulating a server that dies mid-call is this tool's whole purpose"
        )]
        std::process::exit(args.code);
    }

    /// Returns the value of environment variable `name`, or `<unset>`.
    #[tool(annotations(read_only_hint = true, idempotent_hint = true, open_world_hint = false))]
    async fn env_get(&self, Parameters(args): Parameters<EnvGetArgs>) -> mcp::CallToolResult {
        match std::env::var_os(&args.name) {
            Some(value) => success(value.to_string_lossy()),
            None => success("<unset>"),
        }
    }

    /// Returns the names of every environment variable the server has, sorted, as a JSON
    /// array (never their values): what a gateway let its child inherit.
    #[tool(annotations(read_only_hint = true, idempotent_hint = true, open_world_hint = false))]
    async fn env_names(&self) -> mcp::CallToolResult {
        let mut names: Vec<String> =
            std::env::vars_os().map(|(name, _)| name.to_string_lossy().into_owned()).collect();
        names.sort();
        success(serde_json::to_string(&names).unwrap_or_default())
    }

    /// Returns the request's `_meta` as JSON text (what a gateway passed through).
    #[tool(annotations(read_only_hint = true, idempotent_hint = true, open_world_hint = false))]
    async fn meta_echo(&self, cx: RequestContext<RoleServer>) -> mcp::CallToolResult {
        success(serde_json::to_string(&cx.meta).unwrap_or_default())
    }

    /// Asks the client for its roots (`roots/list`) and returns them as JSON text
    /// (`{"roots": [...]}`), or an `isError` result when the client has no roots capability.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn list_roots(
        &self,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
        cx: RequestContext<RoleServer>,
    ) -> Result<mcp::CallToolResponse, McpError> {
        if cx.client_capabilities().and_then(|caps| caps.roots).is_none() {
            return Ok(failure("the client does not support roots").into());
        }
        let retry = Retry { state, responses };
        Ok(match input::roots(&self.hub, &cx, retry, "list_roots").await? {
            Asked::Answered(result) => {
                success(serde_json::to_string(&result).unwrap_or_default()).into()
            }
            Asked::InputRequired(result) => result.into(),
            Asked::Failed(message) => failure(message).into(),
        })
    }

    /// Starts a long-lived grandchild process (`sleep 600`) and returns its pid.
    #[tool(annotations(read_only_hint = false, destructive_hint = false, open_world_hint = false))]
    async fn spawn_child(&self) -> mcp::CallToolResult {
        // Null stdio so the grandchild holds none of our pipes open; the test checks its pid.
        let spawned = std::process::Command::new("sleep")
            .arg("600")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        match spawned {
            // Deliberately not waited for: it must outlive this call.
            Ok(child) => success(child.id().to_string()),
            Err(error) => failure(format!("could not spawn `sleep 600`: {error}")),
        }
    }

    /// Writes `line` to the server's stderr and returns `ok`.
    #[tool(annotations(read_only_hint = false, destructive_hint = false, open_world_hint = false))]
    async fn stderr(&self, Parameters(args): Parameters<StderrArgs>) -> mcp::CallToolResult {
        let mut stderr = std::io::stderr().lock();
        match writeln!(stderr, "{}", args.line).and_then(|()| stderr.flush()) {
            Ok(()) => success("ok"),
            Err(error) => failure(format!("could not write to stderr: {error}")),
        }
    }

    // --- the conformance suite's tools ---

    /// Returns simple text content.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn test_simple_text(&self) -> mcp::CallToolResult {
        success("This is a simple text response for testing.")
    }

    /// Returns image content (a small PNG).
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn test_image_content(&self) -> mcp::CallToolResult {
        mcp::CallToolResult::success(vec![mcp::ContentBlock::image(PNG_BASE64, "image/png")])
    }

    /// Returns audio content (a short WAV).
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn test_audio_content(&self) -> mcp::CallToolResult {
        mcp::CallToolResult::success(vec![mcp::ContentBlock::audio(WAV_BASE64, "audio/wav")])
    }

    /// Returns an embedded text resource.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn test_embedded_resource(&self) -> mcp::CallToolResult {
        mcp::CallToolResult::success(vec![mcp::ContentBlock::resource(
            mcp::ResourceContents::text(
                "This is an embedded resource content.",
                "test://embedded-resource",
            ),
        )])
    }

    /// Returns text, image and embedded-resource content together.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn test_multiple_content_types(&self) -> mcp::CallToolResult {
        mcp::CallToolResult::success(vec![
            mcp::ContentBlock::text("Multiple content types test:"),
            mcp::ContentBlock::image(PNG_BASE64, "image/png"),
            mcp::ContentBlock::resource(
                mcp::ResourceContents::text(
                    r#"{"test":"data","value":123}"#,
                    "test://mixed-content-resource",
                )
                .with_mime_type("application/json"),
            ),
        ])
    }

    /// Sends three info log notifications, 50 ms apart, while it runs.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn test_tool_with_logging(&self, cx: RequestContext<RoleServer>) -> mcp::CallToolResult {
        let info = mcp::LoggingLevel::Info;
        self.log(&cx.peer, info, "Tool execution started").await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        self.log(&cx.peer, info, "Tool processing data").await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        self.log(&cx.peer, info, "Tool execution completed").await;
        success("Logging test completed")
    }

    /// Logs `text` (at `level`, `info` by default) and, when the request has a progress token,
    /// reports one step of progress with `text` as its message, then returns `noted`. With
    /// `after_ms` the log message is sent that long after the call returned instead.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn notes(
        &self,
        Parameters(args): Parameters<NotesArgs>,
        cx: RequestContext<RoleServer>,
    ) -> mcp::CallToolResult {
        let level = args.level.unwrap_or(mcp::LoggingLevel::Info);
        if let Some(token) = cx.meta.get_progress_token() {
            let progress = mcp::ProgressNotificationParam::new(token, 1.0)
                .with_total(1.0)
                .with_message(args.text.clone());
            if let Err(error) = cx.peer.notify_progress(progress).await {
                tracing::debug!(%error, "notes: could not send progress");
            }
        }
        match args.after_ms {
            None => self.log(&cx.peer, level, &args.text).await,
            Some(after_ms) => {
                let later = self.log_later(cx.peer.clone(), level, args.text);
                tokio::spawn(async move {
                    // The server's own delay: the message is then about no call.
                    tokio::time::sleep(Duration::from_millis(after_ms)).await;
                    later.await;
                });
            }
        }
        success("noted")
    }

    /// Reports progress 0, 50 and 100 of 100, 50 ms apart, when the request has a token.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn test_tool_with_progress(&self, cx: RequestContext<RoleServer>) -> mcp::CallToolResult {
        let token = cx.meta.get_progress_token();
        for (index, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
            if index > 0 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            if let Some(token) = &token {
                let param =
                    mcp::ProgressNotificationParam::new(token.clone(), progress).with_total(100.0);
                if let Err(error) = cx.peer.notify_progress(param).await {
                    tracing::debug!(%error, "could not send progress");
                }
            }
        }
        success("Progress test completed")
    }

    /// Declares an input schema using JSON Schema 2020-12 keywords (SEP-1613).
    #[tool(
        input_schema = json_schema_2020_12_input(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn json_schema_2020_12_tool(&self) -> mcp::CallToolResult {
        success("JSON Schema 2020-12 tool called")
    }

    /// Declares arguments that travel in HTTP headers too (`x-mcp-header`, SEP-2243) and
    /// says what it was given: the conformance suite's custom-header scenario needs such a
    /// tool.
    #[tool(
        input_schema = header_params_input(),
        annotations(read_only_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn test_header_params(
        &self,
        Parameters(args): Parameters<mcp::JsonObject>,
    ) -> mcp::CallToolResult {
        success(format!("header params: {}", serde_json::Value::Object(args)))
    }

    /// Always returns an `isError` result.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn test_error_handling(&self) -> mcp::CallToolResult {
        failure("This tool intentionally returns an error for testing")
    }

    /// Asks the client's LLM to complete `prompt` (`sampling/createMessage`).
    #[tool(annotations(read_only_hint = true))]
    async fn test_sampling(
        &self,
        Parameters(args): Parameters<SamplingArgs>,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
        cx: RequestContext<RoleServer>,
    ) -> Result<mcp::CallToolResponse, McpError> {
        if cx.client_capabilities().and_then(|caps| caps.sampling).is_none() {
            return Ok(failure("the client does not support sampling").into());
        }
        let request = mcp::CreateMessageRequestParams::new(
            vec![mcp::SamplingMessage::user_text(args.prompt)],
            100,
        );
        let retry = Retry { state, responses };
        let result = match input::sample(&self.hub, &cx, retry, "test_sampling", request).await? {
            Asked::Answered(result) => result,
            Asked::InputRequired(result) => return Ok(result.into()),
            Asked::Failed(message) => return Ok(failure(message).into()),
        };
        let text = result.message.content.first().and_then(|block| block.as_text());
        let text = text.map(|text| text.text.as_str()).unwrap_or_default();
        Ok(success(format!("LLM response: {text}")).into())
    }

    /// Asks the user for a username and email (`elicitation/create`), showing `message`.
    #[tool(annotations(read_only_hint = true))]
    async fn test_elicitation(
        &self,
        Parameters(args): Parameters<ElicitationArgs>,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
        cx: RequestContext<RoleServer>,
    ) -> Result<mcp::CallToolResponse, McpError> {
        let form = Form { tool: "test_elicitation", message: args.message, schema: user_schema() };
        let retry = Retry { state, responses };
        self.elicit(&cx, retry, form, "User response").await
    }

    /// Elicits a form whose fields all have defaults (SEP-1034).
    #[tool(annotations(read_only_hint = true))]
    async fn test_elicitation_sep1034_defaults(
        &self,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
        cx: RequestContext<RoleServer>,
    ) -> Result<mcp::CallToolResponse, McpError> {
        let form = Form {
            tool: "test_elicitation_sep1034_defaults",
            message: "Please review these values (all have defaults)".to_owned(),
            schema: sep1034_schema(),
        };
        let retry = Retry { state, responses };
        self.elicit(&cx, retry, form, "Elicitation completed").await
    }

    /// Elicits a form with every enum flavour (SEP-1330).
    #[tool(annotations(read_only_hint = true))]
    async fn test_elicitation_sep1330_enums(
        &self,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
        cx: RequestContext<RoleServer>,
    ) -> Result<mcp::CallToolResponse, McpError> {
        let form = Form {
            tool: "test_elicitation_sep1330_enums",
            message: "Please choose some options".to_owned(),
            schema: sep1330_schema(),
        };
        let retry = Retry { state, responses };
        self.elicit(&cx, retry, form, "Elicitation completed").await
    }

    // --- test hooks for change notifications ---

    /// Adds `dynamic_tool` to the tool list or removes it (every session sees the same list)
    /// and, when the list changed, sends `notifications/tools/list_changed` to every
    /// handshake-era session and every 2026-07-28 `subscriptions/listen` stream that asked
    /// for it. Returns `dynamic_tool enabled` or `dynamic_tool disabled`.
    #[tool(annotations(read_only_hint = false, destructive_hint = false, open_world_hint = false))]
    async fn toggle_tool(
        &self,
        Parameters(args): Parameters<ToggleArgs>,
        cx: RequestContext<RoleServer>,
    ) -> mcp::CallToolResult {
        if !input::is_modern(&cx) {
            // The caller hears about it even if its session never sent `initialized`.
            self.hub.register_peer(self.session_id, &cx.peer);
        }
        let (enabled, changed) = self.hub.set_dynamic_tool(args.enabled);
        if changed {
            self.hub.tools_changed().await;
        }
        success(format!("{DYNAMIC_TOOL} {}", if enabled { "enabled" } else { "disabled" }))
    }

    /// Sends `notifications/resources/updated` for `uri` to every handshake-era session
    /// subscribed to it (`resources/subscribe`) and every 2026-07-28 listen stream whose
    /// filter names it. Returns `touched <uri> (<n> subscribed sessions)`, counting the
    /// handshake-era sessions.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn touch_resource(&self, Parameters(args): Parameters<TouchArgs>) -> mcp::CallToolResult {
        let subscribed = self.hub.resource_updated(&args.uri).await;
        success(format!("touched {} ({subscribed} subscribed sessions)", args.uri))
    }

    /// Listed only while `toggle_tool` has it enabled. Returns `dynamic tool called`.
    #[tool(annotations(read_only_hint = true, idempotent_hint = true, open_world_hint = false))]
    async fn dynamic_tool(&self) -> mcp::CallToolResult {
        success("dynamic tool called")
    }
}

/// `count` trivial tools for scale benchmarks ([`FixtureOptions::extra_tools`]): `t0000`,
/// `t0001`, ..., without arguments, each answering `<name> called`. They share one input
/// schema, so a long list costs little more than the names.
///
/// [`FixtureOptions::extra_tools`]: crate::FixtureOptions::extra_tools
pub(crate) fn extra_tools(count: usize) -> ToolRouter<Fixture> {
    let schema = Arc::new(mcp::JsonObject::from_iter([(
        "type".to_owned(),
        serde_json::Value::from("object"),
    )]));
    let annotations =
        mcp::ToolAnnotations::new().read_only(true).idempotent(true).open_world(false);
    let mut router = ToolRouter::new();
    for index in 0..count {
        let name = format!("t{index:04}");
        let answer = format!("{name} called");
        let tool = mcp::Tool::new(name, "A trivial tool for scale benchmarks.", schema.clone())
            .with_annotations(annotations.clone());
        router.add_route(ToolRoute::new_dyn(tool, move |_cx| {
            let result: mcp::CallToolResponse = success(answer.clone()).into();
            Box::pin(std::future::ready(Ok(result)))
        }));
    }
    router
}

/// Tools named and described as `tools` says ([`FixtureOptions::described_tools`]), without
/// arguments, each answering `<name> called`.
///
/// [`FixtureOptions::described_tools`]: crate::FixtureOptions::described_tools
pub(crate) fn described_tools(tools: &[(String, String)]) -> ToolRouter<Fixture> {
    let schema = Arc::new(mcp::JsonObject::from_iter([(
        "type".to_owned(),
        serde_json::Value::from("object"),
    )]));
    let mut router = ToolRouter::new();
    for (name, description) in tools {
        let answer = format!("{name} called");
        let tool = mcp::Tool::new(name.clone(), description.clone(), schema.clone());
        router.add_route(ToolRoute::new_dyn(tool, move |_cx| {
            let result: mcp::CallToolResponse = success(answer.clone()).into();
            Box::pin(std::future::ready(Ok(result)))
        }));
    }
    router
}

/// A form elicitation one of the `test_elicitation*` tools makes.
struct Form {
    tool: &'static str,
    message: String,
    schema: serde_json::Value,
}

impl Fixture {
    /// Elicits `form` in whatever way the era allows; the result is `<label>: <describe>`.
    async fn elicit(
        &self,
        cx: &RequestContext<RoleServer>,
        retry: Retry,
        form: Form,
        label: &str,
    ) -> Result<mcp::CallToolResponse, McpError> {
        if cx.client_capabilities().and_then(|caps| caps.elicitation).is_none() {
            return Ok(failure("the client does not support elicitation").into());
        }
        let requested_schema = match form.schema {
            serde_json::Value::Object(object) => {
                match mcp::ElicitationSchema::from_json_schema(object) {
                    Ok(schema) => schema,
                    Err(error) => {
                        return Ok(failure(format!("invalid elicitation schema: {error}")).into());
                    }
                }
            }
            _ => return Ok(failure("elicitation schema must be an object").into()),
        };
        let request = mcp::ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: form.message,
            requested_schema,
        };
        Ok(match input::elicit(&self.hub, cx, retry, form.tool, request).await? {
            Asked::Answered(result) => success(format!("{label}: {}", describe(&result))).into(),
            Asked::InputRequired(result) => result.into(),
            Asked::Failed(message) => failure(message).into(),
        })
    }
}

/// `test_elicitation`'s form.
fn user_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "username": { "type": "string", "description": "User's response" },
            "email": { "type": "string", "description": "User's email address" },
        },
        "required": ["username", "email"],
    })
}

/// `test_elicitation_sep1034_defaults`'s form: a default for every primitive type.
fn sep1034_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "name": { "type": "string", "description": "Name", "default": "John Doe" },
            "age": { "type": "integer", "description": "Age", "default": 30 },
            "score": { "type": "number", "description": "Score", "default": 95.5 },
            "status": {
                "type": "string",
                "description": "Status",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": { "type": "boolean", "description": "Verified", "default": true },
        },
    })
}

/// `test_elicitation_sep1330_enums`'s form: every enum flavour.
fn sep1330_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "untitledSingle": {
                "type": "string",
                "description": "Untitled single-select",
                "enum": ["option1", "option2", "option3"],
            },
            "titledSingle": {
                "type": "string",
                "description": "Titled single-select",
                "oneOf": [
                    { "const": "value1", "title": "First Option" },
                    { "const": "value2", "title": "Second Option" },
                    { "const": "value3", "title": "Third Option" },
                ],
            },
            "legacyEnum": {
                "type": "string",
                "description": "Legacy titled enum",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {
                "type": "array",
                "description": "Untitled multi-select",
                "items": { "type": "string", "enum": ["option1", "option2", "option3"] },
            },
            "titledMulti": {
                "type": "array",
                "description": "Titled multi-select",
                "items": {
                    "anyOf": [
                        { "const": "value1", "title": "First Choice" },
                        { "const": "value2", "title": "Second Choice" },
                        { "const": "value3", "title": "Third Choice" },
                    ],
                },
            },
        },
    })
}

/// The input schema of `json_schema_2020_12_tool`, as the conformance suite expects it: the
/// 0.1.x line checks `$schema`, `$defs` and `additionalProperties`, the 0.2.x line also an
/// `$anchor`, composition (`allOf`/`anyOf`) and conditional (`if`/`then`/`else`) keywords.
fn json_schema_2020_12_input() -> Arc<mcp::JsonObject> {
    let schema = serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {
                    "street": { "type": "string" },
                    "city": { "type": "string" },
                },
            },
        },
        "properties": {
            "name": { "type": "string" },
            "address": { "$ref": "#/$defs/address" },
            "contactMethod": { "type": "string", "enum": ["phone", "email"] },
            "phone": { "type": "string" },
            "email": { "type": "string" },
        },
        "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
        "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
        "then": { "required": ["phone"] },
        "else": { "required": ["email"] },
        "additionalProperties": false,
    });
    Arc::new(serde_json::from_value(schema).expect("a json! object literal must be an object"))
}

/// The input schema of `test_header_params`: a string and an integer that a client of
/// 2026-07-28 also sends as `Mcp-Param-Region` and `Mcp-Param-Priority`.
fn header_params_input() -> Arc<mcp::JsonObject> {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" },
            "priority": { "type": "integer", "x-mcp-header": "Priority" },
            "note": { "type": "string" },
        },
        "required": ["region"],
    });
    Arc::new(serde_json::from_value(schema).expect("a json! object literal must be an object"))
}

pub(crate) fn success(text: impl Into<String>) -> mcp::CallToolResult {
    mcp::CallToolResult::success(vec![mcp::ContentBlock::text(text)])
}

pub(crate) fn failure(text: impl Into<String>) -> mcp::CallToolResult {
    mcp::CallToolResult::error(vec![mcp::ContentBlock::text(text)])
}

/// `action=<action>, content=<json>`.
fn describe(result: &mcp::ElicitResult) -> String {
    let action = serde_json::to_value(&result.action)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{:?}", result.action));
    let content = result.content.as_ref().map_or_else(|| "null".to_owned(), ToString::to_string);
    format!("action={action}, content={content}")
}

#[cfg(test)]
mod tests;
