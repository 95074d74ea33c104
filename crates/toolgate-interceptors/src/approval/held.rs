//! What a held call is: the call as approvers see it, the ruling on it, and how a wait for
//! one ended. The desk (`desk.rs`) and its shared half (`shared.rs`) both speak of these.

use std::time::{Duration, SystemTime};

use serde_json::{Map, Value, json};
use tokio::time::Instant;
use toolgate_intercept::Principal;

#[cfg(doc)]
use toolgate_intercept::call_digest;

/// A call waiting on the desk, as approvers see it.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingApproval {
    /// Its id on the desk.
    pub id: String,
    /// What is approved: see [`call_digest`].
    pub digest: String,
    /// The upstream.
    pub server: String,
    /// The tool's name at the upstream.
    pub tool: String,
    /// The name the caller used.
    pub exposed: String,
    /// The arguments, as they will be sent.
    pub arguments: Value,
    /// Who asked (`kind:id`, and `@tenant` when it has one).
    pub caller: String,
    /// Who asked, for separation of duties (see `desk::is_caller`).
    pub(super) caller_principal: Principal,
    /// Why approval is needed.
    pub reason: String,
    /// The interceptor that asked for approval.
    pub asked_by: String,
    /// When it was put on the desk.
    pub requested_at: SystemTime,
    /// When it expires.
    pub deadline: Instant,
    /// Whether the approver must differ from the caller.
    pub separate_duties: bool,
}

impl PendingApproval {
    /// The tenant of who asked, if it is in one.
    pub fn caller_tenant(&self) -> Option<&str> {
        self.caller_principal.tenant.as_deref()
    }

    /// As JSON for the admin API.
    pub fn to_json(&self) -> Value {
        let now = Instant::now();
        let unix_ms = self
            .requested_at
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        json!({
            "id": self.id,
            "server": self.server,
            "tool": self.tool,
            "exposed": self.exposed,
            "arguments": self.arguments,
            "caller": self.caller,
            "reason": self.reason,
            "asked_by": self.asked_by,
            "digest": self.digest,
            "requested_at_unix_ms": unix_ms,
            "expires_in_ms": self.deadline.saturating_duration_since(now).as_millis() as u64,
            "separate_duties": self.separate_duties,
        })
    }
}

/// An approver's ruling on a held call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ruling {
    /// Let it run; and the very same call again by the same caller (see `CallerKey`) for this
    /// long.
    Allow {
        /// How long the same call stays approved.
        remember: Option<Duration>,
    },
    /// Refuse it.
    Deny {
        /// Why, for the model and the audit log.
        reason: Option<String>,
    },
}

/// How a wait on the desk ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Settled {
    Decided { by: String, answer: Ruling },
    Expired,
}

impl Ruling {
    /// Reads an admin API decision body: `{"decision": "allow" | "deny", "remember": "10m",
    /// "reason": "..."}`.
    pub fn from_body(body: &Map<String, Value>) -> Result<Ruling, String> {
        for key in body.keys() {
            if !["decision", "remember", "reason"].contains(&key.as_str()) {
                return Err(format!("unknown field {key:?} (expected decision, remember, reason)"));
            }
        }
        let reason = match body.get("reason") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => return Err(format!("`reason` must be a string, found {other}")),
        };
        let remember = match body.get("remember") {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => {
                match crate::options::positive_duration(text, crate::options::ABOVE_ZERO) {
                    Ok(duration) => Some(duration),
                    Err(problem) => return Err(format!("`remember`: {problem}")),
                }
            }
            Some(other) => {
                return Err(format!(
                    "`remember` must be a duration such as \"10m\", found {other}"
                ));
            }
        };
        match body.get("decision").and_then(Value::as_str) {
            Some("allow") => Ok(Ruling::Allow { remember }),
            Some("deny") if remember.is_some() => {
                Err("`remember` only goes with \"allow\"".to_owned())
            }
            Some("deny") => Ok(Ruling::Deny { reason }),
            Some(other) => {
                Err(format!("`decision` must be \"allow\" or \"deny\", found {other:?}"))
            }
            None => Err("missing `decision` (\"allow\" or \"deny\")".to_owned()),
        }
    }
}
