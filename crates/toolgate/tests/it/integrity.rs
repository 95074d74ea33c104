//! The `integrity` interceptor against a real rug pull at run time: the fixture's `weather` is
//! pinned with `toolgate pin`, then the server rewrites it (`rug_pull`: description, then
//! schema, then `destructiveHint` true → false) and announces it with `list_changed`. Over
//! stdio and HTTP, a changed `weather` is withheld from `tools/list` and its calls refused with
//! `drift = "block"`, shown with `drift = "warn"`; the audit log records each case.

use std::path::Path;

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

use crate::recorder::*;
use crate::support::*;

/// A config folder: the fixture with `weather` at stage 0, the integrity interceptor with
/// `drift` (and the poisoning scan only reporting, so that what is tested is the pin), an audit
/// log; `weather` pinned.
async fn pinned_config(drift: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut text = fixture_server("fx", "stdio", None);
    text.push_str("args = [\"--rug-pull\", \"0\"]\n\n");
    text.push_str(&format!(
        "[[pipeline]]\nkind = \"integrity\"\ndrift = \"{drift}\"\n\
         poisoning = {{ quarantine = \"off\" }}\n\n[audit]\nfile = {}\n",
        toml_str(&dir.path().join("audit.jsonl").to_string_lossy())
    ));
    std::fs::write(dir.path().join("toolgate.toml"), text).expect("write the config");
    let config = dir.path().join("toolgate.toml");
    let pinned = run_toolgate(&["pin", "--config", config.to_str().expect("UTF-8")]).await;
    assert!(pinned.status.success(), "{}", String::from_utf8_lossy(&pinned.stderr));
    dir
}

async fn tool_names(client: &RecordingClient) -> Vec<String> {
    client.list_all_tools().await.expect("tools/list").iter().map(|t| t.name.to_string()).collect()
}

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_owned()).with_arguments(object(arguments))
}

/// Moves `weather` to `stage` and waits for the `list_changed` it causes.
async fn rug_pull(client: &RecordingClient, notes: &mut Notes, stage: u8) {
    let result =
        client.call_tool(call("fx__rug_pull", json!({"stage": stage}))).await.expect("rug_pull");
    assert_eq!(first_text(&result), format!("weather is at stage {stage}"));
    notes.next_matching(|n| matches!(n, Note::ToolsChanged).then_some(())).await;
}

async fn rug_pull_is_caught(client: RecordingClient, mut notes: Notes) {
    assert!(tool_names(&client).await.contains(&"fx__weather".to_owned()));
    let sunny = client.call_tool(call("fx__weather", json!({"city": "Oslo"}))).await.expect("call");
    assert_eq!(first_text(&sunny), "sunny in Oslo");

    let changed = [
        (1, "description"),
        (2, "description, inputSchema"),
        (3, "annotations, description, inputSchema"),
    ];
    for (stage, fields) in changed {
        rug_pull(&client, &mut notes, stage).await;
        let names = tool_names(&client).await;
        assert!(!names.contains(&"fx__weather".to_owned()), "stage {stage}: {names:?}");
        assert!(names.contains(&"fx__echo".to_owned()), "the rest is untouched");
        let refused = client
            .call_tool(call("fx__weather", json!({"city": "Oslo", "note": "x"})))
            .await
            .expect("an answer");
        assert_eq!(refused.is_error, Some(true));
        let text = first_text(&refused);
        assert!(
            text.contains(&format!("its {fields} changed since it was pinned")),
            "stage {stage}: {text}"
        );
    }
    // Back to what was pinned: shown again.
    rug_pull(&client, &mut notes, 0).await;
    assert!(tool_names(&client).await.contains(&"fx__weather".to_owned()));
    client.cancel().await.expect("close");
}

/// The audit log of a gateway that has stopped (its last records written) holds one drift
/// record per changed contract.
fn drift_was_recorded(dir: &Path) {
    let log = std::fs::read_to_string(dir.join("audit.jsonl")).expect("the audit log");
    let drift: Vec<Value> = log
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("JSON"))
        .filter(|r| r["kind"] == "integrity/drift")
        .collect();
    assert_eq!(drift.len(), 3, "one record per changed contract: {drift:?}");
    assert!(drift.iter().all(|r| r["tool"] == "weather" && r["action"] == "withheld"), "{drift:?}");
}

#[tokio::test]
async fn a_rug_pull_at_run_time_is_withheld_over_stdio() {
    let dir = pinned_config("block").await;
    let (client, notes, _) = recording_stdio_client(&dir.path().join("toolgate.toml")).await;
    // Closing the client's session ends the stdio gateway, which writes its last records.
    rug_pull_is_caught(client, notes).await;
    drift_was_recorded(dir.path());
}

#[tokio::test]
async fn a_rug_pull_at_run_time_is_withheld_over_http() {
    let dir = pinned_config("block").await;
    let gateway = HttpGateway::start(&dir.path().join("toolgate.toml")).await;
    let (client, notes) = recording_http_client(&gateway.url).await;
    rug_pull_is_caught(client, notes).await;
    // The HTTP gateway goes on after its client leaves: it is stopped, so that the audit
    // log holds everything (read while it ran, its last record could still be on its way).
    assert!(gateway.terminate().await.success());
    drift_was_recorded(dir.path());
}

#[tokio::test]
async fn with_drift_warn_a_changed_tool_stays_and_the_change_is_recorded() {
    let dir = pinned_config("warn").await;
    let (client, mut notes, _) = recording_stdio_client(&dir.path().join("toolgate.toml")).await;
    rug_pull(&client, &mut notes, 3).await;
    assert!(tool_names(&client).await.contains(&"fx__weather".to_owned()));
    let result = client
        .call_tool(call("fx__weather", json!({"city": "Oslo", "note": "x"})))
        .await
        .expect("call");
    assert_eq!(first_text(&result), "sunny in Oslo");
    client.cancel().await.expect("close");
    let log = std::fs::read_to_string(dir.path().join("audit.jsonl")).expect("the audit log");
    assert!(
        log.lines().any(|l| l.contains("\"integrity/drift\"") && l.contains("\"passed\"")),
        "{log}"
    );
}

/// `policy` asks for destructive tools; the server flips `weather`'s `destructiveHint` to false
/// and, with `drift = "warn"`, the tool stays: the call is still asked for, because `policy`
/// sees the pinned annotations.
#[tokio::test]
async fn an_ask_policy_on_destructive_tools_still_asks_after_the_flip() {
    let dir = pinned_config("warn").await;
    let config = dir.path().join("toolgate.toml");
    let mut text = std::fs::read_to_string(&config).expect("read");
    text.push_str(
        "\n[[pipeline]]\nkind = \"policy\"\n\
         rules = [{ tools = [\"weather\"], annotations = { destructive = true }, decision = \"ask\" }]\n",
    );
    std::fs::write(&config, text).expect("write");
    let (client, mut notes, _) = recording_stdio_client(&config).await;
    let asked = |text: &str| text.contains("approval");
    let before =
        client.call_tool(call("fx__weather", json!({"city": "Oslo"}))).await.expect("call");
    assert!(asked(&first_text(&before)), "{}", first_text(&before));

    rug_pull(&client, &mut notes, 3).await;
    let after = client
        .call_tool(call("fx__weather", json!({"city": "Oslo", "note": "x"})))
        .await
        .expect("call");
    assert_eq!(after.is_error, Some(true));
    assert!(asked(&first_text(&after)), "still asked: {}", first_text(&after));
    client.cancel().await.expect("close");
}

/// With the scan's defaults, `weather` at stage 1 (pinned as it is: nothing drifted) is still
/// quarantined: its description hides instructions. The refusal says what was found.
#[tokio::test]
async fn a_poisoned_description_is_quarantined_even_when_pinned() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut text = fixture_server("fx", "stdio", None);
    text.push_str("args = [\"--rug-pull\", \"1\"]\n\n[[pipeline]]\nkind = \"integrity\"\n");
    let config = dir.path().join("toolgate.toml");
    std::fs::write(&config, text).expect("write the config");
    let pinned = run_toolgate(&["pin", "--config", config.to_str().expect("UTF-8")]).await;
    assert!(pinned.status.success());
    let (client, _notes, _) = recording_stdio_client(&config).await;
    let names = tool_names(&client).await;
    assert!(!names.contains(&"fx__weather".to_owned()), "{names:?}");
    assert!(names.contains(&"fx__echo".to_owned()));
    let refused = client
        .call_tool(call("fx__weather", json!({"city": "Oslo", "note": "x"})))
        .await
        .expect("an answer");
    let text = first_text(&refused);
    assert!(
        text.contains(
            "is quarantined: its definition looks poisoned: hidden-tag in its description"
        ),
        "{text}"
    );
    assert!(text.contains("»<IMPORTANT>«"), "{text}");
    client.cancel().await.expect("close");
}

/// The admin API's base URL, from the gateway's log.
async fn admin_url(gateway: &HttpGateway) -> String {
    let line = gateway.wait_for_log(&["admin API at http://"]).await;
    let at = line.find("http://").expect("url");
    line[at..].split_whitespace().next().expect("url").to_owned()
}

/// A changed tool is withheld; an approver accepts its new contract over the admin API; the
/// tool is back at the next list, and the audit log names the approver.
#[tokio::test]
async fn an_approver_accepts_a_changed_tool_over_the_admin_api() {
    let dir = pinned_config("block").await;
    let config = dir.path().join("toolgate.toml");
    let mut text = std::fs::read_to_string(&config).expect("read");
    text.push_str(
        "\n[admin]\nlisten = \"127.0.0.1:0\"\ntokens = { alice = \"alice-token-0123456789\" }\n",
    );
    std::fs::write(&config, text).expect("write");
    let gateway = HttpGateway::start(&config).await;
    let admin = admin_url(&gateway).await;
    let (client, mut notes) = recording_http_client(&gateway.url).await;
    rug_pull(&client, &mut notes, 2).await;
    assert!(!tool_names(&client).await.contains(&"fx__weather".to_owned()));

    // The digest of what the server lists now, as the refusal shows it (`pin --diff` shows it
    // too: see `pin.rs`).
    let refused = client
        .call_tool(call("fx__weather", json!({"city": "Oslo", "note": "x"})))
        .await
        .expect("an answer");
    let text = first_text(&refused);
    let at = text.find("{\"digest\": \"").expect("the refusal names the digest") + 12;
    let digest = text[at..].split('"').next().expect("a digest").to_owned();
    assert!(digest.starts_with("sha256:"), "{text}");

    let http = reqwest::Client::new();
    let url = format!("{admin}/integrity/fx__weather/approve");
    let anonymous = http.post(&url).json(&json!({"digest": digest})).send().await.expect("POST");
    assert_eq!(anonymous.status(), 401);
    let post = |url: String, body: Option<Value>| {
        let mut request = http.post(url).header("authorization", "Bearer alice-token-0123456789");
        if let Some(body) = body {
            request = request.json(&body);
        }
        request.send()
    };
    let unknown =
        post(format!("{admin}/integrity/fx__nope/approve"), Some(json!({"digest": digest})));
    assert_eq!(unknown.await.expect("POST").status(), 404);
    // An approval names what was reviewed: without it, nothing is pinned.
    let unnamed = post(url.clone(), None).await.expect("POST");
    assert_eq!(unnamed.status(), 400);
    let body: Value = unnamed.json().await.expect("JSON");
    assert!(body["error"].as_str().unwrap_or("").contains("digest"), "{body}");
    // What was reviewed is not what the server lists now: refused, saying both.
    let reviewed = format!("sha256:{}", "0".repeat(64));
    let stale = post(url.clone(), Some(json!({"digest": reviewed}))).await.expect("POST");
    assert_eq!(stale.status(), 409);
    let body: Value = stale.json().await.expect("JSON");
    assert_eq!(
        (body["expected"].as_str(), body["digest"].as_str()),
        (Some(reviewed.as_str()), Some(digest.as_str()))
    );
    assert!(!tool_names(&client).await.contains(&"fx__weather".to_owned()), "nothing was pinned");

    let approved = post(url.clone(), Some(json!({"digest": digest}))).await.expect("POST");
    assert_eq!(approved.status(), 200);
    let body: Value = approved.json().await.expect("JSON");
    assert_eq!(body["digest"], digest.as_str());
    assert_eq!((body["by"].as_str(), body["original"].as_str()), (Some("alice"), Some("weather")));
    let changes = body["changes"].to_string();
    assert!(changes.contains("inputSchema.properties.note: (absent)"), "{body}");

    assert!(tool_names(&client).await.contains(&"fx__weather".to_owned()), "back after approval");
    client.cancel().await.expect("close");
    assert!(gateway.terminate().await.success());
    let log = std::fs::read_to_string(dir.path().join("audit.jsonl")).expect("the audit log");
    let record = log
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("JSON"))
        .find(|r| r["kind"] == "integrity/approved")
        .expect("the approval is on record");
    assert_eq!((record["by"].as_str(), record["tool"].as_str()), (Some("alice"), Some("weather")));
}

/// `warn` and `audit` over HTTP too: the changed tool stays listed and callable, and the audit
/// log records the drift as passed.
#[tokio::test]
async fn with_drift_warn_or_audit_over_http_a_changed_tool_stays_and_is_recorded() {
    for mode in ["warn", "audit"] {
        let dir = pinned_config(mode).await;
        let gateway = HttpGateway::start(&dir.path().join("toolgate.toml")).await;
        let (client, mut notes) = recording_http_client(&gateway.url).await;
        rug_pull(&client, &mut notes, 3).await;
        assert!(tool_names(&client).await.contains(&"fx__weather".to_owned()), "{mode}");
        let result = client
            .call_tool(call("fx__weather", json!({"city": "Oslo", "note": "x"})))
            .await
            .expect("call");
        assert_eq!(first_text(&result), "sunny in Oslo", "{mode}");
        client.cancel().await.expect("close");
        assert!(gateway.terminate().await.success());
        let log = std::fs::read_to_string(dir.path().join("audit.jsonl")).expect("the audit log");
        assert!(
            log.lines().any(|l| l.contains("\"integrity/drift\"") && l.contains("\"passed\"")),
            "{mode}: {log}"
        );
    }
}

/// Deleting `toolgate.lock` under a running gateway: with `drift = "block"` every tool of `fx`
/// needs its pin, so every one is withheld and its calls refused, saying the lock is gone,
/// until `toolgate pin` writes it again (not "every tool unknown, allowed").
async fn a_deleted_lock_fails_closed(client: RecordingClient, dir: &Path) {
    let sunny = client.call_tool(call("fx__weather", json!({"city": "Oslo"}))).await.expect("call");
    assert_eq!(first_text(&sunny), "sunny in Oslo");
    std::fs::remove_file(dir.join("toolgate.lock")).expect("delete the lock");

    let names = tool_names(&client).await;
    assert!(names.iter().all(|n| !n.starts_with("fx__")), "{names:?}");
    let refused =
        client.call_tool(call("fx__weather", json!({"city": "Oslo"}))).await.expect("an answer");
    assert_eq!(refused.is_error, Some(true));
    let text = first_text(&refused);
    assert!(text.contains("toolgate.lock is gone"), "{text}");

    let config = dir.join("toolgate.toml");
    let pinned = run_toolgate(&["pin", "--config", config.to_str().expect("UTF-8")]).await;
    assert!(pinned.status.success(), "{}", String::from_utf8_lossy(&pinned.stderr));
    assert!(tool_names(&client).await.contains(&"fx__weather".to_owned()), "back once pinned");
    client.cancel().await.expect("close");
    let log = std::fs::read_to_string(dir.join("audit.jsonl")).expect("the audit log");
    assert!(log.contains("\"integrity/lock_gone\""), "{log}");
}

#[tokio::test]
async fn a_lock_deleted_under_a_running_gateway_fails_closed_over_stdio() {
    let dir = pinned_config("block").await;
    let (client, _notes, _) = recording_stdio_client(&dir.path().join("toolgate.toml")).await;
    a_deleted_lock_fails_closed(client, dir.path()).await;
}

#[tokio::test]
async fn a_lock_deleted_under_a_running_gateway_fails_closed_over_http() {
    let dir = pinned_config("block").await;
    let gateway = HttpGateway::start(&dir.path().join("toolgate.toml")).await;
    let (client, _notes) = recording_http_client(&gateway.url).await;
    a_deleted_lock_fails_closed(client, dir.path()).await;
    assert!(gateway.terminate().await.success());
}
