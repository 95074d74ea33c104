//! Tests of the `approval` interceptor: external and elicited decisions, separation of duties,
//! expiry and remembered grants.

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use std::sync::Mutex;

use toolgate_audit::{EventBus, EventPattern};
use toolgate_intercept::{CallerKey, Elicitor, Principal, Target};

use super::desk::{MOST_HELD, MOST_REMEMBERED};
use super::*;

fn entry(options: Value) -> InterceptorConfig {
    crate::test_entry(KIND, "pipeline[1]", options)
}

fn approval(options: Value) -> (Approval, Arc<ApprovalDesk>, EventBus) {
    let bus = EventBus::new();
    let desk = ApprovalDesk::new(bus.clone());
    desk.set_attended(true);
    let approval = Approval::from_config(&entry(options), desk.clone()).expect("valid options");
    (approval, desk, bus)
}

fn call(args: Value) -> mcp::CallToolRequestParams {
    mcp::CallToolRequestParams::new("fs__write").with_arguments(args.as_object().cloned().unwrap())
}

fn context(principal: Principal) -> CallContext {
    let mut ctx = CallContext::new(principal);
    ctx.target = Some(Target {
        server: "fs".into(),
        original: "write".into(),
        exposed: "fs__write".into(),
        tool: None,
    });
    ctx.insert(ApprovalRequired { by: "policy".into(), reason: "writes need a person".into() });
    ctx
}

fn bob() -> Principal {
    Principal::new("jwt", "bob")
}

async fn run(
    approval: &Approval,
    call: &mcp::CallToolRequestParams,
    ctx: &mut CallContext,
) -> Outcome {
    let message = Message::CallTool(call.clone());
    approval
        .intercept(InterceptionEvent::ToolsCall, Phase::Request, &message, ctx)
        .await
        .expect("decides")
}

/// Waits until the desk holds a call, yielding to the held task. A call that is not on the
/// desk after this many turns never will be (it was refused or let through at once), and the
/// test must fail saying so rather than spin: under the paused clock, time does not move while
/// this loop runs.
async fn first_pending(desk: &ApprovalDesk) -> PendingApproval {
    const TURNS: usize = 10_000;
    for _ in 0..TURNS {
        if let Some(p) = desk.pending().into_iter().next() {
            return p;
        }
        tokio::task::yield_now().await;
    }
    panic!("no call was put on the desk");
}

fn kinds(subscription: &mut toolgate_audit::Subscription) -> Vec<String> {
    std::iter::from_fn(|| subscription.try_recv()).map(|e| e.kind).collect()
}

#[tokio::test(start_paused = true)]
async fn a_call_nobody_asked_about_goes_through() {
    let (approval, desk, _) = approval(json!({ "via": "external" }));
    let mut ctx = context(bob());
    ctx.remove::<ApprovalRequired>();
    assert_eq!(run(&approval, &call(json!({})), &mut ctx).await, Outcome::Continue);
    assert!(desk.pending().is_empty());
}

#[tokio::test(start_paused = true)]
async fn external_approval_lets_the_call_through_and_binds_it_to_the_digest() {
    let (approval, desk, bus) = approval(json!({ "via": "external" }));
    let mut events = bus.subscribe(EventPattern::parse("approval/*").unwrap(), 16);
    let approval = Arc::new(approval);
    let held = {
        let approval = approval.clone();
        tokio::spawn(async move {
            let mut ctx = context(bob());
            let outcome = run(&approval, &call(json!({"path": "a"})), &mut ctx).await;
            (outcome, ctx.get::<Approved>().cloned())
        })
    };
    let pending = first_pending(&desk).await;
    assert_eq!(pending.exposed, "fs__write");
    assert_eq!(pending.arguments, json!({"path": "a"}));
    assert_eq!(pending.caller, "jwt:bob");
    assert_eq!(pending.reason, "writes need a person");
    assert_eq!(pending.to_json()["expires_in_ms"], json!(300_000));
    desk.decide(&pending.id, "alice", Ruling::Allow { remember: None }).await.expect("decided");
    let (outcome, approved) = held.await.unwrap();
    assert_eq!(outcome, Outcome::Continue);
    let approved = approved.expect("the approval is left for the dispatch check");
    assert_eq!(approved.by, "alice");
    assert_eq!(
        approved.digest,
        call_digest("fs", "write", None, call(json!({"path": "a"})).arguments.as_ref())
    );
    assert_eq!(pending.digest, approved.digest);
    assert!(desk.pending().is_empty());
    assert_eq!(kinds(&mut events), ["approval/requested", "approval/granted"]);
    assert_eq!(
        desk.decide(&pending.id, "alice", Ruling::Allow { remember: None }).await,
        Err(DecideError::NotPending(pending.id.clone())),
        "a decided call cannot be decided again"
    );
}

#[tokio::test(start_paused = true)]
async fn a_denial_is_a_refusal_naming_who_and_why() {
    let (approval, desk, bus) = approval(json!({ "via": "external" }));
    let mut events = bus.subscribe(EventPattern::parse("approval/*").unwrap(), 16);
    let approval = Arc::new(approval);
    let held = {
        let approval = approval.clone();
        tokio::spawn(async move { run(&approval, &call(json!({})), &mut context(bob())).await })
    };
    let pending = first_pending(&desk).await;
    desk.decide(&pending.id, "alice", Ruling::Deny { reason: Some("not on a Friday".into()) })
        .await
        .unwrap();
    match held.await.unwrap() {
        Outcome::Refuse(refusal) => {
            assert_eq!(refusal.interceptor, "approval");
            assert!(refusal.reason.contains("alice"), "{}", refusal.reason);
            assert!(refusal.reason.contains("not on a Friday"), "{}", refusal.reason);
        }
        other => panic!("expected a refusal: {other:?}"),
    }
    assert_eq!(kinds(&mut events), ["approval/requested", "approval/refused"]);
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_call_expires_as_a_refusal() {
    let (approval, desk, bus) = approval(json!({ "via": "external", "expires": "2m" }));
    let mut events = bus.subscribe(EventPattern::parse("approval/*").unwrap(), 16);
    let started = Instant::now();
    let outcome = run(&approval, &call(json!({})), &mut context(bob())).await;
    assert_eq!(started.elapsed(), Duration::from_secs(120), "it waits exactly `expires`");
    match outcome {
        Outcome::Refuse(refusal) => assert!(refusal.reason.contains("within 2m"), "{refusal:?}"),
        other => panic!("expected a refusal: {other:?}"),
    }
    assert!(desk.pending().is_empty(), "an expired call leaves the desk");
    assert_eq!(kinds(&mut events), ["approval/requested", "approval/expired"]);
}

#[tokio::test(start_paused = true)]
async fn the_default_expiry_is_five_minutes() {
    let (approval, _, _) = approval(json!({ "via": "external" }));
    let started = Instant::now();
    run(&approval, &call(json!({})), &mut context(bob())).await;
    assert_eq!(started.elapsed(), DEFAULT_EXPIRY);
    assert!(approval.descriptor().timeout > DEFAULT_EXPIRY, "the pipeline must not cut it short");
}

#[tokio::test(start_paused = true)]
async fn separation_of_duties_refuses_the_caller_as_approver() {
    let (approval, desk, _) = approval(json!({ "via": "external", "separate_duties": true }));
    let approval = Arc::new(approval);
    let held = {
        let approval = approval.clone();
        tokio::spawn(async move { run(&approval, &call(json!({})), &mut context(bob())).await })
    };
    let pending = first_pending(&desk).await;
    assert_eq!(
        desk.decide(&pending.id, "bob", Ruling::Allow { remember: None }).await,
        Err(DecideError::OwnCall { approver: "bob".into() })
    );
    assert_eq!(desk.pending().len(), 1, "still waiting for someone else");
    desk.decide(&pending.id, "alice", Ruling::Allow { remember: None }).await.unwrap();
    assert_eq!(held.await.unwrap(), Outcome::Continue);
}

#[tokio::test(start_paused = true)]
async fn allow_again_is_remembered_for_the_same_caller_and_call_only() {
    let (approval, desk, _) = approval(json!({ "via": "external" }));
    let approval = Arc::new(approval);
    let held = {
        let approval = approval.clone();
        tokio::spawn(
            async move { run(&approval, &call(json!({"n": 1})), &mut context(bob())).await },
        )
    };
    let pending = first_pending(&desk).await;
    let remember = Some(Duration::from_secs(600));
    desk.decide(&pending.id, "alice", Ruling::Allow { remember }).await.unwrap();
    assert_eq!(held.await.unwrap(), Outcome::Continue);

    // The very same call by the same caller: no question.
    let mut ctx = context(bob());
    assert_eq!(run(&approval, &call(json!({"n": 1})), &mut ctx).await, Outcome::Continue);
    assert!(ctx.get::<Approved>().unwrap().by.contains("remembered"));

    // Other arguments, or another caller: asked again (and left to expire here).
    let other_args = run(&approval, &call(json!({"n": 2})), &mut context(bob())).await;
    assert!(matches!(other_args, Outcome::Refuse(_)));
    let other_caller =
        run(&approval, &call(json!({"n": 1})), &mut context(Principal::local())).await;
    assert!(matches!(other_caller, Outcome::Refuse(_)));

    // After the time is up, asked again.
    tokio::time::advance(Duration::from_secs(600)).await;
    let later = run(&approval, &call(json!({"n": 1})), &mut context(bob())).await;
    assert!(matches!(later, Outcome::Refuse(_)), "the grant has run out");
}

#[tokio::test(start_paused = true)]
async fn via_deny_refuses_at_once() {
    let (approval, desk, _) = approval(json!({ "via": "deny" }));
    match run(&approval, &call(json!({})), &mut context(bob())).await {
        Outcome::Refuse(refusal) => {
            assert!(refusal.reason.contains("writes need a person"), "{}", refusal.reason);
            assert!(refusal.reason.contains("via = \"deny\""), "{}", refusal.reason);
        }
        other => panic!("expected a refusal: {other:?}"),
    }
    assert!(desk.pending().is_empty());
}

/// A client that answers every elicitation with `content`, counting questions.
struct Answers {
    capable: bool,
    action: mcp::ElicitationAction,
    content: Value,
    asked: AtomicUsize,
    last_message: Mutex<String>,
    last_marker: Mutex<Value>,
}

impl Elicitor for Answers {
    fn can_elicit(&self) -> bool {
        self.capable
    }

    fn elicit(
        &self,
        params: mcp::ElicitRequestParams,
    ) -> BoxFuture<'static, Result<mcp::ElicitResult, String>> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        let text = serde_json::to_value(&params).unwrap();
        *self.last_message.lock().unwrap() = text["message"].as_str().unwrap_or("").to_owned();
        *self.last_marker.lock().unwrap() =
            text["_meta"][toolgate_intercept::approval_handoff::APPROVAL_META].clone();
        let schema = &text["requestedSchema"]["properties"]["decision"]["enum"];
        assert_eq!(schema[0], "allow once", "{text}");
        let result = json!({ "action": match self.action {
            mcp::ElicitationAction::Accept => "accept",
            mcp::ElicitationAction::Decline => "decline",
            _ => "cancel",
        }, "content": self.content });
        Box::pin(async move { Ok(serde_json::from_value(result).unwrap()) })
    }
}

fn answers(capable: bool, action: mcp::ElicitationAction, content: Value) -> Arc<Answers> {
    Arc::new(Answers {
        capable,
        action,
        content,
        asked: AtomicUsize::new(0),
        last_message: Mutex::default(),
        last_marker: Mutex::default(),
    })
}

#[tokio::test(start_paused = true)]
async fn elicit_asks_the_person_at_the_client() {
    let (approval, _, _) = approval(json!({}));
    let client = answers(true, mcp::ElicitationAction::Accept, json!({"decision": "allow once"}));
    let mut ctx = context(bob());
    ctx.elicitor = Some(client.clone());
    assert_eq!(
        run(&approval, &call(json!({"path": "notes.md"})), &mut ctx).await,
        Outcome::Continue
    );
    assert_eq!(client.asked.load(Ordering::SeqCst), 1);
    let message = client.last_message.lock().unwrap().clone();
    assert!(message.contains("fs__write") && message.contains("notes.md"), "{message}");
    assert!(message.contains("writes need a person"), "{message}");
    assert!(ctx.get::<Approved>().is_some());
    // What a client that knows toolgate reads instead of the message.
    let marker = client.last_marker.lock().unwrap().clone();
    assert_eq!(marker["tool"], "fs__write", "{marker}");
    assert_eq!(marker["arguments"], json!({"path": "notes.md"}), "{marker}");
    assert!(marker["reason"].as_str().unwrap().contains("writes need a person"), "{marker}");
    assert_eq!(marker["choices"]["once"], "allow once", "{marker}");
    assert_eq!(marker["choices"]["again"], "allow this exact call for 10m", "{marker}");
    assert_eq!(marker["choices"]["deny"], "deny", "{marker}");

    // Allowed once: the next identical call is asked again.
    let mut ctx = context(bob());
    ctx.elicitor = Some(client.clone());
    run(&approval, &call(json!({"path": "notes.md"})), &mut ctx).await;
    assert_eq!(client.asked.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn elicit_allow_again_and_decline() {
    let (approval, _, _) = approval(json!({ "remember": "1h" }));
    let again = answers(
        true,
        mcp::ElicitationAction::Accept,
        json!({"decision": "allow this exact call for 1h"}),
    );
    for _ in 0..3 {
        let mut ctx = context(bob());
        ctx.elicitor = Some(again.clone());
        assert_eq!(run(&approval, &call(json!({})), &mut ctx).await, Outcome::Continue);
    }
    assert_eq!(again.asked.load(Ordering::SeqCst), 1, "asked once, remembered after");

    let no = answers(true, mcp::ElicitationAction::Decline, json!(null));
    let mut ctx = context(Principal::local());
    ctx.elicitor = Some(no);
    match run(&approval, &call(json!({})), &mut ctx).await {
        Outcome::Refuse(refusal) => assert!(refusal.reason.ends_with(": declined"), "{refusal:?}"),
        other => panic!("a declined question refuses the call: {other:?}"),
    }
    let deny =
        answers(true, mcp::ElicitationAction::Accept, json!({"decision": "deny", "reason": "no"}));
    let mut ctx = context(Principal::local());
    ctx.elicitor = Some(deny);
    match run(&approval, &call(json!({})), &mut ctx).await {
        Outcome::Refuse(refusal) => assert!(refusal.reason.ends_with(": no"), "{refusal:?}"),
        other => panic!("expected a refusal: {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn elicit_without_a_capable_client_falls_back() {
    let (deny, _, _) = approval(json!({}));
    let incapable =
        answers(false, mcp::ElicitationAction::Accept, json!({"decision": "allow once"}));
    let mut ctx = context(bob());
    ctx.elicitor = Some(incapable.clone());
    match run(&deny, &call(json!({})), &mut ctx).await {
        Outcome::Refuse(refusal) => assert!(refusal.reason.contains("elicitation"), "{refusal:?}"),
        other => panic!("expected a refusal: {other:?}"),
    }
    assert_eq!(incapable.asked.load(Ordering::SeqCst), 0);

    let (external, desk, _) = approval(json!({ "fallback": "external" }));
    let external = Arc::new(external);
    let held = {
        let external = external.clone();
        tokio::spawn(async move { run(&external, &call(json!({})), &mut context(bob())).await })
    };
    let pending = first_pending(&desk).await;
    desk.decide(&pending.id, "alice", Ruling::Allow { remember: None }).await.unwrap();
    assert_eq!(held.await.unwrap(), Outcome::Continue);
}

#[tokio::test(start_paused = true)]
async fn audit_mode_never_holds_a_call() {
    let mut config = entry(json!({ "via": "external" }));
    config.mode = Mode::Audit;
    let desk = ApprovalDesk::new(EventBus::new());
    let approval = Approval::from_config(&config, desk.clone()).unwrap();
    let mut ctx = context(bob());
    match run(&approval, &call(json!({})), &mut ctx).await {
        Outcome::Refuse(refusal) => assert!(refusal.reason.contains("would hold")),
        other => panic!("audit mode reports what it would do: {other:?}"),
    }
    assert!(desk.pending().is_empty());
    assert!(ctx.get::<ApprovalRequired>().is_none(), "nothing is left to refuse the call later");
}

#[test]
fn options_are_checked_with_their_paths() {
    let desk = ApprovalDesk::new(EventBus::new());
    let errors = Approval::from_config(
        &entry(json!({
            "via": "phone",
            "expires": "soon",
            "separate_duties": "yes",
            "color": "red",
        })),
        desk.clone(),
    )
    .unwrap_err();
    let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
    let text = text.join("\n");
    for expected in [
        "pipeline[1].color: unknown option",
        "pipeline[1].via: expected one of elicit, external, deny, found \"phone\"",
        "pipeline[1].expires: invalid duration \"soon\"",
        "pipeline[1].separate_duties: expected true or false",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    let errors = Approval::from_config(&entry(json!({ "separate_duties": true })), desk.clone())
        .unwrap_err();
    assert!(errors[0].message.contains("the person asked is the caller"), "{errors:?}");
    let mut short = entry(json!({ "via": "external", "expires": "10m" }));
    short.timeout = Some(Duration::from_secs(60));
    let errors = Approval::from_config(&short, desk).unwrap_err();
    assert_eq!(errors[0].path, "pipeline[1].timeout");
}

#[test]
fn approval_runs_after_the_other_validators_by_default() {
    let (approval, _, _) = approval(json!({}));
    assert_eq!(approval.descriptor().priority, DEFAULT_PRIORITY);
    let mut placed = entry(json!({}));
    placed.priority = -5;
    let desk = ApprovalDesk::new(EventBus::new());
    assert_eq!(Approval::from_config(&placed, desk).unwrap().descriptor().priority, -5);
}

#[test]
fn admin_answers_are_parsed_strictly() {
    let parse = |v: Value| Ruling::from_body(v.as_object().unwrap());
    assert_eq!(parse(json!({"decision": "allow"})), Ok(Ruling::Allow { remember: None }));
    assert_eq!(
        parse(json!({"decision": "allow", "remember": "10m"})),
        Ok(Ruling::Allow { remember: Some(Duration::from_secs(600)) })
    );
    assert_eq!(
        parse(json!({"decision": "deny", "reason": "no"})),
        Ok(Ruling::Deny { reason: Some("no".into()) })
    );
    assert!(parse(json!({})).unwrap_err().contains("missing `decision`"));
    assert!(parse(json!({"decision": "maybe"})).unwrap_err().contains("\"maybe\""));
    assert!(parse(json!({"decision": "deny", "remember": "1m"})).is_err());
    assert!(parse(json!({"decision": "allow", "remember": "later"})).is_err());
    assert!(parse(json!({"decision": "allow", "extra": 1})).unwrap_err().contains("extra"));
}

#[tokio::test(start_paused = true)]
async fn an_unattended_desk_refuses_at_once() {
    let (approval, desk, _) = approval(json!({ "via": "external" }));
    desk.set_attended(false);
    let started = Instant::now();
    match run(&approval, &call(json!({})), &mut context(bob())).await {
        Outcome::Refuse(refusal) => assert!(refusal.reason.contains("admin API"), "{refusal:?}"),
        other => panic!("expected a refusal: {other:?}"),
    }
    assert_eq!(started.elapsed(), Duration::ZERO, "nothing waits for nobody");
    assert!(desk.pending().is_empty());
}

#[tokio::test(start_paused = true)]
async fn allow_again_lasts_ten_minutes_by_default() {
    let (approval, _, _) = approval(json!({}));
    let again = answers(
        true,
        mcp::ElicitationAction::Accept,
        json!({"decision": "allow this exact call for 10m"}),
    );
    let ask = |client: &Arc<Answers>| {
        let mut ctx = context(bob());
        ctx.elicitor = Some(client.clone());
        ctx
    };
    assert_eq!(run(&approval, &call(json!({})), &mut ask(&again)).await, Outcome::Continue);
    tokio::time::advance(Duration::from_secs(10 * 60 - 1)).await;
    assert_eq!(run(&approval, &call(json!({})), &mut ask(&again)).await, Outcome::Continue);
    assert_eq!(again.asked.load(Ordering::SeqCst), 1, "remembered until the end");
    tokio::time::advance(Duration::from_secs(1)).await;
    run(&approval, &call(json!({})), &mut ask(&again)).await;
    assert_eq!(again.asked.load(Ordering::SeqCst), 2, "asked again after ten minutes");
}

#[tokio::test(start_paused = true)]
async fn calls_held_together_are_decided_separately() {
    let (approval, desk, _) = approval(json!({ "via": "external" }));
    let approval = Arc::new(approval);
    let hold = |n: u64| {
        let approval = approval.clone();
        tokio::spawn(
            async move { run(&approval, &call(json!({"n": n})), &mut context(bob())).await },
        )
    };
    let (first, second) = (hold(1), hold(2));
    first_pending(&desk).await;
    for _ in 0..10_000 {
        if desk.pending().len() == 2 {
            break;
        }
        tokio::task::yield_now().await;
    }
    let pending = desk.pending();
    assert_eq!(pending.len(), 2, "both calls are on the desk");
    assert_ne!(pending[0].id, pending[1].id, "each has its own id");
    let id_of =
        |n: u64| pending.iter().find(|p| p.arguments == json!({"n": n})).expect("held").id.clone();
    desk.decide(&id_of(2), "alice", Ruling::Deny { reason: Some("not this one".into()) })
        .await
        .unwrap();
    desk.decide(&id_of(1), "alice", Ruling::Allow { remember: None }).await.unwrap();
    assert_eq!(first.await.unwrap(), Outcome::Continue);
    assert!(matches!(second.await.unwrap(), Outcome::Refuse(_)));
}

#[test]
fn long_arguments_are_clipped_on_a_character_boundary() {
    assert_eq!(clip("short", 5), "short", "a text within the limit is whole");
    // `é` is two bytes: a cut at byte 3 would split the second one.
    assert_eq!(clip("ééé", 3), "é\n… (4 more bytes)");
    assert_eq!(clip("abcdef", 4), "abcd\n… (2 more bytes)");
}

#[test]
fn durations_of_zero_are_refused() {
    let desk = ApprovalDesk::new(EventBus::new());
    let errors = Approval::from_config(&entry(json!({ "via": "external", "expires": "0s" })), desk)
        .unwrap_err();
    assert_eq!(errors[0].to_string(), "pipeline[1].expires: must be greater than zero");
    let parse = |v: Value| Ruling::from_body(v.as_object().unwrap());
    assert_eq!(
        parse(json!({"decision": "allow", "remember": "0s"})),
        Err("`remember`: must be greater than zero".to_owned())
    );
}

#[tokio::test(start_paused = true)]
async fn remembered_approvals_are_capped_forgetting_the_one_that_ends_soonest() {
    let desk = ApprovalDesk::new(EventBus::new());
    let alice = CallerKey::Principal(Principal::new("jwt", "alice"));
    desk.remember(&alice, "first", "bob", false, Duration::from_secs(60)).await;
    for i in 0..MOST_REMEMBERED {
        desk.remember(&alice, &format!("d{i}"), "bob", false, Duration::from_secs(600)).await;
    }
    assert_eq!(desk.remembered(&alice, "first", true).await, None, "the soonest to end went first");
    assert_eq!(desk.remembered(&alice, "d0", true).await.as_deref(), Some("bob"));
    assert_eq!(desk.remembered_count(), MOST_REMEMBERED);
    // Expired ones are swept, not kept until the cap.
    tokio::time::advance(Duration::from_secs(601)).await;
    assert_eq!(desk.remembered(&alice, "d1", true).await, None);
    assert_eq!(desk.remembered_count(), 0);
}

#[tokio::test(start_paused = true)]
async fn past_the_most_held_calls_more_are_refused_at_once() {
    let (approval, desk, _bus) = approval(json!({ "via": "external" }));
    let approval = Arc::new(approval);
    let mut held = Vec::new();
    for i in 0..MOST_HELD {
        let approval = approval.clone();
        held.push(tokio::spawn(async move {
            let mut ctx = context(bob());
            run(&approval, &call(json!({ "n": i })), &mut ctx).await
        }));
    }
    while desk.pending().len() < MOST_HELD {
        tokio::task::yield_now().await;
    }
    let mut ctx = context(bob());
    match run(&approval, &call(json!({ "n": "one too many" })), &mut ctx).await {
        Outcome::Refuse(refusal) => {
            assert!(
                refusal.reason.contains("1000 calls are already waiting"),
                "{}",
                refusal.reason
            );
        }
        other => panic!("refused at once, not {other:?}"),
    }
    for task in held {
        task.abort();
    }
}

/// An anonymous HTTP client in session `session` (none: a 2026-07-28 request) from 192.0.2.7.
fn stranger(session: Option<&str>) -> CallContext {
    let mut ctx = context(Principal::anonymous());
    ctx.session = session.map(str::to_owned);
    ctx.client_address = Some([192, 0, 2, 7].into());
    ctx
}

/// Lets `approval` decide `ctx`'s call in a task of its own; the call's outcome, once decided.
fn held(
    approval: &Arc<Approval>,
    mut ctx: CallContext,
) -> tokio::task::JoinHandle<(Outcome, Option<Approved>)> {
    let approval = approval.clone();
    tokio::spawn(async move {
        let outcome = run(&approval, &call(json!({"path": "a"})), &mut ctx).await;
        (outcome, ctx.get::<Approved>().cloned())
    })
}

/// Every HTTP client that did not authenticate is `anonymous:anonymous`: a grant remembered
/// for one of them is its session's, not every stranger's.
#[tokio::test(start_paused = true)]
async fn allow_again_for_an_anonymous_client_holds_in_its_session_only() {
    let (approval, desk, _) = approval(json!({ "via": "external" }));
    let approval = Arc::new(approval);
    let first = held(&approval, stranger(Some("s1")));
    let pending = first_pending(&desk).await;
    let remember = Some(Duration::from_secs(600));
    desk.decide(&pending.id, "alice", Ruling::Allow { remember }).await.unwrap();
    assert_eq!(first.await.unwrap().0, Outcome::Continue);

    // The same session, the very same call: remembered.
    let (outcome, approved) = held(&approval, stranger(Some("s1"))).await.unwrap();
    assert_eq!(outcome, Outcome::Continue);
    assert_eq!(approved.expect("approved").by, "alice (remembered)");

    // Another session, the very same call: held for an approver again.
    let other = held(&approval, stranger(Some("s2")));
    let pending = first_pending(&desk).await;
    assert_eq!(pending.caller, "anonymous:anonymous");
    desk.decide(&pending.id, "alice", Ruling::Deny { reason: None }).await.unwrap();
    assert!(matches!(other.await.unwrap().0, Outcome::Refuse(_)), "asked, and refused");

    // No session at all: only an address, which strangers share. Asked, and an "allow again"
    // is not kept for it.
    let sessionless = held(&approval, stranger(None));
    let pending = first_pending(&desk).await;
    desk.decide(&pending.id, "alice", Ruling::Allow { remember }).await.unwrap();
    assert_eq!(sessionless.await.unwrap().0, Outcome::Continue);
    let again = held(&approval, stranger(None));
    let pending = first_pending(&desk).await;
    desk.decide(&pending.id, "alice", Ruling::Deny { reason: None }).await.unwrap();
    assert!(matches!(again.await.unwrap().0, Outcome::Refuse(_)), "asked again");
    assert_eq!(desk.remembered_count(), 1, "only the session's grant is kept");
}

/// `via = "elicit"` with `fallback = "external"` and `separate_duties`: a client that can be
/// asked approves its own call; one that cannot waits for an approver. A grant the caller gave
/// itself stands neither for another session's caller nor for an approver's decision.
#[tokio::test(start_paused = true)]
async fn with_separate_duties_a_grant_given_at_the_client_does_not_replace_an_approver() {
    let (approval, desk, _) = approval(json!({
        "fallback": "external",
        "separate_duties": true,
        "remember": "1h",
    }));
    let approval = Arc::new(approval);
    let again = answers(
        true,
        mcp::ElicitationAction::Accept,
        json!({"decision": "allow this exact call for 1h"}),
    );
    let asking = |session: &str| {
        let mut ctx = stranger(Some(session));
        ctx.elicitor = Some(again.clone());
        ctx
    };
    assert_eq!(held(&approval, asking("s1")).await.unwrap().0, Outcome::Continue);
    assert_eq!(held(&approval, asking("s1")).await.unwrap().0, Outcome::Continue);
    assert_eq!(again.asked.load(Ordering::SeqCst), 1, "its own session remembers");

    // Another session that can be asked: asked, not let through on s1's word.
    assert_eq!(held(&approval, asking("s2")).await.unwrap().0, Outcome::Continue);
    assert_eq!(again.asked.load(Ordering::SeqCst), 2, "s2 was asked itself");

    // s1 again, from a client that cannot be asked: the call goes to an approver, and the
    // caller's own grant does not replace them.
    let mut incapable = stranger(Some("s1"));
    incapable.elicitor =
        Some(answers(false, mcp::ElicitationAction::Accept, json!({"decision": "allow once"})));
    let waiting = held(&approval, incapable);
    let pending = first_pending(&desk).await;
    assert!(pending.separate_duties);
    assert_eq!(
        desk.decide(&pending.id, "anonymous", Ruling::Allow { remember: None }).await,
        Err(DecideError::OwnCall { approver: "anonymous".into() }),
        "the approver's name is still checked against the caller's principal"
    );
    desk.decide(&pending.id, "alice", Ruling::Allow { remember: None }).await.unwrap();
    let (outcome, approved) = waiting.await.unwrap();
    assert_eq!(outcome, Outcome::Continue);
    assert_eq!(approved.expect("approved").by, "alice");
}

#[test]
fn an_approver_is_the_caller_by_a_bare_name_or_by_the_callers_identity() {
    use super::desk::is_caller;
    let bob = Principal::new("jwt", "bob").with_tenant(Some("acme".into()));
    for same in ["bob", "jwt:bob", "jwt:bob@acme"] {
        assert!(is_caller(same, &bob), "{same}");
    }
    for other in ["key:bob", "local:bob", "jwt:bob@globex", "jwt:bobby", "jwt:bo", "alice", "b"] {
        assert!(!is_caller(other, &bob), "{other}");
    }
    // A bare name says nothing of the kind: the same person under any of them.
    assert!(is_caller("bob", &Principal::new("local", "bob")));
    assert!(is_caller("bob", &Principal::new("key", "bob")));
    // An id with an `@` in it, in no tenant.
    let mail = Principal::new("jwt", "bob@example.com");
    assert!(is_caller("jwt:bob@example.com", &mail));
    assert!(!is_caller("jwt:bob", &mail));
}

/// An admin token named after the caller's identity (`jwt:bob`) is the caller: comparing the
/// id alone let it approve its own call.
#[tokio::test(start_paused = true)]
async fn separation_of_duties_knows_the_caller_by_its_whole_identity() {
    let (approval, desk, _) = approval(json!({ "via": "external", "separate_duties": true }));
    let approval = Arc::new(approval);
    let caller = Principal::new("jwt", "bob").with_tenant(Some("acme".into()));
    let waiting = held(&approval, context(caller));
    let pending = first_pending(&desk).await;
    assert_eq!(pending.caller, "jwt:bob@acme");
    for own in ["bob", "jwt:bob", "jwt:bob@acme"] {
        assert_eq!(
            desk.decide(&pending.id, own, Ruling::Allow { remember: None }).await,
            Err(DecideError::OwnCall { approver: own.into() })
        );
    }
    // Another identity with the same id is someone else.
    desk.decide(&pending.id, "key:bob", Ruling::Allow { remember: None }).await.unwrap();
    let (outcome, approved) = waiting.await.unwrap();
    assert_eq!(outcome, Outcome::Continue);
    assert_eq!(approved.expect("approved").by, "key:bob");
}

/// A grant is kept for the caller's kind, id and tenant: the same id in another tenant is
/// asked again; the same caller with other groups is not.
#[tokio::test(start_paused = true)]
async fn a_remembered_grant_is_not_shared_across_tenants() {
    let (approval, desk, _) = approval(json!({ "via": "external" }));
    let approval = Arc::new(approval);
    let alice = |tenant: &str| Principal::new("jwt", "alice").with_tenant(Some(tenant.into()));
    let first = held(&approval, context(alice("acme")));
    let pending = first_pending(&desk).await;
    let remember = Some(Duration::from_secs(600));
    desk.decide(&pending.id, "carol", Ruling::Allow { remember }).await.unwrap();
    assert_eq!(first.await.unwrap().0, Outcome::Continue);

    let regrouped = alice("acme").with_groups(vec!["oncall".into()]);
    let (outcome, approved) = held(&approval, context(regrouped)).await.unwrap();
    assert_eq!(outcome, Outcome::Continue);
    assert_eq!(approved.expect("approved").by, "carol (remembered)");

    let elsewhere = held(&approval, context(alice("globex")));
    let pending = first_pending(&desk).await;
    assert_eq!(pending.caller, "jwt:alice@globex", "held again for the other tenant");
    desk.decide(&pending.id, "carol", Ruling::Deny { reason: None }).await.unwrap();
    assert!(matches!(elsewhere.await.unwrap().0, Outcome::Refuse(_)));
    let untenanted = held(&approval, context(Principal::new("jwt", "alice")));
    let pending = first_pending(&desk).await;
    desk.decide(&pending.id, "carol", Ruling::Deny { reason: None }).await.unwrap();
    assert!(matches!(untenanted.await.unwrap().0, Outcome::Refuse(_)), "nor in no tenant");
}
