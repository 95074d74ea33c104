//! Tests of the pipeline: ordering by kind and priority, refusals, answers, audit mode and failure
//! handling.

use std::sync::Mutex;
use std::time::Duration;

use toolgate_core::mcp;

use super::*;
use crate::context::{Principal, Target};
use crate::descriptor::Hook;

/// What a test interceptor does.
#[derive(Clone)]
enum Act {
    Continue,
    Rename(&'static str),
    Refuse,
    Answer,
    Fail,
    Hang,
}

struct Probe {
    descriptor: Descriptor,
    act: Act,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Interceptor for Probe {
    fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    fn intercept<'a>(
        &'a self,
        _event: InterceptionEvent,
        phase: Phase,
        message: &'a Message,
        _ctx: &'a mut CallContext,
    ) -> BoxFuture<'a, Result<Outcome, InterceptError>> {
        Box::pin(async move {
            let name = match message {
                Message::CallTool(call) => call.name.to_string(),
                _ => String::new(),
            };
            self.seen.lock().unwrap().push(format!(
                "{}:{}:{name}",
                self.descriptor.name,
                phase.as_str()
            ));
            match &self.act {
                Act::Continue => Ok(Outcome::Continue),
                Act::Rename(to) => Ok(Outcome::Rewrite(call(to))),
                Act::Refuse => Ok(Outcome::Refuse(Refusal {
                    interceptor: self.descriptor.name.clone(),
                    reason: "no".into(),
                })),
                Act::Answer => {
                    Ok(Outcome::Answer(Message::ToolResult(mcp::CallToolResult::success(vec![
                        mcp::ContentBlock::text("from the interceptor"),
                    ]))))
                }
                Act::Fail => Err(InterceptError("broken".into())),
                Act::Hang => {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    Ok(Outcome::Continue)
                }
            }
        })
    }
}

fn call(name: &str) -> Message {
    Message::CallTool(mcp::CallToolRequestParams::new(name.to_owned()))
}

struct Chain {
    seen: Arc<Mutex<Vec<String>>>,
    items: Vec<Arc<dyn Interceptor>>,
}

impl Chain {
    fn new() -> Chain {
        Chain { seen: Arc::default(), items: Vec::new() }
    }

    fn add(mut self, name: &str, kind: InterceptorType, priority: i32, act: Act) -> Chain {
        self = self.add_with(name, kind, act, |d| d.priority = priority);
        self
    }

    fn add_with(
        mut self,
        name: &str,
        kind: InterceptorType,
        act: Act,
        tune: impl FnOnce(&mut Descriptor),
    ) -> Chain {
        let hooks = vec![
            Hook::new(["tools/call"], Phase::Request).unwrap(),
            Hook::new(["tools/*"], Phase::Response).unwrap(),
        ];
        let mut descriptor = Descriptor::new(name, "probe", kind, hooks);
        tune(&mut descriptor);
        self.items.push(Arc::new(Probe { descriptor, act, seen: self.seen.clone() }));
        self
    }

    fn pipeline(&self) -> Pipeline {
        Pipeline::new(self.items.clone()).unwrap()
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

fn ctx() -> CallContext {
    let mut ctx = CallContext::new(Principal::anonymous());
    ctx.target = Some(Target {
        server: "fs".into(),
        original: "read".into(),
        exposed: "fs__read".into(),
        tool: None,
    });
    ctx
}

use InterceptorType::{Mutation, Validation};

#[tokio::test(start_paused = true)]
async fn mutators_run_by_priority_then_validators_and_the_reverse_on_responses() {
    let chain = Chain::new()
        .add("v1", Validation, 0, Act::Continue)
        .add("m-late", Mutation, 10, Act::Continue)
        .add("m-a", Mutation, 0, Act::Continue)
        .add("m-b", Mutation, 0, Act::Continue)
        .add("v0", Validation, -5, Act::Continue);
    let pipeline = chain.pipeline();
    let mut ctx = ctx();
    pipeline.request(InterceptionEvent::ToolsCall, call("x"), &mut ctx).await.unwrap();
    pipeline
        .response(
            InterceptionEvent::ToolsCall,
            Message::ToolResult(mcp::CallToolResult::success(vec![])),
            &mut ctx,
        )
        .await
        .unwrap();
    let order: Vec<String> =
        chain.seen().iter().map(|s| s.split(':').take(2).collect::<Vec<_>>().join(":")).collect();
    assert_eq!(
        order,
        [
            "m-a:request",
            "m-b:request",
            "m-late:request",
            "v0:request",
            "v1:request",
            "v0:response",
            "v1:response",
            "m-a:response",
            "m-b:response",
            "m-late:response",
        ]
    );
    assert_eq!(ctx.decisions.len(), 10);
}

#[tokio::test(start_paused = true)]
async fn a_rewrite_reaches_later_interceptors_and_a_refusal_stops_the_phase() {
    let chain = Chain::new()
        .add("rename", Mutation, 0, Act::Rename("renamed"))
        .add("deny", Validation, 0, Act::Refuse)
        .add("after", Validation, 1, Act::Continue);
    let mut ctx = ctx();
    let stopped = chain.pipeline().request(InterceptionEvent::ToolsCall, call("x"), &mut ctx).await;
    assert_eq!(
        stopped,
        Err(Stopped::Refused(Refusal { interceptor: "deny".into(), reason: "no".into() }))
    );
    assert_eq!(chain.seen(), ["rename:request:x", "deny:request:renamed"]);
    assert_eq!(ctx.decisions[1].kind, DecisionKind::Refused("no".into()));
}

#[tokio::test(start_paused = true)]
async fn an_answer_skips_the_upstream() {
    let chain = Chain::new().add("cache", Mutation, 0, Act::Answer);
    let stopped =
        chain.pipeline().request(InterceptionEvent::ToolsCall, call("x"), &mut ctx()).await;
    assert!(
        matches!(&stopped, Err(Stopped::Answered(m)) if matches!(**m, Message::ToolResult(_))),
        "{stopped:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn audit_mode_records_and_changes_nothing() {
    let chain = Chain::new()
        .add_with("rename", Mutation, Act::Rename("renamed"), |d| d.mode = Mode::Audit)
        .add_with("deny", Validation, Act::Refuse, |d| d.mode = Mode::Audit)
        .add_with("broken", Validation, Act::Fail, |d| d.mode = Mode::Audit);
    let mut ctx = ctx();
    let sent = chain.pipeline().request(InterceptionEvent::ToolsCall, call("x"), &mut ctx).await;
    assert_eq!(sent, Ok(call("x")));
    assert_eq!(chain.seen(), ["rename:request:x", "deny:request:x", "broken:request:x"]);
    assert_eq!(ctx.decisions[0].kind, DecisionKind::WouldHave(Box::new(DecisionKind::Rewrote)));
    assert_eq!(
        ctx.decisions[1].kind,
        DecisionKind::WouldHave(Box::new(DecisionKind::Refused("no".into())))
    );
    assert!(matches!(ctx.decisions[2].kind, DecisionKind::Failed { let_through: true, .. }));
}

#[tokio::test(start_paused = true)]
async fn failures_and_timeouts_fail_closed_unless_fail_open() {
    for act in [Act::Fail, Act::Hang] {
        let closed = Chain::new()
            .add_with("guard", Validation, act.clone(), |d| d.timeout = Duration::from_secs(2));
        let started = Instant::now();
        let mut ctx = ctx();
        match closed.pipeline().request(InterceptionEvent::ToolsCall, call("x"), &mut ctx).await {
            Err(Stopped::Refused(refusal)) => {
                assert_eq!(refusal.interceptor, "guard");
                assert!(refusal.reason.contains("fails closed"), "{}", refusal.reason);
            }
            other => panic!("fail-closed must refuse: {other:?}"),
        }
        assert!(started.elapsed() <= Duration::from_secs(2));
        assert!(matches!(ctx.decisions[0].kind, DecisionKind::Failed { let_through: false, .. }));

        let open = Chain::new().add_with("pretty", Mutation, act, |d| {
            d.timeout = Duration::from_secs(2);
            d.fail_open = true;
        });
        let mut ctx = self::ctx();
        let sent = open.pipeline().request(InterceptionEvent::ToolsCall, call("x"), &mut ctx).await;
        assert_eq!(sent, Ok(call("x")));
        assert!(matches!(ctx.decisions[0].kind, DecisionKind::Failed { let_through: true, .. }));
    }
}

#[tokio::test(start_paused = true)]
async fn each_decision_holds_how_long_its_interceptor_took() {
    let chain = Chain::new().add("quick", Mutation, 0, Act::Continue).add_with(
        "slow",
        Validation,
        Act::Hang,
        |d| {
            d.timeout = Duration::from_millis(1500);
            d.fail_open = true;
        },
    );
    let mut ctx = ctx();
    let sent = chain.pipeline().request(InterceptionEvent::ToolsCall, call("x"), &mut ctx).await;
    assert_eq!(sent, Ok(call("x")));
    let took: Vec<(&str, Duration)> =
        ctx.decisions.iter().map(|d| (d.interceptor.as_str(), d.duration)).collect();
    assert_eq!(took, [("quick", Duration::ZERO), ("slow", Duration::from_millis(1500))]);
}

#[tokio::test(start_paused = true)]
async fn a_validator_that_rewrites_has_failed() {
    let chain = Chain::new().add("sneaky", Validation, 0, Act::Rename("other"));
    let stopped =
        chain.pipeline().request(InterceptionEvent::ToolsCall, call("x"), &mut ctx()).await;
    assert!(matches!(stopped, Err(Stopped::Refused(_))), "{stopped:?}");
}

#[tokio::test(start_paused = true)]
async fn interceptors_run_only_where_their_hooks_and_filters_apply() {
    let chain = Chain::new()
        .add_with("other-server", Validation, Act::Refuse, |d| {
            *d = d.clone().for_servers(&["gh".into()]).unwrap();
        })
        .add("everywhere", Validation, 0, Act::Continue);
    let mut ctx = ctx();
    let sent = chain.pipeline().request(InterceptionEvent::ToolsCall, call("x"), &mut ctx).await;
    assert_eq!(sent, Ok(call("x")));
    // prompts/get is not hooked at all.
    let sent =
        chain.pipeline().request(InterceptionEvent::PromptsGet, Message::Empty, &mut ctx).await;
    assert_eq!(sent, Ok(Message::Empty));
    assert_eq!(chain.seen(), ["everywhere:request:x"]);
}

#[test]
fn names_are_unique() {
    let chain = Chain::new().add("same", Validation, 0, Act::Continue).add(
        "same",
        Mutation,
        0,
        Act::Continue,
    );
    let error = Pipeline::new(chain.items).expect_err("duplicate");
    assert!(error.to_string().contains("same"));
}

#[tokio::test]
async fn interceptors_added_and_removed_act_for_every_clone_from_the_next_message() {
    let chain = Chain::new().add("a", Mutation, 0, Act::Continue);
    let pipeline = chain.pipeline();
    let clone = pipeline.clone();
    let more = Chain::new().add("b", Mutation, -5, Act::Refuse);
    pipeline.add(more.items[0].clone()).expect("a new name");
    let names: Vec<_> = clone.run_order(Phase::Request).into_iter().map(|d| d.name).collect();
    assert_eq!(names, ["b", "a"], "placed by its priority, seen by the clone");
    assert!(
        clone.request(InterceptionEvent::ToolsCall, call("fs__read"), &mut ctx()).await.is_err()
    );
    assert!(pipeline.add(more.items[0].clone()).is_err(), "names stay unique");
    assert!(pipeline.remove("b"));
    assert!(!pipeline.remove("b"), "gone already");
    assert!(
        clone.request(InterceptionEvent::ToolsCall, call("fs__read"), &mut ctx()).await.is_ok()
    );
}
