//! What replicas share through `[state]`: two `toolgate serve` with `backend` on a real Redis
//! (`toolgate_testkit::redis`) and the same shared key, behind HAProxy round robin.
//! - Held approvals: a call held on one replica is listed and decided on the other's admin
//!   API; a call held on a replica that is killed stays listed, its decision is taken on the
//!   survivor, and the call sent again goes through; with Redis stopped, a call that needs
//!   approval is refused at once, saying why, and the next one after Redis is back is held
//!   again.
//! - Integrity: a contract approved on one replica is pinned in the other's own lock file.

use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use toolgate_testkit::haproxy::Haproxy;
use toolgate_testkit::redis::RedisServer;

use crate::support::*;

const ALICE: &str = "alice-token-0123456789";
const SHARED_KEY: &str = "replicas-test-key-0123456789abcdefghij";

struct Replicas {
    redis: RedisServer,
    _config: ConfigDir,
    replicas: Vec<HttpGateway>,
    admins: Vec<String>,
    balancer: Haproxy,
    http: reqwest::Client,
}

impl Replicas {
    async fn start() -> Replicas {
        let redis = RedisServer::start().await;
        let config = ConfigDir::new(&format!(
            "{}\n\
             [[pipeline]]\nkind = \"policy\"\ndefault = \"allow\"\n\
             rules = [{{ tools = [\"env_get\"], decision = \"ask\", reason = \"it reads the environment\" }}]\n\n\
             [[pipeline]]\nkind = \"approval\"\nvia = \"external\"\nexpires = \"2m\"\n\n\
             [admin]\nlisten = \"127.0.0.1:0\"\ntokens = {{ alice = \"{ALICE}\" }}\n\n\
             [state]\nbackend = {}\nshared_key = {}\n",
            fixture_server("fx", "stdio", None),
            toml_str(&redis.url()),
            toml_str(SHARED_KEY),
        ));
        let path = config.path();
        let (one, two) = tokio::join!(HttpGateway::start(&path), HttpGateway::start(&path));
        let admins = vec![admin_url(&one).await, admin_url(&two).await];
        let balancer = Haproxy::start(&[one.address(), two.address()]).await;
        Replicas {
            redis,
            _config: config,
            replicas: vec![one, two],
            admins,
            balancer,
            http: reqwest::Client::new(),
        }
    }

    fn url(&self) -> String {
        format!("{}/mcp", self.balancer.url())
    }

    /// `GET /approvals` on replica `n`'s admin API: its status and body.
    async fn listed(&self, n: usize) -> (u16, Value) {
        let response = self
            .http
            .get(format!("{}/approvals", self.admins[n]))
            .header("authorization", format!("Bearer {ALICE}"))
            .send()
            .await
            .expect("GET /approvals");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// The ids replica `n` lists once it lists `count`.
    async fn wait_listed(&self, n: usize, count: usize) -> Vec<String> {
        for _ in 0..600 {
            let (status, body) = self.listed(n).await;
            assert_eq!(status, 200, "{body}");
            let ids: Vec<String> = body["approvals"]
                .as_array()
                .expect("a list")
                .iter()
                .map(|a| a["id"].as_str().expect("an id").to_owned())
                .collect();
            if ids.len() == count {
                return ids;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("replica {n} never listed {count} held calls");
    }

    /// `POST /approvals/{id}` on replica `n`: the status.
    async fn decide(&self, n: usize, id: &str, body: Value) -> u16 {
        self.http
            .post(format!("{}/approvals/{id}", self.admins[n]))
            .header("authorization", format!("Bearer {ALICE}"))
            .json(&body)
            .send()
            .await
            .expect("POST /approvals/{id}")
            .status()
            .as_u16()
    }

    /// The replica that holds the call `id` (it logs it).
    async fn holder(&self, id: &str) -> usize {
        let said = format!("call {id} (");
        for _ in 0..600 {
            for (n, replica) in self.replicas.iter().enumerate() {
                if replica.log_lines().iter().any(|line| line.contains(&said)) {
                    return n;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no replica says it holds {id}");
    }
}

/// The admin API's base URL, from the gateway's log.
async fn admin_url(gateway: &HttpGateway) -> String {
    let line = gateway.wait_for_log(&["admin API at http://"]).await;
    let at = line.find("http://").expect("url");
    line[at..].split_whitespace().next().expect("url").to_owned()
}

/// `fx__env_get` of `name` in a task: the result's text, or the error.
fn env_get(client: &Client, name: &str) -> tokio::task::JoinHandle<Result<String, String>> {
    let peer = client.peer().clone();
    let arguments = object(json!({ "name": name }));
    tokio::spawn(async move {
        let call = CallToolRequestParams::new("fx__env_get").with_arguments(arguments);
        match peer.call_tool(call).await {
            Ok(result) if result.is_error == Some(true) => Err(first_text(&result)),
            Ok(result) => Ok(first_text(&result)),
            Err(error) => Err(error.to_string()),
        }
    })
}

async fn finished(call: tokio::task::JoinHandle<Result<String, String>>) -> Result<String, String> {
    tokio::time::timeout(Duration::from_secs(60), call)
        .await
        .expect("the call ends in time")
        .unwrap()
}

#[tokio::test]
async fn replicas_a_call_held_on_one_replica_is_decided_on_the_other() {
    let replicas = Replicas::start().await;
    let client = http_client(&replicas.url()).await;
    for (round, decision) in ["allow", "deny"].into_iter().enumerate() {
        let call = env_get(&client, "HOME");
        // Every replica lists it, whichever holds it.
        let ids = replicas.wait_listed(0, 1).await;
        assert_eq!(replicas.wait_listed(1, 1).await, ids, "round {round}");
        let holder = replicas.holder(&ids[0]).await;
        let other = 1 - holder;
        let body = json!({ "decision": decision, "reason": "not from here" });
        let body = if decision == "allow" { json!({ "decision": "allow" }) } else { body };
        assert_eq!(replicas.decide(other, &ids[0], body).await, 200);
        // Decided once.
        assert_eq!(replicas.decide(holder, &ids[0], json!({"decision": "deny"})).await, 404);
        match (decision, finished(call).await) {
            ("allow", Ok(_)) => {}
            ("deny", Err(text)) => assert!(text.contains("not from here"), "{text}"),
            (_, outcome) => panic!("{decision}: {outcome:?}"),
        }
        replicas.wait_listed(holder, 0).await;
    }
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn replicas_a_held_call_outlives_its_replica_and_is_decided_on_the_survivor() {
    let mut replicas = Replicas::start().await;
    let client = http_client(&replicas.url()).await;
    let call = env_get(&client, "HOME");
    let ids = replicas.wait_listed(0, 1).await;
    let holder = replicas.holder(&ids[0]).await;
    let dead = replicas.replicas.remove(holder);
    let _ = replicas.admins.remove(holder);
    assert!(!dead.kill().await.success(), "killed");
    // The call in flight on the dead replica fails; it does not hang.
    assert!(finished(call).await.is_err(), "the call on the dead replica fails");
    replicas.balancer.wait_down(holder + 1).await;
    // Still held, as the survivor sees it; decided there.
    assert_eq!(replicas.wait_listed(0, 1).await, ids);
    assert_eq!(replicas.decide(0, &ids[0], json!({"decision": "allow"})).await, 200);
    replicas.wait_listed(0, 0).await;
    // The client sends the same call again (its session goes on at the survivor): it runs.
    let again = finished(env_get(&client, "HOME")).await;
    assert!(again.is_ok(), "{again:?}");
    // Once: the next one is held again.
    let third = env_get(&client, "HOME");
    replicas.wait_listed(0, 1).await;
    third.abort();
}

#[tokio::test]
async fn replicas_without_redis_a_held_call_is_refused_at_once_and_held_again_after() {
    let mut replicas = Replicas::start().await;
    let client = http_client(&replicas.url()).await;
    replicas.redis.stop().await;
    let started = tokio::time::Instant::now();
    let refused = finished(env_get(&client, "HOME")).await;
    let text = refused.expect_err("refused");
    assert!(text.contains("cannot be held for approval now"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(20), "fails fast: {:?}", started.elapsed());
    let (status, body) = replicas.listed(0).await;
    assert_eq!(status, 503, "{body}");
    // A call that needs no approval goes on as ever.
    let echo = client
        .peer()
        .call_tool(
            CallToolRequestParams::new("fx__echo").with_arguments(object(json!({"text": "hi"}))),
        )
        .await
        .expect("echo");
    assert_eq!(first_text(&echo), "hi");
    replicas.redis.restart().await;
    let call = env_get(&client, "HOME");
    let ids = replicas.wait_listed(1, 1).await;
    assert_eq!(replicas.decide(1, &ids[0], json!({"decision": "allow"})).await, 200);
    assert!(finished(call).await.is_ok());
}

/// A contract approved on one replica's admin API is pinned by the other, in its own lock
/// file (each replica here has its own folder, as on two machines), and the tool it withheld
/// as unknown is listed there too.
#[tokio::test]
async fn replicas_a_contract_approved_on_one_replica_is_pinned_on_the_other() {
    let redis = RedisServer::start().await;
    let text = format!(
        "{}\n\
         [[pipeline]]\nkind = \"integrity\"\nunknown = \"block\"\n\
         poisoning = {{ quarantine = \"off\" }}\n\n\
         [admin]\nlisten = \"127.0.0.1:0\"\ntokens = {{ alice = \"{ALICE}\" }}\n\n\
         [state]\nbackend = {}\nshared_key = {}\n",
        fixture_server("fx", "stdio", None),
        toml_str(&redis.url()),
        toml_str(SHARED_KEY),
    );
    let (one, two) = (ConfigDir::new(&text), ConfigDir::new(&text));
    let (one_path, two_path) = (one.path(), two.path());
    let (first, second) =
        tokio::join!(HttpGateway::start(&one_path), HttpGateway::start(&two_path));
    let admin = admin_url(&first).await;
    second.wait_for_log(&["pinning what the other replicas approve"]).await;
    let client = http_client(&second.url).await;
    let listed = |client: &Client| {
        let peer = client.peer().clone();
        async move {
            let tools = peer.list_all_tools().await.expect("tools/list");
            tools.iter().any(|tool| tool.name == "fx__echo")
        }
    };
    assert!(!listed(&client).await, "unknown, withheld on the second replica");

    let http = reqwest::Client::new();
    let approve = |digest: String| {
        http.post(format!("{admin}/integrity/fx__echo/approve"))
            .header("authorization", format!("Bearer {ALICE}"))
            .json(&json!({ "digest": digest }))
            .send()
    };
    // The digest of the contract, as a refusal of a stale one tells it.
    let stale = approve(format!("sha256:{}", "0".repeat(64))).await.expect("POST");
    assert_eq!(stale.status(), 409);
    let digest = stale.json::<Value>().await.expect("JSON")["digest"]
        .as_str()
        .expect("the digest")
        .to_owned();
    assert_eq!(approve(digest.clone()).await.expect("POST").status(), 200);

    second.wait_for_log(&["contract approved on another replica, pinned here too"]).await;
    let lock = std::fs::read_to_string(two_path.with_file_name("toolgate.lock"))
        .expect("the second replica's own lock file");
    assert!(lock.contains(&digest), "{lock}");
    assert!(listed(&client).await, "listed on the second replica now");
    client.cancel().await.expect("close");
}
