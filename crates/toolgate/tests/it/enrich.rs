//! `enrich` through the real binary: `toolgate call` with an enrich entry pointing at
//! `toolgate-fixture fake-llm`, the key handed over in the child's environment only.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use toolgate_testkit::fake_llm::{Dialect, REQUESTS_PATH, Request};

use crate::support::*;

/// The variable the config names; set only on the `toolgate` child.
const KEY_VAR: &str = "TOOLGATE_IT_LLM_KEY";
const KEY: &str = "sk-it-4c9e1f0d";
const SUMMARY: &str = "The echo tool repeated a long list of fruit.";

/// `toolgate-fixture fake-llm ARGS`, and its base URL.
async fn fake_llm(args: &[&str]) -> (Child, String) {
    let mut child = Command::new(fixture_bin())
        .args(["fake-llm", "--port", "0"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the fake LLM");
    let stdout = child.stdout.take().expect("stdout");
    let line =
        tokio::time::timeout(Duration::from_secs(30), BufReader::new(stdout).lines().next_line())
            .await
            .expect("the fake prints its URL in time")
            .expect("read stdout")
            .expect("a listening line");
    let url = line.strip_prefix("listening ").expect("listening URL").to_owned();
    (child, url)
}

/// What the fake at `base_url` received.
async fn received(base_url: &str) -> Vec<Request> {
    let origin = base_url.strip_suffix("/v1").expect("a /v1 base URL");
    let response = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("a client")
        .get(format!("{origin}{REQUESTS_PATH}"))
        .send()
        .await
        .expect("GET the recorded requests");
    response.json().await.expect("recorded requests as JSON")
}

fn config(base_url: &str) -> ConfigDir {
    ConfigDir::new(&format!(
        "{}\n[[pipeline]]\nkind = \"enrich\"\ntools = [\"echo\"]\nbase_url = {}\n\
         model = \"gpt-4o-mini\"\napi_key_env = \"{KEY_VAR}\"\nmin_tokens = 20\n\n\
         [audit]\nfile = \"audit.jsonl\"\n",
        fixture_server("fx", "stdio", None),
        toml_str(base_url),
    ))
}

/// `toolgate call --json fx__echo text=TEXT`, with the key in the child's environment when
/// `key` is set (and never otherwise).
async fn call_echo(config: &ConfigDir, text: &str, key: Option<&str>) -> std::process::Output {
    let mut command = Command::new(toolgate_bin());
    command
        .args(["call", "--json", "--config"])
        .arg(config.path())
        .args(["fx__echo", &format!("text={text}")])
        .stdin(Stdio::null())
        .env_remove("TOOLGATE_CONFIG")
        .env_remove(KEY_VAR);
    if let Some(key) = key {
        command.env(KEY_VAR, key);
    }
    tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("toolgate finishes in time")
        .expect("run toolgate")
}

fn long_text() -> String {
    ["apple", "banana", "cherry", "damson", "elderberry", "fig", "grape"].repeat(8).join(", ")
}

#[tokio::test]
async fn the_summary_arrives_and_the_endpoint_saw_the_tool_the_result_and_the_key() {
    let (_fake, base_url) = fake_llm(&["--reply", SUMMARY, "--api-key", KEY]).await;
    let config = config(&base_url);
    let text = long_text();

    let output = call_echo(&config, &text, Some(KEY)).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let result: Value = serde_json::from_slice(&output.stdout).expect("a JSON result");
    let content = result["content"].as_array().expect("content");
    assert_eq!(content.len(), 2, "{result}");
    assert_eq!(
        content[0]["text"],
        format!("Summary (the full result follows):\n{SUMMARY}"),
        "the summary comes first"
    );
    assert_eq!(content[0]["_meta"]["io.toolgate/enrich"]["model"], "gpt-4o-mini");
    assert_eq!(content[1]["text"], text.as_str(), "the original follows");

    let requests = received(&base_url).await;
    assert_eq!(requests.len(), 1, "{requests:?}");
    let request = &requests[0];
    assert_eq!(request.dialect, Dialect::OpenaiChat);
    assert_eq!(request.bearer(), Some(KEY), "the key from the child's environment");
    assert_eq!(request.model(), Some("gpt-4o-mini"));
    let prompt = request.last_user_text().expect("a user message");
    assert!(prompt.contains("fx__echo"), "the prompt names the tool: {prompt}");
    assert!(prompt.contains(&text), "the prompt carries the result: {prompt}");
    assert!(!stderr.contains(KEY), "the key is never logged: {stderr}");
    let audit = std::fs::read_to_string(config.dir().join("audit.jsonl")).expect("the audit log");
    assert!(!audit.contains(KEY), "nor audited");
}

#[tokio::test]
async fn a_failing_endpoint_leaves_the_result_and_says_which_host_and_status() {
    let (_fake, base_url) = fake_llm(&["--fail", "429"]).await;
    let config = config(&base_url);
    let text = long_text();

    let output = call_echo(&config, &text, Some(KEY)).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "fails open: {stderr}");
    let result: Value = serde_json::from_slice(&output.stdout).expect("a JSON result");
    assert_eq!(result["content"].as_array().map(Vec::len), Some(1), "{result}");
    assert_eq!(result["content"][0]["text"], text.as_str(), "unchanged");
    assert_eq!(received(&base_url).await.len(), 1);

    let host = base_url.trim_start_matches("http://").trim_end_matches("/v1");
    let error = format!(
        "the summary endpoint {host} answered HTTP 429 Too Many Requests (rate_limit_exceeded)"
    );
    let audit = std::fs::read_to_string(config.dir().join("audit.jsonl")).expect("the audit log");
    let failed: Vec<Value> = audit
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("JSON lines"))
        .filter(|record| record["kind"] == "interceptor/failed")
        .collect();
    assert_eq!(failed.len(), 1, "{audit}");
    let record = failed[0].to_string();
    assert!(record.contains(&error), "{record}");
    assert!(record.contains("\"enrich\""), "names the interceptor: {record}");
    for written in [&*stderr, &audit] {
        assert!(!written.contains(KEY), "the key is never written: {written}");
    }
}

#[tokio::test]
async fn an_unset_key_variable_is_a_config_error() {
    let (_fake, base_url) = fake_llm(&[]).await;
    let config = config(&base_url);
    let output = call_echo(&config, "hello", None).await;
    assert_eq!(output.status.code(), Some(64), "a config error");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "pipeline[0].api_key_env: the environment variable {KEY_VAR} is not set"
        )),
        "{stderr}"
    );
    assert!(received(&base_url).await.is_empty(), "nothing was asked");
}
