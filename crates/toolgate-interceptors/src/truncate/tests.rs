//! Tests of `truncate`: what is kept of text, JSON and `structuredContent`, the notes, the
//! store behind `toolgate__read_result`, and the options.

use std::time::Duration;

use serde_json::{Value, json};
use toolgate_audit::EventBus;
use toolgate_core::mcp;
use toolgate_intercept::{CallContext, Principal, Target};
use toolgate_llm::tokens::Encoding;

use super::spill::{Document, SpillLimits, SpillStore};
use super::*;

#[path = "kept_tests.rs"]
mod kept;
use crate::{Services, test_entry};

fn truncate(options: Value) -> (Truncate, Services) {
    let services = Services::new(EventBus::new());
    let entry = test_entry(KIND, "pipeline[0]", options);
    (Truncate::from_config(&entry, &services).expect("valid options"), services)
}

fn errors(options: Value) -> Vec<String> {
    let services = Services::new(EventBus::new());
    let entry = test_entry(KIND, "pipeline[0]", options);
    Truncate::from_config(&entry, &services)
        .expect_err("invalid options")
        .into_iter()
        .map(|e| e.to_string())
        .collect()
}

fn text_result(text: &str) -> mcp::CallToolResult {
    mcp::CallToolResult::success(vec![mcp::ContentBlock::text(text)])
}

fn texts(result: &mcp::CallToolResult) -> Vec<&str> {
    result
        .content
        .iter()
        .filter_map(|b| match b {
            mcp::ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}

/// A build log as a compiler and a test runner write it: 4000 numbered lines.
fn long_log() -> String {
    (0..4000)
        .map(|i| {
            format!("[{i:05}] compiling module_{i} (src/module_{i}.rs) ... ok in {}ms\n", i % 97)
        })
        .collect()
}

fn tokens(text: &str) -> usize {
    Encoding::O200kBase.count(text)
}

/// Reads every page of `handle` through `toolgate__read_result` as `ctx`'s caller; the
/// pages' text without their last (note) line.
async fn read_all(truncate: &Truncate, ctx: &CallContext, handle: &str) -> String {
    let mut offset = 0;
    let mut whole = String::new();
    for _ in 0..10_000 {
        let arguments = json!({"handle": handle, "offset": offset});
        let page = truncate
            .call_own_tool(read::NAME, arguments.as_object().cloned(), ctx)
            .await
            .expect("the tool answers");
        assert_eq!(page.is_error, Some(false), "{page:?}");
        let text = texts(&page)[0];
        let body = &text[..text.rfind("[toolgate:").expect("a note ends every page")];
        whole.push_str(body);
        let next = &page.structured_content.as_ref().expect("structured")["next_offset"];
        match next.as_u64() {
            Some(next) => offset = next,
            None => return whole,
        }
    }
    panic!("read_result never reached the end");
}

fn handle_of(result: &mcp::CallToolResult) -> String {
    let meta = result.meta.as_ref().expect("a cut result has _meta");
    meta.0[META_KEY]["handle"].as_str().expect("a handle").to_owned()
}

fn ctx() -> CallContext {
    let mut ctx = CallContext::new(Principal::anonymous());
    ctx.session = Some("s1".into());
    ctx
}

#[test]
fn a_result_within_the_budget_is_left_alone() {
    let (truncate, _) = truncate(json!({"max_tokens": 500}));
    assert!(truncate.shorten(&text_result("short"), None, "me").is_none());
    // More bytes than the budget, but fewer tokens: still left alone.
    let text = "word ".repeat(400);
    assert!(text.len() > 500 && tokens(&text) <= 500);
    assert!(truncate.shorten(&text_result(&text), None, "me").is_none());
}

#[tokio::test]
async fn a_long_text_keeps_its_head_and_tail_at_line_boundaries_and_the_rest_can_be_read() {
    let (truncate, _) = truncate(json!({"max_tokens": 2000}));
    let log = long_log();
    let ctx = ctx();
    let cut = truncate.shorten(&text_result(&log), None, &owner(&ctx)).expect("cut");
    let shown = transform::model_text(&cut.result);
    assert!(tokens(&shown) <= 2000, "{} tokens", tokens(&shown));
    assert!(tokens(&shown) > 1500, "most of the budget is used: {}", tokens(&shown));
    let text = texts(&cut.result)[0];
    assert!(text.starts_with("[00000] compiling module_0 "));
    assert!(text.ends_with("[03999] compiling module_3999 (src/module_3999.rs) ... ok in 22ms\n"));
    // Whole lines only: every line is a log line or the note.
    for line in text.lines() {
        assert!(
            line.starts_with('[') && (line.ends_with("ms") || line.starts_with("[toolgate: ")),
            "{line:?}"
        );
    }
    let note = text.lines().find(|l| l.starts_with("[toolgate: ")).expect("a note");
    let kept_lines = text.lines().count() - 1;
    assert!(note.contains(&format!("{} lines", 4000 - kept_lines)), "{note}");
    let handle = handle_of(&cut.result);
    assert!(note.contains(&handle), "{note}");
    // The note's offset is the first line left out.
    let head_lines = text.lines().take_while(|l| !l.starts_with("[toolgate: ")).count();
    assert!(note.contains(&format!("\"offset\": {head_lines}}}")), "{note}");
    let read = read_all(&truncate, &ctx, &handle).await;
    assert!(
        read == log,
        "the pages put together are the whole result ({} vs {} bytes)",
        read.len(),
        log.len()
    );
}

#[test]
fn a_single_huge_line_is_cut_within_the_line() {
    let (truncate, _) = truncate(json!({"max_tokens": 800}));
    let line = "abc-123 ".repeat(20_000);
    let cut = truncate.shorten(&text_result(&line), None, "me").expect("cut");
    let text = texts(&cut.result)[0];
    assert!(text.starts_with("abc-123 abc-123"));
    assert!(text.contains("[toolgate: "));
    assert!(tokens(&transform::model_text(&cut.result)) <= 800);
    // The kept document splits the line into pieces; the note's offset is the piece that holds
    // the last byte shown, so that reading on from there skips nothing.
    let head = &text[..text.find("\n[toolgate: ").expect("the note after the head")];
    assert!(line.starts_with(head) && head.len() > 1000, "{} bytes", head.len());
    let piece = Document::new(line.clone()).line_at(head.len() - 1);
    assert!(text.contains(&format!("\"offset\": {piece}}}")), "not piece {piece}: {text}");
}

#[test]
fn a_last_line_too_long_for_the_tail_leaves_the_note_last() {
    let (truncate, _) = truncate(json!({"max_tokens": 600}));
    let text = format!("{}{}", "a short line\n".repeat(10), "x".repeat(20_000));
    let cut = truncate.shorten(&text_result(&text), None, "me").expect("cut");
    let shown = texts(&cut.result)[0];
    assert!(shown.starts_with(&"a short line\n".repeat(10)), "{shown}");
    assert!(shown.ends_with(" to read it from there]"), "nothing after the note: {shown:?}");
}

#[test]
fn json_text_stays_json_and_the_cuts_are_listed() {
    let (truncate, _) = truncate(json!({"max_tokens": 1000}));
    let entities: Vec<Value> = (0..500)
        .map(|i| json!({"name": format!("entity_{i}"), "entityType": "person", "observations": [format!("likes {i}")]}))
        .collect();
    let graph = json!({"entities": entities, "relations": []});
    let pretty = serde_json::to_string_pretty(&graph).unwrap();
    let cut = truncate.shorten(&text_result(&pretty), None, "me").expect("cut");
    let blocks = texts(&cut.result);
    assert_eq!(blocks.len(), 2, "the JSON, then the note");
    let shortened: Value = serde_json::from_str(blocks[0]).expect("still JSON");
    let kept = shortened["entities"].as_array().unwrap();
    assert!(!kept.is_empty() && kept.len() < 500);
    assert_eq!(kept[0], graph["entities"][0]);
    assert!(blocks[0].contains('\n'), "pretty stays pretty");
    assert!(
        blocks[1].contains(&format!("/entities: {} of 500 items", kept.len())),
        "{}",
        blocks[1]
    );
    let meta = &cut.result.meta.as_ref().unwrap().0[META_KEY];
    assert_eq!(meta["omitted"][0]["cut"]["total"], json!(500));
    assert!(tokens(&transform::model_text(&cut.result)) <= 1000);
}

#[tokio::test]
async fn the_kept_result_names_a_resource_link_on_a_line_of_its_own() {
    let link: mcp::ContentBlock = serde_json::from_value(
        json!({"type": "resource_link", "uri": "file:///srv/build.log", "name": "build.log"}),
    )
    .expect("a resource link");
    let result = mcp::CallToolResult::success(vec![link, mcp::ContentBlock::text(long_log())]);
    let (truncate, _) = truncate(json!({"max_tokens": 1000}));
    let ctx = ctx();
    let cut = truncate.shorten(&result, None, &owner(&ctx)).expect("cut");
    let read = read_all(&truncate, &ctx, &handle_of(&cut.result)).await;
    assert!(read == format!("[resource link file:///srv/build.log]\n{}", long_log()), "{read:.80}");
}

#[tokio::test]
async fn the_note_after_a_cut_json_block_reads_on_from_where_that_block_starts() {
    let (truncate, _) = truncate(json!({"max_tokens": 1000}));
    let entities: Vec<Value> =
        (0..500).map(|i| json!({"name": format!("entity_{i}"), "kind": "person"})).collect();
    let json = serde_json::to_string_pretty(&json!({ "entities": entities })).unwrap();
    let result = mcp::CallToolResult::success(vec![
        mcp::ContentBlock::text("Found 500 entities:"),
        mcp::ContentBlock::text(json),
    ]);
    let ctx = ctx();
    let cut = truncate.shorten(&result, None, &owner(&ctx)).expect("cut");
    let shown = texts(&cut.result);
    assert_eq!(shown[0], "Found 500 entities:");
    let note = shown.last().copied().unwrap();
    // The kept document: the first block on line 0, the JSON from line 1.
    assert!(note.contains("\"offset\": 1}"), "{note}");
    let arguments = json!({"handle": handle_of(&cut.result), "offset": 1, "limit": 2});
    let page = truncate.call_own_tool(read::NAME, arguments.as_object().cloned(), &ctx).await;
    assert!(texts(&page.unwrap())[0].starts_with("{\n  \"entities\": [\n"));
}

#[test]
fn the_budget_is_shared_small_parts_first() {
    // Parts under an equal share keep their cost; the others share what is left equally.
    assert_eq!(share(&[Some(10), None, None], 100), [10, 45, 45]);
    assert_eq!(share(&[None, Some(30), Some(5)], 90), [55, 30, 5]);
    assert_eq!(share(&[Some(40), Some(40)], 60), [30, 30]);
    assert_eq!(share(&[], 60), Vec::<usize>::new());
}

#[test]
fn the_note_lists_five_cuts_and_counts_the_rest() {
    let cut = |i: usize| json::Omission { path: format!("/{i}"), kept: 1, total: 9, unit: "items" };
    let five: Vec<json::Omission> = (0..5).map(cut).collect();
    assert_eq!(
        describe_cuts(&five),
        "/0: 1 of 9 items, /1: 1 of 9 items, /2: 1 of 9 items, /3: 1 of 9 items, /4: 1 of 9 items"
    );
    let seven: Vec<json::Omission> = (0..7).map(cut).collect();
    assert!(describe_cuts(&seven).ends_with("/4: 1 of 9 items, and 2 more cuts"));
    assert_eq!(describe_cuts(&[]), "nothing cut");
}

#[test]
fn a_byte_prefix_ends_on_a_character_boundary_within_the_limit() {
    let meter = Meter::new(Budget::Bytes(2000));
    assert_eq!(meter.prefix("aé", 2), 1);
    assert_eq!(meter.prefix("aé", 3), 3);
    assert_eq!(meter.prefix("😀😀", 7), 4);
    assert_eq!(meter.prefix("abc", 10), 3);
}

#[tokio::test]
async fn the_event_counts_in_the_configured_encoding() {
    let (truncate, services) = truncate(json!({"max_tokens": 600, "encoding": "cl100k_base"}));
    let mut events = services.events.subscribe("transform/*".parse().unwrap(), 8);
    // Japanese, which the two encodings count differently.
    let log: String = (0..3000).map(|i| format!("ログの{i}行目: 値が見つかりません\n")).collect();
    assert_ne!(Encoding::Cl100kBase.count(&log), tokens(&log));
    let message = Message::ToolResult(text_result(&log));
    let outcome = truncate
        .intercept(InterceptionEvent::ToolsCall, Phase::Response, &message, &mut ctx())
        .await
        .unwrap();
    assert!(matches!(outcome, Outcome::Rewrite(_)));
    let event = events.recv().await.expect("transform/applied");
    assert_eq!(event.get("tokens_before"), Some(&json!(Encoding::Cl100kBase.count(&log))));
}

/// `fit_json` gives JSON within the allowance that uses most of it (at least 90 %), for values
/// of few and of many bytes a token, pretty or compact, in tokens or in bytes.
#[test]
fn shortened_json_is_within_its_allowance_and_uses_most_of_it() {
    let records: Vec<Value> = (0..2000)
        .map(|i| json!({"id": i, "path": format!("/srv/projects/documentation/chapter_{i}/introduction.md")}))
        .collect();
    let numbers: Vec<Value> = (0..20_000).map(|i| json!(i * 7919 % 100_000)).collect();
    let prose = json!({"text": "Mutation testing changes the code in small ways. ".repeat(2000)});
    let (by_tokens, _) = truncate(json!({"max_tokens": 8000}));
    let (by_bytes, _) = truncate(json!({"max_bytes": 32000}));
    for value in [json!(records), json!(numbers), prose] {
        for pretty in [false, true] {
            for allowance in [500, 1500, 4000] {
                let (shrunk, text, _) =
                    by_tokens.fit_json(&value, allowance, pretty).expect("a shortening fits");
                assert_eq!(serde_json::from_str::<Value>(&text).expect("JSON"), shrunk);
                let cost = tokens(&text);
                assert!(cost <= allowance && cost * 10 >= allowance * 9, "{cost} of {allowance}");
                let (_, text, _) = by_bytes.fit_json(&value, allowance * 3, pretty).expect("fits");
                let cost = text.len();
                assert!(cost <= allowance * 3 && cost * 10 >= allowance * 27, "{cost} bytes");
            }
        }
    }
}

fn structured_result(count: usize) -> mcp::CallToolResult {
    let items: Vec<Value> =
        (0..count).map(|i| json!({"id": i, "path": format!("/srv/file_{i}.txt")})).collect();
    let value = json!({"items": items, "total": count});
    let mut result = text_result(&value.to_string());
    result.structured_content = Some(value);
    result
}

fn schema(value: Value) -> mcp::JsonObject {
    value.as_object().cloned().unwrap()
}

#[tokio::test]
async fn the_kept_result_holds_structured_content_once() {
    let (truncate, _) = truncate(json!({"max_tokens": 1500}));
    let ctx = ctx();
    // Its text is the same JSON: kept once.
    let twin = structured_result(1000);
    let cut = truncate.shorten(&twin, None, &owner(&ctx)).expect("cut");
    let read = read_all(&truncate, &ctx, &handle_of(&cut.result)).await;
    assert_eq!(read.matches("/srv/file_999.txt").count(), 1);
    // Its text says something else: both are kept.
    let mut other = text_result(&long_log());
    other.structured_content = Some(json!({"modules": 4000, "status": "built"}));
    let cut = truncate.shorten(&other, None, &owner(&ctx)).expect("cut");
    let handle = handle_of(&cut.result);
    let read = read_all(&truncate, &ctx, &handle).await;
    assert!(read.starts_with(&long_log()), "the text first");
    assert!(read.contains("\"status\": \"built\""), "then the structured content");
    // A page is within the budget.
    let arguments = json!({"handle": handle, "offset": 0});
    let page = truncate.call_own_tool(read::NAME, arguments.as_object().cloned(), &ctx).await;
    let page = page.expect("the tool answers");
    let text = texts(&page)[0];
    let body = &text[..text.rfind("[toolgate:").expect("a note")];
    assert!(tokens(body) <= 1500 && body.len() > 1000, "{} tokens", tokens(body));
    // A text without a last newline: the last page's note still starts a line of its own.
    let log = long_log();
    let cut = truncate.shorten(&text_result(log.trim_end()), None, &owner(&ctx)).expect("cut");
    let read = read_all(&truncate, &ctx, &handle_of(&cut.result)).await;
    assert!(read.ends_with("ok in 22ms\n"), "{}", &read[read.len() - 40..]);
}

#[test]
fn structured_content_is_shortened_and_still_matches_the_output_schema() {
    let (truncate, _) = truncate(json!({"max_tokens": 1500}));
    let output = schema(json!({
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "object"}}, "total": {"type": "integer"}},
        "required": ["items", "total"]
    }));
    let cut = truncate.shorten(&structured_result(1000), Some(&output), "me").expect("cut");
    let structured = cut.result.structured_content.as_ref().expect("kept, shortened");
    assert!(matches_schema(&output, structured));
    let items = structured["items"].as_array().unwrap();
    assert!(!items.is_empty() && items.len() < 1000);
    assert_eq!(structured["total"], json!(1000));
    let text: Value =
        serde_json::from_str(texts(&cut.result)[0]).expect("the text twin stays JSON");
    assert!(text["items"].as_array().unwrap().len() < 1000);
    assert!(tokens(&transform::model_text(&cut.result)) <= 1500);
}

#[test]
fn structured_content_that_no_longer_matches_is_left_out_with_a_note() {
    let (truncate, _) = truncate(json!({"max_tokens": 1500}));
    let output = schema(json!({
        "type": "object",
        "properties": {"items": {"type": "array", "minItems": 1000}},
        "required": ["items"]
    }));
    let cut = truncate.shorten(&structured_result(1000), Some(&output), "me").expect("cut");
    assert_eq!(cut.result.structured_content, None);
    let note = texts(&cut.result).last().copied().unwrap();
    assert!(note.contains("structuredContent was left out"), "{note}");
    // `keep` keeps it whole.
    let (keeping, _) = truncate_with(json!({"max_tokens": 1500, "structured": "keep"}));
    let cut = keeping.shorten(&structured_result(1000), Some(&output), "me").expect("cut");
    assert_eq!(cut.result.structured_content, structured_result(1000).structured_content);
}

fn truncate_with(options: Value) -> (Truncate, Services) {
    truncate(options)
}

#[test]
fn images_are_kept_or_noted_and_do_not_count() {
    let image = mcp::ContentBlock::image("A".repeat(40_000), "image/png");
    let mut result = text_result(&long_log());
    result.content.insert(0, image.clone());
    let (keeping, _) = truncate(json!({"max_tokens": 1000}));
    let cut = keeping.shorten(&result, None, "me").expect("cut");
    assert_eq!(cut.result.content[0], image);
    let (noting, _) = truncate(json!({"max_tokens": 1000, "media": "note"}));
    let cut = noting.shorten(&result, None, "me").expect("cut");
    let note = texts(&cut.result)[0];
    assert!(note.contains("an image (image/png, 29.3 KiB) was left out"), "{note}");
    // Audio too.
    let audio: mcp::ContentBlock = serde_json::from_value(
        json!({"type": "audio", "data": "B".repeat(4000), "mimeType": "audio/wav"}),
    )
    .expect("an audio block");
    result.content[0] = audio.clone();
    assert_eq!(keeping.shorten(&result, None, "me").expect("cut").result.content[0], audio);
    let cut = noting.shorten(&result, None, "me").expect("cut");
    let note = texts(&cut.result)[0];
    assert!(note.contains("an audio (audio/wav, 2.9 KiB) was left out"), "{note}");
}

#[tokio::test]
async fn embedded_text_resources_are_cut_like_text() {
    let resource = mcp::ContentBlock::Resource(mcp::EmbeddedResource::new(
        mcp::ResourceContents::text(long_log(), "file:///build.log"),
    ));
    let result =
        mcp::CallToolResult::success(vec![mcp::ContentBlock::text("see the log"), resource]);
    let (truncate, _) = truncate(json!({"max_tokens": 1000}));
    let ctx = ctx();
    let cut = truncate.shorten(&result, None, &owner(&ctx)).expect("cut");
    assert_eq!(texts(&cut.result)[0], "see the log");
    // The kept result holds the resource's text too.
    let read = read_all(&truncate, &ctx, &handle_of(&cut.result)).await;
    assert!(read == format!("see the log\n{}", long_log()), "{} bytes read", read.len());
    let mcp::ContentBlock::Resource(r) = &cut.result.content[1] else { panic!("still a resource") };
    let mcp::ResourceContents::TextResourceContents { text, uri, .. } = &r.resource else {
        panic!("still text")
    };
    assert_eq!(uri, "file:///build.log");
    assert!(text.contains("[toolgate: "));
    assert!(tokens(&transform::model_text(&cut.result)) <= 1000);
}

#[test]
fn a_byte_budget_counts_bytes() {
    let (truncate, _) = truncate(json!({"max_bytes": 4000}));
    let cut = truncate.shorten(&text_result(&long_log()), None, "me").expect("cut");
    assert!(transform::model_text(&cut.result).len() <= 4000);
    assert_eq!(cut.record["unit"], json!("bytes"));
}

#[test]
fn error_results_stay_errors_and_every_cut_result_is_a_valid_call_tool_result() {
    let (truncate, _) = truncate(json!({"max_tokens": 700}));
    let mut error = text_result(&long_log());
    error.is_error = Some(true);
    for result in [error, structured_result(3000), text_result(&"x".repeat(100_000))] {
        let cut = truncate.shorten(&result, None, "me").expect("cut");
        assert_eq!(cut.result.is_error, result.is_error);
        let wire = serde_json::to_value(&cut.result).unwrap();
        let back: mcp::CallToolResult = serde_json::from_value(wire).expect("valid");
        assert_eq!(back, cut.result);
        assert!(tokens(&transform::model_text(&cut.result)) <= 700);
    }
}

#[test]
fn options_are_checked_with_their_paths() {
    assert_eq!(
        errors(json!({"max_tokens": 10})),
        ["pipeline[0].max_tokens: expected an integer of at least 500, found 10"]
    );
    assert_eq!(
        errors(json!({"max_tokens": 1000, "max_bytes": 4000})),
        ["pipeline[0].max_bytes: give either max_tokens or max_bytes, not both"]
    );
    assert_eq!(
        errors(json!({"encoding": "p50k"})),
        ["pipeline[0].encoding: unknown encoding \"p50k\" (known: o200k_base, cl100k_base)"]
    );
    assert_eq!(
        errors(json!({"head": 1.5})),
        ["pipeline[0].head: expected a number between 0 and 1, found 1.5"]
    );
    assert_eq!(errors(json!({"head": 0})).len(), 1, "the head must be more than nothing");
    assert_eq!(errors(json!({"head": 1})).len(), 1, "and leave room for a tail");
    truncate(json!({"max_tokens": 1000, "head": 0.5})); // builds
    assert_eq!(
        errors(json!({"structured": "trim"})),
        ["pipeline[0].structured: expected \"shorten\", \"keep\" or \"drop\", found \"trim\""]
    );
    assert_eq!(errors(json!({"spill_ttl": "soon"})).len(), 1);
    assert_eq!(
        errors(json!({"max_bytes": 4000, "page_tokens": 500})),
        ["pipeline[0].page_tokens: the budget is in bytes: use page_bytes"]
    );
    assert_eq!(
        errors(json!({"budget": 5}))[0],
        "pipeline[0].budget: unknown option (expected one of: max_tokens, max_bytes, encoding, head, structured, media, spill, spill_ttl, spill_max_bytes, spill_caller_bytes, page_tokens, page_bytes)"
    );
}

#[tokio::test]
async fn as_an_interceptor_it_rewrites_results_publishes_and_leaves_its_own_tool_alone() {
    let (truncate, services) = truncate(json!({"max_tokens": 600}));
    let mut events = services.events.subscribe("transform/*".parse().unwrap(), 8);
    let mut ctx = ctx();
    ctx.target = Some(Target {
        server: "fs".into(),
        original: "read".into(),
        exposed: "fs__read".into(),
        tool: None,
    });
    let message = Message::ToolResult(text_result(&long_log()));
    let outcome = truncate
        .intercept(InterceptionEvent::ToolsCall, Phase::Response, &message, &mut ctx)
        .await
        .unwrap();
    assert!(matches!(outcome, Outcome::Rewrite(Message::ToolResult(_))));
    // A large result is counted on the blocking pool, and the event published from there.
    let event = events.recv().await.expect("transform/applied");
    assert_eq!(event.get("tool"), Some(&json!("read")));
    assert!(event.get("tokens_after").unwrap().as_u64().unwrap() <= 600);
    assert!(event.get("tokens_before").unwrap().as_u64().unwrap() > 40_000);
    assert!(event.get("handle").is_some());

    ctx.target = Some(Target {
        server: OWN_SERVER.into(),
        original: read::NAME.into(),
        exposed: "toolgate__read_result".into(),
        tool: None,
    });
    let outcome = truncate
        .intercept(InterceptionEvent::ToolsCall, Phase::Response, &message, &mut ctx)
        .await
        .unwrap();
    assert_eq!(outcome, Outcome::Continue);
    assert_eq!(truncate.own_tools()[0].name, read::NAME);
}

#[test]
fn a_result_of_one_huge_word_keeps_its_beginning() {
    let (truncate, _) = truncate(json!({"max_tokens": 600}));
    let cut = truncate.shorten(&text_result(&"x".repeat(65_536)), None, "me").expect("cut");
    let text = texts(&cut.result)[0];
    assert!(text.starts_with(&"x".repeat(100)), "{}", &text[..text.len().min(200)]);
    assert!(tokens(&transform::model_text(&cut.result)) <= 600);
}

#[test]
fn parts_each_within_the_budget_but_over_their_share_are_cut_to_fit_together() {
    // Five texts of 880 bytes against 4,000: each fits alone, all five do not, and each is
    // still within the budget after every retry with a smaller one.
    let (truncate, _) = truncate(json!({"max_bytes": 4000}));
    let part = format!("{}\n", "x".repeat(43)).repeat(20);
    assert_eq!(part.len(), 880);
    let result = mcp::CallToolResult::success(vec![mcp::ContentBlock::text(part); 5]);
    let cut = truncate.shorten(&result, None, "me").expect("cut");
    // The first cut does not fit with its notes; the retry aims a quarter lower, and most of
    // the budget is still used (3,428 bytes).
    let shown = transform::model_text(&cut.result).len();
    assert!((3000..=4000).contains(&shown), "{shown} bytes");
    assert_eq!(texts(&cut.result).len(), 5, "every part keeps something");
}

#[test]
fn cut_points_keep_whole_a_text_the_head_budget_holds() {
    // The tail, taken line by line from the end, stops where it meets the head: here at once.
    // The loop runs on a thread, so that a loop that does not stop fails the test.
    let (truncate, _services) = truncate(json!({"max_bytes": 2000}));
    let text = "first line\nsecond line\nthird line\n";
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(truncate.cut_points(text, 1000));
    });
    let cut = receive.recv_timeout(Duration::from_secs(5)).expect("the cut points are found");
    assert_eq!(cut, (text.len(), text.len()), "nothing left out");
}

#[test]
fn json_whose_keys_alone_are_over_the_budget_is_cut_as_text() {
    // Every key is kept when JSON is shortened: no shortening of 300 keys fits 2,000 bytes, so
    // the text is cut at line boundaries instead, and none of the too-long tries is used.
    let (truncate, _) = truncate(json!({"max_bytes": 2000}));
    let settings: serde_json::Map<String, Value> =
        (0..300).map(|i| (format!("setting_number_{i:03}"), json!(i))).collect();
    let pretty = serde_json::to_string_pretty(&Value::Object(settings)).unwrap();
    let cut = truncate.shorten(&text_result(&pretty), None, "me").expect("cut");
    let shown = transform::model_text(&cut.result);
    assert!(shown.len() <= 2000, "{} bytes", shown.len());
    let text = texts(&cut.result)[0];
    assert!(text.starts_with("{\n  \"setting_number_000\": 0,\n"), "{text}");
    assert!(text.contains(" lines ("), "a note of the lines left out: {text}");
}

#[test]
fn the_note_after_a_cut_json_block_first_in_the_result_reads_from_line_0() {
    let (truncate, _) = truncate(json!({"max_tokens": 1000}));
    let entities: Vec<Value> =
        (0..500).map(|i| json!({"name": format!("entity_{i}"), "kind": "person"})).collect();
    let json = serde_json::to_string_pretty(&json!({ "entities": entities })).unwrap();
    let result = mcp::CallToolResult::success(vec![
        mcp::ContentBlock::text(json),
        mcp::ContentBlock::text("Found 500 entities."),
    ]);
    let cut = truncate.shorten(&result, None, "me").expect("cut");
    let note = texts(&cut.result).last().copied().unwrap();
    assert!(note.contains("(JSON) was shortened"), "{note}");
    assert!(note.contains("\"offset\": 0}"), "{note}");
}

#[tokio::test]
async fn the_kept_result_names_an_embedded_blob_on_a_line_of_its_own() {
    let blob: mcp::ContentBlock = serde_json::from_value(json!({
        "type": "resource",
        "resource": {"uri": "file:///srv/core.dump", "mimeType": "application/octet-stream", "blob": "A".repeat(4000)}
    }))
    .expect("an embedded blob");
    let result = mcp::CallToolResult::success(vec![blob, mcp::ContentBlock::text(long_log())]);
    let (truncate, _) = truncate(json!({"max_tokens": 1000}));
    let ctx = ctx();
    let cut = truncate.shorten(&result, None, &owner(&ctx)).expect("cut");
    let read = read_all(&truncate, &ctx, &handle_of(&cut.result)).await;
    let line = "[embedded resource file:///srv/core.dump (application/octet-stream, 2.9 KiB)]";
    assert!(read == format!("{line}\n{}", long_log()), "{read:.100}");
}

#[tokio::test]
async fn structured_content_that_only_wraps_the_text_is_kept_once() {
    let mut result = text_result(&long_log());
    result.structured_content = Some(json!({"content": long_log()}));
    let (truncate, _) = truncate(json!({"max_tokens": 1000}));
    let ctx = ctx();
    let cut = truncate.shorten(&result, None, &owner(&ctx)).expect("cut");
    let read = read_all(&truncate, &ctx, &handle_of(&cut.result)).await;
    assert!(read == long_log(), "the text alone: {} bytes", read.len());
}

#[tokio::test]
async fn structured_content_starts_a_line_of_its_own_in_the_kept_result() {
    // After a text without a last newline.
    let log = long_log();
    let mut result = text_result(log.trim_end());
    result.structured_content = Some(json!({"modules": 4000, "status": "built"}));
    let (truncate, _) = truncate(json!({"max_tokens": 1000}));
    let ctx = ctx();
    let cut = truncate.shorten(&result, None, &owner(&ctx)).expect("cut");
    let read = read_all(&truncate, &ctx, &handle_of(&cut.result)).await;
    let end = "ok in 22ms\n{\n  \"modules\": 4000,\n  \"status\": \"built\"\n}\n";
    assert!(read.ends_with(end), "{:?}", &read[read.len() - 80..]);
}
