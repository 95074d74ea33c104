//! The fake provider through a real HTTP client.

use std::time::Duration;

use serde_json::{Value, json};

use super::*;

fn chat(model: &str, prompt: &str) -> Value {
    json!({"model": model, "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": prompt},
    ]})
}

async fn post(fake: &FakeLlm, body: &Value, key: Option<&str>) -> (u16, Value) {
    let client = reqwest::Client::builder().no_proxy().build().expect("a client");
    let mut request = client.post(format!("{}/chat/completions", fake.base_url())).json(body);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.expect("an answer");
    let status = response.status().as_u16();
    (status, response.json().await.expect("a JSON body"))
}

#[tokio::test]
async fn a_completion_is_written_as_openai_writes_it_and_the_request_is_recorded() {
    let fake = FakeLlm::start(Script::turns([Turn::text("a short summary")])).await.unwrap();
    let (status, body) = post(&fake, &chat("gpt-4o-mini", "hello there"), Some("sk-1")).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["id"].as_str().unwrap().starts_with("chatcmpl-"), "{body}");
    assert_eq!(body["object"], "chat.completion");
    assert!(body["created"].as_u64().unwrap() > 1_700_000_000, "unix seconds: {body}");
    assert_eq!(body["model"], "gpt-4o-mini");
    let choice = &body["choices"][0];
    assert_eq!(choice["index"], 0);
    assert_eq!(
        choice["message"],
        json!({
            "role": "assistant", "content": "a short summary", "refusal": null, "annotations": []
        })
    );
    assert_eq!(choice["finish_reason"], "stop");
    // "a short summary" is 3 tokens; the prompt is 3 + 2 ("be brief") + 3 + 2 ("hello
    // there") + 3.
    let usage = &body["usage"];
    assert_eq!(usage["completion_tokens"], 3, "{usage}");
    assert_eq!(usage["prompt_tokens"], 13, "{usage}");
    assert_eq!(usage["total_tokens"], 16, "{usage}");

    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.dialect, Dialect::OpenaiChat);
    assert_eq!((request.method.as_str(), request.path.as_str()), ("POST", "/v1/chat/completions"));
    assert_eq!(request.model(), Some("gpt-4o-mini"));
    assert_eq!(request.bearer(), Some("sk-1"));
    assert_eq!(request.header("Authorization"), Some("Bearer sk-1"));
    assert_eq!(
        request.messages()[0],
        ChatMessage { role: "system".into(), content: "be brief".into() }
    );
    assert_eq!(request.last_user_text().as_deref(), Some("hello there"));
}

#[tokio::test]
async fn turns_come_in_order_then_the_script_is_exhausted() {
    let fake = FakeLlm::start(Script::turns([Turn::text("one"), Turn::fail(503)])).await.unwrap();
    fake.push(Turn::text("three").finish("length"));
    let (_, first) = post(&fake, &chat("m", "a"), None).await;
    assert_eq!(first["choices"][0]["message"]["content"], "one");
    let (status, second) = post(&fake, &chat("m", "b"), None).await;
    assert_eq!(status, 503);
    assert_eq!(second["error"]["type"], "server_error", "{second}");
    let (_, third) = post(&fake, &chat("m", "c"), None).await;
    assert_eq!(third["choices"][0]["finish_reason"], "length");
    let (status, fourth) = post(&fake, &chat("m", "d"), None).await;
    assert_eq!(status, 500);
    assert_eq!(fourth["error"]["code"], "script_exhausted", "{fourth}");
    assert!(fourth["error"]["message"].as_str().unwrap().contains("after 3 answers"), "{fourth}");
    assert_eq!(fake.requests().len(), 4);
}

#[tokio::test]
async fn a_responder_answers_from_the_request() {
    let script = Script::respond(|request| {
        Turn::text(format!("you said {}", request.last_user_text().unwrap_or_default()))
    });
    let fake = FakeLlm::start(script).await.unwrap();
    let (_, body) = post(&fake, &chat("m", "ping"), None).await;
    assert_eq!(body["choices"][0]["message"]["content"], "you said ping");
}

#[tokio::test]
async fn errors_carry_the_status_and_openais_error_body() {
    let fake = FakeLlm::start(Script::turns([
        Turn::fail(429),
        Turn::error(ProviderError::for_status(400).with_message("context too long")),
        Turn::raw(200, "application/json", "{\"choices\": ["),
    ]))
    .await
    .unwrap();
    let (status, body) = post(&fake, &chat("m", "a"), None).await;
    assert_eq!(status, 429);
    assert_eq!(
        body,
        json!({"error": {
            "message": "Rate limit reached; try again in 20s (fake).",
            "type": "requests",
            "param": null,
            "code": "rate_limit_exceeded",
        }})
    );
    let (status, body) = post(&fake, &chat("m", "b"), None).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["message"], "context too long");

    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let raw = client
        .post(format!("{}/chat/completions", fake.base_url()))
        .json(&chat("m", "c"))
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status(), 200);
    assert_eq!(raw.text().await.unwrap(), "{\"choices\": [");
}

#[tokio::test]
async fn a_key_is_required_when_configured_and_refusals_use_no_turn() {
    let options = FakeLlmOptions { api_key: Some("sk-right".into()) };
    let fake = FakeLlm::start_with(Script::turns([Turn::text("ok")]), options).await.unwrap();
    let (status, body) = post(&fake, &chat("m", "a"), None).await;
    assert_eq!(status, 401);
    assert_eq!(body["error"]["code"], Value::Null, "{body}");
    let (status, body) = post(&fake, &chat("m", "a"), Some("sk-wrong")).await;
    assert_eq!(status, 401);
    assert_eq!(body["error"]["code"], "invalid_api_key", "{body}");
    let (status, body) = post(&fake, &chat("m", "a"), Some("sk-right")).await;
    assert_eq!(status, 200, "the turn was kept for the right key: {body}");
    assert_eq!(fake.requests().len(), 3, "refused requests are recorded too");
}

#[tokio::test]
async fn malformed_requests_are_refused_like_the_api_does() {
    let fake = FakeLlm::start(Script::always(Turn::text("ok"))).await.unwrap();
    let cases = [
        (json!({"messages": [{"role": "user", "content": "x"}]}), "model"),
        (json!({"model": "m"}), "messages"),
        (json!({"model": "m", "messages": []}), "messages"),
        (
            json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": true}),
            "stream",
        ),
    ];
    for (body, param) in cases {
        let (status, answer) = post(&fake, &body, None).await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(answer["error"]["param"], param, "{answer}");
        assert_eq!(answer["error"]["type"], "invalid_request_error");
    }
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let not_json = client
        .post(format!("{}/chat/completions", fake.base_url()))
        .body("not json")
        .send()
        .await
        .unwrap();
    assert_eq!(not_json.status(), 400);
    let recorded = fake.requests();
    assert_eq!(recorded.last().unwrap().raw_body, "not json");
    assert_eq!(recorded.last().unwrap().body, Value::Null);
}

#[tokio::test(start_paused = true)]
async fn a_delayed_turn_waits_on_tokios_clock() {
    let fake = FakeLlm::start(Script::turns([Turn::text("late").after(Duration::from_secs(60))]))
        .await
        .unwrap();
    let started = tokio::time::Instant::now();
    let (status, body) = post(&fake, &chat("m", "a"), None).await;
    assert_eq!(status, 200, "{body}");
    assert!(started.elapsed() >= Duration::from_secs(60), "{:?}", started.elapsed());
}

#[tokio::test]
async fn recorded_requests_are_served_as_json_and_unknown_paths_get_404() {
    let fake = FakeLlm::start(Script::always(Turn::text("ok"))).await.unwrap();
    post(&fake, &chat("m", "first"), Some("k")).await;
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let missing =
        client.post(format!("{}/responses", fake.base_url())).body("{}").send().await.unwrap();
    assert_eq!(missing.status(), 404);
    let error: Value = missing.json().await.unwrap();
    assert_eq!(error["error"]["message"], "Invalid URL (POST /v1/responses)");
    fake.received(2).await;

    let url = format!("http://{}{REQUESTS_PATH}", fake.addr());
    let served: Vec<Request> = client.get(url).send().await.unwrap().json().await.unwrap();
    assert_eq!(served, fake.requests());
    assert_eq!(served.len(), 2);
    assert_eq!(served[0].last_user_text().as_deref(), Some("first"));
    assert_eq!(served[1].dialect, Dialect::Unknown);
}
