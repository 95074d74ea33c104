//! Exposed names of tools and prompts: `<prefix>__<name>`, always valid for every LLM API.
//!
//! The rules (`docs/design.md`, Names): an exposed name matches `^[a-zA-Z0-9_-]{1,64}$`.
//! Characters outside that set become `_`. A name longer than 64 characters is cut and given a
//! short hash of the full original `(prefix, name)`, so it stays unique and never depends on which
//! other servers exist. The way back from an exposed name to its upstream is a table, never a
//! split on `__`.

use sha2::{Digest, Sha256};

/// The longest exposed name any LLM API accepts.
pub const MAX_EXPOSED_LEN: usize = 64;
/// Between prefix and original name.
pub const SEPARATOR: &str = "__";
/// Hex digits of the hash suffix used for long or colliding names.
const HASH_LEN: usize = 8;

/// The exposed name of `name` offered by a server mounted at `prefix` (empty = passthrough).
pub fn exposed_name(prefix: &str, name: &str) -> String {
    let mut joined = String::with_capacity(prefix.len() + SEPARATOR.len() + name.len());
    if !prefix.is_empty() {
        joined.push_str(prefix);
        joined.push_str(SEPARATOR);
    }
    joined.push_str(name);
    let mut exposed = sanitize(&joined);
    if exposed.is_empty() {
        exposed.push('_');
    }
    if exposed.len() > MAX_EXPOSED_LEN {
        exposed.truncate(MAX_EXPOSED_LEN - HASH_LEN - 1);
        exposed.push('_');
        exposed.push_str(&short_hash(&[prefix, name]));
    }
    exposed
}

/// A variant of `exposed` that is unique to `(upstream, name)`: used for the losers of a
/// collision, so they stay reachable under a stable name.
pub fn disambiguated_name(exposed: &str, upstream: &str, name: &str) -> String {
    let hash = short_hash(&[upstream, name]);
    let keep = exposed.len().min(MAX_EXPOSED_LEN - HASH_LEN - 1);
    format!("{}_{hash}", &exposed[..keep])
}

/// Whether `name` already satisfies the exposed-name rule.
pub fn is_valid_exposed(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_EXPOSED_LEN
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .collect()
}

fn short_hash(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    let digest = hasher.finalize();
    digest.iter().take(HASH_LEN / 2).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_and_name_are_joined() {
        assert_eq!(exposed_name("github", "search_issues"), "github__search_issues");
    }

    #[test]
    fn empty_prefix_is_passthrough() {
        assert_eq!(exposed_name("", "test_simple_text"), "test_simple_text");
    }

    #[test]
    fn invalid_characters_become_underscores() {
        assert_eq!(exposed_name("my.server", "files/read v2"), "my_server__files_read_v2");
        assert_eq!(exposed_name("", "ünï"), "_n_");
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash() {
        let long = "x".repeat(100);
        let a = exposed_name("srv", &long);
        assert_eq!(a.len(), MAX_EXPOSED_LEN);
        assert!(is_valid_exposed(&a));
        assert_eq!(a, exposed_name("srv", &long), "must be deterministic");
        let mut other = long.clone();
        other.push('y');
        assert_ne!(a, exposed_name("srv", &other), "different originals must differ");
    }

    #[test]
    fn every_output_is_valid() {
        let samples = ["", "a", "名前", &"é".repeat(70), "a-b_c.d", &"ab".repeat(40)];
        for prefix in ["", "p", "pre.fix", &"q".repeat(70)] {
            for name in samples {
                let exposed = exposed_name(prefix, name);
                assert!(is_valid_exposed(&exposed), "{prefix:?} {name:?} -> {exposed:?}");
            }
        }
    }

    #[test]
    fn disambiguated_names_are_valid_and_distinct() {
        let a = disambiguated_name("echo", "one", "echo");
        let b = disambiguated_name("echo", "two", "echo");
        assert_ne!(a, b);
        assert!(is_valid_exposed(&a) && is_valid_exposed(&b));
        let long = disambiguated_name(&"z".repeat(64), "one", "z");
        assert!(is_valid_exposed(&long), "{long}");
    }
}
