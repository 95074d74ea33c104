//! What model tokens cost, as an estimate: a small table of list prices (USD per million
//! tokens) for a few OpenAI, Anthropic and DeepSeek models, for the agent's sessions, `scan
//! --judge` and the `/v1/responses` endpoint's metrics.
//!
//! **An estimate, dated [`PRICES_AS_OF`].** The prices are the providers' published list prices
//! for standard (not batch, not priority) requests as of that month; they change, and what a
//! person pays also depends on discounts, regions and tiers this table knows nothing of.
//! Anthropic's cache writes (billed above the input price) are not reported in
//! [`Usage`] and are priced as plain input. A model not in the table has no cost (`None`), never
//! a guessed one.
//!
//! A model matches an entry by its exact name or by the name followed by a dated snapshot
//! suffix (`gpt-4o-2024-08-06`, `claude-sonnet-4-20250514`) or `-latest`; `gpt-5-pro` does not
//! match `gpt-5`. A `vendor/` prefix (`openai/gpt-4o`, as routers name models) is ignored.

use crate::chat::Usage;

/// The month the prices below were taken from the providers' pricing pages.
pub const PRICES_AS_OF: &str = "2025-10";

/// One model's list price, USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    /// Input tokens not read from the cache.
    pub input: f64,
    /// Input tokens read from the provider's cache.
    pub cached_input: f64,
    /// Output tokens (reasoning included).
    pub output: f64,
}

const fn price(input: f64, cached_input: f64, output: f64) -> Price {
    Price { input, cached_input, output }
}

/// The table: model name, price. Names are matched as described in the module doc.
const PRICES: &[(&str, Price)] = &[
    // OpenAI.
    ("gpt-5", price(1.25, 0.125, 10.0)),
    ("gpt-5-mini", price(0.25, 0.025, 2.0)),
    ("gpt-5-nano", price(0.05, 0.005, 0.40)),
    ("gpt-4.1", price(2.0, 0.50, 8.0)),
    ("gpt-4.1-mini", price(0.40, 0.10, 1.60)),
    ("gpt-4.1-nano", price(0.10, 0.025, 0.40)),
    ("gpt-4o", price(2.50, 1.25, 10.0)),
    ("gpt-4o-mini", price(0.15, 0.075, 0.60)),
    ("o3", price(2.0, 0.50, 8.0)),
    ("o4-mini", price(1.10, 0.275, 4.40)),
    // Anthropic (cache reads are a tenth of the input price).
    ("claude-opus-4-1", price(15.0, 1.50, 75.0)),
    ("claude-opus-4-0", price(15.0, 1.50, 75.0)),
    ("claude-opus-4", price(15.0, 1.50, 75.0)),
    ("claude-sonnet-4-5", price(3.0, 0.30, 15.0)),
    ("claude-sonnet-4-0", price(3.0, 0.30, 15.0)),
    ("claude-sonnet-4", price(3.0, 0.30, 15.0)),
    ("claude-3-7-sonnet", price(3.0, 0.30, 15.0)),
    ("claude-haiku-4-5", price(1.0, 0.10, 5.0)),
    ("claude-3-5-haiku", price(0.80, 0.08, 4.0)),
    // DeepSeek (V3.2 prices, the same for both names; "cached" is their cache hit).
    ("deepseek-chat", price(0.28, 0.028, 0.42)),
    ("deepseek-reasoner", price(0.28, 0.028, 0.42)),
];

/// The list price of `model`, if the table knows it.
pub fn price_of(model: &str) -> Option<Price> {
    let model = model.rsplit_once('/').map_or(model, |(_, name)| name);
    PRICES
        .iter()
        .find(|(name, _)| {
            model == *name || model.strip_prefix(name).is_some_and(is_snapshot_suffix)
        })
        .map(|(_, price)| *price)
}

/// `-latest`, `-YYYY-MM-DD` or `-YYYYMMDD`.
fn is_snapshot_suffix(rest: &str) -> bool {
    let Some(rest) = rest.strip_prefix('-') else {
        return false;
    };
    if rest == "latest" {
        return true;
    }
    let digits = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    match rest.len() {
        8 => digits(rest),
        10 => {
            let parts: Vec<&str> = rest.split('-').collect();
            matches!(parts.as_slice(), [y, m, d] if y.len() == 4 && m.len() == 2 && d.len() == 2
                && digits(y) && digits(m) && digits(d))
        }
        _ => false,
    }
}

/// The estimated cost in USD of `usage` on `model`; `None` when the model is not in the table.
pub fn cost_usd(model: &str, usage: &Usage) -> Option<f64> {
    let price = price_of(model)?;
    let cached = usage.cached_input_tokens.min(usage.input_tokens);
    let uncached = usage.input_tokens - cached;
    let cost = uncached as f64 * price.input
        + cached as f64 * price.cached_input
        + usage.output_tokens as f64 * price.output;
    Some(cost / 1_000_000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_exactly_or_with_a_snapshot_suffix() {
        assert_eq!(price_of("gpt-4o").map(|p| p.input), Some(2.50));
        assert_eq!(price_of("gpt-4o-2024-08-06").map(|p| p.input), Some(2.50));
        assert_eq!(price_of("gpt-4o-mini").map(|p| p.input), Some(0.15));
        assert_eq!(price_of("gpt-4o-mini-2024-07-18").map(|p| p.input), Some(0.15));
        assert_eq!(price_of("claude-sonnet-4-20250514").map(|p| p.output), Some(15.0));
        assert_eq!(price_of("claude-3-5-haiku-latest").map(|p| p.output), Some(4.0));
        assert_eq!(price_of("openai/gpt-5").map(|p| p.output), Some(10.0));
        assert_eq!(price_of("gpt-5-pro"), None);
        assert_eq!(price_of("gpt-4o-2024"), None);
        assert_eq!(price_of("gpt-4o-2024-8-06x"), None);
        assert_eq!(price_of("llama3.1:8b"), None);
        assert_eq!(price_of(""), None);
    }

    #[test]
    fn cached_input_is_priced_apart_and_unknown_models_cost_nothing_known() {
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cached_input_tokens: 400_000,
            reasoning_tokens: 50_000,
        };
        // 600k × 2.50 + 400k × 1.25 + 100k × 10, per million.
        let cost = cost_usd("gpt-4o", &usage).expect("priced");
        assert!((cost - (1.5 + 0.5 + 1.0)).abs() < 1e-9, "{cost}");
        assert_eq!(cost_usd("my-local-model", &usage), None);
        // A report with more cached than input tokens is not priced below zero.
        let odd = Usage { input_tokens: 10, cached_input_tokens: 20, ..Usage::default() };
        assert!(cost_usd("gpt-4o", &odd).expect("priced") >= 0.0);
    }
}
