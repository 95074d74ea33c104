//! How long counting takes: 1 MiB of JSON and of prose, whole and against a budget.

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use toolgate_llm::tokens::Encoding;

fn mib_of_json() -> String {
    let mut text = String::new();
    let mut i = 0u64;
    while text.len() < 1 << 20 {
        text.push_str(&format!(
            "{{\"id\":{i},\"name\":\"file_{i}.rs\",\"size\":{},\"modified\":\"2026-11-{:02}T10:00:00Z\"}}\n",
            i * 37 % 9999,
            i % 28 + 1
        ));
        i += 1;
    }
    text
}

fn counting(c: &mut Criterion) {
    let json = mib_of_json();
    let prose = "The quick brown fox jumps over the lazy dog; a test failed at line 42.\n"
        .repeat((1 << 20) / 71);
    Encoding::O200kBase.warm_up();
    Encoding::Cl100kBase.warm_up();
    let mut group = c.benchmark_group("tokens");
    group.sample_size(20);
    group.bench_function("o200k_count_1mib_json", |b| {
        b.iter(|| Encoding::O200kBase.count(black_box(&json)))
    });
    group.bench_function("o200k_count_1mib_prose", |b| {
        b.iter(|| Encoding::O200kBase.count(black_box(&prose)))
    });
    group.bench_function("cl100k_count_1mib_json", |b| {
        b.iter(|| Encoding::Cl100kBase.count(black_box(&json)))
    });
    group.bench_function("o200k_fits_8k_budget_1mib_json", |b| {
        b.iter(|| Encoding::O200kBase.fits(black_box(&json), 8000))
    });
    group.bench_function("o200k_prefix_within_4k_1mib_json", |b| {
        b.iter(|| Encoding::O200kBase.prefix_within(black_box(&json), 4000))
    });
    group.finish();
}

criterion_group!(benches, counting);
criterion_main!(benches);
