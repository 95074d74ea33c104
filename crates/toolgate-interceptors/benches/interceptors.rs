//! What each built-in interceptor costs per message, so that a stage's regression shows.
//!
//! - `tools_call/<stage>/<payload>`: one `tools/call`, request phase then response phase,
//!   through a pipeline of that built-in alone, of none (`bare`), of all five (`full`), or
//!   of one interceptor that does nothing (`noop`: what the pipeline itself costs for each
//!   interceptor it runs); the result is one short text (`small`) or one 100 KiB text block
//!   (`100KB`).
//! - `tools_list/<stage>`: the response phase of a 100-tool `tools/list`, and what one copy
//!   of that list costs (`copy_of_list`), to read the stages against.
//! - `toon/<input>`: `toon` converting a 1000-row listing and two nested objects (one to
//!   TOON, one to compact JSON), and the parts of the 1000-row conversion (`encode`,
//!   `decode_check`, `count_compact_json`).
//! - `emit/<case>`: `emit` publishing a call's outcome, unheard or with the result's hash or
//!   the result itself.
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
use std::time::{Duration, Instant};

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
        let principal = Principal { kind: "local".into(), id: "ana".into() };
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
    let stages = [
        ("bare", pipeline(&[]), LISTED_TOOLS),
        ("policy", pipeline(&[policy(0)]), 86),
        ("arg_map", pipeline(&[arg_map(0)]), 101),
        ("policy+arg_map", pipeline(&[arg_map(0), policy(1)]), 87),
    ];
    let mut group = c.benchmark_group("tools_list");
    for (name, pipeline, shown) in &stages {
        let mut ctx = CallContext::new(Principal::anonymous());
        let tools = Message::Tools(listed.clone());
        match runtime.block_on(pipeline.response(InterceptionEvent::ToolsList, tools, &mut ctx)) {
            Ok(Message::Tools(tools)) => assert_eq!(tools.len(), *shown, "{name}"),
            other => panic!("{name}: the list became {other:?}"),
        }
        group.bench_function(BenchmarkId::new(*name, LISTED_TOOLS), |b| {
            b.to_async(&runtime).iter_batched(
                || (CallContext::new(Principal::anonymous()), Message::Tools(listed.clone())),
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

/// `enrich` on a 100 KiB result: a cache hit (hashing the result, placing the summary), and
/// a miss (`cache_size = 0`: a request to the testkit's fake OpenAI-compatible server on
/// 127.0.0.1, in the same runtime, answering at once), so that the miss shows what toolgate
/// itself adds to a real endpoint's latency. The miss includes the fake's own work, mostly
/// counting the prompt's tokens for `usage`, and `enrich` counting the result's tokens
/// against `max_input_tokens` (about 100 KiB of text each).
fn enrich_result(c: &mut Criterion) {
    use toolgate_testkit::fake_llm::{FakeLlm, Script, Turn};
    let runtime = runtime();
    let fake = runtime
        .block_on(FakeLlm::start(Script::always(Turn::text("A long lorem ipsum, nothing else."))))
        .expect("the fake LLM starts");
    let services = Services::new(EventBus::new());
    let options = |cache_size: usize| json!({"base_url": fake.base_url(), "model": "gpt-4o-mini", "cache_size": cache_size});
    let hit = build_pipeline(&[entry("enrich", 0, options(16))], &services).expect("valid");
    let miss = build_pipeline(&[entry("enrich", 0, options(0))], &services).expect("valid");
    toolgate_llm::tokens::Encoding::O200kBase.warm_up();
    let input = large_result();
    let call = Call::new(false);
    let mut group = c.benchmark_group("enrich");
    group.sample_size(20);
    for (name, pipeline) in [("100KB_cache_hit", &hit), ("100KB_miss_local_endpoint", &miss)] {
        // The bench must measure a summary, not a pass-through (and this fills the cache).
        let mut ctx = call.context();
        let once = pipeline.response(
            InterceptionEvent::ToolsCall,
            Message::ToolResult(input.clone()),
            &mut ctx,
        );
        let Ok(Message::ToolResult(shown)) = runtime.block_on(once) else {
            panic!("{name}: not a result")
        };
        assert_eq!(shown.content.len(), 2, "{name}: the summary is placed before the result");
        group.bench_function(name, |b| {
            b.to_async(&runtime).iter_batched(
                || (Message::ToolResult(input.clone()), call.context()),
                |(message, mut ctx)| async move {
                    black_box(
                        pipeline.response(InterceptionEvent::ToolsCall, message, &mut ctx).await,
                    )
                },
                BatchSize::LargeInput,
            );
        });
    }
    let requests = fake.requests().len();
    assert!(requests > 1, "the misses reached the endpoint ({requests} requests)");
    group.finish();
}

/// `test_filter` (the response phase of one call) on real runners' logs (the fixtures
/// `scripts/make-test-logs` made): one failing nextest run (17 KiB), 1 MiB of failing runs of
/// every runner one after the other, and 1 MiB of text that is no test output (what it costs to
/// look and let it pass).
fn test_filter_result(c: &mut Criterion) {
    const LOGS: [&str; 5] = [
        include_str!("../src/test_filter/fixtures/cargo-fail-backtrace.txt"),
        include_str!("../src/test_filter/fixtures/nextest-fail.txt"),
        include_str!("../src/test_filter/fixtures/pytest-fail-verbose.txt"),
        include_str!("../src/test_filter/fixtures/jest-fail.txt"),
        include_str!("../src/test_filter/fixtures/vitest-fail.txt"),
    ];
    let runtime = runtime();
    let services = Services::new(EventBus::new());
    let pipeline =
        build_pipeline(&[entry("test_filter", 0, json!({}))], &services).expect("a valid pipeline");
    let mut mixed = String::new();
    while mixed.len() < 1 << 20 {
        for log in LOGS {
            mixed.push_str("$ run the tests\n");
            mixed.push_str(log);
        }
    }
    let prose: String = (0..)
        .map(|i| format!("line {i}: nothing here looks like a test runner's output at all\n"))
        .scan(0, |len, line| {
            *len += line.len();
            (*len <= 1 << 20).then_some(line)
        })
        .collect();
    let inputs = [
        ("nextest_fail", result(LOGS[1].to_owned())),
        ("1MB_failing_runs", result(mixed)),
        ("1MB_not_tests", result(prose)),
    ];
    let mut group = c.benchmark_group("test_filter");
    group.sample_size(20);
    for (name, input) in inputs {
        let call = Call::new(false);
        group.bench_function(name, |b| {
            b.to_async(&runtime).iter_batched(
                || (Message::ToolResult(input.clone()), call.context()),
                |(message, mut ctx)| {
                    let pipeline = &pipeline;
                    async move {
                        black_box(
                            pipeline
                                .response(InterceptionEvent::ToolsCall, message, &mut ctx)
                                .await,
                        )
                    }
                },
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

/// `toon` in the response phase of one call, each input as pretty JSON text beside its
/// `structuredContent`: a 1000-row uniform array of objects (a listing: the table form), a
/// nested object that converts (a knowledge graph: 300 entities with lists of observations,
/// 300 relations), and one that becomes compact JSON because TOON would cost more than that
/// (50 services' settings, nested maps with few rows). And, for the 1000 rows, the parts:
/// encoding, decoding (the round-trip check every conversion runs), and counting the tokens
/// of the compact JSON.
fn toon_result(c: &mut Criterion) {
    let runtime = runtime();
    let services = Services::new(EventBus::new());
    let pipeline = build_pipeline(&[entry("toon", 0, json!({}))], &services).expect("valid");
    let encoding = toolgate_llm::tokens::Encoding::O200kBase;
    encoding.warm_up();
    let rows: Value = (0..1000)
        .map(|i| {
            let role = ["admin", "dev", "viewer"][i % 3];
            json!({
                "id": i,
                "name": format!("user{i}"),
                "email": format!("user{i}@example.com"),
                "role": role,
                "active": i % 7 != 0,
                "created": format!("2025-{:02}-{:02}", i % 12 + 1, i % 28 + 1),
            })
        })
        .collect();
    let graph = json!({
        "entities": (0..300).map(|i| json!({
            "name": format!("person {i}"),
            "entityType": "person",
            "observations": ["likes tea", format!("works on project {}", i % 17)],
        })).collect::<Vec<_>>(),
        "relations": (0..300).map(|i| json!({
            "from": format!("person {i}"),
            "to": format!("person {}", (i * 7 + 1) % 300),
            "relationType": "knows",
        })).collect::<Vec<_>>(),
    });
    let settings: Value = (0..50)
        .map(|i| {
            (
                format!("service-{i}"),
                json!({
                    "image": format!("registry.example.com/app/service-{i}:1.{i}.0"),
                    "replicas": i % 5 + 1,
                    "ports": [{"name": "http", "port": 8000 + i}, {"name": "metrics", "port": 9000 + i}],
                    "env": {"LOG_LEVEL": "info", "REGION": "eu-west-1", "FEATURE_X": i % 2 == 0},
                    "limits": {"cpu": "500m", "memory": format!("{}Mi", 256 * (i % 4 + 1))},
                    "tags": ["backend", "tier-2"],
                }),
            )
        })
        .collect::<serde_json::Map<String, Value>>()
        .into();
    let as_result = |value: &Value| {
        let mut result = result(serde_json::to_string_pretty(value).expect("json"));
        result.structured_content = Some(value.clone());
        result
    };
    let inputs = [
        ("1000_rows", as_result(&rows), "toon"),
        ("nested_graph", as_result(&graph), "toon"),
        ("nested_settings_compacted", as_result(&settings), "json"),
    ];
    let call = Call::new(false);
    let mut group = c.benchmark_group("toon");
    group.sample_size(20);
    for (name, input, format) in inputs {
        // The bench must measure the conversion expected, not a pass-through.
        let mut ctx = call.context();
        let once = pipeline.response(
            InterceptionEvent::ToolsCall,
            Message::ToolResult(input.clone()),
            &mut ctx,
        );
        let Ok(Message::ToolResult(shown)) = runtime.block_on(once) else {
            panic!("{name}: not a result")
        };
        let formats: Vec<&Value> = shown
            .content
            .iter()
            .filter_map(|block| match block {
                mcp::ContentBlock::Text(text) => text.meta.as_ref()?.0.get("io.toolgate/format"),
                _ => None,
            })
            .collect();
        assert_eq!(formats, [&json!(format)], "{name}");
        let compact = input.structured_content.as_ref().expect("structured").to_string();
        eprintln!(
            "toon/{name}: {} tokens as compact JSON, {} as TOON",
            encoding.count(&compact),
            encoding.count(
                &toon_format::encode(
                    input.structured_content.as_ref().expect("structured"),
                    &toon_format::EncodeOptions::default()
                )
                .expect("encodes")
            )
        );
        group.bench_function(name, |b| {
            b.to_async(&runtime).iter_batched(
                || (Message::ToolResult(input.clone()), call.context()),
                |(message, mut ctx)| {
                    let pipeline = &pipeline;
                    async move {
                        black_box(
                            pipeline
                                .response(InterceptionEvent::ToolsCall, message, &mut ctx)
                                .await,
                        )
                    }
                },
                BatchSize::LargeInput,
            );
        });
    }
    let options = toon_format::EncodeOptions::default();
    let toon = toon_format::encode(&rows, &options).expect("encodes");
    let compact = rows.to_string();
    group.bench_function("1000_rows/encode", |b| {
        b.iter(|| black_box(toon_format::encode(black_box(&rows), &options)))
    });
    group.bench_function("1000_rows/decode_check", |b| {
        let decode = toon_format::DecodeOptions::default();
        b.iter(|| black_box(toon_format::decode::<Value>(black_box(&toon), &decode)))
    });
    group.bench_function("1000_rows/count_compact_json", |b| {
        b.iter(|| black_box(encoding.count(black_box(&compact))))
    });
    group.finish();
}

/// `emit` in the response phase of one call: what every call pays when nobody listens and
/// there is no command (`unheard`), and with a subscriber on `emit/*`: the result's hash and
/// size (`include = "hash"`, the default) of a small and a 100 KiB result, and the 100 KiB
/// result itself (`include = "result"`). The subscriber's queue is emptied between batches,
/// so no event is dropped.
fn emit_result(c: &mut Criterion) {
    let runtime = runtime();
    let bus = EventBus::new();
    let services = Services::new(bus.clone());
    let emit = |include: &str| {
        let options = json!({"channel": "bench", "include": include});
        build_pipeline(&[entry("emit", 0, options)], &services).expect("valid")
    };
    let (hash, whole) = (emit("hash"), emit("result"));
    let quiet_bus = EventBus::new();
    let unheard =
        build_pipeline(&[entry("emit", 0, json!({"channel": "bench"}))], &Services::new(quiet_bus))
            .expect("valid");
    let mut listener = bus.subscribe("emit/*".parse().expect("pattern"), 1 << 16);
    let cases = [
        ("unheard/small", &unheard, small_result()),
        ("hash/small", &hash, small_result()),
        ("hash/100KB", &hash, large_result()),
        ("result/100KB", &whole, large_result()),
    ];
    let call = Call::new(false);
    let mut group = c.benchmark_group("emit");
    for (name, pipeline, input) in cases {
        // The bench must measure what it says: an event when heard, none when not.
        let mut ctx = call.context();
        let once = pipeline.response(
            InterceptionEvent::ToolsCall,
            Message::ToolResult(input.clone()),
            &mut ctx,
        );
        runtime.block_on(once).expect("never refused");
        assert_eq!(listener.try_recv().is_some(), !name.starts_with("unheard"), "{name}");
        group.bench_function(name, |b| {
            b.to_async(&runtime).iter_batched(
                || {
                    while listener.try_recv().is_some() {}
                    (Message::ToolResult(input.clone()), call.context())
                },
                |(message, mut ctx)| async move {
                    black_box(
                        pipeline.response(InterceptionEvent::ToolsCall, message, &mut ctx).await,
                    )
                },
                BatchSize::SmallInput,
            );
        });
    }
    assert_eq!(bus.dropped(), 0, "the listener kept up");
    group.finish();
}

/// `truncate` on a result under its budget (a 4 KiB text: no tokenizing at all) and on 1 MiB
/// results over it (a log, and JSON as `structuredContent` with its text twin), with an
/// 8000-token budget: the response phase of one call, the spill into the store included.
fn truncate_result(c: &mut Criterion) {
    let runtime = runtime();
    let services = Services::new(EventBus::new());
    let entry = entry("truncate", 0, json!({"max_tokens": 8000}));
    let pipeline = build_pipeline(&[entry], &services).expect("a valid pipeline");
    toolgate_llm::tokens::Encoding::O200kBase.warm_up();
    let log: String = (0..)
        .map(|i| format!("[{i:06}] test suite::case_{i} ... ok ({} ms)\n", i % 97))
        .scan(0, |len, line| {
            *len += line.len();
            (*len <= 1 << 20).then_some(line)
        })
        .collect();
    let rows: Vec<Value> = (0..8000)
        .map(|i| json!({"id": i, "path": format!("/srv/data/file_{i}.txt"), "size": i * 37, "kind": "file"}))
        .collect();
    let structured = json!({"entries": rows});
    let mut json_result = result(structured.to_string());
    json_result.structured_content = Some(structured);
    let inputs = [
        ("4KB_under_budget", result("x ".repeat(2048))),
        ("1MB_log", result(log)),
        ("1MB_json", json_result),
    ];
    let mut group = c.benchmark_group("truncate");
    group.sample_size(20);
    for (name, input) in inputs {
        let call = Call::new(false);
        group.bench_function(name, |b| {
            b.to_async(&runtime).iter_batched(
                || (Message::ToolResult(input.clone()), call.context()),
                |(message, mut ctx)| {
                    let pipeline = &pipeline;
                    async move {
                        black_box(
                            pipeline
                                .response(InterceptionEvent::ToolsCall, message, &mut ctx)
                                .await,
                        )
                    }
                },
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}
/// `redact` (every built-in detector, arguments too) on one call: the request phase on small
/// arguments holding an e-mail address, then the response phase on a result without secrets
/// (100 KiB of prose) or with some (100 KiB of log lines, a secret in every 40th, and 1 MiB
/// of JSON records as `structuredContent` with their text twin).
fn redact_call(c: &mut Criterion) {
    let runtime = runtime();
    let services = Services::new(EventBus::new());
    let entry = entry("redact", 0, json!({"arguments": true}));
    let pipeline = build_pipeline(&[entry], &services).expect("a valid pipeline");
    let secrets = ["AKIAIOSFODNN7EXAMPLE", "jane.doe@example.com", "4242 4242 4242 4242"];
    let log: String = (0..)
        .map(|i: usize| {
            let secret = if i.is_multiple_of(40) { secrets[i / 40 % secrets.len()] } else { "" };
            format!(
                "2026-01-15T10:{:02}:00Z GET /v1/items/{i} 200 {} ms {secret}\n",
                i % 60,
                i % 97
            )
        })
        .scan(0, |len, line| {
            *len += line.len();
            (*len <= LARGE_RESULT).then_some(line)
        })
        .collect();
    let rows: Vec<Value> = (0..12_000)
        .map(|i| json!({"id": i, "owner": format!("user{i}@example.com"), "path": format!("/srv/data/file_{i}.txt"), "size": i * 37}))
        .collect();
    let structured = json!({"entries": rows});
    let mut json_result = result(structured.to_string());
    json_result.structured_content = Some(structured);
    let inputs = [
        ("100KB_clean", large_result()),
        ("100KB_log_with_secrets", result(log)),
        ("1MB_json_with_emails", json_result),
    ];
    let mut call = Call::new(false);
    call.params
        .arguments
        .get_or_insert_default()
        .insert("owner".into(), json!("jane.doe@example.com"));
    let mut group = c.benchmark_group("redact");
    group.sample_size(20);
    for (name, input) in inputs {
        let call = &call;
        // The bench must measure redaction, not a pass-through.
        let once = round(
            &pipeline,
            call.context(),
            Message::CallTool(call.params.clone()),
            Message::ToolResult(input.clone()),
        );
        let (Message::CallTool(sent), Message::ToolResult(shown)) = runtime.block_on(once) else {
            panic!("{name}: not a call and a result")
        };
        let owner = sent.arguments.as_ref().and_then(|a| a.get("owner"));
        assert_eq!(owner, Some(&json!("[REDACTED:email]")), "{name}");
        assert_eq!(shown == input, name.ends_with("clean"), "{name}: redacted only where found");
        group.bench_function(name, |b| {
            b.to_async(&runtime).iter_batched(
                || {
                    (
                        Message::CallTool(call.params.clone()),
                        Message::ToolResult(input.clone()),
                        call.context(),
                    )
                },
                |(request, result, ctx)| {
                    let pipeline = &pipeline;
                    async move { black_box(round(pipeline, ctx, request, result).await) }
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
);
criterion_main!(benches);
