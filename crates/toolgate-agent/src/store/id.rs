//! Session ids: short, sortable by creation time, easy to read and type.
//!
//! Eleven characters of Crockford's base32 in lower case (digits and letters without `i`,
//! `l`, `o`, `u`): seven for the creation time in seconds since 1970 (enough until the year
//! 3058), then four random ones (about a million values, so two sessions made in the same second
//! do not collide; the store retries in the rare case they do). Ids of sessions made later
//! sort after earlier ones as text. A person may type any unique prefix.

use std::time::{SystemTime, UNIX_EPOCH};

const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// The length of an id.
pub(crate) const LENGTH: usize = 11;

/// A new id for a session made at `now`.
pub(crate) fn new_id(now: SystemTime) -> String {
    let seconds = now.duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs());
    let random = u128::from_le_bytes(*uuid::Uuid::new_v4().as_bytes());
    let mut id = String::with_capacity(LENGTH);
    for shift in (0..7).rev() {
        id.push(ALPHABET[((seconds >> (shift * 5)) & 31) as usize] as char);
    }
    for shift in 0..4 {
        id.push(ALPHABET[((random >> (shift * 5)) & 31) as usize] as char);
    }
    id
}

/// What a person typed, as an id prefix: lower case, with the letters Crockford's base32 reads
/// as digits (`o` → `0`, `i` and `l` → `1`) mapped. `None` when it cannot be part of an id.
pub(crate) fn normalize(typed: &str) -> Option<String> {
    let typed = typed.trim();
    if typed.is_empty() || typed.len() > LENGTH {
        return None;
    }
    typed
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            'o' => Some('0'),
            'i' | 'l' => Some('1'),
            c if c.is_ascii() && ALPHABET.contains(&(c as u8)) => Some(c),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod props;

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn ids_sort_by_time_and_differ_within_a_second() {
        let early = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let late = early + Duration::from_secs(1);
        let (a, b) = (new_id(early), new_id(late));
        assert_eq!(a.len(), LENGTH);
        assert!(a < b, "{a} {b}");
        assert_eq!(a[..7], new_id(early)[..7]);
        let same_second: std::collections::HashSet<String> =
            (0..50).map(|_| new_id(early)).collect();
        assert!(same_second.len() > 45, "{same_second:?}");
        assert!(a.bytes().all(|b| ALPHABET.contains(&b)), "{a}");
        // The year 3000 still sorts after today.
        let far = UNIX_EPOCH + Duration::from_secs(32_503_680_000);
        assert!(new_id(far) > b);
    }

    #[test]
    fn typed_prefixes_are_normalized() {
        assert_eq!(normalize(" 1KQ "), Some("1kq".into()));
        assert_eq!(normalize("OIL"), Some("011".into()));
        assert_eq!(normalize("1ku"), None);
        assert_eq!(normalize("1k-"), None);
        assert_eq!(normalize(""), None);
        assert_eq!(normalize("é"), None);
        assert_eq!(normalize("012345678901"), None);
    }
}
