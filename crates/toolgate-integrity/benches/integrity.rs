//! What integrity costs per `tools/list`: the contracts and digests of 10,000 tools (what
//! pinning and every drift check pay), drift against a lock of the same tools, and the
//! poisoning scan over them.
//!
//! ```sh
//! cargo bench -p toolgate-integrity --bench integrity -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! Results, and how to read them: `bench/criterion.md`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolgate_core::mcp;
use toolgate_integrity::scan::{Scanned, scan};
use toolgate_integrity::{Contract, Lock};

const TOOLS: usize = 10_000;

/// A tool like a real one: a sentence of description, a schema with two described fields,
/// annotations.
fn tool(index: usize) -> mcp::Tool {
    serde_json::from_value(json!({
        "name": format!("tool_{index:05}"),
        "description": format!("Search the records of collection {index} and return the matches, newest first."),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "At most this many"},
            },
            "required": ["query"],
        },
        "annotations": {"readOnlyHint": true, "openWorldHint": false},
    }))
    .expect("a tool")
}

fn integrity(c: &mut Criterion) {
    let tools: Vec<mcp::Tool> = (0..TOOLS).map(tool).collect();
    let contracts: Vec<Contract> = tools.iter().map(Contract::tool).collect();
    let mut lock = Lock::default();
    lock.pin_server("s", contracts.clone());

    let mut group = c.benchmark_group("integrity");
    group.sample_size(10);
    group.bench_function("contracts and digests of 10000 tools", |b| {
        b.iter(|| tools.iter().map(Contract::tool).collect::<Vec<_>>());
    });
    group.bench_function("drift of 10000 tools against the lock", |b| {
        b.iter(|| black_box(lock.drift("s", &contracts)));
    });
    group.bench_function("scan of 10000 tools", |b| {
        b.iter(|| black_box(scan(&[Scanned { server: "s", items: &contracts }])));
    });
    group.finish();
}

criterion_group!(benches, integrity);
criterion_main!(benches);
