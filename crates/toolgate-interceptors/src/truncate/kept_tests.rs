//! Tests of the whole results `truncate` keeps: the store's bounds and expiry, whose they are,
//! and reading them back page by page through `toolgate__read_result`.

use super::*;

#[tokio::test]
async fn another_caller_cannot_read_a_kept_result() {
    let (truncate, _) = truncate(json!({"max_tokens": 600}));
    let ctx = ctx();
    let cut = truncate.shorten(&text_result(&long_log()), None, &owner(&ctx)).expect("cut");
    let handle = handle_of(&cut.result);
    let mut stranger = ctx.for_another_request();
    stranger.session = Some("s2".into());
    let arguments = json!({"handle": handle}).as_object().cloned();
    let page = truncate.call_own_tool(read::NAME, arguments.clone(), &stranger).await.unwrap();
    assert_eq!(page.is_error, Some(true));
    let unknown = json!({"handle": "r000000000000000000000000"}).as_object().cloned();
    let never = truncate.call_own_tool(read::NAME, unknown, &ctx).await.unwrap();
    assert_eq!(
        texts(&page)[0].replace(&handle, "H"),
        texts(&never)[0].replace("r000000000000000000000000", "H"),
        "a stranger learns nothing more than of no handle"
    );
    let mine = truncate.call_own_tool(read::NAME, arguments, &ctx).await.unwrap();
    assert_eq!(mine.is_error, Some(false));
}

/// A 2026-07-28 client has no session: anonymous clients without one are told apart by the
/// address they connected from, both for reading and for the per-caller quota, rather than all
/// sharing `anonymous:anonymous`.
#[tokio::test]
async fn clients_without_a_session_keep_results_by_their_address() {
    let log = long_log();
    // Room for one such result per caller.
    let (truncate, _) = truncate(json!({"max_tokens": 600, "spill_caller_bytes": log.len() + 1}));
    let from = |address: [u8; 4]| {
        let mut ctx = CallContext::new(Principal::anonymous());
        ctx.client_address = Some(address.into());
        ctx
    };
    let (a, b) = (from([192, 0, 2, 1]), from([192, 0, 2, 2]));
    let kept_for_a =
        handle_of(&truncate.shorten(&text_result(&log), None, &owner(&a)).unwrap().result);
    let kept_for_b =
        handle_of(&truncate.shorten(&text_result(&log), None, &owner(&b)).unwrap().result);
    let read = async |ctx: &CallContext, handle: &str| {
        let arguments = json!({"handle": handle, "limit": 1}).as_object().cloned();
        let page = truncate.call_own_tool(read::NAME, arguments, ctx).await.unwrap();
        page.is_error != Some(true)
    };
    assert!(read(&a, &kept_for_a).await);
    assert!(!read(&b, &kept_for_a).await, "another address cannot read it");
    assert!(!read(&a, &kept_for_b).await);
    // A second result of b's pushes out b's first (its quota), not a's.
    let second_for_b =
        handle_of(&truncate.shorten(&text_result(&log), None, &owner(&b)).unwrap().result);
    assert!(!read(&b, &kept_for_b).await, "b's own oldest went");
    assert!(read(&b, &second_for_b).await);
    assert!(read(&a, &kept_for_a).await, "a's result is not b's to push out");
}

#[tokio::test]
async fn read_result_checks_its_arguments() {
    let (truncate, _) = truncate(json!({"max_tokens": 600}));
    let ctx = ctx();
    let cut = truncate.shorten(&text_result(&long_log()), None, &owner(&ctx)).expect("cut");
    let handle = handle_of(&cut.result);
    for (arguments, expected) in [
        (json!({}), "`handle` is required"),
        (json!({"handle": 5}), "`handle` must be a string"),
        (json!({"handle": handle, "offset": -1}), "`offset` must be a whole number"),
        (json!({"handle": handle, "offset": 99999}), "past the end: the result has 4000 lines"),
        (json!({"handle": handle, "limit": 0}), "`limit` must be between 1 and 2000"),
    ] {
        let page =
            truncate.call_own_tool(read::NAME, arguments.as_object().cloned(), &ctx).await.unwrap();
        assert_eq!(page.is_error, Some(true), "{arguments}");
        assert!(texts(&page)[0].contains(expected), "{arguments}: {:?}", texts(&page));
    }
    let page = truncate
        .call_own_tool(
            read::NAME,
            json!({"handle": handle, "offset": 10, "limit": 3}).as_object().cloned(),
            &ctx,
        )
        .await
        .unwrap();
    let text = texts(&page)[0];
    assert!(text.starts_with("[00010] "), "{text}");
    assert_eq!(text.lines().count(), 4, "three lines and the note: {text}");
    assert_eq!(page.structured_content.as_ref().unwrap()["next_offset"], json!(13));
    // The last page says how many lines it holds; an offset at the very end is an empty page.
    for (offset, lines) in [(3990, 10), (4000, 0)] {
        let arguments = json!({"handle": handle, "offset": offset}).as_object().cloned();
        let page = truncate.call_own_tool(read::NAME, arguments, &ctx).await.unwrap();
        assert_eq!(page.is_error, Some(false), "{page:?}");
        let structured = page.structured_content.as_ref().unwrap();
        assert_eq!(
            (&structured["lines"], &structured["next_offset"]),
            (&json!(lines), &json!(null))
        );
        assert!(texts(&page)[0].ends_with("[toolgate: end of the result (4000 lines)]"));
    }
}

#[tokio::test]
async fn a_line_over_the_page_is_a_page_of_its_own() {
    let (truncate, _) = truncate(json!({"max_bytes": 2000, "page_bytes": 400}));
    // A line of 1000 bytes (over the page), then an empty line (1 byte), then lines of 21.
    let text = format!("{}\n\n{}", "x".repeat(999), format!("{}\n", "y".repeat(20)).repeat(200));
    let ctx = ctx();
    let cut = truncate.shorten(&text_result(&text), None, &owner(&ctx)).expect("cut");
    let handle = handle_of(&cut.result);
    let page = |offset: usize| {
        let arguments = json!({"handle": handle, "offset": offset}).as_object().cloned();
        let (truncate, ctx) = (&truncate, &ctx);
        async move { truncate.call_own_tool(read::NAME, arguments, ctx).await.unwrap() }
    };
    let first = page(0).await;
    let structured = first.structured_content.as_ref().unwrap();
    assert_eq!((&structured["lines"], &structured["next_offset"]), (&json!(1), &json!(1)));
    assert!(texts(&first)[0].starts_with(&"x".repeat(999)));
    // The next page: the empty line and 19 lines of 21 bytes, exactly the 400 bytes of a page.
    let second = page(1).await;
    assert_eq!(second.structured_content.as_ref().unwrap()["lines"], json!(20));
}

#[tokio::test]
async fn a_handle_kept_by_one_entry_is_read_through_another() {
    let services = Services::new(EventBus::new());
    let entry = |path: &str| {
        let entry = test_entry(KIND, path, json!({"max_tokens": 600}));
        Truncate::from_config(&entry, &services).expect("valid options")
    };
    let (first, second) = (entry("pipeline[0]"), entry("pipeline[1]"));
    let ctx = ctx();
    let log = text_result(&long_log());
    let by_first = handle_of(&first.shorten(&log, None, &owner(&ctx)).unwrap().result);
    let by_second = handle_of(&second.shorten(&log, None, &owner(&ctx)).unwrap().result);
    for (reader, handle) in [(&second, &by_first), (&first, &by_second), (&first, &by_first)] {
        let arguments = json!({"handle": handle, "limit": 1}).as_object().cloned();
        let page = reader.call_own_tool(read::NAME, arguments, &ctx).await.unwrap();
        assert_eq!(page.is_error, Some(false), "{page:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn kept_results_expire() {
    let store =
        SpillStore::new(SpillLimits { ttl: Duration::from_secs(60), ..SpillLimits::default() });
    let handle = store.put("me", Document::new("a\nb\n".into())).unwrap();
    assert!(store.get("me", &handle).is_some());
    tokio::time::advance(Duration::from_secs(59)).await;
    assert!(store.get("me", &handle).is_some());
    // Kept for 60 seconds, not one instant more.
    tokio::time::advance(Duration::from_secs(1)).await;
    assert!(store.get("me", &handle).is_none());
    assert_eq!(store.usage(), (0, 0));
}

#[test]
fn the_store_stays_within_its_limits_forgetting_the_oldest() {
    let limits = SpillLimits {
        max_bytes: 100,
        caller_bytes: 60,
        caller_results: 3,
        ..SpillLimits::default()
    };
    let store = SpillStore::new(limits);
    let ten = || Document::new("0123456789".into());
    let mine: Vec<String> = (0..4).map(|_| store.put("me", ten()).unwrap()).collect();
    assert!(store.get("me", &mine[0]).is_none(), "a caller keeps at most 3 results");
    assert!(mine[1..].iter().all(|h| store.get("me", h).is_some()));
    let big = Document::new("x".repeat(50));
    let theirs = store.put("them", big).unwrap();
    let _more = store.put("them2", Document::new("y".repeat(40))).unwrap();
    assert!(store.usage().1 <= 100);
    assert!(store.get("me", &mine[1]).is_none(), "the oldest went first");
    assert!(store.get("them", &theirs).is_some());
    assert!(matches!(
        store.put("me", Document::new("z".repeat(61))),
        Err(spill::SpillError::TooLarge { bytes: 61, limit: 60 })
    ));
    // Exactly the limit is kept.
    assert!(store.put("me", Document::new("z".repeat(60))).is_ok());
}

#[test]
fn documents_split_long_lines_and_find_lines_by_offset() {
    let text = format!("short\n{}\nend", "é".repeat(2500));
    let document = Document::new(text.clone());
    assert_eq!(document.lines(), 5, "short, 1000 + 1000 + 500 characters, end");
    let joined: String = (0..document.lines()).map(|i| document.line(i).unwrap()).collect();
    assert_eq!(joined, text);
    assert_eq!(document.line_at(0), 0);
    assert_eq!(document.line_at(6), 1);
    assert_eq!(document.line_at(text.len() - 1), 4);
    assert_eq!(Document::new(String::new()).lines(), 0);
}

#[test]
fn read_result_declares_its_arguments_and_what_a_page_holds() {
    let tool = read::definition();
    assert_eq!(tool.input_schema["required"], json!(["handle"]));
    let arguments: Vec<&String> =
        tool.input_schema["properties"].as_object().unwrap().keys().collect();
    assert_eq!(arguments, ["handle", "offset", "limit"]);
    assert_eq!(tool.input_schema["additionalProperties"], json!(false));
    let output = tool.output_schema.as_ref().expect("an output schema");
    assert_eq!(
        output["required"],
        json!(["handle", "offset", "lines", "total_lines", "next_offset"])
    );
}

#[test]
fn the_note_says_how_long_the_whole_result_is_kept() {
    let (truncate, _) = truncate(json!({"max_tokens": 600, "spill_ttl": "2m"}));
    let cut = truncate.shorten(&text_result(&long_log()), None, "me").expect("cut");
    let text = texts(&cut.result)[0];
    assert!(text.contains(" lines) is kept for 2m: call toolgate__read_result"), "{text}");
}

#[test]
fn a_store_filled_exactly_to_its_limit_forgets_nothing() {
    let limits = SpillLimits {
        max_bytes: 100,
        caller_bytes: 60,
        caller_results: 3,
        ..SpillLimits::default()
    };
    let store = SpillStore::new(limits);
    let theirs = store.put("them", Document::new("x".repeat(50))).unwrap();
    let mine = store.put("me", Document::new("y".repeat(50))).unwrap();
    assert!(store.get("them", &theirs).is_some() && store.get("me", &mine).is_some());
    assert_eq!(store.usage(), (2, 100));
}

#[test]
fn entries_built_again_do_not_pile_up_in_the_shared_stores() {
    // A reload builds the pipeline's entries again and drops the old ones: each new store
    // forgets the dropped ones as it joins.
    let services = Services::new(EventBus::new());
    let entry = test_entry(KIND, "pipeline[0]", json!({"max_tokens": 600}));
    for _ in 0..3 {
        drop(Truncate::from_config(&entry, &services).expect("valid options"));
    }
    let kept = Truncate::from_config(&entry, &services).expect("valid options");
    assert_eq!(services.spill.held(), 1);
    drop(kept);
}

#[tokio::test(start_paused = true)]
async fn the_stores_say_what_each_entry_holds_for_metrics() {
    let services = Services::new(EventBus::new());
    let build = |name: &str| {
        let mut entry =
            test_entry(KIND, "pipeline[0]", json!({"max_tokens": 600, "spill_ttl": "1m"}));
        entry.name = Some(name.to_owned());
        Truncate::from_config(&entry, &services).expect("valid options")
    };
    let (logs, files) = (build("logs"), build("files"));
    let log = long_log();
    assert!(logs.shorten(&text_result(&log), None, "me").is_some());
    assert!(logs.shorten(&text_result(&log), None, "you").is_some());
    let usage = services.spill.usage();
    let held = |name: &str| {
        let found = usage.iter().find(|u| u.interceptor == name).expect("every entry is there");
        (found.entries, found.bytes)
    };
    assert_eq!(held("logs"), (2, 2 * log.len()));
    assert_eq!(held("files"), (0, 0));
    // Expired results are not counted (nor kept).
    tokio::time::advance(Duration::from_secs(60)).await;
    assert!(services.spill.usage().iter().all(|u| (u.entries, u.bytes) == (0, 0)));
    // A dropped entry's store is not read.
    drop(files);
    let names: Vec<String> = services.spill.usage().into_iter().map(|u| u.interceptor).collect();
    assert_eq!(names, ["logs"]);
    drop(logs);
}

#[test]
fn without_spill_the_note_says_to_ask_for_less() {
    let (truncate, _) = truncate(json!({"max_tokens": 600, "spill": false}));
    assert!(truncate.own_tools().is_empty());
    let cut = truncate.shorten(&text_result(&long_log()), None, "me").expect("cut");
    assert!(cut.record.get("handle").is_none());
    assert!(texts(&cut.result)[0].contains("Ask for less"));
}
