//! The loop against a scripted provider and host (the real providers and the gateway are
//! tested with the fake LLM server and real upstreams in the binary's tests).

use std::collections::VecDeque;
use std::sync::Mutex;

use futures::stream::{self, BoxStream};
use serde_json::json;
use toolgate_llm::chat::{AssistantTurn, Part};
use toolgate_llm::provider::Finished;

use super::*;
use crate::host::Silent;

/// Answers each request with the next scripted turn, recording the requests.
struct Scripted {
    turns: Mutex<VecDeque<Vec<Result<StreamEvent, ProviderError>>>>,
    requests: Mutex<Vec<ChatRequest>>,
}

impl Scripted {
    fn new(turns: Vec<Vec<Result<StreamEvent, ProviderError>>>) -> Arc<Scripted> {
        Arc::new(Scripted { turns: Mutex::new(turns.into()), requests: Mutex::default() })
    }
}

impl Provider for Scripted {
    fn dialect(&self) -> Dialect {
        Dialect::OpenaiChat
    }

    fn stream(
        &self,
        request: ChatRequest,
    ) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
        self.requests.lock().unwrap().push(request);
        match self.turns.lock().unwrap().pop_front() {
            Some(events) => Box::pin(stream::iter(events)),
            // Never answers (for cancellation).
            None => Box::pin(stream::pending()),
        }
    }
}

fn finished(text: &str, calls: &[(&str, &str, &str)]) -> Result<StreamEvent, ProviderError> {
    Ok(StreamEvent::Finished(Finished {
        turn: AssistantTurn {
            text: text.to_owned(),
            reasoning: None,
            tool_calls: calls
                .iter()
                .map(|(id, name, arguments)| ToolCall {
                    id: (*id).to_owned(),
                    name: (*name).to_owned(),
                    arguments: (*arguments).to_owned(),
                })
                .collect(),
        },
        usage: Some(Usage { input_tokens: 10, output_tokens: 5, ..Usage::default() }),
        stop: if calls.is_empty() { StopReason::End } else { StopReason::ToolUse },
    }))
}

/// Tools `echo` (answers its text) and `hang` (waits until cancelled).
struct Host {
    calls: Mutex<Vec<String>>,
}

impl ToolHost for Host {
    fn tools(&self) -> futures::future::BoxFuture<'_, Vec<mcp::Tool>> {
        let tool = |name: &str| {
            serde_json::from_value::<mcp::Tool>(json!({
                "name": name, "description": name,
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
            }))
            .unwrap()
        };
        Box::pin(async move { vec![tool("srv__echo"), tool("srv__hang")] })
    }

    fn call(&self, call: HostCall) -> futures::future::BoxFuture<'_, ToolOutcome> {
        self.calls.lock().unwrap().push(call.name.clone());
        Box::pin(async move {
            match call.name.as_str() {
                "srv__hang" => {
                    call.cancel.cancelled().await;
                    ToolOutcome::Cancelled
                }
                _ => {
                    ToolOutcome::Done(mcp::CallToolResult::success(vec![mcp::ContentBlock::text(
                        call.arguments
                            .get("text")
                            .and_then(|t| t.as_str())
                            .unwrap_or("")
                            .to_owned(),
                    )]))
                }
            }
        })
    }
}

fn host() -> Arc<Host> {
    Arc::new(Host { calls: Mutex::default() })
}

fn settings() -> AgentSettings {
    AgentSettings {
        model: "m".into(),
        system: Some("sys".into()),
        temperature: None,
        max_tokens: None,
        max_turns: 5,
        tool_timeout: None,
        context_tokens: None,
    }
}

#[derive(Default)]
struct Recorded(Mutex<Vec<Message>>);

impl Journal for Recorded {
    fn append(&self, message: &Message, _usage: Option<&Usage>) -> Result<(), String> {
        self.0.lock().unwrap().push(message.clone());
        Ok(())
    }
}

fn results(messages: &[Message]) -> Vec<(String, bool, String)> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some((
                r.call_id.clone(),
                r.is_error,
                match &r.content[0] {
                    Part::Text { text } => text.clone(),
                    Part::Image { .. } => "image".into(),
                },
            )),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn every_call_gets_one_result_whatever_became_of_it() {
    let provider = Scripted::new(vec![
        vec![
            Ok(StreamEvent::Text("Let me look. ".into())),
            finished(
                "Let me look. ",
                &[
                    ("c1", "srv__echo", r#"{"text":"one"}"#),
                    ("c2", "srv__nope", "{}"),
                    ("c3", "srv__echo", r#"{"text": "#),
                    ("c4", "srv__echo", ""),
                ],
            ),
        ],
        vec![finished("Done.", &[])],
    ]);
    let journal = Arc::new(Recorded::default());
    let host = host();
    let mut agent =
        Agent::new(provider.clone(), host.clone(), settings()).with_journal(journal.clone());
    let report = agent
        .prompt(Message::user_text("go"), Arc::new(Silent), CancellationToken::new())
        .await
        .expect("answered");
    assert_eq!(report.answer, "Done.");
    assert_eq!((report.turns, report.tool_calls), (2, 4));
    assert_eq!(report.usage.input_tokens, 20);
    let got = results(agent.messages());
    assert_eq!(got[0], ("c1".into(), false, "one".into()));
    assert_eq!(
        got[1],
        (
            "c2".into(),
            true,
            "There is no tool named srv__nope. Use one of the tools you were given.".into()
        )
    );
    assert!(got[2].1 && got[2].2.contains("not valid JSON"), "{:?}", got[2]);
    assert_eq!(got[3], ("c4".into(), false, String::new()), "empty arguments are {{}}");
    // Only the calls that could be made reached the host.
    assert_eq!(*host.calls.lock().unwrap(), vec!["srv__echo", "srv__echo"]);
    // The second request carried the whole exchange, the tools and the system prompt.
    let requests = provider.requests.lock().unwrap();
    assert_eq!(requests[1].messages.len(), 6);
    assert_eq!(requests[1].tools.len(), 2);
    assert_eq!(requests[1].system.as_deref(), Some("sys"));
    // The journal has every message, in order.
    assert_eq!(*journal.0.lock().unwrap(), agent.messages());
}

#[tokio::test]
async fn the_turn_limit_stops_a_model_that_keeps_calling_tools() {
    let call = || vec![finished("", &[("c", "srv__echo", r#"{"text":"x"}"#)])];
    let provider = Scripted::new(vec![call(), call(), call()]);
    let mut agent = Agent::new(provider, host(), AgentSettings { max_turns: 2, ..settings() });
    let error = agent
        .prompt(Message::user_text("go"), Arc::new(Silent), CancellationToken::new())
        .await
        .expect_err("limit");
    assert!(matches!(error, AgentError::MaxTurns(2)), "{error}");
    // Still a conversation a provider takes: each call has its result.
    let calls = agent.messages().iter().filter(|m| matches!(m, Message::Assistant(_))).count();
    assert_eq!(calls, 2);
    assert_eq!(results(agent.messages()).len(), 2);
}

#[tokio::test]
async fn cancelled_while_the_model_streams_nothing_of_the_turn_is_kept() {
    let provider = Scripted::new(vec![]);
    let mut agent = Agent::new(provider, host(), settings());
    let cancel = CancellationToken::new();
    let prompt = agent.prompt(Message::user_text("go"), Arc::new(Silent), cancel.clone());
    let (outcome, ()) = tokio::join!(prompt, async { cancel.cancel() });
    assert!(matches!(outcome, Err(AgentError::Cancelled)));
    assert_eq!(agent.messages(), &[Message::user_text("go")]);
}

#[tokio::test(start_paused = true)]
async fn cancelled_while_tools_run_each_call_still_gets_a_result() {
    let provider = Scripted::new(vec![vec![finished(
        "",
        &[("c1", "srv__echo", r#"{"text":"fast"}"#), ("c2", "srv__hang", "{}")],
    )]]);
    let mut agent = Agent::new(provider, host(), settings());
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        canceller.cancel();
    });
    let outcome = agent.prompt(Message::user_text("go"), Arc::new(Silent), cancel).await;
    assert!(matches!(outcome, Err(AgentError::Cancelled)));
    let got = results(agent.messages());
    assert_eq!(got[0], ("c1".into(), false, "fast".into()));
    assert_eq!(got[1], ("c2".into(), true, "The person cancelled this call.".into()));
}

#[tokio::test]
async fn a_provider_error_ends_the_prompt_and_the_conversation_goes_on() {
    let provider = Scripted::new(vec![
        vec![Err(ProviderError::Status {
            provider: "api.example".into(),
            status: 429,
            code: Some("rate_limit_exceeded".into()),
            message: "slow down".into(),
        })],
        vec![Ok(StreamEvent::Text("hi".into())), finished("hi", &[])],
    ]);
    let mut agent = Agent::new(provider, host(), settings());
    let error = agent
        .prompt(Message::user_text("one"), Arc::new(Silent), CancellationToken::new())
        .await
        .expect_err("429");
    assert_eq!(error.to_string(), "api.example answered HTTP 429 (rate_limit_exceeded): slow down");
    let report = agent
        .prompt(Message::user_text("two"), Arc::new(Silent), CancellationToken::new())
        .await
        .expect("answered");
    assert_eq!(report.answer, "hi");
}
