//! `approval`: what `ask` does. A call that an earlier interceptor (`policy`) marked as
//! needing a person's approval is held here until someone decides, or refused.
//!
//! ```toml
//! [[pipeline]]
//! kind = "approval"
//! via = "external"          # elicit | external | deny (default: elicit)
//! fallback = "deny"         # with via = "elicit", when the client cannot be asked: deny | external
//! expires = "5m"            # unanswered for this long counts as refused (default: 5m)
//! separate_duties = true    # external: the approver must not be the caller (default: false)
//! remember = "10m"          # elicit: what "allow this exact call again" lasts (default: 10m)
//! ```
//!
//! - `elicit` asks the person at the downstream client with MCP `elicitation/create`: allow
//!   once, allow this exact call again for `remember`, or deny. This is self-approval: the
//!   person asked is the caller. With `separate_duties` it is refused at start-up. The
//!   question also carries what it is about in `_meta["io.toolgate/approval"]` (`server`,
//!   `tool`, `arguments`, `reason`, and the `decision` of each choice under `choices`), so
//!   that a client that knows toolgate (its own agent) can ask in its own way.
//! - `external` holds the call on the [`ApprovalDesk`] until an approver decides through the
//!   admin API (`GET /approvals`, `POST /approvals/{id}` with
//!   `{"decision": "allow" | "deny", "remember": "10m", "reason": "..."}`), and logs a
//!   one-line notice saying so. With `separate_duties` the approver (the admin token's name)
//!   must not name the caller: not its id (a bare name is taken to be the same person under
//!   any kind: `alice` is `jwt:alice`, `key:alice` and `local:alice`), nor its `kind:id`, nor
//!   its `kind:id@tenant`. A name with a kind names that identity only (`key:alice` may
//!   approve a call of `jwt:alice`).
//!   It needs an `[admin]` section: without one, the pipeline is refused at start-up (and by
//!   `toolgate config check`). Where the admin API does not run (`toolgate call`), nobody
//!   could decide, so the call is refused at once, saying so.
//! - `deny` refuses, for non-interactive use.
//!
//! An approval is bound to [`call_digest`], the SHA-256 of the tool's identity (server,
//! original name, its definition as listed) and the canonical arguments. The gateway computes
//! it again just before dispatch and refuses the call if it changed meanwhile. "Allow again"
//! is remembered per caller and digest: the same caller making the very same call within the
//! time is let through without asking, and the grant is recorded as `remembered`.
//!
//! The caller is whom toolgate can tell apart ([`CallerKey`]): a principal that names someone
//! (`local`, `agent:<user>`, `jwt:<sub>`, `key:<name>`; its kind, id and tenant, so the same
//! id in another tenant is another caller) in any of its sessions, but an anonymous HTTP client (all of them
//! are `anonymous:anonymous` until clients authenticate) only in its own session, so a grant
//! given for one stranger's call never lets another's through. A client with no session (a
//! 2026-07-28 request) is asked every time: all it has is an address, which every client on a
//! host shares. With `separate_duties`, a grant the caller gave itself by elicitation (`via =
//! "elicit"` with `fallback = "external"`) does not let a call through that goes to an
//! approver; the approver's name is compared with the caller's principal.
//!
//! Every step is an event: `approval/requested`, `approval/granted`, `approval/refused`,
//! `approval/expired`. A refusal names this interceptor and who refused (or that nobody
//! answered in time).
//!
//! It is a validator that runs after the others by default (priority 1000): a call that
//! another check refuses is never put in front of a person.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::time::Instant;
use toolgate_audit::{Event as AuditEvent, kind};
use toolgate_config::InterceptorConfig;
use toolgate_core::{duration, mcp};
#[cfg(doc)]
use toolgate_intercept::CallerKey;
use toolgate_intercept::approval_handoff::{ApprovalAnswer, ApprovalAsk, ApprovalChoices};
use toolgate_intercept::{
    ApprovalRequired, Approved, CallContext, Descriptor, Hook, InterceptError, InterceptionEvent,
    Interceptor, InterceptorType, Message, Mode, Outcome, Phase, Refusal, call_digest,
};

use crate::options::{ABOVE_ZERO, OptionError, Options};

mod desk;
mod held;
mod shared;

pub use desk::{ApprovalDesk, DecideError};
use held::Settled;
pub use held::{PendingApproval, Ruling};

/// The config `kind`.
pub const KIND: &str = "approval";
/// How long a held call waits by default.
pub const DEFAULT_EXPIRY: Duration = Duration::from_secs(5 * 60);
/// What "allow again" lasts by default in the elicitation form.
pub const DEFAULT_REMEMBER: Duration = Duration::from_secs(10 * 60);
/// Where approval runs among validators unless configured: after the others.
pub const DEFAULT_PRIORITY: i32 = 1000;
/// Extra time the interceptor's own timeout allows beyond `expires`.
const TIMEOUT_MARGIN: Duration = Duration::from_secs(30);

/// How a person is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// MCP `elicitation/create` to the calling client.
    Elicit,
    /// The admin API's approval desk.
    External,
    /// Nobody: refuse.
    Deny,
}

impl Via {
    fn as_str(self) -> &'static str {
        match self {
            Via::Elicit => "elicit",
            Via::External => "external",
            Via::Deny => "deny",
        }
    }
}

/// The `approval` interceptor.
#[derive(Debug)]
pub struct Approval {
    descriptor: Descriptor,
    via: Via,
    fallback: Via,
    expires: Duration,
    remember: Duration,
    separate_duties: bool,
    desk: Arc<ApprovalDesk>,
}

impl Approval {
    /// Builds it from its `[[pipeline]]` entry; held calls go on `desk`.
    pub fn from_config(
        entry: &InterceptorConfig,
        desk: Arc<ApprovalDesk>,
    ) -> Result<Approval, Vec<OptionError>> {
        let mut options = Options::new(entry.path.clone(), &entry.options);
        options.only(&["via", "fallback", "expires", "separate_duties", "remember"]);
        let via = read_via(&mut options, "via", &[Via::Elicit, Via::External, Via::Deny])
            .unwrap_or(Via::Elicit);
        let fallback =
            read_via(&mut options, "fallback", &[Via::External, Via::Deny]).unwrap_or(Via::Deny);
        if options.get("fallback").is_some() && via != Via::Elicit {
            let path = options.at("fallback");
            options.error(&path, "only means something with via = \"elicit\"");
        }
        let expires = options.duration("expires", ABOVE_ZERO).unwrap_or(DEFAULT_EXPIRY);
        let remember = options.duration("remember", ABOVE_ZERO).unwrap_or(DEFAULT_REMEMBER);
        let separate_duties = options.boolean("separate_duties", false);
        if separate_duties && via == Via::Elicit && fallback != Via::External {
            let path = options.at("separate_duties");
            options.error(
                &path,
                "cannot hold with via = \"elicit\": the person asked is the caller; use \
                 via = \"external\"",
            );
        }
        let hooks = vec![Hook::new(["tools/call"], Phase::Request).expect("a literal event")];
        let mut descriptor = Descriptor::new(KIND, KIND, InterceptorType::Validation, hooks);
        descriptor.timeout = expires + TIMEOUT_MARGIN;
        let mut descriptor = options.configure(descriptor, entry);
        if let Some(descriptor) = &mut descriptor {
            if entry.priority == 0 {
                descriptor.priority = DEFAULT_PRIORITY;
            }
            if descriptor.timeout <= expires {
                let path = format!("{}.timeout", entry.path);
                options.error(
                    &path,
                    format!(
                        "must be longer than `expires` ({expires:?}), or held calls fail before \
                         anyone can decide"
                    ),
                );
            }
        }
        options.finish(descriptor, |descriptor| Approval {
            descriptor,
            via,
            fallback,
            expires,
            remember,
            separate_duties,
            desk,
        })
    }

    /// The option (`via` or `fallback`) that sends calls to the admin API's approvers, if one
    /// does: such a pipeline needs an `[admin]` section.
    pub fn approver_option(&self) -> Option<&'static str> {
        match (self.via, self.fallback) {
            (Via::External, _) => Some("via"),
            (Via::Elicit, Via::External) => Some("fallback"),
            _ => None,
        }
    }

    fn refusal(&self, reason: impl Into<String>) -> Refusal {
        Refusal { interceptor: self.descriptor.name.clone(), reason: reason.into() }
    }

    async fn decide(
        &self,
        call: &mcp::CallToolRequestParams,
        ctx: &mut CallContext,
    ) -> Result<Outcome, InterceptError> {
        let Some(required) = ctx.get::<ApprovalRequired>().cloned() else {
            return Ok(Outcome::Continue);
        };
        let target = ctx
            .target
            .clone()
            .ok_or_else(|| InterceptError("a tool call without a target".into()))?;
        let digest = call_digest(
            &target.server,
            &target.original,
            target.tool.as_deref(),
            call.arguments.as_ref(),
        );
        let caller = ctx.principal.to_string();
        let base = AuditEvent::new(kind::APPROVAL_REQUESTED)
            .with("server", target.server.clone())
            .with("tool", target.original.clone())
            .with("exposed", target.exposed.clone())
            .with("caller", caller.clone())
            .with("digest", digest.clone())
            .with("interceptor", self.descriptor.name.clone());
        let event = |kind: &str| {
            let mut event = base.clone();
            event.kind = kind.to_owned();
            event.time = SystemTime::now();
            event
        };
        if self.descriptor.mode == Mode::Audit {
            // Records what it would have done; the call must not wait for anyone.
            ctx.remove::<ApprovalRequired>();
            return Ok(Outcome::Refuse(
                self.refusal(format!("would hold the call for approval ({})", required.reason)),
            ));
        }
        let via = match self.via {
            Via::Elicit if ctx.elicitor.as_ref().is_some_and(|e| e.can_elicit()) => Via::Elicit,
            Via::Elicit => self.fallback,
            other => other,
        };
        // Grants are kept for one caller (a named principal, or one anonymous session), never
        // for a crowd: every unauthenticated client is `anonymous:anonymous`, and an address
        // is shared by everyone on one host.
        let remembered_for = Some(ctx.caller_key()).filter(|key| key.is_one_caller());
        // With separate duties, an approver decides this call: a grant the caller gave itself
        // earlier (by elicitation) does not stand in for one.
        let own_grants = !(self.separate_duties && via == Via::External);
        if let Some(key) = &remembered_for
            && let Some(by) = self.desk.remembered(key, &digest, own_grants).await
        {
            self.desk.publish(
                event(kind::APPROVAL_GRANTED).with("by", by.clone()).with("remembered", true),
            );
            ctx.insert(Approved { digest, by: format!("{by} (remembered)") });
            return Ok(Outcome::Continue);
        }
        let requested = event(kind::APPROVAL_REQUESTED)
            .with("reason", required.reason.clone())
            .with("via", via.as_str());
        if via != Via::External {
            self.desk.publish(requested.clone());
        }
        let nobody = match via {
            Via::External if !self.desk.is_attended() => Some(
                "nobody can decide it here (the admin API runs only with `toolgate serve` and \
                 an [admin] section)"
                    .to_owned(),
            ),
            Via::Deny if self.via == Via::Elicit => {
                Some(ctx.elicitor.as_ref().and_then(|e| e.why_not()).unwrap_or_else(|| {
                    "the client cannot be asked (it does not support elicitation)".to_owned()
                }))
            }
            Via::Deny => Some("approvals are not taken here (via = \"deny\")".to_owned()),
            _ => None,
        };
        if let Some(reason) = nobody {
            self.desk.publish(
                event(kind::APPROVAL_REFUSED).with("by", "nobody").with("reason", &*reason),
            );
            return Ok(Outcome::Refuse(self.refusal(format!(
                "this call needs a person's approval ({}), and {reason}",
                required.reason
            ))));
        }
        let settled = match via {
            Via::Elicit => self.elicit(call, &target.exposed, &target.server, &required, ctx).await,
            // (`deny` was answered above.)
            Via::External | Via::Deny => {
                let request = PendingApproval {
                    id: String::new(),
                    digest: digest.clone(),
                    server: target.server.clone(),
                    tool: target.original.clone(),
                    exposed: target.exposed.clone(),
                    arguments: call.arguments.clone().map(Value::Object).unwrap_or(json!({})),
                    caller: caller.clone(),
                    caller_principal: ctx.principal.clone(),
                    reason: required.reason.clone(),
                    asked_by: required.by.clone(),
                    requested_at: SystemTime::now(),
                    deadline: Instant::now() + self.expires,
                    separate_duties: self.separate_duties,
                };
                let expires = self.expires;
                let exposed = target.exposed.clone();
                let desk = self.desk.clone();
                // Told once the call is on the desk, so that whoever hears of it can see it.
                let held = self.desk.hold(request, remembered_for.as_ref(), move |id| {
                    desk.publish(requested.with("id", id.to_owned()));
                    tracing::warn!(
                        target: "toolgate::approval",
                        "call {id} ({exposed}) is held for approval: decide with POST /approvals/{id} on the admin API within {}",
                        duration::format(expires)
                    );
                });
                held.await
            }
        };
        match settled {
            Settled::Decided { by, answer: Ruling::Allow { remember } } => {
                if let (Some(duration), Some(key)) = (remember, &remembered_for) {
                    // Asked at the client, the caller approved its own call.
                    let own = via == Via::Elicit || desk::is_caller(&by, &ctx.principal);
                    self.desk.remember(key, &digest, &by, own, duration).await;
                }
                let mut granted = event(kind::APPROVAL_GRANTED).with("by", by.clone());
                if let Some(duration) = remember {
                    granted = granted.with("remember_s", duration.as_secs());
                }
                self.desk.publish(granted);
                ctx.insert(Approved { digest, by });
                Ok(Outcome::Continue)
            }
            Settled::Decided { by, answer: Ruling::Deny { reason } } => {
                let why = reason.clone().unwrap_or_else(|| "no reason given".to_owned());
                self.desk.publish(
                    event(kind::APPROVAL_REFUSED)
                        .with("by", by.clone())
                        .with("reason", why.clone()),
                );
                Ok(Outcome::Refuse(self.refusal(format!("{by} did not approve this call: {why}"))))
            }
            Settled::Expired => {
                self.desk
                    .publish(event(kind::APPROVAL_EXPIRED).with("after_s", self.expires.as_secs()));
                Ok(Outcome::Refuse(self.refusal(format!(
                    "nobody approved this call within {}",
                    duration::format(self.expires)
                ))))
            }
        }
    }

    /// Asks the person at the client: allow once, allow again for a while, or deny.
    async fn elicit(
        &self,
        call: &mcp::CallToolRequestParams,
        exposed: &str,
        server: &str,
        required: &ApprovalRequired,
        ctx: &CallContext,
    ) -> Settled {
        let Some(elicitor) = ctx.elicitor.clone() else { return Settled::Expired };
        let again = format!("allow this exact call for {}", duration::format(self.remember));
        let arguments = call
            .arguments
            .as_ref()
            .map(|a| serde_json::to_string_pretty(a).unwrap_or_default())
            .unwrap_or_else(|| "{}".to_owned());
        let message = format!(
            "toolgate: allow the call {exposed} (server {server})?\n\
             Why you are asked: {}\n\
             Arguments:\n{}",
            required.reason,
            clip(&arguments, 4000)
        );
        let schema = json!({
            "type": "object",
            "properties": {
                "decision": {
                    "type": "string",
                    "title": "Decision",
                    "enum": ["allow once", again, "deny"],
                },
                "reason": {
                    "type": "string",
                    "title": "Reason (optional)",
                },
            },
            "required": ["decision"],
        });
        // What a client that knows toolgate (its own agent) needs to ask in its own way; any
        // other client shows the form.
        let ask = ApprovalAsk {
            server: server.to_string(),
            tool: exposed.to_string(),
            arguments: serde_json::to_value(&call.arguments).unwrap_or_default(),
            reason: required.reason.clone(),
            choices: ApprovalChoices {
                once: "allow once".to_owned(),
                again: again.clone(),
                deny: "deny".to_owned(),
            },
        };
        let params = match elicitation_params(message, schema, &ask) {
            Ok(params) => params,
            Err(error) => {
                tracing::warn!(%error, "cannot build the approval question");
                return Settled::Expired;
            }
        };
        let by = format!("{} (asked at the client)", ctx.principal);
        let asked = tokio::time::timeout(self.expires, elicitor.elicit(params)).await;
        let result = match asked {
            Err(_) => return Settled::Expired,
            Ok(Err(error)) => {
                let reason = format!("the client could not be asked: {error}");
                return Settled::Decided { by, answer: Ruling::Deny { reason: Some(reason) } };
            }
            Ok(Ok(result)) => result,
        };
        let ApprovalAnswer { decision, reason } =
            ApprovalAnswer::from_content(result.content.as_ref());
        let answer = match (result.action, decision.as_str()) {
            (mcp::ElicitationAction::Accept, "allow once") => Ruling::Allow { remember: None },
            (mcp::ElicitationAction::Accept, d) if d == again => {
                Ruling::Allow { remember: Some(self.remember) }
            }
            (mcp::ElicitationAction::Accept, _) => Ruling::Deny { reason },
            (mcp::ElicitationAction::Decline, _) => {
                Ruling::Deny { reason: reason.or(Some("declined".to_owned())) }
            }
            _ => Ruling::Deny { reason: Some("the question was dismissed".to_owned()) },
        };
        Settled::Decided { by, answer }
    }
}

/// The question, with what it is about in its `_meta` (the approval hand-off).
fn elicitation_params(
    message: String,
    schema: Value,
    ask: &ApprovalAsk,
) -> Result<mcp::ElicitRequestParams, String> {
    let params = json!({
        "message": message,
        "requestedSchema": schema,
        "_meta": ask.to_meta(),
    });
    serde_json::from_value(params).map_err(|e| e.to_string())
}

fn clip(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n… ({} more bytes)", &text[..end], text.len() - end)
}

fn read_via(options: &mut Options<'_>, key: &str, allowed: &[Via]) -> Option<Via> {
    let text = options.string(key)?;
    let via = allowed.iter().copied().find(|v| v.as_str() == text);
    if via.is_none() {
        let path = options.at(key);
        let names: Vec<_> = allowed.iter().map(|v| v.as_str()).collect();
        options.error(&path, format!("expected one of {}, found {text:?}", names.join(", ")));
    }
    via
}

impl Interceptor for Approval {
    fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    fn intercept<'a>(
        &'a self,
        _event: InterceptionEvent,
        _phase: Phase,
        message: &'a Message,
        ctx: &'a mut CallContext,
    ) -> BoxFuture<'a, Result<Outcome, InterceptError>> {
        Box::pin(async move {
            match message {
                Message::CallTool(call) => self.decide(call, ctx).await,
                _ => Ok(Outcome::Continue),
            }
        })
    }
}

#[cfg(test)]
mod tests;
