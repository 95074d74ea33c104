//! Tests of rates across replicas: two `limits` entries on one shared state are two replicas.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use toolgate_config::{Secret, StateBackend, StateConfig};
use toolgate_core::duration::{self, Precision};
use toolgate_core::mcp;
use toolgate_intercept::{
    CallContext, InterceptionEvent, Interceptor, Message, Outcome, Phase, Principal, Target,
};
use toolgate_state::SharedState;

use super::super::{KIND, Limits};
use super::unix_millis;

/// A replica's `limits` entry with `options`, on `state`.
fn replica(state: &SharedState, options: Value) -> Limits {
    let entry = crate::test_entry(KIND, "pipeline[2]", options);
    Limits::from_config(&entry).expect("valid options").with_shared_state(Some(state.clone()))
}

/// `who`'s call of `exposed` (a listed tool) through `l`: `Ok` or the reason it was refused.
async fn call_by(l: &Limits, who: Principal, exposed: &str) -> Result<CallContext, String> {
    let (server, original) = exposed.split_once("__").expect("a namespaced name");
    let mut ctx = CallContext::new(who);
    let tool = mcp::Tool::new(original.to_owned(), "", Arc::default());
    ctx.target = Some(Target {
        server: server.into(),
        original: original.into(),
        exposed: exposed.into(),
        tool: Some(Arc::new(tool)),
    });
    let message = Message::CallTool(mcp::CallToolRequestParams::new(exposed.to_owned()));
    match l.intercept(InterceptionEvent::ToolsCall, Phase::Request, &message, &mut ctx).await {
        Ok(Outcome::Continue) => Ok(ctx),
        Ok(Outcome::Refuse(refusal)) => Err(refusal.reason),
        other => panic!("a validator continues or refuses: {other:?}"),
    }
}

async fn call(l: &Limits, exposed: &str) -> Result<CallContext, String> {
    call_by(l, Principal::local(), exposed).await
}

/// What is left of the current window of a period of `period`.
fn window_left(period: Duration) -> Duration {
    let period = period.as_millis() as u64;
    Duration::from_millis(period - unix_millis() % period)
}

fn try_again(left: Duration) -> String {
    format!("try again in {}", duration::format_with(left, Precision::WaitRoundedUp))
}

#[tokio::test(start_paused = true)]
async fn a_rate_counts_the_calls_of_every_replica() {
    let state = SharedState::memory();
    let options = json!({ "server": { "fx": { "rate": "3/min" } } });
    let (a, b) = (replica(&state, options.clone()), replica(&state, options));
    call(&a, "fx__echo").await.expect("1 of 3");
    call(&a, "fx__echo").await.expect("2 of 3");
    call(&b, "fx__add").await.expect("3 of 3");
    let left = window_left(Duration::from_secs(60));
    // B has made one call itself: only the shared count refuses it.
    assert_eq!(
        call(&b, "fx__echo").await.expect_err("the fourth call in the minute"),
        format!("server \"fx\" is limited to 3 calls per minute; {}", try_again(left))
    );
    call(&a, "fx__echo").await.expect_err("on A too");
    call(&a, "other__echo").await.expect("another server is not limited");
}

#[tokio::test(start_paused = true)]
async fn the_count_starts_again_when_the_window_ends() {
    let state = SharedState::memory();
    let options = json!({ "tool": { "fx__echo": { "rate": "2/min" } } });
    let (a, b) = (replica(&state, options.clone()), replica(&state, options));
    call(&a, "fx__echo").await.unwrap();
    call(&a, "fx__echo").await.unwrap();
    call(&b, "fx__echo").await.expect_err("the window is full");
    let left = window_left(Duration::from_secs(60));
    tokio::time::advance(left - Duration::from_millis(1)).await;
    call(&b, "fx__echo").await.expect_err("the window is not over yet");
    tokio::time::advance(Duration::from_millis(1)).await;
    call(&b, "fx__echo").await.expect("a new window");
    call(&b, "fx__echo").await.expect("2 of 2 in the new window");
    // A third replica (whose own bucket is full) is refused for the rest of the new window.
    let c = replica(&state, json!({ "tool": { "fx__echo": { "rate": "2/min" } } }));
    let reason = call(&c, "fx__echo").await.expect_err("the new window is full");
    assert!(reason.ends_with(&try_again(Duration::from_secs(60))), "{reason}");
}

#[tokio::test(start_paused = true)]
async fn a_refusal_by_a_later_limit_gives_back_the_earlier_charges() {
    let state = SharedState::memory();
    let options = json!({
        "server": { "fx": { "rate": "5/min" } },
        "tool": { "fx__echo": { "rate": "1/min" } },
    });
    let (a, b) = (replica(&state, options.clone()), replica(&state, options));
    call(&a, "fx__echo").await.expect("server 1 of 5, tool 1 of 1");
    let reason = call(&b, "fx__echo").await.expect_err("the tool's limit");
    assert!(reason.starts_with("tool \"fx__echo\" is limited to 1 call per minute"), "{reason}");
    // The server's count is 1, not 2: four more calls fit.
    for n in 2..=5 {
        call(&b, "fx__add").await.unwrap_or_else(|e| panic!("server {n} of 5: {e}"));
    }
    let reason = call(&a, "fx__add").await.expect_err("the server's limit");
    assert!(reason.starts_with("server \"fx\" is limited to 5 calls per minute"), "{reason}");
}

#[tokio::test(start_paused = true)]
async fn a_refused_call_leaves_no_charge_on_the_limit_that_refused_it() {
    let state = SharedState::memory();
    let options = json!({ "server": { "fx": { "rate": "2/s" } } });
    let (a, b) = (replica(&state, options.clone()), replica(&state, options));
    call(&a, "fx__echo").await.unwrap();
    call(&a, "fx__echo").await.unwrap();
    for _ in 0..5 {
        call(&b, "fx__echo").await.expect_err("full");
    }
    let key_prefix = "limits/limits/";
    let counters = state.scan(key_prefix, 10).await.unwrap();
    assert_eq!(counters.len(), 1, "{counters:?}");
    assert_eq!(counters[0].1, b"2", "the refused calls were given back");
}

#[tokio::test(start_paused = true)]
async fn per_caller_rates_count_each_caller_across_replicas() {
    let state = SharedState::memory();
    let options = json!({ "server": { "fx": { "rate": "2/min", "per": "caller" } } });
    let (a, b) = (replica(&state, options.clone()), replica(&state, options));
    let alice = || Principal::new("jwt", "alice");
    let bob = || Principal::new("jwt", "bob");
    call_by(&a, alice(), "fx__echo").await.unwrap();
    call_by(&b, alice(), "fx__echo").await.unwrap();
    let reason = call_by(&b, alice(), "fx__echo").await.expect_err("alice's two are used");
    assert!(reason.starts_with("server \"fx\" for jwt:alice is limited to 2 calls"), "{reason}");
    call_by(&a, bob(), "fx__echo").await.expect("bob has his own");
    call_by(&b, bob(), "fx__echo").await.expect("bob has his own");
    let keys = state.scan("limits/", 10).await.unwrap();
    assert!(keys.iter().all(|(k, _)| !k.contains("alice") && !k.contains("bob")), "{keys:?}");
}

#[tokio::test(start_paused = true)]
async fn entries_and_limiters_count_apart() {
    let state = SharedState::memory();
    let entry = |name: &str| {
        let mut entry = crate::test_entry(
            KIND,
            "pipeline[2]",
            json!({ "server": { "fx": { "rate": "1/min" }, "gx": { "rate": "1/min" } } }),
        );
        entry.name = Some(name.to_owned());
        Limits::from_config(&entry).unwrap().with_shared_state(Some(state.clone()))
    };
    let (one, two) = (entry("per_server"), entry("other name with spaces"));
    call(&one, "fx__echo").await.unwrap();
    call(&one, "gx__echo").await.expect("another server's limiter");
    call(&two, "fx__echo").await.expect("another entry's limiter");
    call(&one, "fx__echo").await.expect_err("full");
    let keys: Vec<String> =
        state.scan("limits/", 10).await.unwrap().into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert!(keys.iter().any(|k| k.starts_with("limits/per_server/")), "{keys:?}");
    assert!(keys.iter().all(|k| !k.contains(' ')), "a name that is not a word is hashed");
}

#[tokio::test(start_paused = true)]
async fn concurrency_stays_per_replica() {
    let state = SharedState::memory();
    let options = json!({ "server": { "fx": { "concurrency": 1 } } });
    let (a, b) = (replica(&state, options.clone()), replica(&state, options));
    let _held = call(&a, "fx__echo").await.unwrap();
    let _also = call(&b, "fx__echo").await.expect("B's own slot");
    call(&a, "fx__echo").await.expect_err("A's slot is taken");
}

/// Two replicas on a real Redis: the count holds across their connections, and a Redis that
/// does not answer refuses the call within the state's timeout, naming it.
#[tokio::test]
async fn on_redis_the_count_is_shared_and_a_frozen_redis_fails_closed() {
    let redis = toolgate_testkit::redis::RedisServer::start().await;
    let config = StateConfig {
        backend: StateBackend::Redis(Secret::new(redis.url())),
        shared_key: None,
        replica: None,
    };
    let connect = || async {
        SharedState::builder(&config)
            .timeout(Duration::from_millis(300))
            .connect()
            .await
            .expect("redis")
    };
    let options = json!({ "server": { "fx": { "rate": "3/hour" } } });
    let (a, b) = (replica(&connect().await, options.clone()), replica(&connect().await, options));
    call(&a, "fx__echo").await.unwrap();
    call(&b, "fx__echo").await.unwrap();
    call(&a, "fx__echo").await.unwrap();
    let reason = call(&b, "fx__echo").await.expect_err("three in the hour");
    assert!(reason.starts_with("server \"fx\" is limited to 3 calls per hour"), "{reason}");

    redis.pause();
    let started = tokio::time::Instant::now();
    let error = match b
        .intercept(
            InterceptionEvent::ToolsCall,
            Phase::Request,
            &Message::CallTool(mcp::CallToolRequestParams::new("fx__add")),
            &mut context("fx__add"),
        )
        .await
    {
        Err(error) => error.to_string(),
        other => panic!("the call cannot be counted: {other:?}"),
    };
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    assert!(
        error.starts_with("cannot count the rate limits: the redis state backend is unavailable"),
        "{error}"
    );
    let unlimited = call(&b, "other__echo").await;
    redis.resume();
    unlimited.expect("a call with no rate needs no state");
}

fn context(exposed: &str) -> CallContext {
    let (server, original) = exposed.split_once("__").unwrap();
    let mut ctx = CallContext::new(Principal::local());
    ctx.target = Some(Target {
        server: server.into(),
        original: original.into(),
        exposed: exposed.into(),
        tool: None,
    });
    ctx
}
