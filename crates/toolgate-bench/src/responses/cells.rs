//! The cells of `responses` and the one request each makes: what the client sends, to whom,
//! and what the answer must hold for the request to count.

use std::time::Duration;

use anyhow::{Context as _, bail};
use serde::Serialize;
use serde_json::{Value, json};
use toolgate_testkit::fake_llm::{Request, Script, Turn};

use crate::latency::session::Session;

/// The model's name in every request (the fake answers any).
pub(crate) const MODEL: &str = "bench-model";
/// The fixture's label: `[servers.fx]`, and the prefix of its tools' names.
pub(crate) const SERVER: &str = "fx";
/// The tool the model calls, as the model sees it.
const TOOL: &str = "fx__echo";
/// Its arguments, and so the text the fixture echoes.
const ARGUMENTS: &str = r#"{"text":"hello"}"#;
const ECHOED: &str = "hello";
/// The user's message.
const PROMPT: &str = "Say hello through the echo tool.";
/// The model's final answer.
const ANSWER: &str = "The echo said hello.";
/// How long one HTTP request may take before the run fails.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// One way of asking the same model the same question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum, Serialize)]
pub(crate) enum CellKind {
    /// The fake's own `/v1/responses`: one model call, no gateway.
    #[value(name = "direct")]
    #[serde(rename = "direct")]
    Direct,
    /// toolgate's `/v1/responses`, no tools, `store: false`: one model call behind it.
    #[value(name = "toolgate")]
    #[serde(rename = "toolgate")]
    Toolgate,
    /// The same with `store: true`: the response written to SQLite.
    #[value(name = "toolgate+store")]
    #[serde(rename = "toolgate+store")]
    ToolgateStore,
    /// An application without the gateway: model call, its own MCP call, model call.
    #[value(name = "direct+mcp")]
    #[serde(rename = "direct+mcp")]
    DirectMcp,
    /// toolgate's `/v1/responses` with the fixture as a hosted MCP tool: two model calls and
    /// one MCP call through the gateway's pipeline.
    #[value(name = "toolgate+mcp")]
    #[serde(rename = "toolgate+mcp")]
    ToolgateMcp,
}

/// What is compared with what: each toolgate cell with the same work without the gateway,
/// and the stored response with the same one not stored.
pub(crate) const PAIRS: [(CellKind, CellKind); 4] = [
    (CellKind::Toolgate, CellKind::Direct),
    (CellKind::ToolgateStore, CellKind::Direct),
    (CellKind::ToolgateStore, CellKind::Toolgate),
    (CellKind::ToolgateMcp, CellKind::DirectMcp),
];

impl CellKind {
    pub(crate) const ALL: [CellKind; 5] = [
        CellKind::Direct,
        CellKind::Toolgate,
        CellKind::ToolgateStore,
        CellKind::DirectMcp,
        CellKind::ToolgateMcp,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            CellKind::Direct => "direct",
            CellKind::Toolgate => "toolgate",
            CellKind::ToolgateStore => "toolgate+store",
            CellKind::DirectMcp => "direct+mcp",
            CellKind::ToolgateMcp => "toolgate+mcp",
        }
    }

    /// Whether the request goes through toolgate.
    pub(crate) fn via_toolgate(self) -> bool {
        matches!(self, CellKind::Toolgate | CellKind::ToolgateStore | CellKind::ToolgateMcp)
    }

    /// Model calls one request makes.
    pub(crate) fn model_calls(self) -> usize {
        match self {
            CellKind::DirectMcp | CellKind::ToolgateMcp => 2,
            _ => 1,
        }
    }

    /// MCP tool calls one request makes.
    pub(crate) fn mcp_calls(self) -> usize {
        self.model_calls() - 1
    }

    /// What a request of this cell is, for the report.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            CellKind::Direct => "POST the fake's /v1/responses, no tools: 1 model call",
            CellKind::Toolgate => "POST toolgate's /v1/responses, no tools: 1 model call behind it",
            CellKind::ToolgateStore => "the same with store: true (written to SQLite)",
            CellKind::DirectMcp => {
                "the application alone: model call → its own MCP call (rmcp, stdio, kept open) \
                 → model call"
            }
            CellKind::ToolgateMcp => {
                "POST toolgate's /v1/responses with tools: [mcp fx, require_approval never]: 2 \
                 model calls and 1 MCP call through the pipeline"
            }
        }
    }
}

/// The model's script, by the request and nothing else (so that concurrent requests cannot
/// take each other's turns): offered `fx__echo` and no tool result yet → call it; otherwise
/// → a short text. Usage is given, so that the fake does not count tokens.
pub(crate) fn script() -> Script {
    Script::respond(|request: &Request| {
        let offered = request.tool_names().iter().any(|name| name == TOOL);
        if offered && request.tool_results().is_empty() {
            Turn::tool_call(TOOL, ARGUMENTS).with_usage(120, 12)
        } else {
            Turn::text(ANSWER).with_usage(140, 6)
        }
    })
}

/// Where each cell's requests go, and what the application of `direct+mcp` holds open.
pub(crate) struct Endpoints {
    /// Keeps its connections alive, shared by every caller.
    http: reqwest::Client,
    /// The fake's `/v1/responses`.
    fake: String,
    /// toolgate's `/v1/responses`.
    toolgate: String,
    /// `direct+mcp`'s own MCP client session to the fixture, and the fixture's tools as the
    /// Responses API's function tools (as toolgate offers them to the model).
    mcp: Option<(Session, Value)>,
}

impl Endpoints {
    pub(crate) fn new(fake: String, toolgate: String) -> anyhow::Result<Endpoints> {
        let http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .build()
            .context("cannot build an HTTP client")?;
        Ok(Endpoints { http, fake, toolgate, mcp: None })
    }

    /// Adds `direct+mcp`'s session: lists its tools once, as an application would at start.
    pub(crate) async fn with_mcp(mut self, session: Session) -> anyhow::Result<Endpoints> {
        let tools = session.tools().await?;
        let functions = tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "name": format!("{SERVER}__{}", tool.name),
                    "description": tool.description,
                    "parameters": Value::Object((*tool.input_schema).clone()),
                    "strict": false,
                })
            })
            .collect();
        self.mcp = Some((session, functions));
        Ok(self)
    }

    /// The session of `direct+mcp`, to close at the end.
    pub(crate) fn take_session(&mut self) -> Option<Session> {
        self.mcp.take().map(|(session, _)| session)
    }

    /// The pid of `direct+mcp`'s fixture.
    pub(crate) fn fixture_pid(&self) -> Option<u32> {
        self.mcp.as_ref().and_then(|(session, _)| session.pid())
    }

    /// Makes one request of `cell`; an answer that is not what the cell expects is an error.
    pub(crate) async fn request(&self, cell: CellKind) -> anyhow::Result<()> {
        let plain = json!({ "model": MODEL, "input": PROMPT, "store": false });
        match cell {
            CellKind::Direct => expect_answer(&self.post(&self.fake, &plain).await?),
            CellKind::Toolgate => expect_answer(&self.post(&self.toolgate, &plain).await?),
            CellKind::ToolgateStore => {
                let body = json!({ "model": MODEL, "input": PROMPT, "store": true });
                let response = self.post(&self.toolgate, &body).await?;
                if response["store"] != true {
                    bail!("not stored: {response}");
                }
                expect_answer(&response)
            }
            CellKind::ToolgateMcp => {
                let body = json!({
                    "model": MODEL, "input": PROMPT, "store": false,
                    "tools": [{ "type": "mcp", "server_label": SERVER,
                                "require_approval": "never" }],
                });
                let response = self.post(&self.toolgate, &body).await?;
                if kinds(&response) != ["mcp_list_tools", "mcp_call", "message"] {
                    bail!("not a listing, a call and an answer: {response}");
                }
                let call = &response["output"][1];
                if call["name"] != "echo" || !call["error"].is_null() || call["output"] != ECHOED {
                    bail!("the call did not echo: {call}");
                }
                expect_answer(&response)
            }
            CellKind::DirectMcp => self.application_loop().await,
        }
    }

    /// `direct+mcp`: what an application does without the gateway.
    async fn application_loop(&self) -> anyhow::Result<()> {
        let (session, functions) = self.mcp.as_ref().context("direct+mcp has its session")?;
        let first = json!({
            "model": MODEL, "input": PROMPT, "store": false, "tools": functions,
        });
        let response = self.post(&self.fake, &first).await?;
        let call = &response["output"][0];
        if kinds(&response) != ["function_call"] || call["name"] != TOOL {
            bail!("the model did not call {TOOL}: {response}");
        }
        let arguments: serde_json::Map<String, Value> =
            serde_json::from_str(call["arguments"].as_str().unwrap_or_default())
                .with_context(|| format!("the call's arguments: {call}"))?;
        let tool = TOOL.strip_prefix("fx__").unwrap_or(TOOL).to_owned();
        let params = rmcp::model::CallToolRequestParams::new(tool).with_arguments(arguments);
        let result = session.call_tool(params).await?;
        let text = result.content.first().and_then(|block| block.as_text()).map(|t| &t.text);
        if result.is_error == Some(true) || text.is_none_or(|text| text != ECHOED) {
            bail!("the fixture did not echo: {result:?}");
        }
        let second = json!({
            "model": MODEL, "store": false, "tools": functions,
            "input": [
                { "role": "user", "content": PROMPT },
                call,
                { "type": "function_call_output", "call_id": call["call_id"],
                  "output": text.map_or("", |t| t) },
            ],
        });
        expect_answer(&self.post(&self.fake, &second).await?)
    }

    /// POSTs `body` as JSON; the answer's body, which must be a completed response.
    async fn post(&self, url: &str, body: &Value) -> anyhow::Result<Value> {
        let response = self.http.post(url).json(body).send().await.context("no answer")?;
        let status = response.status();
        let text = response.text().await.context("the body")?;
        if !status.is_success() {
            bail!("{url} answered {status}: {text}");
        }
        let response: Value =
            serde_json::from_str(&text).with_context(|| format!("not JSON: {text}"))?;
        if response["status"] != "completed" {
            bail!("not completed: {response}");
        }
        Ok(response)
    }
}

/// The types of a response's output items.
fn kinds(response: &Value) -> Vec<&str> {
    response["output"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|item| item["type"].as_str().unwrap_or_default())
        .collect()
}

/// The response ends with the model's answer.
fn expect_answer(response: &Value) -> anyhow::Result<()> {
    let last = response["output"].as_array().and_then(|items| items.last());
    let text = last.and_then(|item| item["content"][0]["text"].as_str());
    if last.is_none_or(|item| item["type"] != "message") || text != Some(ANSWER) {
        bail!("no answer from the model: {response}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_gateway_cell_is_compared_with_the_same_work_without_the_gateway() {
        for cell in CellKind::ALL.into_iter().filter(|cell| cell.via_toolgate()) {
            let direct = PAIRS.iter().find(|(a, b)| *a == cell && !b.via_toolgate());
            let (_, baseline) = direct.unwrap_or_else(|| panic!("{cell:?} has no baseline"));
            assert_eq!(cell.model_calls(), baseline.model_calls(), "{cell:?}");
        }
        for (cell, baseline) in PAIRS {
            assert!(cell.via_toolgate() && cell != baseline, "{cell:?} vs {baseline:?}");
        }
    }

    #[test]
    fn an_answer_is_a_message_with_the_models_text() {
        let answered = json!({ "output": [
            { "type": "mcp_call" },
            { "type": "message", "content": [{ "type": "output_text", "text": ANSWER }] },
        ]});
        assert!(expect_answer(&answered).is_ok());
        assert_eq!(kinds(&answered), ["mcp_call", "message"]);
        let called = json!({ "output": [{ "type": "function_call", "name": TOOL }] });
        assert!(expect_answer(&called).is_err());
        assert!(expect_answer(&json!({})).is_err());
    }
}
