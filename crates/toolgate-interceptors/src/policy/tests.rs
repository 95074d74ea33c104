//! Tests of the `policy` interceptor: rule order, argument conditions, trust levels and list
//! hiding.

use serde_json::json;
use toolgate_intercept::{Listed, Principal, Target};

use super::*;

fn entry(options: Value) -> InterceptorConfig {
    crate::test_entry(KIND, "pipeline[0]", options)
}

fn policy(options: Value) -> Policy {
    Policy::from_config(&entry(options)).expect("valid policy")
}

fn tool(name: &str, read_only: Option<bool>) -> mcp::Tool {
    let mut tool = mcp::Tool::new(name.to_owned(), "", Map::new());
    if let Some(read_only) = read_only {
        tool.annotations = Some(mcp::ToolAnnotations::new().read_only(read_only));
    }
    tool
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().expect("an object")
}

#[test]
fn tool_rules_come_before_server_rules_and_then_the_default() {
    let p = policy(json!({
        "default": "deny",
        "rules": [
            { "servers": ["fs"], "decision": "allow", "reason": "fs is fine" },
            { "servers": ["fs"], "tools": ["delete_*"], "decision": "deny", "reason": "no deleting" },
        ]
    }));
    let delete = p.decide("fs", "delete_file", None, None);
    assert_eq!(delete.decision, Decision::Deny);
    assert!(delete.reason.contains("no deleting") && delete.reason.contains("rules[1]"));
    assert_eq!(p.decide("fs", "read_file", None, None).decision, Decision::Allow);
    let other = p.decide("gh", "issue", None, None);
    assert_eq!(other, Verdict { decision: Decision::Deny, reason: "the policy's default".into() });
}

#[test]
fn conditions_look_at_argument_values() {
    let p = policy(json!({
        "rules": [
            { "tools": ["run"], "when": { "path": "cmd", "matches": "^rm " }, "decision": "deny" },
            { "tools": ["push"], "when": { "path": "options.force", "equals": true }, "decision": "ask" },
            { "tools": ["deploy"], "when": { "path": "env", "one_of": ["prod", "staging"] }, "decision": "deny" },
        ]
    }));
    let decide = |tool: &str, a: Value| p.decide("s", tool, None, Some(&args(a))).decision;
    assert_eq!(decide("run", json!({"cmd": "rm -rf /"})), Decision::Deny);
    assert_eq!(decide("run", json!({"cmd": "ls"})), Decision::Allow);
    assert_eq!(decide("push", json!({"options": {"force": true}})), Decision::Ask);
    assert_eq!(decide("push", json!({"options": {"force": false}})), Decision::Allow);
    assert_eq!(decide("push", json!({})), Decision::Allow);
    assert_eq!(decide("deploy", json!({"env": "prod"})), Decision::Deny);
    assert_eq!(decide("deploy", json!({"env": "dev"})), Decision::Allow);
}

#[test]
fn annotations_and_trust_levels() {
    let p = policy(json!({
        "default": "deny",
        "trust": { "box": "sandboxed", "wild": "untrusted", "home": "trusted" },
        "rules": [
            { "servers": ["wild"], "decision": "allow" },
            { "servers": ["box"], "decision": "allow" },
            { "annotations": { "read_only": true }, "servers": ["other"], "decision": "allow" },
        ]
    }));
    let read = tool("read", Some(true));
    let write = tool("write", Some(false));
    assert_eq!(p.decide("box", "read", Some(&read), None).decision, Decision::Allow);
    let boxed = p.decide("box", "write", Some(&write), None);
    assert_eq!(boxed.decision, Decision::Deny);
    assert!(boxed.reason.contains("sandboxed"), "{}", boxed.reason);
    assert_eq!(p.decide("wild", "write", Some(&write), None).decision, Decision::Ask);
    assert_eq!(p.decide("wild", "read", Some(&read), None).decision, Decision::Allow);
    assert_eq!(p.decide("home", "write", Some(&write), None).decision, Decision::Allow);
    assert_eq!(p.decide("other", "read", Some(&read), None).decision, Decision::Allow);
    assert_eq!(p.decide("other", "write", Some(&write), None).decision, Decision::Deny);
}

#[test]
fn every_option_problem_is_reported_with_its_path() {
    let errors = Policy::from_config(&entry(json!({
        "default": "maybe",
        "trust": { "fs": "somewhat" },
        "rules": [
            { "tools": ["[x"], "decision": "deny" },
            { "when": { "path": "a", "matches": "(" }, "decision": "allow" },
            { "reason": "no decision" },
            { "decision": "deny", "colour": "red" },
        ],
        "extra": 1
    })))
    .expect_err("invalid");
    let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
    let text = text.join("\n");
    for expected in [
        "pipeline[0].default: expected allow, deny or ask",
        "pipeline[0].trust.fs: expected trusted",
        "pipeline[0].rules[0].tools[0]: invalid glob",
        "pipeline[0].rules[1].when.matches: invalid regex",
        "pipeline[0].rules[2]: missing `decision`",
        "pipeline[0].rules[3].colour: unknown option",
        "pipeline[0].extra: unknown option",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
}

#[tokio::test]
async fn calls_are_refused_with_who_and_why_and_lists_hide_what_is_always_denied() {
    let p = policy(json!({
        "rules": [
            { "tools": ["delete_*"], "decision": "deny", "reason": "nothing is deleted" },
            { "tools": ["run"], "when": { "path": "cmd", "equals": "rm" }, "decision": "deny" },
            { "tools": ["push"], "decision": "ask" },
        ]
    }));
    let mut ctx = CallContext::new(Principal::local());
    ctx.target = Some(Target {
        server: "fs".into(),
        original: "delete_file".into(),
        exposed: "fs__delete_file".into(),
        tool: None,
    });
    let call = Message::CallTool(mcp::CallToolRequestParams::new("fs__delete_file"));
    match p.intercept(Event::ToolsCall, Phase::Request, &call, &mut ctx).await {
        Ok(Outcome::Refuse(refusal)) => {
            assert_eq!(refusal.interceptor, "policy");
            assert!(refusal.reason.contains("nothing is deleted"), "{}", refusal.reason);
        }
        other => panic!("expected a refusal: {other:?}"),
    }
    ctx.target.as_mut().unwrap().original = "push".into();
    assert!(ctx.get::<ApprovalRequired>().is_none());
    match p.intercept(Event::ToolsCall, Phase::Request, &call, &mut ctx).await {
        Ok(Outcome::Continue) => {}
        other => panic!("`ask` leaves the call to approval: {other:?}"),
    }
    let required = ctx.get::<ApprovalRequired>().expect("`ask` asks for approval");
    assert_eq!(required.by, "policy");

    let listed = |name: &str| Listed {
        server: "fs".into(),
        original: name.into(),
        item: tool(&format!("fs__{name}"), None),
    };
    let list =
        Message::Tools(vec![listed("delete_file"), listed("run"), listed("push"), listed("read")]);
    let mut ctx = CallContext::new(Principal::local());
    match p.intercept(Event::ToolsList, Phase::Response, &list, &mut ctx).await {
        Ok(Outcome::Rewrite(Message::Tools(kept))) => {
            let names: Vec<&str> = kept.iter().map(|l| l.original.as_str()).collect();
            assert_eq!(names, ["run", "push", "read"], "only the always-denied tool is hidden");
        }
        other => panic!("expected a rewritten list: {other:?}"),
    }
}
