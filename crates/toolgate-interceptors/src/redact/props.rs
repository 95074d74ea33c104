//! Property tests of `redact` on whole results: with secrets planted anywhere in any result
//! (prose, JSON blocks, embedded text, `structuredContent`), what comes out holds nothing its
//! detectors find, JSON objects and arrays are still JSON, nothing but text changes, and
//! redacting it again changes nothing.

use proptest::prelude::*;
use serde_json::{Value, json};
use toolgate_audit::EventBus;
use toolgate_core::mcp;

use super::{KIND, Redact};
use crate::props::result;
use crate::{Services, test_entry};

/// The entry, with a custom detector beside the built-in ones, built once for every case.
fn redact() -> &'static Redact {
    static REDACT: std::sync::LazyLock<Redact> = std::sync::LazyLock::new(|| {
        let options = json!({ "custom": [{ "name": "employee_id", "regex": "EMP-[0-9]{6}" }] });
        let entry = test_entry(KIND, "pipeline[0]", options);
        Redact::from_config(&entry, &Services::new(EventBus::new())).expect("valid options")
    });
    &REDACT
}

/// Secrets in the shapes the detectors know.
fn secret() -> impl Strategy<Value = String> {
    prop_oneof![
        "AKIA[A-Z0-9]{16}",
        "ghp_[A-Za-z0-9]{36}",
        "[a-z]{1,8}@[a-z]{1,8}\\.(com|org)",
        "EMP-[0-9]{6}",
        Just("Authorization: Bearer 0123456789abcdefghijKLMN".to_owned()),
        Just("postgres://admin:s3cr3t-pass@db.example.com/app".to_owned()),
        Just("4242 4242 4242 4242".to_owned()),
        Just(
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA0ex\n-----END RSA PRIVATE KEY-----"
                .to_owned()
        ),
    ]
}

/// `text` with `secret` put in at the character boundary nearest `at`, between spaces.
fn plant(text: &str, secret: &str, at: prop::sample::Index) -> String {
    let mut at = at.index(text.len() + 1);
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    format!("{} {secret} {}", &text[..at], &text[at..])
}

/// A result with secrets in some of its texts and in its `structuredContent`.
fn with_secrets() -> impl Strategy<Value = mcp::CallToolResult> {
    let plants = prop::collection::vec((secret(), any::<prop::sample::Index>()), 0..6);
    (result(), plants).prop_map(|(mut result, plants)| {
        for (n, (secret, at)) in plants.into_iter().enumerate() {
            let blocks = result.content.len();
            match result.content.get_mut(n % (blocks + 1)) {
                Some(mcp::ContentBlock::Text(t)) => {
                    t.text = match serde_json::from_str::<Value>(&t.text) {
                        // Into a JSON block as a string of it, so that it stays JSON.
                        Ok(Value::Array(mut items)) => {
                            items.push(Value::from(secret));
                            Value::Array(items).to_string()
                        }
                        _ => plant(&t.text, &secret, at),
                    };
                }
                _ => {
                    if let Some(Value::Object(members)) = &mut result.structured_content {
                        members.insert(format!("planted{n}"), Value::from(secret));
                    }
                }
            }
        }
        result
    })
}

fn texts(result: &mcp::CallToolResult) -> Vec<&str> {
    result
        .content
        .iter()
        .filter_map(|block| match block {
            mcp::ContentBlock::Text(t) => Some(t.text.as_str()),
            mcp::ContentBlock::Resource(r) => match &r.resource {
                mcp::ResourceContents::TextResourceContents { text, .. } => Some(text.as_str()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

fn strings(value: &Value, into: &mut Vec<String>) {
    match value {
        Value::String(s) => into.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| strings(v, into)),
        Value::Object(members) => members.iter().for_each(|(k, v)| {
            into.push(k.clone());
            strings(v, into);
        }),
        _ => {}
    }
}

proptest! {
    #[test]
    fn nothing_found_is_left_and_json_stays_json(result in with_secrets()) {
        let redact = redact();
        let Some(done) = redact.redact_result(&result) else {
            // Nothing found: nothing there to find.
            for text in texts(&result) {
                prop_assert!(redact.detector().find(text).is_empty(), "missed in {:?}", text);
            }
            return Ok(());
        };
        let out = &done.message;
        prop_assert!(done.counts.total() > 0);
        prop_assert_eq!(out.is_error, result.is_error);
        prop_assert_eq!(out.content.len(), result.content.len());
        for (before, after) in texts(&result).into_iter().zip(texts(out)) {
            let left = redact.detector().find(after);
            prop_assert!(left.is_empty(), "left in {:?}: {:?}", after, left);
            // What is kept JSON: an object or array (a number alone is text like any other).
            let container = |text: &str| {
                serde_json::from_str::<Value>(text).is_ok_and(|v| v.is_object() || v.is_array())
            };
            prop_assert!(!container(before) || container(after),
                "{:?} is no longer JSON: {:?}", before, after);
        }
        let mut left = Vec::new();
        if let Some(structured) = &out.structured_content {
            strings(structured, &mut left);
        }
        for text in left {
            prop_assert!(redact.detector().find(&text).is_empty(), "left in {:?}", text);
        }
        prop_assert_eq!(redact.redact_result(out), None, "redacting again changed it");
    }
}
