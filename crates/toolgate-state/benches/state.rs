//! What one shared-state operation costs, on each backend: what a call that needs shared state
//! (an approval's decision, a rate limit's counter, a wake-up to other replicas) pays.
//!
//! - `state_<backend>/get`: reads a 64-byte value that is there;
//! - `state_<backend>/put`: writes it (60 s TTL);
//! - `state_<backend>/incr`: adds 1 to a counter;
//! - `state_<backend>/publish`: publishes a 64-byte message nobody listens to;
//! - `state_<backend>/publish_heard`: publishes one and waits for this replica's subscriber
//!   to receive it (the round trip through the backend).
//!
//! `memory` always runs. `redis` runs when `TOOLGATE_TEST_REDIS_SERVER` names a redis-server
//! (Debian's, from `scripts/install-test-deps`), `postgres` when `TOOLGATE_TEST_POSTGRES_BIN`
//! names PostgreSQL's programs: each starts a server of its own on 127.0.0.1
//! (toolgate-testkit), on this machine, so the figures are a local network's round trip plus
//! the server's work.
//!
//! ```sh
//! TOOLGATE_TEST_REDIS_SERVER=/usr/bin/redis-server cargo bench -p toolgate-state \
//!   --bench state -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use tokio::runtime::Runtime;
use tokio::time::Instant;
use toolgate_config::{Secret, StateBackend, StateConfig};
use toolgate_state::SharedState;
use toolgate_testkit::postgres::PostgresServer;
use toolgate_testkit::redis::RedisServer;

const TTL: Duration = Duration::from_secs(60);
const VALUE: [u8; 64] = [b'v'; 64];

/// The operations on `state`, as `state_<name>/<operation>`.
fn operations(c: &mut Criterion, runtime: &Runtime, name: &str, state: &SharedState) {
    let mut group = c.benchmark_group(format!("state_{name}"));
    runtime.block_on(state.put("bench:value", &VALUE, TTL)).expect("put");
    group.bench_function("get", |b| {
        b.to_async(runtime).iter(|| async {
            black_box(state.get("bench:value").await.expect("get").expect("there"))
        });
    });
    group.bench_function("put", |b| {
        b.to_async(runtime).iter(|| async {
            state.put("bench:written", black_box(&VALUE), TTL).await.expect("put")
        });
    });
    group.bench_function("incr", |b| {
        b.to_async(runtime)
            .iter(|| async { black_box(state.incr("bench:counter", 1, TTL).await.expect("incr")) });
    });
    group.bench_function("publish", |b| {
        b.to_async(runtime).iter(|| async {
            state.publish("bench:unheard", black_box(&VALUE)).await.expect("publish")
        });
    });
    let mut subscription = runtime.block_on(state.subscribe("bench:heard")).expect("subscribe");
    group.bench_function("publish_heard", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let started = Instant::now();
                for _ in 0..iters {
                    state.publish("bench:heard", &VALUE).await.expect("publish");
                    black_box(subscription.recv().await.expect("heard"));
                }
                started.elapsed()
            })
        });
    });
    group.finish();
}

fn benches(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    operations(c, &runtime, "memory", &SharedState::memory());

    if std::env::var_os("TOOLGATE_TEST_REDIS_SERVER").is_some() {
        let server = runtime.block_on(RedisServer::start());
        let config = StateConfig {
            backend: StateBackend::Redis(Secret::new(server.url())),
            shared_key: None,
            replica: None,
        };
        let state = runtime.block_on(SharedState::connect(&config)).expect("redis");
        operations(c, &runtime, "redis", &state);
        drop(state);
        drop(server);
    }

    if std::env::var_os("TOOLGATE_TEST_POSTGRES_BIN").is_some() {
        let server = runtime.block_on(PostgresServer::start());
        let config = StateConfig {
            backend: StateBackend::Postgres(Secret::new(server.url())),
            shared_key: None,
            replica: None,
        };
        let state = runtime.block_on(SharedState::connect(&config)).expect("postgres");
        operations(c, &runtime, "postgres", &state);
        drop(state);
        drop(server);
    }
}

criterion_group!(state, benches);
criterion_main!(state);
