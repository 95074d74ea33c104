//! The diagnostic tools of the conformance suite's 2026-07-28 requirement set (suite 0.2.x):
//! the `server-stateless` probes (`test_missing_capability`, `test_streaming_elicitation`,
//! `test_logging_tool`, `test_trigger_tool_change`, `test_trigger_prompt_change`) and the SEP-2322 `input_required` tools,
//! with the input keys, messages and texts the suite's scenarios name.
//!
//! Every tool works in both eras: on a handshake-era connection its questions become
//! server→client requests (see [`input::ask_many`]), so a gateway that meets a 2026-07-28
//! client on its front and a handshake-era session upstream has to translate between the two.

// Sampling and roots are SEP-2577-deprecated in rmcp, and the suite still exercises them.
#![allow(deprecated)]

use rmcp::handler::server::tool::{InputResponses, RequestState};
use rmcp::model as mcp;
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, tool, tool_router};

use crate::fixture::Fixture;
use crate::input::{self, Asked, Retry};
use crate::tool::success;

/// `MissingRequiredClientCapabilityError` (2026-07-28).
const MISSING_CAPABILITY: mcp::ErrorCode = mcp::ErrorCode(-32021);
/// The `_meta` key of a 2026-07-28 request's log level.
const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";

/// An `elicitation/create` form with one required field of `kind`.
fn form(message: &str, field: &str, kind: &str) -> mcp::InputRequest {
    let schema = serde_json::json!({
        "type": "object",
        "properties": { field: { "type": kind } },
        "required": [field],
    });
    let serde_json::Value::Object(schema) = schema else { unreachable!("an object literal") };
    let requested_schema =
        mcp::ElicitationSchema::from_json_schema(schema).expect("a valid elicitation schema");
    mcp::InputRequest::Elicitation(mcp::ElicitRequest::new(
        mcp::ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: message.to_owned(),
            requested_schema,
        },
    ))
}

/// A `sampling/createMessage` request with one user message.
fn sampling(text: &str, max_tokens: u32) -> mcp::InputRequest {
    mcp::InputRequest::CreateMessage(mcp::CreateMessageRequest::new(
        mcp::CreateMessageRequestParams::new(
            vec![mcp::SamplingMessage::user_text(text)],
            max_tokens,
        ),
    ))
}

fn roots() -> mcp::InputRequest {
    mcp::InputRequest::ListRoots(mcp::ListRootsRequest::default())
}

fn requests<const N: usize>(items: [(&str, mcp::InputRequest); N]) -> mcp::InputRequests {
    items.into_iter().map(|(key, request)| (key.to_owned(), request)).collect()
}

/// `content.<field>` of an accepted elicitation answer, as text.
fn field(answer: &serde_json::Value, name: &str) -> String {
    match &answer["content"][name] {
        serde_json::Value::String(text) => text.clone(),
        serde_json::Value::Null => "<none>".to_owned(),
        other => other.to_string(),
    }
}

/// The outcome of a round as a tool result; `done` makes the text of a complete one.
fn respond(
    asked: Asked<mcp::InputResponses>,
    done: impl FnOnce(&mcp::InputResponses) -> String,
) -> mcp::CallToolResponse {
    match asked {
        Asked::Answered(answers) => success(done(&answers)).into(),
        Asked::InputRequired(result) => result.into(),
        Asked::Failed(message) => crate::tool::failure(message).into(),
    }
}

#[tool_router(router = diagnostic_router, vis = "pub(crate)")]
impl Fixture {
    /// Needs the client's `sampling` capability: without it the call is refused with
    /// `MissingRequiredClientCapabilityError` (-32021) naming it; with it, it uses it (one
    /// question to the client's LLM, a request on a handshake-era connection, a round on a
    /// 2026-07-28 one).
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn test_missing_capability(
        &self,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
        cx: RequestContext<RoleServer>,
    ) -> Result<mcp::CallToolResponse, McpError> {
        if cx.client_capabilities().and_then(|caps| caps.sampling).is_none() {
            return Err(McpError::new(
                MISSING_CAPABILITY,
                "this tool requires the client's sampling capability",
                Some(serde_json::json!({ "requiredCapabilities": { "sampling": {} } })),
            ));
        }
        let ask = requests([("answer", sampling("Answer yes or no: can you sample?", 10))]);
        let retry = Retry { state, responses };
        let asked =
            input::ask_many(&self.hub, &cx, retry, "test_missing_capability", ask, false).await?;
        Ok(respond(asked, |_| "the client declared sampling and sampled".to_owned()))
    }

    /// Asks the user to confirm (`elicitation/create`) while the call's response is open;
    /// on 2026-07-28 the question is an `input_required` round, never a request of its own.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn test_streaming_elicitation(
        &self,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
        cx: RequestContext<RoleServer>,
    ) -> Result<mcp::CallToolResponse, McpError> {
        let ask = requests([("confirm", form("Continue streaming?", "ok", "boolean"))]);
        let retry = Retry { state, responses };
        let asked =
            input::ask_many(&self.hub, &cx, retry, "test_streaming_elicitation", ask, false)
                .await?;
        Ok(respond(asked, |answers| format!("Confirmed: {}", field(&answers["confirm"], "ok"))))
    }

    /// Logs three info messages, but on a 2026-07-28 request only when its `_meta` sets a
    /// log level (`io.modelcontextprotocol/logLevel`).
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn test_logging_tool(&self, cx: RequestContext<RoleServer>) -> mcp::CallToolResult {
        if input::is_modern(&cx) && cx.meta.get(LOG_LEVEL_KEY).is_none() {
            return success("Logging test completed (no log level asked for)");
        }
        let info = mcp::LoggingLevel::Info;
        for text in ["Tool execution started", "Tool processing data", "Tool execution completed"] {
            self.log(&cx.peer, info, text).await;
        }
        success("Logging test completed")
    }

    /// Flips `dynamic_tool` in or out of the tool list and announces the change
    /// (`notifications/tools/list_changed` to sessions and listen streams that asked).
    #[tool(annotations(read_only_hint = false, destructive_hint = false, open_world_hint = false))]
    async fn test_trigger_tool_change(
        &self,
        cx: RequestContext<RoleServer>,
    ) -> mcp::CallToolResult {
        if !input::is_modern(&cx) {
            self.hub.register_peer(self.session_id, &cx.peer);
        }
        let (enabled, _) = self.hub.set_dynamic_tool(None);
        self.hub.tools_changed().await;
        success(format!(
            "{} {}",
            crate::tool::DYNAMIC_TOOL,
            if enabled { "enabled" } else { "disabled" }
        ))
    }

    /// Lists `dynamic_prompt`, or unlists it, and says so to every session and listen stream
    /// (`notifications/prompts/list_changed`).
    #[tool(annotations(read_only_hint = false, open_world_hint = false))]
    async fn test_trigger_prompt_change(
        &self,
        cx: RequestContext<RoleServer>,
    ) -> mcp::CallToolResult {
        if !input::is_modern(&cx) {
            self.hub.register_peer(self.session_id, &cx.peer);
        }
        let listed = self.hub.flip_dynamic_prompt();
        self.hub.prompts_changed().await;
        success(format!(
            "{} {}",
            crate::fixture::DYNAMIC_PROMPT,
            if listed { "listed" } else { "unlisted" }
        ))
    }

    /// Asks the user's name (key `user_name`), keeping no state; greets them.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn test_input_required_result_elicitation(
        &self,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
        cx: RequestContext<RoleServer>,
    ) -> Result<mcp::CallToolResponse, McpError> {
        let ask = requests([("user_name", form("What is your name?", "name", "string"))]);
        let retry = Retry { state, responses };
        let tool = "test_input_required_result_elicitation";
        let asked = input::ask_many(&self.hub, &cx, retry, tool, ask, false).await?;
        Ok(respond(asked, |answers| format!("Hello, {}!", field(&answers["user_name"], "name"))))
    }

    /// Asks the client's LLM for the capital of France (key `capital_question`).
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn test_input_required_result_sampling(
        &self,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
        cx: RequestContext<RoleServer>,
    ) -> Result<mcp::CallToolResponse, McpError> {
        let ask = requests([("capital_question", sampling("What is the capital of France?", 100))]);
        let retry = Retry { state, responses };
        let tool = "test_input_required_result_sampling";
        let asked = input::ask_many(&self.hub, &cx, retry, tool, ask, false).await?;
        Ok(respond(asked, |answers| {
            let text = &answers["capital_question"]["content"]["text"];
            format!("LLM response: {}", text.as_str().unwrap_or_default())
        }))
    }

    /// Asks for the client's roots (key `client_roots`) and lists their URIs.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn test_input_required_result_list_roots(
        &self,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
        cx: RequestContext<RoleServer>,
    ) -> Result<mcp::CallToolResponse, McpError> {
        let ask = requests([("client_roots", roots())]);
        let retry = Retry { state, responses };
        let tool = "test_input_required_result_list_roots";
        let asked = input::ask_many(&self.hub, &cx, retry, tool, ask, false).await?;
        Ok(respond(asked, |answers| {
            let roots = answers["client_roots"]["roots"].as_array().cloned().unwrap_or_default();
            let uris: Vec<&str> = roots.iter().filter_map(|root| root["uri"].as_str()).collect();
            format!("Roots: {}", uris.join(", "))
        }))
    }

    /// Asks for a confirmation (key `confirm`) with a sealed `requestState`; the answer says
    /// `state-ok` once the echoed state verified.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn test_input_required_result_request_state(
        &self,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
        cx: RequestContext<RoleServer>,
    ) -> Result<mcp::CallToolResponse, McpError> {
        let ask = requests([("confirm", form("Please confirm", "ok", "boolean"))]);
        let retry = Retry { state, responses };
        let tool = "test_input_required_result_request_state";
        let asked = input::ask_many(&self.hub, &cx, retry, tool, ask, true).await?;
        Ok(respond(asked, |answers| format!("state-ok: ok={}", field(&answers["confirm"], "ok"))))
    }

    /// Asks three things at once: a name (`user_name`), a greeting from the LLM (`greeting`)
    /// and the roots (`client_roots`), with a sealed `requestState`.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn test_input_required_result_multiple_inputs(
        &self,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
        cx: RequestContext<RoleServer>,
    ) -> Result<mcp::CallToolResponse, McpError> {
        let ask = requests([
            ("user_name", form("What is your name?", "name", "string")),
            ("greeting", sampling("Generate a greeting", 50)),
            ("client_roots", roots()),
        ]);
        let retry = Retry { state, responses };
        let tool = "test_input_required_result_multiple_inputs";
        let asked = input::ask_many(&self.hub, &cx, retry, tool, ask, true).await?;
        Ok(respond(asked, |answers| {
            let roots = answers["client_roots"]["roots"].as_array().map_or(0, Vec::len);
            format!(
                "name: {}; greeting: {}; roots: {roots}",
                field(&answers["user_name"], "name"),
                answers["greeting"]["content"]["text"].as_str().unwrap_or_default()
            )
        }))
    }

    /// Two rounds: a name (`step1`), then a favourite colour (`step2`), each with its own
    /// sealed `requestState`.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn test_input_required_result_multi_round(
        &self,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
        cx: RequestContext<RoleServer>,
    ) -> Result<mcp::CallToolResponse, McpError> {
        const TOOL: &str = "test_input_required_result_multi_round";
        let step1 = || requests([("step1", form("Step 1: What is your name?", "name", "string"))]);
        let step2 = || {
            requests([("step2", form("Step 2: What is your favorite color?", "color", "string"))])
        };
        if !input::is_modern(&cx) {
            let first = input::ask_many(&self.hub, &cx, Retry::default(), TOOL, step1(), true);
            let name = match first.await? {
                Asked::Answered(answers) => field(&answers["step1"], "name"),
                other => return Ok(respond(other, |_| String::new())),
            };
            let second = input::ask_many(&self.hub, &cx, Retry::default(), TOOL, step2(), true);
            return Ok(respond(second.await?, |answers| {
                format!("{name} likes {}", field(&answers["step2"], "color"))
            }));
        }
        // Which round this retry answers: the one whose key it carries.
        let round2 = responses.as_ref().is_some_and(|r| r.contains_key("step2"));
        let retry = Retry { state, responses };
        if !round2 {
            let asked =
                input::ask_many(&self.hub, &cx, retry, &format!("{TOOL}#1"), step1(), true).await?;
            return Ok(match asked {
                // Round 1 answered: ask round 2 under a fresh state.
                Asked::Answered(_) => {
                    let fresh = Retry::default();
                    let round = format!("{TOOL}#2");
                    let next = input::ask_many(&self.hub, &cx, fresh, &round, step2(), true);
                    respond(next.await?, |_| String::new())
                }
                other => respond(other, |_| String::new()),
            });
        }
        let asked =
            input::ask_many(&self.hub, &cx, retry, &format!("{TOOL}#2"), step2(), true).await?;
        Ok(respond(asked, |answers| {
            format!("favorite color: {}", field(&answers["step2"], "color"))
        }))
    }

    /// Asks for a confirmation (key `confirm`) under an integrity-protected `requestState`;
    /// a retry with an altered state is refused with -32602.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn test_input_required_result_tampered_state(
        &self,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
        cx: RequestContext<RoleServer>,
    ) -> Result<mcp::CallToolResponse, McpError> {
        let ask = requests([("confirm", form("Please confirm", "ok", "boolean"))]);
        let retry = Retry { state, responses };
        let tool = "test_input_required_result_tampered_state";
        let asked = input::ask_many(&self.hub, &cx, retry, tool, ask, true).await?;
        Ok(respond(asked, |_| "state verified".to_owned()))
    }

    /// Asks only what the client declared it can answer: a sampling question with
    /// `sampling`, a form with `elicitation`; nothing (a plain answer) with neither.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn test_input_required_result_capabilities(
        &self,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
        cx: RequestContext<RoleServer>,
    ) -> Result<mcp::CallToolResponse, McpError> {
        let caps = cx.client_capabilities();
        let mut ask = mcp::InputRequests::new();
        if caps.as_ref().is_some_and(|caps| caps.sampling.is_some()) {
            ask.insert("question".to_owned(), sampling("Say hello", 50));
        }
        if caps.as_ref().is_some_and(|caps| caps.elicitation.is_some()) {
            ask.insert("user_name".to_owned(), form("What is your name?", "name", "string"));
        }
        if ask.is_empty() {
            return Ok(success("the client declared neither sampling nor elicitation").into());
        }
        let retry = Retry { state, responses };
        let tool = "test_input_required_result_capabilities";
        let asked = input::ask_many(&self.hub, &cx, retry, tool, ask, false).await?;
        Ok(respond(asked, |answers| format!("answered: {}", answers.len())))
    }
}

/// `prompts/get` of `test_input_required_result_prompt`: asks for the prompt's context (key
/// `user_context`), then returns a prompt built from it.
pub(crate) async fn input_required_prompt(
    fixture: &Fixture,
    request: mcp::GetPromptRequestParams,
    cx: &RequestContext<RoleServer>,
) -> Result<mcp::GetPromptResponse, McpError> {
    let ask = requests([(
        "user_context",
        form("What context should the prompt use?", "context", "string"),
    )]);
    let retry = Retry { state: request.request_state, responses: request.input_responses };
    let asked = input::ask_many(&fixture.hub, cx, retry, INPUT_REQUIRED_PROMPT, ask, false).await?;
    Ok(match asked {
        Asked::Answered(answers) => {
            let context = field(&answers["user_context"], "context");
            mcp::GetPromptResult::new(vec![mcp::PromptMessage::new_text(
                mcp::Role::User,
                format!("Use this context: {context}"),
            )])
            .into()
        }
        Asked::InputRequired(result) => mcp::GetPromptResponse::InputRequired(result),
        Asked::Failed(message) => return Err(McpError::internal_error(message, None)),
    })
}

/// The prompt that asks for input before it can be returned.
pub(crate) const INPUT_REQUIRED_PROMPT: &str = "test_input_required_result_prompt";
