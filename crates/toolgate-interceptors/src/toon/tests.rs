//! Tests of the `toon` interceptor: the round trip on many shapes, when a block converts, and
//! the rewritten result.

use serde_json::{Value, json};

use super::convert::{self, Form, Kept, NoToon};
use super::*;

/// A small deterministic generator of JSON values with the awkward parts TOON must quote.
struct Shapes(u64);

const STRINGS: &[&str] = &[
    "",
    " ",
    "plain",
    "two words",
    " padded ",
    "a,b",
    "a|b",
    "a\tb",
    "key: value",
    "- item",
    "-",
    "#hash",
    "[1]",
    "{x}",
    "\"quoted\"",
    "back\\slash",
    "line\nbreak",
    "cr\rlf",
    "true",
    "false",
    "null",
    "12",
    "-3.5",
    "1e3",
    "0x10",
    "05",
    "héllo",
    "日本語",
    "🌍 emoji",
    "\u{0}",
    "\u{1f}",
    "tab\tand,comma",
    "trailing ",
    "a.b.c",
    "=",
    "'single'",
];

/// Characters that delimit, quote, escape, look like numbers or keywords, or are invisible.
const AWKWARD: &str =
    " ,|\t:-#[]{}\"\\\n\r'=.0123456789eEabtrufalsn\u{0}\u{1f}\u{7f}\u{85}\u{a0}\u{2028}\u{feff}é🌍";

const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "1",
    "-1",
    "42",
    "3.5",
    "-2.25",
    "1e21",
    "1.5e-7",
    "0.1",
    "123456789012345",
    "18446744073709551615",
    "-9223372036854775808",
    "9007199254740993",
    "1e300",
    "5e-324",
    "2.5E+3",
    "100.0",
];

impl Shapes {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// One of [`STRINGS`], or up to 6 characters drawn from [`AWKWARD`].
    fn string(&mut self) -> String {
        if self.below(2) == 0 {
            return STRINGS[self.below(STRINGS.len())].to_owned();
        }
        let awkward: Vec<char> = AWKWARD.chars().collect();
        (0..self.below(7)).map(|_| awkward[self.below(awkward.len())]).collect()
    }

    fn scalar(&mut self) -> Value {
        match self.below(5) {
            0 => Value::Null,
            1 => Value::Bool(self.below(2) == 0),
            2 => serde_json::from_str(NUMBERS[self.below(NUMBERS.len())]).expect("a number"),
            _ => Value::String(self.string()),
        }
    }

    fn value(&mut self, depth: usize) -> Value {
        if depth == 0 {
            return self.scalar();
        }
        match self.below(6) {
            0 => self.scalar(),
            1 | 2 => {
                let len = self.below(5);
                Value::Object((0..len).map(|_| (self.string(), self.value(depth - 1))).collect())
            }
            3 => {
                let len = self.below(5);
                Value::Array((0..len).map(|_| self.value(depth - 1)).collect())
            }
            _ => {
                // A uniform array of objects: the tabular form, with awkward keys and cells.
                let keys: Vec<String> = (0..1 + self.below(4)).map(|_| self.string()).collect();
                let rows = self.below(6);
                Value::Array(
                    (0..rows)
                        .map(|_| {
                            Value::Object(keys.iter().map(|k| (k.clone(), self.scalar())).collect())
                        })
                        .collect(),
                )
            }
        }
    }
}

fn decoded(toon: &str) -> Value {
    toon_format::decode(toon, &toon_format::DecodeOptions::default())
        .unwrap_or_else(|e| panic!("the TOON decodes ({e}):\n{toon}"))
}

/// The shapes the issue names, each encoded and decoded.
fn named_shapes() -> Vec<(&'static str, Value)> {
    let rows: Vec<Value> = (0..50)
        .map(|i| json!({"id": i, "name": format!("user {i}"), "active": i % 3 == 0, "score": f64::from(i) / 4.0}))
        .collect();
    vec![
        ("uniform array of objects", Value::Array(rows)),
        ("nested", json!({"a": {"b": {"c": [1, 2, {"d": "e"}]}}, "f": [[1, 2], [3, [4]]]})),
        ("empty array", json!([])),
        ("empty object", json!({})),
        ("empties inside", json!({"a": [], "b": {}, "c": [{}], "d": [[]], "e": [[], {}]})),
        ("strings needing quotes", json!({"s": STRINGS})),
        ("cells needing quotes", json!([{"a": "x,y", "b": "1"}, {"a": "true", "b": " "}])),
        (
            "numbers",
            serde_json::from_str(&format!("[{}]", NUMBERS.join(","))).expect("numbers parse"),
        ),
        ("unicode", json!({"日本": "語", "emoji 🌍": ["é", "ß", "\u{200b}"], "rtl": "مرحبا"})),
        (
            "keys with special characters",
            json!({"a.b": 1, "with space": 2, "": 3, "x:y": 4, "-k": 5, "#": 6, "\"q\"": 7, "[0]": 8, "{k}": 9, "a,b": 10, "new\nline": 11}),
        ),
        ("non-uniform array", json!([{"a": 1}, {"b": 2}, {"a": 1, "b": [1]}, 3, "x", null])),
        ("tabular with nested values", json!([{"a": 1, "b": {"c": 2}}, {"a": 2, "b": {"c": 3}}])),
        ("root scalars in arrays", json!([null, true, false, 0, "", "null"])),
    ]
}

#[test]
fn every_named_shape_decodes_back_to_its_json() {
    for (name, value) in named_shapes() {
        let toon = convert::encode(&value).unwrap_or_else(|| panic!("{name}: encodes"));
        let back = decoded(&toon);
        assert!(convert::same(&back, &value), "{name}:\n{toon}\n{back}\n!=\n{value}");
        assert!(convert::decodes_to(&toon, &value), "{name}");
    }
}

#[test]
fn thousands_of_generated_values_decode_back_to_their_json() {
    let mut shapes = Shapes(0x9E37_79B9_7F4A_7C15);
    let mut tabular = 0;
    for i in 0..3000 {
        let value = shapes.value(4);
        let toon = convert::encode(&value).unwrap_or_else(|| panic!("#{i} encodes: {value}"));
        tabular += usize::from(toon.contains("]{"));
        let back = decoded(&toon);
        assert!(convert::same(&back, &value), "#{i}:\n{toon}\n{back}\n!=\n{value}");
    }
    // The generator really reaches the tabular form, where quoting is hardest.
    assert!(tabular > 300, "only {tabular} values had a table");
}

#[test]
fn where_numbers_differ_only_in_how_they_are_written_they_are_the_same() {
    assert!(convert::same(&json!(1), &json!(1.0)));
    assert!(convert::same(&json!(0), &json!(-0.0)));
    assert!(convert::same(&json!({"a": [1, 2.5]}), &json!({"a": [1.0, 2.5]})));
    assert!(!convert::same(&json!(1), &json!(1.5)));
    assert!(!convert::same(&json!([1, 2]), &json!([2, 1])));
    assert!(!convert::same(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
    assert!(!convert::same(&json!("1"), &json!(1)));
    // 2^53 + 1 is not the float 2^53, though the float nearest to it is.
    assert!(!convert::same(&json!(9_007_199_254_740_993_u64), &json!(9_007_199_254_740_992.0)));
    assert!(!convert::same(&json!(-9_007_199_254_740_993_i64), &json!(-9_007_199_254_740_992.0)));
    // 2^63 and -2^63 are floats exactly, at the ends of what u64 and i64 hold.
    assert!(convert::same(&json!(9_223_372_036_854_775_808_u64), &json!(9.223_372_036_854_776e18)));
    assert!(convert::same(&json!(i64::MIN), &json!(-9.223_372_036_854_776e18)));
    // Just inside them, the largest i64 and u64 are not: as floats they round up to 2^63 and
    // 2^64, which no i64 or u64 holds.
    assert!(!convert::same(&json!(i64::MAX), &json!(9.223_372_036_854_776e18)));
    assert!(!convert::same(&json!(u64::MAX), &json!(1.844_674_407_370_955_2e19)));
}

#[test]
fn a_toon_text_that_reads_back_as_other_json_is_refused() {
    assert!(convert::decodes_to("a: 1", &json!({"a": 1})));
    assert!(!convert::decodes_to("a: 1", &json!({"a": 2})));
    assert!(!convert::decodes_to("a: 1", &json!({"a": 1, "b": 2})));
    assert!(convert::decodes_to("[2]: 1,2", &json!([1, 2])));
    assert!(!convert::decodes_to("[2]: 1,2", &json!([2, 1])));
    // Strict: an array whose length says otherwise does not decode at all.
    assert!(!convert::decodes_to("[3]: 1,2", &json!([1, 2])));
}

// === converting one block ===

/// `rows` rows of a uniform array of objects, as a server lists things.
fn listing(rows: usize) -> Value {
    Value::Array(
        (0..rows)
            .map(|i| {
                json!({
                    "id": i,
                    "name": format!("item-{i}"),
                    "kind": if i % 2 == 0 { "file" } else { "directory" },
                    "size": i * 1024,
                    "modified": format!("2025-01-{:02}T10:00:00Z", i % 28 + 1),
                })
            })
            .collect(),
    )
}

/// `rows` objects with a list each: TOON writes them as a list of items, which costs more
/// than compact JSON (though less than pretty JSON).
fn people(rows: usize) -> Value {
    Value::Array(
        (0..rows)
            .map(|i| {
                json!({
                    "name": format!("person_{i}"),
                    "entityType": "person",
                    "observations": [format!("works on project {}", i % 5), "likes tea"],
                })
            })
            .collect(),
    )
}

const O200K: Encoding = Encoding::O200kBase;

fn convert(text: &str, min_tokens: usize) -> Result<convert::Converted, Kept> {
    convert::convert(text, O200K, min_tokens, true)
}

#[test]
fn a_uniform_array_of_objects_becomes_a_table_in_far_fewer_tokens() {
    let json = serde_json::to_string_pretty(&listing(100)).expect("json");
    let done = convert(&json, 200).expect("converted");
    assert_eq!(done.form, Form::Toon);
    assert!(done.text.starts_with("[100]{id,name,kind,size,modified}:\n"), "{}", done.text);
    assert_eq!(done.tokens, O200K.count(&done.text));
    assert_eq!(done.sent_tokens, O200K.count(&json));
    let compact = O200K.count(&listing(100).to_string());
    // The keys go once into the header: a quarter fewer tokens than compact JSON here, where
    // the values are most of the text (dates, names).
    assert!(done.tokens * 4 <= compact * 3, "{} vs {compact}", done.tokens);
    assert!(convert::same(&decoded(&done.text), &listing(100)));
    let fallback = done.fallback.expect("compact JSON is shorter than pretty JSON");
    assert_eq!((fallback.form, fallback.tokens), (Form::Compact, compact));
}

#[test]
fn what_is_not_a_json_object_or_array_stays() {
    for text in [
        "plain words about {braces}",
        "\"a JSON string\"",
        "42",
        "true",
        "{\"unterminated\": ",
        "[1, 2,]",
        "{\"a\": 1} and some prose after it",
        "{\"a\": 1, \"a\": 2}",
    ] {
        assert_eq!(convert(text, 0), Err(Kept::NotJson), "{text}");
    }
}

#[test]
fn small_json_stays() {
    let text = serde_json::to_string_pretty(&listing(2)).expect("json");
    let tokens = O200K.count(&listing(2).to_string());
    assert_eq!(convert(&text, tokens + 1), Err(Kept::Small));
    // Too short in bytes to have that many tokens: not even parsed.
    assert_eq!(convert("[1]", 4), Err(Kept::Small));
    // As many tokens as bytes, as many as asked for: not small, and then not shorter.
    assert_eq!(O200K.count("[1,2]"), 5);
    assert_eq!(convert("[1,2]", 5), Err(Kept::NotShorter));
    assert_eq!(convert("[oops", 6), Err(Kept::Small));
    assert_eq!(convert("[12345678901234567890123]", 26), Err(Kept::Small));
    assert!(convert(&text, tokens).is_ok());
}

#[test]
fn json_with_a_number_the_parser_rounded_stays() {
    let mut rows = listing(30);
    rows[0]["size"] = json!(1);
    let text = rows.to_string().replacen("\"size\":1,", "\"size\":12345678901234567890123,", 1);
    assert_eq!(convert(&text, 0), Err(Kept::InexactNumber));
}

#[test]
fn json_that_toon_does_not_shorten_becomes_compact_json() {
    let pretty = serde_json::to_string_pretty(&people(24)).expect("json");
    let compact = people(24).to_string();
    // TOON is shorter than the pretty JSON sent, but not than compact JSON.
    let toon = convert::encode(&people(24)).expect("encodes");
    assert!(O200K.count(&toon) < O200K.count(&pretty));
    assert!(O200K.count(&toon) > O200K.count(&compact));
    let done = convert(&pretty, 0).expect("compacted");
    assert_eq!(done.form, Form::Compact);
    assert_eq!(done.text, compact);
    assert_eq!(done.tokens, O200K.count(&compact));
    assert_eq!(done.sent_tokens, O200K.count(&pretty));
    // Unless compacting is off; and JSON sent compact has nothing to gain.
    assert_eq!(convert::convert(&pretty, O200K, 0, false), Err(Kept::NotShorter));
    assert_eq!(convert(&compact, 0), Err(Kept::NotShorter));
}

#[test]
fn deep_objects_that_toon_does_not_shorten_stay() {
    // One key per level: indentation costs what braces did.
    let mut deep = json!("leaf");
    for i in 0..40 {
        deep = json!({ format!("k{i}"): deep });
    }
    let tokens = O200K.count(&deep.to_string());
    assert_eq!(convert::toon(&deep, O200K, tokens), Err(NoToon::NotShorter));
    assert_eq!(convert(&deep.to_string(), 0), Err(Kept::NotShorter));
}

#[test]
fn toon_must_beat_both_the_text_as_sent_and_compact_json() {
    let value = listing(20);
    let toon = convert::encode(&value).expect("encodes");
    let toon_tokens = O200K.count(&toon);
    assert!(convert::toon(&value, O200K, toon_tokens + 1).is_ok());
    assert_eq!(convert::toon(&value, O200K, toon_tokens), Err(NoToon::NotShorter));
    assert_eq!(convert::toon(&value, O200K, 0), Err(NoToon::NotShorter));
    // An empty object is the empty TOON text, of no tokens: fewer than one, but not fewer
    // than none.
    let empty = json!({});
    assert_eq!(convert::encode(&empty).as_deref(), Some(""));
    assert_eq!(convert::toon(&empty, O200K, 1), Ok((String::new(), 0)));
    assert_eq!(convert::toon(&empty, O200K, 0), Err(NoToon::NotShorter));
}

#[test]
fn a_converted_block_never_costs_more_than_it_did() {
    let mut shapes = Shapes(0x0123_4567_89AB_CDEF);
    let (mut toon, mut compacted) = (0, 0);
    for _ in 0..400 {
        let value = shapes.value(5);
        for text in [value.to_string(), serde_json::to_string_pretty(&value).expect("json")] {
            let Ok(done) = convert(&text, 0) else { continue };
            assert_eq!(done.tokens, O200K.count(&done.text));
            assert_eq!(done.sent_tokens, O200K.count(&text));
            assert!(done.tokens < done.sent_tokens, "{text}\n{}", done.text);
            match done.form {
                Form::Toon => {
                    toon += 1;
                    assert!(done.tokens < O200K.count(&value.to_string()));
                    assert!(convert::same(&decoded(&done.text), &value));
                }
                Form::Compact => {
                    compacted += 1;
                    assert_eq!(done.text, value.to_string());
                }
            }
            if let Some(fallback) = done.fallback {
                assert!(fallback.tokens < done.sent_tokens);
            }
        }
    }
    assert!(toon > 50 && compacted > 50, "{toon} to TOON, {compacted} compacted");
}

// === the interceptor ===

fn toon(options: Value) -> Toon {
    let entry = crate::test_entry(KIND, "pipeline[0]", options);
    Toon::from_config(&entry, &Services::new(EventBus::new())).expect("valid options")
}

fn option_errors(options: Value) -> Vec<String> {
    let entry = crate::test_entry(KIND, "pipeline[0]", options);
    Toon::from_config(&entry, &Services::new(EventBus::new()))
        .expect_err("invalid options")
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn text_of(block: &mcp::ContentBlock) -> &mcp::TextContent {
    match block {
        mcp::ContentBlock::Text(text) => text,
        other => panic!("not a text block: {other:?}"),
    }
}

fn format_meta(block: &mcp::ContentBlock) -> Option<&Value> {
    text_of(block).meta.as_ref().and_then(|meta| meta.0.get(FORMAT_META))
}

fn texts(result: &mcp::CallToolResult) -> Vec<&str> {
    result.content.iter().map(|b| text_of(b).text.as_str()).collect()
}

#[test]
fn in_mixed_content_only_the_large_json_blocks_change() {
    let listing = listing(100);
    let mut result = mcp::CallToolResult::success(vec![
        mcp::ContentBlock::text("Found 100 items:"),
        mcp::ContentBlock::text(serde_json::to_string_pretty(&listing).expect("json")),
        mcp::ContentBlock::image("AAAA", "image/png"),
        mcp::ContentBlock::text(json!({"small": true}).to_string()),
    ]);
    result.structured_content = Some(json!({ "items": listing }));
    let mut meta = mcp::MetaObject::new();
    meta.0.insert("upstream/key".into(), json!(1));
    result.meta = Some(meta);

    let rewritten = toon(json!({})).rewrite(&result).expect("rewritten");
    let content = &rewritten.result.content;
    assert_eq!(content.len(), 5, "{content:?}");
    assert_eq!(content[0], result.content[0], "prose stays");
    let note = text_of(&content[1]);
    assert_eq!(note.text, NOTE);
    assert_eq!(note.meta.as_ref().and_then(|m| m.0.get(NOTE_META)), Some(&json!("toon")));
    assert_eq!(
        note.annotations.as_ref().and_then(|a| a.audience.clone()),
        Some(vec![mcp::Role::Assistant])
    );
    assert_eq!(format_meta(&content[2]), Some(&json!("toon")));
    assert!(convert::same(&decoded(&text_of(&content[2]).text), &listing));
    assert_eq!(content[3], result.content[2], "the image stays");
    assert_eq!(content[4], result.content[3], "small JSON stays");
    assert_eq!(format_meta(&content[4]), None);
    assert_eq!(rewritten.result.structured_content, result.structured_content);
    assert_eq!(rewritten.result.meta, result.meta);
    assert_eq!(rewritten.result.is_error, result.is_error);
    assert_eq!(rewritten.result.result_type, result.result_type);
    assert_eq!((rewritten.toon_blocks, rewritten.compact_blocks), (1, 0));
    assert!(rewritten.tokens_after < rewritten.tokens_before);
    // The result is still a valid CallToolResult on the wire.
    let wire = serde_json::to_value(&rewritten.result).expect("serializes");
    let back: mcp::CallToolResult = serde_json::from_value(wire.clone()).expect("parses");
    assert_eq!(back, rewritten.result);
    assert_eq!(wire["content"][2]["_meta"]["io.toolgate/format"], "toon");
}

#[test]
fn every_json_block_converts_and_the_note_comes_once_before_the_first_toon() {
    let result = mcp::CallToolResult::success(vec![
        mcp::ContentBlock::text(serde_json::to_string_pretty(&people(24)).expect("json")),
        mcp::ContentBlock::text(listing(40).to_string()),
        mcp::ContentBlock::text("between"),
        mcp::ContentBlock::text(json!({ "rows": listing(40) }).to_string()),
    ]);
    let rewritten = toon(json!({})).rewrite(&result).expect("rewritten");
    let shown = texts(&rewritten.result);
    assert_eq!(shown.len(), 5);
    assert_eq!(shown[0], people(24).to_string(), "compacted, before the note");
    assert_eq!(format_meta(&rewritten.result.content[0]), Some(&json!("json")));
    assert_eq!(shown[1], NOTE);
    assert!(shown[2].starts_with("[40]{"), "{}", shown[2]);
    assert_eq!(shown[3], "between");
    assert!(shown[4].starts_with("rows[40]{"), "{}", shown[4]);
    assert_eq!((rewritten.toon_blocks, rewritten.compact_blocks), (2, 1));
    let cost = |texts: &[&str]| texts.iter().map(|t| O200K.count(t)).sum::<usize>();
    assert_eq!(rewritten.tokens_after, cost(&[shown[0], shown[1], shown[2], shown[4]]));
    let sent = texts(&result);
    assert_eq!(rewritten.tokens_before, cost(&[sent[0], sent[1], sent[3]]));
}

#[test]
fn compacting_alone_brings_no_note() {
    let pretty = serde_json::to_string_pretty(&people(24)).expect("json");
    let result = mcp::CallToolResult::success(vec![mcp::ContentBlock::text(pretty)]);
    let rewritten = toon(json!({})).rewrite(&result).expect("compacted");
    assert_eq!(texts(&rewritten.result), [people(24).to_string()]);
    assert_eq!((rewritten.toon_blocks, rewritten.compact_blocks), (0, 1));
    // The figures count no note either.
    assert_eq!(rewritten.tokens_after, O200K.count(&people(24).to_string()));
    assert_eq!(rewritten.tokens_before, O200K.count(texts(&result)[0]));
    assert_eq!(toon(json!({ "compact": false })).rewrite(&result), None);
}

#[test]
fn without_the_note_the_blocks_stay_in_place() {
    let result =
        mcp::CallToolResult::success(vec![mcp::ContentBlock::text(listing(40).to_string())]);
    let rewritten = toon(json!({ "note": false })).rewrite(&result).expect("rewritten");
    assert_eq!(rewritten.result.content.len(), 1);
    assert_eq!(format_meta(&rewritten.result.content[0]), Some(&json!("toon")));
}

#[test]
fn the_blocks_own_meta_and_annotations_are_kept() {
    let mut meta = mcp::MetaObject::new();
    meta.0.insert("upstream/hint".into(), json!("x"));
    let block = mcp::TextContent::new(listing(40).to_string())
        .with_meta(meta)
        .with_annotations(mcp::Annotations::default().with_priority(0.5));
    let result = mcp::CallToolResult::success(vec![mcp::ContentBlock::Text(block)]);
    let rewritten = toon(json!({ "note": false })).rewrite(&result).expect("rewritten");
    let text = text_of(&rewritten.result.content[0]);
    let meta = text.meta.as_ref().expect("meta");
    assert_eq!(meta.0.get("upstream/hint"), Some(&json!("x")));
    assert_eq!(meta.0.get(FORMAT_META), Some(&json!("toon")));
    assert_eq!(text.annotations.as_ref().and_then(|a| a.priority), Some(0.5));
}

#[test]
fn structured_content_alone_is_left_as_json() {
    let mut result = mcp::CallToolResult::success(vec![]);
    result.structured_content = Some(json!({ "items": listing(100) }));
    assert_eq!(toon(json!({})).rewrite(&result), None);
    let mut result = mcp::CallToolResult::success(vec![mcp::ContentBlock::text("100 items")]);
    result.structured_content = Some(json!({ "items": listing(100) }));
    assert_eq!(toon(json!({})).rewrite(&result), None);
}

#[test]
fn an_error_result_stays_an_error() {
    let result = mcp::CallToolResult::error(vec![mcp::ContentBlock::text(
        json!({ "errors": listing(40) }).to_string(),
    )]);
    let rewritten = toon(json!({})).rewrite(&result).expect("rewritten");
    assert_eq!(rewritten.result.is_error, Some(true));
}

#[test]
fn when_the_note_costs_more_than_toon_saves_the_block_falls_back() {
    // Just worth it without the note, not with it.
    let note = O200K.count(NOTE);
    let rows = (1..40)
        .find(|&rows| {
            let text = listing(rows).to_string();
            let toon = convert::encode(&listing(rows)).expect("encodes");
            let toon = O200K.count(&toon);
            toon < O200K.count(&text) && toon + note >= O200K.count(&text)
        })
        .expect("a listing just worth it without the note");
    // Sent compact: nothing to fall back to.
    let compact = listing(rows).to_string();
    let result = mcp::CallToolResult::success(vec![mcp::ContentBlock::text(compact)]);
    assert_eq!(toon(json!({ "min_tokens": 0 })).rewrite(&result), None, "{rows} rows");
    assert!(toon(json!({ "min_tokens": 0, "note": false })).rewrite(&result).is_some());
    // Sent pretty: compact JSON instead.
    let pretty = serde_json::to_string_pretty(&listing(rows)).expect("json");
    let result = mcp::CallToolResult::success(vec![mcp::ContentBlock::text(pretty)]);
    let rewritten = toon(json!({ "min_tokens": 0 })).rewrite(&result).expect("compacted");
    assert_eq!(texts(&rewritten.result), [listing(rows).to_string()]);
}

#[test]
fn min_tokens_defaults_to_200() {
    let small = listing(3).to_string();
    assert!(O200K.count(&small) < 200);
    let result = mcp::CallToolResult::success(vec![mcp::ContentBlock::text(small)]);
    assert_eq!(toon(json!({ "note": false })).rewrite(&result), None);
    assert!(toon(json!({ "note": false, "min_tokens": 0 })).rewrite(&result).is_some());
}

#[test]
fn cl100k_base_counts_too() {
    let toon = toon(json!({ "encoding": "cl100k_base" }));
    let result =
        mcp::CallToolResult::success(vec![mcp::ContentBlock::text(listing(40).to_string())]);
    let rewritten = toon.rewrite(&result).expect("rewritten");
    let json_tokens = Encoding::Cl100kBase.count(&listing(40).to_string());
    assert_eq!(rewritten.tokens_before, json_tokens);
}

#[test]
fn option_errors_name_the_option() {
    assert_eq!(
        option_errors(json!({
            "encoding": "gpt2",
            "min_tokens": -1,
            "note": "yes",
            "compact": 1,
            "indent": 4,
        })),
        [
            "pipeline[0].indent: unknown option (expected one of: encoding, min_tokens, note, \
             compact)",
            "pipeline[0].encoding: unknown encoding \"gpt2\" (known: o200k_base, cl100k_base)",
            "pipeline[0].min_tokens: expected an integer of at least 0, found -1",
            "pipeline[0].note: expected true or false, found \"yes\"",
            "pipeline[0].compact: expected true or false, found 1",
        ]
    );
    assert_eq!(
        option_errors(json!({ "encoding": 5, "min_tokens": 1.5 })),
        [
            "pipeline[0].encoding: expected a string, found 5",
            "pipeline[0].min_tokens: expected an integer of at least 0, found 1.5",
        ]
    );
}

fn context() -> CallContext {
    let mut ctx = CallContext::new(toolgate_intercept::Principal::anonymous());
    ctx.target = Some(toolgate_intercept::Target {
        server: "mem".into(),
        original: "read_graph".into(),
        exposed: "mem__read_graph".into(),
        tool: None,
    });
    ctx
}

#[tokio::test]
async fn the_interceptor_rewrites_and_says_so() {
    let bus = EventBus::new();
    let mut applied = bus.subscribe(transform::APPLIED.parse().expect("pattern"), 8);
    let entry = crate::test_entry(KIND, "pipeline[0]", json!({}));
    let toon = Toon::from_config(&entry, &Services::new(bus.clone())).expect("valid");
    let mut ctx = context();
    let result =
        mcp::CallToolResult::success(vec![mcp::ContentBlock::text(listing(60).to_string())]);
    let message = Message::ToolResult(result.clone());
    let outcome = toon
        .intercept(InterceptionEvent::ToolsCall, Phase::Response, &message, &mut ctx)
        .await
        .expect("no failure");
    let Outcome::Rewrite(Message::ToolResult(rewritten)) = outcome else {
        panic!("rewritten: {outcome:?}")
    };
    assert_eq!(Some(rewritten), toon.rewrite(&result).map(|r| r.result));
    let event = applied.try_recv().expect("transform/applied");
    assert_eq!(event.get("format"), Some(&json!("toon")));
    assert_eq!(event.get("transform"), Some(&json!("toon")));
    assert_eq!(event.get("blocks"), Some(&json!(1)));
    assert_eq!(event.get("compacted"), Some(&json!(0)));
    assert_eq!(event.get("tool"), Some(&json!("read_graph")));
    let before = event.get("tokens_before").and_then(Value::as_u64).expect("before");
    let after = event.get("tokens_after").and_then(Value::as_u64).expect("after");
    assert!(after < before, "{after} >= {before}");

    // Compacted only: format json.
    let pretty = serde_json::to_string_pretty(&people(24)).expect("json");
    let message =
        Message::ToolResult(mcp::CallToolResult::success(vec![mcp::ContentBlock::text(pretty)]));
    toon.intercept(InterceptionEvent::ToolsCall, Phase::Response, &message, &mut ctx)
        .await
        .expect("no failure");
    let event = applied.try_recv().expect("transform/applied");
    assert_eq!(event.get("format"), Some(&json!("json")));
    assert_eq!(event.get("compacted"), Some(&json!(1)));

    // Nothing to gain: no rewrite, no event.
    let small =
        Message::ToolResult(mcp::CallToolResult::success(vec![mcp::ContentBlock::text("ok")]));
    let outcome = toon
        .intercept(InterceptionEvent::ToolsCall, Phase::Response, &small, &mut ctx)
        .await
        .expect("no failure");
    assert_eq!(outcome, Outcome::Continue);
    assert!(applied.try_recv().is_none());
}

#[tokio::test]
async fn a_large_result_is_converted_on_the_blocking_pool_to_the_same_result() {
    let toon = toon(json!({}));
    let text = serde_json::to_string_pretty(&listing(1000)).expect("json");
    assert!(text.len() > transform::COUNT_INLINE);
    let result = mcp::CallToolResult::success(vec![
        mcp::ContentBlock::text("all of them:"),
        mcp::ContentBlock::text(text),
    ]);
    let message = Message::ToolResult(result.clone());
    let outcome = toon
        .intercept(InterceptionEvent::ToolsCall, Phase::Response, &message, &mut context())
        .await
        .expect("no failure");
    let expected = toon.rewrite(&result).expect("converted").result;
    assert_eq!(outcome, Outcome::Rewrite(Message::ToolResult(expected)));
}

/// Where the conversion runs: one of more than `COUNT_INLINE` bytes on the blocking pool, so that
/// the rewrite waits for the pool instead of holding the runtime thread; one of up to
/// `COUNT_INLINE` bytes inline, done on the first poll even while the pool is busy. The pool here
/// has one thread, held busy until the large conversion is let through.
#[test]
fn only_a_conversion_over_count_inline_bytes_leaves_the_runtime_thread() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .max_blocking_threads(1)
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let (release, held) = std::sync::mpsc::channel::<()>();
        let busy = tokio::task::spawn_blocking(move || held.recv());
        let toon = toon(json!({}));
        // Pretty JSON padded with spaces to exactly the limit, then one byte more.
        let rows = (20..).find(|&rows| {
            serde_json::to_string_pretty(&listing(rows + 1)).expect("json").len()
                > transform::COUNT_INLINE
        });
        let text = serde_json::to_string_pretty(&listing(rows.expect("rows"))).expect("json");
        let padded = |bytes: usize| format!("{text}{}", " ".repeat(bytes - text.len()));
        let at_limit = mcp::CallToolResult::success(vec![mcp::ContentBlock::text(padded(
            transform::COUNT_INLINE,
        ))]);
        let mut rewrite = std::pin::pin!(toon.rewrite_off_thread(&at_limit));
        let futures::task::Poll::Ready(done) = futures::poll!(&mut rewrite) else {
            panic!("waited for the blocking pool")
        };
        let done = done.expect("no failure").expect("converted");
        assert_eq!(Some(done.result), toon.rewrite(&at_limit).map(|r| r.result));

        let over = mcp::CallToolResult::success(vec![mcp::ContentBlock::text(padded(
            transform::COUNT_INLINE + 1,
        ))]);
        let mut rewrite = std::pin::pin!(toon.rewrite_off_thread(&over));
        assert!(futures::poll!(&mut rewrite).is_pending(), "converted on the runtime thread");
        release.send(()).expect("the pool's thread waits");
        let done = rewrite.await.expect("no failure").expect("converted");
        assert_eq!(Some(done.result), toon.rewrite(&over).map(|r| r.result));
        busy.await.expect("the pool's thread ends").expect("released");
    });
}
