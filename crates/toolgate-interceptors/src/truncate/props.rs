//! Property tests of `truncate`: whatever a result holds (prose, JSON blocks, records, media,
//! embedded text, `structuredContent`), what comes out is within the budget, JSON that was cut
//! is still JSON (or, when no shortening of it fits, cut as text with a note saying so),
//! nothing but text is lost, and a result within the budget is left alone.

use proptest::prelude::*;
use serde_json::{Value, json};
use toolgate_audit::EventBus;
use toolgate_core::mcp;

use super::{KIND, Truncate};
use crate::props::result;
use crate::transform::model_text;
use crate::{Services, test_entry};

/// The options of an entry: a budget in bytes (or, less often, tokens), and the rest.
fn options() -> impl Strategy<Value = Value> {
    let budget = prop_oneof![
        4 => (2000usize..12_000).prop_map(|n| json!({ "max_bytes": n })),
        1 => (500usize..3000).prop_map(|n| json!({ "max_tokens": n })),
    ];
    (
        budget,
        prop::sample::select(&["shorten", "keep", "drop"][..]),
        prop::sample::select(&["keep", "note"][..]),
        any::<bool>(),
        0.05..0.95f64,
    )
        .prop_map(|(mut options, structured, media, spill, head)| {
            options["structured"] = json!(structured);
            options["media"] = json!(media);
            options["spill"] = json!(spill);
            options["head"] = json!(head);
            options
        })
}

fn truncate(options: Value) -> Truncate {
    let services = Services::new(EventBus::new());
    Truncate::from_config(&test_entry(KIND, "pipeline[0]", options), &services)
        .expect("valid options")
}

/// A text's cost as the entry counts it.
fn fits(truncate: &Truncate, text: &str) -> bool {
    truncate.meter.fits(text, truncate.meter.limit())
}

/// Whether `text` is a JSON object or array (what `truncate` keeps JSON).
fn is_container(text: &str) -> bool {
    serde_json::from_str::<Value>(text).is_ok_and(|v| v.is_object() || v.is_array())
}

fn text_of(block: &mcp::ContentBlock) -> Option<&str> {
    match block {
        mcp::ContentBlock::Text(t) => Some(&t.text),
        mcp::ContentBlock::Resource(r) => match &r.resource {
            mcp::ResourceContents::TextResourceContents { text, .. } => Some(text),
            _ => None,
        },
        _ => None,
    }
}

proptest! {
    #[test]
    fn what_comes_out_is_within_the_budget_and_json_stays_json(
        options in options(),
        result in result(),
    ) {
        let truncate = truncate(options.clone());
        let before = model_text(&result);
        let Some(cut) = truncate.shorten(&result, None, "props") else {
            prop_assert!(fits(&truncate, &before), "left over the budget");
            return Ok(());
        };
        prop_assert!(!fits(&truncate, &before), "cut though within the budget");
        let after = model_text(&cut.result);
        let structured_kept = options["structured"] == "keep";
        if !structured_kept {
            prop_assert!(fits(&truncate, &after),
                "{} bytes over a budget of {} {}", after.len(), truncate.meter.limit(), truncate.meter.unit());
        }
        prop_assert_eq!(cut.result.is_error, result.is_error);
        // Block by block: text stays where it was (JSON that was cut still JSON), media stay
        // or become a note, and at most one note is added at the end.
        prop_assert!(cut.result.content.len() <= result.content.len() + 1);
        for (index, block) in result.content.iter().enumerate() {
            let out = &cut.result.content[index];
            match (text_of(block), text_of(out)) {
                (Some(text), Some(new)) => {
                    // Cut JSON is JSON, unless no shortening of it fits its share (every key
                    // is kept): then it is cut as text, and the note says how many lines went.
                    if is_container(text) && text != new && !is_container(new) {
                        prop_assert!(new.contains(" left out here. "),
                            "content[{}] is no longer JSON and says nothing: {:?}", index, new);
                    }
                }
                (None, Some(new)) => prop_assert!(new.starts_with("[toolgate:"), "{:?}", new),
                (None, None) => prop_assert_eq!(out, block),
                (Some(_), None) => prop_assert!(false, "content[{}] lost its text", index),
            }
        }
    }
}
