//! `truncate`: keeps every tool result within a budget of tokens (or bytes), as a valid
//! `CallToolResult`, and keeps the whole result so that the model can read the rest.
//!
//! ```toml
//! [[pipeline]]
//! kind = "truncate"
//! max_tokens = 8000          # or max_bytes = 32768
//! encoding = "o200k_base"    # or "cl100k_base"
//! tools = ["*read*", "*log*"]
//!
//! [[pipeline]]               # another budget for one tool
//! kind = "truncate"
//! name = "truncate_search"
//! tools = ["search"]
//! max_tokens = 2000
//! ```
//!
//! - **Hook**: `tools/call`, response phase. **Type**: mutation. **Fails open** (a failure
//!   leaves the result unchanged; `interceptor/failed` is published). Put it after the other
//!   transforms in `[[pipeline]]`: mutators of the response phase run in config order (then by
//!   `priority`), and the budget is about what the model finally reads.
//! - **What counts**: what a model reads of a result: every text block, the text of embedded
//!   resources, and `structuredContent` as compact JSON (clients forward one or the other or
//!   both, so both count). Images and audio do not count; `media = "note"` replaces them by a
//!   line saying what they were.
//! - **Cost**: a result with no more bytes than the budget has no more tokens either, and is
//!   not tokenized at all; a bigger one is tokenized only until the budget is passed. Cutting
//!   a 1 MiB result costs a few milliseconds (the criterion bench `truncate`).
//!
//! # How a result is cut
//!
//! The budget (less a little for the notes) is shared between the parts (text blocks,
//! embedded texts, `structuredContent`): parts smaller than an equal share are kept whole, and
//! the others share what is left. Then each part that is over its share is cut:
//!
//! - **Text**: its head (the first `head` share of its allowance, 70 % by default) and its
//!   tail, both at line boundaries (within a line only when a single line is over the
//!   allowance), with a note in between saying how many lines were left out and how to read
//!   them.
//! - **JSON** (a text block that is a JSON object or array, and `structuredContent`): cut so
//!   that it stays JSON: arrays keep their first items, long strings their beginning; every
//!   cut is listed, with its JSON pointer and how many items were kept of how many, in a note
//!   after the content and in `_meta["io.toolgate/truncated"]`. A JSON text block of which
//!   no shortening fits its allowance (a small share, or an object of very many keys, all of
//!   which stay) is cut as text instead. A shortened `structuredContent` is checked against
//!   the tool's `outputSchema`: if it no longer matches (a `minItems`, say), it is left out
//!   and the note says so (`structured = "keep"` keeps it whole instead, outside the budget;
//!   `"drop"` always leaves it out when cutting).
//!
//! # Reading the rest
//!
//! The whole result is kept (`spill`, on by default) in a store bounded in bytes
//! (`spill_max_bytes`, 64 MiB), per caller (`spill_caller_bytes`, 16 MiB; 64 results) and in
//! time (`spill_ttl`, 15 minutes), for the caller it was cut for (principal and session, or
//! for a 2026-07-28 client without a session the address it connected from). The
//! note names a handle and the line to read on from, and the gateway serves a tool of its
//! own, `toolgate__read_result {handle, offset, limit}`, listed with the other tools and
//! passing the pipeline like any other (a `policy` rule can deny it; its results are not cut
//! again: each page is within `page_tokens`/`page_bytes`, by default the budget). See
//! [`read`] for its arguments. Results of `toolgate__read_result` itself are never cut.
//!
//! With `[state] backend` on Redis or PostgreSQL (several replicas), the whole result is also
//! kept in the shared state, so that its handle reads on any replica, for the same caller
//! only. What one caller, and everyone, keeps there is bounded by `spill_caller_bytes` and
//! `spill_max_bytes` (counted over each `spill_ttl`); a result past either, or cut while the
//! state cannot be reached, is kept on its replica only, and says `"shared": false` in its
//! `_meta` record. Reading a handle from another replica while the state cannot be reached
//! says so (try again). Keys and details: `truncate/shared.rs`.
//!
//! # Options
//!
//! | option | values | default | meaning |
//! |---|---|---|---|
//! | `max_tokens` | integer ≥ 500 | `8000` | budget in tokens |
//! | `max_bytes` | integer ≥ 2000 | | budget in bytes instead (not with `max_tokens`) |
//! | `encoding` | `"o200k_base"`, `"cl100k_base"` | `"o200k_base"` | how tokens are counted |
//! | `head` | number in (0, 1) | `0.7` | share of a cut text kept from its start |
//! | `structured` | `"shorten"`, `"keep"`, `"drop"` | `"shorten"` | what happens to `structuredContent` |
//! | `media` | `"keep"`, `"note"` | `"keep"` | images and audio kept, or replaced by a line |
//! | `spill` | boolean | `true` | keep whole results for `toolgate__read_result` |
//! | `spill_ttl` | duration | `"15m"` | how long a whole result is kept |
//! | `spill_max_bytes` | integer | `67108864` | bytes kept over every caller |
//! | `spill_caller_bytes` | integer | `16777216` | bytes kept per caller |
//! | `page_tokens`, `page_bytes` | integer | the budget | most one page of `toolgate__read_result` holds |
//!
//! # Events
//!
//! `transform/applied` with `tokens_before`, `tokens_after`, `budget`, `unit`, `handle` (when
//! kept) and `omitted` (the JSON cuts and the lines left out).

pub mod json;
mod meter;
pub mod read;
mod settings;
mod shared;
pub mod spill;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use toolgate_audit::EventBus;
use toolgate_config::InterceptorConfig;
use toolgate_core::{duration, mcp};
use toolgate_intercept::{
    CallContext, Descriptor, InterceptError, InterceptionEvent, Interceptor, Message, OWN_SERVER,
    Outcome, Phase,
};
use toolgate_llm::content::size_in_words;

use crate::options::{OptionError, Options};
use crate::transform::{self, Applied};
pub use meter::{Budget, Meter};
use settings::{Media, Settings, Structured};
use spill::{Document, SpillStore, SpillStores};

/// The config `kind`.
pub const KIND: &str = "truncate";

/// The `_meta` key of a cut result.
pub const META_KEY: &str = "io.toolgate/truncated";

/// The interceptor.
pub struct Truncate {
    descriptor: Descriptor,
    meter: Meter,
    page: Meter,
    head: f64,
    structured: Structured,
    media: Media,
    spill: Option<Arc<SpillStore>>,
    /// Where whole results are kept for the other replicas, if there are any.
    shared: Option<shared::SharedSpill>,
    stores: Arc<SpillStores>,
    events: EventBus,
}

impl std::fmt::Debug for Truncate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Truncate")
            .field("name", &self.descriptor.name)
            .field("budget", &self.meter.budget)
            .finish_non_exhaustive()
    }
}

/// What the notes cost at most, kept out of the budget of the parts.
const NOTE_RESERVE_TOKENS: usize = 160;
const NOTE_RESERVE_BYTES: usize = 640;
impl Truncate {
    /// Builds it from its `[[pipeline]]` entry; its store joins `services.spill`.
    pub fn from_config(
        entry: &InterceptorConfig,
        services: &crate::Services,
    ) -> Result<Truncate, Vec<OptionError>> {
        let mut options = Options::new(entry.path.clone(), &entry.options);
        let Settings { budget, page, head, structured, media, spill, limits } =
            settings::read(&mut options);
        let meter = Meter::new(budget);
        let descriptor = transform::descriptor(KIND, &[InterceptionEvent::ToolsCall]);
        let descriptor = options.configure(descriptor, entry);
        options.finish(descriptor, |descriptor| {
            let spill = spill.then(|| {
                let store = Arc::new(SpillStore::new(limits));
                services.spill.register(&descriptor.name, &store);
                store
            });
            let shared = (services.shared.as_ref())
                .filter(|_| spill.is_some())
                .map(|state| shared::SharedSpill::new(state.clone(), &descriptor.name, limits));
            if let Budget::Tokens(_, encoding) = budget {
                // The first count builds the encoding's tables (about a second): not on a call.
                std::thread::spawn(move || encoding.warm_up());
            }
            Truncate {
                descriptor,
                meter,
                page: page.map_or(meter, |limit| meter.with_limit(limit)),
                head,
                structured,
                media,
                spill,
                shared,
                stores: services.spill.clone(),
                events: services.events.clone(),
            }
        })
    }

    /// `result` within the budget, or `None` when it already is.
    pub fn shorten(
        &self,
        result: &mcp::CallToolResult,
        output_schema: Option<&mcp::JsonObject>,
        owner: &str,
    ) -> Option<Cut> {
        let before = transform::model_text(result);
        if self.meter.fits(&before, self.meter.limit()) {
            return None;
        }
        let parts = parts_of(result, self.structured);
        let kept = self.keep(result, &parts, owner);
        let reserve = match self.meter.budget {
            Budget::Tokens(..) => NOTE_RESERVE_TOKENS,
            Budget::Bytes(_) => NOTE_RESERVE_BYTES,
        };
        let mut limit = self.meter.limit().saturating_sub(reserve);
        let mut cut = self.cut(result, &parts, output_schema, limit, &kept);
        for _ in 0..4 {
            if self.meter.fits(&transform::model_text(&cut.result), self.meter.limit()) {
                break;
            }
            limit = limit * 3 / 4;
            cut = self.cut(result, &parts, output_schema, limit, &kept);
        }
        cut.before = before;
        Some(cut)
    }

    /// Keeps the whole result for `owner`, if spilling is on and it fits the store.
    fn keep(&self, result: &mcp::CallToolResult, parts: &[Part], owner: &str) -> Kept {
        let Some(store) = &self.spill else { return Kept::Off };
        let (text, starts) = document_of(result, parts);
        let document = Document::new(text);
        let lines: Vec<usize> = starts.iter().map(|s| document.line_at(*s)).collect();
        let total = document.lines();
        match store.put(owner, document) {
            Ok(handle) => Kept::Yes { handle, part_lines: lines, total, ttl: store.limits().ttl },
            Err(e) => Kept::TooLarge(e.to_string()),
        }
    }

    fn cut(
        &self,
        result: &mcp::CallToolResult,
        parts: &[Part],
        output_schema: Option<&mcp::JsonObject>,
        limit: usize,
        kept: &Kept,
    ) -> Cut {
        let mut out = result.clone();
        let costs: Vec<Option<usize>> =
            parts.iter().map(|p| self.meter.cost_up_to(&p.text, limit)).collect();
        let allowances = share(&costs, limit);
        let mut notes: Vec<String> = Vec::new();
        let mut omissions: Vec<Value> = Vec::new();
        let mut structured_note = None;
        let mut first_cut: Option<usize> = None;
        for (index, part) in parts.iter().enumerate() {
            let allowance = allowances[index];
            if costs[index].is_some_and(|c| c <= allowance) {
                continue;
            }
            first_cut.get_or_insert(index);
            match part.place {
                Place::Structured => {
                    let value = out.structured_content.as_ref().expect("a structured part");
                    let shrunk = self.fit_json(value, allowance, false);
                    let valid = match (&shrunk, output_schema) {
                        (Some((v, _, _)), Some(schema)) => matches_schema(schema, v),
                        (Some(_), None) => true,
                        (None, _) => false,
                    };
                    match shrunk {
                        Some((value, _, cuts)) if valid => {
                            omissions.extend(
                                cuts.iter().map(|c| json!({"part": "structuredContent", "cut": c})),
                            );
                            notes.push(format!(
                                "structuredContent was shortened ({})",
                                describe_cuts(&cuts)
                            ));
                            out.structured_content = Some(value);
                        }
                        _ => {
                            out.structured_content = None;
                            structured_note = Some(
                                "structuredContent was left out: shortened, it would no longer \
                                 match the tool's output schema"
                                    .to_owned(),
                            );
                        }
                    }
                }
                Place::Block(block) => {
                    let text = part.text.as_str();
                    if let Some(value) = part.json.as_ref()
                        && let Some((_, serialized, cuts)) =
                            self.fit_json(value, allowance, text.contains('\n'))
                    {
                        omissions.extend(cuts.iter().map(|c| json!({"part": block, "cut": c})));
                        notes.push(format!(
                            "content[{block}] (JSON) was shortened ({})",
                            describe_cuts(&cuts)
                        ));
                        set_text(&mut out.content[block], serialized);
                        continue;
                    }
                    let (head_end, tail_start) = self.cut_points(text, allowance);
                    if head_end >= tail_start {
                        continue;
                    }
                    let left_out = &text[head_end..tail_start];
                    let lines = left_out.matches('\n').count().max(1);
                    let line = kept.line_after(index, head_end, parts);
                    omissions.push(json!({"part": block, "lines": lines, "bytes": left_out.len()}));
                    let note = format!(
                        "[toolgate: {lines} lines ({}) left out here. {}]",
                        size_in_words(left_out.len()),
                        kept.how_to_read(line)
                    );
                    let mut shortened =
                        String::with_capacity(head_end + note.len() + text.len() - tail_start + 2);
                    shortened.push_str(&text[..head_end]);
                    if !shortened.is_empty() && !shortened.ends_with('\n') {
                        shortened.push('\n');
                    }
                    shortened.push_str(&note);
                    if tail_start < text.len() {
                        shortened.push('\n');
                        shortened.push_str(&text[tail_start..]);
                    }
                    set_text(&mut out.content[block], shortened);
                }
            }
        }
        if self.structured == Structured::Drop && out.structured_content.is_some() {
            out.structured_content = None;
            structured_note = Some("structuredContent was left out".to_owned());
        }
        if self.media == Media::Note {
            for block in &mut out.content {
                if let Some(note) = media_note(block) {
                    *block = mcp::ContentBlock::text(note);
                }
            }
        }
        notes.extend(structured_note);
        if !notes.is_empty() {
            let line = first_cut.map_or(0, |index| kept.part_line(index, parts));
            out.content.push(mcp::ContentBlock::text(format!(
                "[toolgate: this result was shortened to fit {} {}: {}. {}]",
                self.meter.limit(),
                self.meter.unit(),
                notes.join("; "),
                kept.how_to_read(line)
            )));
        }
        let mut meta = out.meta.take().unwrap_or_default();
        let mut record = json!({
            "budget": self.meter.limit(),
            "unit": self.meter.unit(),
            "omitted": omissions,
        });
        if let Kept::Yes { handle, .. } = kept {
            record["handle"] = json!(handle);
        }
        meta.0.insert(META_KEY.to_owned(), record.clone());
        out.meta = Some(meta);
        Cut { result: out, record, before: String::new() }
    }

    /// Where to cut `text` to keep its head and tail within `allowance`: the end of the head
    /// and the start of the tail, at line boundaries when there are any.
    fn cut_points(&self, text: &str, allowance: usize) -> (usize, usize) {
        let head_budget = (allowance as f64 * self.head) as usize;
        let tail_budget = allowance.saturating_sub(head_budget);
        let mut head_end = self.meter.prefix(text, head_budget);
        if let Some(newline) = text[..head_end].rfind('\n') {
            head_end = newline + 1;
        }
        let mut tail_start = text.len();
        let mut spent = 0;
        // Whole lines from the end, while they fit.
        while tail_start > head_end {
            let region = &text[head_end..tail_start];
            let trimmed = region.strip_suffix('\n').unwrap_or(region);
            let start = head_end + trimmed.rfind('\n').map_or(0, |at| at + 1);
            match self.meter.cost_up_to(&text[start..tail_start], tail_budget - spent) {
                Some(cost) => {
                    spent += cost;
                    tail_start = start;
                }
                None => break,
            }
        }
        (head_end, tail_start.max(head_end))
    }

    /// `value` shortened to within `allowance`, as JSON text (pretty or compact), and the
    /// cuts; `None` if no shortening fits.
    fn fit_json(
        &self,
        value: &Value,
        allowance: usize,
        pretty: bool,
    ) -> Option<(Value, String, Vec<json::Omission>)> {
        let serialize = |v: &Value| {
            if pretty { serde_json::to_string_pretty(v).unwrap_or_default() } else { v.to_string() }
        };
        // Aim in bytes of compact JSON: first at three bytes a token (JSON is mostly two to
        // four), then at what the last try cost, keeping the largest try that fits. Each try
        // costs about its own size, however large the value (`json::size_up_to`).
        let mut target = match self.meter.budget {
            Budget::Tokens(..) => allowance * 3,
            Budget::Bytes(_) => allowance,
        };
        let mut best: Option<(Value, String, Vec<json::Omission>)> = None;
        let mut best_cost = 0;
        for _ in 0..6 {
            let (shrunk, cuts) = json::shrink(value, target);
            let text = serialize(&shrunk);
            let cost = match self.meter.budget {
                Budget::Tokens(_, encoding) => encoding.count(&text),
                Budget::Bytes(_) => text.len(),
            };
            if cost <= allowance && cost >= best_cost {
                best_cost = cost;
                best = Some((shrunk, text, cuts));
            }
            if cost <= allowance && cost * 10 >= allowance * 9 {
                break;
            }
            let next = (target as f64 * allowance as f64 * 0.95 / cost.max(1) as f64) as usize;
            if next == target {
                break;
            }
            target = next;
        }
        best
    }
}

/// A cut result, with what was done.
#[derive(Debug)]
pub struct Cut {
    /// The result within the budget.
    pub result: mcp::CallToolResult,
    /// What `_meta["io.toolgate/truncated"]` says.
    pub record: Value,
    /// The text of the result before (see [`transform::model_text`]).
    pub before: String,
}

/// Whether and where the whole result was kept.
enum Kept {
    Off,
    TooLarge(String),
    Yes { handle: String, part_lines: Vec<usize>, total: usize, ttl: Duration },
}

impl Kept {
    /// The line of the kept document just after byte `offset` of part `index`.
    fn line_after(&self, index: usize, offset: usize, parts: &[Part]) -> usize {
        match self {
            Kept::Yes { part_lines, .. } => {
                let start = part_lines.get(parts[index].document_part).copied().unwrap_or(0);
                let head = &parts[index].text[..offset];
                let lines = Document::new(head.to_owned()).lines();
                start + if head.is_empty() || head.ends_with('\n') { lines } else { lines - 1 }
            }
            _ => 0,
        }
    }

    /// Where part `index` starts in the kept document.
    fn part_line(&self, index: usize, parts: &[Part]) -> usize {
        match self {
            Kept::Yes { part_lines, .. } => {
                part_lines.get(parts[index].document_part).copied().unwrap_or(0)
            }
            _ => 0,
        }
    }

    fn how_to_read(&self, line: usize) -> String {
        match self {
            Kept::Yes { handle, total, ttl, .. } => format!(
                "The whole result ({total} lines) is kept for {}: call toolgate__read_result \
                 with {{\"handle\": \"{handle}\", \"offset\": {line}}} to read it from there",
                duration::format(*ttl)
            ),
            Kept::TooLarge(why) => {
                format!("The whole result was not kept ({why}); ask for less to see the rest")
            }
            Kept::Off => "Ask for less (a narrower query or range) to see the rest".to_owned(),
        }
    }
}

/// Where a part sits in the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// `content[i]` (text, or an embedded resource's text).
    Block(usize),
    Structured,
}

/// A part of a result that costs tokens.
struct Part {
    place: Place,
    text: String,
    /// Its value, when it is a JSON object or array.
    json: Option<Value>,
    /// Which part of the kept document it is.
    document_part: usize,
}

/// The parts of `result` the budget is shared between.
fn parts_of(result: &mcp::CallToolResult, structured: Structured) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut document_part = 0;
    for (index, block) in result.content.iter().enumerate() {
        let text = match block {
            mcp::ContentBlock::Text(t) => Some(t.text.clone()),
            mcp::ContentBlock::Resource(r) => match &r.resource {
                mcp::ResourceContents::TextResourceContents { text, .. } => Some(text.clone()),
                _ => None,
            },
            _ => None,
        };
        if let Some(text) = text {
            let json = json_container(&text);
            parts.push(Part { place: Place::Block(index), text, json, document_part });
        }
        document_part += 1;
    }
    if let Some(value) = &result.structured_content
        && structured == Structured::Shorten
    {
        parts.push(Part {
            place: Place::Structured,
            text: value.to_string(),
            json: Some(value.clone()),
            document_part,
        });
    }
    parts
}

/// `text` parsed, when it is a JSON object or array.
fn json_container(text: &str) -> Option<Value> {
    let trimmed = text.trim_start();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return None;
    }
    serde_json::from_str::<Value>(text).ok().filter(|v| v.is_object() || v.is_array())
}

/// Each part's allowance: parts that cost less than an equal share keep what they cost, the
/// others share the rest equally. `None` costs more than `limit`.
fn share(costs: &[Option<usize>], limit: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..costs.len()).collect();
    order.sort_by_key(|i| costs[*i].unwrap_or(usize::MAX));
    let mut allowances = vec![0; costs.len()];
    let mut left = limit;
    for (rank, index) in order.iter().enumerate() {
        let share = left / (costs.len() - rank);
        let allowance = costs[*index].map_or(share, |c| c.min(share));
        allowances[*index] = allowance;
        left -= allowance;
    }
    allowances
}

/// The kept document of `result`: each block on its own lines (JSON pretty-printed, media as a
/// line saying what they were), then `structuredContent` pretty-printed unless a text block
/// already holds the same JSON, or the same text as one of its values; and where each content block starts in it (then
/// `structuredContent`'s start).
fn document_of(result: &mcp::CallToolResult, parts: &[Part]) -> (String, Vec<usize>) {
    let mut text = String::new();
    let mut starts = Vec::new();
    let mut twin = false;
    let parsed = |index: usize| {
        parts.iter().find(|p| p.place == Place::Block(index)).and_then(|p| p.json.as_ref())
    };
    for (index, block) in result.content.iter().enumerate() {
        if !text.is_empty() {
            text.push('\n');
        }
        starts.push(text.len());
        match block {
            mcp::ContentBlock::Text(t) => match parsed(index) {
                Some(value) => {
                    twin |= result.structured_content.as_ref() == Some(value);
                    text.push_str(&serde_json::to_string_pretty(value).unwrap_or_default());
                }
                None => text.push_str(&t.text),
            },
            mcp::ContentBlock::Resource(r) => match &r.resource {
                mcp::ResourceContents::TextResourceContents { text: t, .. } => text.push_str(t),
                mcp::ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => {
                    text.push_str(&format!(
                        "[embedded resource {uri} ({}, {})]",
                        mime_type.as_deref().unwrap_or("binary"),
                        size_in_words(blob.len() / 4 * 3)
                    ));
                }
                _ => {}
            },
            other => text.push_str(&media_note(other).unwrap_or_else(|| match other {
                mcp::ContentBlock::ResourceLink(link) => format!("[resource link {}]", link.uri),
                _ => String::new(),
            })),
        }
    }
    // `structuredContent` that only wraps the text (`{"content": "<the text>"}`) is the same
    // thing again.
    twin |= result.structured_content.as_ref().and_then(Value::as_object).is_some_and(|map| {
        map.values().any(|v| {
            v.as_str().is_some_and(|s| {
                !s.is_empty()
                    && result
                        .content
                        .iter()
                        .any(|b| matches!(b, mcp::ContentBlock::Text(t) if t.text == s))
            })
        })
    });
    match &result.structured_content {
        Some(value) if !twin => {
            if !text.is_empty() {
                text.push('\n');
            }
            starts.push(text.len());
            text.push_str(&serde_json::to_string_pretty(value).unwrap_or_default());
        }
        _ => starts.push(0),
    }
    (text, starts)
}

/// A line saying what an image or audio block was.
fn media_note(block: &mcp::ContentBlock) -> Option<String> {
    let (what, mime, data) = match block {
        mcp::ContentBlock::Image(image) => ("image", &image.mime_type, &image.data),
        mcp::ContentBlock::Audio(audio) => ("audio", &audio.mime_type, &audio.data),
        _ => return None,
    };
    Some(format!(
        "[toolgate: an {what} ({mime}, {}) was left out here]",
        size_in_words(data.len() / 4 * 3)
    ))
}

fn set_text(block: &mut mcp::ContentBlock, text: String) {
    match block {
        mcp::ContentBlock::Text(t) => t.text = text,
        mcp::ContentBlock::Resource(r) => {
            if let mcp::ResourceContents::TextResourceContents { text: t, .. } = &mut r.resource {
                *t = text;
            }
        }
        _ => {}
    }
}

fn describe_cuts(cuts: &[json::Omission]) -> String {
    let mut words: Vec<String> = cuts.iter().take(5).map(json::Omission::describe).collect();
    if cuts.len() > 5 {
        words.push(format!("and {} more cuts", cuts.len() - 5));
    }
    if words.is_empty() { "nothing cut".to_owned() } else { words.join(", ") }
}

/// Whether `value` matches `schema` (a schema that does not compile counts as a match: the
/// tool's own problem, and `structuredContent` is not made worse by shortening it).
fn matches_schema(schema: &mcp::JsonObject, value: &Value) -> bool {
    let schema = Value::Object(schema.clone());
    match jsonschema::options().should_validate_formats(false).build(&schema) {
        Ok(validator) => validator.is_valid(value),
        Err(_) => true,
    }
}

/// Whose kept results a context may read: its principal and session, or for a client without
/// a session (a 2026-07-28 request) the address it connected from, so that anonymous strangers
/// (all `anonymous:anonymous`) neither read each other's results nor share one quota.
fn owner(ctx: &CallContext) -> String {
    match (&ctx.session, ctx.client_address) {
        (Some(session), _) => format!("{}\u{0}session\u{0}{session}", ctx.principal),
        (None, Some(address)) => format!("{}\u{0}address\u{0}{address}", ctx.principal),
        (None, None) => ctx.principal.to_string(),
    }
}

impl Interceptor for Truncate {
    fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    fn intercept<'a>(
        &'a self,
        _event: InterceptionEvent,
        _phase: Phase,
        message: &'a Message,
        ctx: &'a mut CallContext,
    ) -> BoxFuture<'a, Result<Outcome, InterceptError>> {
        Box::pin(async move {
            let Message::ToolResult(result) = message else { return Ok(Outcome::Continue) };
            let target = ctx.target.as_ref();
            if target.is_some_and(|t| t.server == OWN_SERVER) {
                return Ok(Outcome::Continue);
            }
            let schema = target.and_then(|t| t.tool.as_ref()).and_then(|t| t.output_schema.clone());
            let owner = owner(ctx);
            let Some(mut cut) = self.shorten(result, schema.as_deref(), &owner) else {
                return Ok(Outcome::Continue);
            };
            if let (Some(shared), Some(store)) = (&self.shared, &self.spill) {
                shared.share(store, &owner, &mut cut).await;
            }
            let after = transform::model_text(&cut.result);
            let mut details = vec![
                ("budget", json!(self.meter.limit())),
                ("unit", json!(self.meter.unit())),
                ("omitted", cut.record["omitted"].clone()),
            ];
            if let Some(handle) = cut.record.get("handle") {
                details.push(("handle", handle.clone()));
            }
            Applied {
                interceptor: &self.descriptor.name,
                kind: KIND,
                before: &cut.before,
                after: &after,
                encoding: self.meter.encoding(),
                details,
            }
            .publish(&self.events, ctx);
            Ok(Outcome::Rewrite(Message::ToolResult(cut.result)))
        })
    }

    fn own_tools(&self) -> Vec<mcp::Tool> {
        if self.spill.is_some() { vec![read::definition()] } else { Vec::new() }
    }

    fn call_own_tool<'a>(
        &'a self,
        name: &'a str,
        arguments: Option<mcp::JsonObject>,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<mcp::CallToolResult, InterceptError>> {
        Box::pin(async move {
            if name != read::NAME {
                return Err(InterceptError(format!("{KIND} serves no tool named {name}")));
            }
            let (owner, arguments) = (owner(ctx), arguments.as_ref());
            Ok(match &self.shared {
                None => read::page(&self.stores, &owner, arguments, &self.page),
                Some(shared) => {
                    let store = self.spill.as_deref();
                    shared.page(&self.stores, store, &owner, arguments, &self.page).await
                }
            })
        })
    }
}

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;
