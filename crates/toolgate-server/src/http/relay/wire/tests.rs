//! The relay's messages: how they are packed and read back, and their bounds.

use serde_json::json;
use toolgate_state::{MAX_CHANNEL_BYTES, MAX_PAYLOAD_BYTES, MAX_VALUE_BYTES};

use super::*;

fn name() -> String {
    session_name("s1.some-sealed-session-id")
}

#[test]
fn a_session_is_named_by_a_digest_never_by_its_id() {
    let id = "s1.AAAAsecret-bearer-credential";
    let name = session_name(id);
    assert_eq!(name.len(), 32);
    assert!(name.bytes().all(|b| b.is_ascii_hexdigit()), "{name}");
    assert_eq!(name, session_name(id), "stable");
    assert_ne!(name, session_name("s1.another"));
    assert!(!session_channel(&name).contains(id));
    for channel in [ANSWERS, LISTS, &session_channel(&name)] {
        assert!(channel.len() <= MAX_CHANNEL_BYTES, "{channel}");
        assert!(!channel.chars().any(char::is_control));
    }
}

#[test]
fn a_small_message_travels_in_its_envelope() {
    let question = mcp::RequestId::Number(1 << 40);
    let message = json!({"jsonrpc": "2.0", "id": 1_u64 << 40, "result": {"action": "decline"}});
    let Ok(Packed::Inline(payload)) = Envelope::pack(&name(), Some(&question), message.clone())
    else {
        panic!("inline")
    };
    assert!(payload.len() <= MAX_PAYLOAD_BYTES);
    let envelope = Envelope::unpack(&payload).expect("an envelope");
    assert_eq!(envelope.session, name());
    assert_eq!(envelope.question, Some(question));
    assert_eq!(envelope.message, Some(message));
    assert_eq!(envelope.key, None);
}

#[test]
fn a_large_message_waits_in_a_key_and_the_envelope_names_it() {
    let text = "x".repeat(MAX_PAYLOAD_BYTES);
    let message =
        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": text}});
    let Ok(Packed::Stored { envelope, key, value }) =
        Envelope::pack(&name(), None, message.clone())
    else {
        panic!("stored")
    };
    assert!(envelope.len() <= MAX_PAYLOAD_BYTES, "{}", envelope.len());
    assert!(key.starts_with("relay:"), "{key}");
    let unpacked = Envelope::unpack(&envelope).expect("an envelope");
    assert_eq!(unpacked.key.as_deref(), Some(key.as_str()));
    assert_eq!(unpacked.message, None);
    assert_eq!(stored_message(&value), Some(message));
    // Two messages, two keys.
    let Ok(Packed::Stored { key: other, .. }) = Envelope::pack(&name(), None, json!(text)) else {
        panic!("stored")
    };
    assert_ne!(key, other);
}

#[test]
fn a_message_larger_than_a_key_holds_does_not_travel() {
    let huge = json!("y".repeat(MAX_VALUE_BYTES));
    let too_large = Envelope::pack(&name(), None, huge).expect_err("too large");
    assert!(too_large.len > MAX_VALUE_BYTES);
    assert!(too_large.to_string().contains("more than the"), "{too_large}");
    // The largest that does.
    let fits = json!("y".repeat(MAX_VALUE_BYTES - 2));
    assert!(matches!(Envelope::pack(&name(), None, fits), Ok(Packed::Stored { .. })));
}

#[test]
fn only_a_well_formed_envelope_is_read() {
    let name = name();
    let good = json!({"session": name, "message": {"a": 1}});
    assert!(Envelope::unpack(good.to_string().as_bytes()).is_some());
    let bad = [
        json!({"session": name}),
        json!({"session": name, "message": {}, "key": "relay:x"}),
        json!({"session": name, "key": "toolgate:approval:x"}),
        json!({"session": name, "key": format!("relay:{}", "k".repeat(64))}),
        json!({"session": "short", "message": {}}),
        json!({"session": name, "message": {}, "extra": true}),
        json!({"session": name, "question": {"not": "an id"}, "message": {}}),
        json!(["session"]),
    ];
    for bad in bad {
        assert_eq!(Envelope::unpack(bad.to_string().as_bytes()), None, "{bad}");
    }
    for garbage in [&b""[..], b"\xff\xfe", b"{", b"null"] {
        assert_eq!(Envelope::unpack(garbage), None);
    }
}

#[test]
fn a_change_of_lists_names_its_replica() {
    let changed = ListsChanged { from: u64::MAX, tools: true, prompts: false, resources: true };
    let payload = changed.encode();
    assert!(payload.len() < 128);
    assert_eq!(ListsChanged::decode(&payload), Some(changed));
    assert_eq!(ListsChanged::decode(b"{\"from\":1}"), None);
}

#[test]
fn list_changed_does_not_travel_to_one_session_and_the_rest_does() {
    let updated = mcp::ServerNotification::ResourceUpdatedNotification(
        mcp::ResourceUpdatedNotification::new(mcp::ResourceUpdatedNotificationParam::new("x://")),
    );
    assert!(travels(&updated));
    let tools = mcp::ServerNotification::ToolListChangedNotification(Default::default());
    let prompts = mcp::ServerNotification::PromptListChangedNotification(Default::default());
    let resources = mcp::ServerNotification::ResourceListChangedNotification(Default::default());
    for listed in [tools, prompts, resources] {
        assert!(!travels(&listed), "{listed:?}");
    }
}
