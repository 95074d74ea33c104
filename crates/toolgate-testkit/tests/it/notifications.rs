//! Change notifications from the test hooks: `toggle_tool` (tools list_changed) and
//! `touch_resource` (resources/updated) reach handshake-era sessions through their handlers
//! and 2026-07-28 clients on `subscriptions/listen` streams, across sessions and eras.

use rmcp::ServiceExt as _;
use rmcp::model as mcp;
use rmcp::service::Subscription;
use rmcp::transport::StreamableHttpClientTransport;
use tokio_util::sync::CancellationToken;
use toolgate_testkit::Fixture;

use crate::support::{self, Change, Client, Observed, within};

const WATCHED: &str = "test://watched-resource";
const STATIC_TEXT: &str = "test://static-text";

/// An HTTP fixture (stopped when the token is cancelled) and its URL.
async fn server() -> (String, CancellationToken) {
    let (opts, _client, _observed) = support::setup();
    let shutdown = CancellationToken::new();
    let (url, _server) = crate::http::start(opts, shutdown.clone()).await;
    (url, shutdown)
}

async fn legacy(url: &str) -> (Client, Observed) {
    let (client, observed) = support::client();
    let transport = StreamableHttpClientTransport::from_uri(url.to_owned());
    (support::connect(client, transport).await, observed)
}

async fn modern(url: &str) -> Client {
    let (client, _observed) = support::client();
    let transport = StreamableHttpClientTransport::from_uri(url.to_owned());
    support::connect_modern(client, transport).await
}

async fn tool_names(client: &Client) -> Vec<String> {
    let tools = within("tools/list", client.list_all_tools()).await.expect("tools/list");
    tools.into_iter().map(|tool| tool.name.into_owned()).collect()
}

async fn listen(client: &Client, filter: mcp::SubscriptionFilter) -> Subscription {
    within("subscriptions/listen", client.listen(filter)).await.expect("listen")
}

async fn next_on(subscription: &mut Subscription) -> mcp::ServerNotification {
    let next = within("a listen notification", subscription.next()).await;
    next.expect("the stream must carry valid notifications").expect("the stream must stay open")
}

fn is_tools_changed(notification: &mcp::ServerNotification) -> bool {
    matches!(notification, mcp::ServerNotification::ToolListChangedNotification(_))
}

fn updated_uri(notification: &mcp::ServerNotification) -> Option<&str> {
    match notification {
        mcp::ServerNotification::ResourceUpdatedNotification(update) => {
            Some(update.params.uri.as_str())
        }
        _ => None,
    }
}

async fn subscribe(client: &Client, uri: &str) {
    within("subscribe", client.subscribe(mcp::SubscribeRequestParams::new(uri)))
        .await
        .expect("resources/subscribe");
}

async fn touch(client: &Client, uri: &str) {
    let result = support::call(client, "touch_resource", serde_json::json!({ "uri": uri })).await;
    let text = support::only_text(&result);
    assert!(text.starts_with(&format!("touched {uri} (")), "{text}");
}

#[tokio::test]
async fn toggle_tool_changes_every_sessions_list_and_tells_them() {
    let (url, shutdown) = server().await;
    let (first, mut first_seen) = legacy(&url).await;
    let (second, mut second_seen) = legacy(&url).await;
    assert!(!tool_names(&first).await.contains(&"dynamic_tool".to_owned()));

    let result = support::call(&first, "toggle_tool", serde_json::json!({})).await;
    assert_eq!(support::only_text(&result), "dynamic_tool enabled");
    assert_eq!(support::next_change(&mut first_seen).await, Change::ToolsListChanged);
    assert_eq!(support::next_change(&mut second_seen).await, Change::ToolsListChanged);
    for client in [&first, &second] {
        assert!(tool_names(client).await.contains(&"dynamic_tool".to_owned()));
    }
    let called = support::call(&second, "dynamic_tool", serde_json::json!({})).await;
    assert_eq!(support::only_text(&called), "dynamic tool called");

    // Asking for the state it is already in changes nothing and sends nothing; the next
    // notification either session sees is the one from switching it off.
    let result =
        support::call(&second, "toggle_tool", serde_json::json!({ "enabled": true })).await;
    assert_eq!(support::only_text(&result), "dynamic_tool enabled");
    let result = support::call(&second, "toggle_tool", serde_json::json!({})).await;
    assert_eq!(support::only_text(&result), "dynamic_tool disabled");
    assert_eq!(support::next_change(&mut first_seen).await, Change::ToolsListChanged);
    assert_eq!(support::next_change(&mut second_seen).await, Change::ToolsListChanged);
    assert!(second_seen.changes.try_recv().is_err(), "one notification per change");
    assert!(!tool_names(&first).await.contains(&"dynamic_tool".to_owned()));
    let params = mcp::CallToolRequestParams::new("dynamic_tool");
    let hidden = within("hidden dynamic_tool", first.call_tool(params)).await;
    assert!(hidden.is_err(), "a hidden tool must not be callable: {hidden:?}");
    shutdown.cancel();
}

#[tokio::test]
async fn touch_resource_reaches_subscribed_sessions_only() {
    let (url, shutdown) = server().await;
    let (watcher, mut watcher_seen) = legacy(&url).await;
    let (toucher, mut toucher_seen) = legacy(&url).await;
    subscribe(&watcher, WATCHED).await;
    subscribe(&toucher, STATIC_TEXT).await;

    touch(&toucher, WATCHED).await;
    touch(&toucher, STATIC_TEXT).await;
    let watched = Change::ResourceUpdated(WATCHED.to_owned());
    assert_eq!(support::next_change(&mut watcher_seen).await, watched);
    // The toucher is not subscribed to the watched resource: the first update it sees is
    // the one it is subscribed to.
    let static_text = Change::ResourceUpdated(STATIC_TEXT.to_owned());
    assert_eq!(support::next_change(&mut toucher_seen).await, static_text);

    within("unsubscribe", watcher.unsubscribe(mcp::UnsubscribeRequestParams::new(WATCHED)))
        .await
        .expect("resources/unsubscribe");
    subscribe(&watcher, STATIC_TEXT).await;
    touch(&toucher, WATCHED).await;
    touch(&toucher, STATIC_TEXT).await;
    assert_eq!(support::next_change(&mut watcher_seen).await, static_text);
    shutdown.cancel();
}

#[tokio::test]
async fn listen_streams_carry_what_their_filter_asked_for() {
    let (url, shutdown) = server().await;
    let client = modern(&url).await;
    let filter = mcp::SubscriptionFilter::builder()
        .tools_list_changed()
        .resource_subscriptions([WATCHED, "test://no-such-resource"])
        .build();
    let mut subscription = listen(&client, filter).await;
    let acknowledged = subscription.acknowledged();
    assert_eq!(acknowledged.tools_list_changed, Some(true));
    assert_eq!(acknowledged.resource_subscriptions, Some(vec![WATCHED.to_owned()]));
    assert_eq!(acknowledged.prompts_list_changed, None, "not requested, not acknowledged");

    let result = support::call(&client, "toggle_tool", serde_json::json!({})).await;
    assert_eq!(support::only_text(&result), "dynamic_tool enabled");
    assert!(is_tools_changed(&next_on(&mut subscription).await));
    assert!(tool_names(&client).await.contains(&"dynamic_tool".to_owned()));

    // Only the subscribed URI comes through.
    touch(&client, STATIC_TEXT).await;
    touch(&client, WATCHED).await;
    assert_eq!(updated_uri(&next_on(&mut subscription).await), Some(WATCHED));

    // Two streams of one client each get their own copy.
    let only_tools = mcp::SubscriptionFilter::builder().tools_list_changed().build();
    let mut second = listen(&client, only_tools).await;
    support::call(&client, "toggle_tool", serde_json::json!({})).await;
    assert!(is_tools_changed(&next_on(&mut subscription).await));
    assert!(is_tools_changed(&next_on(&mut second).await));
    assert!(!tool_names(&client).await.contains(&"dynamic_tool".to_owned()));

    within("cancel", subscription.cancel()).await.expect("cancel the subscription");
    shutdown.cancel();
}

#[tokio::test]
async fn changes_cross_eras() {
    let (url, shutdown) = server().await;
    let (old, mut old_seen) = legacy(&url).await;
    let new = modern(&url).await;
    subscribe(&old, WATCHED).await;
    let filter = mcp::SubscriptionFilter::builder()
        .tools_list_changed()
        .resource_subscription(WATCHED)
        .build();
    let mut subscription = listen(&new, filter).await;

    // A handshake-era caller's change reaches the 2026-07-28 stream…
    support::call(&old, "toggle_tool", serde_json::json!({})).await;
    assert_eq!(support::next_change(&mut old_seen).await, Change::ToolsListChanged);
    assert!(is_tools_changed(&next_on(&mut subscription).await));
    assert!(tool_names(&new).await.contains(&"dynamic_tool".to_owned()));

    // …and a 2026-07-28 caller's reaches the handshake-era session.
    touch(&new, WATCHED).await;
    assert_eq!(updated_uri(&next_on(&mut subscription).await), Some(WATCHED));
    assert_eq!(
        support::next_change(&mut old_seen).await,
        Change::ResourceUpdated(WATCHED.to_owned())
    );
    shutdown.cancel();
}

/// The server answered `-32601`.
fn assert_method_not_found(result: Result<(), rmcp::ServiceError>, why: &str) {
    match result {
        Err(rmcp::ServiceError::McpError(error)) => {
            assert_eq!(error.code, mcp::ErrorCode::METHOD_NOT_FOUND, "{why}: {error:?}");
        }
        other => panic!("{why}: expected -32601, got {other:?}"),
    }
}

#[tokio::test]
async fn each_era_has_its_own_subscription_method() {
    let (url, shutdown) = server().await;
    let (old, _old_seen) = legacy(&url).await;
    let new = modern(&url).await;
    let filter = mcp::SubscriptionFilter::builder().tools_list_changed().build();
    let listened = within("listen on 2025-11-25", old.listen(filter)).await;
    assert_method_not_found(listened.map(drop), "subscriptions/listen is 2026-07-28 only");
    let params = mcp::SubscribeRequestParams::new(WATCHED);
    let subscribed = within("subscribe on 2026-07-28", new.subscribe(params)).await;
    assert_method_not_found(subscribed, "resources/subscribe is handshake-era only");
    shutdown.cancel();
}

#[tokio::test]
async fn shutdown_ends_open_listen_streams() {
    let (opts, client, _observed) = support::setup();
    let shutdown = CancellationToken::new();
    let (url, server) = crate::http::start(opts, shutdown.clone()).await;
    let client =
        support::connect_modern(client, StreamableHttpClientTransport::from_uri(url)).await;
    let filter = mcp::SubscriptionFilter::builder().tools_list_changed().build();
    let mut subscription = listen(&client, filter).await;

    shutdown.cancel();
    let result = within("server shutdown", server).await;
    result.expect("the server task must not panic").expect("the server must shut down cleanly");
    let next = within("the end of the stream", subscription.next()).await;
    assert!(!matches!(next, Ok(Some(_))), "no notification after shutdown: {next:?}");
}

#[tokio::test]
async fn stdio_sessions_hear_their_own_changes() {
    let (opts, client, mut observed) = support::setup();
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        let running = Fixture::new(opts).serve(server_io).await?;
        running.waiting().await?;
        anyhow::Ok(())
    });
    let client = support::connect(client, client_io).await;
    subscribe(&client, WATCHED).await;
    support::call(&client, "toggle_tool", serde_json::json!({})).await;
    assert_eq!(support::next_change(&mut observed).await, Change::ToolsListChanged);
    touch(&client, WATCHED).await;
    assert_eq!(
        support::next_change(&mut observed).await,
        Change::ResourceUpdated(WATCHED.to_owned())
    );
    client.cancel().await.expect("the client must shut down");
}

#[tokio::test]
async fn stdio_listen_streams_work_on_one_connection() {
    let (opts, client, _observed) = support::setup();
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        let running = Fixture::new(opts).serve(server_io).await?;
        running.waiting().await?;
        anyhow::Ok(())
    });
    let client = support::connect_modern(client, client_io).await;
    let filter = mcp::SubscriptionFilter::builder()
        .tools_list_changed()
        .resource_subscription(WATCHED)
        .build();
    let mut subscription = listen(&client, filter).await;
    support::call(&client, "toggle_tool", serde_json::json!({})).await;
    assert!(is_tools_changed(&next_on(&mut subscription).await));
    touch(&client, WATCHED).await;
    assert_eq!(updated_uri(&next_on(&mut subscription).await), Some(WATCHED));
    client.cancel().await.expect("the client must shut down");
}
