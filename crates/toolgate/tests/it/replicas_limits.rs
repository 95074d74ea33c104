//! `limits` across replicas: two `toolgate serve` with `[state] backend` on a real Redis
//! (`toolgate_testkit::redis`), behind HAProxy round robin; a rate of 3 calls a minute holds
//! for both together, and calls are refused, saying why, while Redis is away.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmcp::model::CallToolRequestParams;
use serde_json::json;
use toolgate_testkit::haproxy::Haproxy;
use toolgate_testkit::redis::RedisServer;

use crate::support::*;

const SHARED_KEY: &str = "replicas-test-key-0123456789abcdefghij";

/// `fx__echo` through `client`: the text, or the refusal's.
async fn echo(client: &Client) -> Result<String, String> {
    let call =
        CallToolRequestParams::new("fx__echo").with_arguments(object(json!({ "text": "hi" })));
    match client.peer().call_tool(call).await {
        Ok(result) if result.is_error == Some(true) => Err(first_text(&result)),
        Ok(result) => Ok(first_text(&result)),
        Err(error) => Err(error.to_string()),
    }
}

#[tokio::test]
async fn replicas_a_rate_limit_holds_across_replicas() {
    let mut redis = RedisServer::start().await;
    let config = ConfigDir::new(&format!(
        "{}\n\
         [[pipeline]]\nkind = \"limits\"\nserver.fx = {{ rate = \"3/min\" }}\n\n\
         [state]\nbackend = {}\nshared_key = {}\n",
        fixture_server("fx", "stdio", None),
        toml_str(&redis.url()),
        toml_str(SHARED_KEY),
    ));
    let path = config.path();
    let (one, two) = tokio::join!(HttpGateway::start(&path), HttpGateway::start(&path));
    let balancer = Haproxy::start(&[one.address(), two.address()]).await;
    let client = http_client(&format!("{}/mcp", balancer.url())).await;

    // The count is per minute of the clock: start early in one, so that the calls below
    // cannot straddle two (a wait on the clock itself, nothing to await instead).
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let into_minute = Duration::from_millis((now.as_millis() % 60_000) as u64);
    if into_minute > Duration::from_secs(40) {
        tokio::time::sleep(Duration::from_secs(60) - into_minute).await;
    }
    // Round robin: each replica takes about half of these, and would let 3 of its own through
    // if it counted alone.
    let mut outcomes = Vec::new();
    for _ in 0..8 {
        outcomes.push(echo(&client).await);
    }
    let passed = outcomes.iter().filter(|o| o.is_ok()).count();
    assert_eq!(passed, 3, "{outcomes:#?}");
    assert!(outcomes[..3].iter().all(Result::is_ok), "{outcomes:#?}");
    for refused in &outcomes[3..] {
        let text = refused.as_ref().expect_err("over the limit");
        assert!(
            text.contains("server \"fx\" is limited to 3 calls per minute; try again in"),
            "{text}"
        );
    }

    // Redis away: the call is refused (the entry fails closed), saying why, and fast.
    redis.stop().await;
    let started = tokio::time::Instant::now();
    let text = echo(&client).await.expect_err("refused");
    assert!(text.contains("the redis state backend is unavailable"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    client.cancel().await.expect("close");
}
