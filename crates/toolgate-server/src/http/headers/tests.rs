//! Tests of the MCP headers against the body.

use std::sync::Arc;

use super::*;
use serde_json::json;

fn request(value: Value) -> mcp::ClientRequest {
    serde_json::from_value(value).expect("a client request")
}

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (name, value) in pairs {
        headers
            .append(http::HeaderName::from_bytes(name.as_bytes()).unwrap(), value.parse().unwrap());
    }
    headers
}

fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

fn call(arguments: Value) -> mcp::ClientRequest {
    request(json!({"method": "tools/call", "params": {
        "name": "fx__echo", "arguments": arguments, "_meta": modern_meta()
    }}))
}

fn schema() -> Option<Arc<mcp::JsonObject>> {
    let schema = json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "nested": {"type": "object", "properties": {"id": {"type": "integer", "x-mcp-header": "Id"}}},
        "text": {"type": "string"}
    }});
    Some(Arc::new(serde_json::from_value(schema).unwrap()))
}

const V: Option<&str> = Some("2026-07-28");

#[test]
fn the_meta_version_and_the_header_must_agree() {
    let listed = request(json!({"method": "tools/list", "params": {"_meta": modern_meta()}}));
    assert!(check_meta_version(V, &listed).is_ok());
    let missing = check_meta_version(None, &listed).unwrap_err();
    assert_eq!(missing.code, mcp::ErrorCode::HEADER_MISMATCH);
    let other = check_meta_version(Some("2025-11-25"), &listed).unwrap_err();
    assert_eq!(other.code, mcp::ErrorCode::HEADER_MISMATCH);
    assert!(other.message.contains("2025-11-25"), "{}", other.message);
}

#[test]
fn a_2026_header_without_2026_metadata_is_malformed() {
    let bare = request(json!({"method": "tools/list"}));
    let error = check_meta_version(V, &bare).unwrap_err();
    assert!(toolgate_gateway::protocol::is_malformed_meta(&error), "{error:?}");
    assert!(check_meta_version(Some("2025-11-25"), &bare).is_ok(), "a session's request");
    assert!(check_meta_version(None, &bare).is_ok());
}

#[test]
fn standard_headers_must_match_the_body_from_2026_on() {
    let call = call(json!({"region": "eu", "nested": {"id": 7}, "text": "hi"}));
    let good = headers(&[
        ("mcp-method", "tools/call"),
        ("mcp-name", "fx__echo"),
        ("mcp-param-region", "eu"),
        ("mcp-param-id", "7"),
    ]);
    assert!(check_standard_headers(&good, V, &call, |_| schema()).is_ok());
    assert!(
        check_standard_headers(&HeaderMap::new(), Some("2025-11-25"), &call, |_| schema()).is_ok()
    );
    let cases: [(&[(&str, &str)], &str); 6] = [
        (&[("mcp-name", "fx__echo")], "missing required Mcp-Method"),
        (&[("mcp-method", "tools/list"), ("mcp-name", "fx__echo")], "does not match body method"),
        (&[("mcp-method", "tools/call")], "missing required Mcp-Name"),
        (&[("mcp-method", "tools/call"), ("mcp-name", "fx__other")], "does not match body value"),
        (
            &[("mcp-method", "tools/call"), ("mcp-name", "fx__echo"), ("mcp-param-region", "eu")],
            "missing Mcp-Param-Id",
        ),
        (
            &[("mcp-method", "tools/call"), ("mcp-method", "tools/call"), ("mcp-name", "fx__echo")],
            "duplicate",
        ),
    ];
    for (pairs, expected) in cases {
        let error = check_standard_headers(&headers(pairs), V, &call, |_| schema()).unwrap_err();
        assert_eq!(error.code, mcp::ErrorCode::HEADER_MISMATCH);
        assert!(error.message.contains(expected), "{pairs:?}: {}", error.message);
    }
}

#[test]
fn a_param_header_for_an_absent_argument_is_refused_and_base64_is_unwrapped() {
    let call = call(json!({"region": "ü", "nested": {}}));
    let wrapped = format!("=?base64?{}?=", base64::engine::general_purpose::STANDARD.encode("ü"));
    let good = headers(&[
        ("mcp-method", "tools/call"),
        ("mcp-name", "fx__echo"),
        ("mcp-param-region", &wrapped),
    ]);
    assert!(check_standard_headers(&good, V, &call, |_| schema()).is_ok());
    let extra = headers(&[
        ("mcp-method", "tools/call"),
        ("mcp-name", "fx__echo"),
        ("mcp-param-region", &wrapped),
        ("mcp-param-id", "1"),
    ]);
    let error = check_standard_headers(&extra, V, &call, |_| schema()).unwrap_err();
    assert!(error.message.contains("unexpected Mcp-Param-Id"), "{}", error.message);
}

#[test]
fn initialize_may_leave_mcp_method_out_but_not_contradict_it() {
    let initialize = request(json!({"method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}
    }}));
    assert!(check_standard_headers(&HeaderMap::new(), V, &initialize, |_| None).is_ok());
    let said = headers(&[("mcp-method", "initialize")]);
    assert!(check_standard_headers(&said, V, &initialize, |_| None).is_ok());
    let wrong = headers(&[("mcp-method", "tools/list")]);
    assert!(check_standard_headers(&wrong, V, &initialize, |_| None).is_err());
}

#[test]
fn resources_are_routed_by_uri() {
    let read = request(
        json!({"method": "resources/read", "params": {"uri": "test://a", "_meta": modern_meta()}}),
    );
    let good = headers(&[("mcp-method", "resources/read"), ("mcp-name", "test://a")]);
    assert!(check_standard_headers(&good, V, &read, |_| None).is_ok());
    let bad = headers(&[("mcp-method", "resources/read"), ("mcp-name", "test://b")]);
    assert!(check_standard_headers(&bad, V, &read, |_| None).is_err());
}

#[test]
fn subscriptions_prompts_and_tasks_are_routed_by_name_too() {
    for (method, params, name) in [
        ("resources/subscribe", json!({"uri": "test://a"}), "test://a"),
        ("resources/unsubscribe", json!({"uri": "test://a"}), "test://a"),
        ("prompts/get", json!({"name": "fx__greet"}), "fx__greet"),
        ("tasks/get", json!({"taskId": "task-1"}), "task-1"),
        ("tasks/cancel", json!({"taskId": "task-1"}), "task-1"),
    ] {
        let mut params = params;
        params["_meta"] = modern_meta();
        let request = request(json!({"method": method, "params": params}));
        let good = headers(&[("mcp-method", method), ("mcp-name", name)]);
        assert!(check_standard_headers(&good, V, &request, |_| None).is_ok(), "{method}");
        let other = headers(&[("mcp-method", method), ("mcp-name", "test://b")]);
        assert!(check_standard_headers(&other, V, &request, |_| None).is_err(), "{method}");
        let missing = headers(&[("mcp-method", method)]);
        assert!(check_standard_headers(&missing, V, &request, |_| None).is_err(), "{method}");
    }
}

#[test]
fn only_the_versions_toolgate_speaks_are_known() {
    for version in ["2025-06-18", "2025-11-25", "2026-07-28"] {
        assert!(is_known(version), "{version}");
    }
    for version in ["1999-01-01", "2025-11-26", "", "latest"] {
        assert!(!is_known(version), "{version}");
    }
}

#[test]
fn the_protocol_version_header_is_read_as_sent() {
    assert_eq!(protocol_version(&headers(&[])), Ok(None));
    let named = headers(&[("MCP-Protocol-Version", "2025-06-18")]);
    assert_eq!(protocol_version(&named), Ok(Some("2025-06-18")));
    let mut binary = HeaderMap::new();
    binary.insert(
        PROTOCOL_VERSION,
        http::HeaderValue::from_bytes(b"2025-\xff").expect("a header value"),
    );
    assert_eq!(protocol_version(&binary), Err("the MCP-Protocol-Version header is not text"));
}
