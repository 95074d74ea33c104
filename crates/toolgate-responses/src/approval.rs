//! The gateway's own approval rules, answered by the application. When the `approval`
//! interceptor asks about a call, nobody waits at a terminal: the application answers with an
//! `mcp_approval_response` in a later request. So a call the application has not approved yet
//! is declined here and marked as asked, and the response carries an `mcp_approval_request`
//! for it; a call it approved is allowed once. `require_approval` and the gateway's `ask` rules
//! thus lead to the same request, and the stricter of the two wins.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::future::BoxFuture;
use serde_json::Value;
use toolgate_core::mcp;
use toolgate_intercept::Elicitor;
use toolgate_intercept::approval_handoff::{ApprovalAnswer, ApprovalAsk};

/// Answers the approval questions of one call.
#[derive(Debug, Clone)]
pub(crate) struct ApplicationApproval {
    /// The application approved this call already.
    approved: bool,
    /// Set when the gateway asked and the call was not approved: it waits for the application.
    asked: Arc<AtomicBool>,
}

/// Why a call the gateway wanted approved was not run (the audit log's reason).
pub(crate) const WAITS_FOR_APPLICATION: &str =
    "waiting for the application's approval (mcp_approval_request)";

impl ApplicationApproval {
    /// For a call the application has (`approved`) or has not approved.
    pub(crate) fn new(approved: bool) -> ApplicationApproval {
        ApplicationApproval { approved, asked: Arc::default() }
    }

    /// Whether the gateway asked about a call that was not approved.
    pub(crate) fn was_asked(&self) -> bool {
        self.asked.load(Ordering::Acquire)
    }
}

impl Elicitor for ApplicationApproval {
    fn can_elicit(&self) -> bool {
        true
    }

    fn elicit(
        &self,
        params: mcp::ElicitRequestParams,
    ) -> BoxFuture<'static, Result<mcp::ElicitResult, String>> {
        let approved = self.approved;
        let asked = self.asked.clone();
        Box::pin(async move {
            let text = serde_json::to_value(&params).map_err(|e| e.to_string())?;
            let ask = text.get("_meta").and_then(Value::as_object).and_then(ApprovalAsk::from_meta);
            let Some(ask) = ask else {
                // Another interceptor's form: an application answers only approvals.
                return Ok(mcp::ElicitResult::new(mcp::ElicitationAction::Decline));
            };
            let (decision, reason) = if approved {
                (ask.choices.once, None)
            } else {
                asked.store(true, Ordering::Release);
                (ask.choices.deny, Some(WAITS_FOR_APPLICATION.to_owned()))
            };
            let mut result = mcp::ElicitResult::new(mcp::ElicitationAction::Accept);
            result.content = Some(ApprovalAnswer { decision, reason }.to_content());
            Ok(result)
        })
    }
}
