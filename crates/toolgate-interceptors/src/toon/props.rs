//! Property tests of `toon`: whatever a result holds, every block it rewrites reads back as the
//! JSON the server sent (TOON through `toon-format`'s strict decoder, compact JSON through a
//! JSON parser), costs fewer tokens than before, and keeps its place; other blocks, `isError`
//! and `structuredContent` are untouched; and the rewrite is a function of its input.

use proptest::prelude::*;
use serde_json::{Value, json};
use toolgate_audit::EventBus;
use toolgate_core::mcp;

use super::convert::same;
use super::{FORMAT_META, KIND, NOTE_META, Toon};
use crate::props::{json as any_json, records, result};
use crate::{Services, test_entry};

fn toon(min_tokens: usize, note: bool, compact: bool) -> Toon {
    let options = json!({ "min_tokens": min_tokens, "note": note, "compact": compact });
    Toon::from_config(&test_entry(KIND, "pipeline[0]", options), &Services::new(EventBus::new()))
        .expect("valid options")
}

fn meta_of<'a>(block: &'a mcp::ContentBlock, key: &str) -> Option<&'a Value> {
    match block {
        mcp::ContentBlock::Text(t) => t.meta.as_ref().and_then(|m| m.0.get(key)),
        _ => None,
    }
}

/// A result whose text blocks are mostly JSON, some of it worth rewriting.
fn json_result() -> impl Strategy<Value = mcp::CallToolResult> {
    let text = prop_oneof![
        2 => records().prop_map(|v| v.to_string()),
        1 => records().prop_map(|v| serde_json::to_string_pretty(&v).expect("JSON")),
        1 => any_json(6).prop_map(|v| serde_json::to_string_pretty(&v).expect("JSON")),
    ];
    prop_oneof![
        1 => result(),
        2 => prop::collection::vec(text.prop_map(mcp::ContentBlock::text), 1..4)
            .prop_map(mcp::CallToolResult::success),
    ]
}

proptest! {
    #[test]
    fn rewritten_blocks_read_back_as_the_json_sent(
        result in json_result(),
        min_tokens in 0usize..300,
        note in any::<bool>(),
        compact in any::<bool>(),
    ) {
        let toon = toon(min_tokens, note, compact);
        let Some(rewritten) = toon.rewrite(&result) else { return Ok(()) };
        prop_assert_eq!(toon.rewrite(&result), Some(rewritten.clone()), "not deterministic");
        let out = &rewritten.result;
        prop_assert_eq!(out.is_error, result.is_error);
        prop_assert_eq!(&out.structured_content, &result.structured_content);
        prop_assert!(rewritten.tokens_after < rewritten.tokens_before,
            "{} tokens after, {} before", rewritten.tokens_after, rewritten.tokens_before);
        // The output is the input's blocks in order, each rewritten or not, with at most one
        // note before the first TOON block.
        let notes: Vec<&mcp::ContentBlock> =
            out.content.iter().filter(|b| meta_of(b, NOTE_META).is_some()).collect();
        prop_assert!(notes.len() <= usize::from(note && rewritten.toon_blocks > 0));
        let blocks: Vec<&mcp::ContentBlock> =
            out.content.iter().filter(|b| meta_of(b, NOTE_META).is_none()).collect();
        prop_assert_eq!(blocks.len(), result.content.len());
        let (mut toon_blocks, mut compact_blocks) = (0, 0);
        for (before, after) in result.content.iter().zip(blocks) {
            match (before, meta_of(after, FORMAT_META).and_then(Value::as_str)) {
                (mcp::ContentBlock::Text(sent), Some(form)) => {
                    let mcp::ContentBlock::Text(new) = after else { unreachable!("marked text") };
                    let sent: Value = serde_json::from_str(sent.text.trim()).expect("JSON was sent");
                    let read: Value = if form == "toon" {
                        toon_blocks += 1;
                        toon_format::decode(&new.text, &toon_format::DecodeOptions::default())
                            .map_err(|e| TestCaseError::fail(format!("{e}: {:?}", new.text)))?
                    } else {
                        compact_blocks += 1;
                        prop_assert_eq!(form, "json");
                        serde_json::from_str(&new.text).expect("compact JSON")
                    };
                    prop_assert!(same(&read, &sent), "{:?} reads as {}, not {}", new.text, read, sent);
                }
                (_, None) => prop_assert_eq!(after, before),
                (other, Some(_)) => prop_assert!(false, "{:?} was rewritten", other),
            }
        }
        prop_assert_eq!((toon_blocks, compact_blocks), (rewritten.toon_blocks, rewritten.compact_blocks));
    }

    #[test]
    fn toon_format_reads_back_what_it_writes(value in prop_oneof![any_json(6), records()]) {
        // Not a property toolgate relies on (every conversion is decoded and checked), but
        // where it fails, `toon` falls back to JSON for that shape: worth knowing.
        if let Some(text) = super::convert::encode(&value) {
            prop_assert!(super::convert::decodes_to(&text, &value), "{} -> {:?}", value, text);
        }
    }
}
