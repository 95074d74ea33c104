//! Tests of validate_args: schema checks of arguments, size and depth limits, and the messages.

use serde_json::json;
use toolgate_intercept::{Principal, Target};

use super::*;

fn entry(options: Value) -> InterceptorConfig {
    crate::test_entry(KIND, "pipeline[0]", options)
}

fn validator(options: Value) -> ValidateArgs {
    ValidateArgs::from_config(&entry(options)).expect("valid options")
}

fn tool(schema: Value) -> Arc<mcp::Tool> {
    let schema = schema.as_object().cloned().expect("a schema object");
    Arc::new(mcp::Tool::new("read_file", "reads a file", Arc::new(schema)))
}

fn ctx(tool: Option<Arc<mcp::Tool>>) -> CallContext {
    let mut ctx = CallContext::new(Principal::local());
    ctx.target = Some(Target {
        server: "files".into(),
        original: "read_file".into(),
        exposed: "files__read_file".into(),
        tool,
    });
    ctx
}

fn call(arguments: Option<Value>) -> Message {
    let mut params = mcp::CallToolRequestParams::new("files__read_file");
    params.arguments = arguments.map(|a| a.as_object().cloned().expect("an object"));
    Message::CallTool(params)
}

/// Runs `v` on a call with `arguments` against `schema`: `None` when it continued, the
/// reason when it refused.
async fn run(v: &ValidateArgs, schema: &Arc<mcp::Tool>, arguments: Value) -> Option<String> {
    let mut ctx = ctx(Some(schema.clone()));
    outcome_reason(
        v.intercept(InterceptionEvent::ToolsCall, Phase::Request, &call(Some(arguments)), &mut ctx)
            .await,
    )
}

fn outcome_reason(outcome: Result<Outcome, InterceptError>) -> Option<String> {
    match outcome {
        Ok(Outcome::Continue) => None,
        Ok(Outcome::Refuse(refusal)) => {
            assert_eq!(refusal.interceptor, KIND);
            Some(refusal.reason)
        }
        other => panic!("a validator continues or refuses: {other:?}"),
    }
}

fn read_file_schema() -> Arc<mcp::Tool> {
    tool(json!({
        "type": "object",
        "properties": {
            "path": { "type": "string" },
            "mode": { "enum": ["text", "binary"] },
            "limit": { "type": "integer", "minimum": 1 },
        },
        "required": ["path", "mode"],
        "additionalProperties": false,
    }))
}

#[tokio::test]
async fn valid_arguments_pass() {
    let v = validator(json!({}));
    let schema = read_file_schema();
    assert_eq!(run(&v, &schema, json!({"path": "/etc/hosts", "mode": "text"})).await, None);
    assert_eq!(run(&v, &schema, json!({"path": "a", "mode": "binary", "limit": 3})).await, None);
}

#[tokio::test]
async fn every_violation_is_listed_with_its_path() {
    let v = validator(json!({}));
    let reason = run(&v, &read_file_schema(), json!({"path": 5})).await.expect("refused");
    assert_eq!(
        reason,
        "arguments do not match the input schema of files__read_file: \
         (root): \"mode\" is a required property; /path: 5 is not of type \"string\""
    );
}

#[tokio::test]
async fn each_kind_of_violation_is_reported() {
    let v = validator(json!({}));
    let schema = read_file_schema();
    let cases = [
        (json!({"path": "a"}), "(root): \"mode\" is a required property"),
        (json!({"path": true, "mode": "text"}), "/path: true is not of type \"string\""),
        (json!({"path": "a", "mode": "octal"}), "/mode: \"octal\" is not one of"),
        (
            json!({"path": "a", "mode": "text", "limit": 0}),
            "/limit: 0 is less than the minimum of 1",
        ),
        (
            json!({"path": "a", "mode": "text", "colour": "red"}),
            "(root): Additional properties are not allowed ('colour' was unexpected)",
        ),
    ];
    for (arguments, expected) in cases {
        let reason = run(&v, &schema, arguments.clone()).await.expect("refused");
        assert!(reason.contains(expected), "{arguments}: {reason}");
        assert_eq!(reason.matches("; ").count(), 0, "one violation only: {reason}");
    }
}

#[tokio::test]
async fn nested_paths_point_into_objects_and_arrays() {
    let v = validator(json!({}));
    let schema = tool(json!({
        "type": "object",
        "properties": {
            "options": {
                "type": "object",
                "properties": { "retries": { "type": "integer" } },
                "required": ["retries"],
            },
            "files": { "type": "array", "items": { "type": "string" } },
        },
    }));
    let reason =
        run(&v, &schema, json!({"options": {"retries": "3"}, "files": ["a", 1, "c", null]}))
            .await
            .expect("refused");
    for expected in [
        "/options/retries: \"3\" is not of type \"integer\"",
        "/files/1: 1 is not of type \"string\"",
        "/files/3: null is not of type \"string\"",
    ] {
        assert!(reason.contains(expected), "missing {expected:?} in {reason}");
    }
    let reason = run(&v, &schema, json!({"options": {}})).await.expect("refused");
    assert!(reason.ends_with("/options: \"retries\" is a required property"), "{reason}");
}

#[tokio::test]
async fn draft_2020_12_is_the_default() {
    let v = validator(json!({}));
    let schema = tool(json!({
        "type": "object",
        "properties": {
            "point": {
                "type": "array",
                "prefixItems": [{ "type": "number" }, { "type": "number" }],
                "items": false,
            },
            "owner": { "$ref": "#/$defs/user" },
        },
        "$defs": {
            "user": {
                "type": "object",
                "properties": { "login": { "type": "string", "minLength": 1 } },
                "required": ["login"],
            },
        },
    }));
    assert_eq!(run(&v, &schema, json!({"point": [1, 2.5], "owner": {"login": "ann"}})).await, None);
    let reason = run(&v, &schema, json!({"point": [1, "2"], "owner": {"login": ""}}))
        .await
        .expect("refused");
    assert!(reason.contains("/point/1: \"2\" is not of type \"number\""), "{reason}");
    assert!(reason.contains("/owner/login: \"\" is shorter than 1 character"), "{reason}");
    let reason = run(&v, &schema, json!({"point": [1, 2, 3]})).await.expect("refused");
    assert!(reason.ends_with("/point/2: False schema does not allow 3"), "{reason}");
}

#[tokio::test]
async fn an_explicit_schema_draft_is_honoured() {
    let v = validator(json!({}));
    // In draft 7 an array `items` is a tuple, and `format` asserts.
    let schema = tool(json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "pair": {
                "type": "array",
                "items": [{ "type": "string" }],
                "additionalItems": false,
            },
            "when": { "type": "string", "format": "date" },
        },
    }));
    assert_eq!(run(&v, &schema, json!({"pair": ["a"], "when": "2024-01-31"})).await, None);
    let reason =
        run(&v, &schema, json!({"pair": ["a", "b"], "when": "yesterday"})).await.expect("refused");
    assert!(reason.contains("/pair: Additional items are not allowed"), "{reason}");
    assert!(reason.contains("/when: \"yesterday\" is not a \"date\""), "{reason}");
    // The same `format` is only an annotation in 2020-12.
    let lenient = tool(json!({
        "type": "object",
        "properties": { "when": { "type": "string", "format": "date" } },
    }));
    assert_eq!(run(&v, &lenient, json!({"when": "yesterday"})).await, None);
}

#[tokio::test]
async fn missing_arguments_are_an_empty_object() {
    let v = validator(json!({}));
    let mut ctx = ctx(Some(read_file_schema()));
    let refused = outcome_reason(
        v.intercept(InterceptionEvent::ToolsCall, Phase::Request, &call(None), &mut ctx).await,
    )
    .expect("refused");
    assert!(refused.contains("(root): \"path\" is a required property"), "{refused}");
    let anything = tool(json!({"type": "object"}));
    let mut ctx = self::ctx(Some(anything));
    let outcome =
        v.intercept(InterceptionEvent::ToolsCall, Phase::Request, &call(None), &mut ctx).await;
    assert_eq!(outcome_reason(outcome), None);
}

#[tokio::test]
async fn calls_without_a_target_or_a_definition_go_through() {
    let v = validator(json!({}));
    let mut ctx = self::ctx(None);
    let outcome = v
        .intercept(
            InterceptionEvent::ToolsCall,
            Phase::Request,
            &call(Some(json!({"x": 1}))),
            &mut ctx,
        )
        .await;
    assert_eq!(outcome_reason(outcome), None);
    let mut ctx = CallContext::new(Principal::local());
    let outcome =
        v.intercept(InterceptionEvent::ToolsCall, Phase::Request, &call(None), &mut ctx).await;
    assert_eq!(outcome_reason(outcome), None);
}

#[tokio::test]
async fn long_values_are_elided() {
    let v = validator(json!({}));
    let schema = tool(json!({
        "type": "object",
        "properties": { "text": { "type": "string", "maxLength": 5 } },
    }));
    let long = "x".repeat(1000);
    let reason = run(&v, &schema, json!({"text": long})).await.expect("refused");
    assert!(reason.contains("/text: the value is longer than 5 characters"), "{reason}");
    assert!(!reason.contains("xxxxxxxx"), "{reason}");
}

#[tokio::test]
async fn a_schema_that_does_not_compile_refuses_or_allows() {
    let broken = tool(json!({"type": "object", "properties": {"a": {"type": 5}}}));
    let refusing = validator(json!({}));
    let reason = run(&refusing, &broken, json!({"a": 1})).await.expect("refused");
    assert_eq!(
        reason,
        "the input schema of files__read_file does not compile, so its calls are refused: \
         /properties/a/type: 5 is not valid under any of the schemas listed in the 'anyOf' \
         keyword"
    );
    let allowing = validator(json!({"invalid_schema": "allow"}));
    assert_eq!(run(&allowing, &broken, json!({"a": 1})).await, None);
}

#[tokio::test]
async fn remote_references_are_never_fetched() {
    let v = validator(json!({}));
    let remote = tool(json!({
        "type": "object",
        "properties": { "a": { "$ref": "https://example.invalid/schema.json" } },
    }));
    let reason = run(&v, &remote, json!({"a": 1})).await.expect("refused");
    assert!(reason.contains("does not compile"), "{reason}");
    assert!(reason.contains("Retrieval is disabled"), "{reason}");
    let unknown_dialect =
        tool(json!({"$schema": "https://example.invalid/meta", "type": "object"}));
    let reason = run(&v, &unknown_dialect, json!({})).await.expect("refused");
    assert!(reason.contains("does not compile"), "{reason}");
}

#[tokio::test]
async fn a_changed_schema_is_compiled_again() {
    let v = validator(json!({}));
    let strings = tool(json!({"type": "object", "properties": {"n": {"type": "string"}}}));
    assert_eq!(run(&v, &strings, json!({"n": "1"})).await, None);
    // A new definition with the same schema reuses the entry.
    let same = tool(json!({"type": "object", "properties": {"n": {"type": "string"}}}));
    assert_eq!(run(&v, &same, json!({"n": "1"})).await, None);
    assert_eq!(v.cached(), 1);
    // The upstream changed the schema: the old validator must not be used.
    let numbers = tool(json!({"type": "object", "properties": {"n": {"type": "number"}}}));
    let reason = run(&v, &numbers, json!({"n": "1"})).await.expect("refused");
    assert!(reason.contains("/n: \"1\" is not of type \"number\""), "{reason}");
    assert_eq!(run(&v, &numbers, json!({"n": 1})).await, None);
    assert_eq!(v.cached(), 1);
    // And back again.
    assert_eq!(run(&v, &strings, json!({"n": "1"})).await, None);
}

#[test]
fn the_cache_is_bounded() {
    let v = validator(json!({}));
    let schema = tool(json!({"type": "object"}));
    for i in 0..CACHE_CAPACITY + 10 {
        assert_eq!(v.check("s", &format!("t{i}"), &schema, None), Check::Valid);
    }
    assert_eq!(v.cached(), CACHE_CAPACITY);
}

#[test]
fn option_errors_name_the_field() {
    let errors = ValidateArgs::from_config(&entry(json!({
        "invalid_schema": "ignore",
        "strict": true,
    })))
    .expect_err("invalid");
    let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        [
            "pipeline[0].strict: unknown option (expected one of: invalid_schema)",
            "pipeline[0].invalid_schema: expected \"refuse\" or \"allow\", found \"ignore\"",
        ]
    );
    let errors =
        ValidateArgs::from_config(&entry(json!({"invalid_schema": 1}))).expect_err("invalid");
    assert_eq!(errors[0].to_string(), "pipeline[0].invalid_schema: expected a string, found 1");
}

#[test]
fn it_is_a_fail_closed_validator_of_tool_calls() {
    let v = validator(json!({}));
    let d = v.descriptor();
    assert_eq!(d.interceptor_type, InterceptorType::Validation);
    assert!(!d.fail_open);
    assert!(d.applies(
        InterceptionEvent::ToolsCall,
        Phase::Request,
        Some("files"),
        Some("read_file")
    ));
    assert!(!d.applies(
        InterceptionEvent::ToolsCall,
        Phase::Response,
        Some("files"),
        Some("read_file")
    ));
    assert!(!d.applies(InterceptionEvent::ToolsList, Phase::Response, None, None));
}

#[tokio::test]
async fn a_value_of_up_to_64_characters_is_shown_and_a_longer_one_is_not() {
    let v = validator(json!({}));
    let schema = tool(json!({
        "type": "object",
        "properties": { "text": { "type": "string", "maxLength": 5 } },
    }));
    // A JSON string of 64 characters: 62 letters between its quotes.
    let shown = "x".repeat(62);
    let reason = run(&v, &schema, json!({ "text": shown })).await.expect("too long");
    assert!(reason.contains(&format!("\"{shown}\" is longer than 5 characters")), "{reason}");
    let hidden = "x".repeat(63);
    let reason = run(&v, &schema, json!({ "text": hidden })).await.expect("too long");
    assert!(reason.contains("/text: the value is longer than 5 characters"), "{reason}");
    assert!(!reason.contains(&hidden), "{reason}");
}
