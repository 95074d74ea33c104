//! smg-mcp's `mcp.yaml` read by toolgate-config, then built and asked here: the `policy` entry
//! made from its `policy` section decides as smg-mcp does (where it decides alone, with `ask`
//! where smg-mcp denies a tool that may be destructive), and the `arg_map` entry made from its
//! tools' aliases builds.

use std::path::Path;

use serde_json::Map;
use toolgate_config::{Config, FixedEnvironment, Format, InterceptorConfig};
use toolgate_core::mcp;
use toolgate_intercept::{Interceptor as _, Principal};
use toolgate_interceptors::arg_map::ArgMap;
use toolgate_interceptors::policy::{Decision, Policy};

fn load(text: &str) -> Config {
    toolgate_config::parse_str(text, Format::Yaml, Path::new("/"), &FixedEnvironment::new())
        .unwrap_or_else(|errors| panic!("must load:\n{errors}"))
}

fn entry<'c>(config: &'c Config, kind: &str) -> &'c InterceptorConfig {
    config.pipeline.iter().find(|entry| entry.kind == kind).expect("the entry")
}

fn policy(text: &str) -> Policy {
    Policy::from_config(entry(&load(text), "policy")).expect("the policy builds")
}

/// A tool with annotations (`None`: without any).
fn tool(read_only: bool, destructive: bool, open_world: bool) -> Option<mcp::Tool> {
    let mut tool = mcp::Tool::new("t", "", Map::new());
    tool.annotations = Some(
        mcp::ToolAnnotations::new()
            .read_only(read_only)
            .destructive(destructive)
            .open_world(open_world),
    );
    Some(tool)
}

/// What `policy` decides about `server:name` for a tool of these annotations.
fn decide(policy: &Policy, server: &str, name: &str, tool: Option<mcp::Tool>) -> Decision {
    policy.decide(&Principal::local(), server, name, tool.as_ref(), None).decision
}

const SERVERS: &str = r#"
servers:
  - { name: brave, protocol: sse, url: "https://b.example.com/sse" }
  - { name: internal, protocol: stdio, command: i }
  - { name: external, protocol: sse, url: "https://e.example.com/sse" }
  - { name: scratch, protocol: stdio, command: s }
  - { name: locked, protocol: stdio, command: l }
"#;

const POLICY: &str = r#"
policy:
  default: allow
  servers:
    brave: { trust_level: trusted }
    external: { trust_level: untrusted }
    scratch: { trust_level: sandboxed }
    locked: { default: { deny_with_reason: "locked for now" } }
  tools:
    "internal:delete_all": deny
    "external:drop": allow
    "scratch:write": allow
    "locked:status": allow
"#;

#[test]
fn the_policy_decides_as_smg_mcp_does() {
    let p = policy(&format!("{SERVERS}{POLICY}"));
    let (read, write, destroy) =
        (tool(true, false, false), tool(false, false, false), tool(false, true, true));

    // Trusted: everything, destructive or not.
    assert_eq!(decide(&p, "brave", "x", destroy.clone()), Decision::Allow);
    assert_eq!(decide(&p, "brave", "x", None), Decision::Allow);

    // Standard: a tool policy, then read-only allowed, destructive asked, the rest by default.
    let denied = p.decide(&Principal::local(), "internal", "delete_all", read.as_ref(), None);
    assert_eq!(denied.decision, Decision::Deny);
    assert!(denied.reason.contains("policy.tools.\"internal:delete_all\""), "{}", denied.reason);
    assert_eq!(decide(&p, "internal", "list", read.clone()), Decision::Allow);
    assert_eq!(decide(&p, "internal", "touch", write.clone()), Decision::Allow);
    assert_eq!(decide(&p, "internal", "rm", destroy.clone()), Decision::Ask);
    // smg-mcp reads a tool without annotations as not destructive; toolgate, as MCP says, may.
    let unannotated = p.decide(&Principal::local(), "internal", "x", None, None);
    assert_eq!(unannotated.decision, Decision::Ask);
    assert!(unannotated.reason.contains("a tool without annotations"), "{}", unannotated.reason);

    // Untrusted: destructive tools asked, unless a tool policy allows them.
    assert_eq!(decide(&p, "external", "rm", destroy.clone()), Decision::Ask);
    assert_eq!(decide(&p, "external", "drop", destroy.clone()), Decision::Allow);
    assert_eq!(decide(&p, "external", "touch", write.clone()), Decision::Allow);

    // Sandboxed: read-only tools that stay inside, and what a tool policy allows.
    assert_eq!(decide(&p, "scratch", "read", read.clone()), Decision::Allow);
    assert_eq!(decide(&p, "scratch", "fetch", tool(true, false, true)), Decision::Deny);
    assert_eq!(decide(&p, "scratch", "touch", write.clone()), Decision::Deny);
    assert_eq!(decide(&p, "scratch", "x", None), Decision::Deny);
    assert_eq!(decide(&p, "scratch", "write", destroy.clone()), Decision::Allow);

    // A server whose default denies: everything but its tool policies, read-only tools too.
    let locked = p.decide(&Principal::local(), "locked", "read", read.as_ref(), None);
    assert_eq!(locked.decision, Decision::Deny);
    assert!(locked.reason.starts_with("locked for now"), "{}", locked.reason);
    assert_eq!(decide(&p, "locked", "status", write), Decision::Allow);
}

#[test]
fn a_global_deny_still_allows_read_only_tools_as_smg_mcp_does() {
    let p = policy(&format!("{SERVERS}policy:\n  default:\n    deny_with_reason: shut\n"));
    assert_eq!(decide(&p, "internal", "list", tool(true, false, true)), Decision::Allow);
    assert_eq!(decide(&p, "internal", "rm", tool(false, true, false)), Decision::Ask);
    let other = p.decide(
        &Principal::local(),
        "internal",
        "touch",
        tool(false, false, false).as_ref(),
        None,
    );
    assert_eq!(other.decision, Decision::Deny);
    assert!(other.reason.starts_with("shut"), "{}", other.reason);
    assert_eq!(decide(&p, "brave", "x", None), Decision::Ask, "brave is not trusted here");
}

#[test]
fn aliases_build_and_stand_for_their_tool() {
    let config = load(
        r#"
servers:
  - name: brave
    protocol: sse
    url: "https://mcp.brave.com/sse"
    tools:
      brave_web_search:
        alias: web_search
        arg_mapping: { renames: { q: query }, defaults: { count: 10 } }
"#,
    );
    let arg_map = ArgMap::from_config(entry(&config, "arg_map")).expect("the arg_map builds");
    assert_eq!(arg_map.alias_of("web_search").as_deref(), Some("brave__brave_web_search"));
}

#[test]
fn the_documented_example_builds_whole() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../toolgate-config/tests/fixtures/valid/smg_mcp.yaml");
    let env = FixedEnvironment::new()
        .with_var("MCP_HOST", "mcp.example.com")
        .with_var("REMOTE_TOKEN", "r")
        .with_var("API_KEY", "a");
    let config = toolgate_config::load_file(&fixture, &env).expect("the fixture loads");
    let kinds: Vec<&str> = config.pipeline.iter().map(|entry| entry.kind.as_str()).collect();
    assert_eq!(kinds, ["policy", "arg_map"]);
    let problems = toolgate_interceptors::check_config_pipeline(
        &config.pipeline,
        false,
        &config.servers,
        None,
    );
    assert!(problems.is_empty(), "{problems:?}");
}
