//! A secret planted in any text does not survive redaction: whatever is around it (prose,
//! other secrets, markers, Unicode), as long as something separates it from its neighbours
//! (a detector rightly leaves `x4242...` or a 25-digit run alone).

use proptest::prelude::*;

use super::{secret, text};
use crate::tests::written;

/// What separates a secret from its neighbours.
fn separator() -> impl Strategy<Value = &'static str> {
    prop::sample::select(&["\n", " | ", "; ", "\t<", ">\n", " (", ") "][..])
}

proptest! {
    #[test]
    fn a_planted_secret_is_redacted(
        before in text(),
        left in separator(),
        (kind, value) in secret(),
        right in separator(),
        after in text(),
    ) {
        // The planted copy is the one under test: another copy in the text around it may be
        // glued to a word (`a@a.com5555-5555-5555-4444`), which a detector rightly leaves alone.
        prop_assume!(!before.contains(&value) && !after.contains(&value));
        let text = format!("{before}{left}{}{right}{after}", written(kind, &value));
        let detector = super::builtin();
        let redacted = detector.redact(&text);
        prop_assert!(
            !redacted.text.contains(&value),
            "the {} {:?} survived in {:?}", kind, value, redacted.text
        );
        let redacted = detector.redact_text(&text);
        prop_assert!(
            !redacted.text.contains(&value),
            "the {} {:?} survived redact_text in {:?}", kind, value, redacted.text
        );
    }
}
