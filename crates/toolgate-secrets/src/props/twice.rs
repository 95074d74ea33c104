//! Redacting leaves nothing a detector finds, so redacting again changes nothing: for any
//! text, `redact(redact(x)) == redact(x)`, with a custom detector beside the built-in ones.

use proptest::prelude::*;

use super::text;
use crate::{Custom, Detector, Selection};

/// The built-in detectors and a custom one, compiled once for every case.
fn detector() -> &'static Detector {
    static DETECTOR: std::sync::LazyLock<Detector> = std::sync::LazyLock::new(|| {
        let mut selection = Selection::all();
        let custom = Custom::new("employee_id", "EMP-[0-9]{6}").expect("a valid detector");
        selection.add_custom(custom).expect("a new name");
        Detector::new(&selection)
    });
    &DETECTOR
}

proptest! {
    #[test]
    fn redacted_text_has_nothing_left_to_find(text in text()) {
        let detector = detector();
        let once = detector.redact(&text);
        let left = detector.find(&once.text);
        prop_assert!(left.is_empty(), "found again in {:?}: {:?}", once.text, left);
        prop_assert_eq!(detector.redact(&once.text).text, once.text.clone());
        // Every finding counted (and those a finding's marker made, too).
        prop_assert!(once.counts.total() >= detector.find(&text).len());
        prop_assert_eq!(once.counts.is_empty(), detector.find(&text).is_empty());
    }

    #[test]
    fn redacted_text_that_may_be_json_has_nothing_left_to_find(text in text()) {
        let detector = detector();
        let once = detector.redact_text(&text);
        let again = detector.redact_text(&once.text);
        prop_assert!(again.counts.is_empty(), "found again in {:?}: {:?}", once.text, again.counts);
        prop_assert_eq!(again.text, once.text.clone());
    }
}
