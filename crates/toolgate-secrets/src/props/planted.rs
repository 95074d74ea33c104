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
