//! Property tests of the session id codec: an id is eleven characters of the alphabet, ids sort
//! as their times do, and whatever a person types of one (any prefix, any case, spaces around)
//! reads back as that prefix; no text makes `normalize` give anything but a possible prefix.

use std::time::{Duration, UNIX_EPOCH};

use proptest::prelude::*;

use super::{ALPHABET, LENGTH, new_id, normalize};

/// Seconds since 1970 that seven characters of base32 hold (until the year 3058).
const LAST_SECOND: u64 = (1 << 35) - 1;

proptest! {
    #[test]
    fn ids_are_eleven_characters_of_the_alphabet_and_sort_by_time(
        a in 0..=LAST_SECOND,
        b in 0..=LAST_SECOND,
    ) {
        let (id_a, id_b) = (new_id(UNIX_EPOCH + Duration::from_secs(a)), new_id(UNIX_EPOCH + Duration::from_secs(b)));
        for id in [&id_a, &id_b] {
            prop_assert_eq!(id.len(), LENGTH);
            prop_assert!(id.bytes().all(|c| ALPHABET.contains(&c)), "{}", id);
        }
        match a.cmp(&b) {
            std::cmp::Ordering::Less => prop_assert!(id_a < id_b, "{} {}", id_a, id_b),
            std::cmp::Ordering::Greater => prop_assert!(id_a > id_b, "{} {}", id_a, id_b),
            std::cmp::Ordering::Equal => prop_assert_eq!(&id_a[..7], &id_b[..7]),
        }
    }

    #[test]
    fn a_typed_prefix_reads_back(
        seconds in 0..=LAST_SECOND,
        length in 1..=LENGTH,
        upper in prop::collection::vec(any::<bool>(), LENGTH),
        before in "[ \t]{0,3}",
        after in "[ \t\n]{0,3}",
    ) {
        let id = new_id(UNIX_EPOCH + Duration::from_secs(seconds));
        prop_assert_eq!(normalize(&id), Some(id.clone()));
        let prefix = &id[..length];
        let typed: String = prefix
            .chars()
            .zip(&upper)
            .map(|(c, upper)| if *upper { c.to_ascii_uppercase() } else { c })
            .collect();
        prop_assert_eq!(normalize(&format!("{before}{typed}{after}")), Some(prefix.to_owned()));
    }

    #[test]
    fn anything_typed_is_a_possible_prefix_or_nothing(typed in "\\PC{0,14}|[0-9a-zA-Z \t]{0,14}") {
        if let Some(prefix) = normalize(&typed) {
            prop_assert!((1..=LENGTH).contains(&prefix.len()), "{:?} -> {:?}", typed, prefix);
            prop_assert!(prefix.bytes().all(|c| ALPHABET.contains(&c)), "{:?} -> {:?}", typed, prefix);
        }
    }
}
