//! Tests of `Event`: field order, the flat JSON shape, and an envelope fields cannot override.

use std::time::{Duration, UNIX_EPOCH};

use serde_json::json;

use super::{Event, kind};

fn at_epoch_plus(millis: u64) -> std::time::SystemTime {
    UNIX_EPOCH + Duration::from_millis(millis)
}

#[test]
fn builder_keeps_fields_in_order() {
    let event = Event::new(kind::TOOLS_CALL_FINISHED)
        .with("server", "fs")
        .with("duration_ms", 12)
        .with("ok", true)
        .with("arguments", json!({"path": "/tmp"}));
    let keys: Vec<&str> = event.fields.keys().map(String::as_str).collect();
    assert_eq!(keys, ["server", "duration_ms", "ok", "arguments"]);
    assert_eq!(event.get("duration_ms"), Some(&json!(12)));
    assert_eq!(event.get("missing"), None);
}

#[test]
fn serializes_flat_with_time_and_kind_first() {
    let event = Event::new(kind::TOOLS_CALL_DENIED)
        .at(at_epoch_plus(1_714_566_896_789))
        .with("server", "fs")
        .with("duration_ms", 12);
    let text = serde_json::to_string(&event).unwrap();
    assert_eq!(
        text,
        r#"{"time":"2024-05-01T12:34:56.789Z","kind":"tools/call/denied","server":"fs","duration_ms":12}"#
    );
}

#[test]
fn fields_cannot_override_the_envelope() {
    let mut event = Event::new("x/y").at(at_epoch_plus(0));
    // Set behind the builder's back: serialization still leaves them out.
    for key in Event::RESERVED {
        event.fields.insert(key.to_owned(), json!("forged"));
    }
    event.fields.insert("kept".to_owned(), json!(1));
    let value = serde_json::to_value(&event).unwrap();
    assert_eq!(value, json!({"time": "1970-01-01T00:00:00.000Z", "kind": "x/y", "kept": 1}));
}

#[test]
fn with_replaces_an_existing_field() {
    let event = Event::new("x").with("a", 1).with("a", 2);
    assert_eq!(event.fields.len(), 1);
    assert_eq!(event.get("a"), Some(&json!(2)));
}
