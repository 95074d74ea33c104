//! A stateful server pinned to one replica (`[servers.fx] replica = "a"`): two `toolgate serve`
//! with the same config, named by their environment (`[state] replica =
//! "${TOOLGATE_REPLICA}"`), sharing a real Redis, behind HAProxy round robin. Only "a" starts
//! the pinned server; every call of it, whichever replica the balancer picks, runs there,
//! while an unpinned server runs on each. The official Python SDK is the client, in both
//! protocol eras. When "a" is killed, the pinned server's calls on "b" fail at once, naming
//! the replica to wait for, and the rest goes on; when "a" is back, they work again.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use toolgate_testkit::haproxy::Haproxy;
use toolgate_testkit::redis::RedisServer;

use crate::replicas::{SHARED_KEY, python, run_sdk_with};
use crate::support::*;

/// `[servers.NAME]`: the fixture over stdio, told which replica started it (`WHO`).
fn fixture_told_who(name: &str, pinned: Option<&str>) -> String {
    let mut text = fixture_server(name, "stdio", None);
    text.push_str("env = { WHO = \"${TOOLGATE_REPLICA}\" }\n");
    if let Some(replica) = pinned {
        text.push_str(&format!("replica = {}\n", toml_str(replica)));
    }
    text.push('\n');
    text
}

async fn replica(config: &Path, name: &str, listen: Option<&str>) -> HttpGateway {
    let mut extra = Vec::new();
    if let Some(listen) = listen {
        extra.extend(["--listen", listen]);
    }
    HttpGateway::start_with_env(config, &extra, &[("TOOLGATE_REPLICA", Path::new(name))]).await
}

/// `env_get WHO` of `server` `count` times, as script steps of the SDK client.
fn who_script(server: &str, count: usize) -> Vec<Value> {
    (0..count)
        .map(|_| json!({"op": "call_tool", "name": format!("{server}__env_get"), "arguments": {"name": "WHO"}}))
        .collect()
}

/// The text of each call step of `report`, or its error.
fn answers(report: &Value) -> Vec<String> {
    report["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter(|step| step["op"] == "call_tool")
        .map(|step| {
            let text = step["result"]["content"][0]["text"].as_str();
            text.map_or_else(|| step.to_string(), str::to_owned)
        })
        .collect()
}

async fn run(url: &str, mode: &str, steps: Vec<Value>) -> Value {
    let script = Value::Array(steps);
    run_sdk_with(python(), &["--mode", mode, "--timeout", "60"], &script, url).await
}

#[tokio::test]
async fn replicas_a_pinned_server_runs_on_its_replica_only_and_is_reached_from_the_other() {
    let redis = RedisServer::start().await;
    let config = ConfigDir::new(&format!(
        "{}{}[state]\nbackend = {}\nshared_key = {}\nreplica = \"${{TOOLGATE_REPLICA}}\"\n",
        fixture_told_who("fx", Some("a")),
        fixture_told_who("each", None),
        toml_str(&redis.url()),
        toml_str(SHARED_KEY),
    ));
    let path = config.path();
    let (a, b) = tokio::join!(replica(&path, "a", None), replica(&path, "b", None));
    let a_listen = a.address().to_string();
    let balancer = Haproxy::start(&[a.address(), b.address()]).await;
    let url = format!("{}/mcp", balancer.url());
    b.wait_for_log(&["the replica this server is pinned to runs it"]).await;

    for mode in ["legacy", "2026-07-28"] {
        let mut steps = vec![json!({"op": "list_tools"})];
        steps.extend(who_script("fx", 6));
        steps.extend(who_script("each", 6));
        let report = run(&url, mode, steps).await;
        let tools = report["steps"][0]["result"]["tools"].as_array().expect("tools");
        assert!(tools.iter().any(|t| t["name"] == "fx__env_get"), "{report}");
        let said = answers(&report);
        assert_eq!(said[..6], ["a"; 6], "{mode}: every call of the pinned server ran on a");
        let each: BTreeSet<&str> = said[6..].iter().map(String::as_str).collect();
        assert_eq!(
            each,
            BTreeSet::from(["a", "b"]),
            "{mode}: the balancer used both replicas, so b relayed its calls of fx to a"
        );
    }
    // a dies. HAProxy takes it out; the pinned server's calls, now all on b, fail at once
    // with an error naming the replica to wait for (after a's key expires), and the rest go on.
    assert!(!a.kill().await.success(), "killed");
    balancer.wait_down(1).await;
    b.wait_for_log(&["the replica this server is pinned to stopped running it"]).await;
    let mut steps = who_script("fx", 1);
    steps.extend(who_script("each", 1));
    let started_at = tokio::time::Instant::now();
    let report = run(&url, "legacy", steps).await;
    let after = answers(&report);
    assert!(after[0].contains("fx is pinned to replica a, which is not running it"), "{report}");
    assert_eq!(after[1], "b");
    assert!(started_at.elapsed() < Duration::from_secs(30), "{:?}", started_at.elapsed());

    // a is back (on its address): the pinned server's calls work again from either replica.
    let _a = replica(&path, "a", Some(&a_listen)).await;
    b.wait_for_log(&["the replica this server is pinned to runs it"]).await;
    for _ in 0..100 {
        let report = run(&url, "legacy", who_script("fx", 4)).await;
        if answers(&report) == ["a"; 4] {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("the pinned server's calls never worked again");
}
