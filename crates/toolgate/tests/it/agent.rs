//! `toolgate run` end to end: the real binary, the fake LLM (`toolgate_testkit::fake_llm`, on
//! 127.0.0.1) speaking each provider's wire format, and real upstreams (the fixture,
//! `server-filesystem`, `server-memory`). Every test checks what the model or the upstream
//! received, not only what `toolgate run` printed.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;
use tokio::process::Command;
use toolgate_testkit::fake_llm::{
    Dialect, FakeLlm, ProviderError, Quirk, Request, Script, SeenToolResult, Turn,
};

use crate::deps;
use crate::support::*;

/// The user the agent's principal names (`agent:<user>`).
const USER: &str = "tester";
/// The key every provider is given (in its own variable).
const KEY: &str = "sk-agent-it-7f3a";
/// Non-ASCII text the model sends through `fx__echo`.
const WORLD: &str = "héllo wörld ✓ — 日本語";

/// A temporary home (and working directory) for one `toolgate run`, with the fake model.
struct Agent {
    home: tempfile::TempDir,
    fake: FakeLlm,
}

impl Agent {
    async fn new(turns: impl IntoIterator<Item = Turn>) -> Agent {
        Agent::with_script(Script::turns(turns)).await
    }

    async fn with_script(script: Script) -> Agent {
        let home = tempfile::tempdir().expect("temp dir");
        let fake = FakeLlm::start(script).await.expect("the fake LLM starts");
        Agent { home, fake }
    }

    /// The home folder, canonical (macOS-style symlinked temp dirs compare equal).
    fn dir(&self) -> PathBuf {
        self.home.path().canonicalize().expect("canonical")
    }

    /// Writes `toolgate.toml` in the home folder; its path.
    fn config(&self, text: &str) -> PathBuf {
        let path = self.dir().join("toolgate.toml");
        std::fs::write(&path, text).expect("write the config");
        path
    }

    /// The sessions database of these tests.
    fn sessions(&self) -> PathBuf {
        self.dir().join("sessions.db")
    }

    /// `toolgate run --provider PROVIDER --model test-model --base-url FAKE ARGS`, in the home
    /// folder, with nothing of this machine's environment that would change the outcome.
    async fn run(&self, provider: &str, args: &[&str], stdin: Option<&str>) -> Output {
        let base_url = self.fake.base_url();
        let mut all = vec!["run", "--provider", provider, "--model", "test-model"];
        all.extend(["--base-url", &base_url]);
        all.extend(args);
        self.toolgate(&all, stdin).await
    }

    /// `toolgate ARGS` in the home folder.
    async fn toolgate(&self, args: &[&str], stdin: Option<&str>) -> Output {
        self.toolgate_with(args, stdin, &[]).await
    }

    /// The same, with `env` set too.
    async fn toolgate_with(
        &self,
        args: &[&str],
        stdin: Option<&str>,
        env: &[(&str, &str)],
    ) -> Output {
        let home = self.dir();
        let mut command = Command::new(toolgate_bin());
        command
            .args(args)
            .current_dir(&home)
            .env("HOME", &home)
            .env("XDG_DATA_HOME", home.join("data"))
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("USER", USER)
            .env("OPENAI_API_KEY", KEY)
            .env("ANTHROPIC_API_KEY", KEY)
            .env("DEEPSEEK_API_KEY", KEY)
            .env_remove("TOOLGATE_CONFIG")
            .env_remove("TOOLGATE_MODEL")
            .env_remove("TOOLGATE_MCP_CONFIG")
            .env_remove("TOOLGATE_LOG")
            .env_remove("RUST_LOG")
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        command.envs(env.iter().copied());
        let mut child = command.spawn().expect("spawn toolgate");
        if let Some(text) = stdin {
            let mut pipe = child.stdin.take().expect("stdin");
            pipe.write_all(text.as_bytes()).await.expect("write stdin");
            drop(pipe);
        }
        let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
            .await
            .expect("toolgate finishes in time")
            .expect("run toolgate");
        eprintln!(
            "[toolgate {}] exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
            args.join(" "),
            output.status.code(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// What the fake model received.
    fn requests(&self) -> Vec<Request> {
        self.fake.requests()
    }

    /// The audit log's records (`[audit] file = "audit.jsonl"`).
    fn audit(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.dir().join("audit.jsonl")).expect("the audit log");
        text.lines().map(|line| serde_json::from_str(line).expect("a JSON record")).collect()
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The fixture upstream as `fx`, and an audit log.
fn fixture_config(extra: &str) -> String {
    format!("{}\n[audit]\nfile = \"audit.jsonl\"\n\n{extra}", fixture_server("fx", "stdio", None))
}

/// The tool results of request `n` (0-based), failing clearly when there is none.
fn results_of(requests: &[Request], n: usize) -> Vec<SeenToolResult> {
    let request = requests.get(n).unwrap_or_else(|| panic!("no request {n}: {requests:#?}"));
    request.tool_results()
}

/// The text of the only tool result of request `n`.
fn only_result(requests: &[Request], n: usize) -> SeenToolResult {
    let results = results_of(requests, n);
    assert_eq!(results.len(), 1, "{results:#?}");
    results.into_iter().next().expect("one")
}

mod client;
mod io;
mod upstreams;

/// The fake's `host:port`, as the provider's errors name it.
fn host_of(agent: &Agent) -> String {
    agent.fake.addr().to_string()
}

// --- 1. each provider's dialect ----------------------------------------------------------

/// A tool call, then the final answer: the answer is on stdout, and the second request
/// replays the call and carries its result under the same id, in the dialect's own shape.
async fn tool_call_then_answer(provider: &str, dialect: Dialect, call_id: &str) -> Agent {
    let args = json!({ "text": WORLD }).to_string();
    let agent = Agent::new([
        Turn::tool_call("fx__echo", args.clone()).with_id(call_id).with_text("Let me echo."),
        Turn::text(format!("The echo said: {WORLD}")),
    ])
    .await;
    let config = agent.config(&fixture_config(""));
    let output = agent
        .run(provider, &["--no-save", "--config", &config.to_string_lossy(), "echo it"], None)
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    // Each turn's text, the piped answer's last line ended.
    assert_eq!(stdout(&output), format!("Let me echo.\nThe echo said: {WORLD}\n"));
    assert!(stderr(&output).contains("fx__echo"), "the call is shown: {}", stderr(&output));

    let requests = agent.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    for request in &requests {
        assert_eq!(request.dialect, dialect);
        assert_eq!(request.model(), Some("test-model"));
        assert!(request.stream(), "streamed");
        let key = match dialect {
            Dialect::Anthropic => request.header("x-api-key"),
            _ => request.bearer(),
        };
        assert_eq!(key, Some(KEY));
        let tools = request.tool_names();
        for tool in ["fx__echo", "fx__slow", "fx__test_sampling", "fx__list_roots"] {
            assert!(tools.iter().any(|t| t == tool), "{tool} offered: {tools:?}");
        }
    }
    assert_eq!(requests[0].last_user_text().as_deref(), Some("echo it"));
    assert!(requests[0].tool_results().is_empty());
    let replayed = requests[1].replayed_tool_calls();
    assert_eq!(replayed.len(), 1, "{replayed:?}");
    assert_eq!((replayed[0].id.as_str(), replayed[0].name.as_str()), (call_id, "fx__echo"));
    assert_eq!(replayed[0].arguments, json!({ "text": WORLD }));
    let result = only_result(&requests, 1);
    assert_eq!(
        result,
        SeenToolResult { call_id: call_id.into(), content: WORLD.into(), is_error: false }
    );
    agent
}

#[tokio::test]
async fn openai_chat_gets_the_tool_result_as_a_tool_message() {
    let agent = tool_call_then_answer("openai", Dialect::OpenaiChat, "call_Ab12").await;
    let body = &agent.requests()[1].body;
    let messages = body["messages"].as_array().expect("messages");
    let tool = messages.iter().find(|m| m["role"] == "tool").expect("a tool message");
    assert_eq!(tool["tool_call_id"], "call_Ab12");
    let assistant = messages.iter().find(|m| m["role"] == "assistant").expect("the call");
    assert_eq!(assistant["tool_calls"][0]["type"], "function");
    assert_eq!(assistant["tool_calls"][0]["function"]["name"], "fx__echo");
}

#[tokio::test]
async fn openai_responses_gets_a_function_call_output() {
    let agent =
        tool_call_then_answer("openai-responses", Dialect::OpenaiResponses, "call_R9").await;
    let body = &agent.requests()[1].body;
    let input = body["input"].as_array().expect("input items");
    let output = input.iter().find(|i| i["type"] == "function_call_output").expect("a call output");
    assert_eq!(output["call_id"], "call_R9");
    assert!(input.iter().any(|i| i["type"] == "function_call" && i["call_id"] == "call_R9"));
}

#[tokio::test]
async fn anthropic_gets_a_tool_result_block_in_a_user_message() {
    let id = "toolu_01XyZ";
    let agent = tool_call_then_answer("anthropic", Dialect::Anthropic, id).await;
    let requests = agent.requests();
    assert_eq!(requests[0].path, "/v1/messages");
    let body = &requests[1].body;
    let last = body["messages"].as_array().and_then(|m| m.last()).expect("messages");
    assert_eq!(last["role"], "user");
    assert_eq!(last["content"][0]["type"], "tool_result");
    assert_eq!(last["content"][0]["tool_use_id"], id);
    assert!(requests[1].header("anthropic-version").is_some(), "{:?}", requests[1].headers);
}

/// A compatible server with its quirks: both calls in one turn, written `quirks`; the
/// agent's results go back under the ids it replays (made up when the server gave none).
async fn compatible_with(quirks: &[Quirk], reasoning: Option<&str>) -> (Agent, Value) {
    let mut first = Turn::tool_call("fx__echo", json!({ "text": WORLD }).to_string())
        .and_tool_call("fx__test_simple_text", "{}")
        .with_usage(100, 20)
        .with_quirks(quirks.iter().copied());
    if let Some(reasoning) = reasoning {
        first = first.with_reasoning(reasoning);
    }
    let last = Turn::text(format!("Both done: {WORLD}"))
        .with_usage(150, 10)
        .with_quirks(quirks.iter().copied());
    let agent = Agent::new([first, last]).await;
    let config = agent.config(&fixture_config(""));
    let output = agent
        .run(
            "compatible",
            &["--json", "--no-save", "--config", &config.to_string_lossy(), "do both"],
            None,
        )
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let transcript: Value = serde_json::from_slice(&output.stdout).expect("a JSON transcript");
    assert_eq!(transcript["answer"], format!("Both done: {WORLD}"));
    assert_eq!(transcript["usage"]["input_tokens"], 250, "{transcript}");
    assert_eq!(transcript["usage"]["output_tokens"], 30, "{transcript}");

    let requests = agent.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    assert!(requests[0].bearer().is_none(), "a compatible server without api_key_env gets no key");
    let replayed = requests[1].replayed_tool_calls();
    let names: Vec<&str> = replayed.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["fx__echo", "fx__test_simple_text"]);
    assert_eq!(replayed[0].arguments, json!({ "text": WORLD }), "whole UTF-8 arguments");
    assert!(!replayed[0].id.is_empty() && replayed[0].id != replayed[1].id, "{replayed:?}");
    let results = results_of(&requests, 1);
    assert_eq!(results.len(), 2, "{results:#?}");
    assert_eq!(
        (results[0].call_id.as_str(), results[0].content.as_str()),
        (replayed[0].id.as_str(), WORLD)
    );
    assert_eq!(results[1].call_id, replayed[1].id);
    assert!(
        results[1].content.contains("simple text"),
        "empty arguments called the tool: {results:?}"
    );
    (agent, transcript)
}

#[tokio::test]
async fn a_compatible_server_with_every_quirk_at_once() {
    let quirks = [
        Quirk::WholeCallInOneChunk,
        Quirk::SplitUtf8,
        Quirk::NoCallIds,
        Quirk::EmptyArguments,
        Quirk::ReasoningField,
        Quirk::UsageInLastChunk,
        Quirk::DataWithoutSpace,
        Quirk::NoDone,
    ];
    let (_agent, transcript) = compatible_with(&quirks, Some("Thinking about ünïcode.")).await;
    let assistant = &transcript["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    assert!(
        assistant.to_string().contains("Thinking about ünïcode."),
        "the reasoning is kept: {assistant}"
    );
}

#[tokio::test]
async fn a_compatible_server_streaming_arguments_split_inside_characters() {
    compatible_with(&[Quirk::SplitUtf8, Quirk::RepeatIdAndName, Quirk::EmptyArguments], None).await;
}

#[tokio::test]
async fn deepseek_gets_its_reasoning_back_within_the_tool_use_turn() {
    // DeepSeek's reasoner streams `reasoning_content` and wants it back on the assistant
    // message of a tool-use turn that is still going on.
    let agent = Agent::new([
        Turn::tool_call("fx__echo", json!({"text": "x"}).to_string())
            .with_id("call_r1")
            .with_reasoning("First I echo."),
        Turn::text("Echoed."),
    ])
    .await;
    let config = agent.config(&fixture_config(""));
    let output = agent
        .run("deepseek", &["--no-save", "--config", &config.to_string_lossy(), "think"], None)
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("First I echo."), "reasoning shown: {}", stderr(&output));
    assert_eq!(stdout(&output), "Echoed.\n", "reasoning is not the answer");
    let requests = agent.requests();
    let assistant = requests[1].body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["role"] == "assistant")
        .cloned()
        .expect("the assistant turn replayed");
    assert_eq!(assistant["reasoning_content"], "First I echo.", "{assistant}");
    assert_eq!(assistant["tool_calls"][0]["id"], "call_r1", "{assistant}");
}
