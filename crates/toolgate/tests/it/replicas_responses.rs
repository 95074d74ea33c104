//! `/v1/responses` across replicas: two `toolgate serve` with `[state] backend` on a real Redis
//! (`toolgate_testkit::redis`) and no `[llm] store`, so that their stored responses are in the
//! shared state. A response made on one replica is continued (`previous_response_id`), read and
//! deleted on the other, by its owner only; with Redis stopped, a continuation fails fast with
//! a 503.

use std::time::Duration;

use serde_json::{Value, json};
use toolgate_testkit::fake_llm::{FakeLlm, Script, Turn};
use toolgate_testkit::redis::RedisServer;

use crate::support::*;

const SHARED_KEY: &str = "replicas-test-key-0123456789abcdefghij";

/// The origin of a replica (its URL without `/mcp`).
fn origin(gateway: &HttpGateway) -> String {
    gateway.url.strip_suffix("/mcp").expect("an /mcp URL").to_owned()
}

/// Sends `method` to `/v1/responses{path}` on `origin` as `key`; the status and the body.
async fn send(
    method: reqwest::Method,
    origin: &str,
    path: &str,
    key: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .request(method, format!("{origin}/v1/responses{path}"))
        .bearer_auth(key);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("answered");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_continue_read_and_delete_each_others_responses() {
    let mut redis = RedisServer::start().await;
    let turns = [Turn::text("Paris."), Turn::text("Rome."), Turn::text("Madrid.")];
    let fake = FakeLlm::start(Script::turns(turns)).await.expect("the fake LLM starts");
    let alice = toolgate_auth::generate_key().expect("a key");
    let bob = toolgate_auth::generate_key().expect("a key");
    let config = ConfigDir::new(&format!(
        "{}\n[gateway]\nllm_api = true\n\n\
         [agent]\nprovider = \"compatible\"\nbase_url = {}\nmodel = \"m\"\n\n\
         [auth.api_keys]\n{}\n{}\n\n\
         [state]\nbackend = {}\nshared_key = {}\n",
        fixture_server("fx", "stdio", None),
        toml_str(&fake.base_url()),
        alice.config_line("alice", &[], None),
        bob.config_line("bob", &[], None),
        toml_str(&redis.url()),
        toml_str(SHARED_KEY),
    ));
    let path = config.path();
    // Each replica's data folder its own, as on two machines: a store of each replica's own
    // (the SQLite default without a shared state) would not be shared.
    let (data_one, data_two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let env_one = [("XDG_DATA_HOME", data_one.path())];
    let env_two = [("XDG_DATA_HOME", data_two.path())];
    let (one, two) = tokio::join!(
        HttpGateway::start_with_env(&path, &[], &env_one),
        HttpGateway::start_with_env(&path, &[], &env_two),
    );
    let (one_at, two_at) = (origin(&one), origin(&two));
    let (post, get, delete) =
        (reqwest::Method::POST, reqwest::Method::GET, reqwest::Method::DELETE);

    let ask = json!({ "model": "m", "input": "What is the capital of France?" });
    let (status, first) = send(post.clone(), &one_at, "", &alice.key, Some(ask)).await;
    assert_eq!(status, 200, "{first}");
    let id = first["id"].as_str().expect("an id").to_owned();

    // Continued on the other replica: the model is sent the first turn too.
    let next = json!({ "model": "m", "input": "And of Italy?", "previous_response_id": id });
    let (status, second) = send(post.clone(), &two_at, "", &alice.key, Some(next.clone())).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["previous_response_id"], id.as_str());
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let seen = format!("{:?}", requests[1].messages());
    assert!(seen.contains("capital of France") && seen.contains("Paris."), "{seen}");
    assert!(seen.contains("And of Italy?"), "{seen}");

    // Another caller neither continues, reads nor deletes it, on either replica.
    let (status, _) = send(post.clone(), &two_at, "", &bob.key, Some(next)).await;
    assert_eq!(status, 404, "bob continues alice's response");
    for at in [&one_at, &two_at] {
        let (status, _) = send(get.clone(), at, &format!("/{id}"), &bob.key, None).await;
        assert_eq!(status, 404);
        let (status, _) = send(delete.clone(), at, &format!("/{id}"), &bob.key, None).await;
        assert_eq!(status, 404);
    }

    // Read on the other replica, deleted there, gone on the first.
    let (status, read) = send(get.clone(), &two_at, &format!("/{id}"), &alice.key, None).await;
    assert_eq!(status, 200, "{read}");
    assert_eq!(read, first, "the response as it was answered");
    let (status, deleted) =
        send(delete.clone(), &two_at, &format!("/{id}"), &alice.key, None).await;
    assert_eq!((status, &deleted["deleted"]), (200, &json!(true)), "{deleted}");
    let (status, _) = send(get.clone(), &one_at, &format!("/{id}"), &alice.key, None).await;
    assert_eq!(status, 404, "deleted on the other replica");
    let (status, _) = send(delete.clone(), &one_at, &format!("/{id}"), &alice.key, None).await;
    assert_eq!(status, 404, "deleted once");

    // Redis away: continuing the second response fails fast, in OpenAI's shape, with a 503.
    redis.stop().await;
    let later =
        json!({ "model": "m", "input": "And Spain?", "previous_response_id": second["id"] });
    let started = tokio::time::Instant::now();
    let (status, error) = send(post, &one_at, "", &alice.key, Some(later)).await;
    assert_eq!(status, 503, "{error}");
    let message = error["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("the response store is unavailable"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    assert_eq!(fake.requests().len(), 2, "the model was not asked");
    one.terminate().await;
    two.terminate().await;
}
