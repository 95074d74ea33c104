//! The proof that the fake LLM speaks the providers' real wire formats: the official `openai`
//! and `anthropic` Python SDKs (pinned in `tests/deps/python/requirements.txt`) read its
//! streamed answers (`tests/sdk_streams.py`), served out of process by `toolgate-fixture
//! fake-llm --script FILE`, and what they parse (text, reasoning, tool calls with ids and
//! arguments, finish reason, usage) must be what the script's turns say, for each dialect and
//! each quirk of compatible servers.
//!
//! Needs the Python venv of scripts/install-test-deps (`deps::python`: `TOOLGATE_TEST_PYTHON`,
//! which scripts/test sets, or `tests/deps/`); without it the test fails, saying so.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};
use toolgate_testkit::deps;
use toolgate_testkit::fake_llm::{Answer, Quirk, Reply, Turn, anthropic};

const KEY: &str = "sk-fake-sdk";

/// The turn every case answers: reasoning, text and two calls, one with an id of the
/// script's, non-ASCII everywhere (so that `split_utf8` has characters to cut).
fn turn() -> Turn {
    Turn::tool_call("get_weather", r#"{"city":"Zürich","note":"naïve 🙂 «ok»"}"#)
        .with_id("call_fixed1")
        .and_tool_call("list_files", "{}")
        .with_text("Voilà, je regarde…")
        .with_reasoning("L'utilisateur veut la météo à Zürich.")
        .with_usage(42, 17)
}

/// One request of the Python script: which client reads which turn.
struct Case {
    client: &'static str,
    quirk: Option<Quirk>,
}

impl Case {
    fn turn(&self) -> Turn {
        self.quirk.map_or_else(turn, |quirk| turn().with_quirk(quirk))
    }

    fn reply(&self) -> Reply {
        match self.turn().answer {
            Answer::Reply(reply) => reply,
            other => panic!("a reply: {other:?}"),
        }
    }

    fn name(&self) -> String {
        match self.quirk {
            Some(quirk) => format!("{} with {quirk:?}", self.client),
            None => self.client.to_owned(),
        }
    }

    /// What the SDK is known to refuse (a piece of its error), for quirks it does not take.
    /// None so far: with openai 3.57.0 and anthropic 2.14.0 every quirk is read without an
    /// error (`no_done`: the stream simply ends; `data_without_space`: the SSE decoder strips
    /// an optional space; `split_utf8`: httpx decodes the joined bytes).
    fn known_refusal(&self) -> Option<&'static str> {
        None
    }

    /// Whether the SDK is known to mis-read this case. The openai SDK's own accumulator
    /// (`chat.completions.stream(...)`, `chat_helper`) appends every string of a tool call
    /// delta to what it has, so a server that repeats `id` and `name` on each chunk
    /// (`repeat_id_and_name`) yields `get_weatherget_weather...` and `call_1call_1...`; the
    /// by-index accumulation the docs show (`chat`) reads it right, and so must the agent.
    fn known_misread(&self) -> bool {
        self.client == "chat_helper" && self.quirk == Some(Quirk::RepeatIdAndName)
    }
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for client in ["chat", "chat_helper"] {
        cases.push(Case { client, quirk: None });
        for quirk in Quirk::ALL {
            cases.push(Case { client, quirk: Some(quirk) });
        }
    }
    for client in ["responses", "anthropic"] {
        for quirk in [None, Some(Quirk::SplitUtf8), Some(Quirk::DataWithoutSpace)] {
            cases.push(Case { client, quirk });
        }
    }
    cases
}

/// The fake out of process, killed when dropped.
struct Fake {
    child: Child,
    origin: String,
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_fake(script: &Path) -> Fake {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate-fixture"))
        .args(["fake-llm", "--port", "0", "--api-key", KEY, "--script"])
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn toolgate-fixture fake-llm");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the listening line");
    let base_url = line.trim().strip_prefix("listening ").expect("listening URL");
    let origin = base_url.strip_suffix("/v1").expect("a /v1 base URL").to_owned();
    Fake { child, origin }
}

/// Arguments as JSON; the empty text is `{}` (as the agent reads it).
fn arguments(text: &str) -> Value {
    if text.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(text).unwrap_or_else(|e| panic!("arguments {text:?}: {e}"))
}

/// What `case`'s client parsed, checked against its turn; the differences, if any.
fn check(case: &Case, got: &Value) -> Vec<String> {
    let reply = case.reply();
    let mut wrong = Vec::new();
    let mut expect = |what: &str, got: &Value, want: Value| {
        if *got != want {
            wrong.push(format!("{what}: got {got}, want {want}"));
        }
    };
    expect("text", &got["text"], reply.text.clone().into());
    expect("reasoning", &got["reasoning"], reply.reasoning.clone().into());
    let (finish, id_prefix) = match case.client {
        "responses" => ("completed", "call_"),
        "anthropic" => ("tool_use", "toolu_01"),
        _ => ("tool_calls", "call_"),
    };
    expect("finish", &got["finish"], finish.into());
    expect("usage", &got["usage"], json!([42, 17]));
    if case.client.starts_with("chat") {
        let key = if reply.has(Quirk::ReasoningField) { "reasoning" } else { "reasoning_content" };
        expect("reasoning key", &got["reasoning_key"], key.into());
    }
    if case.client == "anthropic" {
        let signature = anthropic::signature(reply.reasoning.as_deref().unwrap_or_default());
        expect("signature", &got["signature"], signature.into());
    }
    let calls = got["tool_calls"].as_array().cloned().unwrap_or_default();
    expect("calls", &calls.len().into(), reply.tool_calls.len().into());
    for (call, want) in calls.iter().zip(&reply.tool_calls) {
        expect("name", &call["name"], want.name.clone().into());
        let got_arguments = arguments(call["arguments"].as_str().unwrap_or_default());
        expect("arguments", &got_arguments, arguments(&want.arguments));
        let id = &call["id"];
        match &want.id {
            _ if reply.has(Quirk::NoCallIds) && case.client.starts_with("chat") => {
                expect("id", id, Value::Null);
            }
            Some(given) => expect("id", id, given.clone().into()),
            None => {
                let made_up = id.as_str().filter(|id| id.starts_with(id_prefix) && id.len() > 12);
                expect("made-up id", &made_up.is_some().into(), true.into());
            }
        }
    }
    if reply.has(Quirk::EmptyArguments) {
        let sent = calls.get(1).map(|call| call["arguments"].clone());
        expect("empty arguments", &sent.unwrap_or_default(), "".into());
    }
    wrong
}

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("toolgate-sdk-streams-{}-{name}", std::process::id()))
}

#[test]
fn the_official_sdks_read_what_the_fake_streams() {
    let python = deps::python();
    let cases = cases();
    let script = temp_path("script.json");
    let turns: Vec<Turn> = cases.iter().map(Case::turn).collect();
    std::fs::write(&script, serde_json::to_string(&turns).expect("turns as JSON"))
        .expect("write the script");
    let fake = start_fake(&script);

    let asked: Vec<Value> = cases.iter().map(|case| json!({"client": case.client})).collect();
    let mut reader = Command::new(&python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdk_streams.py"))
        .args([fake.origin.as_str(), KEY])
        .env("NO_PROXY", "127.0.0.1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("running {}: {e}", python.display()));
    reader
        .stdin
        .take()
        .expect("stdin")
        .write_all(Value::from(asked).to_string().as_bytes())
        .expect("write the cases");
    let output = reader.wait_with_output().expect("the script's output");
    let _ = std::fs::remove_file(&script);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}\n{stdout}{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<Value> =
        stdout.lines().map(|line| serde_json::from_str(line).expect("a JSON line")).collect();
    assert_eq!(lines.len(), cases.len(), "one line per case:\n{stdout}");

    let mut failures = Vec::new();
    for (case, got) in cases.iter().zip(&lines) {
        let refusal = got.get("error").and_then(Value::as_str);
        match (refusal, case.known_refusal()) {
            (Some(error), Some(known)) if error.contains(known) => {}
            (Some(error), _) => failures.push(format!("{}: the SDK refused: {error}", case.name())),
            (None, Some(known)) => {
                failures.push(format!("{}: the SDK no longer refuses ({known})", case.name()));
            }
            (None, None) if case.known_misread() => {
                let name = got["tool_calls"][0]["name"].as_str().unwrap_or_default();
                if !name.starts_with("get_weatherget_weather") {
                    failures.push(format!("{}: no longer misread ({name:?})", case.name()));
                }
            }
            (None, None) => {
                for wrong in check(case, got) {
                    failures.push(format!("{}: {wrong}", case.name()));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} cases:\n{}", cases.len(), failures.join("\n"));
}
