//! One text in; out, the form of it that costs the fewest tokens, or nothing: TOON when it
//! costs fewer tokens than compact JSON and the text as sent, and reads back as the same
//! JSON; else compact JSON, when that costs fewer tokens than the text as sent.

use serde_json::Value;
use toolgate_llm::tokens::Encoding;

use super::strict::{self, Inexact};

/// What a JSON text becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// TOON.
    Toon,
    /// The same JSON, compact.
    Compact,
}

impl Form {
    /// Its name in `_meta` and events.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Form::Toon => "toon",
            Form::Compact => "json",
        }
    }
}

/// A JSON text said in fewer tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Converted {
    pub(crate) form: Form,
    /// The new text.
    pub(crate) text: String,
    /// Its tokens.
    pub(crate) tokens: usize,
    /// The tokens of the text as sent.
    pub(crate) sent_tokens: usize,
    /// What the text becomes when TOON is not wanted after all (the note would cost more
    /// than TOON saves): compact JSON if that is shorter than the text as sent.
    pub(crate) fallback: Option<Box<Converted>>,
}

/// Why a text stays as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kept {
    /// Not a JSON object or array, or one with a member name twice.
    NotJson,
    /// Fewer tokens than `min_tokens`.
    Small,
    /// A number the JSON parser could not hold exactly.
    InexactNumber,
    /// Neither TOON nor compact JSON costs fewer tokens than the text as sent.
    NotShorter,
}

/// Why TOON was not an option for a text (kept for the tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoToon {
    /// The encoder refused it (too deep, say).
    Unencodable,
    /// Decoding the TOON did not give the same JSON back.
    NoRoundTrip,
    /// TOON costs as many tokens as compact JSON or the text as sent, or more.
    NotShorter,
}

/// The cheapest form of `text` (see the module docs), if `text` is a JSON object or array of
/// at least `min_tokens` tokens as compact JSON; compact JSON only when `compact`.
pub(crate) fn convert(
    text: &str,
    encoding: Encoding,
    min_tokens: usize,
    compact: bool,
) -> Result<Converted, Kept> {
    let trimmed = text.trim();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return Err(Kept::NotJson);
    }
    // A text of n bytes has at most n tokens: a short one is skipped before any parsing.
    if trimmed.len() < min_tokens {
        return Err(Kept::Small);
    }
    let value = strict::parse(trimmed).map_err(|inexact| match inexact {
        Inexact::NotJson => Kept::NotJson,
        Inexact::Number => Kept::InexactNumber,
    })?;
    let compact_text = value.to_string();
    let compact_tokens = encoding.count(&compact_text);
    if compact_tokens < min_tokens {
        return Err(Kept::Small);
    }
    let sent_tokens = if text == compact_text { compact_tokens } else { encoding.count(text) };
    let fallback = (compact && compact_tokens < sent_tokens).then_some(Converted {
        form: Form::Compact,
        text: compact_text,
        tokens: compact_tokens,
        sent_tokens,
        fallback: None,
    });
    match toon(&value, encoding, compact_tokens.min(sent_tokens)) {
        Ok((text, tokens)) => Ok(Converted {
            form: Form::Toon,
            text,
            tokens,
            sent_tokens,
            fallback: fallback.map(Box::new),
        }),
        Err(_) => fallback.ok_or(Kept::NotShorter),
    }
}

/// `value` as TOON and its tokens, if that reads back as `value` and costs fewer than
/// `tokens`.
pub(crate) fn toon(
    value: &Value,
    encoding: Encoding,
    tokens: usize,
) -> Result<(String, usize), NoToon> {
    let toon = encode(value).ok_or(NoToon::Unencodable)?;
    // The encoder's output must read back as the JSON it came from, or the model would see
    // other data than the server sent.
    if !decodes_to(&toon, value) {
        return Err(NoToon::NoRoundTrip);
    }
    match encoding.count_up_to(&toon, tokens.saturating_sub(1)) {
        Some(toon_tokens) if tokens > 0 => Ok((toon, toon_tokens)),
        _ => Err(NoToon::NotShorter),
    }
}

/// `value` as TOON with the default options (comma delimiter, two-space indent).
pub(crate) fn encode(value: &Value) -> Option<String> {
    toon_format::encode(value, &toon_format::EncodeOptions::default()).ok()
}

/// Whether `toon`, decoded strictly, is `value` (see [`same`]).
pub(crate) fn decodes_to(toon: &str, value: &Value) -> bool {
    toon_format::decode::<Value>(toon, &toon_format::DecodeOptions::default())
        .is_ok_and(|decoded| same(&decoded, value))
}

/// JSON equality: objects as sets of members, arrays in order, numbers by their value (TOON
/// writes `1.0` as `1` and `-0` as `0`; `serde_json` tells an integer from a float).
pub(crate) fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                return x == y;
            }
            if let (Some(x), Some(y)) = (x.as_u64(), y.as_u64()) {
                return x == y;
            }
            // One of them is a float: an integer that is not exactly that float differs.
            match (x.as_f64(), y.as_f64()) {
                (Some(fx), Some(fy)) => fx == fy && exact_as_f64(x) && exact_as_f64(y),
                _ => false,
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// Whether `n` is exactly its `f64` (floats are; integers beyond 2^53 may not be).
fn exact_as_f64(n: &serde_json::Number) -> bool {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if n.is_f64() {
        return true;
    }
    match (n.as_i64(), n.as_u64(), n.as_f64()) {
        (Some(i), _, Some(f)) => (-TWO_63..TWO_63).contains(&f) && f as i64 == i,
        (_, Some(u), Some(f)) => (0.0..2.0 * TWO_63).contains(&f) && f as u64 == u,
        _ => false,
    }
}
