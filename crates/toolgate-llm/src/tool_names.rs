//! Tool names as each dialect accepts them, and the way back.
//!
//! OpenAI (both APIs) takes names matching `^[a-zA-Z0-9_-]{1,64}$`, Anthropic
//! `^[a-zA-Z0-9_-]{1,128}$`. toolgate's exposed names already match the stricter rule (see
//! `toolgate_core::name`), so they are normally sent as they are; a name that does not match
//! (an interceptor's own tool, a name from elsewhere) gets its other characters replaced by
//! `_`, and, when it is then too long, empty, or equal to another tool's name, is cut and given
//! `_` and 8 hex digits of the SHA-256 of the original name. Names that already match are never
//! changed, so the result for a name depends only on the name and on which valid names exist,
//! not on the order the names come in. The model calls tools by the provider name; the map
//! back gives the exposed name to route the call.

use std::collections::{BTreeSet, HashMap};

use crate::provider::Dialect;

/// Hex digits of the hash suffix.
const HASH_LEN: usize = 8;

/// The longest tool name `dialect` accepts.
pub fn max_len(dialect: Dialect) -> usize {
    match dialect {
        Dialect::OpenaiChat | Dialect::OpenaiResponses => 64,
        Dialect::Anthropic => 128,
    }
}

/// Whether `dialect` accepts `name` as it is.
pub fn is_valid(dialect: Dialect, name: &str) -> bool {
    !name.is_empty()
        && name.len() <= max_len(dialect)
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The exposed names of a set of tools and the names a provider knows them by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolNames {
    dialect: Dialect,
    to_provider: HashMap<String, String>,
    to_exposed: HashMap<String, String>,
}

impl ToolNames {
    /// The provider names of `names` (duplicates count once).
    pub fn new<I, S>(dialect: Dialect, names: I) -> ToolNames
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let names: BTreeSet<String> = names.into_iter().map(|n| n.as_ref().to_owned()).collect();
        let mut to_provider = HashMap::new();
        let mut to_exposed = HashMap::new();
        let (valid, invalid): (Vec<&String>, Vec<&String>) =
            names.iter().partition(|name| is_valid(dialect, name));
        for name in valid {
            to_provider.insert(name.clone(), name.clone());
            to_exposed.insert(name.clone(), name.clone());
        }
        for name in invalid {
            let provider = adapted(dialect, name, |candidate| to_exposed.contains_key(candidate));
            to_provider.insert(name.clone(), provider.clone());
            to_exposed.insert(provider, name.clone());
        }
        ToolNames { dialect, to_provider, to_exposed }
    }

    /// The dialect the names are for.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The name the provider knows the tool `exposed` by.
    pub fn provider_name(&self, exposed: &str) -> Option<&str> {
        self.to_provider.get(exposed).map(String::as_str)
    }

    /// The exposed name of the tool the provider calls `provider`.
    pub fn exposed_name(&self, provider: &str) -> Option<&str> {
        self.to_exposed.get(provider).map(String::as_str)
    }
}

/// `name` made valid for `dialect`, avoiding the names `taken` says are taken.
fn adapted(dialect: Dialect, name: &str, taken: impl Fn(&str) -> bool) -> String {
    let max = max_len(dialect);
    let replaced: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .collect();
    if !replaced.is_empty() && replaced.len() <= max && !taken(&replaced) {
        return replaced;
    }
    // `replaced` is ASCII: any byte is a character boundary.
    let keep = replaced.len().min(max - HASH_LEN - 1);
    let mut salt = 0u32;
    loop {
        let hashed = if salt == 0 { name.to_owned() } else { format!("{name}\0{salt}") };
        let hash = &toolgate_core::hash::sha256_hex(hashed.as_bytes())[..HASH_LEN];
        let candidate = format!("{}_{hash}", &replaced[..keep]);
        if !taken(&candidate) {
            return candidate;
        }
        salt += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_names_are_kept_and_others_are_adapted_both_ways() {
        let names = ToolNames::new(
            Dialect::OpenaiChat,
            ["github__search", "fs__read.file", "toolgate__read_result", "fs__read.file"],
        );
        assert_eq!(names.provider_name("github__search"), Some("github__search"));
        assert_eq!(names.provider_name("fs__read.file"), Some("fs__read_file"));
        assert_eq!(names.exposed_name("fs__read_file"), Some("fs__read.file"));
        assert_eq!(names.exposed_name("github__search"), Some("github__search"));
        assert_eq!(names.provider_name("nope"), None);
        assert_eq!(names.exposed_name("nope"), None);
    }

    #[test]
    fn a_replacement_that_collides_gets_a_hash_whatever_the_order() {
        let forward = ToolNames::new(Dialect::Anthropic, ["a.b", "a_b"]);
        let backward = ToolNames::new(Dialect::Anthropic, ["a_b", "a.b"]);
        assert_eq!(forward, backward);
        assert_eq!(forward.provider_name("a_b"), Some("a_b"));
        let hashed = forward.provider_name("a.b").expect("adapted");
        assert_eq!(hashed, format!("a_b_{}", &toolgate_core::hash::sha256_hex(b"a.b")[..8]));
        assert_eq!(forward.exposed_name(hashed), Some("a.b"));
    }

    #[test]
    fn long_names_are_cut_to_each_dialects_limit_and_stay_unique() {
        let long_a = format!("{}.a", "x".repeat(100));
        let long_b = format!("{}.b", "x".repeat(100));
        for dialect in [Dialect::OpenaiChat, Dialect::OpenaiResponses, Dialect::Anthropic] {
            let names = ToolNames::new(dialect, [&long_a, &long_b]);
            let a = names.provider_name(&long_a).expect("a");
            let b = names.provider_name(&long_b).expect("b");
            assert_ne!(a, b);
            for name in [a, b] {
                assert!(is_valid(dialect, name), "{dialect:?}: {name}");
            }
            assert_eq!(names.exposed_name(a), Some(long_a.as_str()));
            assert_eq!(names.exposed_name(b), Some(long_b.as_str()));
        }
        // 102 characters fit Anthropic's limit once the dot is replaced, not OpenAI's.
        let anthropic = ToolNames::new(Dialect::Anthropic, [&long_a]);
        assert_eq!(
            anthropic.provider_name(&long_a),
            Some(format!("{}_a", "x".repeat(100)).as_str())
        );
        let openai = ToolNames::new(Dialect::OpenaiChat, [&long_a]);
        assert_eq!(openai.provider_name(&long_a).map(str::len), Some(64));
    }

    #[test]
    fn empty_and_non_ascii_names_become_valid() {
        let names = ToolNames::new(Dialect::OpenaiChat, ["", "météo"]);
        let empty = names.provider_name("").expect("empty");
        assert!(is_valid(Dialect::OpenaiChat, empty), "{empty}");
        assert_eq!(names.provider_name("météo"), Some("m_t_o"));
    }
}
