//! smg-mcp's `policy` as one `policy` pipeline entry.
//!
//! smg-mcp decides a call by policy (in its policy-only mode; its interactive mode asks the
//! application about every call) in this order, first answer wins:
//!
//! 1. `tools."server:tool"`: `allow`, `deny` or `{deny_with_reason: ...}`;
//! 2. `servers.S`: `trusted` allows every tool; `standard` denies when the server's `default`
//!    denies; `untrusted` denies tools that may be destructive, then as `standard`; `sandboxed`
//!    denies tools that may reach outside (open world) or may write (not read-only), and has no
//!    use for `default`;
//! 3. read-only tools are allowed, tools that may be destructive are denied ("requires explicit
//!    policy"), and the rest get `default` (`allow` unless written).
//!
//! toolgate's policy tries its rules that name tools first, then the others in order, then its
//! `default`, so the same order is written as rules (each `servers` and `tools` glob a literal
//! name):
//!
//! | smg-mcp | rule |
//! |---|---|
//! | `tools."S:T": allow / deny` | `{servers = [S], tools = [T], decision = allow / deny}` |
//! | `deny_with_reason: R` | the same, `reason = R` |
//! | `trust_level: trusted` | `{servers = [S], decision = allow}` |
//! | `default: deny` (standard, untrusted) | `{servers = [S], decision = deny}` |
//! | `trust_level: untrusted` | `{servers = [S], annotations = {destructive = true}, decision = ask}` |
//! | `trust_level: sandboxed` | `{servers = [S], annotations = {open_world = true}, decision = deny}`, then `{servers = [S], annotations = {read_only = false}, decision = deny}` |
//! | read-only tools | `{annotations = {read_only = true}, decision = allow}` |
//! | tools that may be destructive | `{annotations = {destructive = true}, decision = ask}` |
//! | `default` | `default`; with a reason, a last rule `{decision = deny, reason = R}` |
//!
//! "May be destructive" is `ask`, not `deny`: smg-mcp denies such calls where it decides alone
//! and asks the application where it can (interactive mode); toolgate refuses them unless an
//! approver is configured, and asks where one is (the Responses endpoint's
//! `mcp_approval_request`). toolgate reads a tool's annotations with MCP's defaults, so a tool
//! without annotations may be destructive and reach outside; smg-mcp reads it as neither. The
//! refusal says so.

use serde_json::{Map, Value as Json, json};

use crate::check::Checker;
use crate::error::key_path;
use crate::model::InterceptorConfig;
use crate::value::Value;

const POLICY_KEYS: &[&str] = &["default", "servers", "tools"];
const SERVER_KEYS: &[&str] = &["trust_level", "default"];
const TRUST_LEVELS: &str = "trusted, standard, untrusted or sandboxed";

/// A decision of smg-mcp's.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Decision {
    Allow,
    /// With its reason, when one is written.
    Deny(Option<String>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trust {
    Trusted,
    Standard,
    Untrusted,
    Sandboxed,
}

/// The `policy` entry for `value` (the `policy` section; `None` when absent, which is smg-mcp's
/// default policy). `servers` are the names of the configured servers, to warn about a policy
/// for another. `None` when the section has a problem: no part of a policy is dropped.
pub(super) fn check(
    cx: &mut Checker<'_>,
    value: Option<&Value>,
    servers: &[String],
) -> Option<InterceptorConfig> {
    let before = cx.error_count();
    let mut default = Decision::Allow;
    let mut tool_rules = Vec::new();
    let mut server_rules = Vec::new();
    if let Some(value) = value
        && let Some(entries) = cx.table(value, "policy")
    {
        let fields = cx.known_keys(entries, "policy", POLICY_KEYS);
        if let Some(value) = fields.get("default")
            && let Some(decision) = decision(cx, value, "policy.default")
        {
            default = decision;
        }
        if let Some(value) = fields.get("tools")
            && let Some(entries) = cx.table(value, "policy.tools")
        {
            for (key, value) in entries {
                tool_rules.extend(tool_rule(cx, key, value, servers));
            }
        }
        if let Some(value) = fields.get("servers")
            && let Some(entries) = cx.table(value, "policy.servers")
        {
            for (server, value) in entries {
                server_rules.extend(server_rules_of(cx, server, value, servers));
            }
        }
    }
    if cx.error_count() != before {
        return None;
    }
    let mut rules = tool_rules;
    rules.extend(server_rules);
    rules.push(rule(None, None, Some(("read_only", true)), "allow", "read-only tools are allowed"));
    rules.push(rule(
        None,
        None,
        Some(("destructive", true)),
        "ask",
        "the tool may be destructive (a tool without annotations may be) and no rule of the \
         policy allows it: a person must approve it",
    ));
    let default = match default {
        Decision::Allow => "allow",
        Decision::Deny(reason) => {
            if let Some(reason) = reason {
                rules.push(rule(None, None, None, "deny", &reason));
            }
            "deny"
        }
    };
    let options = Map::from_iter([
        ("default".to_owned(), Json::from(default)),
        ("rules".to_owned(), Json::Array(rules)),
    ]);
    Some(InterceptorConfig::new("policy", "policy", options))
}

/// `allow`, `deny` or `{deny_with_reason: "..."}`.
fn decision(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<Decision> {
    const EXPECTED: &str = "allow, deny or {deny_with_reason: \"...\"}";
    match value {
        Value::String(text) if text == "allow" => Some(Decision::Allow),
        Value::String(text) if text == "deny" => Some(Decision::Deny(None)),
        Value::String(text) => {
            cx.error(path, format!("unknown decision {text:?} (expected {EXPECTED})"));
            None
        }
        Value::Table(entries) => match entries.as_slice() {
            [(key, reason)] if key == "deny_with_reason" => {
                let at = key_path(path, key);
                let reason = cx.string(reason, &at)?;
                Some(Decision::Deny(Some(reason.to_owned())))
            }
            _ => {
                cx.error(path, format!("expected {EXPECTED}, found another mapping"));
                None
            }
        },
        other => {
            cx.expected(path, EXPECTED, other);
            None
        }
    }
}

/// One `tools."server:tool"` entry.
fn tool_rule(cx: &mut Checker<'_>, key: &str, value: &Value, servers: &[String]) -> Option<Json> {
    let path = key_path("policy.tools", key);
    let decided = decision(cx, value, &path);
    let Some((server, tool)) = key.split_once(':').filter(|(s, t)| !s.is_empty() && !t.is_empty())
    else {
        cx.error(&path, "expected a key \"server:tool\" (smg-mcp ignores any other)");
        return None;
    };
    unknown_server(cx, &path, server, servers);
    let (decision, reason) = match decided? {
        Decision::Allow => ("allow", format!("allowed by {path}")),
        Decision::Deny(None) => ("deny", format!("denied by {path}")),
        Decision::Deny(Some(reason)) => ("deny", reason),
    };
    Some(rule(Some(server), Some(tool), None, decision, &reason))
}

/// The rules of one `servers.S` entry.
fn server_rules_of(
    cx: &mut Checker<'_>,
    server: &str,
    value: &Value,
    servers: &[String],
) -> Vec<Json> {
    let path = key_path("policy.servers", server);
    let Some(entries) = cx.table(value, &path) else { return Vec::new() };
    let fields = cx.known_keys(entries, &path, SERVER_KEYS);
    let trust = match fields.get("trust_level") {
        None => Some(Trust::Standard),
        Some(value) => trust(cx, value, &key_path(&path, "trust_level")),
    };
    let default_path = key_path(&path, "default");
    let default = fields.get("default").map(|value| decision(cx, value, &default_path));
    unknown_server(cx, &path, server, servers);
    let (Some(trust), Some(default)) = (trust, default.unwrap_or(Some(Decision::Allow))) else {
        return Vec::new();
    };
    let written = fields.contains_key("default");
    let denied = |reason: Option<String>| {
        let reason = reason.unwrap_or_else(|| format!("denied by {default_path}"));
        rule(Some(server), None, None, "deny", &reason)
    };
    match (trust, default) {
        (Trust::Trusted, default) => {
            if written && default != Decision::Allow {
                cx.warn(
                    &default_path,
                    "has no effect: a trusted server's tools are all allowed, as in smg-mcp",
                );
            }
            let reason = format!("server `{server}` is trusted ({path}.trust_level)");
            vec![rule(Some(server), None, None, "allow", &reason)]
        }
        (Trust::Sandboxed, default) => {
            if written && default != Decision::Allow {
                cx.warn(&default_path, "has no effect on a sandboxed server, as in smg-mcp");
            }
            let outside = format!(
                "server `{server}` is sandboxed: the tool may reach outside (a tool without \
                 annotations may)"
            );
            let writes = format!(
                "server `{server}` is sandboxed: only tools annotated read-only may be called"
            );
            vec![
                rule(Some(server), None, Some(("open_world", true)), "deny", &outside),
                rule(Some(server), None, Some(("read_only", false)), "deny", &writes),
            ]
        }
        (_, Decision::Deny(reason)) => vec![denied(reason)],
        (Trust::Untrusted, Decision::Allow) => {
            let reason = format!(
                "server `{server}` is untrusted and the tool may be destructive (a tool without \
                 annotations may be): a person must approve it"
            );
            vec![rule(Some(server), None, Some(("destructive", true)), "ask", &reason)]
        }
        (Trust::Standard, Decision::Allow) => Vec::new(),
    }
}

fn trust(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<Trust> {
    match cx.string(value, path)? {
        "trusted" => Some(Trust::Trusted),
        "standard" => Some(Trust::Standard),
        "untrusted" => Some(Trust::Untrusted),
        "sandboxed" => Some(Trust::Sandboxed),
        other => {
            cx.error(path, format!("unknown trust_level {other:?} (expected {TRUST_LEVELS})"));
            None
        }
    }
}

fn unknown_server(cx: &mut Checker<'_>, path: &str, server: &str, servers: &[String]) {
    if !servers.iter().any(|name| name == server) {
        cx.warn(path, format_args!("names no server in servers (\"{server}\")"));
    }
}

/// A rule of toolgate's policy; `server` and `tool` are literal names.
fn rule(
    server: Option<&str>,
    tool: Option<&str>,
    annotation: Option<(&str, bool)>,
    decision: &str,
    reason: &str,
) -> Json {
    let mut rule = Map::new();
    if let Some(server) = server {
        rule.insert("servers".into(), json!([globset::escape(server)]));
    }
    if let Some(tool) = tool {
        rule.insert("tools".into(), json!([globset::escape(tool)]));
    }
    if let Some((name, flag)) = annotation {
        rule.insert("annotations".into(), json!({ name: flag }));
    }
    rule.insert("decision".into(), decision.into());
    rule.insert("reason".into(), reason.into());
    Json::Object(rule)
}
