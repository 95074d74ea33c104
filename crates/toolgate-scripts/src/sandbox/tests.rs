//! The sandbox against scripts that try to outlast it: loops over native functions, budgets
//! too large to stop anything, huge inputs and outputs, and scripts that would hold the
//! caller's runtime.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::script::{Compiled, Engine};
use crate::{Failure, Limits, MAX_INPUT};

fn compiled(text: &str) -> Compiled {
    let engine = Engine::new(None, Limits::default()).expect("engine");
    engine.compile(Path::new("t.rn"), text).expect("compiles")
}

/// A budget no script spends: only the clock can stop it.
fn unlimited(timeout: Duration) -> Limits {
    Limits { instructions: usize::MAX, timeout, ..Limits::default() }
}

/// Text of about `bytes` bytes.
fn text(bytes: usize) -> Value {
    Value::String("word ".repeat(bytes / 5))
}

/// A call's outcome, awaited for at most half a minute: a sandbox that does not end a script
/// fails the test instead of hanging it (every script here ends within seconds when it works).
async fn ended(call: impl Future<Output = Result<Value, Failure>>) -> Result<Value, Failure> {
    tokio::time::timeout(Duration::from_secs(30), call)
        .await
        .expect("the sandbox did not end the script within 30 s")
}

const TOKENS_FOR_EVER: &str = "pub fn spin(text) { loop { toolgate::tokens(text); } }";

#[tokio::test]
async fn a_loop_over_a_native_function_spends_the_budget_by_the_size_of_its_input() {
    let script = compiled(TOKENS_FOR_EVER);
    // 1 MiB costs a quarter of the default million instructions: the fifth call is refused
    // before it works, whatever the clock says.
    let limits = Limits { timeout: Duration::from_secs(600), ..Limits::default() };
    let failure =
        ended(script.call("spin", vec![text(1 << 20)], limits)).await.expect_err("stopped");
    assert_eq!(failure, Failure::Budget(limits.instructions));
}

#[tokio::test]
async fn the_deadline_stops_a_script_whose_budget_would_not() {
    for source in [TOKENS_FOR_EVER, "pub fn spin(text) { let n = 0; loop { n += 1; } }"] {
        let script = compiled(source);
        let limits = unlimited(Duration::from_millis(300));
        let started = tokio::time::Instant::now();
        let failure =
            ended(script.call("spin", vec![text(64 << 10)], limits)).await.expect_err("stopped");
        assert_eq!(failure, Failure::Timeout(limits.timeout), "{source}");
        // Near the deadline; the margin is for a loaded machine (without the deadline the
        // loop runs for ever).
        assert!(started.elapsed() < Duration::from_secs(5), "{source}: {:?}", started.elapsed());
    }
}

#[tokio::test]
async fn an_input_over_the_cap_is_refused_before_any_work() {
    let script = compiled("pub fn f(text) { toolgate::tokens(text) }");
    let failure = ended(script.call("f", vec![text(MAX_INPUT + 10)], Limits::default()))
        .await
        .expect_err("refused");
    assert!(failure.to_string().contains("bytes is more than"), "{failure}");
    let fine = ended(script.call("f", vec![json!("hello world")], Limits::default())).await;
    assert_eq!(fine, Ok(json!(2)));
    // The cap itself is taken (with a budget that pays for it).
    let limits = unlimited(Duration::from_secs(60));
    let at_cap = ended(script.call("f", vec![json!("a".repeat(MAX_INPUT))], limits)).await;
    assert!(at_cap.is_ok(), "{at_cap:?}");
}

#[tokio::test]
async fn what_native_functions_build_counts_against_the_memory_limit() {
    let limits = Limits { memory: 1 << 20, ..Limits::default() };
    // A JSON array of a hundred thousand small objects: about 100 KiB of text, many times
    // that as values.
    let array = format!("[{}]", vec!["{\"a\": [1, 2, 3]}"; 100_000].join(","));
    let parse = compiled("pub fn f(text) { toolgate::json::parse(text) }");
    let failure = ended(parse.call("f", vec![json!(array)], limits)).await.expect_err("over");
    assert_eq!(failure, Failure::Memory(limits.memory));
    // Every position of 200 KiB matches the empty pattern: 200 thousand strings.
    let find = compiled(r#"pub fn f(text) { toolgate::regex::find_all("", text) }"#);
    let failure = ended(find.call("f", vec![text(200 << 10)], limits)).await.expect_err("over");
    assert_eq!(failure, Failure::Memory(limits.memory));
    // The memory the tokenizer needs for a text is held against the limit while it counts.
    let tokens = compiled("pub fn f(text) { toolgate::tokens(text) }");
    let failure = ended(tokens.call("f", vec![text(900 << 10)], limits)).await.expect_err("over");
    assert_eq!(failure, Failure::Memory(limits.memory));
    assert!(ended(parse.call("f", vec![json!("[1, 2]")], limits)).await.is_ok());
}

#[tokio::test]
async fn a_replacement_cannot_multiply_the_text_past_the_cap() {
    let script =
        compiled(r#"pub fn f(text, with) { toolgate::regex::replace_all("", text, with) }"#);
    let limits = unlimited(Duration::from_secs(60));
    let failure = ended(script.call("f", vec![text(64 << 10), text(64 << 10)], limits))
        .await
        .expect_err("refused");
    assert!(failure.to_string().contains("more than"), "{failure}");
    let fine = ended(script.call("f", vec![json!("ab"), json!("-")], limits)).await;
    assert_eq!(fine, Ok(json!("-a-b-")));
}

#[tokio::test]
async fn a_rate_key_is_short() {
    let script = compiled(r#"pub fn f(key) { toolgate::rate::hit(key, 1000) }"#);
    let failure =
        ended(script.call("f", vec![text(4096)], Limits::default())).await.expect_err("refused");
    assert!(failure.to_string().contains("longer than"), "{failure}");
    assert_eq!(ended(script.call("f", vec![json!("k")], Limits::default())).await, Ok(json!(1)));
}

/// On a runtime of one thread, a script busy for as long as it may still leaves the thread
/// free: it runs on the script threads.
#[tokio::test(flavor = "current_thread")]
async fn a_busy_script_does_not_hold_the_callers_runtime() {
    let script = compiled(TOKENS_FOR_EVER);
    let limits = unlimited(Duration::from_secs(3));
    let busy = script.call("spin", vec![text(64 << 10)], limits);
    let other = async {
        // Something else on this runtime: a task spawned and run to its end.
        tokio::spawn(async { 7 }).await.expect("ran")
    };
    tokio::select! {
        biased;
        outcome = busy => panic!("the busy script ended first: {outcome:?}"),
        seven = other => assert_eq!(seven, 7),
    }
}

/// Two scripts busy until their deadline hold every script thread of a two-core machine; a
/// third, quick script still runs between their slices.
#[tokio::test]
async fn a_quick_script_runs_while_others_are_busy() {
    let busy = compiled(TOKENS_FOR_EVER);
    let limits = unlimited(Duration::from_secs(5));
    let first = busy.call("spin", vec![text(64 << 10)], limits);
    let second = busy.call("spin", vec![text(64 << 10)], limits);
    let quick = compiled("pub fn f() { 1 + 1 }");
    let both = async { tokio::join!(first, second) };
    tokio::select! {
        biased;
        outcome = both => panic!("the busy scripts ended first: {outcome:?}"),
        two = ended(quick.call("f", vec![], Limits::default())) => assert_eq!(two, Ok(json!(2))),
    }
}

#[test]
fn meta_is_stopped_at_its_deadline_too() {
    let engine = Engine::new(None, unlimited(Duration::from_millis(200))).expect("engine");
    let error = engine
        .compile(Path::new("m.rn"), "pub fn meta() { loop {} }")
        .expect_err("meta() never returns");
    assert!(error.to_string().contains("did not finish within"), "{error}");
}

#[test]
fn a_panic_in_native_code_is_reported_with_its_message() {
    let message = |panic: Box<dyn std::any::Any + Send>| super::panic_message(&*panic);
    assert_eq!(message(Box::new("index out of bounds")), "index out of bounds");
    assert_eq!(message(Box::new(String::from("no such key: a"))), "no such key: a");
    assert_eq!(message(Box::new(7_u8)), "a panic without a message");
}
