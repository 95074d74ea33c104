//! Tests of argument records: canonical JSON, hashes taken before redaction, and redaction paths.

use serde_json::{Value, json};

use toolgate_core::canonical::canonical_json;
use toolgate_core::hash::sha256_hex;

use super::{ArgumentRecord, FieldPath};

fn paths(texts: &[&str]) -> Vec<FieldPath> {
    texts.iter().map(|text| text.parse().expect("test path must parse")).collect()
}

fn redacted(arguments: Value, redact: &[&str]) -> Value {
    ArgumentRecord::new(&arguments, &paths(redact)).redacted
}

#[test]
fn the_hash_does_not_depend_on_key_order() {
    // `preserve_order` keeps insertion order, so these two serialize differently.
    let one = json!({"path": "/tmp", "options": {"recursive": true, "depth": 2}});
    let two = json!({"options": {"depth": 2, "recursive": true}, "path": "/tmp"});
    assert_ne!(one.to_string(), two.to_string());
    let first = ArgumentRecord::new(&one, &[]);
    assert_eq!(first.sha256, ArgumentRecord::new(&two, &[]).sha256);
    assert_eq!(
        first.sha256,
        sha256_hex(br#"{"options":{"depth":2,"recursive":true},"path":"/tmp"}"#)
    );
    assert_ne!(first.sha256, ArgumentRecord::new(&json!({"path": "/tmp"}), &[]).sha256);
}

#[test]
fn the_hash_is_of_the_arguments_before_redaction() {
    let arguments = json!({"user": "a", "password": "hunter2"});
    let record = ArgumentRecord::new(&arguments, &paths(&["password"]));
    assert_eq!(record.sha256, sha256_hex(canonical_json(&arguments).as_bytes()));
    assert_eq!(record.redacted, json!({"user": "a", "password": "***"}));
}

#[test]
fn nested_fields_are_redacted() {
    let value = json!({"auth": {"token": "t", "user": "u"}, "token": "kept"});
    assert_eq!(
        redacted(value, &["auth.token"]),
        json!({"auth": {"token": "***", "user": "u"}, "token": "kept"})
    );
}

#[test]
fn a_whole_subtree_can_be_redacted() {
    let value = json!({"auth": {"token": "t"}, "q": 1});
    assert_eq!(redacted(value, &["auth"]), json!({"auth": "***", "q": 1}));
}

#[test]
fn wildcards_cover_array_elements_and_object_values() {
    let value = json!({
        "items": [{"secret": 1, "name": "a"}, {"name": "b"}, {"secret": [2]}, "scalar"],
        "env": {"A": "1", "B": "2"},
    });
    assert_eq!(
        redacted(value, &["items.*.secret", "env.*"]),
        json!({
            "items": [{"secret": "***", "name": "a"}, {"name": "b"}, {"secret": "***"}, "scalar"],
            "env": {"A": "***", "B": "***"},
        })
    );
}

#[test]
fn paths_that_match_nothing_leave_the_value_unchanged() {
    let value = json!({"a": {"b": [1, 2]}, "list": [1, 2], "s": "x"});
    let unchanged =
        redacted(value.clone(), &["missing", "a.c", "a.b.c", "s.deeper", "list.0", "a.b.*.x"]);
    assert_eq!(unchanged, value);
    assert_eq!(redacted(json!("just a string"), &["*"]), json!("just a string"));
}

#[test]
fn invalid_paths_name_the_path() {
    for text in ["", "a..b", ".a", "a."] {
        let error = FieldPath::parse(text).expect_err(text);
        assert_eq!(error.path, text);
        assert!(error.to_string().contains(&format!("`{text}`")), "{error}");
    }
    assert_eq!(FieldPath::parse("items.*.secret").unwrap().to_string(), "items.*.secret");
}

#[test]
fn detectors_replace_secrets_in_what_the_paths_left() {
    let detector = toolgate_secrets::Detector::new(&toolgate_secrets::Selection::all());
    let arguments = json!({
        "to": "jane.doe@example.com",
        "password": "AKIAIOSFODNN7EXAMPLE",
        "notes": ["card 4242 4242 4242 4242", "nothing here"],
        "count": 4242424242424242u64,
    });
    let record = ArgumentRecord::new(&arguments, &paths(&["password"])).detect(&detector);
    assert_eq!(
        record.redacted,
        json!({
            "to": "[REDACTED:email]",
            "password": "***",
            "notes": ["card [REDACTED:card_number]", "nothing here"],
            "count": "[REDACTED:card_number]",
        })
    );
    assert_eq!(record.sha256, sha256_hex(canonical_json(&arguments).as_bytes()), "of the original");
    let none = toolgate_secrets::Detector::new(&toolgate_secrets::Selection::none());
    let kept = ArgumentRecord::new(&arguments, &[]).detect(&none);
    assert_eq!(kept.redacted, arguments);
}
