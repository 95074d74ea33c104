//! The request reader: every accepted form of a field, and each malformed one named by its path.

use serde_json::json;

use super::*;

fn parsed(body: Value) -> Result<CreateResponse, ApiError> {
    parse(body.to_string().as_bytes())
}

#[test]
fn a_string_input_is_one_user_message_and_store_defaults_to_true() {
    let request = parsed(json!({ "model": "m", "input": "hello" })).expect("valid");
    assert_eq!(request.input, vec![InputItem::Message { role: Role::User, text: "hello".into() }]);
    assert!(request.store);
    assert!(!request.stream);
}

#[test]
fn mcp_tools_read_every_form_of_their_filters_and_drop_credentials_from_the_echo() {
    let request = parsed(json!({
        "model": "m",
        "tools": [
            { "type": "mcp", "server_label": "fs", "allowed_tools": ["read"],
              "require_approval": "never", "authorization": "secret", "headers": {"X": "y"} },
            { "type": "mcp", "server_label": "mem",
              "allowed_tools": { "tool_names": ["a", "b"], "read_only": true },
              "require_approval": { "never": { "tool_names": ["a"] } } },
            { "type": "function", "name": "f", "parameters": {"type": "object"} },
        ],
    }))
    .expect("valid");
    assert_eq!(request.mcp.len(), 2);
    assert_eq!(request.mcp[0].allowed.names, Some(vec!["read".to_owned()]));
    assert_eq!(request.mcp[0].approval, RequireApproval::Never);
    assert!(request.mcp[1].allowed.admits("a", true));
    assert!(!request.mcp[1].allowed.admits("a", false), "read_only");
    assert!(!request.mcp[1].allowed.admits("c", true), "not named");
    assert!(!request.mcp[1].approval.wants("a", false), "never for a");
    assert!(request.mcp[1].approval.wants("b", false), "any other waits");
    assert_eq!(request.functions[0].name, "f");
    let echoed = serde_json::to_string(&request.tools_echo).unwrap();
    assert!(!echoed.contains("secret") && !echoed.contains("\"X\""), "{echoed}");
}

#[test]
fn approval_is_required_by_default_and_always_outranks_never() {
    let request =
        parsed(json!({ "model": "m", "tools": [{ "type": "mcp", "server_label": "fs" }] }))
            .expect("valid");
    assert!(request.mcp[0].approval.wants("anything", true));
    let both = RequireApproval::Filter {
        always: Some(ToolFilter { names: Some(vec!["x".into()]), read_only: false }),
        never: Some(ToolFilter { names: Some(vec!["x".into()]), read_only: false }),
    };
    assert!(both.wants("x", false));
}

#[test]
fn malformed_fields_are_named() {
    let cases = [
        (json!({ "input": "x" }), "model"),
        (json!({ "model": "m", "input": 3 }), "input"),
        (json!({ "model": "m", "input": [{ "role": "robot", "content": "x" }] }), "input[0].role"),
        (json!({ "model": "m", "tools": [{ "type": "mcp" }] }), "tools[0].server_label"),
        (json!({ "model": "m", "tools": [{ "type": "web_search" }] }), "tools[0].type"),
        (
            json!({ "model": "m", "tools": [{ "type": "mcp", "server_label": "a" },
                                           { "type": "mcp", "server_label": "a" }] }),
            "tools[1].server_label",
        ),
        (
            json!({ "model": "m", "input": [{ "type": "mcp_approval_response",
                                              "approval_request_id": "x" }] }),
            "input[0].approve",
        ),
        (json!({ "model": "m", "max_tool_calls": 0 }), "max_tool_calls"),
        (json!({ "model": "m", "store": "yes" }), "store"),
    ];
    for (body, param) in cases {
        let error = parsed(body.clone()).expect_err(&body.to_string());
        assert_eq!(error.param.as_deref(), Some(param), "{body}: {}", error.message);
        assert_eq!(error.status, axum::http::StatusCode::BAD_REQUEST);
    }
}

#[test]
fn echoed_output_items_are_skipped_and_approval_answers_read() {
    let request = parsed(json!({
        "model": "m",
        "input": [
            { "type": "mcp_list_tools", "id": "x", "server_label": "fs", "tools": [] },
            { "type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": false,
              "reason": "not today" },
            { "role": "user", "content": [{ "type": "input_text", "text": "a" },
                                          { "type": "input_text", "text": "b" }] },
        ],
    }))
    .expect("valid");
    assert_eq!(request.input[0], InputItem::ListedTools { server_label: "fs".into() });
    assert_eq!(
        request.input[1],
        InputItem::ApprovalResponse {
            approval_request_id: "mcpr_1".into(),
            approve: false,
            reason: Some("not today".into()),
        }
    );
    assert_eq!(request.input[2], InputItem::Message { role: Role::User, text: "a\nb".into() });
}
