//! `toolgate chat` driven through a real pseudo-terminal: what a person at a terminal sees and
//! types (a streamed Markdown answer, `/tools`, `/help`, multi-line input, Ctrl-C at the prompt,
//! while the model answers, while a tool runs and at a question, an approval question, an
//! elicitation form, sampling consent, a resumed session, a server that joins after the prompt
//! is up), each checked against what the fake model received next, the audit log or the
//! session store.
//!
//! Every run has its own HOME and XDG_DATA_HOME (the REPL's history file) and its own
//! `--sessions` database in a temporary folder. The fake model runs in the test process. The
//! terminal answers rustyline's cursor position query as a terminal would, so no prompt waits
//! for it. Nothing sleeps a fixed time: each step waits for what the screen shows or what the
//! model received, up to [`TIMEOUT`] (polling `/tools` gives each try a quarter of a second).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use futures::StreamExt as _;
use portable_pty::CommandBuilder;
use serde_json::Value;
use tokio::sync::watch;
use toolgate_testkit::fake_llm::{FakeLlm, Request, Script, Turn};

use crate::support::{fixture_bin, toml_str, toolgate_bin};

mod terminal;

use terminal::{TIMEOUT, Terminal};

/// A folder for one test: the config, HOME, the data folder and the sessions database.
struct Place {
    dir: tempfile::TempDir,
}

impl Place {
    /// A place whose `toolgate.toml` is `config`.
    fn new(config: &str) -> Place {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("toolgate.toml"), config).expect("write config");
        std::fs::create_dir_all(dir.path().join("home")).expect("home");
        Place { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `toolgate chat ARGS` on a new terminal, talking to the model at `base_url`.
    fn chat(&self, base_url: &str, args: &[&str]) -> Terminal {
        let mut command = CommandBuilder::new(toolgate_bin());
        command.arg("chat");
        command.arg("--config");
        command.arg(self.path("toolgate.toml"));
        command.arg("--sessions");
        command.arg(self.path("s.db"));
        command.args(["--base-url", base_url, "--model", "fake"]);
        command.args(args);
        command.cwd(self.dir.path());
        command.env("HOME", self.path("home"));
        command.env("XDG_DATA_HOME", self.path("home/data"));
        command.env("XDG_CONFIG_HOME", self.path("home/config"));
        command.env("TERM", "xterm-256color");
        for name in [
            "NO_COLOR",
            "TOOLGATE_CONFIG",
            "TOOLGATE_MODEL",
            "TOOLGATE_MCP_CONFIG",
            "TOOLGATE_LOG",
            "RUST_LOG",
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "DEEPSEEK_API_KEY",
        ] {
            command.env_remove(name);
        }
        Terminal::spawn(command)
    }

    /// The records of the audit log (`[audit] file = "audit.jsonl"`).
    fn audit(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.path("audit.jsonl")).unwrap_or_default();
        text.lines().map(|line| serde_json::from_str(line).expect("an audit record")).collect()
    }
}

/// A config with the fixture server as `fix`, and `extra` after it.
fn config(extra: &str) -> String {
    format!("[servers.fix]\ncommand = {}\n\n{extra}", toml_str(&fixture_bin().to_string_lossy()))
}

/// The fake answering `turns` in order. Each reports its tokens, so the fake does not count
/// them (loading the token tables takes most of a second in a debug build).
fn script(turns: impl IntoIterator<Item = Turn>) -> Script {
    Script::turns(turns.into_iter().map(|turn| turn.with_usage(10, 5)))
}

/// Waits for the fake to have received `count` requests; the last of them.
async fn request(fake: &FakeLlm, count: usize) -> Request {
    tokio::time::timeout(TIMEOUT, fake.received(count)).await.unwrap_or_else(|_| {
        panic!("the model got {} requests, not {count}", fake.requests().len())
    });
    fake.requests()[count - 1].clone()
}

/// Each message of `request` as `role: content`.
fn conversation(request: &Request) -> Vec<String> {
    request.messages().into_iter().map(|m| format!("{}: {}", m.role, m.content)).collect()
}

/// Sends `/tools` until `tool` is listed (each try waits a moment for it); the listing.
async fn tools_until_listed(chat: &mut Terminal, tool: &str) -> String {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        chat.line("/tools");
        if let Some(listing) =
            chat.try_expect(&format!("{tool}  "), Duration::from_millis(250)).await
        {
            let rest = chat.prompt().await;
            return listing + &rest;
        }
        assert!(Instant::now() < deadline, "{tool} never listed:\n{}", chat.text());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn markdown_answers_tools_help_line_editing_and_ctrl_d() {
    let fake = FakeLlm::start(script([
        Turn::text("The answer is **forty-two**.\n\n- first point\n- second point\n"),
        Turn::text("Two lines read."),
        Turn::text("Alt-Enter read."),
    ]))
    .await
    .expect("fake");
    let place = Place::new(&config(""));
    let mut chat = place.chat(&fake.base_url(), &[]);
    let banner = chat.prompt().await;
    assert!(banner.contains("toolgate chat · compatible fake · session "), "{banner}");

    let listing = tools_until_listed(&mut chat, "fix__echo").await;
    assert!(listing.contains("fix__slow  "), "{listing}");
    assert!(listing.contains("fix__test_elicitation  "), "{listing}");

    chat.line("what is the answer?");
    let answer = chat.prompt().await;
    assert!(answer.contains("forty-two"), "{answer}");
    assert!(answer.contains("first point") && answer.contains("second point"), "{answer}");
    assert!(!answer.contains("**"), "the Markdown is rendered, not shown: {answer}");
    assert!(!answer.contains("- first point"), "a bullet, not a dash: {answer}");
    // Bold on a terminal: SGR 1 before the word, 0 after it.
    let raw = chat.raw();
    assert!(raw.contains("\x1b[1mforty-two\x1b[0m."), "bold on the terminal: {raw:?}");
    assert!(raw.contains("• first point"), "{raw:?}");

    let sent = request(&fake, 1).await;
    assert_eq!(conversation(&sent), ["user: what is the answer?"]);
    assert!(sent.tool_names().contains(&"fix__echo".to_owned()), "{:?}", sent.tool_names());

    // Ctrl-C at the prompt clears the line and stays; a line ending in \ goes on.
    chat.send(b"half typed");
    chat.interrupt();
    chat.expect("(Ctrl-D leaves)").await;
    chat.prompt().await;
    chat.line("first line\\");
    chat.line("second line");
    chat.expect("Two lines read.").await;
    let sent = request(&fake, 2).await;
    assert_eq!(
        sent.last_user_text().as_deref(),
        Some("first line\nsecond line"),
        "{:?}",
        conversation(&sent)
    );
    assert_eq!(conversation(&sent).len(), 3, "{:?}", conversation(&sent));
    chat.prompt().await;
    // Alt-Enter (ESC, Enter) starts a new line too.
    chat.send(b"one\x1b\rtwo\r");
    chat.expect("Alt-Enter read.").await;
    let sent = request(&fake, 3).await;
    assert_eq!(sent.last_user_text().as_deref(), Some("one\ntwo"), "{:?}", conversation(&sent));
    chat.prompt().await;

    chat.line("/help");
    let help = chat.prompt().await;
    assert!(help.contains("/prompt NAME [k=v...]") && help.contains("Ctrl-D leaves"), "{help}");

    let status = chat.leave().await;
    assert!(status.success(), "{status:?}");
    // The REPL's history went to the data folder given, not the user's.
    let history = std::fs::read_to_string(place.path("home/data/toolgate/chat_history.txt"))
        .expect("the history file in XDG_DATA_HOME");
    assert!(history.contains("what is the answer?"), "{history}");
}

/// An OpenAI-compatible model that, to its first request, streams `first` and then nothing
/// more (the stream stays open), and to every later one answers `later` in full; the bodies
/// it received are kept.
struct StallingModel {
    base_url: String,
    bodies: Arc<Mutex<Vec<Value>>>,
    received: watch::Receiver<usize>,
    _stop: tokio_util::sync::DropGuard,
}

impl StallingModel {
    async fn start(first: &'static str, later: &'static str) -> StallingModel {
        use axum::response::IntoResponse as _;
        let bodies = Arc::new(Mutex::new(Vec::<Value>::new()));
        let (count, received) = watch::channel(0usize);
        let count = Arc::new(count);
        let kept = bodies.clone();
        let app = axum::Router::new().route(
            "/v1/chat/completions",
            axum::routing::post(move |axum::Json(body): axum::Json<Value>| {
                let kept = kept.clone();
                let count = count.clone();
                async move {
                    let n = {
                        let mut bodies = kept.lock().unwrap_or_else(PoisonError::into_inner);
                        bodies.push(body);
                        bodies.len()
                    };
                    count.send_replace(n);
                    let chunk = |delta: Value, finish: Value| {
                        let chunk = serde_json::json!({
                            "id": "chatcmpl-stall", "object": "chat.completion.chunk",
                            "created": 0, "model": "fake",
                            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                        });
                        Ok::<_, std::convert::Infallible>(format!("data: {chunk}\n\n"))
                    };
                    let body = if n == 1 {
                        let head = chunk(
                            serde_json::json!({"role": "assistant", "content": first}),
                            Value::Null,
                        );
                        axum::body::Body::from_stream(
                            futures::stream::iter([head]).chain(futures::stream::pending()),
                        )
                    } else {
                        let parts = [
                            chunk(
                                serde_json::json!({"role": "assistant", "content": later}),
                                Value::Null,
                            ),
                            chunk(serde_json::json!({}), Value::from("stop")),
                            Ok("data: [DONE]\n\n".to_owned()),
                        ];
                        axum::body::Body::from_stream(futures::stream::iter(parts))
                    };
                    ([(axum::http::header::CONTENT_TYPE, "text/event-stream")], body)
                        .into_response()
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let stop = tokio_util::sync::CancellationToken::new();
        let shutdown = stop.clone().cancelled_owned();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).with_graceful_shutdown(shutdown).await;
        });
        StallingModel {
            base_url: format!("http://{addr}/v1"),
            bodies,
            received,
            _stop: stop.drop_guard(),
        }
    }

    /// Waits for the `count`th request; its body.
    async fn request(&self, count: usize) -> Value {
        let mut received = self.received.clone();
        tokio::time::timeout(TIMEOUT, received.wait_for(|n| *n >= count))
            .await
            .unwrap_or_else(|_| panic!("the model did not get request {count}"))
            .expect("the server lives");
        self.bodies.lock().unwrap_or_else(PoisonError::into_inner)[count - 1].clone()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_while_the_answer_streams_cancels_the_turn_and_leaves_nothing_of_it() {
    // A Markdown block is shown once complete: the first paragraph is, the second is not.
    let model = StallingModel::start(
        "Once upon a time, a partial answer.\n\nIt went on and",
        "The second answer.",
    )
    .await;
    let place = Place::new("");
    let mut chat = place.chat(&model.base_url, &[]);
    chat.prompt().await;
    chat.line("tell me a long story");
    // The answer has begun on the screen; the stream stays open.
    chat.expect("Once upon a time, a partial answer.").await;
    chat.interrupt();
    let shown = chat.prompt().await;
    assert!(shown.contains("cancelled"), "{shown}");

    chat.line("and now something short");
    chat.expect("The second answer.").await;
    let body = model.request(2).await;
    let messages: Vec<(String, String)> = body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| (m["role"].as_str().unwrap_or("").to_owned(), m["content"].to_string()))
        .collect();
    let roles: Vec<&str> = messages.iter().map(|(role, _)| role.as_str()).collect();
    assert_eq!(roles, ["user", "user"], "no assistant turn from the cancelled one: {body}");
    assert!(!body.to_string().contains("partial answer"), "{body}");
    assert!(messages[1].1.contains("and now something short"), "{body}");
    chat.prompt().await;
    assert!(chat.leave().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_while_waiting_for_the_model_cancels_the_turn() {
    let fake = FakeLlm::start(script([
        Turn::text("too late").after(Duration::from_secs(600)),
        Turn::text("Right away."),
    ]))
    .await
    .expect("fake");
    let place = Place::new("");
    let mut chat = place.chat(&fake.base_url(), &[]);
    chat.prompt().await;
    chat.line("first question");
    request(&fake, 1).await;
    chat.interrupt();
    let shown = chat.prompt().await;
    assert!(shown.contains("cancelled"), "{shown}");
    assert!(!shown.contains("too late"), "{shown}");

    chat.line("second question");
    chat.expect("Right away.").await;
    let sent = request(&fake, 2).await;
    assert_eq!(conversation(&sent), ["user: first question", "user: second question"]);
    chat.prompt().await;
    assert!(chat.leave().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_while_a_tool_runs_cancels_it_upstream_and_the_model_hears_so() {
    let fake = FakeLlm::start(script([
        Turn::tool_call("fix__slow", r#"{"steps": 200, "step_ms": 100}"#).with_id("call_slow"),
        Turn::text("Understood, it was stopped."),
    ]))
    .await
    .expect("fake");
    let place = Place::new(&config("[audit]\nfile = \"audit.jsonl\"\n"));
    let mut chat = place.chat(&fake.base_url(), &[]);
    chat.prompt().await;
    tools_until_listed(&mut chat, "fix__slow").await;

    chat.line("run the slow thing");
    // Running: its line shows the server's progress.
    chat.expect("fix__slow").await;
    chat.expect("/200").await;
    chat.interrupt();
    let shown = chat.prompt().await;
    assert!(shown.contains("⨯ fix__slow"), "the call's line says it was cancelled: {shown}");
    assert!(shown.contains("cancelled"), "{shown}");

    chat.line("what happened?");
    chat.expect("Understood, it was stopped.").await;
    let sent = request(&fake, 2).await;
    let calls = sent.replayed_tool_calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].id, "call_slow");
    let results = sent.tool_results();
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0].call_id, "call_slow");
    assert_eq!(results[0].content, "The person cancelled this call.");
    assert_eq!(sent.last_user_text().as_deref(), Some("what happened?"));
    chat.prompt().await;
    assert!(chat.leave().await.success());

    // The gateway told the upstream (notifications/cancelled) and recorded it.
    let audit = place.audit();
    let kinds: Vec<&str> = audit.iter().filter_map(|r| r["kind"].as_str()).collect();
    let cancelled = audit
        .iter()
        .find(|r| r["kind"] == "tools/call/cancelled")
        .unwrap_or_else(|| panic!("no tools/call/cancelled in {kinds:?}"));
    assert_eq!(cancelled["tool"], "slow", "{cancelled}");
    assert_eq!(cancelled["server"], "fix", "{cancelled}");
    assert!(
        cancelled["principal"].as_str().is_some_and(|p| p.starts_with("agent:")),
        "{cancelled}"
    );
    assert!(!kinds.contains(&"tools/call/finished"), "the call did not finish: {kinds:?}");
}

/// A config asking the person before every call of the fixture's `echo`.
fn ask_for_echo() -> String {
    config(
        "[[pipeline]]\nkind = \"policy\"\ndefault = \"allow\"\n\
         rules = [{ tools = [\"echo\"], decision = \"ask\", reason = \"echo speaks\" }]\n",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_prompts_allow_once_deny_with_a_reason_and_always_this_tool() {
    let fake = FakeLlm::start(script([
        Turn::tool_call("fix__echo", r#"{"text": "approved words"}"#).with_id("call_1"),
        Turn::text("Echoed."),
        Turn::tool_call("fix__echo", r#"{"text": "refused words"}"#).with_id("call_2"),
        Turn::text("I will not, then."),
        Turn::tool_call("fix__echo", r#"{"text": "always one"}"#).with_id("call_3"),
        Turn::text("First of many."),
        Turn::tool_call("fix__echo", r#"{"text": "always two"}"#).with_id("call_4"),
        Turn::text("Not asked again."),
    ]))
    .await
    .expect("fake");
    let place = Place::new(&ask_for_echo());
    let mut chat = place.chat(&fake.base_url(), &[]);
    chat.prompt().await;
    tools_until_listed(&mut chat, "fix__echo").await;

    // y: this call, once.
    chat.line("echo something");
    let question = chat.expect("[n] deny: ").await;
    assert!(question.contains("⚠ fix__echo needs your approval (server fix)"), "{question}");
    assert!(question.contains("why: "), "{question}");
    assert!(question.contains("echo speaks"), "the policy's reason: {question}");
    assert!(question.contains("\"text\": \"approved words\""), "the arguments: {question}");
    chat.line("y");
    chat.expect("Echoed.").await;
    let sent = request(&fake, 2).await;
    let results = sent.tool_results();
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(
        (results[0].call_id.as_str(), results[0].content.as_str()),
        ("call_1", "approved words")
    );
    chat.prompt().await;

    // n, with a reason: the model is told, the tool is not called.
    chat.line("echo something else");
    chat.expect("[n] deny: ").await;
    chat.line("n");
    chat.expect("Reason, for the model (optional): ").await;
    chat.line("not on a Sunday");
    let shown = chat.expect("I will not, then.").await;
    assert!(shown.contains("⊘ fix__echo"), "the line says declined: {shown}");
    let sent = request(&fake, 4).await;
    let result = sent.tool_results().into_iter().find(|r| r.call_id == "call_2").expect("call_2");
    assert!(result.content.contains("not on a Sunday"), "the reason reaches the model: {result:?}");
    assert!(!result.content.contains("refused words"), "{result:?}");
    chat.prompt().await;

    // t: this tool, for the rest of the session; the next call is not asked.
    chat.line("echo once more");
    chat.expect("[n] deny: ").await;
    chat.line("t");
    chat.expect("First of many.").await;
    chat.prompt().await;
    chat.line("and again");
    let shown = chat.expect("Not asked again.").await;
    assert!(!shown.contains("needs your approval"), "asked again: {shown}");
    let sent = request(&fake, 8).await;
    let result = sent.tool_results().into_iter().find(|r| r.call_id == "call_4").expect("call_4");
    assert_eq!(result.content, "always two");
    chat.prompt().await;
    assert!(chat.leave().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elicitation_form_is_asked_and_its_answers_reach_the_tool() {
    let fake = FakeLlm::start(script([
        Turn::tool_call("fix__test_elicitation", r#"{"message": "Who is asking?"}"#)
            .with_id("call_form"),
        Turn::text("Thanks, Alice."),
    ]))
    .await
    .expect("fake");
    let place = Place::new(&config(""));
    let mut chat = place.chat(&fake.base_url(), &[]);
    chat.prompt().await;
    tools_until_listed(&mut chat, "fix__test_elicitation").await;

    chat.line("ask me who I am");
    let form = chat.expect("username*").await;
    assert!(form.contains("fix asks:"), "the server that asks: {form}");
    assert!(form.contains("Who is asking?"), "its message: {form}");
    assert!(form.contains("User's response"), "the field's description: {form}");
    chat.expect(": ").await;
    chat.line("alice");
    chat.expect("email*").await;
    chat.expect(": ").await;
    chat.line("alice@example.com");
    let summary = chat.expect("[c] cancel: ").await;
    assert!(summary.contains("Send to fix?"), "{summary}");
    assert!(summary.contains("alice@example.com"), "the answers are shown: {summary}");
    chat.line("y");
    chat.expect("Thanks, Alice.").await;

    let sent = request(&fake, 2).await;
    let result =
        sent.tool_results().into_iter().find(|r| r.call_id == "call_form").expect("the result");
    assert!(result.content.starts_with("User response: "), "{result:?}");
    assert!(result.content.contains("accept"), "{result:?}");
    assert!(result.content.contains("alice@example.com"), "{result:?}");
    assert!(result.content.contains("alice"), "{result:?}");
    chat.prompt().await;
    assert!(chat.leave().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sampling_request_is_allowed_at_the_terminal_and_answered_by_the_model() {
    let fake = FakeLlm::start(script([
        Turn::tool_call("fix__test_sampling", r#"{"prompt": "Name a colour."}"#)
            .with_id("call_sample"),
        Turn::text("Vermilion"),
        Turn::text("The server heard vermilion."),
    ]))
    .await
    .expect("fake");
    let place = Place::new(&config(""));
    let mut chat = place.chat(&fake.base_url(), &[]);
    chat.prompt().await;
    tools_until_listed(&mut chat, "fix__test_sampling").await;

    chat.line("let the server ask you");
    let question = chat.expect("allow? [y/n] ").await;
    assert!(question.contains("fix asks to use the model (sampling):"), "{question}");
    assert!(question.contains("user: Name a colour."), "what it asks: {question}");
    chat.line("y");
    chat.expect("The server heard vermilion.").await;

    // The second request is the server's, without tools; the third carries the tool result.
    let requests = fake.requests();
    assert_eq!(requests.len(), 3, "{requests:?}");
    assert_eq!(conversation(&requests[1]), ["user: Name a colour."]);
    assert!(requests[1].tool_names().is_empty(), "{:?}", requests[1].tool_names());
    let results = requests[2].tool_results();
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0].call_id, "call_sample");
    assert_eq!(results[0].content, "LLM response: Vermilion");
    chat.prompt().await;
    assert!(chat.leave().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_resumed_by_default_and_by_id_prefix() {
    let fake = FakeLlm::start(script([
        Turn::text("Noted: kiwi."),
        Turn::text("It was kiwi."),
        Turn::text("Still kiwi."),
    ]))
    .await
    .expect("fake");
    let place = Place::new("");

    let mut chat = place.chat(&fake.base_url(), &[]);
    let banner = chat.prompt().await;
    let id = banner
        .split("session ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the banner names the session")
        .to_owned();
    assert!(!banner.contains("resumed"), "{banner}");
    chat.line("remember the word kiwi");
    chat.expect("Noted: kiwi.").await;
    chat.prompt().await;
    assert!(chat.leave().await.success());

    // The latest session.
    let mut chat = place.chat(&fake.base_url(), &["--resume"]);
    let banner = chat.prompt().await;
    assert!(banner.contains(&format!("session {id} (resumed, 2 messages)")), "{banner}");
    chat.line("what was the word?");
    chat.expect("It was kiwi.").await;
    let sent = request(&fake, 2).await;
    assert_eq!(
        conversation(&sent),
        ["user: remember the word kiwi", "assistant: Noted: kiwi.", "user: what was the word?"]
    );
    chat.prompt().await;
    assert!(chat.leave().await.success());

    // By a prefix of its id, after another session was started.
    let mut other = place.chat(&fake.base_url(), &[]);
    let banner = other.prompt().await;
    assert!(!banner.contains(&id), "a new session: {banner}");
    assert!(other.leave().await.success());
    let mut chat = place.chat(&fake.base_url(), &["--resume", &id[..id.len() - 2]]);
    let banner = chat.prompt().await;
    assert!(banner.contains(&format!("session {id} (resumed, 4 messages)")), "{banner}");
    chat.line("and now?");
    chat.expect("Still kiwi.").await;
    let sent = request(&fake, 3).await;
    assert_eq!(conversation(&sent).len(), 5, "{:?}", conversation(&sent));
    assert_eq!(conversation(&sent)[3], "assistant: It was kiwi.");
    chat.prompt().await;
    assert!(chat.leave().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prompt_is_usable_while_a_slow_server_starts_and_its_tools_join_later() {
    let fake = FakeLlm::start(script([Turn::text("Hello while it starts.")])).await.expect("fake");
    let place = Place::new(&config(&format!(
        "[servers.slow]\ncommand = {}\nargs = [\"--startup-delay\", \"6s\"]\n",
        toml_str(&fixture_bin().to_string_lossy())
    )));
    let mut chat = place.chat(&fake.base_url(), &[]);
    chat.prompt().await;
    // That the prompt came before the slow server was up is what `/servers` says next (how
    // soon it came depends on how busy the machine is).
    let prompt_after = chat.started.elapsed();

    chat.line("/servers");
    let servers = chat.prompt().await;
    assert!(servers.contains("slow  starting"), "{servers}");
    chat.line("hello");
    chat.expect("Hello while it starts.").await;
    let answered_after = chat.started.elapsed();
    let sent = request(&fake, 1).await;
    assert!(
        !sent.tool_names().iter().any(|name| name.starts_with("slow__")),
        "answered before slow was up: {:?}",
        sent.tool_names()
    );
    chat.prompt().await;

    let listing = tools_until_listed(&mut chat, "slow__echo").await;
    let listed_after = chat.started.elapsed();
    assert!(listing.contains("fix__echo  "), "{listing}");
    assert!(listed_after >= Duration::from_secs(6), "slow is up after its delay: {listed_after:?}");
    eprintln!(
        "prompt after {prompt_after:?}, answer after {answered_after:?}, slow listed after {listed_after:?}"
    );
    chat.line("/servers");
    let servers = chat.prompt().await;
    assert!(servers.contains("slow  up, "), "{servers}");
    assert!(chat.leave().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_at_an_approval_question_cancels_the_turn_and_the_call_is_not_made() {
    let fake = FakeLlm::start(script([
        Turn::tool_call("fix__echo", r#"{"text": "never sent"}"#).with_id("call_asked"),
        Turn::text("Fine, nothing was echoed."),
    ]))
    .await
    .expect("fake");
    let place = Place::new(&format!("{}\n[audit]\nfile = \"audit.jsonl\"\n", ask_for_echo()));
    let mut chat = place.chat(&fake.base_url(), &[]);
    chat.prompt().await;
    tools_until_listed(&mut chat, "fix__echo").await;

    chat.line("echo it");
    chat.expect("[n] deny: ").await;
    chat.interrupt();
    let shown = chat.prompt().await;
    assert!(shown.contains("cancelled"), "{shown}");

    chat.line("what now?");
    chat.expect("Fine, nothing was echoed.").await;
    let sent = request(&fake, 2).await;
    let results = sent.tool_results();
    assert_eq!(results.len(), 1, "one result for the call: {results:?}");
    assert_eq!(results[0].call_id, "call_asked");
    // What the model reads: the person cancelled it (not that they refused it).
    assert_eq!(results[0].content, "The person cancelled this call.", "{results:?}");
    chat.prompt().await;
    assert!(chat.leave().await.success());

    let audit = place.audit();
    let kinds: Vec<&str> = audit.iter().filter_map(|r| r["kind"].as_str()).collect();
    assert!(!kinds.contains(&"tools/call/finished"), "echo was not called: {kinds:?}");
    assert!(kinds.contains(&"tools/call/denied"), "{kinds:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_resources_servers_model_and_clear_in_the_repl() {
    let fake = FakeLlm::start(script([
        Turn::text("Prompt read."),
        Turn::text("Resource read."),
        Turn::text("Other model."),
        Turn::text("Fresh start."),
    ]))
    .await
    .expect("fake");
    let place = Place::new(&config(""));
    let mut chat = place.chat(&fake.base_url(), &[]);
    let banner = chat.prompt().await;
    let first_session = session_of(&banner);
    tools_until_listed(&mut chat, "fix__echo").await;

    chat.line("/servers");
    let servers = chat.prompt().await;
    assert!(servers.contains("fix  up, "), "{servers}");

    // An MCP prompt, with its arguments, is the next user message.
    chat.line("/prompt test_prompt_with_arguments arg1=apple arg2=pear");
    chat.expect("Prompt read.").await;
    let sent = request(&fake, 1).await;
    assert_eq!(
        sent.last_user_text().as_deref(),
        Some("Prompt with arguments: arg1='apple', arg2='pear'"),
        "{:?}",
        conversation(&sent)
    );
    chat.prompt().await;
    chat.line("/prompt no_such_prompt");
    let unknown = chat.prompt().await;
    assert!(unknown.contains("/prompt no_such_prompt: "), "{unknown}");
    assert_eq!(fake.requests().len(), 1, "nothing sent for a prompt that failed");

    // @server:URI attaches the resource's text after the message.
    chat.line("summarise @fix:test://static-text please");
    chat.expect("Resource read.").await;
    let sent = request(&fake, 2).await;
    let text = sent.last_user_text().expect("the user message");
    assert!(text.starts_with("summarise @fix:test://static-text please"), "{text}");
    assert!(
        text.contains(
            "[resource test://static-text]\nThis is the content of the static text resource."
        ),
        "{text}"
    );
    chat.prompt().await;

    // /model changes the model of the next request.
    chat.line("/model other-model");
    chat.expect("model: other-model").await;
    chat.prompt().await;
    chat.line("and now?");
    chat.expect("Other model.").await;
    assert_eq!(request(&fake, 3).await.model(), Some("other-model"));
    chat.prompt().await;

    // /clear: a new conversation in a new session.
    chat.line("/clear");
    let cleared = chat.expect("new conversation: session ").await;
    let rest = chat.prompt().await;
    let second_session = rest.split_whitespace().next().unwrap_or_default().to_owned();
    assert!(cleared.contains("new conversation"), "{cleared}");
    assert_ne!(second_session, first_session, "{rest}");
    chat.line("hello again");
    chat.expect("Fresh start.").await;
    let sent = request(&fake, 4).await;
    assert_eq!(conversation(&sent), ["user: hello again"], "nothing of before is sent");
    chat.prompt().await;
    assert!(chat.leave().await.success());
}

/// The session id the banner names.
fn session_of(banner: &str) -> String {
    let after = banner.split("session ").nth(1).expect("a session in the banner");
    after.split_whitespace().next().expect("its id").to_owned()
}
