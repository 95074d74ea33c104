//! The context of one request as it passes the pipeline: who asked, in which session, about
//! what, since when, what was decided, and a typed map in which request-phase interceptors
//! leave data for response-phase ones.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

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

/// One request's context.
#[derive(Debug)]
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

    /// The target's server and original name, for filters.
    pub fn server_and_tool(&self) -> (Option<&str>, Option<&str>) {
        match &self.target {
            Some(t) => (Some(t.server.as_str()), Some(t.original.as_str())),
            None => (None, None),
        }
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
}
