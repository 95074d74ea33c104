//! Shared state when its backend goes: Redis and PostgreSQL servers of the test's own
//! (toolgate-testkit) stopped under a `SharedState`, which must fail every operation within its
//! timeout with `Unavailable`, and work again, subscriptions included, when the server is back
//! on the same port, without being made again. And no password in any error.

mod support;

use std::time::Duration;

use tokio::time::Instant;
use toolgate_state::{SharedState, StateError, Subscription};
use toolgate_testkit::postgres::PostgresServer;
use toolgate_testkit::redis::RedisServer;

/// The states' bound on each operation here.
const TIMEOUT: Duration = Duration::from_millis(500);

/// What an operation may take past its bound on a busy machine.
const SLACK: Duration = Duration::from_millis(300);

/// How long a backend may take to be usable again after its server is.
const RECOVERY: Duration = Duration::from_secs(10);

const TTL: Duration = Duration::from_secs(60);

/// Every operation on `state` fails within the bound, as `Unavailable`, with no `secret` in
/// what it says.
async fn every_operation_is_unavailable(state: &SharedState, secret: &str) {
    let operations: Vec<(&str, futures::future::BoxFuture<'_, Result<(), StateError>>)> = vec![
        ("get", Box::pin(async { state.get("k").await.map(drop) })),
        ("put", Box::pin(state.put("k", b"v", TTL))),
        ("put_new", Box::pin(async { state.put_new("k2", b"v", TTL).await.map(drop) })),
        ("take", Box::pin(async { state.take("k").await.map(drop) })),
        ("delete", Box::pin(async { state.delete("k").await.map(drop) })),
        ("incr", Box::pin(async { state.incr("n", 1, TTL).await.map(drop) })),
        ("scan", Box::pin(async { state.scan("k", 10).await.map(drop) })),
        ("publish", Box::pin(state.publish("wake", b"lost"))),
    ];
    for (name, operation) in operations {
        let started = Instant::now();
        let error = operation.await.expect_err(name);
        let took = started.elapsed();
        assert!(took <= TIMEOUT + SLACK, "{name} took {took:?}");
        let text = support::chain(&error);
        assert!(
            matches!(&error, StateError::Unavailable { backend, .. } if *backend == state.backend()),
            "{name}: {text}"
        );
        assert!(!text.contains(secret), "{name}: {text}");
    }
}

/// Waits until `state` writes again; how long that took.
async fn recovered(state: &SharedState) -> Duration {
    let started = Instant::now();
    loop {
        match state.put("back", b"v", TTL).await {
            Ok(()) => return started.elapsed(),
            Err(StateError::Unavailable { .. }) if started.elapsed() < RECOVERY => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(error) => panic!("not back after {RECOVERY:?}: {}", support::chain(&error)),
        }
    }
}

/// Publishes from `publisher` until `subscription` receives it (the bus may take a moment to
/// listen again: what is published before that is lost, as documented).
async fn heard_again(publisher: &SharedState, subscription: &mut Subscription) {
    let started = Instant::now();
    loop {
        publisher.publish(subscription.channel(), b"after").await.expect("publish");
        match tokio::time::timeout(Duration::from_millis(200), subscription.recv()).await {
            // (A publish that timed out while the server was frozen ran when it thawed.)
            Ok(Some(message)) if message == b"lost"[..] => {}
            Ok(Some(message)) => {
                assert_eq!(message, &b"after"[..]);
                return;
            }
            Ok(None) => panic!("the subscription ended"),
            Err(_) => assert!(started.elapsed() < RECOVERY, "the subscription hears nothing"),
        }
    }
}

#[tokio::test]
async fn redis_going_fails_fast_and_the_same_state_works_when_it_is_back() {
    let mut server = RedisServer::start_with_password().await;
    let password = server.password().expect("a password").to_owned();
    let config = support::redis(&server.url());
    let state = support::connect(&config, TIMEOUT).await;
    let other = support::connect(&config, TIMEOUT).await;
    let mut subscription = state.subscribe("wake").await.unwrap();
    state.put("k", b"v", TTL).await.unwrap();

    server.stop().await;
    every_operation_is_unavailable(&state, &password).await;
    // Again: a second round finds the manager's failed reconnection, not a dead connection.
    every_operation_is_unavailable(&state, &password).await;

    server.restart().await;
    // The first operation after the outage succeeds: no connection it finds is stale.
    state.put("first", b"v", TTL).await.expect("the first write after the outage");
    other.get("first").await.expect("the other's first read after the outage");
    heard_again(&other, &mut subscription).await;
    // Messages flow both ways again, and a new subscriber hears them too.
    let mut fresh = other.subscribe("wake").await.unwrap();
    state.publish("wake", b"both").await.unwrap();
    assert_eq!(support::next(&mut fresh).await, &b"both"[..]);
    assert_eq!(support::next(&mut subscription).await, &b"both"[..]);
}

#[tokio::test]
async fn a_redis_restart_between_two_operations_fails_neither() {
    let mut server = RedisServer::start().await;
    let state = support::connect(&support::redis(&server.url()), TIMEOUT).await;
    for round in 0..3 {
        state.put("k", b"v", TTL).await.unwrap_or_else(|error| panic!("round {round}: {error:?}"));
        // Nothing is asked while it is away: the connection it held is dead, and the state
        // must not find that out by failing the next operation.
        server.restart().await;
    }
    assert_eq!(state.incr("n", 1, TTL).await.unwrap(), 1);
}

#[tokio::test]
async fn a_redis_that_does_not_answer_fails_each_operation_at_the_timeout() {
    let server = RedisServer::start().await;
    let config = support::redis(&server.url());
    let state = support::connect(&config, TIMEOUT).await;
    let mut subscription = state.subscribe("wake").await.unwrap();
    state.put("kept", b"v", TTL).await.unwrap();

    server.pause();
    let started = Instant::now();
    every_operation_is_unavailable(&state, "no secret here").await;
    assert!(started.elapsed() >= TIMEOUT, "it waited for an answer: {:?}", started.elapsed());

    server.resume();
    recovered(&state).await;
    // (The writes that timed out were sent, and ran when it thawed: `Unavailable` does not
    // say a write did not happen.)
    assert_eq!(state.get("kept").await.unwrap().as_deref(), Some(&b"v"[..]));
    heard_again(&state, &mut subscription).await;
}

#[tokio::test]
async fn a_state_made_while_redis_is_down_works_once_it_is_up() {
    let mut server = RedisServer::start().await;
    server.stop().await;
    let started = Instant::now();
    let state = support::connect(&support::redis(&server.url()), TIMEOUT).await;
    assert!(started.elapsed() <= TIMEOUT + SLACK, "connecting took {:?}", started.elapsed());
    every_operation_is_unavailable(&state, "no secret here").await;
    let refused = state.subscribe("wake").await.expect_err("no bus yet");
    assert!(matches!(refused, StateError::Unavailable { .. }), "{refused:?}");

    server.restart().await;
    recovered(&state).await;
    assert_eq!(state.get("back").await.unwrap().as_deref(), Some(&b"v"[..]));
    let mut subscription = state.subscribe("wake").await.expect("the bus listens now");
    heard_again(&state, &mut subscription).await;
}

#[tokio::test]
async fn postgres_going_fails_fast_and_the_same_state_works_when_it_is_back() {
    let mut server = PostgresServer::start().await;
    let password = server.password().to_owned();
    let config = support::postgres(&server.url());
    let state = support::connect(&config, TIMEOUT).await;
    let other = support::connect(&config, TIMEOUT).await;
    let mut subscription = state.subscribe("wake").await.unwrap();
    state.put("kept", b"v", TTL).await.unwrap();

    server.stop().await;
    every_operation_is_unavailable(&state, &password).await;
    every_operation_is_unavailable(&state, &password).await;

    server.restart().await;
    state.put("first", b"v", TTL).await.expect("the first write after the outage");
    assert_eq!(other.get("kept").await.unwrap().as_deref(), Some(&b"v"[..]), "kept on disk");
    heard_again(&other, &mut subscription).await;
    let mut fresh = other.subscribe("wake").await.unwrap();
    state.publish("wake", b"both").await.unwrap();
    assert_eq!(support::next(&mut fresh).await, &b"both"[..]);
    assert_eq!(support::next(&mut subscription).await, &b"both"[..]);
}

#[tokio::test]
async fn a_wrong_redis_password_is_refused_without_showing_it() {
    let server = RedisServer::start_with_password().await;
    let wrong = "Wr0ng-s3cret%2Fpw";
    let url = format!("redis://:{wrong}@127.0.0.1:{}/0", server.port());
    let started = Instant::now();
    let refused = SharedState::builder(&support::redis(&url))
        .timeout(TIMEOUT)
        .connect()
        .await
        .expect_err("a wrong password");
    assert!(started.elapsed() <= TIMEOUT + SLACK);
    let text = support::chain(&refused);
    assert!(matches!(refused, StateError::Failed { backend: "redis", .. }), "{text}");
    for secret in [wrong, "Wr0ng-s3cret/pw", "Wr0ng-s3cret"] {
        assert!(!text.contains(secret), "{text}");
    }
    assert!(text.contains("127.0.0.1"), "it says which server: {text}");

    // A URL it cannot read: the message is about the URL, without its password.
    let unreadable = "redis://:Wr0ng-s3cret@127.0.0.1:notaport/0";
    let refused = SharedState::connect(&support::redis(unreadable)).await.expect_err("no port");
    let text = support::chain(&refused);
    assert!(matches!(refused, StateError::Config { .. }), "{text}");
    assert!(!text.contains("Wr0ng-s3cret"), "{text}");
}

#[tokio::test]
async fn a_rediss_url_speaks_tls_so_a_plain_server_does_not_pass_for_one() {
    let server = RedisServer::start_with_password().await;
    let password = server.password().expect("a password").to_owned();
    let url = server.url().replacen("redis://", "rediss://", 1);
    let started = Instant::now();
    let error = match SharedState::builder(&support::redis(&url)).timeout(TIMEOUT).connect().await {
        Err(error) => error,
        // A client that spoke plain Redis would be let in (the password is right).
        Ok(state) => state.get("k").await.expect_err("the server speaks no TLS"),
    };
    assert!(started.elapsed() <= 2 * (TIMEOUT + SLACK), "{:?}", started.elapsed());
    let text = support::chain(&error);
    assert!(matches!(error, StateError::Unavailable { .. }), "{text}");
    assert!(!text.contains(&password), "{text}");
}

#[tokio::test]
async fn a_wrong_postgres_password_is_refused_without_showing_it() {
    let server = PostgresServer::start().await;
    let wrong = "Wr0ng-s3cret%40pw";
    let url = format!(
        "postgres://{}:{wrong}@127.0.0.1:{}/{}?sslmode=disable",
        toolgate_testkit::postgres::USER,
        server.port(),
        toolgate_testkit::postgres::DATABASE
    );
    let refused = SharedState::builder(&support::postgres(&url))
        .timeout(Duration::from_secs(5))
        .connect()
        .await
        .expect_err("a wrong password");
    let text = support::chain(&refused);
    assert!(matches!(refused, StateError::Failed { backend: "postgres", .. }), "{text}");
    for secret in [wrong, "Wr0ng-s3cret@pw", "Wr0ng-s3cret"] {
        assert!(!text.contains(secret), "{text}");
    }
    assert!(text.contains("password authentication failed"), "it says why: {text}");
}
