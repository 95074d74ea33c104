//! Token counts in OpenAI's encodings (`o200k_base`, the default, and `cl100k_base`), exact:
//! the same numbers as OpenAI's tiktoken.
//!
//! Counting is linear in the text (GitHub's `bpe-openai`), about 30 ms per MiB of JSON in a
//! release build; [`Encoding::count_up_to`] stops as soon as a limit is passed, and a text of
//! `n` bytes never has more than `n` tokens, so a text shorter than a budget costs nothing to
//! check. The first use of an encoding builds its tables from its vocabulary (`vocabulary`:
//! about a second for `o200k_base`); [`Encoding::warm_up`] does that ahead of time.

use std::fmt;
use std::str::FromStr;
use std::sync::LazyLock;

mod vocabulary;

/// The tokenizers, built at first use.
static O200K_BASE: LazyLock<bpe_openai::Tokenizer> =
    LazyLock::new(|| Encoding::O200kBase.build_tokenizer());
static CL100K_BASE: LazyLock<bpe_openai::Tokenizer> =
    LazyLock::new(|| Encoding::Cl100kBase.build_tokenizer());

/// Pieces (what the tokenizer splits a text into before encoding: words, numbers, runs of
/// punctuation) longer than this many bytes may be cut by [`Encoding::prefix_within`].
pub const LONG_PIECE: usize = 64;

/// An encoding (a tokenizer's vocabulary and rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Encoding {
    /// GPT-4o, GPT-4.1, GPT-5, o-series.
    #[default]
    O200kBase,
    /// GPT-4, GPT-3.5; also a fair estimate for other vendors' models.
    Cl100kBase,
}

impl Encoding {
    /// Every encoding.
    pub const ALL: [Encoding; 2] = [Encoding::O200kBase, Encoding::Cl100kBase];

    /// The name OpenAI gives it.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
        }
    }

    fn tokenizer(self) -> &'static bpe_openai::Tokenizer {
        match self {
            Encoding::O200kBase => &O200K_BASE,
            Encoding::Cl100kBase => &CL100K_BASE,
        }
    }

    /// Builds the encoding's tables now rather than at the first count (which waits for them
    /// if another thread is building them).
    pub fn warm_up(self) {
        self.tokenizer().count("");
    }

    /// How many tokens `text` is.
    pub fn count(self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        self.tokenizer().count(text)
    }

    /// How many tokens `text` is, if that is at most `limit`; `None` as soon as it is more.
    pub fn count_up_to(self, text: &str, limit: usize) -> Option<usize> {
        let tokenizer = self.tokenizer();
        let mut total = 0usize;
        for piece in tokenizer.split(text) {
            total += tokenizer.bpe.count(piece.as_bytes());
            if total > limit {
                return None;
            }
        }
        Some(total)
    }

    /// Whether `text` is at most `limit` tokens; free when it has at most `limit` bytes.
    pub fn fits(self, text: &str, limit: usize) -> bool {
        text.len() <= limit || self.count_up_to(text, limit).is_some()
    }

    /// The length in bytes of the longest prefix of `text` that is at most `budget` tokens,
    /// cut where the tokenizer would split the text anyway (so the prefix's count is exact),
    /// and its count. A piece longer than [`LONG_PIECE`] bytes that does not fit whole is cut
    /// inside (on a character boundary), where a shorter one is left out.
    pub fn prefix_within(self, text: &str, budget: usize) -> (usize, usize) {
        let tokenizer = self.tokenizer();
        let (mut end, mut total) = (0usize, 0usize);
        for piece in tokenizer.split(text) {
            let cost = tokenizer.bpe.count(piece.as_bytes());
            if total + cost > budget {
                // A long piece (a run of letters, digits or punctuation with no space in it)
                // that does not fit: its beginning, no more bytes than tokens are left (a token
                // is at least one byte), so that a text of one huge word is not cut to nothing.
                if piece.len() > LONG_PIECE {
                    let mut room = (budget - total).min(piece.len());
                    while !piece.is_char_boundary(room) {
                        room -= 1;
                    }
                    total += tokenizer.count(&piece[..room]);
                    end += room;
                }
                break;
            }
            total += cost;
            end += piece.len();
        }
        (end, total)
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not an encoding toolgate knows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown encoding {0:?} (known: o200k_base, cl100k_base)")]
pub struct UnknownEncoding(pub String);

impl FromStr for Encoding {
    type Err = UnknownEncoding;

    fn from_str(name: &str) -> Result<Encoding, UnknownEncoding> {
        Encoding::ALL
            .into_iter()
            .find(|e| e.name() == name)
            .ok_or_else(|| UnknownEncoding(name.to_owned()))
    }
}

#[cfg(test)]
mod tests;
