//! Tests of `redact`: options and their errors, every part of a result, resource reads,
//! arguments in the request phase, the event (counts, never values), and how it sits before
//! `validate_args` and `approval` in a real pipeline.

use serde_json::json;
use toolgate_audit::EventPattern;
use toolgate_intercept::{Approved, Principal, Target, call_digest};

use super::*;

const AWS: &str = "AKIAIOSFODNN7EXAMPLE";
const MAIL: &str = "jane.doe@example.com";
const CARD: &str = "4242 4242 4242 4242";

fn entry(options: Value) -> InterceptorConfig {
    crate::test_entry(KIND, "pipeline[0]", options)
}

fn redact_with(options: Value, events: &EventBus) -> Redact {
    Redact::from_config(&entry(options), &Services::new(events.clone())).expect("valid options")
}

fn redact(options: Value) -> Redact {
    redact_with(options, &EventBus::new())
}

fn errors(options: Value) -> Vec<String> {
    Redact::from_config(&entry(options), &Services::new(EventBus::new()))
        .expect_err("invalid options")
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn ctx() -> CallContext {
    let mut ctx = CallContext::new(Principal::local());
    ctx.target = Some(Target {
        server: "crm".into(),
        original: "lookup".into(),
        exposed: "crm__lookup".into(),
        tool: None,
    });
    ctx
}

async fn run(redact: &Redact, event: InterceptionEvent, phase: Phase, message: Message) -> Outcome {
    redact.intercept(event, phase, &message, &mut ctx()).await.expect("never fails")
}

fn text_of(result: &mcp::CallToolResult, index: usize) -> String {
    match &result.content[index] {
        mcp::ContentBlock::Text(text) => text.text.clone(),
        mcp::ContentBlock::Resource(embedded) => match &embedded.resource {
            mcp::ResourceContents::TextResourceContents { text, .. } => text.clone(),
            other => panic!("not text: {other:?}"),
        },
        other => panic!("not text: {other:?}"),
    }
}

fn rich_result(secret_text: &str) -> mcp::CallToolResult {
    let mut result = mcp::CallToolResult::success(vec![
        mcp::ContentBlock::text(secret_text),
        mcp::ContentBlock::image(
            "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEElEQVR42mP4z8AARAwQCgAf7gP9Y167WwAAAABJRU5ErkJggg==",
            "image/png",
        ),
        mcp::ContentBlock::Resource(mcp::EmbeddedResource::new(mcp::ResourceContents::text(
            secret_text,
            "file:///notes.txt",
        ))),
    ]);
    result.structured_content = Some(json!({"note": secret_text, "count": 3, MAIL: true}));
    result
}

#[tokio::test]
async fn every_text_part_of_a_result_is_redacted_and_media_kept() {
    let redact = redact(json!({}));
    let text = format!("key {AWS}, mail {MAIL}, card {CARD}");
    let result = rich_result(&text);
    let outcome = run(
        &redact,
        InterceptionEvent::ToolsCall,
        Phase::Response,
        Message::ToolResult(result.clone()),
    )
    .await;
    let Outcome::Rewrite(Message::ToolResult(out)) = outcome else { panic!("{outcome:?}") };
    let expected =
        "key [REDACTED:aws_access_key], mail [REDACTED:email], card [REDACTED:card_number]";
    assert_eq!(text_of(&out, 0), expected);
    assert_eq!(out.content[1], result.content[1], "the image is untouched");
    assert_eq!(text_of(&out, 2), expected);
    assert_eq!(
        out.structured_content,
        Some(json!({"note": expected, "count": 3, "[REDACTED:email]": true}))
    );
    let counts = redact.redact_result(&result).unwrap().counts;
    assert_eq!(counts.to_json(), json!({"aws_access_key": 3, "card_number": 3, "email": 4}));
}

#[tokio::test]
async fn a_result_without_secrets_continues_uncopied() {
    let redact = redact(json!({}));
    let mut result =
        rich_result("commit 9fceb02d0ae598e95dc970b74767f19372d61af8, order 4242424242424241");
    result.structured_content = Some(json!({"id": "123e4567-e89b-12d3-a456-426614174000"}));
    let outcome =
        run(&redact, InterceptionEvent::ToolsCall, Phase::Response, Message::ToolResult(result))
            .await;
    assert!(matches!(outcome, Outcome::Continue), "{outcome:?}");
}

#[test]
fn a_json_text_block_stays_valid_json() {
    let redact = redact(json!({"custom": [{"name": "quoted", "regex": "\"pin\": \"[0-9]+\""}]}));
    let text = r#"{"user": "jane.doe@example.com", "pin": "1234"}"#;
    let result = mcp::CallToolResult::success(vec![mcp::ContentBlock::text(text)]);
    let out = redact.redact_result(&result).expect("found").message;
    // The custom match spans a quote: the block is redacted as parsed JSON instead.
    let json: Value = serde_json::from_str(&text_of(&out, 0)).expect("still JSON");
    assert_eq!(json, json!({"user": "[REDACTED:email]", "pin": "1234"}));
    // Without such a pattern, the text keeps its own layout.
    let plain = self::redact(json!({}));
    let pretty = "{\n  \"user\": \"jane.doe@example.com\"\n}";
    let result = mcp::CallToolResult::success(vec![mcp::ContentBlock::text(pretty)]);
    let out = plain.redact_result(&result).expect("found").message;
    assert_eq!(text_of(&out, 0), "{\n  \"user\": \"[REDACTED:email]\"\n}");
}

#[tokio::test]
async fn resource_reads_are_redacted() {
    let redact = redact(json!({}));
    let result = mcp::ReadResourceResult::new(vec![
        mcp::ResourceContents::text(format!("owner: {MAIL}"), "crm://contacts/1"),
        mcp::ResourceContents::blob("AAAA", "crm://contacts/1.png"),
    ]);
    let outcome = run(
        &redact,
        InterceptionEvent::ResourcesRead,
        Phase::Response,
        Message::Resource(result.clone()),
    )
    .await;
    let Outcome::Rewrite(Message::Resource(out)) = outcome else { panic!("{outcome:?}") };
    let mcp::ResourceContents::TextResourceContents { text, uri, .. } = &out.contents[0] else {
        panic!("text")
    };
    assert_eq!((text.as_str(), uri.as_str()), ("owner: [REDACTED:email]", "crm://contacts/1"));
    assert_eq!(out.contents[1], result.contents[1]);
}

#[tokio::test]
async fn arguments_are_redacted_in_the_request_phase_only_when_asked() {
    let call = mcp::CallToolRequestParams::new("crm__lookup").with_arguments(
        json!({"query": format!("card {CARD}"), "by": {MAIL: "owner"}, "limit": 5})
            .as_object()
            .cloned()
            .unwrap(),
    );
    let on = redact(json!({"arguments": true}));
    let outcome =
        run(&on, InterceptionEvent::ToolsCall, Phase::Request, Message::CallTool(call.clone()))
            .await;
    let Outcome::Rewrite(Message::CallTool(out)) = outcome else { panic!("{outcome:?}") };
    assert_eq!(out.name, call.name, "the same tool");
    assert_eq!(
        Value::Object(out.arguments.unwrap()),
        json!({"query": "card [REDACTED:card_number]", "by": {"[REDACTED:email]": "owner"}, "limit": 5})
    );
    // By default the request phase is not hooked at all.
    let off = redact(json!({}));
    let hooked = |r: &Redact, phase| {
        r.descriptor().applies(InterceptionEvent::ToolsCall, phase, Some("crm"), Some("lookup"))
    };
    assert!(!hooked(&off, Phase::Request));
    assert!(hooked(&off, Phase::Response));
    assert!(hooked(&on, Phase::Request) && hooked(&on, Phase::Response));
    let only_arguments = redact(json!({"arguments": true, "results": false}));
    assert!(hooked(&only_arguments, Phase::Request));
    assert!(!hooked(&only_arguments, Phase::Response));
    assert!(!only_arguments.descriptor().applies(
        InterceptionEvent::ResourcesRead,
        Phase::Response,
        Some("crm"),
        Some("crm://x")
    ));
}

#[tokio::test]
async fn the_event_counts_kinds_and_holds_no_value() {
    let bus = EventBus::new();
    let mut events = bus.subscribe(EventPattern::all(), 16);
    let redact = redact_with(json!({"arguments": true}), &bus);
    let result = rich_result(&format!("{AWS} {MAIL}"));
    run(&redact, InterceptionEvent::ToolsCall, Phase::Response, Message::ToolResult(result)).await;
    let call = mcp::CallToolRequestParams::new("crm__lookup")
        .with_arguments(json!({"q": MAIL}).as_object().cloned().unwrap());
    run(&redact, InterceptionEvent::ToolsCall, Phase::Request, Message::CallTool(call)).await;
    let published: Vec<_> = std::iter::from_fn(|| events.try_recv()).collect();
    assert_eq!(published.len(), 2);
    let first = &published[0];
    assert_eq!(first.kind, transform::APPLIED);
    assert_eq!(first.get("transform"), Some(&json!("redact")));
    assert_eq!(first.get("part"), Some(&json!("result")));
    assert_eq!(first.get("counts"), Some(&json!({"aws_access_key": 3, "email": 4})));
    assert_eq!(first.get("tool"), Some(&json!("lookup")));
    assert_eq!(published[1].get("part"), Some(&json!("arguments")));
    assert_eq!(published[1].get("counts"), Some(&json!({"email": 1})));
    for event in &published {
        let json = serde_json::to_string(event).unwrap();
        assert!(!json.contains(AWS) && !json.contains(MAIL), "a value in {json}");
    }
}

#[test]
fn detectors_exclude_and_custom_choose_what_is_found() {
    let only = redact(
        json!({"detectors": ["email"], "custom": [{"name": "employee_id", "regex": "EMP-[0-9]{6}"}]}),
    );
    let text = format!("{AWS} {MAIL} EMP-004211");
    let result = mcp::CallToolResult::success(vec![mcp::ContentBlock::text(text)]);
    let out = only.redact_result(&result).unwrap();
    assert_eq!(text_of(&out.message, 0), format!("{AWS} [REDACTED:email] [REDACTED:employee_id]"));
    let but = redact(json!({"exclude": ["email", "aws_access_key"]}));
    assert!(but.redact_result(&result).is_none(), "neither kind is looked for");
    assert_eq!(only.detector().kinds(), ["employee_id", "email"]);
}

#[test]
fn option_errors_name_their_paths() {
    assert_eq!(
        errors(json!({"detectors": ["email", "emails"], "exclude": ["ibans"]})),
        [
            format!(
                "pipeline[0].detectors[1]: unknown detector \"emails\" (known: all, {})",
                toolgate_secrets::Builtin::ALL.map(|k| k.name()).join(", ")
            ),
            format!(
                "pipeline[0].exclude[0]: unknown detector \"ibans\" (known: all, {})",
                toolgate_secrets::Builtin::ALL.map(|k| k.name()).join(", ")
            ),
        ]
    );
    let custom = errors(json!({"custom": [
        {"name": "employee_id", "regex": "EMP-[0-9"},
        {"name": "Employee ID", "regex": "x"},
        {"name": "email", "regex": "x"},
        {"name": "a", "regex": "x"},
        {"name": "a", "regex": "y"},
        {"regex": "x", "flags": "i"},
        "EMP",
    ]}));
    assert!(custom[0].starts_with(
        "pipeline[0].custom[0].regex: the regex of detector \"employee_id\" does not compile: "
    ));
    assert_eq!(
        custom[1..],
        [
            "pipeline[0].custom[1].name: invalid detector name \"Employee ID\": use 1 to 64 of a-z, 0-9 and _, starting with a letter",
            "pipeline[0].custom[2].name: \"email\" is the name of a built-in detector; give the custom one another name",
            "pipeline[0].custom[5].flags: unknown key (expected name, regex)",
            "pipeline[0].custom[5]: missing `name`",
            "pipeline[0].custom[6]: expected a table { name = \"...\", regex = \"...\" }, found \"EMP\"",
            "pipeline[0].custom[4].name: two custom detectors are named \"a\"",
        ]
    );
    assert_eq!(
        errors(json!({"results": false})),
        ["pipeline[0].results: with `arguments = false` too, this entry redacts nothing"]
    );
    assert_eq!(
        errors(json!({"detectors": []})),
        ["pipeline[0].detectors: no detector is left (list kinds, or add `custom` ones)"]
    );
    assert_eq!(
        errors(json!({"arguments": "yes", "custom": {"name": "x"}, "mode": 1})),
        [
            "pipeline[0].mode: unknown option (expected one of: detectors, exclude, custom, results, arguments)",
            "pipeline[0].custom: expected an array of tables ({ name = \"...\", regex = \"...\" }), found {\"name\":\"x\"}",
            "pipeline[0].arguments: expected true or false, found \"yes\"",
        ]
    );
}

#[test]
fn the_selection_of_a_pipeline_joins_every_redact_entry() {
    let entries = [
        crate::test_entry(KIND, "pipeline[0]", json!({"detectors": ["email"]})),
        crate::test_entry("policy", "pipeline[1]", json!({})),
        crate::test_entry(
            KIND,
            "pipeline[2]",
            json!({"detectors": ["iban"], "custom": [{"name": "emp", "regex": "EMP-[0-9]{6}"}]}),
        ),
    ];
    assert_eq!(selection(&entries).names(), ["emp", "iban", "email"]);
    assert!(selection(&entries[1..2]).is_empty());
}

/// In a real pipeline, `redact` (a mutator) runs before the validators whatever the config
/// order: `approval` holds and digests the redacted arguments, and that digest is the one
/// the gateway's dispatch check computes from the arguments it sends.
#[tokio::test]
async fn approval_sees_and_digests_the_redacted_arguments() {
    let services = Services::new(EventBus::new()).with_admin_api(true);
    services.approvals.set_attended(true);
    let entries = [
        crate::test_entry(
            "policy",
            "pipeline[0]",
            json!({"rules": [{"tools": ["lookup"], "decision": "ask"}]}),
        ),
        crate::test_entry("approval", "pipeline[1]", json!({"via": "external"})),
        crate::test_entry(KIND, "pipeline[2]", json!({"arguments": true})),
    ];
    let pipeline = crate::build_pipeline(&entries, &services).expect("valid");
    let call = mcp::CallToolRequestParams::new("crm__lookup")
        .with_arguments(json!({"email": MAIL}).as_object().cloned().unwrap());
    let desk = services.approvals.clone();
    let decide = async {
        loop {
            if let Some(pending) = desk.pending().into_iter().next() {
                assert_eq!(pending.arguments, json!({"email": "[REDACTED:email]"}));
                desk.decide(
                    &pending.id,
                    "alice",
                    crate::approval::Ruling::Allow { remember: None },
                )
                .await
                .expect("decided");
                return;
            }
            tokio::task::yield_now().await;
        }
    };
    let mut ctx = ctx();
    let run = pipeline.request(InterceptionEvent::ToolsCall, Message::CallTool(call), &mut ctx);
    let (sent, ()) = tokio::join!(run, decide);
    let Ok(Message::CallTool(sent)) = sent else { panic!("{sent:?}") };
    assert_eq!(
        Value::Object(sent.arguments.clone().unwrap()),
        json!({"email": "[REDACTED:email]"})
    );
    let approved = ctx.get::<Approved>().expect("approved");
    let dispatch = call_digest("crm", "lookup", None, sent.arguments.as_ref());
    assert_eq!(approved.digest, dispatch, "the dispatch check will agree");
}

/// What else an upstream sends a client: prompts, completions, log messages and progress. A
/// secret `redact` takes out of a result must not arrive beside it another way.
#[tokio::test]
async fn prompts_completions_logs_and_progress_are_redacted_too() {
    #![allow(deprecated)] // logging is deprecated in 2026-07-28 (SEP-2577)
    let redact = redact(json!({}));
    let hooked = |event: InterceptionEvent, phase| {
        redact.descriptor().hooks.iter().any(|hook| hook.covers(event, phase))
    };
    assert!(hooked(InterceptionEvent::PromptsGet, Phase::Response));
    assert!(hooked(InterceptionEvent::CompletionComplete, Phase::Response));
    assert!(hooked(InterceptionEvent::LoggingMessage, Phase::Request));
    assert!(hooked(InterceptionEvent::Progress, Phase::Request));

    let mut prompt = mcp::GetPromptResult::new(vec![
        mcp::PromptMessage::new_text(mcp::Role::User, format!("use key {AWS}")),
        mcp::PromptMessage::new(
            mcp::Role::User,
            mcp::ContentBlock::Resource(mcp::EmbeddedResource::new(mcp::ResourceContents::text(
                format!("mail {MAIL}"),
                "file:///contacts.txt",
            ))),
        ),
    ]);
    prompt.description = Some(format!("for {MAIL}"));
    let Outcome::Rewrite(Message::Prompt(done)) = run(
        &redact,
        InterceptionEvent::PromptsGet,
        Phase::Response,
        Message::Prompt(prompt.clone()),
    )
    .await
    else {
        panic!("rewritten")
    };
    let text = serde_json::to_string(&done).expect("JSON");
    assert!(!text.contains(AWS) && !text.contains(MAIL), "{text}");
    assert!(text.contains("[REDACTED:aws_access_key]") && text.contains("[REDACTED:email]"));
    assert_eq!(done.messages.len(), 2);

    let completion = mcp::CompleteResult::new(
        mcp::CompletionInfo::new(vec!["plain".into(), MAIL.into()]).expect("few values"),
    );
    let Outcome::Rewrite(Message::Completion(done)) = run(
        &redact,
        InterceptionEvent::CompletionComplete,
        Phase::Response,
        Message::Completion(completion),
    )
    .await
    else {
        panic!("rewritten")
    };
    assert_eq!(done.completion.values, ["plain", "[REDACTED:email]"]);

    let log = mcp::LoggingMessageNotificationParam::new(
        mcp::LoggingLevel::Debug,
        json!({ "connecting with": AWS, "to": [MAIL] }),
    );
    let Outcome::Rewrite(Message::Log(done)) =
        run(&redact, InterceptionEvent::LoggingMessage, Phase::Request, Message::Log(log)).await
    else {
        panic!("rewritten")
    };
    assert_eq!(
        done.data,
        json!({ "connecting with": "[REDACTED:aws_access_key]", "to": ["[REDACTED:email]"] })
    );
    assert_eq!(done.level, mcp::LoggingLevel::Debug);

    let mut progress = mcp::ProgressNotificationParam::new(
        mcp::ProgressToken(mcp::NumberOrString::Number(1)),
        5.0,
    );
    progress.message = Some(format!("uploading with {AWS}"));
    let Outcome::Rewrite(Message::Progress(done)) = run(
        &redact,
        InterceptionEvent::Progress,
        Phase::Request,
        Message::Progress(progress.clone()),
    )
    .await
    else {
        panic!("rewritten")
    };
    assert_eq!(done.message.as_deref(), Some("uploading with [REDACTED:aws_access_key]"));
    assert_eq!(done.progress, 5.0);

    // Nothing to find: nothing copied.
    progress.message = Some("half way".into());
    let outcome =
        run(&redact, InterceptionEvent::Progress, Phase::Request, Message::Progress(progress))
            .await;
    assert_eq!(outcome, Outcome::Continue);
}

#[test]
fn without_results_none_of_what_upstreams_send_is_hooked() {
    let redact = redact(json!({ "results": false, "arguments": true }));
    let events: Vec<&str> = redact
        .descriptor()
        .hooks
        .iter()
        .flat_map(|hook| {
            InterceptionEvent::ALL
                .into_iter()
                .filter(|e| hook.covers(*e, Phase::Request) || hook.covers(*e, Phase::Response))
        })
        .map(|e| e.as_str())
        .collect();
    assert_eq!(events, ["tools/call"]);
}
