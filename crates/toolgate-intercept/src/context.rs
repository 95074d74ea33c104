//! The context of one request as it passes the pipeline: who asked, in which session, about
//! what, since when, what was decided, and a typed map in which request-phase interceptors
//! leave data for response-phase ones.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use toolgate_core::mcp;

use crate::outcome::Decision;

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// `local` (stdio, the CLI), `anonymous` (unauthenticated HTTP), or an authenticated kind.
    pub kind: String,
    /// Who, within that kind.
    pub id: String,
}

impl Principal {
    /// The person at the terminal or the desktop client that launched toolgate.
    pub fn local() -> Principal {
        Principal { kind: "local".into(), id: whoami() }
    }

    /// An HTTP client that did not authenticate.
    pub fn anonymous() -> Principal {
        Principal { kind: "anonymous".into(), id: "anonymous".into() }
    }

    /// An upstream speaking of its own accord (a log message about no call), by its name.
    pub fn upstream(server: &str) -> Principal {
        Principal { kind: "upstream".into(), id: server.into() }
    }
}

fn whoami() -> String {
    std::env::var("USER").or_else(|_| std::env::var("USERNAME")).unwrap_or_else(|_| "local".into())
}

impl std::fmt::Display for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.kind, self.id)
    }
}

/// The upstream thing a message is about.
#[derive(Debug, Clone)]
pub struct Target {
    /// The upstream's configured name.
    pub server: String,
    /// The name (or URI) as the upstream knows it.
    pub original: String,
    /// The name (or URI) the caller used.
    pub exposed: String,
    /// The tool's definition as the upstream listed it (for `tools/call`), when known.
    pub tool: Option<Arc<mcp::Tool>>,
}

/// Finds the target of a tool name (exposed, or an alias a mutator resolved) for a context
/// whose request was rewritten; installed by the gateway.
pub type Retarget = Arc<dyn Fn(&str) -> Option<Target> + Send + Sync>;

/// Left by an interceptor (`limits`) to give this call's upstream request its own timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpstreamTimeout(pub Duration);

/// Left by a validator (`policy`) that decided a person must approve the call; the
/// `approval` interceptor, which runs after it, holds the call until someone decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRequired {
    /// The interceptor that asked for approval.
    pub by: String,
    /// Why, shown to the approver.
    pub reason: String,
}

/// Left by `integrity`: the called tool as trust decisions should see it (its pinned
/// annotations, an operator's overrides) when that differs from what the server says now.
/// `policy` reads it in place of `Target::tool`; `Target::tool` stays the server's own
/// definition, which the approval digest covers (the gateway checks that digest against the
/// server's definition at dispatch).
#[derive(Debug, Clone)]
pub struct TrustedTool(pub Arc<mcp::Tool>);

/// Left by `approval` when a person allowed the call: the [`call_digest`] they saw. The
/// gateway computes it again just before dispatch and refuses the call if anything changed.
///
/// [`call_digest`]: crate::call_digest
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approved {
    /// The digest of (tool identity, canonical arguments) that was approved.
    pub digest: String,
    /// Who approved (or `remembered` when an earlier approval covered it).
    pub by: String,
}

/// The person at the downstream client, reachable through MCP `elicitation/create` while
/// their request is being served. Installed by the transport that has a client to ask.
pub trait Elicitor: Send + Sync {
    /// Whether the client declared the `elicitation` capability.
    fn can_elicit(&self) -> bool;

    /// Why nobody can be asked, in words, when [`Elicitor::can_elicit`] is false (`None`: the
    /// client did not declare the capability).
    fn why_not(&self) -> Option<String> {
        None
    }

    /// Asks, and waits for the answer (or the client's error, in words).
    fn elicit(
        &self,
        params: mcp::ElicitRequestParams,
    ) -> futures::future::BoxFuture<'static, Result<mcp::ElicitResult, String>>;
}

/// One request's context.
pub struct CallContext {
    /// Who asked.
    pub principal: Principal,
    /// The downstream session, if the transport has one.
    pub session: Option<String>,
    /// The downstream request id, if any.
    pub request_id: Option<String>,
    /// What the request is about (none for lists).
    pub target: Option<Target>,
    /// When the request entered the gateway.
    pub started: Instant,
    /// Every interceptor decision so far, in order.
    pub decisions: Vec<Decision>,
    /// How a rewritten tool name finds its target (see [`Retarget`]).
    pub retarget: Option<Retarget>,
    /// The person at the client, when the transport can ask them something.
    pub elicitor: Option<Arc<dyn Elicitor>>,
    extensions: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
}

impl CallContext {
    /// A fresh context for `principal`.
    pub fn new(principal: Principal) -> CallContext {
        CallContext {
            principal,
            session: None,
            request_id: None,
            target: None,
            started: Instant::now(),
            decisions: Vec::new(),
            retarget: None,
            elicitor: None,
            extensions: HashMap::new(),
        }
    }

    /// A context for another request made on behalf of the same caller about the same
    /// target (a question an upstream asks while serving this call, say): the same principal,
    /// session, request id, target and elicitor; nothing decided or left yet.
    pub fn for_another_request(&self) -> CallContext {
        CallContext {
            principal: self.principal.clone(),
            session: self.session.clone(),
            request_id: self.request_id.clone(),
            target: self.target.clone(),
            started: Instant::now(),
            decisions: Vec::new(),
            retarget: None,
            elicitor: self.elicitor.clone(),
            extensions: HashMap::new(),
        }
    }

    /// Leaves `value` for later interceptors (one value per type).
    pub fn insert<T: Any + Send + Sync>(&mut self, value: T) {
        self.extensions.insert(TypeId::of::<T>(), Box::new(value));
    }

    /// What an earlier interceptor left.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.extensions.get(&TypeId::of::<T>()).and_then(|v| v.downcast_ref())
    }

    /// Takes away what an earlier interceptor left.
    pub fn remove<T: Any + Send + Sync>(&mut self) -> Option<T> {
        let value = self.extensions.remove(&TypeId::of::<T>())?;
        value.downcast().ok().map(|boxed| *boxed)
    }

    /// Points the context at the tool `name` now stands for, when a mutator renamed the call.
    pub(crate) fn follow_rename(&mut self, name: &str) {
        if self.target.as_ref().is_some_and(|t| t.exposed == name) {
            return;
        }
        if let Some(retarget) = &self.retarget {
            self.target = retarget(name);
        }
    }

    /// The target's server and original name, for filters.
    pub fn server_and_tool(&self) -> (Option<&str>, Option<&str>) {
        match &self.target {
            Some(t) => (Some(t.server.as_str()), Some(t.original.as_str())),
            None => (None, None),
        }
    }
}

impl std::fmt::Debug for CallContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallContext")
            .field("principal", &self.principal)
            .field("session", &self.session)
            .field("request_id", &self.request_id)
            .field("target", &self.target)
            .field("decisions", &self.decisions)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_typed_map_keeps_one_value_per_type() {
        #[derive(Debug, PartialEq)]
        struct Marker(u32);
        let mut ctx = CallContext::new(Principal::anonymous());
        assert!(ctx.get::<Marker>().is_none());
        ctx.insert(Marker(1));
        ctx.insert(Marker(2));
        assert_eq!(ctx.get::<Marker>(), Some(&Marker(2)));
    }

    #[test]
    fn another_request_keeps_who_and_what_but_nothing_decided() {
        #[derive(Debug)]
        struct Marker;
        let mut ctx = CallContext::new(Principal::anonymous());
        ctx.session = Some("s1".into());
        ctx.target = Some(Target {
            server: "fs".into(),
            original: "read".into(),
            exposed: "fs__read".into(),
            tool: None,
        });
        ctx.insert(Marker);
        let other = ctx.for_another_request();
        assert_eq!(other.principal, ctx.principal);
        assert_eq!(other.session.as_deref(), Some("s1"));
        assert_eq!(other.server_and_tool(), (Some("fs"), Some("read")));
        assert!(other.get::<Marker>().is_none());
        assert!(other.decisions.is_empty());
    }
}
