//! The proof that what the agent sends a model is what the providers' APIs define: the request
//! types of the official `openai` and `anthropic` Python SDKs (pinned in
//! `tests/deps/python/requirements.txt`) check every body the agent sent (`tests/sdk_requests.py`),
//! strictly: an unknown key or a value of another type fails.
//!
//! The agent runs real turns over the real providers (`toolgate_llm::provider`, HTTP) against
//! the fake LLM, which records every body; the tools are a stub host whose results hold text,
//! images (one of a type Anthropic does not take), errors, structured content, resources and
//! audio. Each dialect gets the same conversation: a user message with an image, under a
//! system prompt, with tools, a temperature and `max_tokens`; a turn with reasoning, text and
//! seven calls (empty, malformed and not-an-object arguments, an unknown tool, a failing one);
//! a turn with reasoning that must be given back (Anthropic: a signed `thinking` and a
//! `redacted_thinking` block; Responses: a `reasoning` item with `encrypted_content`; Chat: the
//! `reasoning_content` compatible servers take) and one more call; the answer; then a second
//! prompt. And a bare one: a user's text, nothing else.
//!
//! The checker is checked too: bodies spoiled with a misspelled key or a value of the wrong
//! type, at the top and deep inside, must each fail.
//!
//! Needs `TOOLGATE_TEST_PYTHON` (the venv of scripts/install-test-deps; scripts/test sets it),
//! or that venv in `tests/deps/`; without it the test fails, saying how to install it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolgate_agent::agent::{Agent, AgentSettings};
use toolgate_agent::host::{HostCall, Silent, ToolHost, ToolOutcome};
use toolgate_core::mcp;
use toolgate_llm::chat::{Message, Part};
use toolgate_llm::provider::{self, Dialect, ProviderConfig};
use toolgate_testkit::deps;
use toolgate_testkit::fake_llm::{self, FakeLlm, Script, Turn};

const KEY: &str = "sk-fake-requests";
/// A 1×1 PNG.
const PNG: &str = concat!(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9aw",
    "AAAABJRU5ErkJggg=="
);

/// The tools, and what each answers.
struct Host {
    tools: Vec<mcp::Tool>,
}

fn tool(name: &str, schema: Value) -> mcp::Tool {
    serde_json::from_value(json!({"name": name, "description": format!("The {name} tool."),
                                  "inputSchema": schema}))
    .expect("a tool")
}

fn result(value: Value) -> ToolOutcome {
    ToolOutcome::Done(serde_json::from_value(value).expect("a tool result"))
}

impl Host {
    fn with_tools() -> Arc<Host> {
        let object = json!({"type": "object"});
        let text = json!({"type": "object", "properties": {"text": {"type": "string"}},
                          "required": ["text"]});
        let tools = vec![
            tool("srv__echo", text),
            tool("srv__snapshot", object.clone()),
            tool("srv__photo", object.clone()),
            tool("srv__fail", object.clone()),
            tool("srv__report", object),
        ];
        Arc::new(Host { tools })
    }
}

impl ToolHost for Host {
    fn tools(&self) -> BoxFuture<'_, Vec<mcp::Tool>> {
        Box::pin(async move { self.tools.clone() })
    }

    fn call(&self, call: HostCall) -> BoxFuture<'_, ToolOutcome> {
        let outcome = match call.name.as_str() {
            "srv__echo" => {
                result(json!({"content": [{"type": "text", "text": call.arguments["text"]}]}))
            }
            // Text and two images, one of a type Anthropic does not take.
            "srv__snapshot" => result(json!({"content": [
                {"type": "text", "text": "Two pictures:"},
                {"type": "image", "data": PNG, "mimeType": "image/png"},
                {"type": "image", "data": "Qk0=", "mimeType": "image/bmp"},
            ]})),
            // An image alone.
            "srv__photo" => result(
                json!({"content": [{"type": "image", "data": PNG, "mimeType": "image/png"}]}),
            ),
            "srv__fail" => {
                result(json!({"content": [{"type": "text", "text": "disk full"}], "isError": true}))
            }
            // Structured content, a text resource, a link and audio.
            _ => result(json!({
                "content": [
                    {"type": "resource", "resource": {"uri": "file:///r.txt",
                                                      "mimeType": "text/plain", "text": "rows: 2"}},
                    {"type": "resource_link", "uri": "file:///big.csv", "name": "big.csv",
                     "description": "all rows"},
                    {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
                ],
                "structuredContent": {"rows": 2},
            })),
        };
        Box::pin(async move { outcome })
    }
}

/// The API's name as the checker knows it (its folder).
fn api(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::OpenaiChat => "chat",
        Dialect::OpenaiResponses => "responses",
        Dialect::Anthropic => "anthropic",
    }
}

/// One server-sent event as the providers write them.
fn event(data: &Value) -> String {
    format!("event: {}\ndata: {data}\n\n", data["type"].as_str().expect("a type"))
}

/// The second turn: reasoning the dialect wants back, and a call of `srv__report`.
fn reasoning_turn(dialect: Dialect) -> Turn {
    const THOUGHT: &str = "Now the report.";
    match dialect {
        Dialect::OpenaiChat => Turn::tool_call("srv__report", "{}").with_reasoning(THOUGHT),
        // The fake's reasoning items carry no `encrypted_content` unless asked: written here.
        Dialect::OpenaiResponses => {
            let reasoning = json!({"type": "reasoning", "id": "rs_1", "status": "completed",
                "summary": [{"type": "summary_text", "text": THOUGHT}],
                "encrypted_content": "gAAAA-opaque"});
            let call = json!({"type": "function_call", "id": "fc_1", "call_id": "call_report",
                              "name": "srv__report", "arguments": "{}", "status": "completed"});
            let events = [
                json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning}),
                json!({"type": "response.output_item.added", "output_index": 1, "item": call}),
                json!({"type": "response.output_item.done", "output_index": 1, "item": call}),
                json!({"type": "response.completed", "response": {"status": "completed",
                       "usage": {"input_tokens": 10, "output_tokens": 5}}}),
            ];
            Turn::raw(200, "text/event-stream", events.iter().map(event).collect::<String>())
        }
        // The fake writes no `redacted_thinking` block: written here, beside a signed one.
        Dialect::Anthropic => {
            let signature = fake_llm::anthropic::signature(THOUGHT);
            let events = [
                json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                       "role": "assistant", "content": [], "model": "m", "stop_reason": null,
                       "usage": {"input_tokens": 10, "output_tokens": 0}}}),
                json!({"type": "content_block_start", "index": 0,
                       "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
                json!({"type": "content_block_delta", "index": 0,
                       "delta": {"type": "thinking_delta", "thinking": THOUGHT}}),
                json!({"type": "content_block_delta", "index": 0,
                       "delta": {"type": "signature_delta", "signature": signature}}),
                json!({"type": "content_block_stop", "index": 0}),
                json!({"type": "content_block_start", "index": 1,
                       "content_block": {"type": "redacted_thinking", "data": "EmwKAhgB-opaque"}}),
                json!({"type": "content_block_stop", "index": 1}),
                json!({"type": "content_block_start", "index": 2, "content_block": {
                       "type": "tool_use", "id": "toolu_report", "name": "srv__report",
                       "input": {}}}),
                json!({"type": "content_block_delta", "index": 2,
                       "delta": {"type": "input_json_delta", "partial_json": "{}"}}),
                json!({"type": "content_block_stop", "index": 2}),
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                       "usage": {"output_tokens": 5}}),
                json!({"type": "message_stop"}),
            ];
            Turn::raw(200, "text/event-stream", events.iter().map(event).collect::<String>())
        }
    }
}

fn connect(fake: &FakeLlm, dialect: Dialect) -> Arc<dyn provider::Provider> {
    provider::connect(ProviderConfig {
        dialect,
        base_url: fake.base_url(),
        api_key: Some(KEY.to_owned()),
        max_retries: 0,
        idle_timeout: Duration::from_secs(30),
        proxy: Default::default(),
    })
    .expect("a provider")
}

async fn prompt(agent: &mut Agent, content: Vec<Part>) {
    let report = agent
        .prompt(Message::User { content }, Arc::new(Silent), CancellationToken::new())
        .await
        .expect("the prompt is answered");
    assert!(!report.answer.is_empty(), "{report:?}");
}

/// The bodies of the whole conversation in `dialect`, in order.
async fn conversation(dialect: Dialect) -> Vec<Value> {
    let first = Turn::tool_call("srv__echo", r#"{"text":"héllo wörld"}"#)
        .and_tool_call("srv__snapshot", "")
        .and_tool_call("srv__photo", "{}")
        .and_tool_call("srv__fail", "{}")
        .and_tool_call("srv__missing", "{}")
        .and_tool_call("srv__echo", r#"{"text": "#)
        .and_tool_call("srv__echo", "[1]")
        .with_text("Let me look.")
        .with_reasoning("L'utilisateur veut tout voir.");
    let fake = FakeLlm::start(Script::turns([
        first,
        reasoning_turn(dialect),
        Turn::text("Done."),
        Turn::text("You're welcome."),
    ]))
    .await
    .expect("the fake starts");
    let settings = AgentSettings {
        model: "test-model".into(),
        system: Some("You are terse.".into()),
        temperature: Some(0.5),
        max_tokens: Some(1000),
        max_turns: 5,
        tool_timeout: None,
        context_tokens: None,
    };
    let mut agent = Agent::new(connect(&fake, dialect), Host::with_tools(), settings);
    let image = Part::Image { mime_type: "image/png".into(), data: PNG.into() };
    prompt(&mut agent, vec![Part::text("What do you see?"), image]).await;
    prompt(&mut agent, vec![Part::text("Thanks!")]).await;
    let bodies: Vec<Value> = fake.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), 4, "{bodies:#?}");
    bodies
}

/// The body of a bare prompt in `dialect`: a user's text; no system prompt, tools or settings.
async fn bare(dialect: Dialect) -> Value {
    let fake = FakeLlm::start(Script::turns([Turn::text("Hi.")])).await.expect("the fake starts");
    let settings = AgentSettings {
        model: "test-model".into(),
        system: None,
        temperature: None,
        max_tokens: None,
        max_turns: 1,
        tool_timeout: None,
        context_tokens: None,
    };
    let host = Arc::new(Host { tools: Vec::new() });
    let mut agent = Agent::new(connect(&fake, dialect), host, settings);
    prompt(&mut agent, vec![Part::text("Hello")]).await;
    fake.requests().into_iter().next().expect("one request").body
}

/// That the conversation in `dialect` carried what it is meant to check, so that a change to
/// the agent or the fake cannot quietly make it check less.
fn assert_covers(dialect: Dialect, bodies: &[Value]) {
    let text = |n: usize| bodies[n].to_string();
    for piece in ["You are terse.", PNG, "srv__snapshot", "disk full", "There is no tool named"] {
        assert!(text(1).contains(piece), "{dialect:?} request 1 has {piece:?}: {}", text(1));
    }
    let given_back: &[&str] = match dialect {
        Dialect::OpenaiChat => &[r#""reasoning_content":"Now the report.""#],
        Dialect::OpenaiResponses => &[r#""encrypted_content":"gAAAA-opaque""#, r#""id":"rs_1""#],
        Dialect::Anthropic => &[r#""thinking":"Now the report.""#, r#""redacted_thinking""#],
    };
    for piece in given_back {
        assert!(text(2).contains(piece), "{dialect:?} request 2 has {piece}: {}", text(2));
    }
}

/// Runs the checker over `paths`: its exit success and its output.
#[track_caller]
fn check(paths: &[PathBuf]) -> (bool, String) {
    deps::run_python(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdk_requests.py"), paths)
}

/// Writes `body` as `dir/<api>/<name>.json`; its path.
fn write(dir: &Path, api: &str, name: &str, body: &Value) -> PathBuf {
    let folder = dir.join(api);
    std::fs::create_dir_all(&folder).expect("a folder");
    let path = folder.join(format!("{name}.json"));
    std::fs::write(&path, serde_json::to_string_pretty(body).expect("JSON")).expect("write");
    path
}

/// `body` spoiled four ways, each named by the key the checker must name: a misspelled key, at
/// the top and in the first tool's definition (pydantic alone drops unknown keys), a number as
/// a string (which pydantic alone coerces), and a number for the first tool's name.
fn spoiled(dialect: Dialect, body: &Value) -> Vec<(String, Value)> {
    let max_tokens = match dialect {
        Dialect::OpenaiResponses => "max_output_tokens",
        _ => "max_tokens",
    };
    let tool = match dialect {
        Dialect::OpenaiChat => "/tools/0/function",
        _ => "/tools/0",
    };
    let mut out = Vec::new();
    let mut spoil = |name: &str, change: &dyn Fn(&mut Value)| {
        let mut body = body.clone();
        change(&mut body);
        out.push((name.to_owned(), body));
    };
    spoil("temprature", &|body| {
        let value = body.as_object_mut().expect("an object").remove("temperature");
        body["temprature"] = value.expect("a temperature");
    });
    spoil(max_tokens, &|body| body[max_tokens] = json!("1000"));
    spoil("descripton", &|body| {
        let tool = body.pointer_mut(tool).and_then(Value::as_object_mut).expect("a tool");
        let value = tool.remove("description").expect("a description");
        tool.insert("descripton".into(), value);
    });
    spoil("name", &|body| *body.pointer_mut(&format!("{tool}/name")).expect("a name") = json!(7));
    out
}

#[tokio::test]
async fn every_body_the_agent_sends_is_valid_for_the_providers_sdks() {
    // The venv first: a missing one fails before the agent runs.
    deps::python();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sdk-requests");
    let _ = std::fs::remove_dir_all(&dir);

    let mut paths = Vec::new();
    let mut spoiled_paths = Vec::new();
    for dialect in [Dialect::OpenaiChat, Dialect::OpenaiResponses, Dialect::Anthropic] {
        let api = api(dialect);
        let bodies = conversation(dialect).await;
        assert_covers(dialect, &bodies);
        for (n, body) in bodies.iter().enumerate() {
            assert_eq!(body["stream"], true, "{api} request {n} streams");
            paths.push(write(&dir.join("sent"), api, &format!("conversation-{n}"), body));
        }
        paths.push(write(&dir.join("sent"), api, "bare", &bare(dialect).await));
        for (name, body) in spoiled(dialect, &bodies[1]) {
            spoiled_paths.push((name.clone(), write(&dir.join("spoiled"), api, &name, &body)));
        }
    }

    let (ok, output) = check(&paths);
    assert!(ok, "the SDK types refuse what the agent sent (in {}):\n{output}", dir.display());
    let summary = format!("{} bodies checked, 0 failed", paths.len());
    assert_eq!(output.lines().last(), Some(summary.as_str()), "{output}");
    // The fields sent beyond the SDK's types (see the checker), exactly where they belong:
    // DeepSeek's `reasoning_content` within the tool-use turn only (after the first turn's
    // results, before the answer), and Anthropic's `temperature` where it was set.
    let mut extended: Vec<&str> = output.lines().filter(|l| l.contains("(extensions: ")).collect();
    extended.sort_unstable();
    assert_eq!(
        extended,
        [
            "ok   anthropic/conversation-0.json (extensions: $.temperature)",
            "ok   anthropic/conversation-1.json (extensions: $.temperature)",
            "ok   anthropic/conversation-2.json (extensions: $.temperature)",
            "ok   anthropic/conversation-3.json (extensions: $.temperature)",
            "ok   chat/conversation-1.json (extensions: $.messages[2].reasoning_content)",
            "ok   chat/conversation-2.json (extensions: $.messages[2].reasoning_content, \
             $.messages[11].reasoning_content)",
        ],
        "{output}"
    );

    // The checker refuses each spoiled body, naming what was spoiled.
    let spoiled: Vec<PathBuf> = spoiled_paths.iter().map(|(_, path)| path.clone()).collect();
    let (ok, output) = check(&spoiled);
    assert!(!ok, "spoiled bodies passed:\n{output}");
    for (name, path) in &spoiled_paths {
        let file = path.file_name().expect("a name").to_string_lossy();
        let api = path.parent().and_then(Path::file_name).expect("a folder").to_string_lossy();
        let head = format!("FAIL {api}/{file}: ");
        let at = output.find(&head).unwrap_or_else(|| panic!("{api}/{file} passed:\n{output}"));
        // The failure's lines: up to the next body's or the summary.
        let said = output[at..].lines().skip(1).take_while(|line| line.starts_with(' '));
        let failure: Vec<&str> = output[at..].lines().take(1).chain(said).collect();
        assert!(failure.join("\n").contains(name.as_str()), "{name}?\n{}", failure.join("\n"));
    }
    let count = spoiled.len();
    assert!(output.ends_with(&format!("{count} bodies checked, {count} failed\n")), "{output}");
}
