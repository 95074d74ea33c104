//! Tests of the desk across replicas: two desks on one shared state are two replicas.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use toolgate_audit::EventBus;
use toolgate_config::InterceptorConfig;
use toolgate_core::mcp;
use toolgate_intercept::{
    ApprovalRequired, CallContext, CallerKey, InterceptionEvent, Interceptor, Message, Outcome,
    Phase, Principal, Target,
};
use toolgate_state::SharedState;

use super::super::{Approval, ApprovalDesk, DecideError, KIND, Ruling};
use super::{HeldRecord, SharedDesk, call_key};
use crate::approval::held::Settled;

fn entry(options: Value) -> InterceptorConfig {
    crate::test_entry(KIND, "pipeline[1]", options)
}

/// A replica: its `approval` interceptor and its desk, on `state`.
fn replica(state: &SharedState) -> (Arc<Approval>, Arc<ApprovalDesk>) {
    let desk = ApprovalDesk::shared(EventBus::new(), state.clone());
    desk.set_attended(true);
    let options = json!({ "via": "external", "expires": "10m" });
    let approval = Approval::from_config(&entry(options), desk.clone()).expect("valid options");
    (Arc::new(approval), desk)
}

fn call(path: &str) -> mcp::CallToolRequestParams {
    mcp::CallToolRequestParams::new("fs__write")
        .with_arguments(json!({ "path": path }).as_object().cloned().unwrap())
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

fn alice() -> Principal {
    Principal::new("jwt", "alice")
}

/// The call `path` by `who` through `approval`, in a task of its own.
fn held(approval: &Arc<Approval>, who: Principal, path: &str) -> tokio::task::JoinHandle<Outcome> {
    let (approval, call) = (approval.clone(), call(path));
    tokio::spawn(async move {
        let mut ctx = context(who);
        let message = Message::CallTool(call);
        approval
            .intercept(InterceptionEvent::ToolsCall, Phase::Request, &message, &mut ctx)
            .await
            .expect("decides")
    })
}

/// The calls `desk` lists once there are `count` (every replica's), failing rather than
/// waiting for ever.
async fn listed(desk: &ApprovalDesk, count: usize) -> Vec<toolgate_intercept::Principal> {
    for _ in 0..1000 {
        let waiting = desk.waiting().await.expect("reachable");
        if waiting.len() == count {
            return waiting.into_iter().map(|p| p.caller_principal).collect();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the desk never listed {count} calls");
}

async fn first_id(desk: &ApprovalDesk) -> String {
    listed(desk, 1).await;
    desk.waiting().await.unwrap().remove(0).id
}

#[tokio::test(start_paused = true)]
async fn a_call_held_on_one_replica_is_listed_and_decided_on_another() {
    let state = SharedState::memory();
    let (a, desk_a) = replica(&state);
    let (_b, desk_b) = replica(&state);
    let call = held(&a, alice(), "x");
    let id = first_id(&desk_b).await;
    assert_eq!(desk_a.pending().len(), 1, "held on A");
    assert!(desk_b.pending().is_empty(), "not on B");
    desk_b.decide(&id, "bob", Ruling::Allow { remember: None }).await.expect("decided on B");
    assert_eq!(call.await.unwrap(), Outcome::Continue);
    listed(&desk_a, 0).await;
    assert!(desk_a.pending().is_empty(), "off A's desk");
    // Decided once: a second ruling finds nothing waiting.
    assert!(matches!(
        desk_a.decide(&id, "carol", Ruling::Deny { reason: None }).await,
        Err(DecideError::NotPending(_))
    ));
}

#[tokio::test(start_paused = true)]
async fn a_denial_on_another_replica_carries_its_reason() {
    let state = SharedState::memory();
    let (a, _) = replica(&state);
    let (_, desk_b) = replica(&state);
    let call = held(&a, alice(), "x");
    let id = first_id(&desk_b).await;
    desk_b.decide(&id, "bob", Ruling::Deny { reason: Some("not today".into()) }).await.unwrap();
    match call.await.unwrap() {
        Outcome::Refuse(refusal) => assert!(refusal.reason.contains("not today"), "{refusal:?}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn separation_of_duties_holds_across_replicas() {
    let state = SharedState::memory();
    let desk = ApprovalDesk::shared(EventBus::new(), state.clone());
    desk.set_attended(true);
    let options = json!({ "via": "external", "separate_duties": true });
    let a = Arc::new(Approval::from_config(&entry(options), desk).unwrap());
    let (_, desk_b) = replica(&state);
    let call = held(&a, alice(), "x");
    let id = first_id(&desk_b).await;
    assert!(matches!(
        desk_b.decide(&id, "alice", Ruling::Allow { remember: None }).await,
        Err(DecideError::OwnCall { .. })
    ));
    desk_b.decide(&id, "bob", Ruling::Allow { remember: None }).await.unwrap();
    assert_eq!(call.await.unwrap(), Outcome::Continue);
}

#[tokio::test(start_paused = true)]
async fn a_grant_given_on_one_replica_holds_on_the_others() {
    let state = SharedState::memory();
    let (a, desk_a) = replica(&state);
    let (b, desk_b) = replica(&state);
    let call = held(&a, alice(), "x");
    let id = first_id(&desk_a).await;
    let remember = Some(Duration::from_secs(600));
    desk_a.decide(&id, "bob", Ruling::Allow { remember }).await.unwrap();
    assert_eq!(call.await.unwrap(), Outcome::Continue);
    // The same call by the same caller on B goes through at once; another is held.
    assert_eq!(held(&b, alice(), "x").await.unwrap(), Outcome::Continue);
    let other = held(&b, alice(), "y");
    listed(&desk_b, 1).await;
    other.abort();
    // The grant runs out.
    tokio::time::sleep(Duration::from_secs(601)).await;
    let again = held(&b, alice(), "x");
    listed(&desk_b, 1).await;
    again.abort();
}

/// What a replica that died while holding a call leaves behind: the held call and its pointer,
/// as `hold_shared` writes them, and nobody waiting.
async fn left_by_a_dead_replica(state: &SharedState, who: &Principal, path: &str) -> String {
    let desk = ApprovalDesk::shared(EventBus::new(), state.clone());
    desk.set_attended(true);
    let (a, desk_a) = (
        Arc::new(
            Approval::from_config(&entry(json!({ "via": "external" })), desk.clone()).unwrap(),
        ),
        desk,
    );
    let call = held(&a, who.clone(), path);
    let pending = {
        listed(&desk_a, 1).await;
        desk_a.waiting().await.unwrap().remove(0)
    };
    // Killed: nothing of it runs again, so nothing takes the call off the shared list.
    let shared = SharedDesk { state: state.clone() };
    let record = HeldRecord::new(&pending.id, &pending);
    let pointer = call_key("call", &CallerKey::Principal(who.clone()), &pending.digest);
    call.abort();
    let _ = call.await;
    // Aborting ran the guard that forgets it: once it has, put back what a SIGKILL would have
    // left.
    listed(&desk_a, 0).await;
    while state.get(&pointer).await.unwrap().is_some() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    shared.put(&record, Some(&pointer)).await.unwrap();
    pending.id
}

#[tokio::test(start_paused = true)]
async fn a_held_call_outlives_its_replica_and_the_decision_reaches_the_call_sent_again() {
    let state = SharedState::memory();
    let id = left_by_a_dead_replica(&state, &alice(), "x").await;
    let (b, desk_b) = replica(&state);
    // Still listed, and decided on B.
    listed(&desk_b, 1).await;
    desk_b.decide(&id, "bob", Ruling::Allow { remember: None }).await.unwrap();
    listed(&desk_b, 0).await;
    // The client sends its call again (to B): the decision answers it, once.
    assert_eq!(held(&b, alice(), "x").await.unwrap(), Outcome::Continue);
    let third = held(&b, alice(), "x");
    listed(&desk_b, 1).await;
    third.abort();
}

#[tokio::test(start_paused = true)]
async fn a_call_sent_again_before_the_decision_waits_on_the_same_held_call() {
    let state = SharedState::memory();
    let id = left_by_a_dead_replica(&state, &alice(), "x").await;
    let (b, desk_b) = replica(&state);
    let again = held(&b, alice(), "x");
    // Still one held call, under its first id; another caller's same call is held apart.
    for _ in 0..100 {
        if !desk_b.pending().is_empty() {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(desk_b.pending()[0].id, id);
    let theirs = held(&b, Principal::new("jwt", "carol"), "x");
    listed(&desk_b, 2).await;
    desk_b.decide(&id, "bob", Ruling::Allow { remember: None }).await.unwrap();
    assert_eq!(again.await.unwrap(), Outcome::Continue);
    listed(&desk_b, 1).await;
    theirs.abort();
}

#[tokio::test(start_paused = true)]
async fn a_held_call_that_nobody_decides_expires_and_leaves_the_list() {
    let state = SharedState::memory();
    let (a, desk_a) = replica(&state);
    let (_, desk_b) = replica(&state);
    let call = held(&a, alice(), "x");
    listed(&desk_b, 1).await;
    tokio::time::sleep(Duration::from_secs(601)).await;
    match call.await.unwrap() {
        Outcome::Refuse(refusal) => {
            assert!(refusal.reason.contains("nobody approved"), "{refusal:?}")
        }
        other => panic!("{other:?}"),
    }
    listed(&desk_b, 0).await;
    assert!(desk_a.pending().is_empty());
}

#[tokio::test]
async fn without_the_shared_state_a_call_is_refused_at_once_saying_why() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let config = toolgate_config::StateConfig {
        backend: toolgate_config::StateBackend::Redis(toolgate_config::Secret::new(format!(
            "redis://127.0.0.1:{port}/0"
        ))),
        ..Default::default()
    };
    let state = SharedState::builder(&config)
        .timeout(Duration::from_millis(300))
        .connect()
        .await
        .expect("an unreachable backend is a warning, not an error");
    let (a, desk) = replica(&state);
    let started = tokio::time::Instant::now();
    match held(&a, alice(), "x").await.unwrap() {
        Outcome::Refuse(refusal) => {
            assert!(refusal.reason.contains("cannot be held for approval now"), "{refusal:?}")
        }
        other => panic!("{other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(5), "fails fast");
    assert!(matches!(desk.waiting().await, Err(DecideError::Unavailable(_))));
    assert!(matches!(
        desk.decide("a1", "bob", Ruling::Allow { remember: None }).await,
        Err(DecideError::Unavailable(_))
    ));
}

#[test]
fn a_record_keeps_what_approvers_see_and_clips_huge_arguments() {
    let pending = crate::approval::PendingApproval {
        id: String::new(),
        digest: "sha256:d".into(),
        server: "fs".into(),
        tool: "write".into(),
        exposed: "fs__write".into(),
        arguments: json!({ "data": "x".repeat(toolgate_state::MAX_VALUE_BYTES) }),
        caller: "jwt:alice@acme".into(),
        caller_principal: Principal { tenant: Some("acme".into()), ..alice() },
        reason: "why".into(),
        asked_by: "policy".into(),
        requested_at: std::time::SystemTime::now(),
        deadline: tokio::time::Instant::now() + Duration::from_secs(60),
        separate_duties: true,
    };
    let record = HeldRecord::new("a1", &pending);
    assert!(record.to_bytes().len() < toolgate_state::MAX_VALUE_BYTES);
    let back = HeldRecord::from_bytes(&record.to_bytes()).unwrap().into_pending();
    assert_eq!(back.id, "a1");
    assert_eq!(back.caller_tenant(), Some("acme"));
    assert!(back.separate_duties);
    assert!(back.arguments.as_str().unwrap().contains("too many to share"));
    let _ = Settled::Expired;
}
