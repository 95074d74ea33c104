//! `_meta` passthrough, seen from the upstream (the fixture's `meta_echo` returns the `_meta`
//! its request carried): a client's own keys arrive exactly as sent; this hop's keys (its
//! `progressToken`, the protocol's `io.modelcontextprotocol/*` keys) do not, whatever era
//! each side speaks. What the upstream sees of those is what toolgate's own client sent it.

use rmcp::ClientServiceExt;
use rmcp::model::{CallToolRequestParams, ProtocolVersion};
use rmcp::service::ClientLifecycleMode;
use serde_json::{Map, Value, json};

use crate::support::*;

/// Keys a client may put in `_meta` for the server: kept as they are.
fn custom_keys() -> Map<String, Value> {
    json!({
        "com.example/trace": "t-1",
        "tenant": {"id": 42, "tags": ["a", "b"], "nested": {"empty": null}},
    })
    .as_object()
    .cloned()
    .expect("an object")
}

/// A key in the protocol's reserved prefix that only this hop may interpret.
const CLIENT_PROTOCOL_KEY: &str = "io.modelcontextprotocol/client-only-test-key";

/// Calls `fx__meta_echo` with the custom keys, a progress token and a protocol key, and
/// returns the `_meta` the upstream received.
async fn meta_at_upstream(client: &Client) -> Map<String, Value> {
    let mut meta = custom_keys();
    meta.insert("progressToken".into(), json!("client-token-7"));
    meta.insert(CLIENT_PROTOCOL_KEY.into(), json!("not for the upstream"));
    let mut params = CallToolRequestParams::new("fx__meta_echo");
    params.meta = Some(serde_json::from_value(Value::Object(meta)).expect("a _meta object"));
    let result = client.call_tool(params).await.expect("meta_echo");
    let text = first_text(&result);
    match serde_json::from_str(&text).expect("meta_echo returns JSON") {
        Value::Object(meta) => meta,
        other => panic!("not an object: {other}"),
    }
}

/// The custom keys arrive exactly; none of the client's hop keys do.
fn assert_passed_through(seen: &Map<String, Value>) {
    for (key, value) in custom_keys() {
        assert_eq!(seen.get(&key), Some(&value), "{key} in {seen:?}");
    }
    assert_ne!(
        seen.get("progressToken"),
        Some(&json!("client-token-7")),
        "the client's progress token is for its own hop: {seen:?}"
    );
    assert!(!seen.contains_key(CLIENT_PROTOCOL_KEY), "{seen:?}");
}

/// The keys the upstream saw besides the custom ones.
fn hop_keys(seen: &Map<String, Value>) -> Vec<&str> {
    let custom = custom_keys();
    seen.keys().map(String::as_str).filter(|key| !custom.contains_key(*key)).collect()
}

/// The fixture over stdio as an upstream of the handshake era (asked with `initialize`, not
/// `server/discover`, which it would answer).
fn handshake_stdio_fixture() -> String {
    format!("{}protocol = \"2025-11-25\"\n", fixture_server("fx", "stdio", None))
}

#[tokio::test]
async fn a_handshake_client_and_a_handshake_upstream() {
    let config = ConfigDir::new(&handshake_stdio_fixture());
    let client = stdio_client(&config.path()).await;
    let seen = meta_at_upstream(&client).await;
    assert_passed_through(&seen);
    // toolgate's request to the upstream has a progress token of its own, so that progress
    // can be routed back; nothing else is added on a handshake-era connection.
    assert_eq!(hop_keys(&seen), ["progressToken"], "{seen:?}");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn a_2026_07_28_client_and_a_handshake_upstream() {
    let config = ConfigDir::new(&handshake_stdio_fixture());
    let gateway = HttpGateway::start(&config.path()).await;
    let lifecycle =
        ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(gateway.url.as_str());
    let client = ().serve_with_lifecycle(transport, lifecycle).await.expect("discover");
    let seen = meta_at_upstream(&client).await;
    assert_passed_through(&seen);
    // The client's per-request protocol keys (its version, its info) are not forwarded to an
    // upstream that speaks the handshake era.
    assert_eq!(hop_keys(&seen), ["progressToken"], "{seen:?}");
    client.cancel().await.expect("close");
    assert!(gateway.terminate().await.success());
}

#[tokio::test]
async fn a_handshake_client_and_a_2026_07_28_upstream() {
    let fixture = FixtureUpstream::start("http").await;
    let config = ConfigDir::new(&fixture_server("fx", "http", Some(&fixture.url)));
    let client = stdio_client(&config.path()).await;
    let seen = meta_at_upstream(&client).await;
    assert_passed_through(&seen);
    // On a 2026-07-28 connection every request carries the protocol's keys: toolgate's own,
    // as the client of that connection.
    let mut keys = hop_keys(&seen);
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "io.modelcontextprotocol/clientCapabilities",
            "io.modelcontextprotocol/clientInfo",
            "io.modelcontextprotocol/protocolVersion",
            "progressToken",
        ],
        "{seen:?}"
    );
    assert_eq!(seen["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
    assert_eq!(seen["io.modelcontextprotocol/clientInfo"]["name"], "toolgate", "{seen:?}");
    client.cancel().await.expect("close");
}
