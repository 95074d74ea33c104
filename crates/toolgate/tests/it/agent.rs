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

// --- 2. real upstreams, parallel calls --------------------------------------------------

/// A temporary folder served by `server-filesystem` as `files`, holding `note.txt`.
fn filesystem_config(root: &Path, extra: &str) -> String {
    let server =
        deps::npm_stdio_server("files", "mcp-server-filesystem", &[&root.to_string_lossy()], &[]);
    format!("{server}\n[audit]\nfile = \"audit.jsonl\"\n\n{extra}")
}

#[tokio::test]
async fn server_filesystem_lists_and_reads_and_the_content_reaches_the_model() {
    let root = tempfile::tempdir().expect("temp dir");
    let root = root.path().canonicalize().expect("canonical");
    std::fs::write(root.join("note.txt"), "the kettle is on — ça chauffe").expect("write");
    let root_text = root.to_string_lossy().into_owned();
    let note = root.join("note.txt").to_string_lossy().into_owned();
    let agent = Agent::new([
        Turn::tool_call("files__list_directory", json!({ "path": root_text }).to_string()),
        Turn::tool_call("files__read_text_file", json!({ "path": note }).to_string()),
        Turn::text("The note says the kettle is on."),
    ])
    .await;
    let config = agent.config(&filesystem_config(&root, ""));
    let output = agent
        .run("openai", &["--no-save", "--config", &config.to_string_lossy(), "read my note"], None)
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("The note says the kettle is on."));

    let requests = agent.requests();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    let listed = only_result(&requests, 1);
    assert!(listed.content.contains("[FILE] note.txt"), "{listed:?}");
    let read = &results_of(&requests, 2)[1];
    assert!(read.content.contains("the kettle is on — ça chauffe"), "{read:?}");
    assert!(requests[2].tool_names().iter().any(|t| t == "files__write_file"));
}

#[tokio::test]
async fn server_memory_keeps_what_one_turn_created_for_the_next() {
    let agent = Agent::new([
        Turn::tool_call(
            "mem__create_entities",
            json!({"entities": [{"name": "toolgate", "entityType": "project",
                                 "observations": ["gates tools for agents"]}]})
            .to_string(),
        )
        .with_id("call_create"),
        Turn::tool_call("mem__read_graph", "{}").with_id("call_read"),
        Turn::text("toolgate gates tools."),
    ])
    .await;
    let memory = agent.dir().join("memory.jsonl");
    let server = deps::npm_stdio_server(
        "mem",
        "mcp-server-memory",
        &[],
        &[("MEMORY_FILE_PATH", &memory.to_string_lossy())],
    );
    let config = agent.config(&server);
    let output = agent
        .run("anthropic", &["--no-save", "--config", &config.to_string_lossy(), "remember"], None)
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = agent.requests();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    let created = only_result(&requests, 1);
    assert_eq!(created.call_id, "call_create");
    assert!(!created.is_error, "{created:?}");
    let graph = results_of(&requests, 2).into_iter().find(|r| r.call_id == "call_read");
    let graph = graph.expect("the read_graph result");
    assert!(graph.content.contains("gates tools for agents"), "{graph:?}");
    assert!(std::fs::read_to_string(&memory).expect("the memory file").contains("toolgate"));
}

#[tokio::test]
async fn parallel_calls_run_together_and_their_results_keep_the_calls_order() {
    let agent = Agent::new([
        Turn::tool_call("fx__slow", json!({"steps": 3, "step_ms": 100}).to_string())
            .with_id("call_slow")
            .and_tool_call("fx__echo", json!({"text": "quick"}).to_string())
            .with_id("call_quick"),
        Turn::text("Both answered."),
    ])
    .await;
    let config = agent.config(&fixture_config(""));
    let output = agent
        .run("openai", &["--no-save", "--config", &config.to_string_lossy(), "both"], None)
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let results = results_of(&agent.requests(), 1);
    let got: Vec<(&str, &str)> =
        results.iter().map(|r| (r.call_id.as_str(), r.content.as_str())).collect();
    assert_eq!(got, [("call_slow", "done 3"), ("call_quick", "quick")]);

    // In parallel: the quick call started and finished while the slow one ran.
    let audit = agent.audit();
    let position = |kind: &str, tool: &str| {
        audit
            .iter()
            .position(|r| r["kind"] == kind && r["tool"] == tool)
            .unwrap_or_else(|| panic!("no {kind} of {tool}: {audit:#?}"))
    };
    assert!(
        position("tools/call/finished", "echo") < position("tools/call/finished", "slow"),
        "{audit:#?}"
    );
    assert!(position("tools/call/started", "slow") < position("tools/call/finished", "echo"));
}

// --- 3. the pipeline applies --------------------------------------------------------------

#[tokio::test]
async fn the_policy_refuses_and_asks_nobody_and_the_audit_names_the_agent() {
    let root = tempfile::tempdir().expect("temp dir");
    let root = root.path().canonicalize().expect("canonical");
    let denied = root.join("denied.txt");
    let asked = root.join("asked");
    let policy = "[[pipeline]]\nkind = \"policy\"\ndefault = \"allow\"\n\
        rules = [\n  { tools = [\"write_file\"], when = { path = \"path\", matches = \"denied\" }, \
        decision = \"deny\", reason = \"read-only here\" },\n  \
        { tools = [\"move_file\"], decision = \"deny\" },\n  \
        { tools = [\"create_directory\"], decision = \"ask\", reason = \"it changes the disk\" },\n]\n";
    let agent = Agent::new([
        Turn::tool_call(
            "files__write_file",
            json!({"path": denied.to_string_lossy(), "content": "should not be"}).to_string(),
        )
        .with_id("call_write")
        .and_tool_call(
            "files__create_directory",
            json!({"path": asked.to_string_lossy()}).to_string(),
        )
        .with_id("call_mkdir"),
        Turn::text("I was not allowed to."),
    ])
    .await;
    let config = agent.config(&filesystem_config(&root, policy));
    let output = agent
        .run("openai", &["--no-save", "--config", &config.to_string_lossy(), "write"], None)
        .await;
    assert!(output.status.success(), "the conversation goes on: {}", stderr(&output));
    assert!(stdout(&output).contains("I was not allowed to."), "{}", stdout(&output));
    assert!(!denied.exists(), "the denied call wrote {}", denied.display());
    assert!(!asked.exists(), "the unapproved call made {}", asked.display());

    let results = results_of(&agent.requests(), 1);
    assert_eq!(results.len(), 2, "{results:#?}");
    assert_eq!(results[0].call_id, "call_write");
    assert!(results[0].content.contains("refused by policy"), "{results:#?}");
    assert!(results[0].content.contains("read-only here"), "{results:#?}");
    assert_eq!(results[1].call_id, "call_mkdir");
    // Without a terminal nobody can approve: refused, saying so.
    assert!(results[1].content.contains("needs a person's approval"), "{results:#?}");
    assert!(results[1].content.contains("it changes the disk"), "{results:#?}");
    assert!(
        results[1].content.contains("nobody can be asked: the agent has no terminal"),
        "{results:#?}"
    );
    // A tool denied whatever its arguments is not offered; one denied by its arguments is.
    let offered = agent.requests()[0].tool_names();
    assert!(offered.iter().any(|t| t == "files__write_file"), "{offered:?}");
    assert!(!offered.iter().any(|t| t == "files__move_file"), "{offered:?}");

    let audit = agent.audit();
    let calls: Vec<&Value> = audit
        .iter()
        .filter(|r| r["kind"].as_str().is_some_and(|k| k.starts_with("tools/call")))
        .collect();
    let write = calls
        .iter()
        .find(|r| r["tool"] == "write_file")
        .unwrap_or_else(|| panic!("the refused call is audited: {audit:#?}"));
    assert_eq!(write["principal"], format!("agent:{USER}"), "{write}");
    assert!(
        !audit.iter().any(|r| r["kind"] == "tools/call/finished" && r["tool"] == "write_file"),
        "the upstream never ran it: {audit:#?}"
    );
}

// --- 4. errors ----------------------------------------------------------------------------

/// The fake's `host:port`, as the provider's errors name it.
fn host_of(agent: &Agent) -> String {
    agent.fake.addr().to_string()
}

#[tokio::test]
async fn a_rate_limit_is_retried_after_the_wait_the_provider_asks_for() {
    let agent = Agent::new([
        Turn::error(ProviderError::for_status(429).with_retry_after(1)),
        Turn::text("Answered after the wait."),
    ])
    .await;
    let started = tokio::time::Instant::now();
    let output = agent.run("openai", &["--no-save", "hello"], None).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(started.elapsed() >= Duration::from_secs(1), "Retry-After: 1 was honoured");
    assert_eq!(stdout(&output).trim(), "Answered after the wait.");
    let notice = stderr(&output);
    assert!(notice.contains("try 1 failed"), "{notice}");
    assert!(notice.contains("429"), "{notice}");
    assert!(notice.contains("trying again in 1s"), "{notice}");
    let requests = agent.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    assert_eq!(requests[0].body, requests[1].body, "the same request again");
}

#[tokio::test]
async fn a_provider_failing_every_try_exits_1_naming_the_host_and_the_status() {
    let failure = || {
        Turn::error(
            ProviderError::for_status(500).with_message("the fake is down").with_retry_after(0),
        )
    };
    let agent = Agent::new([failure(), failure(), failure(), failure()]).await;
    let output = agent.run("anthropic", &["--no-save", "hello"], None).await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stdout(&output).is_empty(), "{}", stdout(&output));
    let said = stderr(&output);
    let last = said.lines().last().unwrap_or_default();
    assert!(last.contains(&host_of(&agent)), "names the host: {said}");
    assert!(last.contains("500"), "names the status: {said}");
    assert!(last.contains("the fake is down"), "gives the provider's message: {said}");
    assert!(!said.contains(KEY), "never the key: {said}");
    assert_eq!(agent.requests().len(), 4, "one try and three retries");
}

#[tokio::test]
async fn malformed_arguments_and_unknown_tools_get_error_results_and_the_talk_goes_on() {
    let agent = Agent::new([
        Turn::tool_call("fx__echo", r#"{"text": "unterminated"#)
            .with_id("call_bad")
            .and_tool_call("fx__no_such_tool", "{}")
            .with_id("call_unknown")
            .and_tool_call("fx__echo", "[1, 2]")
            .with_id("call_array"),
        Turn::tool_call("fx__echo", json!({"text": "fixed"}).to_string()).with_id("call_fixed"),
        Turn::text("Fixed it."),
    ])
    .await;
    let config = agent.config(&fixture_config(""));
    let output = agent
        .run("anthropic", &["--no-save", "--config", &config.to_string_lossy(), "go"], None)
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output).trim(), "Fixed it.");
    let requests = agent.requests();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    let results = results_of(&requests, 1);
    let ids: Vec<&str> = results.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(ids, ["call_bad", "call_unknown", "call_array"]);
    assert!(results.iter().all(|r| r.is_error), "Anthropic's is_error is set: {results:#?}");
    assert!(results[0].content.contains("not made"), "{results:#?}");
    assert!(results[0].content.to_lowercase().contains("json"), "names the problem: {results:#?}");
    assert!(results[1].content.contains("no tool named fx__no_such_tool"), "{results:#?}");
    assert!(results[2].content.contains("not made"), "not an object: {results:#?}");
    let fixed = results_of(&requests, 2).into_iter().find(|r| r.call_id == "call_fixed");
    assert_eq!(fixed.map(|r| (r.content, r.is_error)), Some(("fixed".into(), false)));
    // Only the good call reached the upstream.
    let started: Vec<Value> =
        agent.audit().into_iter().filter(|r| r["kind"] == "tools/call/started").collect();
    assert_eq!(started.len(), 1, "{started:#?}");
}

/// One step of 10 s and no progress before it ends (progress would restart the timeout).
#[tokio::test]
async fn a_tool_over_its_timeout_gets_a_timed_out_result() {
    let agent = Agent::new([
        Turn::tool_call("fx__slow", json!({"steps": 1, "step_ms": 10_000}).to_string())
            .with_id("call_slow"),
        Turn::text("It took too long."),
    ])
    .await;
    let config = agent.config(&fixture_config("[agent]\ntool_timeout = \"300ms\"\n"));
    let output = agent
        .run("openai", &["--no-save", "--config", &config.to_string_lossy(), "wait"], None)
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let result = only_result(&agent.requests(), 1);
    assert_eq!(result.call_id, "call_slow");
    assert!(result.content.contains("timed out"), "{result:?}");
    assert!(stderr(&output).contains("timed out"), "{}", stderr(&output));
}

#[tokio::test]
async fn a_server_timeout_applies_to_the_agent_calls_too() {
    let agent = Agent::new([
        Turn::tool_call("fx__slow", json!({"steps": 1, "step_ms": 10_000}).to_string()),
        Turn::text("It took too long."),
    ])
    .await;
    let config =
        agent.config(&format!("{}timeout = \"300ms\"\n", fixture_server("fx", "stdio", None)));
    let output = agent
        .run("deepseek", &["--no-save", "--config", &config.to_string_lossy(), "wait"], None)
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let result = only_result(&agent.requests(), 1);
    assert!(result.content.contains("timed out"), "{result:?}");
}

#[tokio::test]
async fn the_turn_limit_stops_a_model_that_keeps_calling_tools() {
    let agent = Agent::with_script(Script::always(Turn::tool_call(
        "fx__echo",
        json!({"text": "again"}).to_string(),
    )))
    .await;
    let config = agent.config(&fixture_config(""));
    let output = agent
        .run(
            "openai",
            &["--no-save", "--max-turns", "3", "--config", &config.to_string_lossy(), "loop"],
            None,
        )
        .await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("stopped after 3 model turns without a final answer"),
        "{}",
        stderr(&output)
    );
    let requests = agent.requests();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    assert_eq!(results_of(&requests, 2).len(), 2, "every call answered before the next turn");
}

// --- 5. --json, stdin, --mcp-config, plain chat, [agent] ---------------------------------

/// No flags: provider, base URL and key variable from `[agent]`, the model from
/// `TOOLGATE_MODEL` over the config's.
#[tokio::test]
async fn the_agent_table_and_toolgate_model_choose_the_model() {
    let agent = Agent::new([Turn::text("Configured.")]).await;
    let config = agent.config(&format!(
        "[agent]\nprovider = \"compatible\"\nbase_url = {}\nmodel = \"from-config\"\n\
         api_key_env = \"LOCAL_LLM_KEY\"\nsystem = \"Be terse.\"\n",
        toml_str(&agent.fake.base_url())
    ));
    let env = [("LOCAL_LLM_KEY", "local-key-1"), ("TOOLGATE_MODEL", "from-env")];
    let args = ["run", "--no-save", "--config", &config.to_string_lossy(), "hello"];
    let output = agent.toolgate_with(&args, None, &env).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "Configured.\n");
    let requests = agent.requests();
    assert_eq!(requests[0].model(), Some("from-env"));
    assert_eq!(requests[0].bearer(), Some("local-key-1"));
    let messages = requests[0].messages();
    assert_eq!((messages[0].role.as_str(), messages[0].content.as_str()), ("system", "Be terse."));
}

#[tokio::test]
async fn a_prompt_argument_with_a_socket_for_stdin_that_never_closes_does_not_wait_for_it() {
    // As under `ssh host toolgate run "..."`: stdin is open and nobody writes to it.
    let agent = Agent::new([Turn::text("Answered.")]).await;
    let (kept_open, stdin) = std::os::unix::net::UnixStream::pair().expect("a socket pair");
    let home = agent.dir();
    let base_url = agent.fake.base_url();
    let child = Command::new(toolgate_bin())
        .args(["run", "--provider", "compatible", "--model", "test-model", "--no-save"])
        .args(["--base-url", &base_url, "only the argument"])
        .current_dir(&home)
        .env("HOME", &home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env_remove("TOOLGATE_CONFIG")
        .env_remove("TOOLGATE_MCP_CONFIG")
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(stdin)))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn toolgate");
    let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("toolgate does not wait for a stdin nobody closes")
        .expect("run toolgate");
    drop(kept_open);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "Answered.\n");
    assert_eq!(agent.requests()[0].last_user_text().as_deref(), Some("only the argument"));
}

#[tokio::test]
async fn the_json_transcript_of_a_prompt_read_from_stdin() {
    let agent = Agent::new([
        Turn::tool_call("fx__echo", json!({"text": WORLD}).to_string())
            .with_id("call_j")
            .with_usage(40, 8),
        Turn::text("Echoed.").with_usage(60, 3),
    ])
    .await;
    let config = agent.config(&fixture_config(""));
    let prompt = "Echo this, please:\nline two — ünïcode\n";
    let output = agent
        .run(
            "openai",
            &["--json", "--no-save", "--config", &config.to_string_lossy()],
            Some(prompt),
        )
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let transcript: Value = serde_json::from_slice(&output.stdout).expect("stdout is the JSON");
    assert_eq!(transcript["status"], "answered");
    assert_eq!(transcript["error"], Value::Null);
    assert_eq!(transcript["answer"], "Echoed.");
    assert_eq!(transcript["provider"], "openai");
    assert_eq!(transcript["model"], "test-model");
    assert_eq!(transcript["turns"], 2);
    assert_eq!(transcript["tool_calls"], 1);
    assert_eq!(transcript["usage"]["input_tokens"], 100);
    assert_eq!(transcript["usage"]["output_tokens"], 11);
    let messages = transcript["messages"].as_array().expect("messages");
    let roles: Vec<&str> = messages.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "tool_result", "assistant"]);
    assert_eq!(messages[0]["content"][0]["text"], prompt);
    assert_eq!(messages[1]["tool_calls"][0]["id"], "call_j");
    assert_eq!(messages[1]["tool_calls"][0]["name"], "fx__echo");
    assert_eq!(messages[2]["call_id"], "call_j");
    assert_eq!(messages[2]["content"][0]["text"], WORLD);
    assert_eq!(messages[2]["is_error"], false);
    assert_eq!(agent.requests()[0].last_user_text().as_deref(), Some(prompt));
}

#[tokio::test]
async fn a_failed_prompt_in_json_says_failed_and_exits_1() {
    let agent = Agent::new([Turn::error(ProviderError::for_status(401))]).await;
    let output = agent.run("openai", &["--json", "--no-save", "hello"], None).await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let transcript: Value = serde_json::from_slice(&output.stdout).expect("stdout is the JSON");
    assert_eq!(transcript["status"], "failed");
    let error = transcript["error"].as_str().expect("an error");
    assert!(error.contains("401") && error.contains(&host_of(&agent)), "{error}");
    assert_eq!(transcript["answer"], Value::Null);
    assert_eq!(agent.requests().len(), 1, "401 is not retried");
}

#[tokio::test]
async fn servers_from_a_claude_desktop_file_without_any_toolgate_toml() {
    let agent = Agent::new([
        Turn::tool_call("desk__echo", json!({"text": "from the desktop file"}).to_string()),
        Turn::text("Done."),
    ])
    .await;
    let file = agent.dir().join("claude_desktop_config.json");
    let desktop = json!({"mcpServers": {"desk": {"command": fixture_bin(), "args": []}}});
    std::fs::write(&file, desktop.to_string()).expect("write the desktop file");
    let output = agent
        .run("openai", &["--no-save", "--mcp-config", &file.to_string_lossy(), "go"], None)
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = agent.requests();
    assert!(
        requests[0].tool_names().iter().any(|t| t == "desk__echo"),
        "{:?}",
        requests[0].tool_names()
    );
    assert_eq!(only_result(&requests, 1).content, "from the desktop file");
}

#[tokio::test]
async fn with_no_config_and_no_servers_it_is_a_plain_chat() {
    let agent = Agent::new([Turn::text("Just talking. Ünïcode too.")]).await;
    let output = agent.run("anthropic", &["--no-save", "hi there"], None).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "Just talking. Ünïcode too.\n", "the answer alone on stdout");
    let requests = agent.requests();
    assert_eq!(requests.len(), 1);
    assert!(requests[0].tool_names().is_empty(), "no tools: {:?}", requests[0].body);
    assert_eq!(requests[0].last_user_text().as_deref(), Some("hi there"));
    assert!(!agent.dir().join("data").exists(), "--no-save wrote nothing");
}

// --- 6. the MCP client: sampling, roots, elicitation, progress ------------------------------

#[tokio::test]
async fn sampling_is_answered_by_the_agent_model_with_allow_sampling() {
    let agent = Agent::new([
        Turn::tool_call("fx__test_sampling", json!({"prompt": "What is 2+2?"}).to_string())
            .with_id("call_s"),
        Turn::text("Four."),
        Turn::text("The server's model said four."),
    ])
    .await;
    let config = agent.config(&fixture_config(""));
    let output = agent
        .run(
            "anthropic",
            &["--no-save", "--allow-sampling", "--config", &config.to_string_lossy(), "sample"],
            None,
        )
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("allowed by --allow-sampling"), "{}", stderr(&output));
    let requests = agent.requests();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    let sampling = &requests[1];
    assert_eq!(sampling.last_user_text().as_deref(), Some("What is 2+2?"));
    assert!(sampling.tool_names().is_empty(), "a sampling request offers no tools");
    assert!(sampling.tool_results().is_empty());
    assert_eq!(sampling.body["max_tokens"], 100, "the server's maxTokens");
    let result = only_result(&requests, 2);
    assert_eq!(result.call_id, "call_s");
    assert_eq!(result.content, "LLM response: Four.");
}

#[tokio::test]
async fn sampling_without_a_terminal_or_the_flag_is_refused() {
    let agent = Agent::new([
        Turn::tool_call("fx__test_sampling", json!({"prompt": "What is 2+2?"}).to_string()),
        Turn::text("It was refused."),
    ])
    .await;
    let config = agent.config(&fixture_config(""));
    let output = agent
        .run("openai", &["--no-save", "--config", &config.to_string_lossy(), "sample"], None)
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = agent.requests();
    assert_eq!(requests.len(), 2, "the model was not asked for the server: {requests:#?}");
    let result = only_result(&requests, 1);
    assert!(!result.content.contains("LLM response"), "{result:?}");
    assert!(result.content.contains("sampling"), "says what was refused: {result:?}");
    assert!(result.content.contains("nobody could be asked"), "and why: {result:?}");
    assert!(result.content.contains("--allow-sampling"), "and what allows it: {result:?}");
}

#[tokio::test]
async fn roots_elicitation_and_progress_as_a_client_without_a_terminal() {
    let extra = tempfile::tempdir().expect("temp dir");
    let extra = extra.path().canonicalize().expect("canonical").join("a dir");
    std::fs::create_dir(&extra).expect("mkdir");
    // One at a time: on stdio, a server's request is matched to the only call in flight.
    let agent = Agent::new([
        Turn::tool_call("fx__list_roots", "{}").with_id("call_roots"),
        Turn::tool_call("fx__test_elicitation", json!({"message": "Who are you?"}).to_string())
            .with_id("call_form"),
        Turn::tool_call("fx__test_tool_with_progress", "{}")
            .with_id("call_progress")
            .and_tool_call("fx__echo", json!({"text": "alongside"}).to_string())
            .with_id("call_echo"),
        Turn::text("Done."),
    ])
    .await;
    let config = agent.config(&fixture_config(""));
    let output = agent
        .run(
            "openai-responses",
            &[
                "--no-save",
                "--root",
                &extra.to_string_lossy(),
                "--config",
                &config.to_string_lossy(),
                "client things",
            ],
            None,
        )
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = agent.requests();
    assert_eq!(requests.len(), 4, "{requests:#?}");
    let roots = only_result(&requests, 1);
    let form = results_of(&requests, 2).into_iter().find(|r| r.call_id == "call_form");
    let form = form.expect("the form's result");
    let last = results_of(&requests, 3);
    let progress = last.iter().find(|r| r.call_id == "call_progress").expect("progress result");

    assert_eq!(roots.call_id, "call_roots");
    let roots: Value = serde_json::from_str(&roots.content).expect("roots as JSON");
    let uris: Vec<&str> = roots["roots"]
        .as_array()
        .expect("roots")
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    let cwd = format!("file://{}", agent.dir().to_string_lossy());
    let extra_uri = format!("file://{}", extra.to_string_lossy().replace(' ', "%20"));
    assert_eq!(uris, [cwd.as_str(), extra_uri.as_str()], "{roots}");

    assert!(form.content.to_lowercase().contains("decline"), "{form:?}");
    assert_eq!(progress.content, "Progress test completed");
}

#[tokio::test]
async fn a_server_asking_during_parallel_calls_of_the_agent_is_answered() {
    // Two calls in flight on one stdio server: its `roots/list` cannot say which call it
    // belongs to, and both are the agent's, so either answers it.
    let agent = Agent::new([
        Turn::tool_call("fx__list_roots", "{}")
            .with_id("call_a")
            .and_tool_call("fx__list_roots", "{}")
            .with_id("call_b")
            .and_tool_call("fx__slow", json!({"steps": 2, "step_ms": 50}).to_string())
            .with_id("call_slow"),
        Turn::text("Done."),
    ])
    .await;
    let config = agent.config(&fixture_config(""));
    let output = agent
        .run("openai", &["--no-save", "--config", &config.to_string_lossy(), "roots twice"], None)
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let results = results_of(&agent.requests(), 1);
    let cwd = format!("file://{}", agent.dir().to_string_lossy());
    for id in ["call_a", "call_b"] {
        let result = results.iter().find(|r| r.call_id == id).expect("each call's result");
        assert!(result.content.contains(&cwd), "{id} got the roots: {result:?}");
    }
}

// --- 7. sessions ---------------------------------------------------------------------------

#[tokio::test]
async fn a_run_is_stored_and_listed_shown_and_exported() {
    let agent = Agent::new([
        Turn::tool_call("fx__echo", json!({"text": WORLD}).to_string())
            .with_id("call_kept")
            .with_usage(30, 5),
        Turn::text("Stored answer.").with_usage(50, 4),
    ])
    .await;
    let config = agent.config(&fixture_config(""));
    let sessions = agent.sessions();
    let sessions = sessions.to_string_lossy().into_owned();
    let output = agent
        .run(
            "openai",
            &["--sessions", &sessions, "--config", &config.to_string_lossy(), "keep this"],
            None,
        )
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!agent.dir().join("data").exists(), "--sessions: nothing in the data folder");

    let listed =
        agent.toolgate(&["sessions", "list", "--json", "--sessions", &sessions], None).await;
    assert!(listed.status.success(), "{}", stderr(&listed));
    let list: Value = serde_json::from_slice(&listed.stdout).expect("JSON list");
    let rows = list.as_array().expect("an array");
    assert_eq!(rows.len(), 1, "{list}");
    let row = &rows[0];
    assert_eq!(row["messages"], 4, "{row}");
    assert_eq!(row["tool_calls"], 1, "{row}");
    assert_eq!(row["usage"]["input_tokens"], 80, "{row}");
    assert_eq!(row["usage"]["output_tokens"], 9, "{row}");
    assert_eq!((&row["provider"], &row["model"]), (&json!("openai"), &json!("test-model")));
    assert_eq!(row["title"], "keep this", "{row}");
    let id = row["id"].as_str().expect("an id").to_owned();

    let exported = agent
        .toolgate(&["sessions", "export", &id, "--format", "json", "--sessions", &sessions], None)
        .await;
    assert!(exported.status.success(), "{}", stderr(&exported));
    let export: Value = serde_json::from_slice(&exported.stdout).expect("JSON export");
    let text = export.to_string();
    for wanted in ["keep this", "call_kept", WORLD, "Stored answer."] {
        assert!(text.contains(wanted), "{wanted} in the export: {export:#}");
    }

    let shown =
        agent.toolgate(&["sessions", "show", &id[..8], "--sessions", &sessions], None).await;
    assert!(shown.status.success(), "{}", stderr(&shown));
    let markdown = stdout(&shown);
    assert!(markdown.starts_with("# keep this\n"), "a Markdown transcript:\n{markdown}");
    for wanted in ["keep this", "fx__echo", "Stored answer."] {
        assert!(markdown.contains(wanted), "{wanted} in:\n{markdown}");
    }
}
