//! Tests of limits: options, timeouts, concurrency slots, token buckets, audit mode, and bounded per-tool state.

use serde_json::json;
use toolgate_intercept::{Principal, Target};

use super::*;

fn entry(options: Value) -> InterceptorConfig {
    crate::test_entry(KIND, "pipeline[2]", options)
}

fn limits(options: Value) -> Limits {
    Limits::from_config(&entry(options)).expect("valid options")
}

fn errors(options: Value) -> Vec<String> {
    let errors = Limits::from_config(&entry(options)).expect_err("invalid options");
    errors.iter().map(ToString::to_string).collect()
}

/// The context of a call of `exposed`, a tool its server lists when `listed`.
fn ctx(exposed: &str, listed: bool) -> CallContext {
    let (server, original) = exposed.split_once("__").expect("a namespaced name");
    let mut ctx = CallContext::new(Principal::local());
    let tool = toolgate_core::mcp::Tool::new(original.to_owned(), "", Arc::default());
    ctx.target = Some(Target {
        server: server.into(),
        original: original.into(),
        exposed: exposed.into(),
        tool: listed.then(|| Arc::new(tool)),
    });
    ctx
}

/// Runs `l` on a call of `exposed`, a listed tool: the context (holding what was granted) or
/// the reason.
async fn call(l: &Limits, exposed: &str) -> Result<CallContext, String> {
    call_of(l, exposed, true).await
}

/// [`call`] of a tool that is listed or not.
async fn call_of(l: &Limits, exposed: &str, listed: bool) -> Result<CallContext, String> {
    let mut ctx = ctx(exposed, listed);
    let message =
        Message::CallTool(toolgate_core::mcp::CallToolRequestParams::new(exposed.to_owned()));
    match l.intercept(InterceptionEvent::ToolsCall, Phase::Request, &message, &mut ctx).await {
        Ok(Outcome::Continue) => Ok(ctx),
        Ok(Outcome::Refuse(refusal)) => {
            assert_eq!(refusal.interceptor, KIND);
            Err(refusal.reason)
        }
        other => panic!("a validator continues or refuses: {other:?}"),
    }
}

fn timeout_of(ctx: &CallContext) -> Option<Duration> {
    ctx.get::<UpstreamTimeout>().map(|t| t.0)
}

#[tokio::test(start_paused = true)]
async fn concurrency_is_refused_at_once_and_released_when_the_context_is_dropped() {
    let l = limits(json!({ "server": { "github": { "concurrency": 2 } } }));
    let first = call(&l, "github__search").await.expect("a free slot");
    let second = call(&l, "github__create_issue").await.expect("a free slot");
    assert_eq!(
        call(&l, "github__search").await.expect_err("no free slot"),
        "server \"github\" already has 2 calls in flight (limit 2)"
    );
    // Other servers are not limited.
    call(&l, "files__read").await.expect("not limited");
    drop(first);
    let third = call(&l, "github__search").await.expect("a slot was released");
    drop((second, third));
    let _a = call(&l, "github__search").await.expect("free");
    let _b = call(&l, "github__search").await.expect("free");
}

#[tokio::test(start_paused = true)]
async fn tool_and_server_limits_both_hold_and_glob_keys_count_each_tool() {
    let l = limits(json!({
        "server": { "files": { "concurrency": 3 } },
        "tool": { "files__*": { "concurrency": 1 } },
    }));
    let read = call(&l, "files__read").await.expect("free");
    assert_eq!(
        call(&l, "files__read").await.expect_err("the tool's slot is taken"),
        "tool \"files__read\" already has 1 call in flight (limit 1)"
    );
    // The glob gives files__write its own limiter.
    let write = call(&l, "files__write").await.expect("its own slot");
    let _stat = call(&l, "files__stat").await.expect("its own slot");
    assert_eq!(
        call(&l, "files__list").await.expect_err("the server is full"),
        "server \"files\" already has 3 calls in flight (limit 3)"
    );
    drop((read, write));
    call(&l, "files__list").await.expect("the server has room again");
}

#[tokio::test(start_paused = true)]
async fn a_refusal_by_one_limit_takes_nothing_from_the_others() {
    let l = limits(json!({
        "server": { "github": { "rate": "2/min" } },
        "tool": { "github__create_issue": { "concurrency": 1 } },
    }));
    let held = call(&l, "github__create_issue").await.expect("first");
    // Refused by concurrency: no rate token is used.
    call(&l, "github__create_issue").await.expect_err("no slot");
    call(&l, "github__create_issue").await.expect_err("no slot");
    drop(held);
    call(&l, "github__search").await.expect("the second of two tokens");
    // Refused by the rate: the slot taken while checking is given back.
    let reason = call(&l, "github__create_issue").await.expect_err("no token");
    assert!(reason.starts_with("server \"github\" is limited to 2 calls per minute"), "{reason}");
    tokio::time::advance(Duration::from_secs(30)).await;
    let _held = call(&l, "github__create_issue").await.expect("a token and a slot");
}

#[tokio::test(start_paused = true)]
async fn the_rate_refuses_with_the_wait_and_refills() {
    let l = limits(json!({ "tool": { "github__create_issue": { "rate": "10/min" } } }));
    for i in 0..10 {
        call(&l, "github__create_issue").await.unwrap_or_else(|e| panic!("call {i}: {e}"));
    }
    assert_eq!(
        call(&l, "github__create_issue").await.expect_err("the bucket is empty"),
        "tool \"github__create_issue\" is limited to 10 calls per minute; try again in 6.0s"
    );
    tokio::time::advance(Duration::from_millis(1800)).await;
    assert_eq!(
        call(&l, "github__create_issue").await.expect_err("still empty"),
        "tool \"github__create_issue\" is limited to 10 calls per minute; try again in 4.2s"
    );
    tokio::time::advance(Duration::from_millis(4200)).await;
    call(&l, "github__create_issue").await.expect("one token came back");
    call(&l, "github__create_issue").await.expect_err("only one");
    // A long quiet spell refills the bucket to its burst, no further.
    tokio::time::advance(Duration::from_secs(3600)).await;
    for _ in 0..10 {
        call(&l, "github__create_issue").await.expect("a full bucket");
    }
    call(&l, "github__create_issue").await.expect_err("burst is 10");
    // Other tools are not limited.
    call(&l, "github__search").await.expect("not limited");
}

#[tokio::test(start_paused = true)]
async fn burst_spreads_calls_out() {
    let l = limits(json!({ "server": { "github": { "rate": "1/s", "burst": 1 } } }));
    call(&l, "github__a").await.expect("first");
    assert_eq!(
        call(&l, "github__a").await.expect_err("one per second"),
        "server \"github\" is limited to 1 call per second; try again in 1.0s"
    );
    tokio::time::advance(Duration::from_millis(999)).await;
    assert!(call(&l, "github__a").await.expect_err("not yet").ends_with("try again in 0.1s"));
    tokio::time::advance(Duration::from_millis(1)).await;
    call(&l, "github__a").await.expect("a second passed");
}

#[tokio::test(start_paused = true)]
async fn the_default_burst_is_capped() {
    let l = limits(json!({ "server": { "big": { "rate": "3600/hour" } } }));
    for _ in 0..DEFAULT_BURST_CAP {
        call(&l, "big__x").await.expect("within the burst");
    }
    assert_eq!(
        call(&l, "big__x").await.expect_err("past the burst"),
        "server \"big\" is limited to 3600 calls per hour; try again in 1.0s"
    );
}

#[tokio::test(start_paused = true)]
async fn a_glob_rate_is_per_tool() {
    let l = limits(json!({ "tool": { "github__*": { "rate": "1/hour" } } }));
    call(&l, "github__a").await.expect("a's token");
    call(&l, "github__b").await.expect("b's own token");
    assert_eq!(
        call(&l, "github__a").await.expect_err("a's is used"),
        "tool \"github__a\" is limited to 1 call per hour; try again in 1h"
    );
    tokio::time::advance(Duration::from_secs(59 * 60 + 30)).await;
    assert!(call(&l, "github__a").await.expect_err("").ends_with("try again in 30.0s"));
}

#[tokio::test(start_paused = true)]
async fn timeouts_the_tool_overrides_the_server_and_an_exact_key_a_glob() {
    let l = limits(json!({
        "server": { "github": { "timeout": "30s" } },
        "tool": {
            "github__*": { "timeout": "20s" },
            "github__search*": { "timeout": "10s" },
            "github__search_code": { "timeout": "1m" },
            "files__read": { "timeout": "500ms" },
        },
    }));
    let timeout = |exposed: &'static str| {
        let l = &l;
        async move { timeout_of(&call(l, exposed).await.expect("no limits refuse")) }
    };
    assert_eq!(timeout("github__search_code").await, Some(Duration::from_secs(60)));
    assert_eq!(timeout("github__search_issues").await, Some(Duration::from_secs(10)));
    assert_eq!(timeout("github__create_issue").await, Some(Duration::from_secs(20)));
    assert_eq!(timeout("files__read").await, Some(Duration::from_millis(500)));
    assert_eq!(timeout("files__write").await, None);
    let server_only = limits(json!({ "server": { "github": { "timeout": "1m30s" } } }));
    let ctx = call(&server_only, "github__x").await.expect("continues");
    assert_eq!(timeout_of(&ctx), Some(Duration::from_secs(90)));
}

#[tokio::test(start_paused = true)]
async fn an_earlier_shorter_timeout_and_earlier_permits_are_kept() {
    let first = limits(json!({ "server": { "github": { "timeout": "5s", "concurrency": 1 } } }));
    let second = limits(json!({ "server": { "github": { "timeout": "30s", "concurrency": 1 } } }));
    let mut ctx = ctx("github__x", true);
    let message = Message::CallTool(toolgate_core::mcp::CallToolRequestParams::new("github__x"));
    for l in [&first, &second] {
        let outcome =
            l.intercept(InterceptionEvent::ToolsCall, Phase::Request, &message, &mut ctx).await;
        assert_eq!(outcome.expect("decides"), Outcome::Continue);
    }
    assert_eq!(timeout_of(&ctx), Some(Duration::from_secs(5)));
    // Both permits are held by the one context.
    call(&first, "github__x").await.expect_err("first is full");
    call(&second, "github__x").await.expect_err("second is full");
    drop(ctx);
    call(&first, "github__x").await.expect("released");
    call(&second, "github__x").await.expect("released");
}

#[tokio::test(start_paused = true)]
async fn audit_mode_leaves_no_timeout() {
    let mut config = entry(json!({ "server": { "github": { "timeout": "5s" } } }));
    config.mode = Mode::Audit;
    let l = Limits::from_config(&config).expect("valid");
    let ctx = call(&l, "github__x").await.expect("continues");
    assert_eq!(timeout_of(&ctx), None);
}

#[tokio::test(start_paused = true)]
async fn calls_without_a_target_are_not_limited() {
    let l = limits(json!({ "tool": { "*": { "concurrency": 1, "rate": "1/hour" } } }));
    let message = Message::CallTool(toolgate_core::mcp::CallToolRequestParams::new("x"));
    for _ in 0..3 {
        let mut ctx = CallContext::new(Principal::local());
        let outcome =
            l.intercept(InterceptionEvent::ToolsCall, Phase::Request, &message, &mut ctx).await;
        assert_eq!(outcome.expect("decides"), Outcome::Continue);
    }
}

#[test]
fn option_errors_name_the_field() {
    let text = errors(json!({
        "server": {
            "github": {},
            "files": { "timeout": "soon", "concurrency": 0, "colour": "red" },
            "slack": { "rate": "10 per minute", "burst": 0 },
            "jira": { "concurrency": "4" },
            "mail": 5,
        },
        "tool": {
            "github__*": { "timeout": "30", "burst": 3 },
            "files__[x": { "concurrency": 1 },
            "big": { "rate": "2000000/s" },
        },
        "servers": ["x"],
    }))
    .join("\n");
    for expected in [
        "pipeline[2].servers: unknown option (expected one of: server, tool)",
        "pipeline[2].server.github: sets no limit (expected timeout, concurrency or rate)",
        "pipeline[2].server.files.timeout: invalid duration \"soon\": expected a number at character 1",
        "pipeline[2].server.files.concurrency: expected an integer of at least 1, found 0",
        "pipeline[2].server.files.colour: unknown option (expected one of: timeout, concurrency, rate, burst, per)",
        "pipeline[2].server.slack.rate: expected a rate such as \"10/min\"",
        "pipeline[2].server.slack.burst: expected an integer of at least 1, found 0",
        "pipeline[2].server.jira.concurrency: expected an integer of at least 1, found \"4\"",
        "pipeline[2].server.mail: expected a table such as { rate = \"10/min\" }, found 5",
        "pipeline[2].tool.github__*.timeout: invalid duration \"30\": missing unit after 30 (for example 30s)",
        "pipeline[2].tool.github__*.burst: needs a `rate`",
        "pipeline[2].tool.files__[x: invalid glob \"files__[x\"",
        "pipeline[2].tool.big.rate: expected a rate",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    assert_eq!(errors(json!({})), ["pipeline[2]: sets no limits (expected `server` or `tool`)"]);
    assert_eq!(
        errors(json!({ "tool": ["x"] })),
        ["pipeline[2].tool: expected a table, found [\"x\"]"]
    );
}

#[test]
fn rates_and_durations_parse() {
    assert_eq!(parse_rate("10/min"), Some((10, Per::Minute)));
    assert_eq!(parse_rate(" 5 / s "), Some((5, Per::Second)));
    assert_eq!(parse_rate("5/sec"), Some((5, Per::Second)));
    assert_eq!(parse_rate("100/hour"), Some((100, Per::Hour)));
    for bad in ["", "10", "0/s", "-1/s", "1.5/s", "10/day", "10/ms", "ten/min", "/min"] {
        assert_eq!(parse_rate(bad), None, "{bad:?}");
    }
    let positive = |text| crate::options::positive_duration(text, crate::options::ABOVE_ZERO);
    assert_eq!(positive("30s"), Ok(Duration::from_secs(30)));
    assert_eq!(positive("1m30s"), Ok(Duration::from_secs(90)));
    assert_eq!(positive("1h 2m"), Ok(Duration::from_secs(3720)));
    assert_eq!(positive("250ms"), Ok(Duration::from_millis(250)));
    for bad in ["", "0s", "30", "s", "3 fortnights", "-1s"] {
        assert!(positive(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn it_is_a_fail_closed_validator_of_tool_calls() {
    let l = limits(json!({ "server": { "github": { "concurrency": 1 } } }));
    let d = l.descriptor();
    assert_eq!(d.interceptor_type, InterceptorType::Validation);
    assert!(!d.fail_open);
    assert!(d.applies(InterceptionEvent::ToolsCall, Phase::Request, Some("github"), Some("x")));
    assert!(!d.applies(InterceptionEvent::ToolsCall, Phase::Response, Some("github"), Some("x")));
}

/// How many limiters the `tool` key `key` holds now.
fn limiters_of(l: &Limits, key: &str) -> usize {
    let key = l.tools.iter().find(|t| t.key == key).expect("a tool key");
    key.limiters.lock().unwrap_or_else(PoisonError::into_inner).by_name.len()
}

#[tokio::test(start_paused = true)]
async fn names_no_server_lists_share_one_limiter_per_glob_key() {
    let l = limits(json!({ "tool": { "fx__*": { "concurrency": 1 } } }));
    let made_up = call_of(&l, "fx__made_up_1", false).await.expect("a free slot");
    assert_eq!(
        call_of(&l, "fx__made_up_2", false).await.expect_err("the shared slot is taken"),
        "tools matching \"fx__*\" that no server lists already has 1 call in flight (limit 1)"
    );
    // A listed tool keeps its own limiter.
    let _listed = call(&l, "fx__echo").await.expect("its own slot");
    drop(made_up);
    for i in 0..10_000 {
        let _ = call_of(&l, &format!("fx__made_up_{i}"), false).await.expect("free again");
    }
    assert_eq!(limiters_of(&l, "fx__*"), 2, "one for fx__echo, one for every unlisted name");
}

#[tokio::test(start_paused = true)]
async fn limiters_at_rest_are_forgotten_and_busy_ones_kept() {
    let l = limits(json!({ "tool": { "fx__*": { "concurrency": 1, "rate": "1/min" } } }));
    // One tool is busy (a call in flight), another has used its rate.
    let busy = call(&l, "fx__busy").await.expect("free");
    let _ = call(&l, "fx__spent").await.expect("free");
    tokio::time::advance(Duration::from_secs(61)).await;
    let _ = call(&l, "fx__spent").await.expect("a minute later");
    for i in 0..5_000 {
        let _ = call(&l, &format!("fx__t{i}")).await.expect("each its own limiter");
        // Each of these spends its bucket; once a minute has passed they are at rest again.
        if i % 1_000 == 999 {
            tokio::time::advance(Duration::from_secs(61)).await;
        }
    }
    assert!(
        limiters_of(&l, "fx__*") <= 2 * LIMITERS_BEFORE_SWEEP,
        "the map stays bounded: {}",
        limiters_of(&l, "fx__*")
    );
    // Forgetting is never a way around a limit: the busy tool is still busy.
    assert_eq!(
        call(&l, "fx__busy").await.expect_err("still in flight"),
        "tool \"fx__busy\" already has 1 call in flight (limit 1)"
    );
    drop(busy);
}

#[tokio::test(start_paused = true)]
async fn a_spent_bucket_is_not_forgotten() {
    let l = limits(json!({ "tool": { "fx__*": { "rate": "1/hour" } } }));
    let _ = call(&l, "fx__spent").await.expect("free");
    for i in 0..3 * LIMITERS_BEFORE_SWEEP {
        let _ = call(&l, &format!("fx__t{i}")).await.expect("each its own limiter");
    }
    let refused = call(&l, "fx__spent").await.expect_err("its hour is not over");
    assert!(refused.starts_with("tool \"fx__spent\" is limited to 1 call per hour"), "{refused}");
}

/// Runs `l` on a call of the listed tool `exposed` by `principal`.
async fn call_as(l: &Limits, exposed: &str, principal: Principal) -> Result<CallContext, String> {
    let mut ctx = ctx(exposed, true);
    ctx.principal = principal;
    let message =
        Message::CallTool(toolgate_core::mcp::CallToolRequestParams::new(exposed.to_owned()));
    match l.intercept(InterceptionEvent::ToolsCall, Phase::Request, &message, &mut ctx).await {
        Ok(Outcome::Continue) => Ok(ctx),
        Ok(Outcome::Refuse(refusal)) => Err(refusal.reason),
        other => panic!("a validator continues or refuses: {other:?}"),
    }
}

fn person(id: &str, tenant: Option<&str>) -> Principal {
    Principal::new("jwt", id).with_tenant(tenant.map(str::to_owned))
}

#[tokio::test(start_paused = true)]
async fn per_caller_each_caller_has_its_own_limit_and_a_shared_key_caps_them_all() {
    let l = limits(json!({
        "server": { "github": { "rate": "2/min", "per": "caller" } },
        "tool": { "github__*": { "rate": "3/min" } },
    }));
    let alice = || person("alice", Some("acme"));
    call_as(&l, "github__search", alice()).await.expect("1");
    call_as(&l, "github__search", alice()).await.expect("2");
    let refused = call_as(&l, "github__search", alice()).await.expect_err("her third");
    assert!(
        refused
            .starts_with("server \"github\" for jwt:alice@acme is limited to 2 calls per minute"),
        "{refused}"
    );
    // Another caller has a limit of its own; the same id in another tenant is another caller.
    call_as(&l, "github__search", person("alice", Some("globex"))).await.expect("her own two");
    // The glob key counts everyone's calls of each tool: alice's refused call used none.
    let capped = call_as(&l, "github__search", person("bob", None)).await.expect_err("cap");
    assert!(capped.starts_with("tool \"github__search\" is limited to 3 calls"), "{capped}");
}

#[tokio::test(start_paused = true)]
async fn per_tenant_a_tenants_principals_share_and_anonymous_sessions_are_callers() {
    let l = limits(json!({ "server": { "github": { "concurrency": 1, "per": "tenant" } } }));
    let held = call_as(&l, "github__search", person("alice", Some("acme"))).await.expect("free");
    let refused =
        call_as(&l, "github__search", person("bob", Some("acme"))).await.expect_err("acme's slot");
    assert_eq!(refused, "server \"github\" for tenant acme already has 1 call in flight (limit 1)");
    let _other = call_as(&l, "github__search", person("carol", Some("globex"))).await.expect("own");
    let _none = call_as(&l, "github__search", person("dan", None)).await.expect("no tenant");
    drop(held);
    call_as(&l, "github__search", person("bob", Some("acme"))).await.expect("released");

    let l = limits(json!({ "tool": { "github__search": { "rate": "1/min", "per": "caller" } } }));
    let in_session = |session: &str| {
        let mut ctx = ctx("github__search", true);
        ctx.principal = Principal::anonymous();
        ctx.session = Some(session.to_owned());
        ctx
    };
    let message =
        Message::CallTool(toolgate_core::mcp::CallToolRequestParams::new("github__search"));
    for session in ["s1", "s2"] {
        let mut ctx = in_session(session);
        let outcome = l.intercept(InterceptionEvent::ToolsCall, Phase::Request, &message, &mut ctx);
        assert!(matches!(outcome.await, Ok(Outcome::Continue)), "{session}'s first");
    }
    let mut again = in_session("s1");
    let outcome = l.intercept(InterceptionEvent::ToolsCall, Phase::Request, &message, &mut again);
    match outcome.await {
        Ok(Outcome::Refuse(refusal)) => {
            assert!(refusal.reason.contains("for session s1"), "{}", refusal.reason)
        }
        other => panic!("s1's second is refused: {other:?}"),
    }
}

#[test]
fn per_is_one_of_three_and_needs_something_to_count() {
    let problems = errors(json!({ "server": {
        "a": { "rate": "1/s", "per": "person" },
        "b": { "timeout": "1s", "per": "caller" },
    } }));
    assert!(
        problems.contains(
            &"pipeline[2].server.a.per: expected \"gateway\", \"caller\" or \"tenant\", found \"person\""
                .to_owned()
        ),
        "{problems:?}"
    );
    assert!(
        problems.contains(
            &"pipeline[2].server.b.per: needs a `rate` or `concurrency` to count".to_owned()
        ),
        "{problems:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn per_caller_limiters_at_rest_are_forgotten_however_many_callers_come() {
    let l = limits(json!({ "server": { "github": { "concurrency": 1, "per": "caller" } } }));
    for n in 0..LIMITERS_BEFORE_SWEEP * 5 {
        // Each call ends at once: its caller's limiter is at rest again.
        let done = call_as(&l, "github__search", person(&format!("caller-{n}"), None)).await;
        drop(done.expect("a free slot"));
    }
    let held = l.servers["github"].limiters.lock().unwrap().by_name.len();
    assert!(held <= LIMITERS_BEFORE_SWEEP, "{held} limiters kept for callers long gone");
}
