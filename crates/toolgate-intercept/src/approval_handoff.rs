//! The approval hand-off: what the `approval` interceptor puts in the `_meta` of the question
//! it asks a client (`elicitation/create`) so that a client that knows toolgate (its own
//! agent, a front that renders approvals itself) can ask in its own way instead of showing
//! the form, and what such a client answers. Any other client shows the form, whose answer
//! has the same shape.
//!
//! ```json
//! "_meta": { "io.toolgate/approval": {
//!     "server": "fs", "tool": "fs__write_file", "arguments": { "path": "/tmp/x" },
//!     "reason": "writes need a person", "choices": { "once": "allow once", "again": "allow for 10m", "deny": "deny" }
//! } }
//! ```
//!
//! The answer is an accepted elicitation whose content is `{"decision": <one of the
//! choices' values>, "reason": "..."}` (the reason optional).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The `_meta` key under which an approval question carries its [`ApprovalAsk`].
pub const APPROVAL_META: &str = "io.toolgate/approval";

/// What an approval question is about, and the `decision` value of each choice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalAsk {
    /// The server whose tool is called.
    pub server: String,
    /// The tool, as clients see it (`server__tool`).
    pub tool: String,
    /// The call's arguments.
    #[serde(default)]
    pub arguments: Value,
    /// Why the call needs an approval (empty when the rule does not say).
    #[serde(default)]
    pub reason: String,
    pub choices: ApprovalChoices,
}

/// The `decision` value of each choice an approval question offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalChoices {
    /// Allow this call.
    pub once: String,
    /// Allow this exact call again for a while.
    pub again: String,
    /// Refuse it.
    pub deny: String,
}

impl ApprovalAsk {
    /// The ask in an elicitation's `_meta`, if it carries one that reads.
    pub fn from_meta(meta: &Map<String, Value>) -> Option<ApprovalAsk> {
        serde_json::from_value(meta.get(APPROVAL_META)?.clone()).ok()
    }

    /// As `_meta` carries it: `{"io.toolgate/approval": {...}}`.
    pub fn to_meta(&self) -> Map<String, Value> {
        let mut meta = Map::new();
        meta.insert(APPROVAL_META.to_owned(), serde_json::to_value(self).unwrap_or_default());
        meta
    }
}

/// What an approval question is answered with (the content of an accepted elicitation).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalAnswer {
    /// One of the [`ApprovalChoices`]' values.
    pub decision: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl ApprovalAnswer {
    /// The answer an elicitation's content gives; an empty decision when it has none.
    pub fn from_content(content: Option<&Value>) -> ApprovalAnswer {
        content.and_then(|c| serde_json::from_value(c.clone()).ok()).unwrap_or(ApprovalAnswer {
            decision: String::new(),
            reason: content
                .and_then(|c| c.get("reason"))
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }

    /// As an elicitation's content.
    pub fn to_content(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_ask_travels_in_meta_and_an_answer_in_content() {
        let ask = ApprovalAsk {
            server: "fs".into(),
            tool: "fs__write_file".into(),
            arguments: json!({"path": "/tmp/x"}),
            reason: "writes need a person".into(),
            choices: ApprovalChoices {
                once: "allow once".into(),
                again: "allow for 10m".into(),
                deny: "deny".into(),
            },
        };
        let meta = ask.to_meta();
        assert_eq!(meta[APPROVAL_META]["choices"]["again"], "allow for 10m");
        assert_eq!(ApprovalAsk::from_meta(&meta), Some(ask));
        assert_eq!(ApprovalAsk::from_meta(&Map::new()), None);
        let answer = ApprovalAnswer { decision: "deny".into(), reason: Some("no".into()) };
        assert_eq!(ApprovalAnswer::from_content(Some(&answer.to_content())), answer);
        let bare = ApprovalAnswer::from_content(Some(&json!({"reason": "r"})));
        assert_eq!((bare.decision.as_str(), bare.reason.as_deref()), ("", Some("r")));
        assert_eq!(ApprovalAnswer::from_content(None).decision, "");
    }
}
