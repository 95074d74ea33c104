//! What sealed session ids cost (`[state] shared_key`): sealing one (what every `initialize`
//! pays), opening one (what the first request of a session on each other replica pays; later
//! ones find the session held), refusing one that does not open (what a client sending a stale
//! or forged id costs), and the key's derivation (once, at start-up), for an ordinary client and
//! for one whose `initialize` is as large as the seal lets through.
//!
//! ```sh
//! cargo bench -p toolgate-server --bench seal -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolgate_core::mcp;
use toolgate_intercept::Principal;
use toolgate_server::seal::{SessionSeal, fit};

const KEY: &[u8] = b"a shared key of thirty-two bytes or more, as [state] asks";
const NOW: u64 = 1_800_000_000;

fn params(value: serde_json::Value) -> mcp::InitializeRequestParams {
    fit(&serde_json::from_value(value).expect("initialize parameters"))
}

fn bench(c: &mut Criterion) {
    let seal = SessionSeal::new(KEY);
    let owner = Principal::new("jwt", "alice@example.com").with_tenant(Some("acme".into()));
    let version = mcp::ProtocolVersion::V_2025_11_25;
    let ordinary = params(json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {"form": {}}, "roots": {"listChanged": true}, "sampling": {}},
        "clientInfo": {"name": "mcp", "version": "1.24.0"}
    }));
    let big = "x".repeat(10_000);
    let largest = params(json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {
            "experimental": {"a": {"blob": big}},
            "roots": {"listChanged": true},
            "sampling": {"tools": {"blob": big}, "context": {}},
            "elicitation": {"form": {"schemaValidation": true}, "url": {}}
        },
        "clientInfo": {"name": big, "version": big}
    }));
    let mut group = c.benchmark_group("session_id");
    for (name, params) in [("ordinary", &ordinary), ("largest", &largest)] {
        let id = seal.seal(&owner, params, &version, NOW);
        println!("session_id/{name}: {} characters", id.len());
        group.bench_function(format!("seal/{name}"), |b| {
            b.iter(|| seal.seal(black_box(&owner), black_box(params), &version, NOW))
        });
        group.bench_function(format!("open/{name}"), |b| {
            b.iter(|| seal.open(black_box(&id), NOW).expect("it opens"))
        });
    }
    let ordinary_id = seal.seal(&owner, &ordinary, &version, NOW);
    let forged = format!("{}A", &ordinary_id[..ordinary_id.len() - 1]);
    group.bench_function("refuse/forged", |b| {
        b.iter(|| assert!(seal.open(black_box(&forged), NOW).is_none()))
    });
    group.bench_function("refuse/random", |b| {
        b.iter(|| assert!(seal.open(black_box("0123456789abcdef0123456789abcdef"), NOW).is_none()))
    });
    group.bench_function("fit/largest_initialize", |b| b.iter(|| fit(black_box(&largest))));
    group.bench_function("derive_key", |b| b.iter(|| SessionSeal::new(black_box(KEY))));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
