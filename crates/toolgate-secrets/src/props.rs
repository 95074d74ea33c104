//! Property tests of the detectors (random texts, shrunk to a smallest failing one; see
//! `scripts/soak` for the long run): what the texts are made of, and one property per module.

use proptest::prelude::*;

use crate::tests::{EXAMPLES, written};

mod json;
mod planted;
mod twice;

/// The built-in detectors, compiled once for every case.
pub(crate) fn builtin() -> &'static crate::Detector {
    static DETECTOR: std::sync::LazyLock<crate::Detector> =
        std::sync::LazyLock::new(crate::Detector::builtin);
    &DETECTOR
}

/// A text made of pieces that look like what tool results hold: prose, punctuation, digits in
/// groups, secrets of every kind (the examples and generated ones), markers, quotes,
/// backslashes, line breaks and any Unicode.
pub(crate) fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 0..12).prop_map(|pieces| pieces.concat())
}

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-zA-Z0-9 ]{0,12}",
        2 => r#"[ \n\t.,:;=&?/@+_"'\\\[\]{}()<>#$%-]{1,3}"#,
        1 => "\\PC{0,6}",
        1 => "[0-9]{1,5}[ -]?",
        2 => planted(),
        1 => prop::sample::select(MARKERS).prop_map(str::to_owned),
        1 => "(Bearer |token=|api_key=|https://|aws_secret_access_key=|-----BEGIN |eyJ|sk-|AKIA)",
    ]
}

/// Markers and broken markers, as a text redacted before holds them.
const MARKERS: &[&str] =
    &["[REDACTED:email]", "[REDACTED:", "[REDACTED:x]", "[REDACTED:]", "REDACTED:email]"];

/// A secret as a text holds it (its context included: `Bearer `, `key=`, ...), and the value
/// that must not survive redaction.
pub(crate) fn planted() -> impl Strategy<Value = String> {
    secret().prop_map(|(kind, value)| written(kind, &value))
}

/// A secret of a built-in kind: one of the examples, or one generated in its kind's shape.
pub(crate) fn secret() -> impl Strategy<Value = (&'static str, String)> {
    prop_oneof![
        prop::sample::select(EXAMPLES).prop_map(|(kind, value)| (kind, value.to_owned())),
        "(AKIA|ASIA)[A-Z0-9]{16}".prop_map(|v| ("aws_access_key", v)),
        "gh[pousr]_[A-Za-z0-9]{36,40}".prop_map(|v| ("github_token", v)),
        "xox[baprs]-[A-Za-z0-9]{10,24}".prop_map(|v| ("slack_token", v)),
        "[spr]k_(live|test)_[A-Za-z0-9]{10,24}".prop_map(|v| ("stripe_key", v)),
        "[a-z][a-z0-9]{0,8}(\\.[a-z0-9]{1,8})?@[a-z][a-z0-9]{0,8}\\.(com|org|net|io)"
            .prop_map(|v| ("email", v)),
        "[0-9]{15}".prop_map(|digits| ("card_number", visa(&digits))),
        "[0-9]{18}".prop_map(|digits| ("iban", german_iban(&digits))),
    ]
}

/// A Visa number: `4`, 14 of `digits`, and the Luhn check digit.
fn visa(digits: &str) -> String {
    let body: String = std::iter::once('4').chain(digits.chars().take(14)).collect();
    // The check digit makes the Luhn sum of the whole a multiple of 10: from the right, the
    // body's digits are doubled first.
    let sum: u32 = body
        .bytes()
        .rev()
        .enumerate()
        .map(|(i, b)| {
            let d = u32::from(b - b'0');
            if i % 2 == 0 { if d * 2 > 9 { d * 2 - 9 } else { d * 2 } } else { d }
        })
        .sum();
    format!("{body}{}", (10 - sum % 10) % 10)
}

/// A German IBAN (22 characters) whose account part is `digits`, with its mod-97 check digits.
fn german_iban(digits: &str) -> String {
    // Check digits: 98 minus the remainder of the account part, `DE` (13, 14) and `00`.
    let rearranged = format!("{digits}131400");
    let remainder = rearranged.bytes().fold(0u32, |r, b| (r * 10 + u32::from(b - b'0')) % 97);
    format!("DE{:02}{digits}", 98 - remainder)
}

#[test]
fn the_generated_secrets_are_found() {
    let detector = crate::Detector::builtin();
    for (kind, value) in [
        ("card_number", visa("12345678901234")),
        ("card_number", visa("00000000000000")),
        ("iban", german_iban("370400440532013000")),
    ] {
        let found = detector.find(&value);
        assert_eq!(found.len(), 1, "{kind} {value}: {found:?}");
        assert_eq!(found[0].kind, kind, "{value}");
    }
    assert_eq!(german_iban("370400440532013000"), "DE89370400440532013000");
}
