//! What each built-in interceptor costs per message, so that a stage's regression shows.
//!
//! - `tools_call/<stage>/<payload>`: one `tools/call`, request phase then response phase,
//!   through a pipeline of that built-in alone, of none (`bare`), of all five (`full`), or
//!   of one interceptor that does nothing (`noop`: what the pipeline itself costs for each
//!   interceptor it runs); the result is one short text (`small`) or one 100 KiB text block
//!   (`100KB`). `limits_shared` is `limits` counting its rates across replicas, in a shared
//!   state in this process's memory (`SharedState::memory()`: what the shared path costs
//!   without a network; on Redis add a round trip).
//! - `tools_list/<stage>`: the response phase of a 100-tool `tools/list`, and what one copy
//!   of that list costs (`copy_of_list`), to read the stages against; `policy_principals` is a
//!   policy whose rules name principals and groups.
//! - `toon/<input>`: `toon` converting a 1000-row listing and two nested objects (one to
//!   TOON, one to compact JSON), and the parts of the 1000-row conversion (`encode`,
//!   `decode_check`, `count_compact_json`).
//! - `emit/<case>`: `emit` publishing a call's outcome, unheard or with the result's hash or
//!   the result itself.
//! - `script/<case>`: a `script` entry's hooks on one call; `script_tool/<case>`: one call of
//!   a script's own tool, from an MCP client over the in-process pipe the gateway uses.
//! - `test_filter/<input>`: `test_filter` on a failing nextest run, 1 MiB of failing runs of
//!   every runner, and 1 MiB of text that is no test output.
//!
//! Every stage is configured for the common path: nothing is refused, `approval` has nothing
//! to ask, `validate_args` has compiled its schema before the timing starts, and the limits
//! always have room. A check before each benchmark asserts that the call goes through as
//! intended, so a bench cannot silently measure a refusal.
//!
//! Requests and contexts are built outside the timing, in batches; the context is dropped
//! inside it, as the gateway drops it after the response phase (which is when `limits` gives
//! back its slots). One result is handed from each call's response phase to the next call's,
//! so it is copied only if an interceptor copies it (a fresh 100 KiB copy per call, built
//! outside the timing, would also flush the caches the timed code runs in).
//!
//! ```sh
//! cargo bench -p toolgate-interceptors --bench interceptors \
//!   -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! Results, and how to read them: `bench/criterion.md`.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::runtime::Runtime;
use toolgate_audit::EventBus;
use toolgate_config::InterceptorConfig;
use toolgate_core::mcp;
use toolgate_intercept::{
    CallContext, Descriptor, Hook, InterceptError, InterceptionEvent, Interceptor, InterceptorType,
    Listed, Message, Outcome, Phase, Pipeline, Principal, Target,
};
use toolgate_interceptors::{Services, build_pipeline};

#[path = "interceptors/script.rs"]
mod script;
#[path = "interceptors/transforms.rs"]
mod transforms;
use script::{script_call, script_tool_call};
use transforms::{
    emit_result, enrich_result, redact_call, test_filter_result, toon_result, truncate_result,
};

/// Messages built ahead of one timed stretch: enough to amortise the clock, few enough to
/// stay in the caches.
const BATCH: u64 = 256;

/// The size of the large result's one text block.
const LARGE_RESULT: usize = 100 * 1024;

/// How many tools the listed `tools/list` has.
const LISTED_TOOLS: usize = 100;

// === configuration ===

fn entry(kind: &str, index: usize, options: Value) -> InterceptorConfig {
    let options = options.as_object().cloned().expect("options are a table");
    InterceptorConfig::new(format!("pipeline[{index}]"), kind, options)
}

fn policy(index: usize) -> InterceptorConfig {
    entry(
        "policy",
        index,
        json!({
            "default": "allow",
            "trust": { "scratch": "sandboxed" },
            "rules": [
                {
                    "tools": ["delete_*"],
                    "decision": "deny",
                    "reason": "nothing is deleted from here",
                },
                {
                    "tools": ["read_file", "write_file"],
                    "when": { "path": "path", "matches": "^/(etc|root|proc)/" },
                    "decision": "deny",
                    "reason": "system files stay private",
                },
                {
                    "tools": ["run"],
                    "when": [{ "path": "cmd", "matches": "^(rm|dd|mkfs) " }],
                    "decision": "deny",
                },
                {
                    "servers": ["github"],
                    "annotations": { "read_only": false },
                    "decision": "ask",
                },
            ],
        }),
    )
}

/// A policy whose rules are for some principals and groups, as a team gateway's would be.
fn policy_principals(index: usize) -> InterceptorConfig {
    entry(
        "policy",
        index,
        json!({
            "default": "allow",
            "trust": { "scratch": "sandboxed" },
            "rules": [
                { "tools": ["delete_*"], "principals": ["jwt:admin", "key:ci-*"], "decision": "allow" },
                { "tools": ["delete_*"], "decision": "deny" },
                { "servers": ["github"], "groups": ["engineering", "ops-*"], "decision": "allow" },
                { "servers": ["github"], "principals": ["agent:*"], "decision": "ask" },
                { "servers": ["github"], "decision": "deny" },
            ],
        }),
    )
}

fn approval(index: usize) -> InterceptorConfig {
    entry("approval", index, json!({ "via": "external", "expires": "5m" }))
}

fn validate_args(index: usize) -> InterceptorConfig {
    entry("validate_args", index, json!({}))
}

fn arg_map(index: usize) -> InterceptorConfig {
    entry(
        "arg_map",
        index,
        json!({
            "map": {
                "files__read_file": {
                    "alias": "read",
                    "rename": { "file": "path" },
                    "defaults": { "encoding": "utf-8" },
                },
                "github__search_issues": { "alias": "issues", "hide_original": true },
            },
        }),
    )
}

/// Rate limits a benchmark's tight loop cannot exhaust: one call a microsecond sustained,
/// and a burst of a billion on top; and more slots than calls in flight (one).
fn limits(index: usize) -> InterceptorConfig {
    entry(
        "limits",
        index,
        json!({
            "server": {
                "files": {
                    "timeout": "30s",
                    "concurrency": 64,
                    "rate": "1000000/s",
                    "burst": 1_000_000_000,
                },
            },
            "tool": {
                "files__*": { "concurrency": 8 },
                "files__read_file": {
                    "timeout": "10s",
                    "rate": "1000000/s",
                    "burst": 1_000_000_000,
                },
            },
        }),
    )
}

fn pipeline(entries: &[InterceptorConfig]) -> Pipeline {
    // As `toolgate serve` with an [admin] section, where `approval` may hold calls.
    let services = Services::new(EventBus::new()).with_admin_api(true);
    build_pipeline(entries, &services).expect("the bench's pipeline config is valid")
}

/// [`pipeline`] on a replica: what replicas share is in a state in this process's memory.
fn shared_pipeline(entries: &[InterceptorConfig]) -> Pipeline {
    let services = Services::new(EventBus::new())
        .with_admin_api(true)
        .with_shared_state(toolgate_state::SharedState::memory());
    build_pipeline(entries, &services).expect("the bench's pipeline config is valid")
}

/// Lets every `tools/call` through untouched, hooked where the validators are.
struct Noop(Descriptor);

impl Interceptor for Noop {
    fn descriptor(&self) -> &Descriptor {
        &self.0
    }

    fn intercept<'a>(
        &'a self,
        _event: InterceptionEvent,
        _phase: Phase,
        _message: &'a Message,
        _ctx: &'a mut CallContext,
    ) -> BoxFuture<'a, Result<Outcome, InterceptError>> {
        Box::pin(async { Ok(Outcome::Continue) })
    }
}

fn noop() -> Pipeline {
    let hooks = vec![Hook::new(["tools/call"], Phase::Request).expect("a literal event")];
    let noop = Noop(Descriptor::new("noop", "noop", InterceptorType::Validation, hooks));
    Pipeline::new(vec![Arc::new(noop)]).expect("one interceptor")
}

// === the call ===

/// A stage: its name, its pipeline, and whether its call is made by `arg_map`'s alias.
struct Stage {
    name: &'static str,
    pipeline: Pipeline,
    by_alias: bool,
}

fn stages() -> Vec<Stage> {
    let stage = |name, entries: Vec<InterceptorConfig>, by_alias| Stage {
        name,
        pipeline: pipeline(&entries),
        by_alias,
    };
    vec![
        stage("bare", Vec::new(), false),
        Stage { name: "noop", pipeline: noop(), by_alias: false },
        stage("policy", vec![policy(0)], false),
        stage("approval", vec![approval(0)], false),
        stage("validate_args", vec![validate_args(0)], false),
        stage("arg_map", vec![arg_map(0)], true),
        stage("limits", vec![limits(0)], false),
        Stage { name: "limits_shared", pipeline: shared_pipeline(&[limits(0)]), by_alias: false },
        stage("full", vec![arg_map(0), policy(1), validate_args(2), limits(3), approval(4)], true),
    ]
}

fn object(value: Value) -> mcp::JsonObject {
    value.as_object().cloned().expect("an object")
}

/// `files`' `read_file`, as its upstream lists it.
fn read_file() -> Arc<mcp::Tool> {
    let schema = object(json!({
        "type": "object",
        "properties": {
            "path": { "type": "string", "minLength": 1, "description": "the file to read" },
            "encoding": { "type": "string", "enum": ["utf-8", "latin1", "base64"] },
            "offset": { "type": "integer", "minimum": 0 },
            "limit": { "type": "integer", "minimum": 1, "maximum": 1_048_576 },
            "follow_symlinks": { "type": "boolean" },
        },
        "required": ["path", "encoding"],
        "additionalProperties": false,
    }));
    let annotations = mcp::ToolAnnotations::new().read_only(true);
    let tool = mcp::Tool::new("read_file", "Reads a text file.", Arc::new(schema))
        .with_annotations(annotations);
    Arc::new(tool)
}

/// One call, with the context the gateway gives it.
struct Call {
    params: mcp::CallToolRequestParams,
    target: Target,
    targets: Arc<HashMap<String, Target>>,
    principal: Principal,
}

impl Call {
    /// A call of `files__read_file`, by its name or by `arg_map`'s alias `read` (with the
    /// caller's argument name and no `encoding`, which `arg_map` fills in).
    fn new(by_alias: bool) -> Call {
        let target = Target {
            server: "files".into(),
            original: "read_file".into(),
            exposed: "files__read_file".into(),
            tool: Some(read_file()),
        };
        let targets = HashMap::from([(target.exposed.clone(), target.clone())]);
        let (name, arguments) = if by_alias {
            ("read", json!({ "file": "/home/ana/notes/todo.md", "offset": 0, "limit": 4096 }))
        } else {
            let arguments = json!({
                "path": "/home/ana/notes/todo.md",
                "encoding": "utf-8",
                "offset": 0,
                "limit": 4096,
            });
            ("files__read_file", arguments)
        };
        let params = mcp::CallToolRequestParams::new(name).with_arguments(object(arguments));
        let principal = Principal::new("local", "ana");
        Call { params, target, targets: Arc::new(targets), principal }
    }

    /// The context the gateway builds: the resolved target, and a resolver for renames.
    fn context(&self) -> CallContext {
        let mut ctx = CallContext::new(self.principal.clone());
        ctx.session = Some("bench-session".into());
        ctx.request_id = Some("7".into());
        ctx.target = Some(self.target.clone());
        let targets = self.targets.clone();
        ctx.retarget = Some(Arc::new(move |name: &str| targets.get(name).cloned()));
        ctx
    }
}

fn result(text: String) -> mcp::CallToolResult {
    mcp::CallToolResult::success(vec![mcp::ContentBlock::text(text)])
}

/// A short text, as most tools answer.
fn small_result() -> mcp::CallToolResult {
    result("ok: 3 lines read".to_owned())
}

/// One text block of exactly [`LARGE_RESULT`] bytes.
fn large_result() -> mcp::CallToolResult {
    let line = "lorem ipsum dolor sit amet, consectetur adipiscing elit\n";
    let mut text = line.repeat(LARGE_RESULT / line.len() + 1);
    text.truncate(LARGE_RESULT);
    result(text)
}

/// Request phase then response phase, as the gateway runs them around the upstream call.
async fn round(
    pipeline: &Pipeline,
    mut ctx: CallContext,
    call: Message,
    result: Message,
) -> (Message, Message) {
    let sent = pipeline
        .request(InterceptionEvent::ToolsCall, call, &mut ctx)
        .await
        .expect("the call goes on");
    let shown = pipeline
        .response(InterceptionEvent::ToolsCall, result, &mut ctx)
        .await
        .expect("it is shown");
    (sent, shown)
}

/// Times `iters` calls; see the module docs for what is in the timing and what is not.
async fn timed_calls(
    pipeline: &Pipeline,
    call: &Call,
    result: &mcp::CallToolResult,
    iters: u64,
) -> Duration {
    let mut result = Message::ToolResult(result.clone());
    let mut elapsed = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let batch = left.min(BATCH);
        let calls: Vec<_> =
            (0..batch).map(|_| (call.context(), Message::CallTool(call.params.clone()))).collect();
        let mut sent = Vec::with_capacity(calls.len());
        let started = Instant::now();
        for (ctx, params) in calls {
            let (request, shown) = round(pipeline, ctx, params, result).await;
            sent.push(request);
            result = shown;
        }
        elapsed += started.elapsed();
        black_box(sent);
        left -= batch;
    }
    elapsed
}

/// Fails the run unless every interceptor of the stage ran and let the call through,
/// renamed as expected.
fn check(runtime: &Runtime, stage: &Stage, call: &Call) {
    let mut ctx = call.context();
    let params = Message::CallTool(call.params.clone());
    let sent =
        runtime.block_on(stage.pipeline.request(InterceptionEvent::ToolsCall, params, &mut ctx));
    let Ok(Message::CallTool(sent)) = sent else {
        panic!("{}: the call did not go on: {sent:?}", stage.name)
    };
    assert_eq!(sent.name, "files__read_file", "{}: the call was not resolved", stage.name);
    let arguments = sent.arguments.expect("arguments");
    assert_eq!(arguments.get("path"), Some(&json!("/home/ana/notes/todo.md")), "{}", stage.name);
    assert_eq!(arguments.get("encoding"), Some(&json!("utf-8")), "{}", stage.name);
    let ran = stage.pipeline.run_order(Phase::Request).len();
    assert_eq!(ctx.decisions.len(), ran, "{}: an interceptor was skipped", stage.name);
    for decision in &ctx.decisions {
        let kind = decision.kind.name();
        assert!(matches!(kind, "continued" | "rewrote"), "{}: {decision:?}", stage.name);
    }
}

fn tools_call(c: &mut Criterion) {
    let runtime = runtime();
    let payloads = [("small", small_result()), ("100KB", large_result())];
    let mut group = c.benchmark_group("tools_call");
    for stage in stages() {
        let call = Call::new(stage.by_alias);
        // Also warms `validate_args`' cache: the schema is compiled here, not in the timing.
        check(&runtime, &stage, &call);
        for (payload, result) in &payloads {
            let (pipeline, call) = (&stage.pipeline, &call);
            group.bench_function(BenchmarkId::new(stage.name, payload), |b| {
                b.to_async(&runtime)
                    .iter_custom(|iters| timed_calls(pipeline, call, result, iters));
            });
        }
    }
    group.finish();
}

// === the list ===

/// 100 tools from four servers, as the gateway hands them to the pipeline: a few the policy
/// hides (`delete_*`, and the sandboxed server's tools that are not read-only), one with an
/// alias and one shown only under its alias.
fn listed_tools() -> Vec<Listed<mcp::Tool>> {
    let servers: [(&str, &[&str]); 4] = [
        ("files", &["read_file", "write_file", "delete_file", "list_dir", "move_file"]),
        ("github", &["search_issues", "create_issue", "get_pull_request", "delete_branch"]),
        ("shell", &["run", "which"]),
        ("scratch", &["note", "recall"]),
    ];
    let per_server = LISTED_TOOLS / servers.len();
    let mut listed = Vec::with_capacity(LISTED_TOOLS);
    for (server, named) in servers {
        for i in 0..per_server {
            let original = named.get(i).map_or_else(|| format!("tool_{i:02}"), |n| (*n).to_owned());
            let schema = object(json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string", "description": "what to work on" },
                    "limit": { "type": "integer", "minimum": 1 },
                    "force": { "type": "boolean", "default": false },
                },
                "required": ["path"],
            }));
            let description = format!("{original} on {server}: does one thing well, and says so.");
            let annotations = mcp::ToolAnnotations::new().read_only(i.is_multiple_of(2));
            let tool =
                mcp::Tool::new(format!("{server}__{original}"), description, Arc::new(schema))
                    .with_annotations(annotations);
            listed.push(Listed { server: server.to_owned(), original, item: tool });
        }
    }
    listed
}

fn tools_list(c: &mut Criterion) {
    let runtime = runtime();
    let listed = listed_tools();
    // With how many tools each stage shows the caller: `policy` hides 2 `delete_*` tools and
    // the 12 of `scratch`'s that are not read-only; `arg_map` adds `read` and swaps
    // `github__search_issues` for `issues`.
    // `policy_principals` lists for a member of `engineering`, who sees what `policy` shows.
    let anonymous = Principal::anonymous;
    let engineer = || Principal::new("jwt", "alice").with_groups(vec!["engineering".into()]);
    type Caller = fn() -> Principal;
    let stages: [(&str, Pipeline, usize, Caller); 5] = [
        ("bare", pipeline(&[]), LISTED_TOOLS, anonymous),
        ("policy", pipeline(&[policy(0)]), 86, anonymous),
        ("policy_principals", pipeline(&[policy_principals(0)]), 86, engineer),
        ("arg_map", pipeline(&[arg_map(0)]), 101, anonymous),
        ("policy+arg_map", pipeline(&[arg_map(0), policy(1)]), 87, anonymous),
    ];
    let mut group = c.benchmark_group("tools_list");
    for (name, pipeline, shown, caller) in &stages {
        let mut ctx = CallContext::new(caller());
        let tools = Message::Tools(listed.clone());
        match runtime.block_on(pipeline.response(InterceptionEvent::ToolsList, tools, &mut ctx)) {
            Ok(Message::Tools(tools)) => assert_eq!(tools.len(), *shown, "{name}"),
            other => panic!("{name}: the list became {other:?}"),
        }
        group.bench_function(BenchmarkId::new(*name, LISTED_TOOLS), |b| {
            b.to_async(&runtime).iter_batched(
                || (CallContext::new(caller()), Message::Tools(listed.clone())),
                |(mut ctx, tools)| async move {
                    pipeline
                        .response(InterceptionEvent::ToolsList, tools, &mut ctx)
                        .await
                        .expect("listed")
                },
                BatchSize::NumIterations(BATCH),
            );
        });
    }
    // What one copy of the list costs, to read the stages against.
    group.bench_function(BenchmarkId::new("copy_of_list", LISTED_TOOLS), |b| {
        b.iter(|| listed.clone());
    });
    group.finish();
}

/// `tools/list` of 10,000 tools (100 servers of 100), bare and with `integrity`, every tool
/// pinned: the integrity stage's cost per list once each contract is cached (issue 11: at most
/// 5 ms over bare for 10,000 tools).
fn integrity_list(c: &mut Criterion) {
    const SERVERS: usize = 100;
    let runtime = runtime();
    let per_server = listed_tools();
    let mut listed = Vec::with_capacity(SERVERS * per_server.len());
    for n in 0..SERVERS {
        for one in &per_server {
            let mut one = one.clone();
            one.server = format!("{}{n:02}", one.server);
            listed.push(one);
        }
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let mut lock = toolgate_integrity::Lock::default();
    for l in &listed {
        let mut named = l.item.clone();
        named.name = l.original.clone().into();
        lock.pin(&l.server, toolgate_integrity::Contract::tool(&named));
    }
    lock.write(&dir.path().join("toolgate.lock")).expect("write the lock");
    let integrity = entry("integrity", 0, json!({"lock": dir.path().join("toolgate.lock")}));
    let stages = [("bare", pipeline(&[])), ("integrity", pipeline(&[integrity]))];
    let mut group = c.benchmark_group("tools_list_10000");
    group.sample_size(20);
    for (name, pipeline) in &stages {
        let mut ctx = CallContext::new(Principal::anonymous());
        let tools = Message::Tools(listed.clone());
        // The first list computes and caches every contract; all are pinned, so all are shown.
        match runtime.block_on(pipeline.response(InterceptionEvent::ToolsList, tools, &mut ctx)) {
            Ok(Message::Tools(tools)) => assert_eq!(tools.len(), listed.len(), "{name}"),
            other => panic!("{name}: the list became {other:?}"),
        }
        group.bench_function(BenchmarkId::new(*name, listed.len()), |b| {
            b.to_async(&runtime).iter_batched(
                || (CallContext::new(Principal::anonymous()), Message::Tools(listed.clone())),
                |(mut ctx, tools)| async move {
                    pipeline
                        .response(InterceptionEvent::ToolsList, tools, &mut ctx)
                        .await
                        .expect("listed")
                },
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime")
}

criterion_group!(
    benches,
    tools_call,
    tools_list,
    integrity_list,
    truncate_result,
    redact_call,
    enrich_result,
    test_filter_result,
    toon_result,
    emit_result,
    script_call,
    script_tool_call,
);
criterion_main!(benches);
