//! `/v1/responses` and `/v1/chat/completions` within their bounds: responses being made at once
//! are capped per caller (`[llm] max_in_flight_per_caller`), a request past the cap is answered
//! 429 with `Retry-After` in OpenAI's error shape, and a streamed response whose client went away
//! and that nothing will keep is cancelled, giving its place back.

use std::time::Duration;

use futures::StreamExt as _;
use serde_json::{Value, json};
use toolgate_testkit::fake_llm::{FakeLlm, Script, Turn};

use crate::support::*;

/// A model that answers "quick" at once and holds anything else for ten minutes.
async fn slow_model() -> FakeLlm {
    let script = Script::respond(|request| match request.last_user_text().as_deref() {
        Some("quick") => Turn::text("done"),
        _ => Turn::text("late").after(Duration::from_secs(600)),
    });
    FakeLlm::start(script).await.expect("the fake LLM starts")
}

/// A streamed request, read until the gateway says it is in progress (so it holds a place);
/// dropping what is returned is the client going away.
async fn held_stream(origin: &str, path: &str, body: Value) -> reqwest::Response {
    let mut response = reqwest::Client::new()
        .post(format!("{origin}{path}"))
        .json(&body)
        .send()
        .await
        .expect("answered");
    assert_eq!(response.status(), 200, "{:?}", response.text().await);
    let mut seen = String::new();
    // The first event: `response.in_progress` (Responses) or the role chunk (Chat Completions).
    while !(seen.contains("response.in_progress") || seen.contains("\"role\":\"assistant\"")) {
        let chunk = response.chunk().await.expect("reads").expect("the stream goes on");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    response
}

async fn quick(origin: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{origin}/v1/responses"))
        .json(&json!({ "model": "m", "input": "quick", "store": false }))
        .send()
        .await
        .expect("answered")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_past_its_share_gets_429_and_an_abandoned_stream_gives_its_place_back() {
    let fake = slow_model().await;
    let config = ConfigDir::new(&format!(
        "{}\n[gateway]\nllm_api = true\n\n[agent]\nprovider = \"compatible\"\nbase_url = {}\n\
         model = \"m\"\n\n[llm]\nstore = \"off\"\nmax_in_flight = 10\nmax_in_flight_per_caller = 2\n",
        fixture_server("fx", "stdio", None),
        toml_str(&fake.base_url()),
    ));
    let gateway = HttpGateway::start(&config.path()).await;
    let origin = gateway.url.strip_suffix("/mcp").expect("an /mcp URL").to_owned();

    let hold = json!({ "model": "m", "input": "hold", "store": false, "stream": true });
    let first = held_stream(&origin, "/v1/responses", hold.clone()).await;
    let chat = json!({ "model": "m", "stream": true,
                       "messages": [{ "role": "user", "content": "hold" }] });
    let second = held_stream(&origin, "/v1/chat/completions", chat).await;

    let refused = quick(&origin).await;
    assert_eq!(refused.status(), 429);
    assert_eq!(refused.headers()["retry-after"], "1");
    let error: Value = refused.json().await.expect("JSON");
    assert_eq!(error["error"]["code"], "rate_limit_exceeded", "{error}");
    assert!(
        error["error"]["message"].as_str().unwrap_or_default().contains("max_in_flight_per_caller"),
        "{error}"
    );

    // Both clients go away; neither response will be kept, so both are cancelled and a client
    // that waits as Retry-After says gets through (each held for ten minutes otherwise).
    drop(first);
    drop(second);
    let mut answered = quick(&origin).await;
    for _ in 0..10 {
        if answered.status() != 429 {
            break;
        }
        let wait: u64 = answered.headers()["retry-after"].to_str().unwrap().parse().unwrap();
        tokio::time::sleep(Duration::from_secs(wait)).await;
        answered = quick(&origin).await;
    }
    assert_eq!(answered.status(), 200, "{:?}", answered.text().await);
    let body: Value = answered.json().await.expect("JSON");
    assert_eq!(body["status"], "completed", "{body}");

    // Still two places for this caller: two held at once again, a third refused.
    let _one = held_stream(&origin, "/v1/responses", hold.clone()).await;
    let _two = held_stream(&origin, "/v1/responses", hold).await;
    assert_eq!(quick(&origin).await.status(), 429);
    gateway.terminate().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_response_is_finished_after_its_client_left() {
    let script = Script::respond(|_| Turn::text("kept").after(Duration::from_millis(300)));
    let fake = FakeLlm::start(script).await.expect("the fake LLM starts");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = ConfigDir::new(&format!(
        "{}\n[gateway]\nllm_api = true\n\n[agent]\nprovider = \"compatible\"\nbase_url = {}\n\
         model = \"m\"\n\n[llm]\nstore = {}\n",
        fixture_server("fx", "stdio", None),
        toml_str(&fake.base_url()),
        toml_str(&format!("sqlite:{}", dir.path().join("responses.db").display())),
    ));
    let gateway = HttpGateway::start(&config.path()).await;
    let origin = gateway.url.strip_suffix("/mcp").expect("an /mcp URL").to_owned();
    let mut events = reqwest::Client::new()
        .post(format!("{origin}/v1/responses"))
        .json(&json!({ "model": "m", "input": "keep", "stream": true }))
        .send()
        .await
        .expect("answered")
        .bytes_stream();
    let first = events.next().await.expect("an event").expect("reads");
    let first = String::from_utf8_lossy(&first).into_owned();
    let data = first.lines().find_map(|line| line.strip_prefix("data: ")).expect("data");
    let created: Value = serde_json::from_str(data).expect("JSON");
    let id = created["response"]["id"].as_str().expect("an id").to_owned();
    drop(events);
    fake.received(1).await;
    // The client is gone; the response is still finished and kept for it.
    let mut kept = Value::Null;
    for _ in 0..50 {
        let got = reqwest::get(format!("{origin}/v1/responses/{id}")).await.expect("answered");
        if got.status() == 200 {
            kept = got.json().await.expect("JSON");
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(kept["status"], "completed", "{kept}");
    assert_eq!(kept["output"][0]["content"][0]["text"], "kept", "{kept}");
    gateway.terminate().await;
}
