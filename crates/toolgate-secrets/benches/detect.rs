//! How long redaction takes on 1 MiB: mixed tool output (logs with hashes, UUIDs, timestamps
//! and numbers, JSON records, prose) with a secret every few KiB, the same without any
//! secret, and the same records as a JSON value.
//!
//! ```sh
//! cargo bench -p toolgate-secrets --bench detect -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use toolgate_secrets::{Detector, Selection};

const SECRETS: &[&str] = &[
    "AKIAIOSFODNN7EXAMPLE",
    "jane.doe@example.com",
    "4242 4242 4242 4242",
    "GB82 WEST 1234 5698 7654 32",
    "ghp_1234567890abcdefghijABCDEFGHIJ123456",
    "sk-proj-EXAMPLEexample0123456789EXAMPLEexample0123",
    "https://admin:s3cr3t-pass@db.example.com/app",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
];

/// About 1 MiB of mixed lines; every 16th record carries a secret when `secrets`.
fn mixed(secrets: bool) -> String {
    let mut text = String::with_capacity(1 << 20);
    let mut i = 0usize;
    while text.len() < 1 << 20 {
        let secret =
            if secrets && i.is_multiple_of(16) { SECRETS[(i / 16) % SECRETS.len()] } else { "" };
        text.push_str(&format!(
            "2026-01-{:02}T10:{:02}:00.123Z INFO request {:08x}-1c2d-4e5f-8a9b-{:012x} took {} ms \
             (commit 9fceb02d0ae598e95dc970b74767f19372d{:05x}) {secret}\n\
             {{\"id\":{i},\"order\":\"{}\",\"name\":\"file_{i}.rs\",\"size\":{},\"owner\":\"team-{}\"}}\n\
             The quick brown fox jumps over the lazy dog; a test failed at line {} of the suite.\n",
            i % 28 + 1,
            i % 60,
            i * 7919,
            i * 104_729,
            i % 997,
            i % 0xfffff,
            1_000_000_000_000_000u64 + i as u64 * 7,
            i * 37 % 9999,
            i % 13,
            i % 500,
        ));
        i += 1;
    }
    text
}

fn redaction(c: &mut Criterion) {
    let detector = Detector::new(&Selection::all());
    let with_secrets = mixed(true);
    let clean = mixed(false);
    let found = detector.redact(&with_secrets).counts.total();
    assert!(found > 100, "the mixed text has secrets to find ({found})");
    assert!(detector.redact(&clean).counts.is_empty(), "the clean text has none");
    let records: Vec<serde_json::Value> = with_secrets
        .lines()
        .filter(|line| line.starts_with('{'))
        .map(|line| serde_json::from_str(line).expect("a JSON record"))
        .collect();
    let json = serde_json::Value::Array(records);

    let mut group = c.benchmark_group("secrets");
    group.sample_size(20);
    group.bench_function("redact_1mib_mixed_with_secrets", |b| {
        b.iter(|| detector.redact(black_box(&with_secrets)).counts.total())
    });
    group.bench_function("redact_1mib_mixed_clean", |b| {
        b.iter(|| detector.redact(black_box(&clean)).counts.total())
    });
    group.bench_function("redact_json_records_of_1mib", |b| {
        b.iter_batched(
            || json.clone(),
            |mut value| detector.redact_json(&mut value).total(),
            criterion::BatchSize::LargeInput,
        )
    });
    group.bench_function("build_detector_all", |b| {
        b.iter(|| Detector::new(black_box(&Selection::all())).kinds().len())
    });
    group.finish();
}

criterion_group!(benches, redaction);
criterion_main!(benches);
