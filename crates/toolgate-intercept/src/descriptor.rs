//! What an interceptor says about itself: the SEP-2624 descriptor plus toolgate's server and
//! tool filters. The descriptor decides *whether* an interceptor runs for a message; the
//! interceptor decides *what* happens.

use std::time::Duration;

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde_json::{Value, json};

use crate::message::InterceptionEvent;

/// When in a message's life a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Before the upstream sees the request.
    Request,
    /// Before the caller sees the answer.
    Response,
}

impl Phase {
    /// The SEP-2624 name.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Request => "request",
            Phase::Response => "response",
        }
    }
}

/// Validators may refuse; mutators may also rewrite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InterceptorType {
    /// Checks a message: continue or refuse.
    Validation,
    /// May rewrite a message (or answer it).
    Mutation,
}

/// Lives in `toolgate-core` so that the config can name it without depending on this crate.
pub use toolgate_core::Mode;

/// Events (exact names or globs such as `tools/*` and `*`) at one phase.
#[derive(Debug, Clone)]
pub struct Hook {
    events: Vec<String>,
    matcher: GlobSet,
    phase: Phase,
}

impl Hook {
    /// A hook on `events` at `phase`.
    pub fn new<S: Into<String>>(
        events: impl IntoIterator<Item = S>,
        phase: Phase,
    ) -> Result<Hook, DescriptorError> {
        let events: Vec<String> = events.into_iter().map(Into::into).collect();
        let matcher = glob_set(&events)?;
        Ok(Hook { events, matcher, phase })
    }

    /// Whether this hook covers `event` at `phase`.
    pub fn covers(&self, event: InterceptionEvent, phase: Phase) -> bool {
        self.phase == phase && self.matcher.is_match(event.as_str())
    }
}

/// A glob that does not compile.
#[derive(Debug, thiserror::Error)]
#[error("invalid pattern {pattern:?}: {reason}")]
pub struct DescriptorError {
    pattern: String,
    reason: String,
}

/// Everything the pipeline needs to know to order and run an interceptor.
#[derive(Debug, Clone)]
pub struct Descriptor {
    /// Unique in a pipeline; what audit records and refusals name.
    pub name: String,
    /// The built-in it is (`policy`, `validate_args`, ...).
    pub kind: String,
    /// Validation or mutation.
    pub interceptor_type: InterceptorType,
    /// Where it runs.
    pub hooks: Vec<Hook>,
    /// Active or audit.
    pub mode: Mode,
    /// On its own failure or timeout: let the message through (`true`) or refuse it.
    pub fail_open: bool,
    /// Lower runs first; ties keep config order.
    pub priority: i32,
    /// Longest one invocation may take.
    pub timeout: Duration,
    servers: Option<GlobSet>,
    tools: Option<GlobSet>,
    server_patterns: Vec<String>,
    tool_patterns: Vec<String>,
    /// Only for callers in these tenants; empty = every caller.
    tenants: Vec<String>,
}

/// Default time one invocation may take.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

impl Descriptor {
    /// A descriptor with defaults: active, fail-closed, priority 0, [`DEFAULT_TIMEOUT`], every
    /// server and tool.
    pub fn new(
        name: impl Into<String>,
        kind: impl Into<String>,
        interceptor_type: InterceptorType,
        hooks: Vec<Hook>,
    ) -> Descriptor {
        Descriptor {
            name: name.into(),
            kind: kind.into(),
            interceptor_type,
            hooks,
            mode: Mode::Active,
            fail_open: false,
            priority: 0,
            timeout: DEFAULT_TIMEOUT,
            servers: None,
            tools: None,
            server_patterns: Vec::new(),
            tool_patterns: Vec::new(),
            tenants: Vec::new(),
        }
    }

    /// Only for callers in these tenants; empty = every caller.
    pub fn for_tenants(mut self, tenants: &[String]) -> Descriptor {
        self.tenants = tenants.to_vec();
        self
    }

    /// Whether it runs for a caller in `tenant` (`None`: in no tenant).
    pub fn covers_tenant(&self, tenant: Option<&str>) -> bool {
        self.tenants.is_empty() || tenant.is_some_and(|t| self.tenants.iter().any(|own| own == t))
    }

    /// Only for these servers (globs on the configured name); empty = all.
    pub fn for_servers(mut self, patterns: &[String]) -> Result<Descriptor, DescriptorError> {
        self.servers = (!patterns.is_empty()).then(|| glob_set(patterns)).transpose()?;
        self.server_patterns = patterns.to_vec();
        Ok(self)
    }

    /// Only for these tools (globs on the upstream's own tool name); empty = all.
    pub fn for_tools(mut self, patterns: &[String]) -> Result<Descriptor, DescriptorError> {
        self.tools = (!patterns.is_empty()).then(|| glob_set(patterns)).transpose()?;
        self.tool_patterns = patterns.to_vec();
        Ok(self)
    }

    /// Whether it runs for `event` at `phase` on a message about `server` / `tool`. Messages
    /// about no single server (lists) reach every interceptor whose hooks cover them; such
    /// an interceptor applies its own filters to the items.
    pub fn applies(
        &self,
        event: InterceptionEvent,
        phase: Phase,
        server: Option<&str>,
        tool: Option<&str>,
    ) -> bool {
        let hooked = self.hooks.iter().any(|h| h.covers(event, phase));
        let server_ok = match (&self.servers, server) {
            (Some(set), Some(server)) => set.is_match(server),
            _ => true,
        };
        let tool_ok = match (&self.tools, tool) {
            (Some(set), Some(tool)) => set.is_match(tool),
            _ => true,
        };
        hooked && server_ok && tool_ok
    }

    /// Whether a server/tool pair passes the `servers` and `tools` filters.
    pub fn covers_target(&self, server: &str, tool: &str) -> bool {
        self.servers.as_ref().is_none_or(|s| s.is_match(server))
            && self.tools.as_ref().is_none_or(|t| t.is_match(tool))
    }

    /// The SEP-2624 `Interceptor` descriptor, with toolgate's own fields under `toolgate`.
    pub fn to_json(&self) -> Value {
        let hooks: Vec<Value> = self
            .hooks
            .iter()
            .map(|h| json!({ "events": h.events, "phase": h.phase.as_str() }))
            .collect();
        let mut own = json!({
            "kind": self.kind,
            "timeoutMs": u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX),
            "servers": self.server_patterns,
            "tools": self.tool_patterns,
        });
        if !self.tenants.is_empty() {
            own["tenants"] = json!(self.tenants);
        }
        json!({
            "name": self.name,
            "type": match self.interceptor_type {
                InterceptorType::Validation => "validation",
                InterceptorType::Mutation => "mutation",
            },
            "hooks": hooks,
            "mode": self.mode.as_str(),
            "failOpen": self.fail_open,
            "priorityHint": self.priority,
            "toolgate": own,
        })
    }
}

fn glob_set(patterns: &[String]) -> Result<GlobSet, DescriptorError> {
    let mut set = GlobSetBuilder::new();
    for pattern in patterns {
        let glob = Glob::new(pattern).map_err(|e| DescriptorError {
            pattern: pattern.clone(),
            reason: e.kind().to_string(),
        })?;
        set.add(glob);
    }
    set.build().map_err(|e| DescriptorError { pattern: patterns.join(", "), reason: e.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn descriptor() -> Descriptor {
        let hooks = vec![Hook::new(["tools/*"], Phase::Request).expect("hook")];
        Descriptor::new("p", "policy", InterceptorType::Validation, hooks)
            .for_servers(&["fs*".into()])
            .expect("servers")
            .for_tools(&["write_*".into()])
            .expect("tools")
    }

    #[test]
    fn hooks_and_filters_decide_where_it_runs() {
        let d = descriptor();
        assert!(d.applies(
            InterceptionEvent::ToolsCall,
            Phase::Request,
            Some("fs"),
            Some("write_file")
        ));
        assert!(!d.applies(
            InterceptionEvent::ToolsCall,
            Phase::Response,
            Some("fs"),
            Some("write_file")
        ));
        assert!(!d.applies(
            InterceptionEvent::ToolsCall,
            Phase::Request,
            Some("gh"),
            Some("write_file")
        ));
        assert!(!d.applies(
            InterceptionEvent::ToolsCall,
            Phase::Request,
            Some("fs"),
            Some("read_file")
        ));
        assert!(!d.applies(
            InterceptionEvent::PromptsGet,
            Phase::Request,
            Some("fs"),
            Some("write_file")
        ));
        // A list concerns no single server: the interceptor filters items itself.
        assert!(d.applies(InterceptionEvent::ToolsList, Phase::Request, None, None));
    }

    #[test]
    fn the_descriptor_serialises_in_sep_2624_shape() {
        let json = descriptor().to_json();
        assert_eq!(json["type"], "validation");
        assert_eq!(json["hooks"][0]["phase"], "request");
        assert_eq!(json["failOpen"], false);
        assert_eq!(json["toolgate"]["servers"][0], "fs*");
    }

    #[test]
    fn bad_globs_are_reported_with_the_pattern() {
        let error = Hook::new(["tools/[x"], Phase::Request).expect_err("bad glob");
        assert!(error.to_string().contains("tools/[x"), "{error}");
    }

    #[test]
    fn an_entry_of_tenants_runs_for_their_callers_only() {
        let hooks = vec![Hook::new(["tools/call"], Phase::Request).expect("hook")];
        let d = Descriptor::new("p", "policy", InterceptorType::Validation, hooks);
        assert!(d.covers_tenant(None) && d.covers_tenant(Some("acme")), "no tenants: everyone");
        assert!(d.to_json()["toolgate"].get("tenants").is_none());
        let d = d.for_tenants(&["acme".into()]);
        assert!(d.covers_tenant(Some("acme")));
        assert!(!d.covers_tenant(Some("globex")) && !d.covers_tenant(None));
        assert_eq!(d.to_json()["toolgate"]["tenants"][0], "acme");
    }
}
