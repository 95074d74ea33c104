//! Tests of kept results across replicas: two `truncate` entries on one shared state are two
//! replicas.

use std::time::Duration;

use serde_json::{Value, json};
use toolgate_audit::EventBus;
use toolgate_config::{Secret, StateBackend, StateConfig};
use toolgate_core::mcp;
use toolgate_intercept::{
    CallContext, InterceptionEvent, Interceptor, Message, Outcome, Phase, Principal, Target,
};
use toolgate_state::{MAX_VALUE_BYTES, SharedState};

use super::super::{KIND, META_KEY, Truncate, read};
use crate::{Services, test_entry};

/// A replica's `truncate` entry with `options`, on `state`.
fn replica(state: &SharedState, options: Value) -> (Truncate, Services) {
    let services = Services::new(EventBus::new()).with_shared_state(state.clone());
    let entry = test_entry(KIND, "pipeline[0]", options);
    (Truncate::from_config(&entry, &services).expect("valid options"), services)
}

fn caller(session: &str) -> CallContext {
    let mut ctx = CallContext::new(Principal::anonymous());
    ctx.session = Some(session.into());
    ctx.target = Some(Target {
        server: "fs".into(),
        original: "read".into(),
        exposed: "fs__read".into(),
        tool: None,
    });
    ctx
}

/// `text` as a tool's result, cut by `truncate` for `ctx`'s caller.
async fn cut(truncate: &Truncate, ctx: &mut CallContext, text: &str) -> mcp::CallToolResult {
    let message =
        Message::ToolResult(mcp::CallToolResult::success(vec![mcp::ContentBlock::text(text)]));
    match truncate.intercept(InterceptionEvent::ToolsCall, Phase::Response, &message, ctx).await {
        Ok(Outcome::Rewrite(Message::ToolResult(result))) => result,
        other => panic!("cut: {other:?}"),
    }
}

fn record(result: &mcp::CallToolResult) -> &Value {
    &result.meta.as_ref().expect("a cut result has _meta").0[META_KEY]
}

fn handle_of(result: &mcp::CallToolResult) -> String {
    record(result)["handle"].as_str().expect("a handle").to_owned()
}

/// `toolgate__read_result` of `handle` from `offset` by `ctx`'s caller.
async fn page(truncate: &Truncate, ctx: &CallContext, handle: &str, offset: u64) -> (bool, String) {
    let arguments = json!({ "handle": handle, "offset": offset });
    let page = truncate
        .call_own_tool(read::NAME, arguments.as_object().cloned(), ctx)
        .await
        .expect("the tool answers");
    let mcp::ContentBlock::Text(text) = &page.content[0] else { panic!("{page:?}") };
    (page.is_error != Some(true), text.text.clone())
}

/// Every page of `handle`, without the notes that end them.
async fn read_all(truncate: &Truncate, ctx: &CallContext, handle: &str) -> String {
    let mut whole = String::new();
    let mut offset = 0;
    loop {
        let arguments = json!({ "handle": handle, "offset": offset });
        let page = truncate
            .call_own_tool(read::NAME, arguments.as_object().cloned(), ctx)
            .await
            .expect("the tool answers");
        assert_eq!(page.is_error, Some(false), "{page:?}");
        let mcp::ContentBlock::Text(text) = &page.content[0] else { panic!("{page:?}") };
        whole.push_str(&text.text[..text.text.rfind("[toolgate:").expect("a note")]);
        match page.structured_content.as_ref().expect("structured")["next_offset"].as_u64() {
            Some(next) => offset = next,
            None => return whole,
        }
    }
}

fn log(lines: usize) -> String {
    (0..lines).map(|i| format!("[{i:06}] compiled module_{i} in {}ms — ok\n", i % 97)).collect()
}

#[tokio::test(start_paused = true)]
async fn a_result_cut_on_one_replica_is_read_on_another() {
    let state = SharedState::memory();
    let options = json!({ "max_bytes": 4000 });
    let ((a, _), (b, b_services)) = (replica(&state, options.clone()), replica(&state, options));
    let mut ctx = caller("s1");
    let text = log(3000);
    let result = cut(&a, &mut ctx, &text).await;
    assert_eq!(record(&result).get("shared"), None, "shared: {}", record(&result));
    let handle = handle_of(&result);
    assert_eq!(read_all(&b, &ctx, &handle).await, text);
    // B keeps it once read, for the pages that follow.
    assert_eq!(b_services.spill.usage()[0].entries, 1);
}

#[tokio::test(start_paused = true)]
async fn another_callers_handle_is_unknown_on_every_replica() {
    let state = SharedState::memory();
    let options = json!({ "max_bytes": 4000 });
    let ((a, _), (b, _)) = (replica(&state, options.clone()), replica(&state, options));
    let handle = handle_of(&cut(&a, &mut caller("s1"), &log(500)).await);
    let (ok, text) = page(&b, &caller("s2"), &handle, 0).await;
    assert!(!ok && text.starts_with("no kept result has the handle"), "{text}");
    let (ok, text) = page(&a, &caller("s2"), &handle, 0).await;
    assert!(!ok && text.starts_with("no kept result has the handle"), "{text}");
    // Nor is a made-up handle, whatever it holds.
    for made_up in ["r000000000000000000000000", "../approval/held/x", "", "r\n"] {
        let (ok, text) = page(&b, &caller("s1"), made_up, 0).await;
        assert!(!ok && text.starts_with("no kept result has the handle"), "{text}");
    }
    let (ok, _) = page(&b, &caller("s1"), &handle, 0).await;
    assert!(ok, "its owner reads it");
}

#[tokio::test(start_paused = true)]
async fn a_result_over_a_mebibyte_is_kept_in_chunks() {
    let state = SharedState::memory();
    let options = json!({ "max_bytes": 4000 });
    let ((a, _), (b, _)) = (replica(&state, options.clone()), replica(&state, options));
    let mut ctx = caller("s1");
    // Two-byte characters, so that a chunk ends inside one unless it is cut with care.
    let text = format!("{}\n", "é".repeat(999)).repeat(1300);
    assert!(text.len() > 2 * MAX_VALUE_BYTES && text.len() < 3 * MAX_VALUE_BYTES);
    let handle = handle_of(&cut(&a, &mut ctx, &text).await);
    let header = state.get(&format!("spill/{handle}")).await.unwrap().expect("a header");
    let header: Value = serde_json::from_slice(&header).unwrap();
    assert_eq!(header["chunks"], 3, "{header}");
    assert_eq!(header["bytes"], text.len());
    for n in 0..3 {
        let chunk = state.get(&format!("spill/{handle}/{n}")).await.unwrap().expect("a chunk");
        assert!(chunk.len() <= MAX_VALUE_BYTES);
        assert!(std::str::from_utf8(&chunk).is_ok(), "chunk {n} is cut between characters");
    }
    assert_eq!(read_all(&b, &ctx, &handle).await, text);
}

#[tokio::test(start_paused = true)]
async fn what_one_caller_keeps_in_the_shared_state_is_bounded() {
    let state = SharedState::memory();
    let options = json!({ "max_bytes": 4000, "spill_caller_bytes": 300_000 });
    let ((a, _), (b, _)) = (replica(&state, options.clone()), replica(&state, options));
    let mut ctx = caller("s1");
    let text = log(4000);
    assert!(text.len() > 150_000 && text.len() < 300_000, "{}", text.len());
    let first = cut(&a, &mut ctx, &text).await;
    let second = cut(&a, &mut ctx, &text).await;
    assert_eq!(record(&first).get("shared"), None);
    assert_eq!(record(&second)["shared"], false, "over what one caller may share");
    let (ok, _) = page(&b, &ctx, &handle_of(&first), 0).await;
    assert!(ok, "the first is shared");
    let (ok, text_b) = page(&b, &ctx, &handle_of(&second), 0).await;
    assert!(!ok, "the second is kept on A only: {text_b}");
    let (ok, _) = page(&a, &ctx, &handle_of(&second), 0).await;
    assert!(ok, "A still has it");
    // Another caller has room of its own.
    let mut other = caller("s2");
    let theirs = cut(&a, &mut other, &text).await;
    assert_eq!(record(&theirs).get("shared"), None);
    // And a caller gets room again when the window of its counter ends.
    tokio::time::advance(Duration::from_secs(15 * 60)).await;
    let later = cut(&a, &mut ctx, &text).await;
    assert_eq!(record(&later).get("shared"), None);
}

#[tokio::test(start_paused = true)]
async fn a_shared_result_expires_with_its_ttl() {
    let state = SharedState::memory();
    let options = json!({ "max_bytes": 4000, "spill_ttl": "1m" });
    let ((a, _), (b, _)) = (replica(&state, options.clone()), replica(&state, options));
    let mut ctx = caller("s1");
    let handle = handle_of(&cut(&a, &mut ctx, &log(500)).await);
    tokio::time::advance(Duration::from_secs(61)).await;
    let (ok, text) = page(&b, &ctx, &handle, 0).await;
    assert!(!ok && text.starts_with("no kept result has the handle"), "{text}");
}

/// Two replicas on a real Redis: a result cut on one reads on the other; while Redis does not
/// answer, a result is kept where it was cut only, and a handle from elsewhere says to try
/// again.
#[tokio::test]
async fn on_redis_a_result_reads_on_another_replica_and_an_outage_is_said() {
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
    let options = json!({ "max_bytes": 4000 });
    let (a, _) = replica(&connect().await, options.clone());
    let (b, _) = replica(&connect().await, options);
    let mut ctx = caller("s1");
    let text = log(30_000);
    assert!(text.len() > MAX_VALUE_BYTES, "in chunks");
    let handle = handle_of(&cut(&a, &mut ctx, &text).await);
    let (ok, _) = page(&b, &caller("s2"), &handle, 0).await;
    assert!(!ok, "another caller's");
    assert_eq!(read_all(&b, &ctx, &handle).await, text);

    let elsewhere = handle_of(&cut(&a, &mut ctx, &log(500)).await);
    redis.pause();
    let kept_here = cut(&a, &mut ctx, &log(600)).await;
    let (_, unavailable) = page(&b, &ctx, &elsewhere, 0).await;
    redis.resume();
    assert_eq!(record(&kept_here)["shared"], false);
    let (ok, _) = page(&a, &ctx, &handle_of(&kept_here), 0).await;
    assert!(ok, "kept where it was cut");
    assert_eq!(
        unavailable,
        "the store of kept results (the redis state backend) is unavailable: try again in a \
         moment"
    );
    let (ok, _) = page(&b, &ctx, &elsewhere, 0).await;
    assert!(ok, "once Redis is back");
}
