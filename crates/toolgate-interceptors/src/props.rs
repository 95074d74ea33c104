//! What the transforms' property tests are made of (`props` beside each transform; see
//! `scripts/soak` for the long run): texts, JSON values and tool results of every shape.

use proptest::prelude::*;
use serde_json::Value;
use toolgate_core::mcp;

/// Any JSON value of at most four levels; `width` bounds each array and object.
pub(crate) fn json(width: usize) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e6..1e6f64).prop_map(Value::from),
        any::<f64>()
            .prop_filter_map("finite", |x| serde_json::Number::from_f64(x).map(Value::Number)),
        "[a-z ]{0,12}|\\PC{0,8}|[,:\\[\\]{}\"\\\\#\\n-]{0,4}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 64, width as u32, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..width).prop_map(Value::Array),
            prop::collection::vec(("[a-z_]{1,8}|\\PC{0,4}", inner), 0..width)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

/// Rows of records that share their keys: what TOON writes as a table.
pub(crate) fn records() -> impl Strategy<Value = Value> {
    let keys = prop::collection::vec("[a-z]{1,6}", 1..5);
    keys.prop_flat_map(|keys| {
        let row = prop::collection::vec(
            prop_oneof![
                any::<i32>().prop_map(Value::from),
                "[a-zA-Z0-9 ,:\"-]{0,10}".prop_map(Value::from),
                any::<bool>().prop_map(Value::from),
                Just(Value::Null),
                (-1e3..1e3f64).prop_map(Value::from),
            ],
            keys.len(),
        )
        .prop_map(move |values| Value::Object(keys.iter().cloned().zip(values).collect()));
        prop::collection::vec(row, 0..24).prop_map(|rows| serde_json::json!({ "items": rows }))
    })
}

/// A text: lines of prose, log-like lines, long lines, Unicode, blank lines.
pub(crate) fn text(lines: usize) -> impl Strategy<Value = String> {
    let line = prop_oneof![
        4 => "[a-zA-Z0-9 .,:;=/_-]{0,60}",
        1 => "\\PC{0,30}",
        1 => Just(String::new()),
        1 => "[a-z ]{200,400}",
        1 => "[ \t\r]{0,3}",
    ];
    (prop::collection::vec(line, 0..lines), any::<bool>()).prop_map(|(lines, ended)| {
        let mut text = lines.join("\n");
        if ended && !text.is_empty() {
            text.push('\n');
        }
        text
    })
}

/// A text block's text: prose, or JSON written compact or pretty.
pub(crate) fn block_text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => text(40),
        2 => (json(8), any::<bool>()).prop_map(|(value, pretty)| {
            if pretty { serde_json::to_string_pretty(&value).expect("JSON") } else { value.to_string() }
        }),
        1 => records().prop_map(|value| value.to_string()),
    ]
}

/// A block of a result.
pub(crate) fn block() -> impl Strategy<Value = mcp::ContentBlock> {
    prop_oneof![
        6 => block_text().prop_map(mcp::ContentBlock::text),
        1 => "[A-Za-z0-9+/]{0,40}".prop_map(|data| mcp::ContentBlock::image(data, "image/png")),
        1 => text(50).prop_map(|text| mcp::ContentBlock::embedded_text("file:///props.txt", text)),
    ]
}

/// A tool result: some blocks, maybe `structuredContent`, maybe an error.
pub(crate) fn result() -> impl Strategy<Value = mcp::CallToolResult> {
    (
        prop::collection::vec(block(), 0..6),
        prop::option::of(prop_oneof![json(8), records()].prop_map(|value| match value {
            Value::Object(_) => value,
            other => serde_json::json!({ "value": other }),
        })),
        any::<bool>(),
    )
        .prop_map(|(content, structured, is_error)| {
            let mut result = if is_error {
                mcp::CallToolResult::error(content)
            } else {
                mcp::CallToolResult::success(content)
            };
            result.structured_content = structured;
            result
        })
}
