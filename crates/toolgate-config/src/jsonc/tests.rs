//! Tests of the JSONC stripper: comments and trailing commas go, strings stay intact.

use super::strip;

#[test]
fn strict_json_is_unchanged() {
    let text = r#"{"a": [1, 2, {"b": "c,}"}], "d": "//not a comment", "e": "/*nor this*/"}"#;
    assert_eq!(strip(text), text);
}

#[test]
fn comments_become_spaces() {
    assert_eq!(strip("{ // note\n\"a\": 1 /* x\ny */ }"), "{        \n\"a\": 1     \n     }");
}

#[test]
fn trailing_commas_are_removed() {
    assert_eq!(strip("[1, 2,]"), "[1, 2 ]");
    assert_eq!(strip("{\"a\": 1, // c\n}"), "{\"a\": 1      \n}");
    assert_eq!(strip("[1, /* c */ ]"), "[1          ]");
}

#[test]
fn escaped_quotes_stay_inside_strings() {
    let text = r#"{"a": "x\"//y", "b": "é,]"}"#;
    assert_eq!(strip(text), text);
}

#[test]
fn stripped_text_parses() {
    let text = "{\n  // servers\n  \"servers\": {\n    \"x\": { \"command\": \"y\", },\n  },\n}\n";
    let value: serde_json::Value =
        serde_json::from_str(&strip(text)).expect("stripped text must be valid JSON");
    assert_eq!(value["servers"]["x"]["command"], "y");
}
