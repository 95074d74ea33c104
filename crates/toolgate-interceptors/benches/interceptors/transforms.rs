//! The result transforms' benches (`enrich`, `test_filter`, `toon`, `emit`, `truncate`,
//! `redact`), one function each, on the configuration helpers and results of the bench's root.

use super::*;

/// `enrich` on a 100 KiB result: a cache hit (hashing the result, placing the summary), and
/// a miss (`cache_size = 0`: a request to the testkit's fake OpenAI-compatible server on
/// 127.0.0.1, in the same runtime, answering at once), so that the miss shows what toolgate
/// itself adds to a real endpoint's latency. The miss includes the fake's own work, mostly
/// counting the prompt's tokens for `usage`, and `enrich` counting the result's tokens
/// against `max_input_tokens` (about 100 KiB of text each).
pub(super) fn enrich_result(c: &mut Criterion) {
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
pub(super) fn test_filter_result(c: &mut Criterion) {
    const LOGS: [&str; 5] = [
        include_str!("../../src/test_filter/fixtures/cargo-fail-backtrace.txt"),
        include_str!("../../src/test_filter/fixtures/nextest-fail.txt"),
        include_str!("../../src/test_filter/fixtures/pytest-fail-verbose.txt"),
        include_str!("../../src/test_filter/fixtures/jest-fail.txt"),
        include_str!("../../src/test_filter/fixtures/vitest-fail.txt"),
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
pub(super) fn toon_result(c: &mut Criterion) {
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
pub(super) fn emit_result(c: &mut Criterion) {
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
pub(super) fn truncate_result(c: &mut Criterion) {
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
pub(super) fn redact_call(c: &mut Criterion) {
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
