//! Tests of the protocol rules: version negotiation, eras, metadata, result shapes.

use super::*;
use serde_json::json;

fn client() -> Client {
    Client {
        principal: Principal::anonymous(),
        session: None,
        session_id: None,
        address: None,
        negotiated: None,
    }
}

fn request(value: serde_json::Value) -> mcp::ClientRequest {
    serde_json::from_value(value).expect("a client request")
}

fn modern_meta() -> serde_json::Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

#[test]
fn initialize_gets_the_asked_version_when_it_has_a_handshake_else_the_newest_that_has_one() {
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let asked: mcp::ProtocolVersion = serde_json::from_value(json!(version)).unwrap();
        assert_eq!(negotiate(&asked), asked);
    }
    for version in ["2026-07-28", "2099-01-01", "1999-01-01"] {
        let asked: mcp::ProtocolVersion = serde_json::from_value(json!(version)).unwrap();
        assert_eq!(negotiate(&asked), mcp::ProtocolVersion::V_2025_11_25, "{version}");
    }
}

#[test]
fn a_request_in_a_session_is_of_the_sessions_era() {
    let mut client = client();
    client.negotiated = Some(mcp::ProtocolVersion::V_2025_11_25);
    let era = era_of(&request(json!({"method": "tools/list"})), &client).unwrap();
    assert_eq!(era, Era { version: Some(mcp::ProtocolVersion::V_2025_11_25), modern: false });
}

#[test]
fn a_request_with_its_own_2026_metadata_is_modern() {
    let listed = request(json!({"method": "tools/list", "params": {"_meta": modern_meta()}}));
    let era = era_of(&listed, &client()).unwrap();
    assert_eq!(era, Era { version: Some(mcp::ProtocolVersion::V_2026_07_28), modern: true });
}

#[test]
fn a_2026_request_without_the_metadata_of_its_lifecycle_is_malformed() {
    let listed = request(json!({"method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28"
    }}}));
    let error = era_of(&listed, &client()).unwrap_err();
    assert!(is_malformed_meta(&error), "{error:?}");
    assert!(error.message.contains("clientCapabilities"), "{}", error.message);
    // server/discover always negotiates in its own metadata.
    let discover = request(json!({"method": "server/discover", "params": {}}));
    let error = era_of(&discover, &client()).unwrap_err();
    assert!(is_malformed_meta(&error), "{error:?}");
}

#[test]
fn a_version_toolgate_does_not_speak_is_refused_with_the_versions_it_does() {
    let mut meta = modern_meta();
    meta["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let listed = request(json!({"method": "tools/list", "params": {"_meta": meta}}));
    let error = era_of(&listed, &client()).unwrap_err();
    assert_eq!(error.code, mcp::ErrorCode::UNSUPPORTED_PROTOCOL_VERSION);
    let data = error.data.expect("data");
    assert_eq!(data["requested"], "2099-01-01");
    assert!(data["supported"].as_array().unwrap().contains(&json!("2025-11-25")));
}

#[test]
fn meta_passes_through_minus_this_hops_keys() {
    let meta: mcp::RequestMetaObject = serde_json::from_value(json!({
        "progressToken": 7,
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "com.example/trace": {"id": "abc"},
        "custom": 1
    }))
    .expect("valid meta");
    let forwarded = forwarded_meta(&meta).expect("something is left");
    let json = serde_json::to_value(&forwarded).expect("serializes");
    assert_eq!(json, json!({"com.example/trace": {"id": "abc"}, "custom": 1}));
}

#[test]
fn empty_meta_forwards_nothing() {
    let meta: mcp::RequestMetaObject =
        serde_json::from_value(json!({"progressToken": "t"})).expect("valid");
    assert!(forwarded_meta(&meta).is_none());
}

#[test]
fn relayed_results_are_marked_complete_for_modern_clients_only_where_the_field_exists() {
    let mut result = mcp::ServerResult::CallToolResult(mcp::CallToolResult::success(vec![]));
    mark_complete(&mut result);
    assert_eq!(serde_json::to_value(&result).unwrap()["resultType"], "complete");
    let mut empty = mcp::ServerResult::empty(());
    mark_complete(&mut empty);
    assert!(serde_json::to_value(&empty).unwrap().get("resultType").is_none());
}
