//! Scripts compiled, called, contained and reloaded.

use std::time::Duration;

use tokio::time::Instant;

use serde_json::json;

use super::*;

fn engine() -> Arc<Engine> {
    Engine::new(None, Limits { timeout: Duration::from_secs(5), ..Limits::default() })
        .expect("engine")
}

fn compiled(text: &str) -> Compiled {
    engine().compile(Path::new("test.rn"), text).expect("compiles")
}

#[tokio::test]
async fn a_hook_gets_json_and_returns_json() {
    let script = compiled(
        r#"
        use toolgate::{json, regex};
        pub async fn before_call(call, ctx) {
            let text = json::stringify(call.arguments)?;
            #{ arguments: #{ n: call.arguments.n + 1, was: text, digits: regex::find_all("[0-9]+", "a1b22")? }, keep: ctx.server }
        }
        "#,
    );
    assert!(script.defines("before_call"));
    assert!(!script.defines("after_call"));
    let out = script
        .call(
            "before_call",
            vec![json!({"arguments": {"n": 41}}), json!({"server": "fs"})],
            Limits::default(),
        )
        .await
        .expect("ran");
    assert_eq!(
        out,
        json!({"arguments": {"n": 42, "was": "{\"n\":41}", "digits": ["1", "22"]}, "keep": "fs"})
    );
}

#[tokio::test]
async fn an_endless_loop_is_stopped_by_the_instruction_budget() {
    let script = compiled("pub fn spin() { loop {} }");
    let limits = Limits { instructions: 100_000, ..Limits::default() };
    let started = Instant::now();
    let failure = script.call("spin", vec![], limits).await.expect_err("halted");
    assert_eq!(failure, Failure::Budget(100_000));
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
}

#[tokio::test]
async fn a_huge_allocation_is_stopped_by_the_memory_limit() {
    let script = compiled(
        "pub fn grow() { let v = []; loop { v.push(\"0123456789012345678901234567890123456789\"); } }",
    );
    let limits = Limits { instructions: usize::MAX, memory: 1 << 20, ..Limits::default() };
    let failure = script.call("grow", vec![], limits).await.expect_err("stopped");
    assert!(matches!(failure, Failure::Memory(_)), "{failure:?}");
}

#[tokio::test]
async fn deep_recursion_is_contained() {
    let script = compiled("fn down(n) { down(n + 1) + 1 } pub fn deep() { down(0) }");
    let failure = script.call("deep", vec![], Limits::default()).await.expect_err("stopped");
    assert!(matches!(failure, Failure::Budget(_) | Failure::Memory(_)), "{failure:?}");
}

#[tokio::test]
async fn a_panic_in_a_script_is_an_error_not_a_crash() {
    let script = compiled(r#"pub fn boom() { panic("no way") }"#);
    let failure = script.call("boom", vec![], Limits::default()).await.expect_err("failed");
    assert!(failure.to_string().contains("no way"), "{failure}");
}

// Real time: scripts run on threads of their own, whose clock a test cannot pause.
#[tokio::test]
async fn waiting_longer_than_the_timeout_is_a_timeout() {
    let script =
        compiled("use toolgate::time; pub async fn wait() { time::sleep_ms(60000).await; 1 }");
    let limits = Limits { timeout: Duration::from_millis(50), ..Limits::default() };
    let failure = script.call("wait", vec![], limits).await.expect_err("timed out");
    assert_eq!(failure, Failure::Timeout(Duration::from_millis(50)));
    let quick = compiled("use toolgate::time; pub async fn wait() { time::sleep_ms(10).await; 1 }");
    assert_eq!(quick.call("wait", vec![], limits).await, Ok(json!(1)));
}

#[test]
fn a_compile_error_names_its_line_and_column() {
    let error = engine()
        .compile(Path::new("broken.rn"), "pub fn a() {\n    let x = ;\n}\n")
        .expect_err("does not compile");
    let first = error.diagnostics.iter().find(|d| d.error).expect("an error");
    assert_eq!((first.line, first.column), (2, 13), "{first:?}");
    assert!(error.rendered.contains("broken.rn"), "{}", error.rendered);
    assert!(error.to_string().starts_with("broken.rn: 2:13:"), "{error}");
}

#[test]
fn meta_is_read_at_compile_time_and_checked() {
    let script = compiled(r#"pub fn meta() { #{ priority: -3, tools: ["write_*"] } }"#);
    assert_eq!(script.meta.priority, Some(-3));
    let error = engine()
        .compile(Path::new("m.rn"), r#"pub fn meta() { #{ priorty: 1 } }"#)
        .expect_err("unknown key");
    assert!(error.to_string().contains("priorty"), "{error}");
}

#[test]
fn a_script_without_stdout_cannot_write_to_the_mcp_channel() {
    // println! compiles against the core modules only when stdio is installed: it is not.
    let error = engine().compile(Path::new("p.rn"), r#"pub fn f() { println!("x") }"#);
    assert!(error.is_err(), "println must not be available");
}

#[test]
fn a_reload_that_fails_keeps_the_version_before() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("s.rn");
    std::fs::write(&path, "pub fn v() { 1 }").expect("write");
    let script = Script::load(engine(), &path).expect("loads");
    let first = script.current().expect("a version");
    std::fs::write(&path, "pub fn v( { 2 }").expect("write");
    assert!(script.reload().is_err());
    assert!(Arc::ptr_eq(&first, &script.current().expect("still")), "the old version runs on");
    std::fs::write(&path, "pub fn v() { 2 }").expect("write");
    assert_eq!(script.reload().expect("reloads"), 2);
    assert!(!Arc::ptr_eq(&first, &script.current().expect("new")));
    script.unload();
    assert!(script.current().is_none());
}

#[tokio::test]
async fn tokens_and_time_are_there() {
    let script = compiled(
        "use toolgate::time; pub fn f() { #{ t: toolgate::tokens(\"hello world\"), now: time::now_ms() > 0 } }",
    );
    let out = script.call("f", vec![], Limits::default()).await.expect("ran");
    assert_eq!(out, json!({"t": 2, "now": true}));
}

#[tokio::test]
async fn publish_puts_an_event_on_the_bus() {
    let bus = toolgate_audit::EventBus::new();
    let mut events = bus.subscribe(toolgate_audit::EventPattern::all(), 8);
    let engine = Engine::new(Some(bus), Limits::default()).expect("engine");
    let script = engine
        .compile(Path::new("p.rn"), r#"pub fn f() { toolgate::publish("seen", #{ n: 3 }) }"#)
        .expect("compiles");
    script.call("f", vec![], Limits::default()).await.expect("ran");
    let event = events.recv().await.expect("an event");
    assert_eq!(event.kind, "script/seen");
    assert_eq!(event.fields.get("n"), Some(&json!(3)));
}
