//! Tests of rules that name callers: `principals`, `groups`, and the lists each caller sees.

use serde_json::json;
use toolgate_intercept::{Principal, Target};

use super::tests::*;
use super::*;

fn jwt(id: &str) -> Principal {
    Principal::new("jwt", id)
}

fn key(id: &str) -> Principal {
    Principal::new("key", id)
}

fn in_groups(principal: Principal, groups: &[&str]) -> Principal {
    principal.with_groups(groups.iter().map(|g| (*g).to_owned()).collect())
}

#[test]
fn a_rule_with_principals_is_for_those_principals_only() {
    let p = policy(json!({
        "default": "deny",
        "rules": [
            { "tools": ["deploy"], "principals": ["jwt:alice", "key:ci-*"], "decision": "allow" },
            { "tools": ["deploy"], "decision": "deny", "reason": "deploys are for alice and CI" },
        ]
    }));
    let deploy = |who: &Principal| p.decide(who, "ops", "deploy", None, None);
    assert_eq!(deploy(&jwt("alice")).decision, Decision::Allow);
    assert!(deploy(&jwt("alice")).reason.contains("rules[0]"));
    assert_eq!(deploy(&key("ci-build")).decision, Decision::Allow, "a glob on the id");
    let tenant = jwt("alice").with_tenant(Some("acme".into()));
    assert_eq!(deploy(&tenant).decision, Decision::Allow, "`kind:id`, whatever the tenant");
    for other in [jwt("bob"), key("alice"), jwt("ci-build"), Principal::new("local", "alice")] {
        let verdict = deploy(&other);
        assert_eq!(verdict.decision, Decision::Deny, "{other}");
        assert!(verdict.reason.contains("rules[1]"), "{other}: {}", verdict.reason);
    }
}

#[test]
fn a_rule_with_groups_is_for_the_members_of_one_of_them() {
    let p = policy(json!({
        "rules": [{ "servers": ["prod"], "groups": ["ops-*", "sre"], "decision": "ask" }]
    }));
    let decide = |who: &Principal| p.decide(who, "prod", "restart", None, None).decision;
    assert_eq!(decide(&in_groups(jwt("alice"), &["dev", "ops-eu"])), Decision::Ask);
    assert_eq!(decide(&in_groups(key("pager"), &["sre"])), Decision::Ask, "any kind");
    assert_eq!(decide(&in_groups(jwt("bob"), &["dev"])), Decision::Allow);
    assert_eq!(decide(&jwt("carol")), Decision::Allow, "in no group");
    assert_eq!(decide(&Principal::anonymous()), Decision::Allow);
}

#[test]
fn a_rule_with_principals_and_groups_needs_both() {
    let p = policy(json!({
        "default": "deny",
        "rules": [{ "principals": ["jwt:*"], "groups": ["admins"], "decision": "allow" }]
    }));
    let decide = |who: &Principal| p.decide(who, "s", "t", None, None).decision;
    assert_eq!(decide(&in_groups(jwt("alice"), &["admins"])), Decision::Allow);
    assert_eq!(decide(&in_groups(key("alice"), &["admins"])), Decision::Deny, "not a token");
    assert_eq!(decide(&in_groups(jwt("bob"), &["users"])), Decision::Deny, "not an admin");
}

/// A pattern without a `:` is about the id of a caller that proved who it is to toolgate
/// (`jwt`, `key`): never the anonymous caller, nor a local user name, nor an upstream.
#[test]
fn a_pattern_without_a_kind_names_authenticated_callers_only() {
    let p = policy(json!({
        "default": "deny",
        "rules": [
            { "principals": ["alice"], "decision": "allow", "reason": "alice" },
            { "principals": ["*"], "tools": ["whoami"], "decision": "allow", "reason": "any" },
        ]
    }));
    let decide = |who: &Principal, tool: &str| p.decide(who, "s", tool, None, None).decision;
    assert_eq!(decide(&jwt("alice"), "t"), Decision::Allow);
    assert_eq!(decide(&key("alice"), "t"), Decision::Allow, "a key named alice too");
    let introspected = Principal::new("token", "alice");
    assert_eq!(decide(&introspected, "t"), Decision::Allow, "an introspected token too");
    assert_eq!(
        decide(&jwt("alice").with_tenant(Some("acme".into())), "t"),
        Decision::Allow,
        "in any tenant"
    );
    assert_eq!(decide(&jwt("bob"), "t"), Decision::Deny);
    for nobody in [
        Principal::anonymous(),
        Principal::new("local", "alice"),
        Principal::new("agent", "alice"),
        Principal::new("cli", "alice"),
        Principal::upstream("alice"),
    ] {
        assert_eq!(decide(&nobody, "t"), Decision::Deny, "{nobody}");
        assert_eq!(decide(&nobody, "whoami"), Decision::Deny, "`*` is not {nobody}");
    }
    // With the kind written, the pattern means what it says.
    let p = policy(json!({
        "default": "deny",
        "rules": [{ "principals": ["anonymous:*", "local:alice"], "decision": "allow" }]
    }));
    assert_eq!(p.decide(&Principal::anonymous(), "s", "t", None, None).decision, Decision::Allow);
    let local = Principal::new("local", "alice");
    assert_eq!(p.decide(&local, "s", "t", None, None).decision, Decision::Allow);
}

#[test]
fn a_rule_for_the_agent() {
    let p = policy(json!({
        "rules": [{ "principals": ["agent:*"], "tools": ["run"], "decision": "ask", "reason": "the model runs it" }]
    }));
    let agent = Principal::new("agent", "me");
    let verdict = p.decide(&agent, "shell", "run", None, None);
    assert_eq!(verdict.decision, Decision::Ask);
    assert_eq!(verdict.reason, "the model runs it (rules[0])");
    for other in [Principal::new("local", "me"), Principal::new("cli", "me"), jwt("agent")] {
        assert_eq!(p.decide(&other, "shell", "run", None, None).decision, Decision::Allow);
    }
}

fn tools_of(server: &str, names: &[&str]) -> Message {
    Message::Tools(
        names
            .iter()
            .map(|name| Listed {
                server: server.into(),
                original: (*name).into(),
                item: tool(&format!("{server}__{name}"), None),
            })
            .collect(),
    )
}

/// The names of the tools `p` leaves of `list` for `principal`.
async fn tools_shown_to(p: &Policy, principal: Principal, list: &Message) -> Vec<String> {
    let mut ctx = CallContext::new(principal);
    let outcome = p
        .intercept(InterceptionEvent::ToolsList, Phase::Response, list, &mut ctx)
        .await
        .expect("decides");
    let kept = match (outcome, list) {
        (Outcome::Continue, Message::Tools(all)) => all.clone(),
        (Outcome::Rewrite(Message::Tools(kept)), _) => kept,
        other => panic!("a list is filtered: {other:?}"),
    };
    kept.into_iter().map(|l| l.original).collect()
}

/// The same list, passed through the same policy for two callers, shows each what it may use.
#[tokio::test]
async fn each_caller_sees_the_list_of_what_it_may_use() {
    let p = policy(json!({
        "rules": [
            { "tools": ["drop_*"], "principals": ["jwt:dba"], "decision": "ask" },
            { "tools": ["drop_*"], "decision": "deny" },
            { "tools": ["query"], "principals": ["key:*"], "decision": "deny" },
        ]
    }));
    let list = tools_of("db", &["query", "drop_table", "drop_index"]);
    assert_eq!(tools_shown_to(&p, jwt("dba"), &list).await, ["query", "drop_table", "drop_index"]);
    assert_eq!(tools_shown_to(&p, jwt("dev"), &list).await, ["query"]);
    assert_eq!(tools_shown_to(&p, key("ci"), &list).await, Vec::<String>::new());
    assert_eq!(tools_shown_to(&p, jwt("dba"), &list).await.len(), 3, "and again, the same");

    // Prompts and templates too.
    let p = policy(json!({
        "default_requests": "deny",
        "rules": [
            { "events": ["prompts/get", "resources/read"], "principals": ["jwt:alice"], "decision": "allow" },
        ]
    }));
    use InterceptionEvent as E;
    let greet = || prompts(&[("s", "greet")]);
    assert_eq!(shown_to(&p, jwt("alice"), E::PromptsList, greet()).await.len(), 1);
    assert!(shown_to(&p, jwt("bob"), E::PromptsList, greet()).await.is_empty());
    let list = || templates(&[("s", "t://{id}")]);
    assert_eq!(shown_to(&p, jwt("alice"), E::ResourceTemplatesList, list()).await.len(), 1);
    assert!(shown_to(&p, jwt("bob"), E::ResourceTemplatesList, list()).await.is_empty());
    let read = |who: &Principal| p.decide_request(who, E::ResourcesRead, Some("s"), Some("t://1"));
    assert_eq!(read(&jwt("alice")).decision, Decision::Allow);
    assert_eq!(read(&jwt("bob")).decision, Decision::Deny);
}

/// `default = "deny"` and one group allowed: the group sees and calls the tools, anyone else
/// sees none and is refused.
#[tokio::test]
async fn deny_by_default_with_a_group_allowed() {
    let p = policy(json!({
        "default": "deny",
        "rules": [{ "servers": ["github"], "groups": ["engineering"], "decision": "allow" }]
    }));
    let list = tools_of("github", &["search", "create_issue"]);
    let engineer = in_groups(jwt("alice"), &["engineering"]);
    assert_eq!(tools_shown_to(&p, engineer.clone(), &list).await, ["search", "create_issue"]);
    let outsider = in_groups(jwt("bob"), &["sales"]);
    assert!(tools_shown_to(&p, outsider.clone(), &list).await.is_empty());
    assert!(tools_shown_to(&p, Principal::anonymous(), &list).await.is_empty());

    let call = Message::CallTool(mcp::CallToolRequestParams::new("github__search"));
    let target = Target {
        server: "github".into(),
        original: "search".into(),
        exposed: "github__search".into(),
        tool: None,
    };
    let mut ctx = CallContext::new(engineer);
    ctx.target = Some(target.clone());
    let outcome = p.intercept(InterceptionEvent::ToolsCall, Phase::Request, &call, &mut ctx).await;
    assert!(matches!(outcome, Ok(Outcome::Continue)), "{outcome:?}");
    let mut ctx = CallContext::new(outsider);
    ctx.target = Some(target);
    match p.intercept(InterceptionEvent::ToolsCall, Phase::Request, &call, &mut ctx).await {
        Ok(Outcome::Refuse(refusal)) => assert_eq!(refusal.reason, "the policy's default"),
        other => panic!("expected a refusal: {other:?}"),
    }
}

#[test]
fn principals_and_groups_are_checked_with_their_paths() {
    let errors = Policy::from_config(&entry(json!({
        "rules": [
            { "decision": "deny" },
            { "decision": "deny" },
            { "principals": ["jwt:alice", "key:[ci"], "decision": "allow" },
            { "groups": ["ops", "{a"], "decision": "allow" },
            { "principals": [], "decision": "allow" },
            { "groups": [], "decision": "allow" },
            { "principals": "jwt:alice", "decision": "allow" },
            { "groups": [1], "decision": "allow" },
            { "principal": ["jwt:alice"], "decision": "allow" },
        ]
    })))
    .expect_err("invalid");
    let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
    let text = text.join("\n");
    for expected in [
        "pipeline[0].rules[2].principals[1]: invalid glob \"key:[ci\"",
        "pipeline[0].rules[3].groups[1]: invalid glob \"{a\"",
        "pipeline[0].rules[4].principals: an empty list names nobody",
        "pipeline[0].rules[5].groups: an empty list names nobody",
        "pipeline[0].rules[6].principals: expected an array of strings",
        "pipeline[0].rules[7].groups: expected an array of strings",
        "pipeline[0].rules[8].principal: unknown option",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    assert!(!text.contains("rules[0]") && !text.contains("rules[1]"), "{text}");

    // What `toolgate config check` runs reports them the same way.
    let bad = entry(json!({ "rules": [{ "principals": ["a", "[b"], "decision": "allow" }] }));
    let checked: Vec<String> =
        crate::check_pipeline(&[bad], false).iter().map(ToString::to_string).collect();
    assert!(
        checked.iter().any(|e| e.starts_with("pipeline[0].rules[0].principals[1]: invalid glob")),
        "{checked:?}"
    );
}
