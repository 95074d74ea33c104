//! What the merged inventory costs: building it for 100 upstreams of 100 tools each (what
//! start-up and every `tools/list_changed` pay), and resolving an exposed tool name (what
//! every `tools/call` pays) in that inventory and in a small one.
//!
//! ```sh
//! cargo bench -p toolgate-upstream --bench inventory -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! Results, and how to read them: `bench/criterion.md`.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolgate_config::ToolFilter;
use toolgate_core::mcp;
use toolgate_upstream::{Catalog, Contribution, Inventory};

/// Every tool is exposed.
const ALL: &ToolFilter = &ToolFilter { allow: Vec::new(), deny: Vec::new() };

/// An upstream's configured name, its prefix, and what it lists.
struct Server {
    name: String,
    prefix: String,
    catalog: Catalog,
}

fn tool(name: String, index: usize) -> mcp::Tool {
    let schema = json!({
        "type": "object",
        "properties": {
            "query": { "type": "string", "description": "what to look for" },
            "limit": { "type": "integer", "minimum": 1, "maximum": 100 },
        },
        "required": ["query"],
    });
    let schema = schema.as_object().cloned().expect("an object");
    let description = format!("{name}: one of the tools of a large deployment, number {index}.");
    mcp::Tool::new(name, description, Arc::new(schema))
        .with_annotations(mcp::ToolAnnotations::new().read_only(index.is_multiple_of(2)))
}

/// `upstreams` servers of `tools` tools each. Every server has tools of its own and a few
/// whose names other servers use too (`search`, `read_file`, ...), which the prefix keeps apart.
fn servers(upstreams: usize, tools: usize) -> Vec<Server> {
    const COMMON: [&str; 4] = ["search", "read_file", "list", "status"];
    (0..upstreams)
        .map(|u| {
            let tools = (0..tools)
                .map(|t| match COMMON.get(t) {
                    Some(common) => tool((*common).to_owned(), t),
                    None => tool(format!("action_{t:03}"), t),
                })
                .collect();
            Server {
                name: format!("server-{u:03}"),
                prefix: format!("s{u:03}"),
                catalog: Catalog { tools, ..Catalog::default() },
            }
        })
        .collect()
}

fn build(servers: &[Server]) -> Inventory {
    Inventory::build(servers.iter().map(|s| Contribution {
        upstream: &s.name,
        prefix: &s.prefix,
        filter: ALL,
        catalog: &s.catalog,
    }))
}

fn inventory_build(c: &mut Criterion) {
    let mut group = c.benchmark_group("inventory_build");
    for (upstreams, tools) in [(100, 100), (3, 10)] {
        let servers = servers(upstreams, tools);
        let built = build(&servers);
        assert_eq!(built.tools().len(), upstreams * tools);
        assert!(built.collisions().is_empty(), "prefixes keep every name apart");
        let id = BenchmarkId::from_parameter(format!("{upstreams}x{tools}"));
        // The old inventory's drop is not the build's cost: it is left out of the timing.
        group.bench_function(id, |b| b.iter_with_large_drop(|| build(black_box(&servers))));
    }
    group.finish();
}

fn tool_route(c: &mut Criterion) {
    let mut group = c.benchmark_group("tool_route");
    for (upstreams, tools) in [(100, 100), (3, 10)] {
        let inventory = build(&servers(upstreams, tools));
        // Every exposed name once, in an order that jumps around the table as real calls do.
        let mut names: Vec<String> = inventory.tools().iter().map(|t| t.name.to_string()).collect();
        let n = names.len();
        names = (0..n).map(|i| names[(i * 7919) % n].clone()).collect();
        assert!(names.iter().all(|name| inventory.tool_route(name).is_some()));
        let size = format!("{upstreams}x{tools}");
        group.bench_function(BenchmarkId::new("hit", &size), |b| {
            let mut next = 0;
            b.iter(|| {
                let name = &names[next];
                next = (next + 1) % n;
                inventory.tool_route(black_box(name)).is_some()
            });
        });
        group.bench_function(BenchmarkId::new("miss", &size), |b| {
            b.iter(|| inventory.tool_route(black_box("s042__no_such_tool")).is_some());
        });
    }
    group.finish();
}

criterion_group!(benches, inventory_build, tool_route);
criterion_main!(benches);
