//! The encodings' vocabularies, embedded compressed, and the tokenizers built from them at
//! first use.
//!
//! `bpe-openai` embeds its tables ready-made (hash tables and three Aho-Corasick automata per
//! encoding: 32 MB for `o200k_base`, 15 MB for `cl100k_base`), which made two thirds of the
//! release binary. What is embedded here is only the vocabulary, in tiktoken's format without
//! the ranks (one token a line, in base64, in rank order: a token's rank is its line's number),
//! DEFLATE-compressed (1.1 MB and 0.5 MB). The first use of an encoding inflates it and builds
//! the same tables from it ([`BytePairEncoding::from_tiktoken`], with the same hash factor), as
//! `bpe-openai`'s build script does, so the counts are the same; that takes about a second for
//! `o200k_base` (docs/benchmarks.md, "Binary size").
//!
//! Why tiktoken's text rather than the raw bytes (0.14 MB smaller compressed): `from_tiktoken`
//! is compiled in `bpe`, at the opt-level the workspace gives that crate in every profile (3),
//! where the generic `from_dictionary` called from here would be compiled at this crate's, 0 in
//! tests, and take several times longer in every test process that counts tokens.
//!
//! The files (`*.tiktoken.deflate` beside this one) are generated from `bpe-openai`'s own
//! tables: a test checks that they hold the same tokens in the same order, and
//! `TOOLGATE_BLESS=1 cargo test -p toolgate-llm vocabularies` rewrites them.

use bpe::byte_pair_encoding::BytePairEncoding;
use bpe_openai::Tokenizer;

use super::Encoding;

/// The hash factor `bpe-openai` builds both encodings with: no two tokens of either vocabulary
/// hash alike under it (`from_dictionary` checks), so no search for one is needed.
const HASH_FACTOR: u64 = 17_846_336_922_010_275_747;

/// `o200k_base`'s pre-tokenization: `bpe-openai`'s patterns, which rewrite tiktoken's negative
/// look-ahead `\s+(?!\S)` as a look-ahead of one character (the `true` pattern, whose last
/// character is dropped from the match), since regex-automata has no look-around.
const O200K_BASE_PATTERNS: [(&str, bool); 3] = [
    (
        concat!(
            "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
            "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
            "|\\p{N}{1,3}",
            "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*",
            "|\\s*[\\r\\n]+",
            "|\\s+$",
        ),
        false,
    ),
    ("\\s+\\s", true),
    ("\\s+", false),
];

/// `cl100k_base`'s pre-tokenization, rewritten the same way.
const CL100K_BASE_PATTERNS: [(&str, bool); 3] = [
    (
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+$",
        false,
    ),
    ("\\s+\\s", true),
    ("\\s+", false),
];

impl Encoding {
    /// The compressed vocabulary.
    fn compressed_vocabulary(self) -> &'static [u8] {
        match self {
            Encoding::O200kBase => include_bytes!("o200k_base.tiktoken.deflate"),
            Encoding::Cl100kBase => include_bytes!("cl100k_base.tiktoken.deflate"),
        }
    }

    fn patterns(self) -> &'static [(&'static str, bool)] {
        match self {
            Encoding::O200kBase => &O200K_BASE_PATTERNS,
            Encoding::Cl100kBase => &CL100K_BASE_PATTERNS,
        }
    }

    /// The vocabulary: tiktoken's format without the ranks.
    fn vocabulary(self) -> String {
        // Both files are checked by the tests: a failure here is a build that shipped a broken
        // file, not something a caller could handle.
        decompress(self.compressed_vocabulary())
            .unwrap_or_else(|| panic!("the embedded {self} vocabulary is not DEFLATE of UTF-8"))
    }

    /// Builds the tokenizer (its tables, from the vocabulary): what a first use costs.
    pub(super) fn build_tokenizer(self) -> Tokenizer {
        let bpe = BytePairEncoding::from_tiktoken(&self.vocabulary(), Some(HASH_FACTOR))
            .unwrap_or_else(|e| panic!("the embedded {self} vocabulary is not base64: {e}"));
        Tokenizer::new_lookahead(bpe, self.patterns(), false)
            .unwrap_or_else(|e| panic!("the {self} pre-tokenization patterns do not compile: {e}"))
    }
}

/// The text of a compressed vocabulary, or `None` when it is not DEFLATE of UTF-8.
fn decompress(compressed: &[u8]) -> Option<String> {
    let bytes = miniz_oxide::inflate::decompress_to_vec(compressed).ok()?;
    String::from_utf8(bytes).ok()
}

/// `tokens` as a compressed vocabulary (what the tests write).
#[cfg(test)]
fn compress<'a>(tokens: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    use base64::prelude::{BASE64_STANDARD, Engine as _};
    let lines: Vec<String> =
        tokens.into_iter().map(|token| BASE64_STANDARD.encode(token)).collect();
    miniz_oxide::deflate::compress_to_vec(lines.join("\n").as_bytes(), 10)
}

#[cfg(test)]
mod tests {
    use bpe::byte_pair_encoding::read_tiktoken;

    use super::*;

    /// The tokens of `bpe-openai`'s ready-made tables, in rank order.
    fn bpe_openais_tokens(encoding: Encoding) -> Vec<Vec<u8>> {
        let bpe = match encoding {
            Encoding::O200kBase => &bpe_openai::o200k_base().bpe,
            Encoding::Cl100kBase => &bpe_openai::cl100k_base().bpe,
        };
        let count = u32::try_from(bpe.num_tokens()).expect("fewer than 2^32 tokens");
        (0..count).map(|id| bpe.token_bytes(id).to_vec()).collect()
    }

    #[test]
    fn vocabularies_are_bpe_openais() {
        let bless = std::env::var_os("TOOLGATE_BLESS").is_some();
        for encoding in Encoding::ALL {
            let expected = bpe_openais_tokens(encoding);
            if bless {
                let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join(format!("src/tokens/{encoding}.tiktoken.deflate"));
                std::fs::write(&path, compress(expected.iter().map(Vec::as_slice)))
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                continue;
            }
            let embedded = read_tiktoken(&encoding.vocabulary()).expect("base64");
            assert_eq!(embedded.len(), expected.len(), "{encoding}: number of tokens");
            if let Some(rank) = (0..expected.len()).find(|&rank| embedded[rank] != expected[rank]) {
                panic!(
                    "{encoding}: token {rank} is {:?}, bpe-openai's is {:?} \
                     (TOOLGATE_BLESS=1 cargo test -p toolgate-llm vocabularies rewrites the file)",
                    embedded[rank], expected[rank]
                );
            }
        }
    }

    #[test]
    fn a_compressed_vocabulary_reads_as_its_tokens() {
        let tokens: [&[u8]; 3] = [b"a", b" the", &[0xff; 255]];
        let text = decompress(&compress(tokens)).expect("DEFLATE of UTF-8");
        assert_eq!(read_tiktoken(&text).expect("base64"), tokens.map(<[u8]>::to_vec));
    }

    #[test]
    fn what_is_not_deflate_of_utf8_is_refused() {
        assert_eq!(decompress(b"not deflate at all"), None);
        assert_eq!(decompress(&miniz_oxide::deflate::compress_to_vec(b"\xff\xfe", 6)), None);
    }
}
