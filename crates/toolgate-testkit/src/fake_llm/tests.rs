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
            "message": "Rate limit reached; try again in 1s (fake).",
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
        client.post(format!("{}/embeddings", fake.base_url())).body("{}").send().await.unwrap();
    assert_eq!(missing.status(), 404);
    let error: Value = missing.json().await.unwrap();
    assert_eq!(error["error"]["message"], "Invalid URL (POST /v1/embeddings)");
    fake.received(2).await;

    let url = format!("http://{}{REQUESTS_PATH}", fake.addr());
    let served: Vec<Request> = client.get(url).send().await.unwrap().json().await.unwrap();
    assert_eq!(served, fake.requests());
    assert_eq!(served.len(), 2);
    assert_eq!(served[0].last_user_text().as_deref(), Some("first"));
    assert_eq!(served[1].dialect, Dialect::Unknown);
}

/// `body` posted to `path` of the fake with `headers`: the response.
async fn send(
    fake: &FakeLlm,
    path: &str,
    body: &Value,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let client = reqwest::Client::builder().no_proxy().build().expect("a client");
    let mut request = client.post(format!("{}{path}", fake.origin())).json(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.expect("an answer")
}

/// The events of a stream: (event name, data) pairs, the name empty when none.
fn events(text: &str) -> Vec<(String, String)> {
    text.split("\n\n")
        .filter(|event| !event.trim().is_empty())
        .map(|event| {
            let mut name = String::new();
            let mut data = String::new();
            for line in event.lines() {
                if let Some(rest) = line.strip_prefix("event:") {
                    name = rest.trim_start().to_owned();
                } else if let Some(rest) = line.strip_prefix("data:") {
                    data = rest.strip_prefix(' ').unwrap_or(rest).to_owned();
                }
            }
            (name, data)
        })
        .collect()
}

#[tokio::test]
async fn a_stream_comes_in_http_chunks_and_split_utf8_cuts_one_inside_a_character() {
    use futures::StreamExt as _;
    let args = r#"{"city":"Zürich 🙂"}"#;
    let turn = Turn::tool_call("weather", args).with_text("Voilà").with_quirk(Quirk::SplitUtf8);
    let fake = FakeLlm::start(Script::turns([turn])).await.unwrap();
    let body =
        json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "x"}]});
    let response = send(&fake, "/v1/chat/completions", &body, &[]).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream; charset=utf-8");
    let mut frames = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(frame) = stream.next().await {
        frames.push(frame.expect("a frame"));
    }
    assert!(frames.len() > 5, "one write per event: {} frames", frames.len());
    let cut = frames.iter().filter(|frame| std::str::from_utf8(frame).is_err()).count();
    assert!(cut >= 2, "events cut inside a character arrive in two pieces: {frames:?}");
    let text = String::from_utf8(frames.concat()).expect("whole, it is UTF-8");
    let events = events(&text);
    assert_eq!(events.last().unwrap().1, "[DONE]");
    let arguments: String = events
        .iter()
        .filter_map(|(_, data)| serde_json::from_str::<Value>(data).ok())
        .filter_map(|chunk| {
            chunk
                .pointer("/choices/0/delta/tool_calls/0/function/arguments")?
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(arguments, args);
}

#[tokio::test]
async fn the_responses_api_streams_named_events_in_order() {
    let turn = Turn::tool_call("lookup", r#"{"q":"x"}"#)
        .with_id("call_7")
        .with_text("Hm.")
        .with_reasoning("r");
    let fake = FakeLlm::start(Script::turns([turn.clone(), turn])).await.unwrap();
    let body = json!({"model": "gpt-5", "stream": true, "input": "hello"});
    let response = send(&fake, "/v1/responses", &body, &[]).await;
    assert_eq!(response.status(), 200);
    let events = events(&response.text().await.unwrap());
    let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.reasoning_summary_part.added",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.done",
            "response.reasoning_summary_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let data: Vec<Value> = events.iter().map(|(_, d)| serde_json::from_str(d).unwrap()).collect();
    for (n, (event, (name, _))) in data.iter().zip(&events).enumerate() {
        assert_eq!(event["type"], name.as_str());
        assert_eq!(event["sequence_number"], n);
    }
    let completed = &data.last().unwrap()["response"];
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["output"][2]["call_id"], "call_7");
    assert!(completed["usage"]["input_tokens"].as_u64().unwrap() > 0);

    let plain =
        send(&fake, "/v1/responses", &json!({"model": "gpt-5", "input": "hello"}), &[]).await;
    let object: Value = plain.json().await.unwrap();
    assert_eq!(object["object"], "response");
    assert_eq!(object["output"][1]["content"][0]["text"], "Hm.");
    assert_eq!(fake.requests()[0].dialect, Dialect::OpenaiResponses);
}

#[tokio::test]
async fn anthropic_takes_its_key_in_x_api_key_and_writes_its_own_errors() {
    let options = FakeLlmOptions { api_key: Some("sk-ant".into()) };
    let script = Script::turns([Turn::fail(429), Turn::text("Hello.").with_reasoning("hi")]);
    let fake = FakeLlm::start_with(script, options).await.unwrap();
    let body = json!({"model": "claude", "max_tokens": 64, "stream": true,
                      "messages": [{"role": "user", "content": "hi"}]});
    let version = ("anthropic-version", "2023-06-01");

    let refused = send(&fake, "/v1/messages", &body, &[version, ("x-api-key", "wrong")]).await;
    assert_eq!(refused.status(), 401);
    assert!(refused.headers().contains_key("request-id"));
    assert_eq!(
        refused.json::<Value>().await.unwrap(),
        json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
    );
    let unversioned = send(&fake, "/v1/messages", &body, &[("x-api-key", "sk-ant")]).await;
    assert_eq!(unversioned.status(), 400);

    let limited = send(&fake, "/v1/messages", &body, &[version, ("x-api-key", "sk-ant")]).await;
    assert_eq!(limited.status(), 429);
    assert_eq!(limited.headers()["retry-after"], "1");
    let error: Value = limited.json().await.unwrap();
    assert_eq!(error["error"]["type"], "rate_limit_error");

    let streamed = send(&fake, "/v1/messages", &body, &[version, ("x-api-key", "sk-ant")]).await;
    assert_eq!(streamed.status(), 200);
    let events = events(&streamed.text().await.unwrap());
    let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    let delta: Value = serde_json::from_str(&events[5].1).unwrap();
    assert_eq!(
        delta["delta"],
        json!({"type": "signature_delta", "signature": anthropic::signature("hi")})
    );
    let stop: Value = serde_json::from_str(&events[11].1).unwrap();
    assert_eq!(stop["delta"]["stop_reason"], "end_turn");
    assert_eq!(fake.requests().len(), 4);
}

#[tokio::test]
async fn openai_rate_limits_say_when_to_retry() {
    let fake = FakeLlm::start(Script::turns([Turn::error(
        ProviderError::for_status(429).with_retry_after(7),
    )]))
    .await
    .unwrap();
    let response = send(&fake, "/v1/chat/completions", &chat("m", "a"), &[]).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "7");
    assert!(response.headers().contains_key("x-request-id"));
}
