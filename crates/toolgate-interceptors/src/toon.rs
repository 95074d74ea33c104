//! `toon`: re-encodes JSON in tool results as TOON (Token-Oriented Object Notation), when
//! that costs the model fewer tokens and reads back as the same JSON; JSON that TOON does not
//! shorten is sent compact when that is shorter than what the server sent.
//!
//! ```toml
//! [[pipeline]]
//! kind = "toon"
//! servers = ["memory", "github"]   # the usual filters: which servers' and tools' results
//! tools = ["read_graph", "list_*"]
//! encoding = "o200k_base"          # o200k_base | cl100k_base (default: o200k_base)
//! min_tokens = 200                 # leave smaller JSON alone (default: 200)
//! note = true                      # tell the model what TOON is (default: true)
//! compact = true                   # else compact JSON when shorter (default: true)
//! ```
//!
//! TOON writes the JSON data model with less punctuation: objects as `key: value` lines
//! nested by indentation, arrays of scalars inline (`tags[3]: a,b,c`), and arrays of objects
//! that share their keys, with scalar values, as a table, the keys once and one row per
//! object:
//!
//! ```text
//! relations[2]{from,to,relationType}:
//!   alice,bob,knows
//!   bob,carol,knows
//! ```
//!
//! That is where it saves most (a quarter to a half of compact JSON's tokens). Objects that
//! hold lists are written one indented item each, which costs more than compact JSON though
//! less than pretty JSON; deep objects with few keys cost about what compact JSON does. So
//! each block is measured, not assumed. The encoder is the `toon-format` crate (TOON spec
//! v4.4).
//!
//! - **Hook**: `tools/call`, response phase. **Type**: mutation. **Fails open** (a failure
//!   leaves the result unchanged and publishes `interceptor/failed`).
//! - **Per tool**: the entry's `servers` and `tools` globs say whose results it rewrites;
//!   another entry (or none) for the others. Put it before a `truncate` entry so that the
//!   budget applies to what the model reads.
//!
//! # What is rewritten
//!
//! Each text block of a result, on its own:
//!
//! | the block | what happens |
//! |---|---|
//! | a JSON object or array (whitespace around it allowed) that passes the checks below | TOON if that costs the fewest tokens; else compact JSON if that costs fewer than the text as sent; else unchanged |
//! | JSON with a member name twice in one object, or a number the parser rounds | unchanged (re-encoding would change what it says) |
//! | anything else (prose, a JSON string or number, invalid JSON, a log) | unchanged |
//!
//! The checks, in order:
//! 1. at least `min_tokens` tokens as compact JSON (smaller results gain little, and the note
//!    would cost more than it saves);
//! 2. every member name once per object (a JSON parser keeps one of two, so the model would
//!    lose the other), and every number exactly the number the parser read (a number with
//!    more digits than a 64-bit float holds, such as `12345678901234567890123`, would reach
//!    the model with other digits);
//! 3. for TOON: decoded again by `toon-format`'s strict decoder, it is the same JSON (the
//!    same members, items in order, equal strings, numbers of equal value: TOON writes `1.0`
//!    as `1` and `-0` as `0`). This runs on every conversion, not only in the tests, so that
//!    an encoder bug can never change what the model reads; it costs about an eighth of the
//!    conversion;
//! 4. for TOON: fewer tokens than both compact JSON and the text as sent.
//!
//! Then, over the whole result: the TOON blocks plus the note must cost fewer tokens than
//! those blocks would otherwise (compact JSON, or as sent); if not, they fall back to that.
//! Every block that changes costs fewer tokens than it did, so a rewritten result never costs
//! more than the one the upstream sent.
//!
//! Everything else is left as it is:
//! - **`structuredContent`** stays JSON, untouched: it must remain a JSON value valid
//!   against the tool's `outputSchema`, and clients that read it parse it as JSON. The spec
//!   asks a server that returns it to put the same JSON in a text block too; that text
//!   block is what becomes TOON, so a client that shows `content` to the model shows TOON
//!   and a client that reads `structuredContent` still gets JSON. A result whose
//!   `structuredContent` has no JSON text block beside it gets none added (that would add
//!   tokens, not save them).
//! - **Other blocks** (images, audio, embedded resources, resource links) are kept as they
//!   are, in their places; in a result that mixes prose and JSON blocks only the JSON ones
//!   change.
//! - `isError`, the result's `_meta` and each block's own `_meta` keys and annotations are
//!   kept. `resources/read` results are not touched (their MIME type says JSON).
//!
//! # How the result says it
//!
//! - Each rewritten block carries `"_meta": {"io.toolgate/format": "toon"}` (or `"json"` for
//!   compact JSON), added to any `_meta` it had.
//! - With `note = true` one text block goes before the first TOON block, addressed to the
//!   model (`annotations.audience = ["assistant"]`, `"_meta": {"io.toolgate/note":
//!   "toon"}`). Its text is [`NOTE`]:
//!
//!   ```text
//!   (TOON below, JSON in fewer tokens: `key[N]{a,b}:` starts N rows of fields a,b; `key[N]: x,y` is a list; indentation nests)
//!   ```
//!
//! - `transform/applied` is published with `format` (`"toon"` when any block is TOON, else
//!   `"json"`), `blocks` (TOON blocks), `compacted` (compact JSON blocks) and the tokens
//!   before and after.
//!
//! `_meta` keys use the prefix `io.toolgate/`, as the MCP spec asks of implementations (a
//! reverse-DNS prefix; `modelcontextprotocol` and `mcp` prefixes are reserved).
//!
//! # Options
//!
//! | option | values | default | meaning |
//! |---|---|---|---|
//! | `encoding` | `"o200k_base"`, `"cl100k_base"` | `"o200k_base"` | how tokens are counted |
//! | `min_tokens` | an integer ≥ 0 | `200` | JSON blocks with fewer tokens (as compact JSON) stay as they are |
//! | `note` | `true`, `false` | `true` | whether a note tells the model what TOON is |
//! | `compact` | `true`, `false` | `true` | whether JSON that stays JSON may become compact JSON |
//!
//! # Option errors
//!
//! ```text
//! pipeline[0].encoding: unknown encoding "gpt2" (known: o200k_base, cl100k_base)
//! pipeline[0].min_tokens: expected an integer of at least 0, found -1
//! pipeline[0].note: expected true or false, found "yes"
//! pipeline[0].indent: unknown option (expected one of: encoding, min_tokens, note, compact)
//! ```
//!
//! # Cost
//!
//! Per JSON block: one parse, a check of its number literals, one TOON encode and one
//! strict decode, and token counts (compact JSON and the text as sent whole; the TOON only
//! as far as the count it must beat). `toon/…` in the interceptors bench has the numbers.
//! Results with more than 64 KiB of text are converted on the blocking pool, so that other
//! tasks on the runtime thread do not wait.

mod convert;
mod numbers;
mod strict;

use futures::future::BoxFuture;
use serde_json::Value;
use toolgate_audit::EventBus;
use toolgate_config::InterceptorConfig;
use toolgate_core::mcp;
use toolgate_intercept::{
    CallContext, Descriptor, InterceptError, InterceptionEvent, Interceptor, Message, Outcome,
    Phase,
};
use toolgate_llm::tokens::Encoding;

use crate::Services;
use crate::options::{OptionError, Options};
use crate::transform::{self, Applied};
use convert::Form;

/// The config `kind`.
pub const KIND: &str = "toon";

/// The `_meta` key saying a block's format.
pub const FORMAT_META: &str = "io.toolgate/format";

/// The `_meta` key marking the note.
pub const NOTE_META: &str = "io.toolgate/note";

/// What the model is told before the first TOON block.
pub const NOTE: &str = "(TOON below, JSON in fewer tokens: `key[N]{a,b}:` starts N rows of \
                        fields a,b; `key[N]: x,y` is a list; indentation nests)";

/// The default `min_tokens`.
pub const DEFAULT_MIN_TOKENS: usize = 200;

const OPTIONS: &[&str] = &["encoding", "min_tokens", "note", "compact"];

/// The `toon` interceptor.
#[derive(Debug)]
pub struct Toon {
    descriptor: Descriptor,
    settings: Settings,
    events: EventBus,
}

/// What a conversion needs, cheap to move to the blocking pool.
#[derive(Debug, Clone, Copy)]
struct Settings {
    encoding: Encoding,
    min_tokens: usize,
    /// Whether there is a note.
    note: bool,
    /// Whether JSON that stays JSON may become compact JSON.
    compact: bool,
}

/// A result rewritten, and how many blocks became TOON.
#[derive(Debug, Clone, PartialEq)]
pub struct Rewritten {
    /// The result as the caller gets it.
    pub result: mcp::CallToolResult,
    /// How many text blocks are TOON now.
    pub toon_blocks: usize,
    /// How many are compact JSON now.
    pub compact_blocks: usize,
    /// The tokens of those blocks as sent, and of what replaced them (the note included).
    pub tokens_before: usize,
    pub tokens_after: usize,
}

/// The blocks that become TOON: (index in `content`, conversion).
type Conversions = Vec<(usize, convert::Converted)>;

// === impl Toon ===

impl Toon {
    /// Builds it from its `[[pipeline]]` entry.
    pub fn from_config(
        entry: &InterceptorConfig,
        services: &Services,
    ) -> Result<Toon, Vec<OptionError>> {
        let mut options = Options::new(entry.path.clone(), &entry.options);
        options.only(OPTIONS);
        let encoding = match options.string("encoding") {
            None => Encoding::default(),
            Some(name) => {
                name.parse().unwrap_or_else(|error: toolgate_llm::tokens::UnknownEncoding| {
                    let path = options.at("encoding");
                    options.error(&path, error.to_string());
                    Encoding::default()
                })
            }
        };
        let min_tokens = options.integer("min_tokens", 0).unwrap_or(DEFAULT_MIN_TOKENS);
        let note = options.boolean("note", true);
        let compact = options.boolean("compact", true);
        let descriptor = transform::descriptor(KIND, &[InterceptionEvent::ToolsCall]);
        let descriptor = options.configure(descriptor, entry);
        options.finish(descriptor, |descriptor| {
            // The first count builds the encoding's tables (about a second): not on a call,
            // nor while the configuration loads (the note's count waits for the first call).
            std::thread::spawn(move || encoding.warm_up());
            Toon {
                descriptor,
                settings: Settings { encoding, min_tokens, note, compact },
                events: services.events.clone(),
            }
        })
    }

    /// `result` with its JSON text blocks in TOON, or `None` when no block gains (see the
    /// module docs).
    pub fn rewrite(&self, result: &mcp::CallToolResult) -> Option<Rewritten> {
        let texts = result.content.iter().enumerate().filter_map(|(index, block)| match block {
            mcp::ContentBlock::Text(text) => Some((index, text.text.as_str())),
            _ => None,
        });
        let conversions = self.settings.convert(texts)?;
        Some(self.settings.apply(result, conversions))
    }

    /// [`Toon::rewrite`], on the blocking pool when the result's text is large, so that the
    /// conversion (about 17 ms for 1000 rows) does not hold up the other tasks of the runtime
    /// thread.
    async fn rewrite_off_thread(
        &self,
        result: &mcp::CallToolResult,
    ) -> Result<Option<Rewritten>, InterceptError> {
        let texts: Vec<(usize, &str)> = result
            .content
            .iter()
            .enumerate()
            .filter_map(|(index, block)| match block {
                mcp::ContentBlock::Text(text) => Some((index, text.text.as_str())),
                _ => None,
            })
            .collect();
        let bytes: usize = texts.iter().map(|(_, text)| text.len()).sum();
        let runtime = tokio::runtime::Handle::try_current();
        let conversions = match runtime {
            Ok(runtime) if bytes > transform::COUNT_INLINE => {
                let settings = self.settings;
                let owned: Vec<(usize, String)> =
                    texts.into_iter().map(|(index, text)| (index, text.to_owned())).collect();
                runtime
                    .spawn_blocking(move || {
                        settings.convert(owned.iter().map(|(index, text)| (*index, text.as_str())))
                    })
                    .await
                    .map_err(|error| {
                        InterceptError(format!("the conversion to TOON did not finish: {error}"))
                    })?
            }
            _ => self.settings.convert(texts.into_iter()),
        };
        Ok(conversions.map(|conversions| self.settings.apply(result, conversions)))
    }
}

// === impl Settings ===

impl Settings {
    /// The blocks of `texts` (index, text) that change, or `None` when none does. TOON
    /// blocks stay TOON only if, with the note, they cost fewer tokens than they would
    /// otherwise (compact JSON, or the text as sent); else they fall back.
    fn convert<'t>(&self, texts: impl Iterator<Item = (usize, &'t str)>) -> Option<Conversions> {
        let mut conversions: Conversions = texts
            .filter_map(|(index, text)| {
                convert::convert(text, self.encoding, self.min_tokens, self.compact)
                    .ok()
                    .map(|c| (index, c))
            })
            .collect();
        let toon = || conversions.iter().map(|(_, c)| c).filter(|c| c.form == Form::Toon);
        let with_toon = toon().map(|c| c.tokens).sum::<usize>() + self.note_tokens();
        let without: usize =
            toon().map(|c| c.fallback.as_ref().map_or(c.sent_tokens, |f| f.tokens)).sum();
        if toon().next().is_some() && with_toon >= without {
            conversions = conversions
                .into_iter()
                .filter_map(|(index, c)| match c.form {
                    Form::Toon => c.fallback.map(|fallback| (index, *fallback)),
                    Form::Compact => Some((index, c)),
                })
                .collect();
        }
        (!conversions.is_empty()).then_some(conversions)
    }

    /// The note's tokens (0 without a note): a short text, counted when needed.
    fn note_tokens(&self) -> usize {
        if self.note { self.encoding.count(NOTE) } else { 0 }
    }

    /// `result` with `conversions` in place, each marked with its format, and the note
    /// before the first TOON block.
    fn apply(&self, result: &mcp::CallToolResult, conversions: Conversions) -> Rewritten {
        let count = |form| conversions.iter().filter(|(_, c)| c.form == form).count();
        let (toon_blocks, compact_blocks) = (count(Form::Toon), count(Form::Compact));
        let note = (self.note && toon_blocks > 0).then(|| self.note_tokens());
        let tokens_before = conversions.iter().map(|(_, c)| c.sent_tokens).sum();
        let tokens_after =
            conversions.iter().map(|(_, c)| c.tokens).sum::<usize>() + note.unwrap_or(0);
        let mut noted = note.is_none();
        let mut conversions = conversions.into_iter().peekable();
        let mut content = Vec::with_capacity(result.content.len() + 1);
        for (index, block) in result.content.iter().enumerate() {
            let converted = conversions.next_if(|(at, _)| *at == index);
            match (block, converted) {
                (mcp::ContentBlock::Text(text), Some((_, done))) => {
                    if done.form == Form::Toon && !noted {
                        content.push(note_block());
                        noted = true;
                    }
                    // Everything but the text, which is replaced (not copied first).
                    let mut meta = text.meta.clone().unwrap_or_default();
                    meta.0.insert(FORMAT_META.to_owned(), Value::from(done.form.name()));
                    let mut replaced = mcp::TextContent::new(done.text).with_meta(meta);
                    replaced.annotations = text.annotations.clone();
                    content.push(mcp::ContentBlock::Text(replaced));
                }
                (block, _) => content.push(block.clone()),
            }
        }
        let mut rewritten = mcp::CallToolResult::success(content);
        rewritten.result_type = result.result_type.clone();
        rewritten.structured_content = result.structured_content.clone();
        rewritten.is_error = result.is_error;
        rewritten.meta = result.meta.clone();
        Rewritten { result: rewritten, toon_blocks, compact_blocks, tokens_before, tokens_after }
    }
}

/// The note, for the model only.
fn note_block() -> mcp::ContentBlock {
    let mut meta = mcp::MetaObject::new();
    meta.0.insert(NOTE_META.to_owned(), Value::from("toon"));
    mcp::ContentBlock::Text(
        mcp::TextContent::new(NOTE).with_meta(meta).with_annotations(
            mcp::Annotations::default().with_audience(vec![mcp::Role::Assistant]),
        ),
    )
}

impl Interceptor for Toon {
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
            let Some(rewritten) = self.rewrite_off_thread(result).await? else {
                return Ok(Outcome::Continue);
            };
            if self.events.wants(transform::APPLIED) {
                Applied {
                    interceptor: &self.descriptor.name,
                    kind: KIND,
                    before: &transform::model_text(result),
                    after: &transform::model_text(&rewritten.result),
                    encoding: self.settings.encoding,
                    details: vec![
                        (
                            "format",
                            Value::from(if rewritten.toon_blocks > 0 { "toon" } else { "json" }),
                        ),
                        ("blocks", Value::from(rewritten.toon_blocks)),
                        ("compacted", Value::from(rewritten.compact_blocks)),
                    ],
                }
                .publish(&self.events, ctx);
            }
            Ok(Outcome::Rewrite(Message::ToolResult(rewritten.result)))
        })
    }
}

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;
