//! Transparency: progress, cancellation, logging and server-to-client requests behave through
//! toolgate as they would talking to the upstream directly.

#![allow(deprecated)]

use std::collections::HashMap;
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, LoggingLevel, ServerResult,
    SetLevelRequestParams,
};
use rmcp::service::PeerRequestOptions;
use serde_json::json;

use crate::recorder::*;
use crate::support::*;

fn call(name: &str, args: serde_json::Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_owned()).with_arguments(object(args))
}

#[tokio::test]
async fn progress_of_concurrent_calls_on_two_upstreams_reaches_each_caller_with_its_token() {
    let config = ConfigDir::new(&format!(
        "{}\n{}",
        fixture_server("a", "stdio", None),
        fixture_server("b", "stdio", None)
    ));
    let (client, mut notes, _pid) = recording_stdio_client(&config.path()).await;
    let send = |name: &str, steps: u32| {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(call(
            name,
            json!({"steps": steps, "step_ms": 100}),
        )));
        client.peer().send_request_with_option(request, PeerRequestOptions::no_options())
    };
    let a = send("a__slow", 3).await.expect("send a");
    let b = send("b__slow", 5).await.expect("send b");
    let (token_a, token_b) = (a.progress_token.clone(), b.progress_token.clone());
    let (ra, rb) = tokio::join!(a.await_response(), b.await_response());
    for (result, expected) in [(ra, "done 3"), (rb, "done 5")] {
        match result.expect("answered") {
            ServerResult::CallToolResult(result) => assert_eq!(first_text(&result), expected),
            other => panic!("unexpected {other:?}"),
        }
    }
    // Progress is relayed as it arrives; wait for all of it, then count per token.
    let mut seen: HashMap<String, Vec<f64>> = HashMap::new();
    while seen.values().map(Vec::len).sum::<usize>() < 8 {
        let progress = notes.next_matching(|n| match n {
            Note::Progress(p) => Some(p.clone()),
            _ => None,
        });
        let p = progress.await;
        seen.entry(format!("{:?}", p.progress_token)).or_default().push(p.progress);
    }
    assert_eq!(seen.len(), 2, "only the callers' own tokens: {seen:?}");
    assert_eq!(seen[&format!("{token_a:?}")], [1.0, 2.0, 3.0]);
    assert_eq!(seen[&format!("{token_b:?}")], [1.0, 2.0, 3.0, 4.0, 5.0]);
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn a_downstream_cancellation_cancels_the_upstream_request() {
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let gateway = HttpGateway::start(&config.path()).await;
    let client = http_client(&gateway.url).await;
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(call(
        "fx__slow",
        json!({"steps": 50, "step_ms": 200}),
    )));
    let handle = client
        .peer()
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .expect("send");
    // Let the upstream start working, then give up.
    tokio::time::sleep(Duration::from_millis(500)).await;
    handle.cancel(Some("test gives up".into())).await.expect("cancel");
    // The fixture logs when its `slow` is cancelled; toolgate forwards that, tagged.
    gateway.wait_for_log(&["slow: cancelled", "fx"]).await;
    let echo = client.call_tool(call("fx__echo", json!({"text": "fine"}))).await.expect("echo");
    assert_eq!(first_text(&echo), "fine");
    client.cancel().await.expect("close");
    assert!(gateway.terminate().await.success());
}

#[tokio::test]
async fn upstream_log_messages_reach_the_session_with_the_upstream_as_logger() {
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let (client, mut notes, _pid) = recording_stdio_client(&config.path()).await;
    client.set_level(SetLevelRequestParams::new(LoggingLevel::Debug)).await.expect("setLevel");
    client.call_tool(call("fx__test_tool_with_logging", json!({}))).await.expect("call");
    let log = notes
        .next_matching(|n| match n {
            Note::Log(p) => Some(p.clone()),
            _ => None,
        })
        .await;
    let logger = log.logger.expect("a logger");
    assert!(logger == "fx" || logger.starts_with("fx/"), "{logger}");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn an_upstream_asking_a_client_without_the_capability_gets_a_clear_error() {
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    // The recording client declares neither sampling nor elicitation.
    let (client, _notes, _pid) = recording_stdio_client(&config.path()).await;
    let sampled = client
        .call_tool(call("fx__test_sampling", json!({"prompt": "hello"})))
        .await
        .expect("the tool reports the failure as a result");
    assert_eq!(sampled.is_error, Some(true), "{sampled:?}");
    let text = serde_json::to_string(&sampled).expect("json");
    assert!(text.contains("sampling"), "{text}");
    client.cancel().await.expect("close");
}
