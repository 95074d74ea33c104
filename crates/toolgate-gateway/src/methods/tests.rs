//! The method table against rmcp's own request types, and against the documentation.

use std::collections::BTreeSet;

use serde_json::Value;
use toolgate_core::mcp;

use super::*;

/// The `method` of every variant of a request enum, read from its JSON schema: each variant is
/// one `anyOf` entry whose `method` is a constant. (A custom request's method is any string and
/// has no constant; the table's `OTHER_CUSTOM` rows cover it.)
fn methods_of(schema: schemars::Schema) -> BTreeSet<String> {
    let schema = schema.to_value();
    let definitions = schema.get("$defs").cloned().unwrap_or(Value::Null);
    let resolve = |value: &Value| -> Value {
        match value.get("$ref").and_then(Value::as_str) {
            Some(reference) => {
                let name = reference.rsplit('/').next().expect("a $ref has a name");
                definitions.get(name).cloned().unwrap_or_else(|| panic!("no definition {name}"))
            }
            None => value.clone(),
        }
    };
    let variants = schema.get("anyOf").and_then(Value::as_array).expect("an untagged enum");
    let mut methods = BTreeSet::new();
    for variant in variants {
        let variant = resolve(variant);
        let Some(method) = variant.pointer("/properties/method") else { continue };
        if let Some(name) = resolve(method).get("const").and_then(Value::as_str) {
            methods.insert(name.to_owned());
        }
    }
    methods
}

fn table_methods(sender: Sender) -> BTreeSet<String> {
    METHODS
        .iter()
        .filter(|m| m.sender == sender && m.name != OTHER_CUSTOM && !m.is_notification())
        .map(|m| m.name.to_owned())
        .collect()
}

fn table_notifications(sender: Sender) -> BTreeSet<String> {
    METHODS
        .iter()
        .filter(|m| m.sender == sender && m.is_notification() && m.name != OTHER_NOTIFICATION)
        .map(|m| m.name.to_owned())
        .collect()
}

#[test]
fn every_notification_a_client_can_send_is_intercepted_or_exempt_with_a_reason() {
    let rmcp = methods_of(schemars::schema_for!(mcp::ClientNotification));
    assert!(rmcp.len() >= 4, "the schema walk found the variants: {rmcp:?}");
    assert_eq!(rmcp, table_notifications(Sender::Client), "rmcp's client notifications");
}

#[test]
fn every_notification_an_upstream_can_send_is_intercepted_or_exempt_with_a_reason() {
    let rmcp = methods_of(schemars::schema_for!(mcp::ServerNotification));
    assert!(rmcp.len() >= 8, "the schema walk found the variants: {rmcp:?}");
    assert_eq!(rmcp, table_notifications(Sender::Upstream), "rmcp's server notifications");
    // Each custom kind is covered too.
    for sender in [Sender::Client, Sender::Upstream] {
        assert!(METHODS.iter().any(|m| m.sender == sender && m.name == OTHER_NOTIFICATION));
    }
}

#[test]
fn every_request_a_client_can_send_is_intercepted_or_exempt_with_a_reason() {
    let rmcp = methods_of(schemars::schema_for!(mcp::ClientRequest));
    assert!(rmcp.len() >= 20, "the schema walk found the variants: {rmcp:?}");
    let table = table_methods(Sender::Client);
    let missing: Vec<_> = rmcp.difference(&table).collect();
    assert!(
        missing.is_empty(),
        "rmcp has client requests the method table does not handle: {missing:?}; route them \
         through the pipeline (an InterceptionEvent) or list them as exempt with a reason"
    );
    let stale: Vec<_> = table.difference(&rmcp).filter(|m| *m != "interceptors/list").collect();
    assert!(stale.is_empty(), "the table names methods rmcp does not have: {stale:?}");
}

#[test]
fn every_request_an_upstream_can_send_is_intercepted_or_exempt_with_a_reason() {
    let rmcp = methods_of(schemars::schema_for!(mcp::ServerRequest));
    assert_eq!(
        rmcp,
        table_methods(Sender::Upstream),
        "rmcp's server-to-client requests and the method table disagree"
    );
}

#[test]
fn every_event_is_raised_by_exactly_one_method_and_every_exemption_says_why() {
    for event in InterceptionEvent::ALL {
        let raised: Vec<&str> = METHODS
            .iter()
            .filter(|m| matches!(m.handling, Handling::Intercepted { event: e, .. } if e == event))
            .map(|m| m.name)
            .collect();
        assert_eq!(raised, [event.as_str()], "{event}");
        let by_upstream =
            METHODS.iter().any(|m| m.name == event.as_str() && m.sender == Sender::Upstream);
        assert_eq!(by_upstream, event.is_server_to_client(), "{event}");
    }
    for method in METHODS {
        if let Handling::Exempt(reason) = method.handling {
            assert!(reason.len() > 20, "{} needs a reason", method.name);
        }
    }
}

#[test]
fn the_documentation_shows_this_table() {
    let doc = include_str!("../../../../docs/interceptors.md");
    assert!(
        doc.contains(&markdown_table()),
        "docs/interceptors.md must contain the method table exactly as \
         toolgate_server::methods::markdown_table() prints it:\n\n{}",
        markdown_table()
    );
}
