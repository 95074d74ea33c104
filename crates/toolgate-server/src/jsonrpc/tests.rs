//! Tests of JSON-RPC screening: which error code each kind of bad message gets.

use super::*;

fn rejected(text: &str) -> Rejection {
    parse_message(text.as_bytes()).expect_err(text)
}

#[test]
fn text_that_is_not_json_is_a_parse_error_with_a_null_id() {
    let rejection = rejected("{not json");
    assert_eq!(rejection.code, mcp::ErrorCode::PARSE_ERROR);
    assert_eq!(rejection.to_json()["id"], Value::Null);
    assert!(rejection.to_json().as_object().expect("object").contains_key("id"));
}

#[test]
fn json_that_is_not_json_rpc_is_an_invalid_request() {
    for text in [r#"{"hello":"world"}"#, "[1,2]", "42", r#"{"id":3,"method":"ping"}"#] {
        let rejection = rejected(text);
        assert_eq!(rejection.code, mcp::ErrorCode::INVALID_REQUEST, "{text}");
    }
    // The id is echoed when it can be read.
    assert_eq!(rejected(r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#).id, json!(3));
    assert_eq!(rejected(r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#).id, Value::Null);
}

#[test]
fn a_request_with_unreadable_params_is_invalid_params_with_its_id() {
    let rejection = rejected(r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":"x"}"#);
    assert_eq!(rejection.code, mcp::ErrorCode::INVALID_PARAMS);
    assert_eq!(rejection.id, json!("a"));
    assert!(rejection.message.contains("tools/call"), "{}", rejection.message);
    assert!(rejection.message.contains("invalid type"), "{}", rejection.message);
    let rejection = rejected(r#"{"jsonrpc":"2.0","id":1,"method":"vendor/x","params":"x"}"#);
    assert_eq!(rejection.code, mcp::ErrorCode::INVALID_PARAMS);
    assert!(rejection.message.contains("must be an object"), "{}", rejection.message);
}

#[test]
fn well_formed_messages_pass() {
    for text in [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"vendor/unknown","params":{"a":1}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":9,"result":{}}"#,
    ] {
        assert!(parse_message(text.as_bytes()).is_ok(), "{text}");
    }
}

/// Found by the property tests (`props.rs`): a request with right parameters and an id that
/// is no integer was answered `-32602`, "parameters of the wrong shape".
#[test]
fn an_id_that_is_no_integer_is_an_invalid_request_not_invalid_params() {
    for id in ["1.5", "18446744073709551615"] {
        let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
        let rejection = rejected(&text);
        assert_eq!(rejection.code, mcp::ErrorCode::INVALID_REQUEST, "{text}");
        assert_eq!(rejection.to_json()["id"].to_string(), id);
        assert!(rejection.message.contains("`id`"), "{}", rejection.message);
    }
}
