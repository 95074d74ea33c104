//! The PostgreSQL store against a real server of the test's own (Debian's PostgreSQL, through
//! `toolgate_testkit::postgres`): owners, two gateways on one database, an outage and the
//! recovery after it, a statement that hangs, TLS, a password that no error shows, and the
//! retention bounds under a flood.

use std::time::Duration;

use axum::http::StatusCode;
use serde_json::json;
use tokio::time::Instant;
use toolgate_responses::{ApiError, Retention, Store};
use toolgate_testkit::postgres::PostgresServer;

/// The store's bound on one operation (`store/postgres.rs`, `TIMEOUT`).
const TIMEOUT: Duration = Duration::from_secs(5);

/// Now, in seconds since the epoch, as responses are dated.
fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

fn conversation() -> serde_json::Value {
    json!({ "messages": [], "notes": [], "waiting": [], "listed": ["fs"] })
}

fn assert_unavailable(error: &ApiError) {
    assert_eq!(error.status, StatusCode::SERVICE_UNAVAILABLE, "{error:?}");
    assert_eq!(error.kind, "server_error");
    assert!(error.message.starts_with("the response store is unavailable: "), "{error:?}");
}

#[tokio::test]
async fn a_response_is_its_owners_only_and_deleted_once() {
    let server = PostgresServer::start().await;
    let store = Store::postgres(&server.url()).await.expect("the store");
    // JSON that a JSONB column would refuse (`\u0000`) or reorder.
    let response = json!({ "id": "resp_1", "z": 1, "a": "nul: \u{0}", "output": [] });
    store.put_json("resp_1", "user:alice", now(), &response, &conversation()).await.unwrap();
    let (kept, state) = store.get_json("resp_1", "user:alice").await.unwrap().expect("hers");
    assert_eq!(kept.to_string(), response.to_string(), "as written, in its order");
    assert_eq!(state, conversation());
    assert!(store.get_json("resp_1", "user:bob").await.unwrap().is_none(), "not bob's");
    assert!(!store.delete("resp_1", "user:bob").await.unwrap(), "bob cannot delete it");
    let again = json!({ "id": "resp_1", "status": "completed" });
    store.put_json("resp_1", "user:alice", now(), &again, &conversation()).await.unwrap();
    let (kept, _) = store.get_json("resp_1", "user:alice").await.unwrap().expect("replaced");
    assert_eq!(kept, again);
    assert!(store.delete("resp_1", "user:alice").await.unwrap());
    assert!(!store.delete("resp_1", "user:alice").await.unwrap(), "gone");
    assert!(store.get_json("resp_1", "user:alice").await.unwrap().is_none());
}

#[tokio::test]
async fn two_gateways_on_one_database_share_their_responses() {
    let server = PostgresServer::start().await;
    let url = server.url();
    // Started together: both make the table, one after the other.
    let (one, two) = tokio::join!(Store::postgres(&url), Store::postgres(&url));
    let (one, two) = (one.expect("the first"), two.expect("the second"));
    let response = json!({ "id": "resp_shared" });
    one.put_json("resp_shared", "user:alice", now(), &response, &conversation()).await.unwrap();
    let (kept, state) = two.get_json("resp_shared", "user:alice").await.unwrap().expect("seen");
    assert_eq!((kept, state), (response, conversation()));
    assert!(two.get_json("resp_shared", "user:bob").await.unwrap().is_none());
    assert!(two.delete("resp_shared", "user:alice").await.unwrap());
    assert!(one.get_json("resp_shared", "user:alice").await.unwrap().is_none(), "gone for both");
}

#[tokio::test]
async fn an_outage_fails_fast_and_the_same_store_works_again_after_it() {
    let mut server = PostgresServer::start().await;
    let store = Store::postgres(&server.url()).await.expect("the store");
    let response = json!({ "id": "resp_kept" });
    store.put_json("resp_kept", "o", now(), &response, &conversation()).await.unwrap();

    server.stop().await;
    let started = Instant::now();
    let put = store.put_json("resp_new", "o", now(), &response, &conversation()).await;
    let get = store.get_json("resp_kept", "o").await;
    let delete = store.delete("resp_kept", "o").await;
    let took = started.elapsed();
    for error in [put.expect_err("put"), get.expect_err("get"), delete.expect_err("delete")] {
        assert_unavailable(&error);
    }
    assert!(took < TIMEOUT, "three operations took {took:?} with the database down");

    server.restart().await;
    let (kept, _) = store.get_json("resp_kept", "o").await.expect("back").expect("still there");
    assert_eq!(kept, response);
    store.put_json("resp_new", "o", now(), &response, &conversation()).await.expect("writes again");
    assert!(store.delete("resp_new", "o").await.unwrap());
}

#[tokio::test]
async fn a_statement_that_hangs_fails_at_the_timeout() {
    let server = PostgresServer::start().await;
    let store = Store::postgres(&server.url()).await.expect("the store");
    store.put_json("resp_1", "o", now(), &json!({}), &conversation()).await.unwrap();
    // Another session holds the table: the store's statements wait behind it.
    let (mut locker, connection) =
        tokio_postgres::connect(&server.url(), tokio_postgres::NoTls).await.expect("connect");
    let driver = tokio::spawn(connection);
    let lock = locker.transaction().await.unwrap();
    lock.batch_execute("LOCK TABLE toolgate_responses IN ACCESS EXCLUSIVE MODE").await.unwrap();

    let started = Instant::now();
    let error = store.get_json("resp_1", "o").await.expect_err("held");
    let took = started.elapsed();
    assert_unavailable(&error);
    assert!(error.message.contains("no answer within"), "{error:?}");
    assert!(took >= TIMEOUT && took < TIMEOUT * 2, "failed after {took:?}");

    lock.rollback().await.unwrap();
    assert!(store.get_json("resp_1", "o").await.expect("free again").is_some());
    drop(locker);
    driver.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_gateway_started_while_the_database_is_down_serves_once_it_is_up() {
    let mut server = PostgresServer::start().await;
    server.stop().await;
    let started = Instant::now();
    let store = Store::postgres(&server.url()).await.expect("starts all the same");
    let error = store.get_json("resp_1", "o").await.expect_err("no database");
    assert_unavailable(&error);
    assert!(started.elapsed() < TIMEOUT, "took {:?}", started.elapsed());

    server.restart().await;
    // The table is made now, by the first operation that reaches the database.
    store.put_json("resp_1", "o", now(), &json!({}), &conversation()).await.expect("works");
    assert!(store.get_json("resp_1", "o").await.unwrap().is_some());
}

#[tokio::test]
async fn no_error_shows_the_password() {
    let mut server = PostgresServer::start().await;
    let password = server.password().to_owned();
    let url = server.url();
    let mut shown = Vec::new();
    let mut show = |error: &dyn std::fmt::Debug, display: String| {
        shown.push(format!("{display}\n{error:?}"));
    };

    // A URL the store cannot use.
    let bad = url.replace("sslmode=disable", "sslmode=sometimes");
    let error = Store::postgres(&bad).await.expect_err("a bad sslmode");
    show(&error, error.to_string());
    let bad =
        format!("{url}&sslrootcert=/nonexistent/ca-{password}.pem").replace("disable", "require");
    let error = Store::postgres(&bad).await.expect_err("no such sslrootcert");
    assert!(error.to_string().contains("sslrootcert"), "{error}");
    show(&error, error.to_string());

    // A wrong password (the server's is in the URL's user part) and a refused connection.
    let wrong = url.replace(&format!(":{password}@"), &format!(":{password}x@"));
    let store = Store::postgres(&wrong).await.expect("starts, warning");
    let error = store.get_json("resp_1", "o").await.expect_err("refused");
    assert!(error.message.contains("password authentication failed"), "{error:?}");
    show(&error, error.to_string());
    show(&store, String::new());

    let store = Store::postgres(&url).await.expect("the store");
    server.stop().await;
    let error = store.get_json("resp_1", "o").await.expect_err("down");
    show(&error, error.to_string());
    show(&store, String::new());

    for text in &shown {
        assert!(!text.contains(&password), "the password is shown: {text}");
    }
}

/// A CA of the test's own, and a certificate it signed for 127.0.0.1: (CA, certificate, key).
fn certificates() -> (String, String, String) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().expect("a key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "toolgate test CA");
    let ca_pem = ca.self_signed(&ca_key).expect("the CA").pem();
    let key = KeyPair::generate().expect("a key");
    let server = CertificateParams::new(vec!["127.0.0.1".to_owned()]).expect("params");
    let cert = server.signed_by(&key, &Issuer::from_params(&ca, &ca_key)).expect("signed");
    (ca_pem, cert.pem(), key.serialize_pem())
}

#[tokio::test]
async fn tls_is_used_and_verified_against_sslrootcert() {
    let mut server = PostgresServer::start().await;
    let (ca, cert, key) = certificates();
    server.use_tls(&cert, &key).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca).expect("write the CA");
    let plain = server.url().replace("?sslmode=disable", "");

    let trusted = format!("{plain}?sslmode=require&sslrootcert={}", ca_file.display());
    let store = Store::postgres(&trusted).await.expect("the store");
    store.put_json("resp_tls", "o", now(), &json!({}), &conversation()).await.expect("over TLS");
    assert!(server.log().contains("SSL enabled"), "no TLS connection:\n{}", server.log());

    // The system's roots do not know the test's CA: `require` and `prefer` (the default) both
    // verify, and refuse.
    for url in [format!("{plain}?sslmode=require"), plain.clone()] {
        let store = Store::postgres(&url).await.expect("starts, warning");
        let error = store.get_json("resp_tls", "o").await.expect_err("an unknown issuer");
        assert_unavailable(&error);
        assert!(error.message.contains("certificate"), "{error:?}");
    }
}

#[tokio::test]
async fn a_flood_keeps_each_callers_newest_and_expired_responses_go() {
    let server = PostgresServer::start().await;
    let retention = Retention { ttl: Duration::from_secs(3600), max_per_owner: 50 };
    let store = Store::postgres(&server.url()).await.expect("the store").with_retention(retention);
    // One that expired an hour ago, seen by a store that keeps everything until it is pruned.
    let forever =
        Retention { ttl: Duration::from_secs(100 * 365 * 24 * 3600), max_per_owner: 1000 };
    let everything = Store::postgres(&server.url()).await.unwrap().with_retention(forever);
    everything
        .put_json("resp_old", "user:bob", now() - 7200, &json!({}), &conversation())
        .await
        .unwrap();
    assert!(store.get_json("resp_old", "user:bob").await.unwrap().is_none(), "expired");
    assert!(!store.delete("resp_old", "user:bob").await.unwrap(), "expired is none");
    for i in 0..300 {
        let id = format!("resp_{i}");
        store
            .put_json(&id, "user:alice", now(), &json!({ "id": id }), &conversation())
            .await
            .unwrap();
    }
    store.put_json("resp_bob", "user:bob", now(), &json!({}), &conversation()).await.unwrap();
    assert_eq!(store.count("user:alice").await.unwrap(), 50);
    assert!(store.get_json("resp_299", "user:alice").await.unwrap().is_some(), "the newest");
    assert!(store.get_json("resp_250", "user:alice").await.unwrap().is_some(), "50th newest");
    assert!(store.get_json("resp_249", "user:alice").await.unwrap().is_none(), "51st newest");
    assert_eq!(store.count("user:bob").await.unwrap(), 1, "bob's own cap, his expired not counted");
    assert!(
        everything.get_json("resp_old", "user:bob").await.unwrap().is_none(),
        "a write pruned the expired row"
    );
    assert_eq!(everything.count("user:alice").await.unwrap(), 50, "the rest are gone, not hidden");
}
