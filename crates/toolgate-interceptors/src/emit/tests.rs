//! Tests of the `emit` interceptor: options, the event's fields, the outcome and target
//! filters, the listener for refused and failed calls, and the command.

use serde_json::{Value, json};
use tokio_util::task::TaskTracker;
use toolgate_audit::kind;
use toolgate_intercept::{Pipeline, Principal, Target};

use super::*;

fn entry(options: Value) -> InterceptorConfig {
    crate::test_entry(KIND, "pipeline[0]", options)
}

fn emit(options: Value, services: &Services) -> Emit {
    Emit::from_config(&entry(options), services).expect("valid options")
}

fn option_errors(options: Value) -> Vec<String> {
    Emit::from_config(&entry(options), &Services::new(EventBus::new()))
        .expect_err("invalid options")
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn context() -> CallContext {
    let mut ctx = CallContext::new(Principal::new("local", "alice"));
    ctx.session = Some("s-1".into());
    ctx.request_id = Some("7".into());
    ctx.target = Some(Target {
        server: "ci".into(),
        original: "deploy_app".into(),
        exposed: "ci__deploy_app".into(),
        tool: None,
    });
    ctx
}

fn ok_result() -> mcp::CallToolResult {
    let mut result = mcp::CallToolResult::success(vec![mcp::ContentBlock::text("deployed v2")]);
    result.structured_content = Some(json!({"version": 2, "url": "https://example.com"}));
    result
}

async fn respond(emit: &Emit, result: mcp::CallToolResult, ctx: &mut CallContext) {
    let message = Message::ToolResult(result);
    let outcome = emit
        .intercept(InterceptionEvent::ToolsCall, Phase::Response, &message, ctx)
        .await
        .expect("emit never fails");
    assert_eq!(outcome, Outcome::Continue, "emit never changes the result");
}

fn pattern(text: &str) -> toolgate_audit::EventPattern {
    text.parse().expect("a pattern")
}

// === options ===

#[test]
fn defaults_are_every_outcome_the_hash_four_commands_and_ten_seconds() {
    let emit = emit(json!({"channel": "deploys"}), &Services::new(EventBus::new()));
    assert_eq!(emit.event_kind(), "emit/deploys");
    assert_eq!(emit.shared.outcomes, [CallOutcome::Ok, CallOutcome::Error, CallOutcome::Refused]);
    assert_eq!(emit.shared.include, Include::Hash);
    assert!(emit.shared.hook.is_none());
    assert!(emit.descriptor.fail_open);
    assert_eq!(DEFAULT_CONCURRENCY, 4);
    assert_eq!(DEFAULT_COMMAND_TIMEOUT, Duration::from_secs(10));
}

#[test]
fn option_errors_name_the_option() {
    assert_eq!(
        option_errors(json!({})),
        ["pipeline[0].channel: missing: the channel events are published on (emit/<channel>), \
          such as \"deploys\""]
    );
    assert_eq!(
        option_errors(json!({
            "channel": "a/b",
            "outcomes": ["ok", "timeout"],
            "include": "all",
            "command": [],
            "concurrency": 0,
            "command_timeout": "soon",
            "shell": true,
        })),
        [
            "pipeline[0].shell: unknown option (expected one of: channel, outcomes, include, \
             command, concurrency, command_timeout)",
            "pipeline[0].channel: expected 1 to 64 letters, digits, `_`, `-` or `.`, found \
             \"a/b\" (the channel is one segment of the event kind emit/<channel>)",
            "pipeline[0].outcomes[1]: expected \"ok\", \"error\" or \"refused\", found \"timeout\"",
            "pipeline[0].include: expected \"hash\" or \"result\", found \"all\"",
            "pipeline[0].command: expected a non-empty array of strings (the program, then its \
             arguments), found []",
            "pipeline[0].concurrency: expected an integer of at least 1, found 0",
            "pipeline[0].command_timeout: invalid duration \"soon\": expected a number at \
             character 1",
        ]
    );
    assert_eq!(
        option_errors(json!({
            "channel": 5,
            "outcomes": [],
            "command": ["sh", 1],
            "command_timeout": "0s",
        })),
        [
            "pipeline[0].channel: expected a string, found 5",
            "pipeline[0].outcomes: expected a non-empty array of \"ok\", \"error\", \"refused\", \
             found []",
            "pipeline[0].command: expected a non-empty array of strings (the program, then its \
             arguments), found [\"sh\",1]",
            "pipeline[0].command_timeout: must be greater than zero",
        ]
    );
}

#[test]
fn the_channel_is_one_segment_of_the_kind() {
    for good in ["deploys", "a.b-c_d", "X9"] {
        assert!(option_errors_or_none(json!({"channel": good})).is_none(), "{good}");
    }
    for bad in ["", "a b", "a,b", "*", "é", &"x".repeat(65)] {
        assert!(option_errors_or_none(json!({"channel": bad})).is_some(), "{bad}");
    }
}

fn option_errors_or_none(options: Value) -> Option<Vec<OptionError>> {
    Emit::from_config(&entry(options), &Services::new(EventBus::new())).err()
}

// === the event ===

#[tokio::test]
async fn an_ok_result_is_published_with_its_hash_and_who_called() {
    let bus = EventBus::new();
    let mut events = bus.subscribe(pattern("emit/*"), 8);
    let emit = emit(json!({"channel": "deploys"}), &Services::new(bus));
    let mut ctx = context();
    respond(&emit, ok_result(), &mut ctx).await;
    let event = events.try_recv().expect("published");
    assert_eq!(event.kind, "emit/deploys");
    let fields: Vec<&str> = event.fields.keys().map(String::as_str).collect();
    assert_eq!(
        fields,
        [
            "channel",
            "interceptor",
            "outcome",
            "server",
            "tool",
            "exposed",
            "principal",
            "session",
            "request_id",
            "duration_ms",
            "is_error",
            "result_sha256",
            "result_bytes",
        ]
    );
    assert_eq!(event.get("channel"), Some(&json!("deploys")));
    assert_eq!(event.get("interceptor"), Some(&json!("emit")));
    assert_eq!(event.get("outcome"), Some(&json!("ok")));
    assert_eq!(event.get("server"), Some(&json!("ci")));
    assert_eq!(event.get("tool"), Some(&json!("deploy_app")));
    assert_eq!(event.get("exposed"), Some(&json!("ci__deploy_app")));
    assert_eq!(event.get("principal"), Some(&json!("local:alice")));
    assert_eq!(event.get("session"), Some(&json!("s-1")));
    assert_eq!(event.get("request_id"), Some(&json!("7")));
    assert!(event.get("duration_ms").and_then(Value::as_f64).is_some_and(|ms| ms >= 0.0));
    assert_eq!(event.get("is_error"), Some(&json!(false)));
    let json = serde_json::to_value(ok_result()).expect("json");
    let canonical = toolgate_core::canonical::canonical_json(&json);
    assert_eq!(
        event.get("result_sha256"),
        Some(&json!(toolgate_core::hash::sha256_hex(canonical.as_bytes())))
    );
    assert_eq!(event.get("result_bytes"), Some(&json!(canonical.len())));
    assert!(event.get("result").is_none(), "the result itself is not published by default");
}

#[tokio::test]
async fn include_result_publishes_the_result_itself() {
    let bus = EventBus::new();
    let mut events = bus.subscribe(pattern("emit/deploys"), 8);
    let emit = emit(json!({"channel": "deploys", "include": "result"}), &Services::new(bus));
    respond(&emit, ok_result(), &mut context()).await;
    let event = events.try_recv().expect("published");
    assert_eq!(event.get("result"), Some(&serde_json::to_value(ok_result()).expect("json")));
    assert!(event.get("result_sha256").is_none());
    assert!(event.get("result_bytes").is_none());
}

#[tokio::test]
async fn an_error_result_is_an_error_and_outcomes_filter() {
    let bus = EventBus::new();
    let mut events = bus.subscribe(pattern("emit/*"), 8);
    let errors = emit(json!({"channel": "failures", "outcomes": ["error"]}), &Services::new(bus));
    let failed = mcp::CallToolResult::error(vec![mcp::ContentBlock::text("no such app")]);
    respond(&errors, ok_result(), &mut context()).await;
    assert!(events.try_recv().is_none(), "ok is not asked for");
    respond(&errors, failed, &mut context()).await;
    let event = events.try_recv().expect("published");
    assert_eq!(event.get("outcome"), Some(&json!("error")));
    assert_eq!(event.get("is_error"), Some(&json!(true)));
}

#[tokio::test]
async fn the_servers_and_tools_filters_apply_in_the_pipeline() {
    let bus = EventBus::new();
    let mut events = bus.subscribe(pattern("emit/*"), 8);
    let mut config = entry(json!({"channel": "deploys"}));
    config.tools = vec!["deploy_*".into()];
    config.servers = vec!["ci".into()];
    let emit = Emit::from_config(&config, &Services::new(bus)).expect("valid");
    let pipeline = Pipeline::new(vec![Arc::new(emit)]).expect("one entry");
    let run = async |server: &str, tool: &str| {
        let mut ctx = context();
        let target = ctx.target.as_mut().expect("target");
        target.server = server.into();
        target.original = tool.into();
        pipeline
            .response(InterceptionEvent::ToolsCall, Message::ToolResult(ok_result()), &mut ctx)
            .await
            .expect("never refused");
    };
    run("ci", "list_apps").await;
    run("other", "deploy_app").await;
    run("ci", "deploy_web").await;
    let event = events.try_recv().expect("the one that matches");
    assert_eq!(event.get("tool"), Some(&json!("deploy_web")));
    assert!(events.try_recv().is_none());
}

#[tokio::test]
async fn nothing_is_built_when_nobody_listens() {
    let bus = EventBus::new();
    let emit = emit(json!({"channel": "deploys"}), &Services::new(bus.clone()));
    assert!(!emit.shared.heard());
    let _other = bus.subscribe(pattern("tools/*"), 8);
    assert!(!emit.shared.heard(), "another kind's subscriber does not hear emit events");
    let _ours = bus.subscribe(pattern("emit/deploys"), 8);
    assert!(emit.shared.heard());
}

// === calls that never reach the response phase ===

/// `tools/call/denied` as the gateway's recorder publishes it.
fn denied(server: &str, tool: &str) -> Event {
    Event::new(kind::TOOLS_CALL_DENIED)
        .with("exposed", format!("{server}__{tool}"))
        .with("call", 12)
        .with("server", server)
        .with("tool", tool)
        .with("principal", "local:alice")
        .with("session", "s-1")
        .with("duration_ms", 1.5)
        .with("decisions", json!([]))
        .with("interceptor", "policy")
        .with("reason", "deploys are frozen")
}

#[tokio::test]
async fn a_refused_call_is_heard_on_the_bus_and_filtered_like_the_rest() {
    let bus = EventBus::new();
    let mut events = bus.subscribe(pattern("emit/*"), 8);
    let mut config = entry(json!({"channel": "deploys"}));
    config.tools = vec!["deploy_*".into()];
    let services = Services::new(bus.clone()).with_background(TaskTracker::new());
    let _emit = Emit::from_config(&config, &services).expect("valid");
    bus.publish(denied("ci", "list_apps"));
    bus.publish(denied("ci", "deploy_app"));
    let event = events.recv().await.expect("emitted");
    assert_eq!(event.kind, "emit/deploys");
    assert_eq!(event.get("outcome"), Some(&json!("refused")));
    assert_eq!(event.get("tool"), Some(&json!("deploy_app")), "list_apps is filtered out");
    assert_eq!(event.get("interceptor"), Some(&json!("emit")));
    assert_eq!(event.get("refused_by"), Some(&json!("policy")));
    assert_eq!(event.get("reason"), Some(&json!("deploys are frozen")));
    assert_eq!(event.get("call"), Some(&json!(12)));
    assert_eq!(event.get("principal"), Some(&json!("local:alice")));
    assert_eq!(event.get("session"), Some(&json!("s-1")));
    assert_eq!(event.get("duration_ms"), Some(&json!(1.5)));
    assert!(event.get("decisions").is_none());
    assert!(events.try_recv().is_none());
}

#[tokio::test]
async fn a_call_that_failed_without_a_result_is_an_error() {
    let bus = EventBus::new();
    let mut events = bus.subscribe(pattern("emit/*"), 8);
    let services = Services::new(bus.clone()).with_background(TaskTracker::new());
    let _emit = emit(json!({"channel": "c", "outcomes": ["error"]}), &services);
    let finished = |error: Option<&str>| {
        let event = Event::new(kind::TOOLS_CALL_FINISHED)
            .with("server", "ci")
            .with("tool", "deploy_app")
            .with("is_error", error.is_some());
        match error {
            Some(error) => event.with("error", error),
            None => event,
        }
    };
    // With a result: the response phase published it already.
    bus.publish(finished(None));
    bus.publish(denied("ci", "deploy_app"));
    bus.publish(finished(Some("the connection to ci was lost")));
    bus.publish(
        Event::new(kind::TOOLS_CALL_TIMEOUT)
            .with("server", "ci")
            .with("tool", "deploy_app")
            .with("error", "deploy_app on ci did not answer within 30s"),
    );
    let lost = events.recv().await.expect("emitted");
    assert_eq!(lost.get("outcome"), Some(&json!("error")));
    assert_eq!(lost.get("error"), Some(&json!("the connection to ci was lost")));
    let timeout = events.recv().await.expect("emitted");
    assert_eq!(timeout.get("error"), Some(&json!("deploy_app on ci did not answer within 30s")));
    assert!(events.try_recv().is_none(), "refused is not asked for; finished with a result is not");
}

#[test]
fn the_listener_subscribes_only_to_what_the_outcomes_need() {
    assert_eq!(listen_pattern(&[CallOutcome::Ok]), None);
    assert_eq!(listen_pattern(&[CallOutcome::Refused]).as_deref(), Some("tools/call/denied"));
    assert_eq!(
        listen_pattern(&[CallOutcome::Ok, CallOutcome::Error]).as_deref(),
        Some("tools/call/finished,tools/call/timeout")
    );
}

fn listen_pattern(outcomes: &[CallOutcome]) -> Option<String> {
    listen::pattern(outcomes)
}

#[tokio::test]
async fn a_pipeline_built_to_be_looked_at_starts_nothing() {
    let bus = EventBus::new();
    let options = json!({"channel": "deploys", "command": ["sh", "-c", "exit 1"]});
    let looked_at = emit(options.clone(), &Services::new(bus.clone()));
    assert_eq!(bus.subscriber_count(), 0, "no listener");
    assert!(looked_at.hook_stats().is_none(), "no command");
    assert_eq!(crate::check_pipeline(&[entry(options.clone())], false), Vec::new());
    assert_eq!(bus.subscriber_count(), 0);
    let running = emit(options, &Services::new(bus.clone()).with_background(TaskTracker::new()));
    assert_eq!(bus.subscriber_count(), 1, "the listener");
    assert!(running.hook_stats().is_some());
    // With only `ok`, nothing to listen for.
    let _ok_only = emit(
        json!({"channel": "x", "outcomes": ["ok"]}),
        &Services::new(bus.clone()).with_background(TaskTracker::new()),
    );
    assert_eq!(bus.subscriber_count(), 1);
}

#[tokio::test]
async fn a_pipeline_that_fails_to_build_leaves_no_listener_behind() {
    let bus = EventBus::new();
    let services = Services::new(bus.clone()).with_background(TaskTracker::new());
    let entries =
        [entry(json!({"channel": "c"})), crate::test_entry("nope", "pipeline[1]", json!({}))];
    crate::build_pipeline(&entries, &services).expect_err("an unknown kind");
    // The listener hears the next event, finds its entry gone, and unsubscribes.
    bus.publish(denied("ci", "deploy_app"));
    tokio::time::timeout(Duration::from_secs(10), async {
        while bus.subscriber_count() > 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the listener ended");
}

// === the command ===

#[tokio::test]
async fn the_command_gets_the_event_as_json_on_stdin() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("event.json");
    let bus = EventBus::new();
    let mut events = bus.subscribe(pattern("emit/*"), 8);
    let tracker = TaskTracker::new();
    let services = Services::new(bus).with_background(tracker.clone());
    let script = format!("cat > '{}'", file.display());
    let emit = emit(json!({"channel": "deploys", "command": ["sh", "-c", script]}), &services);
    respond(&emit, ok_result(), &mut context()).await;
    // What shutdown does: wait for the commands.
    tracker.close();
    tracker.wait().await;
    let published = events.try_recv().expect("published");
    let written: Value =
        serde_json::from_slice(&std::fs::read(&file).expect("written")).expect("JSON");
    assert_eq!(written, serde_json::to_value(&published).expect("json"));
    assert_eq!(written["kind"], "emit/deploys");
    assert_eq!(
        emit.hook_stats(),
        Some(HookStats { started: 1, dropped: 0, failed: 0, timed_out: 0 })
    );
}

#[tokio::test]
async fn when_every_slot_is_busy_the_event_is_not_given_to_the_command() {
    let tracker = TaskTracker::new();
    let services = Services::new(EventBus::new()).with_background(tracker.clone());
    // Runs until the test's runtime drops it (kill_on_drop).
    let emit = emit(
        json!({
            "channel": "c",
            "command": ["sh", "-c", "exec sleep 300"],
            "concurrency": 1,
            "command_timeout": "10m",
        }),
        &services,
    );
    let mut ctx = context();
    respond(&emit, ok_result(), &mut ctx).await;
    respond(&emit, ok_result(), &mut ctx).await;
    respond(&emit, ok_result(), &mut ctx).await;
    assert_eq!(
        emit.hook_stats(),
        Some(HookStats { started: 1, dropped: 2, failed: 0, timed_out: 0 })
    );
}

#[tokio::test]
async fn a_command_past_its_timeout_is_counted_and_frees_its_slot() {
    let tracker = TaskTracker::new();
    let services = Services::new(EventBus::new()).with_background(tracker.clone());
    let emit = emit(
        json!({
            "channel": "c",
            "command": ["sh", "-c", "exec sleep 300"],
            "concurrency": 1,
            "command_timeout": "200ms",
        }),
        &services,
    );
    tracker.close();
    respond(&emit, ok_result(), &mut context()).await;
    tracker.wait().await;
    assert_eq!(
        emit.hook_stats(),
        Some(HookStats { started: 1, dropped: 0, failed: 0, timed_out: 1 })
    );
    // Its slot is free again.
    respond(&emit, ok_result(), &mut context()).await;
    tracker.wait().await;
    assert_eq!(
        emit.hook_stats(),
        Some(HookStats { started: 2, dropped: 0, failed: 0, timed_out: 2 })
    );
}

#[tokio::test]
async fn a_command_that_fails_is_counted() {
    let tracker = TaskTracker::new();
    let services = Services::new(EventBus::new()).with_background(tracker.clone());
    let emit = emit(json!({"channel": "c", "command": ["false"]}), &services);
    tracker.close();
    respond(&emit, ok_result(), &mut context()).await;
    tracker.wait().await;
    assert_eq!(emit.hook_stats().map(|s| (s.started, s.failed)), Some((1, 1)));
}
