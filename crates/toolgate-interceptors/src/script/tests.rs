//! The `script` kind through a real pipeline: decisions, contained failures with their
//! events, ordering among built-ins, and reloads under concurrent calls.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolgate_audit::{EventBus, EventPattern};
use toolgate_intercept::{Pipeline, Principal, Stopped, Target};

use super::*;
use crate::test_entry;

struct Setup {
    dir: tempfile::TempDir,
    services: Services,
    bus: EventBus,
}

fn setup() -> Setup {
    let bus = EventBus::new();
    let dir = tempfile::tempdir().expect("dir");
    let services =
        Services::new(bus.clone()).with_config_dir(Some(dir.path().to_owned())).with_script_limits(
            Limits { instructions: 200_000, memory: 4 << 20, timeout: Duration::from_secs(2) },
        );
    Setup { dir, services, bus }
}

impl Setup {
    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.dir.path().join(name), text).expect("write the script");
    }

    fn pipeline(&self, entries: &[serde_json::Value]) -> Pipeline {
        let entries: Vec<InterceptorConfig> = entries
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let kind = e["kind"].as_str().expect("kind").to_owned();
                let mut options = e.as_object().expect("table").clone();
                options.remove("kind");
                let mut entry = test_entry(&kind, &format!("pipeline[{i}]"), json!(options));
                if let Some(priority) = e.get("priority").and_then(|p| p.as_i64()) {
                    entry.priority = priority as i32;
                    entry.options.remove("priority");
                }
                if let Some(name) = e.get("name").and_then(|p| p.as_str()) {
                    entry.name = Some(name.to_owned());
                    entry.options.remove("name");
                }
                if let Some(fail_open) = e.get("fail_open").and_then(|p| p.as_bool()) {
                    entry.fail_open = Some(fail_open);
                    entry.options.remove("fail_open");
                }
                entry
            })
            .collect();
        crate::build_pipeline(&entries, &self.services).expect("builds")
    }
}

fn ctx() -> CallContext {
    let mut ctx = CallContext::new(Principal::local());
    ctx.target = Some(Target {
        server: "fs".into(),
        original: "write_file".into(),
        exposed: "fs__write_file".into(),
        tool: None,
    });
    ctx
}

fn call(arguments: serde_json::Value) -> Message {
    Message::CallTool(
        mcp::CallToolRequestParams::new("fs__write_file")
            .with_arguments(arguments.as_object().expect("object").clone()),
    )
}

#[tokio::test]
async fn before_call_denies_rewrites_and_answers() {
    let s = setup();
    s.write(
        "rules.rn",
        r#"
        pub async fn before_call(call, ctx) {
            if call.arguments.path == "/etc/passwd" { return #{ deny: "not that file" }; }
            if call.arguments.path == "cached" { return #{ answer: #{ content: [#{ type: "text", text: "from the script" }] } }; }
            #{ arguments: #{ path: call.arguments.path, by: ctx.principal } }
        }
        "#,
    );
    let pipeline = s.pipeline(&[json!({"kind": "script", "file": "rules.rn"})]);
    let refused = pipeline
        .request(InterceptionEvent::ToolsCall, call(json!({"path": "/etc/passwd"})), &mut ctx())
        .await
        .expect_err("denied");
    match refused {
        Stopped::Refused(r) => {
            assert_eq!(r.reason, "not that file");
            assert_eq!(r.interceptor, "rules");
        }
        other => panic!("{other:?}"),
    }
    let answered = pipeline
        .request(InterceptionEvent::ToolsCall, call(json!({"path": "cached"})), &mut ctx())
        .await
        .expect_err("answered");
    assert!(matches!(answered, Stopped::Answered(_)), "{answered:?}");
    let rewritten = pipeline
        .request(InterceptionEvent::ToolsCall, call(json!({"path": "/tmp/a"})), &mut ctx())
        .await
        .expect("goes on");
    let Message::CallTool(params) = rewritten else { panic!("a call") };
    assert_eq!(json!(params.arguments), json!({"path": "/tmp/a", "by": "local:local"}));
}

#[tokio::test]
async fn after_call_sees_what_before_call_kept_and_changes_the_result() {
    let s = setup();
    s.write(
        "note.rn",
        r#"
        pub async fn before_call(call, ctx) { #{ keep: call.arguments.path } }
        pub async fn after_call(call, result, ctx) {
            result.content.push(#{ type: "text", text: `wrote ${ctx.kept} via ${call.server}` });
            result
        }
        "#,
    );
    let pipeline = s.pipeline(&[json!({"kind": "script", "file": "note.rn"})]);
    let mut ctx = ctx();
    pipeline
        .request(InterceptionEvent::ToolsCall, call(json!({"path": "/x"})), &mut ctx)
        .await
        .expect("on");
    let result = mcp::CallToolResult::success(vec![mcp::ContentBlock::text("ok")]);
    let out = pipeline
        .response(InterceptionEvent::ToolsCall, Message::ToolResult(result), &mut ctx)
        .await
        .expect("through");
    let Message::ToolResult(result) = out else { panic!("a result") };
    assert_eq!(result.content[1].as_text().expect("text").text, "wrote /x via fs");
}

#[tokio::test]
async fn each_kind_of_failure_is_contained_with_its_event() {
    let s = setup();
    s.write("spin.rn", "pub async fn before_call(call, ctx) { loop {} }");
    s.write("boom.rn", r#"pub async fn before_call(call, ctx) { panic("boom") }"#);
    s.write("grow.rn", r#"pub async fn before_call(call, ctx) { let v = []; loop { v.push("0123456789012345678901234567890123456789"); } }"#);
    s.write(
        "slow.rn",
        "use toolgate::time; pub async fn before_call(call, ctx) { time::sleep_ms(60000).await; }",
    );
    s.write("wrong.rn", "pub async fn before_call(call, ctx) { 42 }");
    for (file, cause) in [
        ("spin.rn", "budget"),
        ("boom.rn", "panic"),
        ("grow.rn", "memory"),
        ("slow.rn", "timeout"),
        ("wrong.rn", "result"),
    ] {
        let mut events = s.bus.subscribe(EventPattern::parse("script/*").expect("pattern"), 16);
        let timeout = if file == "slow.rn" { json!("50ms") } else { json!("2s") };
        let pipeline = {
            let mut e = test_entry("script", "pipeline[0]", json!({"file": file}));
            e.timeout = toolgate_core::duration::parse(timeout.as_str().expect("text")).ok();
            crate::build_pipeline(&[e], &s.services).expect("builds")
        };
        let outcome =
            pipeline.request(InterceptionEvent::ToolsCall, call(json!({})), &mut ctx()).await;
        assert!(
            matches!(outcome, Err(Stopped::Refused(ref r)) if r.reason.contains("fails closed")),
            "{file}: {outcome:?}"
        );
        let event = tokio::time::timeout(Duration::from_secs(30), events.recv())
            .await
            .unwrap_or_else(|_| panic!("{file}: no script/failed event"))
            .expect("an event");
        assert_eq!(event.kind, "script/failed", "{file}");
        assert_eq!(event.fields["cause"], json!(cause), "{file}: {:?}", event.fields);
        assert_eq!(event.fields["function"], json!("before_call"));
    }
}

#[tokio::test]
async fn a_script_that_fails_open_lets_the_call_through() {
    let s = setup();
    s.write(
        "spin.rn",
        "pub fn meta() { #{ fail_open: true } } pub async fn before_call(call, ctx) { loop {} }",
    );
    let pipeline = s.pipeline(&[json!({"kind": "script", "file": "spin.rn"})]);
    let out =
        pipeline.request(InterceptionEvent::ToolsCall, call(json!({"a": 1})), &mut ctx()).await;
    assert!(out.is_ok(), "{out:?}");
}

#[tokio::test]
async fn scripts_take_their_place_among_built_ins_by_priority() {
    let s = setup();
    // Each appends its name to a `trail` argument; the built-in arg_map sets a default first.
    s.write("late.rn", r#"pub fn meta() { #{ priority: 20 } } pub async fn before_call(call, ctx) { let a = call.arguments; a.trail = `${a.trail},late`; #{ arguments: a } }"#);
    s.write("early.rn", r#"pub fn meta() { #{ priority: -20 } } pub async fn before_call(call, ctx) { let a = call.arguments; a.trail = `${a.trail},early`; #{ arguments: a } }"#);
    let pipeline = s.pipeline(&[
        json!({"kind": "script", "file": "late.rn"}),
        json!({"kind": "script", "file": "early.rn"}),
        json!({"kind": "script", "file": "late.rn", "name": "late-again", "priority": -30}),
    ]);
    let names: Vec<_> = pipeline.run_order(Phase::Request).iter().map(|d| d.name.clone()).collect();
    assert_eq!(names, ["late-again", "early", "late"], "the entry's priority wins over meta()");
    let out = pipeline
        .request(InterceptionEvent::ToolsCall, call(json!({"trail": "start"})), &mut ctx())
        .await
        .expect("on");
    let Message::CallTool(params) = out else { panic!() };
    assert_eq!(params.arguments.expect("args")["trail"], json!("start,late,early,late"));
}

#[tokio::test]
async fn on_list_tools_hides_and_rewords() {
    let s = setup();
    s.write(
        "list.rn",
        r#"pub async fn on_list_tools(tools, ctx) {
            let shown = [];
            for tool in tools { if tool.name != "fs__delete" { tool.description = `[${tool.server}] ${tool.description}`; shown.push(tool); } }
            shown
        }"#,
    );
    let pipeline = s.pipeline(&[json!({"kind": "script", "file": "list.rn"})]);
    let tool = |name: &str| Listed {
        server: "fs".to_owned(),
        original: name.trim_start_matches("fs__").to_owned(),
        item: mcp::Tool::new(name.to_owned(), "does things", Arc::new(Default::default())),
    };
    let out = pipeline
        .response(
            InterceptionEvent::ToolsList,
            Message::Tools(vec![tool("fs__read"), tool("fs__delete")]),
            &mut CallContext::new(Principal::local()),
        )
        .await
        .expect("listed");
    let Message::Tools(tools) = out else { panic!() };
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].item.description.as_deref(), Some("[fs] does things"));
    assert_eq!(tools[0].original, "read");
}

#[tokio::test]
async fn a_missing_or_broken_file_is_a_config_error_naming_the_entry() {
    let s = setup();
    s.write("broken.rn", "pub fn before_call( {");
    let entries = [
        test_entry("script", "pipeline[0]", json!({"file": "missing.rn"})),
        test_entry("script", "pipeline[1]", json!({"file": "broken.rn"})),
        test_entry("script", "pipeline[2]", json!({})),
    ];
    let errors = crate::build_pipeline(&entries, &s.services).expect_err("refused");
    let text: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    assert!(text[0].starts_with("pipeline[0].file:"), "{text:?}");
    assert!(text[1].starts_with("pipeline[1].file:") && text[1].contains("broken.rn"), "{text:?}");
    assert!(
        text[2].starts_with("pipeline[2].file:") && text[2].contains("missing `file`"),
        "{text:?}"
    );
}

#[tokio::test]
async fn a_hundred_reloads_during_concurrent_calls_fail_no_call() {
    let s = setup();
    // Both versions answer consistently: before_call keeps its version, after_call must see
    // the same one.
    let version = |n: u32| {
        format!(
            "pub async fn before_call(call, ctx) {{ #{{ keep: {n} }} }}\n\
             pub async fn after_call(call, result, ctx) {{ if ctx.kept != {n} {{ panic(\"mixed versions\") }} result.content.push(#{{ type: \"text\", text: \"v{n}\" }}); result }}\n"
        )
    };
    s.write("v.rn", &version(0));
    let pipeline = Arc::new(s.pipeline(&[json!({"kind": "script", "file": "v.rn"})]));
    let script = s.services.scripts.load(&s.dir.path().join("v.rn")).expect("loaded");
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut callers = Vec::new();
    for _ in 0..4 {
        let (pipeline, stop) = (pipeline.clone(), stop.clone());
        callers.push(tokio::spawn(async move {
            let mut calls = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) || calls == 0 {
                let mut ctx = ctx();
                pipeline
                    .request(InterceptionEvent::ToolsCall, call(json!({})), &mut ctx)
                    .await
                    .expect("request phase");
                tokio::task::yield_now().await;
                let result = mcp::CallToolResult::success(vec![]);
                let out = pipeline
                    .response(InterceptionEvent::ToolsCall, Message::ToolResult(result), &mut ctx)
                    .await
                    .expect("response phase");
                let Message::ToolResult(result) = out else { panic!() };
                assert_eq!(result.content.len(), 1, "one version's note, whole");
                calls += 1;
            }
            calls
        }));
    }
    for n in 1..=100 {
        s.write("v.rn", &version(n));
        script.reload().expect("each version compiles");
        tokio::task::yield_now().await;
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    for caller in callers {
        assert!(caller.await.expect("no call failed") > 0);
    }
    assert_eq!(script.version(), 101);
}

/// The pipeline of one example of `examples/scripts/`.
fn example(s: &Setup, name: &str) -> Pipeline {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scripts").join(name);
    let entry = test_entry("script", "pipeline[0]", json!({"file": path.to_string_lossy()}));
    crate::build_pipeline(&[entry], &s.services).expect("the example builds")
}

/// The request phase, then the response phase with `result`.
async fn through(
    pipeline: &Pipeline,
    ctx: &mut CallContext,
    arguments: serde_json::Value,
    result: mcp::CallToolResult,
) -> Result<mcp::CallToolResult, String> {
    if let Err(stopped) = pipeline.request(InterceptionEvent::ToolsCall, call(arguments), ctx).await
    {
        return Err(format!("{stopped:?}"));
    }
    match pipeline.response(InterceptionEvent::ToolsCall, Message::ToolResult(result), ctx).await {
        Ok(Message::ToolResult(result)) => Ok(result),
        other => Err(format!("{other:?}")),
    }
}

fn text(text: &str) -> mcp::CallToolResult {
    mcp::CallToolResult::success(vec![mcp::ContentBlock::text(text)])
}

#[tokio::test]
async fn the_examples_do_what_they_say() {
    let s = setup();
    // deny_by_argument: only under /tmp/.
    let deny = example(&s, "deny_by_argument.rn");
    let refused = through(&deny, &mut ctx(), json!({"path": "/etc/passwd"}), text("x")).await;
    assert!(refused.expect_err("refused").contains("not allowed here"));
    assert!(through(&deny, &mut ctx(), json!({"path": "/tmp/a"}), text("x")).await.is_ok());

    // redact_field: structured `token` and key-like text.
    let redact = example(&s, "redact_field.rn");
    let mut result = text("key sk-abcdefghijklmnopqrstuvwxyz0123 end");
    result.structured_content = Some(json!({"token": "t0k3n", "user": "ana"}));
    let out = through(&redact, &mut ctx(), json!({}), result).await.expect("through");
    assert_eq!(out.content[0].as_text().expect("text").text, "key [redacted] end");
    assert_eq!(out.structured_content, Some(json!({"token": "[redacted]", "user": "ana"})));

    // add_meta: where the result came from.
    let meta = example(&s, "add_meta.rn");
    let out = through(&meta, &mut ctx(), json!({}), text("x")).await.expect("through");
    let meta = serde_json::to_value(out.meta.expect("_meta")).expect("json");
    assert_eq!(meta["io.example/served_by"], json!("fs/write_file"));
    assert!(meta["io.example/at_ms"].as_i64().expect("a time") > 0);

    // summarise_long: a long text is cut, a short one left alone.
    let summarise = example(&s, "summarise_long.rn");
    let long = "word ".repeat(5_000);
    let out = through(&summarise, &mut ctx(), json!({}), text(&long)).await.expect("through");
    let cut = &out.content[0].as_text().expect("text").text;
    assert!(cut.len() < 4_200 && cut.contains("tokens in all"), "{}", &cut[cut.len() - 80..]);
    let out = through(&summarise, &mut ctx(), json!({}), text("short")).await.expect("through");
    assert_eq!(out.content[0].as_text().expect("text").text, "short");

    // rate_limit: within one second, the sixth call of a tool is refused. Eleven calls in a
    // few milliseconds fall in at most two windows, so one of them holds six.
    let limit = example(&s, "rate_limit.rn");
    let mut refused = 0;
    for _ in 0..11 {
        let mut ctx = ctx();
        ctx.principal = Principal::new("test", "rate-limit-example");
        if through(&limit, &mut ctx, json!({}), text("x")).await.is_err() {
            refused += 1;
        }
    }
    assert!(refused >= 1, "the rate limit refused nothing");
}

#[tokio::test]
async fn a_script_without_a_hook_does_not_make_the_pipeline_read_results() {
    let s = setup();
    s.write("tools_only.rn", "pub fn tools() { [#{ name: \"t\" }] }\npub fn call_t(a, c) { 1 }");
    s.write("before_only.rn", "pub async fn before_call(call, ctx) { }");
    let tools_only = s.pipeline(&[json!({"kind": "script", "file": "tools_only.rn"})]);
    let mut context = ctx();
    assert!(!tools_only.runs_on(InterceptionEvent::ToolsCall, Phase::Request, &context));
    assert!(!tools_only.runs_on(InterceptionEvent::ToolsCall, Phase::Response, &context));
    assert!(!tools_only.runs_on(InterceptionEvent::ToolsList, Phase::Response, &context));

    let before_only = s.pipeline(&[json!({"kind": "script", "file": "before_only.rn"})]);
    assert!(before_only.runs_on(InterceptionEvent::ToolsCall, Phase::Request, &context));
    before_only
        .request(InterceptionEvent::ToolsCall, call(json!({"path": "/tmp/a"})), &mut context)
        .await
        .expect("goes on");
    // A reload that adds after_call while the call runs: the call keeps its version, which
    // has none.
    s.write(
        "before_only.rn",
        "pub async fn before_call(call, ctx) { }\npub async fn after_call(call, result, ctx) { }",
    );
    let script = s.services.scripts.load(&s.dir.path().join("before_only.rn")).expect("loaded");
    script.reload().expect("reloads");
    assert!(!before_only.runs_on(InterceptionEvent::ToolsCall, Phase::Response, &context));
    assert!(before_only.runs_on(InterceptionEvent::ToolsCall, Phase::Response, &ctx()));
}
