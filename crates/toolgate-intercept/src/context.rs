//! The context of one request as it passes the pipeline: who asked, in which session, about
//! what, since when, what was decided, and a typed map in which request-phase interceptors
//! leave data for response-phase ones.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use toolgate_core::mcp;

use crate::outcome::Decision;

/// Who is calling: a kind (how it came in or proved itself), an id within that kind, and,
/// for an authenticated HTTP client, its groups and tenant.
///
/// Two principals are the same caller when kind, id and tenant agree: groups say what a
/// caller may do, not who it is, so a token issued after a change of groups is still the
/// same person (their sessions, grants and kept results stay theirs).
#[derive(Debug, Clone)]
pub struct Principal {
    /// `local` (stdio, the CLI), `agent`, `cli`, `anonymous` (unauthenticated HTTP), `jwt`
    /// (an OAuth access token), `key` (an `[auth.api_keys]` entry), `upstream`, ...
    pub kind: String,
    /// Who, within that kind: a token's principal claim, a key's name, a user name.
    pub id: String,
    /// The groups it is in (a token's groups claim, a key's `groups`); empty when unknown.
    pub groups: Vec<String>,
    /// Its tenant (a token's tenant claim, a key's `tenant`), if it belongs to one.
    pub tenant: Option<String>,
}

impl Principal {
    /// `kind:id`, in no group or tenant.
    pub fn new(kind: impl Into<String>, id: impl Into<String>) -> Principal {
        Principal { kind: kind.into(), id: id.into(), groups: Vec::new(), tenant: None }
    }

    /// The same principal in `groups`.
    pub fn with_groups(mut self, groups: Vec<String>) -> Principal {
        self.groups = groups;
        self
    }

    /// The same principal in `tenant`.
    pub fn with_tenant(mut self, tenant: Option<String>) -> Principal {
        self.tenant = tenant;
        self
    }

    /// The person at the terminal or the desktop client that launched toolgate.
    pub fn local() -> Principal {
        Principal::new("local", whoami())
    }

    /// An HTTP client that did not authenticate.
    pub fn anonymous() -> Principal {
        Principal::new("anonymous", "anonymous")
    }

    /// Whether it names nobody: every client that did not authenticate is the same
    /// `anonymous:anonymous`, so it cannot tell one stranger from another.
    pub fn is_anonymous(&self) -> bool {
        self.kind == "anonymous"
    }

    /// Whether it is on this machine: the desktop client on stdio (`local`), the agent, the
    /// CLI, or an upstream speaking of its own accord. Every other kind came over the network,
    /// a kind added later included.
    pub fn is_here(&self) -> bool {
        matches!(self.kind.as_str(), "local" | "agent" | "cli" | "upstream")
    }

    /// Whether it proved who it is to the HTTP front: an access token (`jwt`, or `token` when
    /// introspected) or an API key (`key`).
    pub fn is_authenticated(&self) -> bool {
        matches!(self.kind.as_str(), "jwt" | "token" | "key")
    }

    /// An upstream speaking of its own accord (a log message about no call), by its name.
    pub fn upstream(server: &str) -> Principal {
        Principal::new("upstream", server)
    }

    /// What events and the audit log say of it: `principal` (as displayed), and `tenant` and
    /// `groups` when it has them.
    pub fn fields(&self) -> Vec<(&'static str, serde_json::Value)> {
        let mut fields = vec![("principal", serde_json::Value::String(self.to_string()))];
        if let Some(tenant) = &self.tenant {
            fields.push(("tenant", tenant.clone().into()));
        }
        if !self.groups.is_empty() {
            fields.push(("groups", self.groups.clone().into()));
        }
        fields
    }

    /// Whether it is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}

impl PartialEq for Principal {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.id == other.id && self.tenant == other.tenant
    }
}

impl Eq for Principal {}

impl std::hash::Hash for Principal {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.kind.hash(state);
        self.id.hash(state);
        self.tenant.hash(state);
    }
}

fn whoami() -> String {
    std::env::var("USER").or_else(|_| std::env::var("USERNAME")).unwrap_or_else(|_| "local".into())
}

/// `kind:id`, and `@tenant` after it when it has one: what events, approvals and the audit
/// log show, and what tells callers apart where a text key is kept.
impl std::fmt::Display for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.kind, self.id)?;
        match &self.tenant {
            Some(tenant) => write!(f, "@{tenant}"),
            None => Ok(()),
        }
    }
}

/// A caller as far as toolgate can tell two callers apart: what it keeps or decides for a
/// caller (remembered approvals, results kept for `toolgate__read_result`) is filed under this,
/// so that one stranger never gets what was given to another.
///
/// A principal that names someone (`local`, `agent:<user>`, an authenticated kind) is that
/// someone, in any session. An anonymous principal names nobody (every HTTP client that did not
/// authenticate is `anonymous:anonymous`), so it is told apart by its session, else by the
/// address it connected from (a 2026-07-28 client has no session), else not at all.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CallerKey {
    /// A principal that names someone.
    Principal(Principal),
    /// An anonymous client in a session: its session id.
    Session(String),
    /// An anonymous client without a session: the address it connected from. Every client on
    /// one host (or behind one proxy) shares it, so it is weaker than a session.
    Address(IpAddr),
    /// An anonymous client with neither: nothing tells it from any other.
    Nobody,
}

impl CallerKey {
    /// Whether it stands for one client or person, not a crowd: a principal that names
    /// someone, or one session. An address or nobody may be many strangers at once.
    pub fn is_one_caller(&self) -> bool {
        matches!(self, CallerKey::Principal(_) | CallerKey::Session(_))
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
    /// The address the client connected from, when it came over the network (the HTTP
    /// fronts fill it; stdio and in-process callers have none). With an anonymous principal
    /// and no session it is all that tells two clients apart (see [`CallerKey`]).
    pub client_address: Option<IpAddr>,
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
            client_address: None,
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
    /// session, client address, request id, target and elicitor; nothing decided or left yet.
    pub fn for_another_request(&self) -> CallContext {
        CallContext {
            principal: self.principal.clone(),
            session: self.session.clone(),
            client_address: self.client_address,
            request_id: self.request_id.clone(),
            target: self.target.clone(),
            started: Instant::now(),
            decisions: Vec::new(),
            retarget: None,
            elicitor: self.elicitor.clone(),
            extensions: HashMap::new(),
        }
    }

    /// The caller, as far as toolgate can tell callers apart (see [`CallerKey`]).
    pub fn caller_key(&self) -> CallerKey {
        if !self.principal.is_anonymous() {
            return CallerKey::Principal(self.principal.clone());
        }
        match (&self.session, self.client_address) {
            (Some(session), _) => CallerKey::Session(session.clone()),
            (None, Some(address)) => CallerKey::Address(address),
            (None, None) => CallerKey::Nobody,
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
            .field("client_address", &self.client_address)
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
        ctx.client_address = Some([127, 0, 0, 1].into());
        let other = ctx.for_another_request();
        assert_eq!(other.principal, ctx.principal);
        assert_eq!(other.session.as_deref(), Some("s1"));
        assert_eq!(other.client_address, ctx.client_address);
        assert_eq!(other.server_and_tool(), (Some("fs"), Some("read")));
        assert!(other.get::<Marker>().is_none());
        assert!(other.decisions.is_empty());
    }

    #[test]
    fn strangers_are_told_apart_by_session_then_address() {
        let address: IpAddr = [192, 0, 2, 7].into();
        let mut anonymous = CallContext::new(Principal::anonymous());
        assert_eq!(anonymous.caller_key(), CallerKey::Nobody);
        anonymous.client_address = Some(address);
        assert_eq!(anonymous.caller_key(), CallerKey::Address(address));
        anonymous.session = Some("s1".into());
        assert_eq!(anonymous.caller_key(), CallerKey::Session("s1".into()));
        assert!(anonymous.caller_key().is_one_caller());
        assert!(!CallerKey::Address(address).is_one_caller());
        assert!(!CallerKey::Nobody.is_one_caller());

        // Someone with a name is that someone, whichever session or address.
        let bob = Principal::new("jwt", "bob");
        let mut named = CallContext::new(bob.clone());
        named.session = Some("s2".into());
        named.client_address = Some(address);
        assert_eq!(named.caller_key(), CallerKey::Principal(bob));
        assert!(named.caller_key().is_one_caller());
    }

    #[test]
    fn a_principal_is_kind_id_and_tenant_not_its_groups() {
        let alice = Principal::new("jwt", "alice").with_tenant(Some("acme".into()));
        let regrouped = alice.clone().with_groups(vec!["oncall".into()]);
        assert_eq!(alice, regrouped, "groups say what, not who");
        assert!(regrouped.in_group("oncall") && !alice.in_group("oncall"));
        let elsewhere = Principal::new("jwt", "alice").with_tenant(Some("globex".into()));
        assert_ne!(alice, elsewhere);
        assert_ne!(alice, Principal::new("key", "alice").with_tenant(Some("acme".into())));
        let hash = |p: &Principal| {
            use std::hash::{BuildHasher, BuildHasherDefault};
            BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(p)
        };
        assert_eq!(hash(&alice), hash(&regrouped));
        assert_ne!(hash(&alice), hash(&elsewhere));
        assert_eq!(alice.to_string(), "jwt:alice@acme");
        assert_eq!(Principal::new("key", "ci").to_string(), "key:ci");
    }
}
