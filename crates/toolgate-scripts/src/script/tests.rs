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

/// What a script may not reach, tried the ways Rune offers, with the item the compiler then
/// says is missing. Rune always installs the macros `println!`, `print!` and `dbg!`, which
/// call `std::io`'s functions of those names: only a context built with stdio has them.
/// Files, processes and the network are the `fs`, `process` and `http` modules of
/// `rune-modules`, at the root, which toolgate does not use; std-like paths are tried too.
const REFUSED: &[(&str, &str)] = &[
    (r#"pub fn f() { println!("to the MCP channel") }"#, "std::io::println"),
    (r#"pub fn f() { print!("to the MCP channel") }"#, "std::io::print"),
    (r#"pub fn f() { dbg!("to the MCP channel") }"#, "std::io::dbg"),
    (r#"pub fn f() { std::io::println("to the MCP channel") }"#, "std::io::println"),
    (r#"pub fn f() { std::io::stdout() }"#, "std::io::stdout"),
    (r#"pub async fn f() { fs::read_to_string("/etc/passwd").await }"#, "fs::read_to_string"),
    (r#"pub fn f() { std::fs::read_to_string("/etc/passwd") }"#, "std::fs::read_to_string"),
    (r#"pub fn f() { std::fs::write("notes.txt", "y") }"#, "std::fs::write"),
    (r#"pub async fn f() { http::get("http://127.0.0.1:9/").await }"#, "http::get"),
    (
        r#"pub fn f() { std::net::TcpStream::connect("127.0.0.1:9") }"#,
        "std::net::TcpStream::connect",
    ),
    (r#"pub fn f() { process::Command::new("sh") }"#, "process::Command::new"),
    (r#"pub fn f() { std::process::Command::new("sh") }"#, "std::process::Command::new"),
    (r#"pub fn f() { std::env::var("HOME") }"#, "std::env::var"),
];

#[tokio::test]
async fn a_script_reaches_no_file_network_process_or_stdout() {
    let engine = engine();
    // The control: what scripts are given compiles and runs on the same engine (core
    // modules, macros that build text, the toolgate module), so a refusal below is the
    // sandbox's and not an engine that refuses everything.
    let allowed = engine
        .compile(
            Path::new("allowed.rn"),
            r#"
            use toolgate::json;
            pub fn f() {
                let v = [1, 2];
                v.push(3);
                let text = format!("{} items", v.len());
                #{ text, json: json::stringify(v)?, upper: "ok".to_uppercase() }
            }
            "#,
        )
        .expect("the allowed things compile");
    assert_eq!(
        allowed.call("f", vec![], Limits::default()).await,
        Ok(json!({"text": "3 items", "json": "[1,2,3]", "upper": "OK"}))
    );
    for (source, missing) in REFUSED {
        let error = engine.compile(Path::new("refused.rn"), source).expect_err(source);
        let first = error.diagnostics.iter().find(|d| d.error).expect("an error");
        // The compiler names the item as it resolved it: `::std::io::println`,
        // `{root}::fs::read_to_string` or `process::Command::new`.
        let item = first
            .message
            .strip_prefix("Missing item ")
            .map(|item| item.trim_start_matches("{root}").trim_start_matches("::"));
        assert_eq!(item, Some(*missing), "{source}:\n{}", error.rendered);
    }
}

/// The same at run time: the engine's runtime has no function that writes to stdout, which
/// Rune's `std::io` module holds only when built with stdio (as the control shows).
#[test]
fn the_engine_has_no_std_io_output_functions() {
    let with_stdio = Context::with_config(true).expect("context").runtime().expect("runtime");
    let engine = engine();
    for name in ["print", "println", "dbg"] {
        let item = rune::ItemBuf::with_crate_item("std", ["io", name]).expect("an item");
        let hash = rune::Hash::type_hash(&*item);
        assert!(with_stdio.function(&hash).is_some(), "the control: std::io::{name} with stdio");
        assert!(engine.runtime.function(&hash).is_none(), "std::io::{name} is installed");
    }
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
