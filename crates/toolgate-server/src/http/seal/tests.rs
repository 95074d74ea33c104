//! Sealed ids: they open under their key only, for their owner only, until their age; what a
//! client declares is kept, or fitted when it is large, and the id stays small.

use serde_json::{Value, json};

use super::*;

const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";
const NOW: u64 = 1_800_000_000;

fn params(value: Value) -> mcp::InitializeRequestParams {
    serde_json::from_value(value).expect("initialize parameters")
}

fn ordinary() -> mcp::InitializeRequestParams {
    params(json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {
            "elicitation": {"form": {}, "url": {}},
            "roots": {"listChanged": true},
            "sampling": {"tools": {}}
        },
        "clientInfo": {"name": "mcp", "version": "1.24.0", "title": "An MCP client"}
    }))
}

fn alice() -> Principal {
    Principal::new("jwt", "alice").with_tenant(Some("acme".into()))
}

fn sealed(seal: &SessionSeal, params: &mcp::InitializeRequestParams) -> String {
    seal.seal(&alice(), &fit(params), &mcp::ProtocolVersion::V_2025_11_25, NOW)
}

#[test]
fn an_id_opens_under_its_key_with_what_it_was_sealed_with() {
    let seal = SessionSeal::new(KEY);
    let id = sealed(&seal, &ordinary());
    assert!(id.starts_with(PREFIX), "{id}");
    assert!(id.bytes().all(|b| (0x21..=0x7e).contains(&b)), "visible ASCII only: {id}");
    assert!(id.len() < 400, "an ordinary client's id is small: {} characters", id.len());
    let opened = seal.open(&id, NOW + 60).expect("it opens");
    assert_eq!(opened.version, mcp::ProtocolVersion::V_2025_11_25);
    assert_eq!(opened.issued_at, NOW);
    assert_eq!(opened.params.capabilities, ordinary().capabilities, "kept whole");
    assert_eq!(opened.params.client_info.name, "mcp");
    assert_eq!(opened.params.client_info.version, "1.24.0");
    assert!(opened.is_owned_by(&alice()));
    // Another replica derives the same key from the same shared key.
    assert!(SessionSeal::new(KEY).open(&id, NOW).is_some());
}

#[test]
fn two_ids_of_the_same_session_differ() {
    let seal = SessionSeal::new(KEY);
    assert_ne!(sealed(&seal, &ordinary()), sealed(&seal, &ordinary()));
}

#[test]
fn only_its_owner_is_the_owner() {
    let seal = SessionSeal::new(KEY);
    let opened = seal.open(&sealed(&seal, &ordinary()), NOW).expect("it opens");
    // Groups are not part of who a principal is: the same person in other groups owns it.
    assert!(opened.is_owned_by(&alice().with_groups(vec!["admins".into()])));
    for other in [
        Principal::new("jwt", "alice"),
        Principal::new("jwt", "alice").with_tenant(Some("other".into())),
        Principal::new("key", "alice").with_tenant(Some("acme".into())),
        Principal::new("jwt", "mallory").with_tenant(Some("acme".into())),
        // Length prefixes keep the parts apart: "jwt" + "alice" is not "jwta" + "lice".
        Principal::new("jwta", "lice").with_tenant(Some("acme".into())),
        Principal::anonymous(),
    ] {
        assert!(!opened.is_owned_by(&other), "{other:?}");
    }
}

#[test]
fn an_id_opens_until_its_age_and_not_from_far_in_the_future() {
    let seal = SessionSeal::new(KEY);
    let id = sealed(&seal, &ordinary());
    let age = MAX_AGE.as_secs();
    assert!(seal.open(&id, NOW + age).is_some());
    assert!(seal.open(&id, NOW + age + 1).is_none(), "too old");
    assert!(seal.open(&id, NOW - CLOCK_SKEW).is_some(), "another replica's clock is behind");
    assert!(seal.open(&id, NOW - CLOCK_SKEW - 1).is_none(), "issued too far in the future");
}

#[test]
fn anything_else_does_not_open() {
    let seal = SessionSeal::new(KEY);
    let id = sealed(&seal, &ordinary());
    let other_key = SessionSeal::new(b"another key, also thirty-two bytes long");
    assert!(other_key.open(&id, NOW).is_none(), "another key");
    let body = id.strip_prefix(PREFIX).expect("prefixed");
    let mut tries = vec![
        String::new(),
        PREFIX.to_owned(),
        "0123456789abcdef0123456789abcdef".to_owned(),
        body.to_owned(),
        format!("s2.{body}"),
        id[..id.len() - 1].to_owned(),
        id[..PREFIX.len() + 40].to_owned(),
        format!("{id}A"),
        format!("{id}="),
        format!("{PREFIX}{}", "A".repeat(MOST_ID_CHARS)),
        format!("{PREFIX}!!!!"),
    ];
    // Every character changed, one at a time.
    for at in PREFIX.len()..id.len() {
        let mut changed = id.clone().into_bytes();
        changed[at] = if changed[at] == b'A' { b'B' } else { b'A' };
        tries.push(String::from_utf8(changed).expect("ASCII"));
    }
    for attempt in tries {
        assert!(seal.open(&attempt, NOW).is_none(), "{attempt:?} opened");
    }
}

#[test]
fn a_large_client_is_fitted_and_its_id_stays_bounded() {
    let big = "x".repeat(10_000);
    let quotes = "\"\u{1}".repeat(5_000);
    let hostile = params(json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {
            "experimental": {"a": {"blob": big}},
            "extensions": {"io.example/ext": {"blob": big}},
            "roots": {"listChanged": true},
            "sampling": {"tools": {"blob": big}, "context": {"blob": big}},
            "elicitation": {"form": {"schemaValidation": true}, "url": {}}
        },
        "clientInfo": {"name": quotes, "version": big, "title": big, "websiteUrl": "https://x"}
    }));
    let seal = SessionSeal::new(KEY);
    let id = sealed(&seal, &hostile);
    assert!(id.len() <= MOST_ID_CHARS, "{} characters", id.len());
    let opened = seal.open(&id, NOW).expect("a fitted id opens");
    let kept = &opened.params.capabilities;
    assert!(kept.experimental.is_none() && kept.extensions.is_none(), "{kept:?}");
    let sampling = kept.sampling.as_ref().expect("sampling is still declared");
    assert!(sampling.tools.as_ref().is_some_and(|tools| tools.is_empty()), "{sampling:?}");
    assert!(sampling.context.as_ref().is_some_and(|context| context.is_empty()));
    assert_eq!(kept.roots, hostile.capabilities.roots);
    assert_eq!(kept.elicitation, hostile.capabilities.elicitation);
    assert_eq!(opened.params.client_info.version, "x".repeat(MOST_CLIENT_FIELD_BYTES));
    let name = &opened.params.client_info.name;
    assert!(serde_json::to_string(name).unwrap().len() <= MOST_CLIENT_FIELD_BYTES + 2, "{name:?}");
    assert!(name.starts_with("\"\u{1}\"\u{1}"), "{name:?}");
    assert_eq!(
        fit(&hostile),
        opened.params.clone().with_protocol_version(hostile.protocol_version)
    );
}

#[test]
fn small_extras_are_kept_and_large_ones_dropped_first() {
    let with_extras = |blob: &str| {
        params(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {
                "experimental": {"a": {"blob": blob}},
                "extensions": {"io.example/ext": {}},
                "sampling": {"tools": {"x": 1}}
            },
            "clientInfo": {"name": "n", "version": "1"}
        }))
    };
    let small = fit(&with_extras("small"));
    assert_eq!(small.capabilities, with_extras("small").capabilities, "all of it fits");
    let large = fit(&with_extras(&"x".repeat(300)));
    assert!(large.capabilities.experimental.is_none());
    assert!(large.capabilities.extensions.is_some(), "what fits without experimental stays");
    let tools = large.capabilities.sampling.and_then(|s| s.tools).expect("tools");
    assert_eq!(tools.get("x"), Some(&json!(1)), "not emptied while it fits");
}

#[test]
fn copies_are_marked_apart_within_javascript_numbers() {
    let marks: Vec<u64> = (0..64).map(|_| copy_mark()).collect();
    assert!(marks.iter().all(|m| (1..1 << 52).contains(m)), "{marks:?}");
    let mut distinct = marks.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), marks.len());
}
