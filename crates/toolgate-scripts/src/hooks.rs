//! What the interceptor hooks are given and what they may return, as JSON (a script sees
//! plain Rune objects, vectors, strings and numbers: MCP's JSON as it is).
//!
//! - `pub async fn before_call(call, ctx)`: `call` is `#{ name, arguments, server, tool }`.
//!   It returns nothing (`()`) to let the call go on as it is, or an object with at most one
//!   of `arguments` (go on with these arguments), `deny` (refuse, with this reason) and
//!   `answer` (a `CallToolResult` given in the upstream's place), and optionally `keep`:
//!   any value, handed to `after_call` as `ctx.kept`.
//! - `pub async fn after_call(call, result, ctx)`: `result` is the `CallToolResult`; it
//!   returns nothing to leave it as it is, or the result to give instead.
//! - `pub async fn on_list_tools(tools, ctx)`: `tools` is the list of tools, each with its
//!   `server` beside its MCP fields; it returns nothing, or the list to show.
//!
//! `ctx` is `#{ server, tool, principal, session, request_id, kept }` (what is unknown is
//! `()`).

use serde_json::{Map, Value};

/// What `before_call` decided.
#[derive(Debug, Clone, PartialEq)]
pub enum BeforeCall {
    /// Go on; with other arguments when given.
    Continue(Option<Map<String, Value>>),
    /// Refuse the call.
    Deny(String),
    /// Answer in the upstream's place (a `CallToolResult`).
    Answer(Value),
}

/// Reads what `before_call` returned: the decision and what it keeps for `after_call`.
pub fn before_call(value: Value) -> Result<(BeforeCall, Option<Value>), String> {
    let mut object = match value {
        Value::Null => return Ok((BeforeCall::Continue(None), None)),
        Value::Object(object) => object,
        other => {
            return Err(format!(
                "before_call must return () or an object with arguments, deny or answer, not {other}"
            ));
        }
    };
    let kept = object.remove("keep");
    if let Some(key) =
        object.keys().find(|k| !["arguments", "deny", "answer"].contains(&k.as_str()))
    {
        return Err(format!(
            "before_call returned the unknown key {key:?} (known: arguments, deny, answer, keep)"
        ));
    }
    if object.len() > 1 {
        return Err("before_call may return only one of arguments, deny and answer".to_owned());
    }
    let decision = match object.into_iter().next() {
        None => BeforeCall::Continue(None),
        Some((key, value)) => match (key.as_str(), value) {
            ("arguments", Value::Object(arguments)) => BeforeCall::Continue(Some(arguments)),
            ("deny", Value::String(reason)) => BeforeCall::Deny(reason),
            ("answer", answer @ Value::Object(_)) => BeforeCall::Answer(answer),
            (key, value) => {
                let wanted = match key {
                    "arguments" => "an object",
                    "deny" => "a string (the reason)",
                    _ => "an object (a CallToolResult)",
                };
                return Err(format!("before_call: {key} must be {wanted}, not {value}"));
            }
        },
    };
    Ok((decision, kept))
}

/// Reads what `after_call` returned: the result to give instead, if any.
pub fn after_call(value: Value) -> Result<Option<Value>, String> {
    match value {
        Value::Null => Ok(None),
        result @ Value::Object(_) => Ok(Some(result)),
        other => Err(format!("after_call must return () or a CallToolResult object, not {other}")),
    }
}

/// Reads what `on_list_tools` returned: the tools to show instead, if any.
pub fn on_list_tools(value: Value) -> Result<Option<Vec<Value>>, String> {
    match value {
        Value::Null => Ok(None),
        Value::Array(tools) => Ok(Some(tools)),
        other => Err(format!("on_list_tools must return () or a list of tools, not {other}")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn before_call_reads_each_decision_and_what_it_keeps() {
        assert_eq!(before_call(Value::Null).unwrap(), (BeforeCall::Continue(None), None));
        assert_eq!(before_call(json!({})).unwrap().0, BeforeCall::Continue(None));
        let (decision, kept) = before_call(json!({"arguments": {"a": 1}, "keep": 5})).unwrap();
        assert_eq!(
            decision,
            BeforeCall::Continue(Some(json!({"a": 1}).as_object().unwrap().clone()))
        );
        assert_eq!(kept, Some(json!(5)));
        assert_eq!(before_call(json!({"deny": "no"})).unwrap().0, BeforeCall::Deny("no".into()));
        let answer = json!({"content": []});
        assert_eq!(before_call(json!({"answer": answer})).unwrap().0, BeforeCall::Answer(answer));
    }

    #[test]
    fn before_call_refuses_what_it_cannot_read() {
        for bad in [
            json!(true),
            json!({"deny": 1}),
            json!({"deny": "x", "answer": {}}),
            json!({"argument": {}}),
            json!({"arguments": []}),
        ] {
            assert!(before_call(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn after_call_and_lists_take_nothing_or_their_own_shape() {
        assert_eq!(after_call(Value::Null).unwrap(), None);
        assert!(after_call(json!([1])).is_err());
        assert_eq!(on_list_tools(json!([])).unwrap(), Some(vec![]));
        assert!(on_list_tools(json!({})).is_err());
    }
}
