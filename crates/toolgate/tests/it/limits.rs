//! The `limits` interceptor end to end: a concurrency limit refuses calls beyond it at once
//! and they never reach the upstream; a rate limit lets a burst through and refuses the rest
//! until the bucket refills. Counted at the upstream (the recording upstream), not by the
//! wall clock.

use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest, ServerResult};
use rmcp::service::PeerRequestOptions;
use serde_json::json;

use crate::recording_upstream::RecordingUpstream;
use crate::support::*;

fn limited(upstream: &RecordingUpstream, limits: &str) -> ConfigDir {
    ConfigDir::new(&format!(
        "[servers.rec]\nurl = {}\ntransport = \"streamable-http\"\n\n\
         [[pipeline]]\nkind = \"limits\"\n{limits}\n",
        toml_str(&upstream.url)
    ))
}

fn slow(steps: u32) -> CallToolRequestParams {
    CallToolRequestParams::new("rec__slow")
        .with_arguments(object(json!({"steps": steps, "step_ms": 100})))
}

#[tokio::test]
async fn calls_beyond_the_concurrency_limit_are_refused_and_never_reach_the_upstream() {
    let upstream = RecordingUpstream::start().await;
    let config = limited(&upstream, "tool.\"rec__slow\" = { concurrency = 1 }");
    let client = stdio_client(&config.path()).await;

    // One call holds the only slot: it has reached the upstream and is still running.
    let running = client
        .peer()
        .send_request_with_option(
            ClientRequest::CallToolRequest(CallToolRequest::new(slow(40))),
            PeerRequestOptions::no_options(),
        )
        .await
        .expect("send");
    upstream.wait_for_calls("slow", 1).await;

    // Four more at once: each finds the slot taken.
    let refusals = futures::future::join_all((0..4).map(|_| client.call_tool(slow(1)))).await;
    for refused in refusals {
        let refused = refused.expect("a refusal is a tool result");
        assert_eq!(refused.is_error, Some(true), "{refused:?}");
        assert_eq!(
            first_text(&refused),
            "refused by limits: tool \"rec__slow\" already has 1 call in flight (limit 1)"
        );
    }
    assert_eq!(upstream.tools_called(), ["slow"], "refused calls never reached the upstream");

    match running.await_response().await.expect("answered") {
        ServerResult::CallToolResult(result) => assert_eq!(first_text(&result), "done 40"),
        other => panic!("unexpected {other:?}"),
    }
    // The slot is free again once the call is over.
    let next = client.call_tool(slow(1)).await.expect("next");
    assert_eq!(first_text(&next), "done 1");
    assert_eq!(upstream.tools_called(), ["slow", "slow"]);
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn a_burst_beyond_the_rate_is_refused_with_the_wait_and_never_reaches_the_upstream() {
    let upstream = RecordingUpstream::start().await;
    // Two calls at once, then one every 30 s: the third of a quick burst is refused.
    let config = limited(&upstream, "tool.\"rec__echo\" = { rate = \"2/min\" }");
    let client = stdio_client(&config.path()).await;
    let echo = |text: &str| {
        client.call_tool(
            CallToolRequestParams::new("rec__echo").with_arguments(object(json!({"text": text}))),
        )
    };
    assert_eq!(first_text(&echo("one").await.expect("one")), "one");
    assert_eq!(first_text(&echo("two").await.expect("two")), "two");
    let third = echo("three").await.expect("a refusal is a tool result");
    assert_eq!(third.is_error, Some(true), "{third:?}");
    let text = first_text(&third);
    assert!(
        text.starts_with(
            "refused by limits: tool \"rec__echo\" is limited to 2 calls per minute; try again in "
        ),
        "{text}"
    );
    assert_eq!(upstream.tools_called(), ["echo", "echo"], "the refused call never arrived");
    // Another tool of the same server has no limit.
    let other = client
        .call_tool(CallToolRequestParams::new("rec__test_simple_text"))
        .await
        .expect("unlimited");
    assert_ne!(other.is_error, Some(true));
    client.cancel().await.expect("close");
}
