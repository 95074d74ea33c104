//! The contract of `SharedState` (`tests/support/contract.rs`) on each backend: memory (tokio's
//! clock paused), and two replicas' states on one Redis server and on one PostgreSQL database
//! of the test's own (Debian's, through toolgate-testkit).

mod support;

use std::time::Duration;

use toolgate_state::SharedState;
use toolgate_testkit::postgres::PostgresServer;
use toolgate_testkit::redis::RedisServer;

#[tokio::test(start_paused = true)]
async fn memory_keeps_the_contract() {
    let state = SharedState::memory();
    support::contract::run(&state, &state.clone()).await;
}

#[tokio::test]
async fn redis_keeps_the_contract() {
    let server = RedisServer::start_with_password().await;
    let config = support::redis(&server.url());
    let one = support::connect(&config, Duration::from_secs(5)).await;
    let two = support::connect(&config, Duration::from_secs(5)).await;
    support::contract::run(&one, &two).await;
}

#[tokio::test]
async fn postgres_keeps_the_contract() {
    let server = PostgresServer::start().await;
    let config = support::postgres(&server.url());
    // Started together: both make the table, one after the other.
    let (one, two) = tokio::join!(
        support::connect(&config, Duration::from_secs(5)),
        support::connect(&config, Duration::from_secs(5))
    );
    support::contract::run(&one, &two).await;
}

/// What Redis holds: each key under the prefix, with its TTL, a counter's included.
#[tokio::test]
async fn redis_keys_are_prefixed_and_expire() {
    let server = RedisServer::start().await;
    let state = support::connect(&support::redis(&server.url()), Duration::from_secs(5)).await;
    state.put("k", b"v", Duration::from_secs(60)).await.unwrap();
    state.put_new("claim", b"v", Duration::from_secs(60)).await.unwrap();
    state.incr("n", 1, Duration::from_secs(60)).await.unwrap();
    let client = redis::Client::open(server.url()).unwrap();
    let mut raw = client.get_multiplexed_async_connection().await.unwrap();
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query_async(&mut raw).await.unwrap();
    keys.sort();
    assert_eq!(keys, ["toolgate:claim", "toolgate:k", "toolgate:n"]);
    for key in keys {
        let ttl: i64 = redis::cmd("PTTL").arg(&key).query_async(&mut raw).await.unwrap();
        assert!((1..=60_000).contains(&ttl), "{key}: {ttl}");
    }
}

/// What PostgreSQL holds: each key under the prefix, with its expiry; expired rows are pruned
/// by later writes, 16 by each.
#[tokio::test]
async fn postgres_rows_are_prefixed_expire_and_are_pruned() {
    let server = PostgresServer::start().await;
    let state = support::connect(&support::postgres(&server.url()), Duration::from_secs(5)).await;
    let (raw, connection) =
        tokio_postgres::connect(&server.url(), tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    // 40 rows that expired a minute ago (the table is made by `connect`).
    raw.execute(
        "INSERT INTO toolgate_state (key, value, expires_at) \
         SELECT 'toolgate:old' || n, 'v', now() - interval '1 minute' FROM generate_series(1, 40) n",
        &[],
    )
    .await
    .unwrap();
    assert_eq!(state.get("old1").await.unwrap(), None, "expired: never read");
    state.put("k", b"v", Duration::from_secs(60)).await.unwrap();
    state.incr("n", 1, Duration::from_secs(60)).await.unwrap();
    let rows = raw
        .query(
            "SELECT key, EXTRACT(EPOCH FROM expires_at - now())::float8 FROM toolgate_state \
             WHERE expires_at > now() ORDER BY key",
            &[],
        )
        .await
        .unwrap();
    let live: Vec<(String, f64)> = rows.iter().map(|row| (row.get(0), row.get(1))).collect();
    let keys: Vec<&str> = live.iter().map(|(key, _)| key.as_str()).collect();
    assert_eq!(keys, ["toolgate:k", "toolgate:n"]);
    assert!(live.iter().all(|(_, left)| (0.0..=60.0).contains(left)), "{live:?}");
    let stored: i64 =
        raw.query_one("SELECT count(*) FROM toolgate_state", &[]).await.unwrap().get(0);
    assert_eq!(stored, 2 + 40 - 2 * 16, "each of the two writes pruned 16 expired rows");
}
