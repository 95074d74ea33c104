//! `toolgate__read_result`: the tool `truncate` serves, through which the model reads a
//! result that was shortened, page by page.
//!
//! Arguments: `handle` (from the note in the shortened result), `offset` (the line to start
//! at, from 0; default 0) and `limit` (lines at most; default and most [`MOST_LINES`]). A page
//! ends at a line boundary, within the page budget (one line at least; lines are at most
//! [`LONGEST_LINE`](super::spill::LONGEST_LINE) characters, longer ones were split); its last line says where the next page
//! starts. `structuredContent` says the same for programs: `handle`, `offset`, `lines`,
//! `total_lines`, `next_offset` (`null` at the end).
//!
//! A handle that is unknown, expired, or kept for another caller gets the same error result.

use serde_json::{Value, json};
use toolgate_core::mcp;

use super::Meter;
use super::spill::{Document, SpillStores};

/// The tool's original name; the gateway exposes it as `toolgate__read_result`.
pub const NAME: &str = "read_result";

/// The most lines one page holds.
pub const MOST_LINES: usize = 2000;

/// The tool's definition.
pub fn definition() -> mcp::Tool {
    let input = json!({
        "type": "object",
        "properties": {
            "handle": {
                "type": "string",
                "description": "The handle named in the note of the shortened result."
            },
            "offset": {
                "type": "integer",
                "minimum": 0,
                "default": 0,
                "description": "The line to start at (0 is the first line)."
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MOST_LINES,
                "description": "How many lines to read at most."
            }
        },
        "required": ["handle"],
        "additionalProperties": false
    });
    let output = json!({
        "type": "object",
        "properties": {
            "handle": {"type": "string"},
            "offset": {"type": "integer"},
            "lines": {"type": "integer"},
            "total_lines": {"type": "integer"},
            "next_offset": {"type": ["integer", "null"]}
        },
        "required": ["handle", "offset", "lines", "total_lines", "next_offset"]
    });
    let mut tool = mcp::Tool::new(
        NAME,
        "Reads a tool result that toolgate shortened to save context, page by page. Pass the \
         handle and the offset (a line number) given in the note where the result was cut; \
         each page ends with where the next one starts.",
        object(input),
    );
    tool.title = Some("Read the rest of a shortened result".into());
    tool.output_schema = Some(std::sync::Arc::new(object(output)));
    tool.annotations = Some(
        mcp::ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false),
    );
    tool
}

fn object(value: Value) -> mcp::JsonObject {
    match value {
        Value::Object(map) => map,
        _ => unreachable!("schemas are objects"),
    }
}

/// Reads a page for `owner` with `arguments`, each page within `meter`'s budget.
pub fn page(
    stores: &SpillStores,
    owner: &str,
    arguments: Option<&mcp::JsonObject>,
    meter: &Meter,
) -> mcp::CallToolResult {
    let read = request(arguments).and_then(|request| {
        let document = stores.get(owner, request.handle).ok_or_else(|| unknown(request.handle))?;
        render(&document, &request, meter)
    });
    answer(read)
}

/// What a call asks for.
#[derive(Clone, Copy)]
pub(super) struct Request<'a> {
    pub(super) handle: &'a str,
    offset: usize,
    limit: usize,
}

/// A call's answer, or the error result that says what is wrong.
pub(super) fn answer(read: Result<mcp::CallToolResult, String>) -> mcp::CallToolResult {
    read.unwrap_or_else(|message| {
        mcp::CallToolResult::error(vec![mcp::ContentBlock::text(message)])
    })
}

/// What `arguments` ask for, or what is wrong with them.
pub(super) fn request(arguments: Option<&mcp::JsonObject>) -> Result<Request<'_>, String> {
    let Some(arguments) = arguments else {
        return Err("`handle` is required: the handle named in the shortened result".into());
    };
    let handle = match arguments.get("handle") {
        Some(Value::String(handle)) => handle.as_str(),
        Some(other) => return Err(format!("`handle` must be a string, not {other}")),
        None => return Err("`handle` is required: the handle named in the shortened result".into()),
    };
    let offset = whole_number(arguments, "offset")?.unwrap_or(0);
    let limit = whole_number(arguments, "limit")?.unwrap_or(MOST_LINES);
    if !(1..=MOST_LINES).contains(&limit) {
        return Err(format!("`limit` must be between 1 and {MOST_LINES}, not {limit}"));
    }
    Ok(Request { handle, offset, limit })
}

/// What a handle that is unknown, expired, or another caller's gets.
pub(super) fn unknown(handle: &str) -> String {
    format!(
        "no kept result has the handle {handle:?}: it expired, was pushed out by newer results, \
         or was never kept for this session; call the original tool again"
    )
}

/// The page of `document` that `request` asks for.
pub(super) fn render(
    document: &Document,
    request: &Request<'_>,
    meter: &Meter,
) -> Result<mcp::CallToolResult, String> {
    let Request { handle, offset, limit } = *request;
    let total = document.lines();
    if offset > total {
        return Err(format!("`offset` {offset} is past the end: the result has {total} lines"));
    }
    let budget = meter.limit();
    let mut text = String::new();
    let mut cost = 0;
    let mut end = offset;
    while end < total && end - offset < limit {
        let line = document.line(end).unwrap_or_default();
        let line_cost = meter.cost_up_to(line, budget).unwrap_or(budget + 1);
        if end > offset && cost + line_cost > budget {
            break;
        }
        cost += line_cost;
        text.push_str(line);
        end += 1;
    }
    let next = (end < total).then_some(end);
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&match next {
        Some(next) => format!(
            "[toolgate: lines {offset}–{} of {total}; the next page starts at offset {next}]",
            end.saturating_sub(1)
        ),
        None => format!("[toolgate: end of the result ({total} lines)]"),
    });
    let mut result = mcp::CallToolResult::success(vec![mcp::ContentBlock::text(text)]);
    result.structured_content = Some(json!({
        "handle": handle,
        "offset": offset,
        "lines": end - offset,
        "total_lines": total,
        "next_offset": next,
    }));
    Ok(result)
}

fn whole_number(arguments: &mcp::JsonObject, key: &str) -> Result<Option<usize>, String> {
    match arguments.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| format!("`{key}` must be a whole number of 0 or more, not {n}")),
        Some(other) => Err(format!("`{key}` must be a whole number, not {other}")),
    }
}
