//! `policy`: the firewall. Rules match servers and tools (globs), argument values and tool
//! annotations, and decide `allow`, `deny` or `ask`, with a reason.
//!
//! ```toml
//! [[pipeline]]
//! kind = "policy"
//! default = "allow"                      # tool calls: allow | deny | ask (default: allow)
//! default_requests = "allow"             # every other request: allow | deny (default: allow)
//! trust = { scratch = "sandboxed" }      # per server: trusted | standard | untrusted | sandboxed
//! rules = [
//!   { tools = ["delete_*"], decision = "deny", reason = "nothing is deleted from here" },
//!   { tools = ["run"], when = { path = "cmd", matches = "^rm " }, decision = "deny" },
//!   { servers = ["github"], annotations = { read_only = false }, decision = "ask" },
//!   { events = ["sampling/createMessage"], servers = ["scratch"], decision = "deny" },
//!   { tools = ["deploy"], principals = ["jwt:alice", "key:ci-*"], decision = "allow" },
//!   { servers = ["prod"], groups = ["oncall"], decision = "allow" },
//! ]
//! ```
//!
//! A rule with `principals` or `groups` (globs) is only for some callers: a `principals`
//! pattern with a `:` matches the caller's `kind:id` (the tenant is not part of it); one
//! without matches the id of a caller that proved who it is to toolgate, of kind `jwt` or
//! `key`, and never `anonymous`, `local`, `cli`, `agent` or `upstream` (their ids are user
//! and server names, not an identity provider's; write `"local:alice"`, `"agent:*"`).
//! `groups` matches when one glob matches one of the caller's groups. With both, both must
//! hold; an empty list is refused. The decisions below skip the rules for other callers, and
//! the lists are filtered for each caller.
//!
//! A rule applies to `tools/call` unless it names other `events` (globs on the interception
//! events, such as `completion/complete`, `resources/*` or `sampling/createMessage`). For
//! those, `servers` matches the server the request goes to (or, for what an upstream asks the
//! client, the server asking) and `tools` the name or URI it is about; the first matching
//! rule decides `allow` or `deny`. A request no rule names gets `default_requests` (`allow`
//! unless set to `deny`). `default` and `trust` are about tool calls only, and stay so: a
//! policy that denies every tool call it does not list (`default = "deny"`) must not also cut
//! the client off from logging, notifications and the servers' prompts, as it would if
//! `default` suddenly applied everywhere; `default_requests = "deny"` says so explicitly.
//! `when`, `annotations` and `ask` are only for `tools/call`.
//!
//! Evaluation: the first matching rule that names tools, else the first matching rule that
//! does not, else `default`. Then the server's trust: `trusted` turns the default into
//! `allow`; `untrusted` makes an allowed destructive call `ask`; `sandboxed` allows only
//! tools annotated read-only. A refusal names this interceptor and the rule that decided.
//!
//! A server cut off from something is cut off everywhere it shows:
//! - `tools/list` hides the tools a call to which would be denied whatever its arguments;
//! - `prompts/list` hides the prompts whose `prompts/get` would be denied, `resources/list`
//!   the resources whose `resources/read` would be, and `resources/templates/list` the
//!   templates through which every read would be (a rule whose `tools` glob matches the
//!   template as written covers all its expansions); a rule about the list event itself that names
//!   `servers` or `tools` hides the items it matches. The list request itself is refused only
//!   by a rule about it that names neither (a list is never refused by `default_requests`;
//!   its items are);
//! - `completion/complete` names a prompt or a resource (template) as its `ref`: it is
//!   refused when getting that prompt or reading that resource would be, whatever a rule
//!   about `completion/complete` says, and otherwise decided by such a rule, else allowed as
//!   its prompt or resource is;
//! - `resources/subscribe` (and each resource a `subscriptions/listen` stream names) is
//!   refused when reading the resource would be.
//!
//! `ask` leaves the call to the `approval` interceptor, which holds it until a person
//! decides. When no approval interceptor takes it, the gateway refuses the call, saying that
//! it needs approval and none is configured.

use std::collections::BTreeMap;

use futures::future::BoxFuture;
use globset::{Glob, GlobSet, GlobSetBuilder};
use regex::Regex;
use serde_json::{Map, Value};
use toolgate_config::InterceptorConfig;
use toolgate_core::mcp;
use toolgate_intercept::{
    ApprovalRequired, CallContext, Descriptor, Hook, InterceptError, InterceptionEvent,
    Interceptor, InterceptorType, Listed, Message, Mode, Outcome, Phase, Principal, Refusal,
    TrustedTool,
};

use crate::options::{OptionError, Options};

/// The config `kind`.
pub const KIND: &str = "policy";

/// What a rule decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The call goes ahead.
    Allow,
    /// The call is refused.
    Deny,
    /// A person must approve the call.
    Ask,
}

/// How far a server is trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Trust {
    /// Its calls are allowed unless a rule says otherwise.
    Trusted,
    /// Rules and the default decide.
    #[default]
    Standard,
    /// As standard, but destructive calls need approval.
    Untrusted,
    /// Only read-only tools.
    Sandboxed,
}

/// A decision and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// What.
    pub decision: Decision,
    /// Why, for the model and the audit log.
    pub reason: String,
}

/// The `policy` interceptor.
#[derive(Debug)]
pub struct Policy {
    descriptor: Descriptor,
    rules: Vec<Rule>,
    default: Decision,
    /// The decision for a request other than a tool call that no rule is about.
    default_requests: Decision,
    trust: BTreeMap<String, Trust>,
}

#[derive(Debug)]
struct Rule {
    /// `rules[i]`, for reasons.
    label: String,
    /// The events it applies to (`None`: `tools/call` only).
    events: Option<GlobSet>,
    /// Its `events` as written, for the descriptor's hooks.
    event_patterns: Vec<String>,
    servers: Option<GlobSet>,
    tools: Option<GlobSet>,
    /// Whom it is for (`principals`); `None`: anyone.
    principals: Option<Principals>,
    /// The groups it is for (`groups`): one of the caller's must match; `None`: anyone.
    groups: Option<GlobSet>,
    when: Vec<Condition>,
    annotations: Annotations,
    decision: Decision,
    reason: Option<String>,
}

/// A rule's `principals`: the patterns with a `:`, matched against `kind:id`, and those
/// without, matched against the id of a caller that authenticated to toolgate.
#[derive(Debug)]
struct Principals {
    qualified: GlobSet,
    bare: GlobSet,
}

/// The caller a decision is for, with its `kind:id` written once.
struct Caller<'a> {
    principal: &'a Principal,
    kind_id: String,
}

impl<'a> Caller<'a> {
    fn new(principal: &'a Principal) -> Caller<'a> {
        Caller { principal, kind_id: format!("{}:{}", principal.kind, principal.id) }
    }
}

#[derive(Debug, Default)]
struct Annotations {
    read_only: Option<bool>,
    destructive: Option<bool>,
    idempotent: Option<bool>,
    open_world: Option<bool>,
}

#[derive(Debug)]
struct Condition {
    path: Vec<String>,
    test: Test,
}

#[derive(Debug)]
enum Test {
    Equals(Value),
    Matches(Regex),
    OneOf(Vec<Value>),
}

/// What a tool says about itself, with MCP's defaults for what it leaves out.
#[derive(Debug, Clone, Copy)]
struct Traits {
    read_only: bool,
    destructive: bool,
    idempotent: bool,
    open_world: bool,
}

impl Traits {
    fn of(tool: Option<&mcp::Tool>) -> Traits {
        let hints = tool.and_then(|t| t.annotations.as_ref());
        let read_only = hints.and_then(|h| h.read_only_hint).unwrap_or(false);
        Traits {
            read_only,
            destructive: !read_only && hints.and_then(|h| h.destructive_hint).unwrap_or(true),
            idempotent: hints.and_then(|h| h.idempotent_hint).unwrap_or(false),
            open_world: hints.and_then(|h| h.open_world_hint).unwrap_or(true),
        }
    }
}

impl Annotations {
    fn match_(&self, traits: Traits) -> bool {
        let ok = |want: Option<bool>, have: bool| want.is_none_or(|w| w == have);
        ok(self.read_only, traits.read_only)
            && ok(self.destructive, traits.destructive)
            && ok(self.idempotent, traits.idempotent)
            && ok(self.open_world, traits.open_world)
    }
}

impl Condition {
    fn holds(&self, arguments: Option<&Map<String, Value>>) -> bool {
        let mut value = match (arguments, self.path.split_first()) {
            (Some(args), Some((first, _))) => args.get(first),
            _ => None,
        };
        for key in self.path.iter().skip(1) {
            value = value.and_then(|v| match v {
                Value::Object(map) => map.get(key),
                Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
                _ => None,
            });
        }
        let Some(value) = value else { return false };
        match &self.test {
            Test::Equals(expected) => value == expected,
            Test::Matches(regex) => value.as_str().is_some_and(|s| regex.is_match(s)),
            Test::OneOf(options) => options.contains(value),
        }
    }
}

/// Whether a rule can decide a call, and whether that depends on its arguments.
enum RuleMatch {
    No,
    Yes,
    DependsOnArguments,
}

impl Rule {
    /// Whether the rule is about `event`.
    fn covers(&self, event: InterceptionEvent) -> bool {
        match &self.events {
            None => event == InterceptionEvent::ToolsCall,
            Some(events) => events.is_match(event.as_str()),
        }
    }

    /// Whether the rule is for `caller`: one of its `principals` patterns matches it (a
    /// pattern with a `:` its `kind:id`, one without the id of a caller that authenticated:
    /// see `Principal::is_authenticated`), and one of its `groups` globs matches one of the
    /// caller's groups; either left out matches anyone.
    fn is_for(&self, caller: &Caller<'_>) -> bool {
        let principal = caller.principal;
        self.principals.as_ref().is_none_or(|p| {
            p.qualified.is_match(&caller.kind_id)
                || (principal.is_authenticated() && p.bare.is_match(&principal.id))
        }) && self.groups.as_ref().is_none_or(|g| principal.groups.iter().any(|n| g.is_match(n)))
    }

    fn matches(
        &self,
        server: &str,
        tool: &str,
        traits: Traits,
        arguments: Option<Option<&Map<String, Value>>>,
    ) -> RuleMatch {
        let named = self.servers.as_ref().is_none_or(|s| s.is_match(server))
            && self.tools.as_ref().is_none_or(|t| t.is_match(tool))
            && self.annotations.match_(traits);
        match (named, arguments) {
            (false, _) => RuleMatch::No,
            (true, _) if self.when.is_empty() => RuleMatch::Yes,
            (true, None) => RuleMatch::DependsOnArguments,
            (true, Some(args)) if self.when.iter().all(|c| c.holds(args)) => RuleMatch::Yes,
            (true, Some(_)) => RuleMatch::No,
        }
    }
}

impl Policy {
    /// Decides a call of `tool` (the upstream's own name) on `server` with `arguments` by
    /// `principal`.
    pub fn decide(
        &self,
        principal: &Principal,
        server: &str,
        tool: &str,
        definition: Option<&mcp::Tool>,
        arguments: Option<&Map<String, Value>>,
    ) -> Verdict {
        let caller = Caller::new(principal);
        self.evaluate(&caller, server, tool, definition, Some(arguments))
            .expect("arguments are known")
    }

    /// The decision, or `None` when it depends on the arguments (`arguments` = `None`).
    fn evaluate(
        &self,
        caller: &Caller<'_>,
        server: &str,
        tool: &str,
        definition: Option<&mcp::Tool>,
        arguments: Option<Option<&Map<String, Value>>>,
    ) -> Option<Verdict> {
        let traits = Traits::of(definition);
        let trust = self.trust.get(server).copied().unwrap_or_default();
        if trust == Trust::Sandboxed && !traits.read_only {
            return Some(Verdict {
                decision: Decision::Deny,
                reason: format!(
                    "server `{server}` is sandboxed: only tools annotated read-only may be called"
                ),
            });
        }
        let for_calls = self
            .rules
            .iter()
            .filter(|r| r.covers(InterceptionEvent::ToolsCall) && r.is_for(caller));
        let (tool_rules, server_rules): (Vec<&Rule>, Vec<&Rule>) =
            for_calls.partition(|r| r.tools.is_some());
        let mut verdict = None;
        for rule in tool_rules.into_iter().chain(server_rules) {
            match rule.matches(server, tool, traits, arguments) {
                RuleMatch::No => continue,
                RuleMatch::DependsOnArguments => return None,
                RuleMatch::Yes => {
                    let why = rule.reason.clone().unwrap_or_else(|| "no reason given".into());
                    verdict = Some(Verdict {
                        decision: rule.decision,
                        reason: format!("{why} ({})", rule.label),
                    });
                    break;
                }
            }
        }
        let mut verdict = verdict.unwrap_or_else(|| match trust {
            Trust::Trusted => Verdict {
                decision: Decision::Allow,
                reason: format!("server `{server}` is trusted"),
            },
            _ => Verdict { decision: self.default, reason: "the policy's default".into() },
        });
        if trust == Trust::Untrusted && traits.destructive && verdict.decision == Decision::Allow {
            verdict = Verdict {
                decision: Decision::Ask,
                reason: format!("server `{server}` is untrusted and `{tool}` may be destructive"),
            };
        }
        Some(verdict)
    }

    /// Decides a request other than a tool call by `principal`: the first rule about `event`
    /// for the principal whose `servers` and `tools` globs match `server` and `name` (the tool,
    /// prompt or URI it is about); `default_requests` when none does.
    pub fn decide_request(
        &self,
        principal: &Principal,
        event: InterceptionEvent,
        server: Option<&str>,
        name: Option<&str>,
    ) -> Verdict {
        self.request(&Caller::new(principal), event, server, name)
    }

    fn request(
        &self,
        caller: &Caller<'_>,
        event: InterceptionEvent,
        server: Option<&str>,
        name: Option<&str>,
    ) -> Verdict {
        self.rule_about(caller, event, server, name).unwrap_or_else(|| self.requests_default(event))
    }

    /// The verdict of the first rule about `event` for `caller` that matches `server` and
    /// `name`, if any.
    fn rule_about(
        &self,
        caller: &Caller<'_>,
        event: InterceptionEvent,
        server: Option<&str>,
        name: Option<&str>,
    ) -> Option<Verdict> {
        let glob_matches = |globs: &Option<GlobSet>, value: Option<&str>| match (globs, value) {
            (None, _) => true,
            (Some(globs), Some(value)) => globs.is_match(value),
            (Some(_), None) => false,
        };
        let rule = self.rules.iter().find(|rule| {
            rule.covers(event)
                && rule.is_for(caller)
                && glob_matches(&rule.servers, server)
                && glob_matches(&rule.tools, name)
        })?;
        let why = rule.reason.clone().unwrap_or_else(|| "no reason given".into());
        Some(Verdict { decision: rule.decision, reason: format!("{why} ({})", rule.label) })
    }

    fn requests_default(&self, event: InterceptionEvent) -> Verdict {
        match self.default_requests {
            Decision::Deny => Verdict {
                decision: Decision::Deny,
                reason: format!(
                    "no rule allows {event} here, and the policy denies other requests \
                     (default_requests)"
                ),
            },
            _ => Verdict { decision: Decision::Allow, reason: format!("no rule is about {event}") },
        }
    }

    /// Decides reading `uri` on `server`; for a template (`templated`), whether every read
    /// through it would be denied (see [`Policy::every_read_denied`]).
    fn decide_read(
        &self,
        caller: &Caller<'_>,
        server: Option<&str>,
        uri: &str,
        templated: bool,
    ) -> Verdict {
        let event = InterceptionEvent::ResourcesRead;
        if !templated {
            return self.request(caller, event, server, Some(uri));
        }
        self.every_read_denied(caller, server, uri).unwrap_or_else(|| Verdict {
            decision: Decision::Allow,
            reason: format!("some {event} through `{uri}` may be allowed"),
        })
    }

    /// Whether every `resources/read` through `template` on `server` is denied, by the rules
    /// about reads that match the server, in order: one whose `tools` glob matches the
    /// template as written decides it (its expansions match too); one whose glob does not
    /// match it may still match some expansions, so an `allow` means some read may be allowed
    /// and a `deny` leaves the rest to the next rules; one without a `tools` glob decides the
    /// rest; then `default_requests`. Only the rules for `caller` count. `None` when some read
    /// may be allowed.
    fn every_read_denied(
        &self,
        caller: &Caller<'_>,
        server: Option<&str>,
        template: &str,
    ) -> Option<Verdict> {
        let event = InterceptionEvent::ResourcesRead;
        for rule in &self.rules {
            let server_matches = match (&rule.servers, server) {
                (None, _) => true,
                (Some(globs), Some(server)) => globs.is_match(server),
                (Some(_), None) => false,
            };
            if !rule.covers(event) || !server_matches || !rule.is_for(caller) {
                continue;
            }
            let decides = rule.tools.as_ref().is_none_or(|t| t.is_match(template));
            match (decides, rule.decision) {
                (true, Decision::Deny) => {
                    let why = rule.reason.clone().unwrap_or_else(|| "no reason given".into());
                    return Some(Verdict {
                        decision: Decision::Deny,
                        reason: format!("{why} ({})", rule.label),
                    });
                }
                (true, _) => return None,
                // Denies some expansions; the others are for the rules after it.
                (false, Decision::Deny) => continue,
                // May allow some expansions.
                (false, _) => return None,
            }
        }
        let default = self.requests_default(event);
        (default.decision == Decision::Deny).then_some(default)
    }

    /// Decides `completion/complete` about `reference` (a prompt or a resource of `server`,
    /// by its name or URI there): refused when getting the prompt or reading the resource
    /// would be, else as a rule about completions says, else allowed.
    fn decide_completion(
        &self,
        caller: &Caller<'_>,
        server: Option<&str>,
        name: Option<&str>,
        reference: &mcp::Reference,
    ) -> Verdict {
        let event = InterceptionEvent::CompletionComplete;
        let rule = self.rule_about(caller, event, server, name);
        if let Some(verdict) = rule.as_ref().filter(|v| v.decision == Decision::Deny) {
            return verdict.clone();
        }
        let (what, reach) = match reference {
            mcp::Reference::Prompt(_) => (
                "getting the prompt",
                self.request(caller, InterceptionEvent::PromptsGet, server, name),
            ),
            mcp::Reference::Resource(resource) => {
                let uri = name.unwrap_or(&resource.uri);
                ("reading the resource", self.decide_read(caller, server, uri, uri.contains('{')))
            }
            // A kind of reference rmcp may add later: the rules about completions alone.
            _ => return rule.unwrap_or_else(|| self.requests_default(event)),
        };
        if reach.decision == Decision::Deny {
            let name = name.unwrap_or("?");
            return Verdict {
                decision: Decision::Deny,
                reason: format!(
                    "completions of `{name}` are refused because {what} is: {}",
                    reach.reason
                ),
            };
        }
        rule.unwrap_or(reach)
    }

    /// Whether a list item (from `server`, named `name` there) is shown: a rule about the
    /// `list` event that matches it does not deny it, and using it (`used`: the get or read it
    /// stands for) would not be denied.
    fn shows_item(
        &self,
        caller: &Caller<'_>,
        list: InterceptionEvent,
        server: &str,
        name: &str,
        used: impl FnOnce() -> Verdict,
    ) -> bool {
        if !self.descriptor.covers_target(server, name) {
            return true;
        }
        let listed = self.rule_about(caller, list, Some(server), Some(name));
        listed.is_none_or(|v| v.decision != Decision::Deny) && used().decision != Decision::Deny
    }

    fn refusal(&self, verdict: &Verdict) -> Refusal {
        let reason = match verdict.decision {
            Decision::Ask => format!("this call needs a person's approval ({})", verdict.reason),
            _ => verdict.reason.clone(),
        };
        Refusal { interceptor: self.descriptor.name.clone(), reason }
    }
}

/// The events the policy hooks: in the request phase tool calls always, and every event a rule
/// is about, or that a rule about getting prompts or reading resources reaches (completions,
/// subscriptions), or every event but the tool list when other requests are denied by
/// default; in the response phase the tool list always, and the lists whose items such rules
/// hide.
fn hooked_events(rules: &[Rule], default_requests: Decision) -> (Vec<String>, Vec<&'static str>) {
    use InterceptionEvent as E;
    let about = |event: E| rules.iter().any(|rule| rule.events.is_some() && rule.covers(event));
    let everything = default_requests == Decision::Deny;
    let mut requests = vec!["tools/call".to_owned()];
    if everything {
        requests
            .extend(E::ALL.iter().filter(|e| **e != E::ToolsList).map(|e| e.as_str().to_owned()));
    }
    requests.extend(rules.iter().flat_map(|r| r.event_patterns.iter().cloned()));
    let (prompts, reads) = (about(E::PromptsGet), about(E::ResourcesRead));
    if prompts || reads {
        requests.push(E::CompletionComplete.as_str().to_owned());
    }
    if reads {
        requests.push(E::ResourcesSubscribe.as_str().to_owned());
    }
    requests.sort();
    requests.dedup();
    let mut lists = vec![E::ToolsList.as_str()];
    if everything || prompts || about(E::PromptsList) {
        lists.push(E::PromptsList.as_str());
    }
    if everything || reads || about(E::ResourcesList) {
        lists.push(E::ResourcesList.as_str());
    }
    if everything || reads || about(E::ResourceTemplatesList) {
        lists.push(E::ResourceTemplatesList.as_str());
    }
    (requests, lists)
}

impl Interceptor for Policy {
    fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    fn intercept<'a>(
        &'a self,
        event: InterceptionEvent,
        _phase: Phase,
        message: &'a Message,
        ctx: &'a mut CallContext,
    ) -> BoxFuture<'a, Result<Outcome, InterceptError>> {
        // Every list is filtered for this caller: what the pipeline leaves of a list is
        // never kept for another caller (the gateway runs the pipeline for each request).
        let caller = Caller::new(&ctx.principal);
        let caller = &caller;
        let outcome = match message {
            Message::CallTool(call) => {
                let Some(target) = &ctx.target else {
                    return Box::pin(async {
                        Err(InterceptError("a tool call without a target".into()))
                    });
                };
                // What `integrity` trusts (pinned annotations, overrides), else the server's word.
                let trusted = ctx.get::<TrustedTool>().map(|t| t.0.clone());
                let tool = trusted.as_deref().or(target.tool.as_deref());
                let verdict = self
                    .evaluate(
                        caller,
                        &target.server,
                        &target.original,
                        tool,
                        Some(call.arguments.as_ref()),
                    )
                    .expect("arguments are known");
                match verdict.decision {
                    Decision::Allow => Outcome::Continue,
                    Decision::Deny => Outcome::Refuse(self.refusal(&verdict)),
                    // Audit mode changes nothing, so it leaves nothing for `approval` either.
                    Decision::Ask if self.descriptor.mode == Mode::Audit => {
                        Outcome::Refuse(self.refusal(&verdict))
                    }
                    Decision::Ask => {
                        ctx.insert(ApprovalRequired {
                            by: self.descriptor.name.clone(),
                            reason: verdict.reason.clone(),
                        });
                        Outcome::Continue
                    }
                }
            }
            Message::Tools(tools) => {
                // Hidden only when every call of it would be denied.
                let shown = |listed: &&Listed<mcp::Tool>| {
                    !self.descriptor.covers_target(&listed.server, &listed.original)
                        || self
                            .evaluate(
                                caller,
                                &listed.server,
                                &listed.original,
                                Some(&listed.item),
                                None,
                            )
                            .is_none_or(|v| v.decision != Decision::Deny)
                };
                let shown_flags: Vec<bool> = tools.iter().map(|t| shown(&t)).collect();
                if shown_flags.iter().all(|&s| s) {
                    // Nothing hidden: no copy of the list.
                    Outcome::Continue
                } else {
                    let kept = tools
                        .iter()
                        .zip(&shown_flags)
                        .filter(|(_, shown)| **shown)
                        .map(|(listed, _)| listed.clone())
                        .collect();
                    Outcome::Rewrite(Message::Tools(kept))
                }
            }
            Message::Prompts(prompts) => filtered(prompts, Message::Prompts, |listed| {
                self.shows_item(caller, event, &listed.server, &listed.original, || {
                    self.request(
                        caller,
                        InterceptionEvent::PromptsGet,
                        Some(&listed.server),
                        Some(&listed.original),
                    )
                })
            }),
            Message::Resources(resources) => filtered(resources, Message::Resources, |listed| {
                self.shows_item(caller, event, &listed.server, &listed.original, || {
                    self.decide_read(caller, Some(&listed.server), &listed.original, false)
                })
            }),
            Message::ResourceTemplates(templates) => {
                filtered(templates, Message::ResourceTemplates, |listed| {
                    self.shows_item(caller, event, &listed.server, &listed.original, || {
                        self.decide_read(caller, Some(&listed.server), &listed.original, true)
                    })
                })
            }
            // A list request: refused only by a rule about the whole list (its items are
            // filtered in the response phase, each by its own server and name).
            Message::Empty if is_list(event) => match self.rule_about(caller, event, None, None) {
                Some(verdict) if verdict.decision == Decision::Deny => {
                    Outcome::Refuse(self.refusal(&verdict))
                }
                _ => Outcome::Continue,
            },
            // Any other request: the rules about its event, and what it reaches.
            _ if event != InterceptionEvent::ToolsCall => {
                let (server, name) = ctx.server_and_tool();
                let verdict = match message {
                    Message::Complete(params) => {
                        self.decide_completion(caller, server, name, &params.r#ref)
                    }
                    Message::Subscribe(params) => {
                        let subscribed = self.request(caller, event, server, name);
                        let uri = name.unwrap_or(&params.uri);
                        match subscribed.decision {
                            Decision::Deny => subscribed,
                            _ => match self.decide_read(caller, server, uri, false) {
                                read if read.decision == Decision::Deny => Verdict {
                                    decision: Decision::Deny,
                                    reason: format!(
                                        "subscribing to `{uri}` is refused because reading it \
                                         is: {}",
                                        read.reason
                                    ),
                                },
                                _ => subscribed,
                            },
                        }
                    }
                    _ => self.request(caller, event, server, name),
                };
                match verdict.decision {
                    Decision::Deny => Outcome::Refuse(self.refusal(&verdict)),
                    Decision::Allow | Decision::Ask => Outcome::Continue,
                }
            }
            _ => Outcome::Continue,
        };
        Box::pin(async move { Ok(outcome) })
    }
}

/// Whether `event` lists prompts, resources or templates.
fn is_list(event: InterceptionEvent) -> bool {
    matches!(
        event,
        InterceptionEvent::PromptsList
            | InterceptionEvent::ResourcesList
            | InterceptionEvent::ResourceTemplatesList
    )
}

/// `items` without those `shown` says no to: `Continue` (no copy) when nothing is hidden.
fn filtered<T: Clone>(
    items: &[Listed<T>],
    wrap: impl FnOnce(Vec<Listed<T>>) -> Message,
    shown: impl Fn(&Listed<T>) -> bool,
) -> Outcome {
    let flags: Vec<bool> = items.iter().map(&shown).collect();
    if flags.iter().all(|&s| s) {
        return Outcome::Continue;
    }
    let kept = items.iter().zip(flags).filter(|(_, shown)| *shown).map(|(l, _)| l.clone());
    Outcome::Rewrite(wrap(kept.collect()))
}

#[cfg(test)]
mod caller_tests;
mod settings;
#[cfg(test)]
mod tests;
