//! `truncate`'s options: the budget (`max_tokens` or `max_bytes`, `encoding`), the page of
//! `toolgate__read_result` (`page_tokens`, `page_bytes`), how a result is cut (`head`,
//! `structured`, `media`) and what is kept of it (`spill`, `spill_ttl`, `spill_max_bytes`,
//! `spill_caller_bytes`), each problem reported with its path.

use std::time::Duration;

use toolgate_llm::tokens::Encoding;

use super::meter::Budget;
use super::spill::SpillLimits;
use crate::options::Options;

/// Every option `truncate` takes.
const KEYS: &[&str] = &[
    "max_tokens",
    "max_bytes",
    "encoding",
    "head",
    "structured",
    "media",
    "spill",
    "spill_ttl",
    "spill_max_bytes",
    "spill_caller_bytes",
    "page_tokens",
    "page_bytes",
];

/// The smallest budgets taken: anything smaller leaves no room for the notes.
const LEAST_TOKENS: usize = 500;
const LEAST_BYTES: usize = 2000;

/// What happens to `structuredContent` when a result is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Structured {
    Shorten,
    Keep,
    Drop,
}

/// What happens to images and audio.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Media {
    Keep,
    Note,
}

/// What an entry asks for.
#[derive(Debug)]
pub(super) struct Settings {
    pub(super) budget: Budget,
    /// The page of `toolgate__read_result`, in the budget's unit; `None`: the budget.
    pub(super) page: Option<usize>,
    /// The share of the budget kept from the beginning of a cut text.
    pub(super) head: f64,
    pub(super) structured: Structured,
    pub(super) media: Media,
    /// Whether whole results are kept for `toolgate__read_result`.
    pub(super) spill: bool,
    pub(super) limits: SpillLimits,
}

/// Reads the options into `options`' errors and the settings (defaults where one is wrong).
pub(super) fn read(options: &mut Options<'_>) -> Settings {
    options.only(KEYS);
    let encoding = match options.string("encoding") {
        Some(name) => match name.parse::<Encoding>() {
            Ok(encoding) => encoding,
            Err(e) => {
                let path = options.at("encoding");
                options.error(&path, e.to_string());
                Encoding::default()
            }
        },
        None => Encoding::default(),
    };
    let tokens = options.integer("max_tokens", LEAST_TOKENS);
    let bytes = options.integer("max_bytes", LEAST_BYTES);
    let budget = match (tokens, bytes) {
        (Some(_), Some(_)) => {
            let path = options.at("max_bytes");
            options.error(&path, "give either max_tokens or max_bytes, not both");
            Budget::Tokens(8000, encoding)
        }
        (_, Some(n)) => Budget::Bytes(n),
        (Some(n), None) => Budget::Tokens(n, encoding),
        (None, None) => Budget::Tokens(8000, encoding),
    };
    if matches!(budget, Budget::Bytes(_)) && options.get("encoding").is_some() {
        let path = options.at("encoding");
        options.error(&path, "counts tokens, but the budget is max_bytes");
    }
    let page_tokens = options.integer("page_tokens", 100);
    let page_bytes = options.integer("page_bytes", 400);
    let page = match (budget, page_tokens, page_bytes) {
        (Budget::Tokens(..), Some(n), None) => Some(n),
        (Budget::Bytes(_), None, Some(n)) => Some(n),
        (_, None, None) => None,
        (Budget::Tokens(..), _, Some(_)) => {
            let path = options.at("page_bytes");
            options.error(&path, "the budget is in tokens: use page_tokens");
            None
        }
        (Budget::Bytes(_), Some(_), _) => {
            let path = options.at("page_tokens");
            options.error(&path, "the budget is in bytes: use page_bytes");
            None
        }
    };
    let head = match options.get("head") {
        None => 0.7,
        Some(value) => match value.as_f64().filter(|h| *h > 0.0 && *h < 1.0) {
            Some(h) => h,
            None => {
                let path = options.at("head");
                options.error(&path, format!("expected a number between 0 and 1, found {value}"));
                0.7
            }
        },
    };
    let structured = match options.string("structured") {
        None | Some("shorten") => Structured::Shorten,
        Some("keep") => Structured::Keep,
        Some("drop") => Structured::Drop,
        Some(other) => {
            let path = options.at("structured");
            options.error(
                &path,
                format!("expected \"shorten\", \"keep\" or \"drop\", found {other:?}"),
            );
            Structured::Shorten
        }
    };
    let media = match options.string("media") {
        None | Some("keep") => Media::Keep,
        Some("note") => Media::Note,
        Some(other) => {
            let path = options.at("media");
            options.error(&path, format!("expected \"keep\" or \"note\", found {other:?}"));
            Media::Keep
        }
    };
    let spill = options.boolean("spill", true);
    let mut limits = SpillLimits::default();
    if let Some(ttl) = options.duration("spill_ttl", Duration::from_secs(1)) {
        limits.ttl = ttl;
    }
    if let Some(n) = options.integer("spill_max_bytes", 1) {
        limits.max_bytes = n;
    }
    if let Some(n) = options.integer("spill_caller_bytes", 1) {
        limits.caller_bytes = n;
    }
    Settings { budget, page, head, structured, media, spill, limits }
}
