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
    let (client, mut notes) = recording_http_client(&gateway.url).await;
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(call(
        "fx__slow",
        json!({"steps": 50, "step_ms": 200}),
    )));
    let handle = client
        .peer()
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .expect("send");
    // Once the upstream reports progress it is working on it: give up then.
    notes.next_matching(|n| matches!(n, Note::Progress(_)).then_some(())).await;
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

/// `list_changed` and `resources/updated` from an upstream of either era reach the client:
/// the tool list follows, and only subscribers hear about a resource.
async fn notifications_follow(upstream: &str) {
    let fixture = match upstream {
        "stdio" => None,
        other => Some(FixtureUpstream::start(other).await),
    };
    let config =
        ConfigDir::new(&fixture_server("fx", upstream, fixture.as_ref().map(|f| f.url.as_str())));
    let (client, mut notes, _pid) = recording_stdio_client(&config.path()).await;
    let names = |tools: Vec<rmcp::model::Tool>| -> Vec<String> {
        tools.iter().map(|t| t.name.to_string()).collect()
    };
    assert!(
        !names(client.list_all_tools().await.expect("list")).contains(&"fx__dynamic_tool".into())
    );
    client.call_tool(call("fx__toggle_tool", json!({"enabled": true}))).await.expect("toggle");
    notes.next_matching(|n| matches!(n, Note::ToolsChanged).then_some(())).await;
    let tools = names(client.list_all_tools().await.expect("list"));
    assert!(tools.contains(&"fx__dynamic_tool".into()), "{tools:?}");
    let dynamic = client.call_tool(call("fx__dynamic_tool", json!({}))).await.expect("call it");
    assert_eq!(first_text(&dynamic), "dynamic tool called");

    let watched = "test://watched-resource";
    client.subscribe(rmcp::model::SubscribeRequestParams::new(watched)).await.expect("subscribe");
    // An update of another resource is not for this client; the watched one is.
    client
        .call_tool(call("fx__touch_resource", json!({"uri": "test://static-text"})))
        .await
        .expect("touch");
    client.call_tool(call("fx__touch_resource", json!({"uri": watched}))).await.expect("touch");
    let updated = notes
        .next_matching(|n| match n {
            Note::Updated(uri) => Some(uri.clone()),
            _ => None,
        })
        .await;
    assert_eq!(updated, watched);
    client.call_tool(call("fx__toggle_tool", json!({"enabled": false}))).await.expect("toggle");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn notifications_follow_a_handshake_era_upstream() {
    notifications_follow("stdio").await;
}

#[tokio::test]
async fn notifications_follow_a_2026_07_28_upstream() {
    notifications_follow("http").await;
}

#[tokio::test]
async fn a_2026_07_28_client_hears_changes_on_its_listen_stream() {
    use rmcp::ClientServiceExt;
    use rmcp::model::{ProtocolVersion, ServerNotification, SubscriptionFilter};
    use rmcp::service::ClientLifecycleMode;

    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let gateway = HttpGateway::start(&config.path()).await;
    let lifecycle =
        ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(gateway.url.as_str());
    let client = ().serve_with_lifecycle(transport, lifecycle).await.expect("discover");
    let watched = "test://watched-resource";
    let mut filter = SubscriptionFilter::new();
    filter.tools_list_changed = Some(true);
    filter.resource_subscriptions = Some(vec![watched.to_owned()]);
    let mut stream = client.listen(filter).await.expect("subscriptions/listen");
    client.call_tool(call("fx__toggle_tool", json!({"enabled": true}))).await.expect("toggle");
    let changed = next_notification(&mut stream).await;
    assert!(matches!(changed, ServerNotification::ToolListChangedNotification(_)), "{changed:?}");
    client.call_tool(call("fx__touch_resource", json!({"uri": watched}))).await.expect("touch");
    match next_notification(&mut stream).await {
        ServerNotification::ResourceUpdatedNotification(updated) => {
            assert_eq!(updated.params.uri, watched)
        }
        other => panic!("unexpected {other:?}"),
    }
    let _ = stream.cancel().await;
    client.cancel().await.expect("close");
    assert!(gateway.terminate().await.success());
}

async fn next_notification(
    stream: &mut rmcp::service::Subscription,
) -> rmcp::model::ServerNotification {
    tokio::time::timeout(Duration::from_secs(20), stream.next())
        .await
        .expect("a notification in time")
        .expect("stream healthy")
        .expect("stream open")
}

/// A session that ends without unsubscribing does not keep the upstream subscribed.
#[tokio::test]
async fn a_closed_session_releases_its_upstream_subscriptions() {
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let gateway = HttpGateway::start(&config.path()).await;
    let watched = "test://watched-resource";
    let leaving = http_client(&gateway.url).await;
    leaving.subscribe(rmcp::model::SubscribeRequestParams::new(watched)).await.expect("subscribe");
    leaving.cancel().await.expect("close");
    let staying = http_client(&gateway.url).await;
    let touch = || async {
        let touched = staying
            .call_tool(call("fx__touch_resource", json!({"uri": watched})))
            .await
            .expect("touch");
        first_text(&touched)
    };
    // toolgate notices the closed session on its next event (this touch's update, at the
    // latest) and then unsubscribes upstream.
    let mut text = touch().await;
    for _ in 0..100 {
        if text.contains("(0 subscribed") {
            break;
        }
        text = touch().await;
    }
    assert!(text.contains("(0 subscribed"), "the upstream is still subscribed: {text}");
    staying.cancel().await.expect("close");
    assert!(gateway.terminate().await.success());
}
