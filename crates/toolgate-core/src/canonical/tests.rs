//! RFC 8785's examples (sections 3.2.2, 3.2.3 and appendix B), and the cases where a naive
//! canonical form (keys sorted by UTF-8 bytes, numbers as serde writes them) would differ.

use serde_json::{Value, json};

use super::canonical_json;

fn canonical_of(text: &str) -> String {
    let value: Value = serde_json::from_str(text).expect("valid JSON");
    canonical_json(&value)
}

#[test]
fn the_rfc_8785_example_of_section_3_2_2() {
    let input = r#"{
        "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
        "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
        "literals": [null, true, false]
    }"#;
    assert_eq!(
        canonical_of(input),
        r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
    );
}

#[test]
fn keys_are_sorted_by_utf16_code_units_not_utf8_bytes() {
    // Section 3.2.3: U+FB33 comes after the surrogate pair of U+1F600 in UTF-16, before it in
    // UTF-8.
    let input = r#"{
        "\u20ac": "Euro Sign",
        "\r": "Carriage Return",
        "\ufb33": "Hebrew Letter Dalet With Dagesh",
        "1": "One",
        "\ud83d\ude00": "Emoji: Grinning Face",
        "\u0080": "Control",
        "\u00f6": "Latin Small Letter O With Diaeresis"
    }"#;
    let value: Value = serde_json::from_str(&canonical_of(input)).expect("canonical is JSON");
    let order: Vec<&str> =
        value.as_object().expect("object").values().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(
        order,
        [
            "Carriage Return",
            "One",
            "Control",
            "Latin Small Letter O With Diaeresis",
            "Euro Sign",
            "Emoji: Grinning Face",
            "Hebrew Letter Dalet With Dagesh",
        ]
    );
}

#[test]
fn numbers_are_written_as_ecmascript_writes_doubles() {
    // Appendix B, and integers past 2^53 (which serde keeps exact, JCS does not).
    let cases = [
        ("0", "0"),
        ("-0", "0"),
        ("1e21", "1e+21"),
        ("1e20", "100000000000000000000"),
        ("0.000001", "0.000001"),
        ("1e-7", "1e-7"),
        ("5e-324", "5e-324"),
        ("1.7976931348623157e308", "1.7976931348623157e+308"),
        ("9007199254740992", "9007199254740992"),
        ("9007199254740993", "9007199254740992"),
        ("295147905179352830000", "295147905179352830000"),
        ("333333333.3333333", "333333333.3333333"),
        ("1e+23", "1e+23"),
        ("-1.5", "-1.5"),
        ("100", "100"),
    ];
    for (input, expected) in cases {
        assert_eq!(canonical_of(&format!("[{input}]")), format!("[{expected}]"), "{input}");
    }
}

#[test]
fn strings_keep_what_needs_no_escape_and_escape_controls_in_lowercase_hex() {
    assert_eq!(canonical_json(&json!("é\u{1}\t/\u{7f}\u{2028}")), "\"é\\u0001\\t/\u{7f}\u{2028}\"");
}

#[test]
fn nesting_and_whitespace() {
    let value = json!({"b": 1, "a": {"z": [3, {"y": null, "x": true}], "c": "é\n"}});
    assert_eq!(canonical_json(&value), r#"{"a":{"c":"é\n","z":[3,{"x":true,"y":null}]},"b":1}"#);
}
