//! A budget in tokens or bytes, and measuring text against it.

use toolgate_llm::tokens::Encoding;

/// What a budget counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    /// Tokens of an encoding.
    Tokens(usize, Encoding),
    /// Bytes of UTF-8.
    Bytes(usize),
}

/// A budget and how to measure against it.
#[derive(Debug, Clone, Copy)]
pub struct Meter {
    pub(super) budget: Budget,
}

impl Meter {
    /// Measures against `budget`.
    pub fn new(budget: Budget) -> Meter {
        Meter { budget }
    }

    /// The budget.
    pub fn limit(&self) -> usize {
        match self.budget {
            Budget::Tokens(n, _) | Budget::Bytes(n) => n,
        }
    }

    /// `tokens` or `bytes`.
    pub fn unit(&self) -> &'static str {
        match self.budget {
            Budget::Tokens(..) => "tokens",
            Budget::Bytes(_) => "bytes",
        }
    }

    /// The same unit with another limit.
    pub(super) fn with_limit(&self, limit: usize) -> Meter {
        Meter {
            budget: match self.budget {
                Budget::Tokens(_, encoding) => Budget::Tokens(limit, encoding),
                Budget::Bytes(_) => Budget::Bytes(limit),
            },
        }
    }

    /// The cost of `text`, if it is at most `limit`.
    pub fn cost_up_to(&self, text: &str, limit: usize) -> Option<usize> {
        match self.budget {
            Budget::Tokens(_, encoding) => encoding.count_up_to(text, limit),
            Budget::Bytes(_) => (text.len() <= limit).then_some(text.len()),
        }
    }

    pub(super) fn fits(&self, text: &str, limit: usize) -> bool {
        match self.budget {
            Budget::Tokens(_, encoding) => encoding.fits(text, limit),
            Budget::Bytes(_) => text.len() <= limit,
        }
    }

    /// The end (in bytes) of the longest prefix of `text` within `limit`.
    pub(super) fn prefix(&self, text: &str, limit: usize) -> usize {
        match self.budget {
            Budget::Tokens(_, encoding) => encoding.prefix_within(text, limit).0,
            Budget::Bytes(_) => floor_char_boundary(text, limit),
        }
    }

    pub(super) fn encoding(&self) -> Encoding {
        match self.budget {
            Budget::Tokens(_, encoding) => encoding,
            Budget::Bytes(_) => Encoding::default(),
        }
    }
}

fn floor_char_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}
