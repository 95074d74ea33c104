//! Tests of the `policy` interceptor: rule order, argument conditions, trust levels, list
//! hiding, and rules for some principals or groups.

use serde_json::json;
use toolgate_intercept::{Listed, Principal, Target};

use super::*;

pub(super) fn entry(options: Value) -> InterceptorConfig {
    crate::test_entry(KIND, "pipeline[0]", options)
}

pub(super) fn policy(options: Value) -> Policy {
    Policy::from_config(&entry(options)).expect("valid policy")
}

pub(super) fn tool(name: &str, read_only: Option<bool>) -> mcp::Tool {
    let mut tool = mcp::Tool::new(name.to_owned(), "", Map::new());
    if let Some(read_only) = read_only {
        tool.annotations = Some(mcp::ToolAnnotations::new().read_only(read_only));
    }
    tool
}

/// A caller no rule of these tests names (rules without `principals` or `groups`).
pub(super) fn anyone() -> Principal {
    Principal::local()
}

pub(super) fn args(value: Value) -> Map<String, Value> {
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
    let delete = p.decide(&anyone(), "fs", "delete_file", None, None);
    assert_eq!(delete.decision, Decision::Deny);
    assert!(delete.reason.contains("no deleting") && delete.reason.contains("rules[1]"));
    assert_eq!(p.decide(&anyone(), "fs", "read_file", None, None).decision, Decision::Allow);
    let other = p.decide(&anyone(), "gh", "issue", None, None);
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
    let decide =
        |tool: &str, a: Value| p.decide(&anyone(), "s", tool, None, Some(&args(a))).decision;
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
    assert_eq!(p.decide(&anyone(), "box", "read", Some(&read), None).decision, Decision::Allow);
    let boxed = p.decide(&anyone(), "box", "write", Some(&write), None);
    assert_eq!(boxed.decision, Decision::Deny);
    assert!(boxed.reason.contains("sandboxed"), "{}", boxed.reason);
    assert_eq!(p.decide(&anyone(), "wild", "write", Some(&write), None).decision, Decision::Ask);
    assert_eq!(p.decide(&anyone(), "wild", "read", Some(&read), None).decision, Decision::Allow);
    assert_eq!(p.decide(&anyone(), "home", "write", Some(&write), None).decision, Decision::Allow);
    assert_eq!(p.decide(&anyone(), "other", "read", Some(&read), None).decision, Decision::Allow);
    assert_eq!(p.decide(&anyone(), "other", "write", Some(&write), None).decision, Decision::Deny);
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
    match p.intercept(InterceptionEvent::ToolsCall, Phase::Request, &call, &mut ctx).await {
        Ok(Outcome::Refuse(refusal)) => {
            assert_eq!(refusal.interceptor, "policy");
            assert!(refusal.reason.contains("nothing is deleted"), "{}", refusal.reason);
        }
        other => panic!("expected a refusal: {other:?}"),
    }
    ctx.target.as_mut().unwrap().original = "push".into();
    assert!(ctx.get::<ApprovalRequired>().is_none());
    match p.intercept(InterceptionEvent::ToolsCall, Phase::Request, &call, &mut ctx).await {
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
    match p.intercept(InterceptionEvent::ToolsList, Phase::Response, &list, &mut ctx).await {
        Ok(Outcome::Rewrite(Message::Tools(kept))) => {
            let names: Vec<&str> = kept.iter().map(|l| l.original.as_str()).collect();
            assert_eq!(names, ["run", "push", "read"], "only the always-denied tool is hidden");
        }
        other => panic!("expected a rewritten list: {other:?}"),
    }
}

#[test]
fn rules_about_other_events_decide_them_and_leave_tool_calls_alone() {
    let p = policy(json!({
        "default": "deny",
        "rules": [
            { "events": ["completion/complete"], "servers": ["fs"], "decision": "deny", "reason": "no hints" },
            { "events": ["sampling/*", "elicitation/create"], "decision": "deny" },
            { "events": ["resources/read"], "tools": ["secret://*"], "decision": "deny" },
            { "events": ["resources/read"], "decision": "allow" },
        ]
    }));
    let completion =
        p.decide_request(&anyone(), InterceptionEvent::CompletionComplete, Some("fs"), None);
    assert_eq!(completion.decision, Decision::Deny);
    assert!(completion.reason.contains("no hints") && completion.reason.contains("rules[0]"));
    let elsewhere =
        p.decide_request(&anyone(), InterceptionEvent::CompletionComplete, Some("gh"), None);
    assert_eq!(elsewhere.decision, Decision::Allow, "the rule names only fs");
    for event in [InterceptionEvent::SamplingCreateMessage, InterceptionEvent::ElicitationCreate] {
        assert_eq!(
            p.decide_request(&anyone(), event, Some("gh"), Some("t")).decision,
            Decision::Deny
        );
    }
    let secret = p.decide_request(
        &anyone(),
        InterceptionEvent::ResourcesRead,
        Some("fs"),
        Some("secret://k"),
    );
    assert_eq!(secret.decision, Decision::Deny);
    assert!(secret.reason.contains("rules[2]"), "the first matching rule decides");
    let open = p.decide_request(
        &anyone(),
        InterceptionEvent::ResourcesRead,
        Some("fs"),
        Some("file:///a"),
    );
    assert_eq!(open.decision, Decision::Allow);
    assert!(open.reason.contains("rules[3]"));
    let unnamed = p.decide_request(&anyone(), InterceptionEvent::LoggingSetLevel, None, None);
    assert_eq!(unnamed.decision, Decision::Allow, "`default` is about tool calls only");
    assert_eq!(
        p.decide(&anyone(), "fs", "read", None, None).decision,
        Decision::Deny,
        "calls keep default"
    );
}

#[test]
fn a_rule_with_events_applies_to_tool_calls_only_when_it_names_them() {
    let p = policy(json!({
        "rules": [
            { "events": ["prompts/get"], "tools": ["run"], "decision": "deny" },
            { "events": ["tools/*"], "tools": ["drop"], "decision": "deny" },
        ]
    }));
    assert_eq!(p.decide(&anyone(), "s", "run", None, None).decision, Decision::Allow);
    assert_eq!(p.decide(&anyone(), "s", "drop", None, None).decision, Decision::Deny);
    assert_eq!(
        p.decide_request(&anyone(), InterceptionEvent::ToolsList, Some("s"), Some("drop")).decision,
        Decision::Deny,
        "tools/* covers tools/list too"
    );
}

#[test]
fn event_rules_are_checked_when_the_policy_is_built() {
    let errors = Policy::from_config(&entry(json!({
        "rules": [
            { "events": ["sampling/createmessage"], "decision": "deny" },
            { "events": ["prompts/get"], "when": { "path": "a", "equals": 1 }, "decision": "deny" },
            { "events": ["*"], "annotations": { "read_only": true }, "decision": "allow" },
            { "events": ["completion/complete"], "decision": "ask" },
            { "events": ["tools/call"], "when": { "path": "a", "equals": 1 }, "decision": "ask" },
        ]
    })))
    .expect_err("invalid");
    let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
    let text = text.join("\n");
    for expected in [
        "pipeline[0].rules[0].events[0]: matches no event",
        "pipeline[0].rules[1].when: `when` is about a tool call's arguments",
        "pipeline[0].rules[2].annotations: `annotations` is about a tool call's arguments",
        "pipeline[0].rules[3].decision: `ask` holds tool calls for approval",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    assert!(!text.contains("rules[4]"), "when and ask are fine on tools/call:\n{text}");
}

#[tokio::test]
#[allow(deprecated)] // sampling is deprecated in 2026-07-28 (SEP-2577) but still spoken
async fn other_requests_are_refused_by_the_rules_about_their_event() {
    let p = policy(json!({
        "rules": [{ "events": ["sampling/createMessage"], "servers": ["wild"], "decision": "deny" }]
    }));
    let hooked = |event: InterceptionEvent| {
        p.descriptor().hooks.iter().any(|hook| hook.covers(event, Phase::Request))
    };
    assert!(hooked(InterceptionEvent::SamplingCreateMessage));
    assert!(hooked(InterceptionEvent::ToolsCall));
    assert!(!hooked(InterceptionEvent::CompletionComplete), "no rule is about it: not run");
    let ask = Message::CreateMessage(mcp::CreateMessageRequestParams::new(vec![], 10));
    let mut ctx = CallContext::new(Principal::local());
    ctx.target = Some(Target {
        server: "wild".into(),
        original: "summarise".into(),
        exposed: "wild__summarise".into(),
        tool: None,
    });
    let event = InterceptionEvent::SamplingCreateMessage;
    match p.intercept(event, Phase::Request, &ask, &mut ctx).await {
        Ok(Outcome::Refuse(refusal)) => {
            assert_eq!(refusal.interceptor, "policy");
            assert!(refusal.reason.contains("rules[0]"), "{}", refusal.reason);
        }
        other => panic!("expected a refusal: {other:?}"),
    }
    ctx.target.as_mut().expect("a target").server = "tame".into();
    let allowed = p.intercept(event, Phase::Request, &ask, &mut ctx).await;
    assert!(matches!(allowed, Ok(Outcome::Continue)), "{allowed:?}");
}

/// A tool with every annotation MCP defines set as given.
pub(super) fn annotated(
    name: &str,
    destructive: bool,
    idempotent: bool,
    open_world: bool,
) -> mcp::Tool {
    let mut tool = mcp::Tool::new(name.to_owned(), "", Map::new());
    tool.annotations = Some(
        mcp::ToolAnnotations::new()
            .read_only(false)
            .destructive(destructive)
            .idempotent(idempotent)
            .open_world(open_world),
    );
    tool
}

#[test]
fn conditions_follow_array_indexes_in_their_path() {
    let p = policy(json!({
        "rules": [
            { "tools": ["mail"], "when": { "path": "to.1.domain", "equals": "evil.example" }, "decision": "deny" },
        ]
    }));
    let decide = |a: Value| p.decide(&anyone(), "s", "mail", None, Some(&args(a))).decision;
    let second_is_evil = json!({"to": [{"domain": "ok.example"}, {"domain": "evil.example"}]});
    assert_eq!(decide(second_is_evil), Decision::Deny);
    let first_is_evil = json!({"to": [{"domain": "evil.example"}, {"domain": "ok.example"}]});
    assert_eq!(decide(first_is_evil), Decision::Allow);
    // An index past the end, or a key that is not a number, finds nothing.
    assert_eq!(decide(json!({"to": [{"domain": "evil.example"}]})), Decision::Allow);
    let keyed = json!({"to": {"1": {"domain": "evil.example"}}});
    assert_eq!(decide(keyed), Decision::Deny, "an object key that reads like an index");
}

#[test]
fn each_annotation_a_rule_names_must_match_the_tool() {
    let p = policy(json!({
        "default": "allow",
        "rules": [
            { "servers": ["a"], "annotations": { "destructive": true }, "decision": "deny", "reason": "destroys" },
            { "servers": ["b"], "annotations": { "idempotent": false }, "decision": "ask", "reason": "repeats differ" },
            { "servers": ["c"], "annotations": { "open_world": true }, "decision": "deny", "reason": "reaches out" },
        ]
    }));
    let harmless = annotated("t", false, true, false);
    let destructive = annotated("t", true, true, false);
    let once_only = annotated("t", false, false, false);
    let outward = annotated("t", false, true, true);
    let decide =
        |server: &str, tool: &mcp::Tool| p.decide(&anyone(), server, "t", Some(tool), None);
    assert_eq!(decide("a", &destructive).decision, Decision::Deny);
    assert!(decide("a", &destructive).reason.starts_with("destroys"));
    assert_eq!(decide("a", &harmless).decision, Decision::Allow);
    assert_eq!(decide("b", &once_only).decision, Decision::Ask);
    assert_eq!(decide("b", &harmless).decision, Decision::Allow);
    assert_eq!(decide("c", &outward).decision, Decision::Deny);
    assert_eq!(decide("c", &harmless).decision, Decision::Allow);
    // A tool that says nothing gets MCP's defaults: destructive, not idempotent, open world.
    let silent = tool("t", None);
    for server in ["a", "b", "c"] {
        assert_ne!(decide(server, &silent).decision, Decision::Allow, "{server}");
    }
}

#[test]
fn a_standard_server_is_decided_by_rules_and_the_default() {
    let p = policy(json!({
        "default": "deny",
        "trust": { "fs": "standard", "home": "trusted" },
        "rules": [{ "tools": ["read"], "decision": "allow" }]
    }));
    let write = tool("write", Some(false));
    let read = tool("read", Some(true));
    // Neither promoted like `trusted` nor made to ask like `untrusted`.
    let written = p.decide(&anyone(), "fs", "write", Some(&write), None);
    assert_eq!(
        written,
        Verdict { decision: Decision::Deny, reason: "the policy's default".into() }
    );
    assert_eq!(p.decide(&anyone(), "fs", "read", Some(&read), None).decision, Decision::Allow);
    assert_eq!(p.decide(&anyone(), "home", "write", Some(&write), None).decision, Decision::Allow);
}

#[test]
fn a_path_of_the_wrong_type_is_reported_as_such_not_as_missing() {
    let errors = Policy::from_config(&entry(json!({
        "rules": [{ "tools": ["t"], "when": { "path": 5, "equals": 1 }, "decision": "deny" }]
    })))
    .expect_err("invalid");
    let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(text, ["pipeline[0].rules[0].when.path: expected a string, found 5"]);

    let errors = Policy::from_config(&entry(json!({
        "rules": [{ "tools": ["t"], "when": { "equals": 1 }, "decision": "deny" }]
    })))
    .expect_err("invalid");
    let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(text.len(), 1, "{text:?}");
    assert!(text[0].starts_with("pipeline[0].rules[0].when: missing `path`"), "{text:?}");
}

/// A call of `tool` on server `fs`, with its context.
pub(super) fn call_of(tool: &str) -> (Message, CallContext) {
    let mut ctx = CallContext::new(Principal::local());
    ctx.target = Some(Target {
        server: "fs".into(),
        original: tool.into(),
        exposed: format!("fs__{tool}"),
        tool: None,
    });
    (Message::CallTool(mcp::CallToolRequestParams::new(format!("fs__{tool}"))), ctx)
}

#[tokio::test]
async fn in_audit_mode_an_ask_is_recorded_as_a_refusal_and_asks_nobody() {
    let mut audit = entry(
        json!({ "rules": [{ "tools": ["push"], "decision": "ask", "reason": "it publishes" }] }),
    );
    audit.mode = toolgate_core::Mode::Audit;
    let p = Policy::from_config(&audit).expect("valid policy");
    let (call, mut ctx) = call_of("push");
    match p.intercept(InterceptionEvent::ToolsCall, Phase::Request, &call, &mut ctx).await {
        Ok(Outcome::Refuse(refusal)) => {
            assert_eq!(refusal.interceptor, "policy");
            assert_eq!(
                refusal.reason,
                "this call needs a person's approval (it publishes (rules[0]))"
            );
        }
        other => panic!("audit mode records what `ask` would do: {other:?}"),
    }
    assert!(
        ctx.get::<ApprovalRequired>().is_none(),
        "audit mode changes nothing, so it must not hold the call for approval"
    );
}

#[tokio::test]
async fn a_deny_refusal_carries_the_rules_reason_unchanged() {
    let p =
        policy(json!({ "rules": [{ "tools": ["push"], "decision": "deny", "reason": "frozen" }] }));
    let (call, mut ctx) = call_of("push");
    match p.intercept(InterceptionEvent::ToolsCall, Phase::Request, &call, &mut ctx).await {
        Ok(Outcome::Refuse(refusal)) => assert_eq!(refusal.reason, "frozen (rules[0])"),
        other => panic!("expected a refusal: {other:?}"),
    }
}

/// A list item of `T` (read from `item`) offered by `server` under `original`.
pub(super) fn listed<T: serde::de::DeserializeOwned>(
    server: &str,
    original: &str,
    item: Value,
) -> Listed<T> {
    Listed {
        server: server.into(),
        original: original.into(),
        item: serde_json::from_value(item).expect("a valid item"),
    }
}

pub(super) fn prompts(items: &[(&str, &str)]) -> Message {
    Message::Prompts(
        items
            .iter()
            .map(|(server, name)| {
                listed(server, name, json!({"name": format!("{server}__{name}")}))
            })
            .collect(),
    )
}

pub(super) fn resources(items: &[(&str, &str)]) -> Message {
    Message::Resources(
        items
            .iter()
            .map(|(server, uri)| listed(server, uri, json!({"uri": uri, "name": uri})))
            .collect(),
    )
}

pub(super) fn templates(items: &[(&str, &str)]) -> Message {
    Message::ResourceTemplates(
        items
            .iter()
            .map(|(server, t)| listed(server, t, json!({"uriTemplate": t, "name": t})))
            .collect(),
    )
}

/// The (server, original) pairs of the list `p` leaves of `message` in the response phase of
/// `event`.
pub(super) async fn shown(
    p: &Policy,
    event: InterceptionEvent,
    message: Message,
) -> Vec<(String, String)> {
    shown_to(p, anyone(), event, message).await
}

/// [`shown`], to `principal`.
pub(super) async fn shown_to(
    p: &Policy,
    principal: Principal,
    event: InterceptionEvent,
    message: Message,
) -> Vec<(String, String)> {
    fn pairs<T>(items: &[Listed<T>]) -> Vec<(String, String)> {
        items.iter().map(|l| (l.server.clone(), l.original.clone())).collect()
    }
    let mut ctx = CallContext::new(principal);
    let outcome = p.intercept(event, Phase::Response, &message, &mut ctx).await.expect("decides");
    let message = match outcome {
        Outcome::Continue => message,
        Outcome::Rewrite(rewritten) => rewritten,
        other => panic!("a list is filtered, not {other:?}"),
    };
    match message {
        Message::Prompts(items) => pairs(&items),
        Message::Resources(items) => pairs(&items),
        Message::ResourceTemplates(items) => pairs(&items),
        other => panic!("a list: {other:?}"),
    }
}

pub(super) fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect()
}

/// What `p` decides about `message` (the request of `event`) aimed at `name` on `server`.
pub(super) async fn request(
    p: &Policy,
    event: InterceptionEvent,
    server: &str,
    name: &str,
    message: Message,
) -> Outcome {
    let mut ctx = CallContext::new(Principal::local());
    ctx.target = Some(Target {
        server: server.into(),
        original: name.into(),
        exposed: format!("{server}__{name}"),
        tool: None,
    });
    p.intercept(event, Phase::Request, &message, &mut ctx).await.expect("decides")
}

pub(super) fn completion(reference: Value) -> Message {
    Message::Complete(
        serde_json::from_value(json!({"ref": reference, "argument": {"name": "a", "value": ""}}))
            .expect("valid params"),
    )
}

/// The reproduction: `default = "deny"` and rules denying a server's prompts and
/// resources. Its prompts, resources and templates are no longer listed, and completions
/// about them are refused; the other server's stay.
#[tokio::test]
async fn a_server_cut_off_from_prompts_and_resources_is_cut_off_from_lists_and_completions() {
    let p = policy(json!({
        "default": "deny",
        "rules": [
            { "events": ["prompts/*"], "servers": ["cut"], "decision": "deny", "reason": "no prompts" },
            { "events": ["resources/*"], "servers": ["cut"], "decision": "deny", "reason": "no reading" },
        ]
    }));
    use InterceptionEvent as E;
    let listed_prompts = prompts(&[("cut", "greet"), ("open", "greet")]);
    assert_eq!(shown(&p, E::PromptsList, listed_prompts).await, pairs(&[("open", "greet")]));
    let listed = resources(&[("cut", "test://a"), ("open", "test://b")]);
    assert_eq!(shown(&p, E::ResourcesList, listed).await, pairs(&[("open", "test://b")]));
    let listed = templates(&[("cut", "test://t/{id}"), ("open", "test://u/{id}")]);
    assert_eq!(
        shown(&p, E::ResourceTemplatesList, listed).await,
        pairs(&[("open", "test://u/{id}")])
    );
    // The lists themselves are not refused: only a rule about a whole list is.
    for event in [E::PromptsList, E::ResourcesList, E::ResourceTemplatesList] {
        assert_eq!(request(&p, event, "", "", Message::Empty).await, Outcome::Continue);
    }

    let prompt = completion(json!({"type": "ref/prompt", "name": "cut__greet"}));
    match request(&p, E::CompletionComplete, "cut", "greet", prompt.clone()).await {
        Outcome::Refuse(refusal) => {
            assert!(refusal.reason.contains("completions of `greet`"), "{}", refusal.reason);
            assert!(refusal.reason.contains("no prompts (rules[0])"), "{}", refusal.reason);
        }
        other => panic!("a completion of a cut-off prompt is refused: {other:?}"),
    }
    assert_eq!(
        request(&p, E::CompletionComplete, "open", "greet", prompt).await,
        Outcome::Continue
    );
    let template = completion(json!({"type": "ref/resource", "uri": "test://t/{id}"}));
    let refused = request(&p, E::CompletionComplete, "cut", "test://t/{id}", template.clone());
    assert!(matches!(refused.await, Outcome::Refuse(_)));
    let allowed = request(&p, E::CompletionComplete, "open", "test://u/{id}", template);
    assert_eq!(allowed.await, Outcome::Continue);
    assert!(
        p.descriptor().hooks.iter().any(|h| h.covers(E::CompletionComplete, Phase::Request)),
        "completions are checked although no rule names them"
    );
    // Subscribing to what may not be read is refused too.
    let subscribe = Message::Subscribe(mcp::SubscribeRequestParams::new("test://a"));
    let refused = request(&p, E::ResourcesSubscribe, "cut", "test://a", subscribe.clone()).await;
    assert!(matches!(refused, Outcome::Refuse(_)), "{refused:?}");
    let allowed = request(&p, E::ResourcesSubscribe, "open", "test://b", subscribe).await;
    assert_eq!(allowed, Outcome::Continue);
}

#[tokio::test]
async fn a_denied_prompt_or_resource_denies_its_completions_whatever_a_completion_rule_says() {
    let p = policy(json!({
        "rules": [
            { "events": ["completion/complete"], "decision": "allow" },
            { "events": ["prompts/get"], "tools": ["secret_*"], "decision": "deny", "reason": "private" },
            { "events": ["resources/read"], "tools": ["vault://*"], "decision": "deny" },
        ]
    }));
    use InterceptionEvent as E;
    let prompt = |name: &str| completion(json!({"type": "ref/prompt", "name": name}));
    let secret = request(&p, E::CompletionComplete, "s", "secret_plan", prompt("s__secret_plan"));
    assert!(matches!(secret.await, Outcome::Refuse(_)));
    let plain = request(&p, E::CompletionComplete, "s", "plan", prompt("s__plan"));
    assert_eq!(plain.await, Outcome::Continue);
    let vault = completion(json!({"type": "ref/resource", "uri": "vault://{key}"}));
    let refused = request(&p, E::CompletionComplete, "s", "vault://{key}", vault);
    assert!(matches!(refused.await, Outcome::Refuse(_)), "the template's own URI is denied");

    // A rule about completions still decides the completions of what may be used.
    let p = policy(json!({
        "rules": [{ "events": ["completion/complete"], "servers": ["quiet"], "decision": "deny" }]
    }));
    let quiet = request(&p, E::CompletionComplete, "quiet", "plan", prompt("quiet__plan"));
    assert!(matches!(quiet.await, Outcome::Refuse(_)));
}

/// A template is hidden only when no read through it could be allowed.
#[tokio::test]
async fn a_template_is_hidden_when_every_read_through_it_would_be_denied() {
    use InterceptionEvent as E;
    let list = || {
        templates(&[("fs", "file:///{path}"), ("fs", "file:///secret/{name}"), ("db", "db://{t}")])
    };
    // Some reads of fs are allowed: its open template stays; the one under secret/ goes.
    let p = policy(json!({
        "rules": [
            { "events": ["resources/read"], "tools": ["file:///secret/*"], "decision": "deny" },
            { "events": ["resources/read"], "servers": ["db"], "decision": "deny" },
        ]
    }));
    assert_eq!(
        shown(&p, E::ResourceTemplatesList, list()).await,
        pairs(&[("fs", "file:///{path}")])
    );
    // Allowed for some URIs first, then denied for the rest: shown.
    let p = policy(json!({
        "rules": [
            { "events": ["resources/read"], "tools": ["db://public/*"], "decision": "allow" },
            { "events": ["resources/read"], "servers": ["db"], "decision": "deny" },
        ]
    }));
    assert_eq!(shown(&p, E::ResourceTemplatesList, list()).await.len(), 3);
}

/// `default_requests = "deny"`: what no rule allows is cut off, tool calls keep `default`,
/// and lists are filtered item by item rather than refused.
#[tokio::test]
async fn default_requests_deny_cuts_off_every_request_no_rule_allows() {
    use InterceptionEvent as E;
    let p = policy(json!({
        "default_requests": "deny",
        "rules": [
            { "events": ["prompts/*", "resources/*"], "servers": ["open"], "decision": "allow" },
            { "events": ["logging/setLevel"], "decision": "allow" },
        ]
    }));
    assert_eq!(
        p.decide(&anyone(), "any", "tool", None, None).decision,
        Decision::Allow,
        "tools: `default`"
    );
    assert_eq!(
        p.decide_request(&anyone(), E::LoggingSetLevel, None, None).decision,
        Decision::Allow
    );
    let sampling = p.decide_request(&anyone(), E::SamplingCreateMessage, Some("open"), None);
    assert_eq!(sampling.decision, Decision::Deny);
    assert!(sampling.reason.contains("default_requests"), "{}", sampling.reason);
    for event in [E::PromptsList, E::ResourcesList, E::ResourceTemplatesList] {
        assert_eq!(request(&p, event, "", "", Message::Empty).await, Outcome::Continue);
    }
    let listed = prompts(&[("open", "greet"), ("other", "greet")]);
    assert_eq!(shown(&p, E::PromptsList, listed).await, pairs(&[("open", "greet")]));
    let listed = templates(&[("open", "t://{a}"), ("other", "u://{a}")]);
    assert_eq!(shown(&p, E::ResourceTemplatesList, listed).await, pairs(&[("open", "t://{a}")]));
    let prompt = completion(json!({"type": "ref/prompt", "name": "x"}));
    let open = request(&p, E::CompletionComplete, "open", "greet", prompt.clone()).await;
    assert_eq!(open, Outcome::Continue, "completions follow the prompt when no rule names them");
    let other = request(&p, E::CompletionComplete, "other", "greet", prompt).await;
    assert!(matches!(other, Outcome::Refuse(_)));
    let hooked =
        |event: E, phase: Phase| p.descriptor().hooks.iter().any(|h| h.covers(event, phase));
    for event in E::ALL.into_iter().filter(|e| *e != E::ToolsList) {
        assert!(hooked(event, Phase::Request), "{event}");
    }
    assert!(hooked(E::ResourcesList, Phase::Response));

    let errors = Policy::from_config(&entry(json!({ "default_requests": "ask" })))
        .expect_err("ask is for tool calls");
    assert!(errors[0].to_string().starts_with("pipeline[0].default_requests: `ask`"), "{errors:?}");
    let errors = Policy::from_config(&entry(json!({ "default_requests": "never" })))
        .expect_err("not a decision");
    assert!(errors[0].to_string().contains("expected allow, deny or ask"), "{errors:?}");
}

/// A rule about a list event that names a server or a name hides the items it matches.
#[tokio::test]
async fn a_rule_about_a_list_that_names_a_server_hides_that_servers_items() {
    use InterceptionEvent as E;
    let p = policy(json!({
        "rules": [{ "events": ["resources/list"], "servers": ["noisy"], "decision": "deny" }]
    }));
    let listed = resources(&[("noisy", "n://1"), ("calm", "c://1")]);
    assert_eq!(shown(&p, E::ResourcesList, listed).await, pairs(&[("calm", "c://1")]));
    assert_eq!(request(&p, E::ResourcesList, "", "", Message::Empty).await, Outcome::Continue);
    let whole = policy(json!({ "rules": [{ "events": ["resources/list"], "decision": "deny" }] }));
    let refused = request(&whole, E::ResourcesList, "", "", Message::Empty).await;
    assert!(matches!(refused, Outcome::Refuse(_)), "a rule about the whole list refuses it");
}

// === rules for some principals or groups ===
