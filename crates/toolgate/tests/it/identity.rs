//! Who is calling, on the HTTP front of the built binary: API keys (a request without one is
//! 401 and says where to authenticate), the principal a key proves in the audit log, sessions
//! that belong to who opened them, and the refusal to serve beyond loopback without `[auth]`.

use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

use crate::support::*;

const ACCEPT: &str = "application/json, text/event-stream";

/// Two keys of tenant `acme` (`ci` in group `deploy`, `ops`), `auth` more lines of `[auth]`,
/// the fixture as `fx`, an audit log; the keys, in that order.
fn keyed_config(auth: &str) -> (ConfigDir, String, String) {
    let ci = toolgate_auth::generate_key().expect("a key");
    let ops = toolgate_auth::generate_key().expect("a key");
    let text = format!(
        "{}\n[audit]\nfile = \"audit.jsonl\"\n\n[auth]\n{auth}\n[auth.api_keys]\n{}\n{}\n",
        fixture_server("fx", "stdio", None),
        ci.config_line("ci", &["deploy".to_owned()], Some("acme")),
        ops.config_line("ops", &[], Some("acme")),
    );
    (ConfigDir::new(&text), ci.key, ops.key)
}

/// POSTs `message` with `key` (and `session`): status, `WWW-Authenticate`, session id, body.
async fn post(
    url: &str,
    key: Option<&str>,
    session: Option<&str>,
    message: Value,
) -> (u16, Option<String>, Option<String>, String) {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", ACCEPT)
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let response = request.body(message.to_string()).send().await.expect("answered");
    let header =
        |name: &str| response.headers().get(name).map(|v| v.to_str().expect("ascii").to_owned());
    let (challenge, session) = (header("www-authenticate"), header("mcp-session-id"));
    (response.status().as_u16(), challenge, session, response.text().await.expect("body"))
}

fn initialize() -> Value {
    json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}
        }
    })
}

fn ping() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})
}

/// An MCP client (rmcp) sending `key`.
async fn client_with_key(url: &str, key: &str) -> Client {
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(key);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("client connects with its key")
}

#[tokio::test]
async fn without_a_key_a_request_is_401_and_with_one_it_is_served_as_the_key() {
    let (config, ci, _) = keyed_config("");
    let gateway = HttpGateway::start(&config.path()).await;

    let (status, challenge, session, body) = post(&gateway.url, None, None, initialize()).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(challenge.as_deref(), Some("Bearer"), "keys only: no issuer to name");
    assert_eq!(session, None, "no session for nobody");
    assert!(body.contains("needs a credential"), "{body}");

    let (status, challenge, _, body) =
        post(&gateway.url, Some("tg_wrong"), None, initialize()).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(challenge.as_deref(), Some("Bearer error=\"invalid_token\""));

    let client = client_with_key(&gateway.url, &ci).await;
    let result = client
        .call_tool(
            CallToolRequestParams::new("fx__echo").with_arguments(object(json!({"text": "hi"}))),
        )
        .await
        .expect("the call is served");
    assert_eq!(first_text(&result), "hi");
    client.cancel().await.expect("closes");
    assert!(gateway.terminate().await.success());

    let audit = std::fs::read_to_string(config.dir().join("audit.jsonl")).expect("the audit log");
    let records: Vec<Value> =
        audit.lines().map(|line| serde_json::from_str(line).expect("JSON")).collect();
    let call = records
        .iter()
        .find(|r| r["exposed"] == "fx__echo" && r["principal"].is_string())
        .unwrap_or_else(|| panic!("a record of the call: {audit}"));
    assert_eq!(call["principal"], "key:ci@acme", "{call}");
    assert_eq!(call["tenant"], "acme", "{call}");
    assert_eq!(call["groups"], json!(["deploy"]), "{call}");
    assert!(!audit.contains(&ci), "the key itself is never written");
}

#[tokio::test]
async fn a_session_is_not_found_with_another_principals_key() {
    let (config, ci, ops) = keyed_config("");
    let gateway = HttpGateway::start(&config.path()).await;
    let (status, _, session, body) = post(&gateway.url, Some(&ci), None, initialize()).await;
    assert_eq!(status, 200, "{body}");
    let session = session.expect("a session id");

    // Same tenant, another key: the session is not theirs, as if it did not exist.
    let (status, _, _, body) = post(&gateway.url, Some(&ops), Some(&session), ping()).await;
    assert_eq!(status, 404, "{body}");
    let stream = reqwest::Client::new()
        .get(&gateway.url)
        .bearer_auth(&ops)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .expect("answered");
    assert_eq!(stream.status().as_u16(), 404, "nor its stream");
    let delete = |key: &str| {
        reqwest::Client::new()
            .delete(&gateway.url)
            .bearer_auth(key)
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
    };
    assert_eq!(delete(&ops).await.expect("answered").status().as_u16(), 404, "nor to end");

    // Its owner still has it, and may end it.
    let (status, _, _, body) = post(&gateway.url, Some(&ci), Some(&session), ping()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(delete(&ci).await.expect("answered").status().as_u16(), 204);
    assert!(gateway.terminate().await.success());
}

#[tokio::test]
async fn anonymous_requests_are_served_only_when_allowed_and_the_first_line_says_so() {
    let (config, ci, _) = keyed_config("allow_anonymous = true\n");
    let gateway = HttpGateway::start(&config.path()).await;
    let first = gateway.wait_for_log(&["allow_anonymous"]).await;
    assert!(first.contains("anonymous:anonymous"), "{first}");
    let (status, _, _, body) = post(&gateway.url, None, None, initialize()).await;
    assert_eq!(status, 200, "anonymous is let in: {body}");
    let (status, _, _, body) =
        post(&gateway.url, Some(&format!("{ci}x")), None, initialize()).await;
    assert_eq!(status, 401, "a wrong key is still refused: {body}");
    assert!(gateway.terminate().await.success());
}

#[tokio::test]
async fn serving_beyond_loopback_needs_auth_or_a_word_that_anyone_may_call() {
    // Refused before anything is bound: no traffic leaves this machine.
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let path = config.path();
    let path = path.to_str().expect("UTF-8 path");
    let output = run_toolgate(&["serve", "--config", path, "--listen", "0.0.0.0:0"]).await;
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("refusing to serve on 0.0.0.0:0 without [auth]"), "{stderr}");
    assert!(stderr.contains("allow_anonymous"), "says how to mean it: {stderr}");

    let config = ConfigDir::new(&format!(
        "{}\n[auth]\nissuer = \"https://id.example\"\n",
        fixture_server("fx", "stdio", None)
    ));
    let path = config.path();
    let path = path.to_str().expect("UTF-8 path");
    let output = run_toolgate(&["serve", "--config", path, "--listen", "0.0.0.0:0"]).await;
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("[auth] audience is needed"), "{stderr}");
}

/// Two tenants on one gateway: each lists and calls only its own servers (a server of the
/// other is not there at all, not merely refused), and a server no tenant names is for callers
/// without a tenant.
#[tokio::test]
async fn two_tenants_on_one_gateway_do_not_see_each_others_servers() {
    let acme = toolgate_auth::generate_key().expect("a key");
    let globex = toolgate_auth::generate_key().expect("a key");
    let loner = toolgate_auth::generate_key().expect("a key");
    let text = format!(
        "{}{}{}\n[tenants.acme]\nservers = [\"a*\"]\n\n[tenants.globex]\nservers = [\"b\"]\n\n\
         [auth.api_keys]\n{}\n{}\n{}\n",
        fixture_server("a", "stdio", None),
        fixture_server("b", "stdio", None),
        fixture_server("shared", "stdio", None),
        acme.config_line("acme-ci", &[], Some("acme")),
        globex.config_line("globex-ci", &[], Some("globex")),
        loner.config_line("loner", &[], None),
    );
    let config = ConfigDir::new(&text);
    let gateway = HttpGateway::start(&config.path()).await;

    let servers_seen = async |key: &str| {
        let client = client_with_key(&gateway.url, key).await;
        let tools = client.list_all_tools().await.expect("tools/list");
        let mut servers: Vec<String> = tools
            .iter()
            .filter_map(|tool| tool.name.split_once("__").map(|(server, _)| server.to_owned()))
            .collect();
        servers.dedup();
        (client, servers)
    };
    let (acme_client, seen) = servers_seen(&acme.key).await;
    assert_eq!(seen, ["a"], "acme sees its server only");
    let (globex_client, seen) = servers_seen(&globex.key).await;
    assert_eq!(seen, ["b"]);
    let (loner_client, seen) = servers_seen(&loner.key).await;
    assert_eq!(seen, ["shared"], "no tenant: what no tenant names");

    let echo = |name: &str| {
        CallToolRequestParams::new(name.to_owned()).with_arguments(object(json!({"text": "x"})))
    };
    let own = acme_client.call_tool(echo("a__echo")).await.expect("its own tool");
    assert_eq!(first_text(&own), "x");
    for (client, other) in
        [(&acme_client, "b__echo"), (&globex_client, "a__echo"), (&loner_client, "a__echo")]
    {
        let error = client.call_tool(echo(other)).await.expect_err("another tenant's tool");
        let text = error.to_string();
        assert!(text.contains("unknown tool") || text.contains("Unknown tool"), "{text}");
        assert!(text.contains(other), "answered as for a name that does not exist: {text}");
    }
    for client in [acme_client, globex_client, loner_client] {
        client.cancel().await.expect("closes");
    }
    assert!(gateway.terminate().await.success());
}

/// The admin API takes the front's credentials with `[auth.roles]`: an approver of one tenant
/// lists and decides that tenant's held calls only, cannot reach the whole gateway's pipeline,
/// and a tenant's admin reads only its tenant's events; a caller with no role is refused.
#[tokio::test]
async fn approvers_and_admins_are_principals_with_roles_within_their_tenant() {
    let keys: Vec<(&str, toolgate_auth::NewKey, &[&str], &str)> = vec![
        ("dev", toolgate_auth::generate_key().unwrap(), &[], "acme"),
        ("gdev", toolgate_auth::generate_key().unwrap(), &[], "globex"),
        ("oncall-acme", toolgate_auth::generate_key().unwrap(), &["oncall"], "acme"),
        ("oncall-globex", toolgate_auth::generate_key().unwrap(), &["oncall"], "globex"),
        ("acme-admin", toolgate_auth::generate_key().unwrap(), &[], "acme"),
        ("globex-admin", toolgate_auth::generate_key().unwrap(), &[], "globex"),
    ];
    let lines: Vec<String> = keys
        .iter()
        .map(|(name, key, groups, tenant)| {
            let groups: Vec<String> = groups.iter().map(|g| (*g).to_owned()).collect();
            key.config_line(name, &groups, Some(tenant))
        })
        .collect();
    let config = ConfigDir::new(&format!(
        "{}\n[[pipeline]]\nkind = \"policy\"\ndefault = \"allow\"\n\
         rules = [{{ tools = [\"env_get\"], decision = \"ask\", reason = \"it reads the environment\" }}]\n\n\
         [[pipeline]]\nkind = \"approval\"\nvia = \"external\"\nseparate_duties = true\n\n\
         [admin]\nlisten = \"127.0.0.1:0\"\n\n\
         [tenants.acme]\nservers = [\"fx\"]\n[tenants.globex]\nservers = [\"fx\"]\n\n\
         [auth.roles]\napprovers = [\"group:oncall\"]\nadmins = [\"key:*-admin\"]\n\n\
         [auth.api_keys]\n{}\n",
        fixture_server("fx", "stdio", None),
        lines.join("\n"),
    ));
    let key = |name: &str| keys.iter().find(|k| k.0 == name).expect("a key").1.key.clone();
    let gateway = HttpGateway::start(&config.path()).await;
    let line = gateway.wait_for_log(&["admin API at http://"]).await;
    let admin = line[line.find("http://").expect("url")..]
        .split_whitespace()
        .next()
        .expect("url")
        .to_owned();
    let http = reqwest::Client::new();
    let get =
        |path: &str, who: &str| http.get(format!("{admin}{path}")).bearer_auth(key(who)).send();

    // The tenants' admins watch the calls' events.
    let acme_events = get("/events?pattern=tools/call/*", "acme-admin").await.expect("GET");
    assert_eq!(acme_events.status(), 200);
    let mut acme_events = crate::approvals::sse_events(acme_events);
    let globex_events = get("/events?pattern=tools/call/*", "globex-admin").await.expect("GET");
    let mut globex_events = crate::approvals::sse_events(globex_events);

    // An acme caller's call is held.
    let dev = client_with_key(&gateway.url, &key("dev")).await;
    let peer = dev.peer().clone();
    let held = tokio::spawn(async move {
        let params = CallToolRequestParams::new("fx__env_get")
            .with_arguments(object(json!({"name": "HOME"})));
        peer.call_tool(params).await.expect("a tool result")
    });
    gateway.wait_for_log(&["is held for approval"]).await;

    let listed = |who: &'static str| {
        let get = &get;
        async move {
            let response = get("/approvals", who).await.expect("GET");
            (response.status().as_u16(), response.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let (status, globex_view) = listed("oncall-globex").await;
    assert_eq!((status, globex_view["approvals"].as_array().map(Vec::len)), (200, Some(0)));
    let (status, acme_view) = listed("oncall-acme").await;
    assert_eq!(status, 200);
    let entry = &acme_view["approvals"][0];
    assert_eq!(entry["caller"], "key:dev@acme", "{acme_view}");
    let id = entry["id"].as_str().expect("an id").to_owned();
    assert_eq!(listed("dev").await.0, 403, "a caller with no role");
    assert_eq!(get("/approvals", "dev").await.unwrap().status(), 403);
    assert_eq!(http.get(format!("{admin}/approvals")).send().await.unwrap().status(), 401);

    let decide = |who: &str| {
        http.post(format!("{admin}/approvals/{id}"))
            .bearer_auth(key(who))
            .json(&json!({"decision": "allow"}))
            .send()
    };
    assert_eq!(decide("oncall-globex").await.unwrap().status(), 404, "not there for globex");
    assert_eq!(decide("dev").await.unwrap().status(), 403, "no role");
    let granted = decide("oncall-acme").await.expect("POST");
    assert_eq!(granted.status(), 200);
    let granted: Value = granted.json().await.expect("JSON");
    assert_eq!(granted["by"], "key:oncall-acme@acme");
    let result = held.await.expect("the held call ends");
    assert_ne!(result.is_error, Some(true), "{result:?}");

    // The pipeline is the whole gateway's: not for an approver, nor a tenant's admin.
    assert_eq!(get("/interceptors", "oncall-acme").await.unwrap().status(), 403);
    assert_eq!(get("/interceptors", "acme-admin").await.unwrap().status(), 403);

    // Then a globex call: the globex admin's first event is it, not acme's earlier ones.
    let gdev = client_with_key(&gateway.url, &key("gdev")).await;
    gdev.call_tool(
        CallToolRequestParams::new("fx__echo").with_arguments(object(json!({"text": "g"}))),
    )
    .await
    .expect("served");
    let (_, first) = crate::approvals::next_event(&mut globex_events).await;
    assert_eq!(first["principal"], "key:gdev@globex", "{first}");
    let (_, first) = crate::approvals::next_event(&mut acme_events).await;
    assert_eq!(first["principal"], "key:dev@acme", "{first}");
    dev.cancel().await.expect("closes");
    gdev.cancel().await.expect("closes");
    assert!(gateway.terminate().await.success());
}

/// A result `truncate` kept for one tenant's caller is not there for another tenant's, though
/// both reach the server it came from and call `toolgate__read_result` with its handle.
#[tokio::test]
async fn a_kept_result_is_read_only_by_the_principal_it_was_kept_for() {
    let acme = toolgate_auth::generate_key().expect("a key");
    let globex = toolgate_auth::generate_key().expect("a key");
    let text = format!(
        "{}\n[[pipeline]]\nkind = \"truncate\"\nmax_tokens = 500\n\n\
         [tenants.acme]\nservers = [\"fx\"]\n[tenants.globex]\nservers = [\"fx\"]\n\n\
         [auth.api_keys]\n{}\n{}\n",
        fixture_server("fx", "stdio", None),
        acme.config_line("acme-ci", &[], Some("acme")),
        globex.config_line("acme-ci-twin", &[], Some("globex")),
    );
    let config = ConfigDir::new(&text);
    let gateway = HttpGateway::start(&config.path()).await;
    let owner = client_with_key(&gateway.url, &acme.key).await;
    let long: String = (0..3000).map(|i| format!("word{i} ")).collect();
    let cut = owner
        .call_tool(
            CallToolRequestParams::new("fx__echo").with_arguments(object(json!({"text": long}))),
        )
        .await
        .expect("served");
    let meta = cut.meta.as_ref().expect("_meta: the result was cut");
    let handle = meta.0["io.toolgate/truncated"]["handle"].as_str().expect("a handle").to_owned();
    let read = |handle: &str| {
        CallToolRequestParams::new("toolgate__read_result")
            .with_arguments(object(json!({"handle": handle})))
    };
    let page = owner.call_tool(read(&handle)).await.expect("served");
    assert_ne!(page.is_error, Some(true), "its owner reads it: {page:?}");

    let other = client_with_key(&gateway.url, &globex.key).await;
    let refused = other.call_tool(read(&handle)).await.expect("a tool result");
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    assert!(first_text(&refused).contains("no kept result has the handle"), "{refused:?}");
    owner.cancel().await.expect("closes");
    other.cancel().await.expect("closes");
    assert!(gateway.terminate().await.success());
}

/// A tenant's own pipeline entries run for its callers only: its policy hides and refuses a
/// tool that another tenant, on the same server, lists and calls.
#[tokio::test]
async fn a_tenants_own_pipeline_entries_apply_to_its_callers_only() {
    let acme = toolgate_auth::generate_key().expect("a key");
    let globex = toolgate_auth::generate_key().expect("a key");
    let text = format!(
        "{}\n[tenants.acme]\nservers = [\"fx\"]\n\n\
         [[tenants.acme.pipeline]]\nkind = \"policy\"\ndefault = \"allow\"\n\
         rules = [{{ tools = [\"echo\"], decision = \"deny\", reason = \"not for acme\" }}]\n\n\
         [tenants.globex]\nservers = [\"fx\"]\n\n[auth.api_keys]\n{}\n{}\n",
        fixture_server("fx", "stdio", None),
        acme.config_line("acme-ci", &[], Some("acme")),
        globex.config_line("globex-ci", &[], Some("globex")),
    );
    let config = ConfigDir::new(&text);
    let gateway = HttpGateway::start(&config.path()).await;
    let echo =
        || CallToolRequestParams::new("fx__echo").with_arguments(object(json!({"text": "hi"})));
    let lists_echo = async |client: &Client| {
        let tools = client.list_all_tools().await.expect("tools/list");
        tools.iter().any(|tool| tool.name == "fx__echo")
    };

    let acme_client = client_with_key(&gateway.url, &acme.key).await;
    assert!(!lists_echo(&acme_client).await, "acme's policy hides it");
    let refused = acme_client.call_tool(echo()).await.expect("a tool result");
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    assert!(first_text(&refused).contains("not for acme"), "{refused:?}");

    let globex_client = client_with_key(&gateway.url, &globex.key).await;
    assert!(lists_echo(&globex_client).await, "acme's entries are not globex's");
    let served = globex_client.call_tool(echo()).await.expect("served");
    assert_eq!(first_text(&served), "hi");
    acme_client.cancel().await.expect("closes");
    globex_client.cancel().await.expect("closes");
    assert!(gateway.terminate().await.success());
}

/// A client's credential ends at toolgate: an HTTP upstream called on its behalf never sees
/// it (the MCP authorization specification forbids passing a token on).
#[tokio::test]
async fn the_clients_credential_never_reaches_an_upstream() {
    let upstream = crate::recording_upstream::RecordingUpstream::start().await;
    let key = toolgate_auth::generate_key().expect("a key");
    let text = format!(
        "{}\n[auth.api_keys]\n{}\n",
        fixture_server("fx", "http", Some(&upstream.url)),
        key.config_line("ci", &[], None),
    );
    let config = ConfigDir::new(&text);
    let gateway = HttpGateway::start(&config.path()).await;
    let client = client_with_key(&gateway.url, &key.key).await;
    let result = client
        .call_tool(
            CallToolRequestParams::new("fx__echo").with_arguments(object(json!({"text": "x"}))),
        )
        .await
        .expect("served");
    assert_eq!(first_text(&result), "x");
    upstream.wait_for_calls("echo", 1).await;
    let seen = upstream.authorizations();
    assert!(seen.iter().all(|value| !value.contains(&key.key)), "passed on: {seen:?}");
    assert!(seen.is_empty(), "the upstream needs no credential and got one: {seen:?}");
    client.cancel().await.expect("closes");
    assert!(gateway.terminate().await.success());
}
