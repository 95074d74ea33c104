//! Tests of the interceptor's options: each bad one named, each read, and the kind built from a
//! pipeline entry.

use super::*;

fn entry(options: serde_json::Value) -> InterceptorConfig {
    crate::test_entry(KIND, "pipeline[0]", options)
}

fn errors(options: serde_json::Value) -> Vec<String> {
    let services = Services::new(EventBus::new());
    TestFilter::from_config(&entry(options), &services)
        .expect_err("refused")
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn bad_options_are_each_named() {
    assert_eq!(
        errors(json!({ "max_lines_per_failure": 0 })),
        vec!["pipeline[0].max_lines_per_failure: expected an integer of at least 1, found 0"]
    );
    assert_eq!(
        errors(json!({ "keep_output": "yes" })),
        vec!["pipeline[0].keep_output: expected true or false, found \"yes\""]
    );
    assert_eq!(
        errors(json!({ "runners": ["cargo", "mocha"] })),
        vec![
            "pipeline[0].runners[1]: unknown runner \"mocha\" (known: cargo, pytest, jest, vitest, go)"
        ]
    );
    assert_eq!(
        errors(json!({ "encoding": "p50k_base" })),
        vec![
            "pipeline[0].encoding: unknown encoding \"p50k_base\" (known: o200k_base, cl100k_base)"
        ]
    );
    assert_eq!(
        errors(json!({ "max_lines": 3 })),
        vec![
            "pipeline[0].max_lines: unknown option (expected one of: max_lines_per_failure, keep_passed_names, keep_output, runners, encoding)"
        ]
    );
}

#[test]
fn options_are_read() {
    let services = Services::new(EventBus::new());
    let filter = TestFilter::from_config(
        &entry(json!({
            "max_lines_per_failure": 5,
            "keep_passed_names": true,
            "keep_output": true,
            "runners": ["go"],
            "encoding": "cl100k_base",
        })),
        &services,
    )
    .unwrap();
    assert_eq!(
        filter.settings(),
        &Settings {
            max_lines_per_failure: 5,
            keep_passed_names: true,
            keep_output: true,
            runners: vec!["go".into()],
            encoding: Encoding::Cl100kBase,
        }
    );
    assert_eq!(filter.descriptor().kind, KIND);
    assert!(filter.descriptor().fail_open);
}

async fn intercept(
    filter: &TestFilter,
    result: mcp::CallToolResult,
    ctx: &mut CallContext,
) -> Outcome {
    let message = Message::ToolResult(result);
    filter.intercept(InterceptionEvent::ToolsCall, Phase::Response, &message, ctx).await.unwrap()
}

#[tokio::test]
async fn a_tool_result_is_shortened_block_by_block_and_the_change_published() {
    let bus = EventBus::new();
    let mut events = bus.subscribe("transform/*".parse().unwrap(), 8);
    let filter = TestFilter::from_config(&entry(json!({})), &Services::new(bus)).unwrap();
    let cargo = fixture("cargo-fail.txt");
    let pytest = fixture("pytest-fail.txt");
    let mut result = mcp::CallToolResult::error(vec![
        mcp::ContentBlock::text(cargo.clone()),
        mcp::ContentBlock::image("AAAA", "image/png"),
        mcp::ContentBlock::Resource(mcp::EmbeddedResource::new(mcp::ResourceContents::text(
            pytest.clone(),
            "file:///log/pytest.txt",
        ))),
        mcp::ContentBlock::text("exit status 1"),
    ]);
    result.structured_content = Some(json!({ "exit": 1 }));
    let mut ctx = CallContext::new(Principal::anonymous());
    let Outcome::Rewrite(Message::ToolResult(shortened)) =
        intercept(&filter, result.clone(), &mut ctx).await
    else {
        panic!("not rewritten");
    };
    assert_eq!(shortened.is_error, Some(true));
    assert_eq!(shortened.structured_content, result.structured_content);
    assert_eq!(shortened.content.len(), 4);
    assert_eq!(shortened.content[1], result.content[1]);
    assert_eq!(shortened.content[3], result.content[3]);
    let mcp::ContentBlock::Text(text) = &shortened.content[0] else { panic!("text") };
    assert_eq!(text.text, super::filter(&cargo, &Settings::default()).unwrap().text);
    let mcp::ContentBlock::Resource(resource) = &shortened.content[2] else { panic!("resource") };
    let mcp::ResourceContents::TextResourceContents { text, uri, .. } = &resource.resource else {
        panic!("text resource")
    };
    assert_eq!(uri, "file:///log/pytest.txt");
    assert_eq!(*text, super::filter(&pytest, &Settings::default()).unwrap().text);

    let event = events.try_recv().expect("published");
    assert_eq!(event.kind, transform::APPLIED);
    assert_eq!(event.get("transform"), Some(&json!("test_filter")));
    assert_eq!(event.get("runner"), Some(&json!("cargo test, pytest")));
    assert_eq!(event.get("failed"), Some(&json!(10)));
    assert_eq!(event.get("passed"), Some(&json!(223)));
    assert_eq!(event.get("errors"), Some(&json!(0)));
    let before = event.get("tokens_before").and_then(Value::as_u64).unwrap();
    let after = event.get("tokens_after").and_then(Value::as_u64).unwrap();
    assert!(after * 3 < before, "{before} -> {after}");
}

#[tokio::test]
async fn a_result_with_no_test_output_goes_on_unchanged_and_unannounced() {
    let bus = EventBus::new();
    let mut events = bus.subscribe("transform/*".parse().unwrap(), 8);
    let filter = TestFilter::from_config(&entry(json!({})), &Services::new(bus)).unwrap();
    let result = mcp::CallToolResult::success(vec![mcp::ContentBlock::text("total 0\n")]);
    let mut ctx = CallContext::new(Principal::anonymous());
    assert_eq!(intercept(&filter, result, &mut ctx).await, Outcome::Continue);
    assert!(events.try_recv().is_none());
}

#[test]
fn the_kind_is_built_from_the_pipeline() {
    let services = Services::new(EventBus::new());
    let pipeline = crate::build_pipeline(
        &[InterceptorConfig::new(
            "pipeline[0]",
            KIND,
            json!({ "max_lines_per_failure": 10 }).as_object().cloned().unwrap(),
        )],
        &services,
    );
    assert!(pipeline.is_ok());
    assert!(crate::KINDS.contains(&KIND));
}
