//! Traces when toolgate itself is the client: `toolgate call` and the agent's tool calls
//! (`toolgate run`; `chat` shares its host) are each the same SERVER span as a front's
//! `tools/call`, with `network.transport = "inproc"`, a trace of its own, or the one the
//! process was started in (`TRACEPARENT`, `TRACESTATE`: OpenTelemetry's environment carrier).

use std::process::Output;
use std::time::Duration;

use toolgate_testkit::fake_llm::{FakeLlm, Script, Turn};

use super::*;

/// The environment's parent, in another trace than the Python client's.
const ENV_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const ENV_SPAN: &str = "b7ad6b7169203331";

/// `toolgate ARGS` with `env`, and without any trace context or log settings of this
/// machine's; it must succeed.
async fn toolgate(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(toolgate_bin());
    command
        .args(args)
        .stdin(Stdio::null())
        .env_remove("TOOLGATE_CONFIG")
        .env_remove("TOOLGATE_MODEL")
        .env_remove("TRACEPARENT")
        .env_remove("TRACESTATE")
        .env("OPENAI_API_KEY", "sk-traces-test")
        .envs(env.iter().copied());
    let output = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("toolgate finishes in time")
        .expect("run toolgate");
    assert!(
        output.status.success(),
        "toolgate {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// `toolgate call py__trace_context` with `env`: its spans, and the context the upstream
/// received.
async fn call(env: &[(&str, &str)]) -> (Vec<Span>, Value) {
    let mut receiver = Receiver::start().await;
    let config = config(&receiver, &python_server(None), 1.0);
    let path = config.path();
    let args = ["call", "--config", &path.to_string_lossy(), "py__trace_context", "--json"];
    let output = toolgate(&args, env).await;
    let result: Value = serde_json::from_slice(&output.stdout).expect("--json prints the result");
    (receiver.received(), received_context(&result))
}

#[tokio::test]
async fn toolgate_call_is_a_trace_of_its_own() {
    let (spans, received) = call(&[]).await;
    let [server, _, _] = one_call(&spans, &received);
    assert!(server.parent_span_id.is_empty(), "a root span: {server:?}");
    assert_eq!(attribute(server, "network.transport").as_deref(), Some("inproc"));
    assert_eq!(attribute(server, "mcp.session.id"), None);
    assert_eq!(received["tracestate"], Value::Null, "{received}");
}

#[tokio::test]
async fn toolgate_call_continues_the_trace_it_was_started_in() {
    let parent = format!("00-{ENV_TRACE}-{ENV_SPAN}-01");
    let (spans, received) = call(&[("TRACEPARENT", &parent), ("TRACESTATE", "ci=7")]).await;
    let [server, _, _] = one_call(&spans, &received);
    assert_eq!(hex(&server.trace_id), ENV_TRACE);
    assert_eq!(hex(&server.parent_span_id), ENV_SPAN);
    // The upstream gets toolgate's span, never the environment's, and the state with it.
    assert!(!received.to_string().contains(ENV_SPAN), "{received}");
    assert_eq!(received["tracestate"], "ci=7", "{received}");
}

#[tokio::test]
async fn toolgate_call_under_an_unsampled_parent_sends_nothing_but_passes_it_on() {
    let parent = format!("00-{ENV_TRACE}-{ENV_SPAN}-00");
    let (spans, received) = call(&[("TRACEPARENT", &parent)]).await;
    assert_eq!(spans, Vec::new(), "no span was sent");
    let passed = received["traceparent"].as_str().expect("a traceparent");
    assert!(passed.starts_with(&format!("00-{ENV_TRACE}-")) && passed.ends_with("-00"), "{passed}");
    assert!(!passed.contains(ENV_SPAN), "{passed}");
}

#[tokio::test]
async fn the_agents_tool_calls_are_traced_under_the_trace_it_was_started_in() {
    let mut receiver = Receiver::start().await;
    let config = config(&receiver, &python_server(None), 1.0);
    let fake = FakeLlm::start(Script::turns([
        Turn::tool_call("py__trace_context", "{}").with_id("call_T1"),
        Turn::text("traced"),
    ]))
    .await
    .expect("the fake LLM starts");
    let home = tempfile::tempdir().expect("temp dir");
    let path = config.path();
    let base_url = fake.base_url();
    let args = [
        "run",
        "--provider",
        "openai",
        "--model",
        "test-model",
        "--base-url",
        &base_url,
        "--no-save",
        "--config",
        &path.to_string_lossy(),
        "trace it",
    ];
    let parent = format!("00-{ENV_TRACE}-{ENV_SPAN}-01");
    let home_dir = home.path().to_string_lossy().into_owned();
    let output = toolgate(&args, &[("TRACEPARENT", &parent), ("HOME", &home_dir)]).await;
    assert_eq!(String::from_utf8_lossy(&output.stdout), "traced\n");

    let requests = fake.requests();
    let results = requests.get(1).expect("a second request, with the result").tool_results();
    let received: Value = serde_json::from_str(&results[0].content).expect("JSON");
    let spans = receiver.received();
    let [server, _, _] = one_call(&spans, &received);
    assert_eq!(hex(&server.trace_id), ENV_TRACE);
    assert_eq!(hex(&server.parent_span_id), ENV_SPAN);
    assert_eq!(attribute(server, "network.transport").as_deref(), Some("inproc"));
    assert_eq!(attribute(server, "gen_ai.tool.call.id").as_deref(), Some("call_T1"));
    // Nothing else: the agent's `tools/list` is no request of a trace, and its interceptors'
    // runs make no spans of their own.
    assert!(spans.iter().all(|span| hex(&span.trace_id) == ENV_TRACE), "{spans:?}");
}
