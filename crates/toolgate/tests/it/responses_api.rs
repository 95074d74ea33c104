//! `/v1/responses` end to end: `toolgate serve` with `[gateway] llm_api = true`, the fixture
//! MCP server as `fx`, the fake LLM as the model, and the official `openai` Python SDK as the
//! application (`tests/clients/py_responses.py`, which validates every response, item and
//! event against the SDK's types). Here: what the model was sent, what the audit log and the
//! store hold.

use std::time::Duration;

use serde_json::Value;
use toolgate_testkit::fake_llm::{FakeLlm, Request, Script, Turn};

use crate::deps;
use crate::support::*;

/// The model's turns, in the order the client script asks for them.
fn turns() -> Vec<Turn> {
    vec![
        // 1. a call without approval, then the answer
        Turn::tool_call("fx__echo", r#"{"text":"hi"}"#),
        Turn::text("The echo said hi."),
        // 2. continued: a tool error
        Turn::tool_call("fx__fail", r#"{"message":"expected"}"#),
        Turn::text("It failed."),
        // 3. approval asked, approved, answered
        Turn::tool_call("fx__echo", r#"{"text":"approve me"}"#),
        Turn::text("Done after approval."),
        // 4. approval asked, denied, answered
        Turn::tool_call("fx__echo", r#"{"text":"deny me"}"#),
        Turn::text("Understood."),
        // 5. streamed
        Turn::tool_call("fx__echo", r#"{"text":"stream"}"#),
        Turn::text("Streamed answer."),
        // 6. the application's function, then its answer
        Turn::tool_call("get_weather", r#"{"city":"Paris"}"#),
        Turn::text("It is sunny in Paris."),
        // 9. chat: a hosted call run here, then the answer
        Turn::tool_call("fx__echo", r#"{"text":"chat"}"#),
        Turn::text("Chat echoed."),
        // 10. chat, streamed: the application's function, then its answer
        Turn::tool_call("get_weather", r#"{"city":"Rome"}"#),
        Turn::text("Sunny via chat."),
        // 11. a server whose response_format makes its echo a web_search_call
        Turn::tool_call("fy__echo", r#"{"text":"cats"}"#),
        Turn::text("Searched."),
    ]
}

fn config(fake: &FakeLlm) -> ConfigDir {
    ConfigDir::new(&format!(
        "{}\n{}response_format = {{ echo = \"web_search_call\" }}\n\n\
         [gateway]\nllm_api = true\n\n[agent]\nprovider = \"compatible\"\nbase_url = {}\n\
         model = \"unused-default\"\n\n[llm]\nstore = \"sqlite:responses.db\"\n\n\
         [audit]\nfile = \"audit.jsonl\"\n",
        fixture_server("fx", "stdio", None),
        fixture_server("fy", "stdio", None),
        toml_str(&fake.base_url()),
    ))
}

/// Runs `tests/clients/SCRIPT` with the test venv's Python against the gateway at `origin`
/// (its `/v1`); the JSON report it prints last.
async fn run_client(script: &str, origin: &str) -> Value {
    let client =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/clients").join(script);
    let base_url = format!("{origin}/v1");
    let (ok, printed) = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::task::spawn_blocking(move || deps::run_python(&client, &[base_url.into()])),
    )
    .await
    .expect("the client finishes in time")
    .expect("the client ran");
    assert!(ok, "{script} failed:\n{printed}");
    let last = printed.lines().rfind(|line| line.starts_with('{')).unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("a JSON report ({e}):\n{printed}"))
}

/// The text of every tool result a request carried to the model.
fn tool_results(request: &Request) -> Vec<String> {
    request.body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_sdk_runs_hosted_mcp_tools_with_approvals_through_the_gateway() {
    let fake = FakeLlm::start(Script::turns(turns())).await.expect("the fake LLM starts");
    let config = config(&fake);
    let gateway = HttpGateway::start(&config.path()).await;
    let origin = gateway.url.strip_suffix("/mcp").expect("an /mcp URL").to_owned();
    let report = run_client("py_responses.py", &origin).await;
    assert_eq!(report["negative_control"], "refused");
    assert_eq!(report["deleted"], true);

    let requests = fake.requests();
    assert_eq!(requests.len(), turns().len(), "one model request per scripted turn");
    // The model saw the tool's output, the tool's error, and the application's denial.
    assert!(tool_results(&requests[1]).iter().any(|r| r.contains("hi")), "{:?}", requests[1].body);
    assert!(tool_results(&requests[3]).iter().any(|r| r.contains("expected")));
    let denial = tool_results(&requests[7]);
    assert!(
        denial.iter().any(|r| r.contains("denied") && r.contains("not this one")),
        "the denial reaches the model: {denial:?}"
    );
    assert!(tool_results(&requests[11]).iter().any(|r| r == "sunny"));
    // The model is offered the server's tools under the gateway's names, and the function.
    let offered: Vec<&str> = requests[10].body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["function"]["name"].as_str())
        .collect();
    assert_eq!(offered, ["get_weather"], "only what the request named");
    // A continued conversation carries what came before.
    let second_turn_messages = requests[2].body["messages"].as_array().expect("messages").len();
    assert!(second_turn_messages >= 5, "history of the first response continued");

    // Every call went through the pipeline's audit, as the caller.
    let audit = std::fs::read_to_string(config.dir().join("audit.jsonl")).expect("audit log");
    let calls = audit.lines().filter(|line| line.contains("tools/call")).count();
    assert!(calls >= 4, "calls audited:\n{audit}");
    assert!(audit.contains("approve me"), "the approved call ran and was audited");
    assert!(!audit.contains("deny me"), "the denied call never reached the gateway");
    // The request's credentials are stored nowhere.
    let store = std::fs::read(config.dir().join("responses.db")).expect("the store");
    let needle = b"never-stored-token";
    assert!(!store.windows(needle.len()).any(|w| w == needle), "a credential was stored");
    gateway.terminate().await;
}

/// POSTs a Responses request as `key`; the status and the body.
async fn create(origin: &str, key: Option<&str>, body: Value) -> (u16, Value) {
    let mut request = reqwest::Client::new().post(format!("{origin}/v1/responses")).json(&body);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.expect("answered");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn kinds(response: &Value) -> Vec<&str> {
    response["output"]
        .as_array()
        .expect("output")
        .iter()
        .map(|item| item["type"].as_str().expect("type"))
        .collect()
}

/// Two tenants behind API keys, the gateway's own `ask` rule, a tenant's own policy, and a
/// server that does not answer in time: each as a Responses client sees it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_policies_and_the_gateways_own_approvals_reach_responses_clients() {
    let turns = vec![
        Turn::tool_call("fx__rich_echo", r#"{"text":"asked"}"#),
        Turn::text("Approved and ran."),
        Turn::tool_call("fx__echo", r#"{"text":"forbidden"}"#),
        Turn::text("Refused, as it should be."),
        Turn::tool_call("fx__slow", r#"{"steps":1,"step_ms":3000}"#),
        Turn::text("It timed out."),
        Turn::text("No tools today."),
        Turn::tool_call("fx__echo", r#"{"text":"forbidden"}"#),
        Turn::text("Globex may."),
        Turn::tool_call("fx__echo", r#"{"text":"one"}"#)
            .and_tool_call("fx__echo", r#"{"text":"two"}"#),
        Turn::text("Only one ran."),
        Turn::tool_call("fx__rich_echo", r#"{"text":"chat asks"}"#),
        Turn::text("Nobody could approve it."),
    ];
    let fake = FakeLlm::start(Script::turns(turns)).await.expect("the fake LLM starts");
    let acme = toolgate_auth::generate_key().expect("a key");
    let globex = toolgate_auth::generate_key().expect("a key");
    let config = ConfigDir::new(&format!(
        "{}timeout = \"500ms\"\n\n[servers.gone]\nurl = \"http://127.0.0.1:9/mcp\"\n\
         startup_timeout = \"2s\"\n\n[gateway]\nllm_api = true\n\n\
         [agent]\nprovider = \"compatible\"\nbase_url = {}\nmodel = \"m\"\n\n\
         [llm]\nstore = \"sqlite:responses.db\"\n\n\
         [[pipeline]]\nkind = \"policy\"\ndefault = \"allow\"\n\
         rules = [{{ tools = [\"rich_echo\"], decision = \"ask\", reason = \"rich echo needs a yes\" }}]\n\n\
         [[pipeline]]\nkind = \"approval\"\n\n\
         [tenants.acme]\nservers = [\"fx\", \"gone\"]\n\n\
         [[tenants.acme.pipeline]]\nkind = \"policy\"\ndefault = \"allow\"\n\
         rules = [{{ tools = [\"echo\"], when = {{ path = \"text\", matches = \"forbidden\" }}, \
         decision = \"deny\", reason = \"not that word\" }}]\n\n\
         [tenants.globex]\nservers = [\"fx\"]\n\n\
         [audit]\nfile = \"audit.jsonl\"\n\n[auth.api_keys]\n{}\n{}\n",
        fixture_server("fx", "stdio", None),
        toml_str(&fake.base_url()),
        acme.config_line("acme-app", &[], Some("acme")),
        globex.config_line("globex-app", &[], Some("globex")),
    ));
    let gateway = HttpGateway::start(&config.path()).await;
    let origin = gateway.url.strip_suffix("/mcp").expect("an /mcp URL").to_owned();
    let fx =
        serde_json::json!([{ "type": "mcp", "server_label": "fx", "require_approval": "never" }]);
    let ask = |input: &str| serde_json::json!({ "model": "m", "input": input, "tools": fx });

    // Without a key: refused, as on /mcp.
    let (status, _) = create(&origin, None, ask("hello")).await;
    assert_eq!(status, 401);
    // A page of another site that resolves to this address (DNS rebinding): refused.
    let rebound = reqwest::Client::new()
        .post(format!("{origin}/v1/responses"))
        .header("host", "attacker.example")
        .bearer_auth(&acme.key)
        .json(&ask("hello"))
        .send()
        .await
        .expect("answered");
    assert_eq!(rebound.status().as_u16(), 403);

    // The gateway's own ask rule: an approval request, though the request said "never".
    let (status, asked) = create(&origin, Some(&acme.key), ask("rich echo")).await;
    assert_eq!(status, 200, "{asked}");
    assert_eq!(kinds(&asked), ["mcp_list_tools", "mcp_approval_request"], "{asked}");
    let request = &asked["output"][1];
    assert_eq!(request["name"], "rich_echo");
    let approve = serde_json::json!({
        "model": "m", "previous_response_id": asked["id"], "tools": fx,
        "input": [{ "type": "mcp_approval_response", "approval_request_id": request["id"],
                    "approve": true }],
    });
    // Another tenant can neither continue nor read it.
    let (status, _) = create(&origin, Some(&globex.key), approve.clone()).await;
    assert_eq!(status, 404, "globex continues acme's response");
    let id = asked["id"].as_str().expect("id");
    let other = reqwest::Client::new()
        .get(format!("{origin}/v1/responses/{id}"))
        .bearer_auth(&globex.key)
        .send()
        .await
        .expect("answered");
    assert_eq!(other.status().as_u16(), 404);
    let (status, approved) = create(&origin, Some(&acme.key), approve).await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(kinds(&approved), ["mcp_call", "message"], "{approved}");
    assert_eq!(approved["output"][0]["status"], "completed", "{approved}");

    // Acme's own policy refuses; the model reads why.
    let (_, refused) = create(&origin, Some(&acme.key), ask("forbidden echo")).await;
    assert_eq!(kinds(&refused), ["mcp_list_tools", "mcp_call", "message"], "{refused}");
    let call = &refused["output"][1];
    assert_eq!(call["status"], "failed");
    assert_eq!(call["error"]["type"], "mcp_tool_execution_error", "{call}");
    assert!(call["error"].to_string().contains("not that word"), "{call}");

    // A server that does not answer in time: a failed call, not a hung response.
    let (_, slow) = create(&origin, Some(&acme.key), ask("slow")).await;
    let call = &slow["output"][1];
    assert_eq!(call["status"], "failed", "{slow}");

    // A server that could not be connected: listed with the error, the rest goes on; one of
    // another tenant is not named to this one.
    let gone = serde_json::json!([
        { "type": "mcp", "server_label": "gone", "require_approval": "never" },
    ]);
    let (status, down) = create(
        &origin,
        Some(&acme.key),
        serde_json::json!({ "model": "m", "input": "hello", "tools": gone }),
    )
    .await;
    assert_eq!(status, 200, "{down}");
    assert_eq!(down["output"][0]["type"], "mcp_list_tools", "{down}");
    assert!(down["output"][0]["error"].as_str().unwrap_or_default().contains("gone"), "{down}");
    let (status, hidden) = create(
        &origin,
        Some(&globex.key),
        serde_json::json!({ "model": "m", "input": "hello", "tools": gone }),
    )
    .await;
    assert_eq!(status, 400, "{hidden}");
    assert_eq!(hidden["error"]["param"], "tools[0].server_label", "{hidden}");

    // Globex has no such policy.
    let (_, allowed) = create(&origin, Some(&globex.key), ask("forbidden echo")).await;
    assert_eq!(allowed["output"][1]["status"], "completed", "{allowed}");

    // max_tool_calls: the second call of the turn is not run, and the model is told.
    let mut bounded = ask("two echoes");
    bounded["max_tool_calls"] = 1.into();
    let (_, bounded) = create(&origin, Some(&globex.key), bounded).await;
    assert_eq!(kinds(&bounded), ["mcp_list_tools", "mcp_call", "message"], "{bounded}");

    // Chat Completions cannot ask: the gateway's ask rule refuses, and the model reads why.
    let chat = reqwest::Client::new()
        .post(format!("{origin}/v1/chat/completions"))
        .bearer_auth(&acme.key)
        .json(&serde_json::json!({
            "model": "m", "messages": [{ "role": "user", "content": "rich echo" }], "tools": fx,
        }))
        .send()
        .await
        .expect("answered");
    assert_eq!(chat.status().as_u16(), 200);
    let chat: Value = chat.json().await.expect("JSON");
    assert_eq!(chat["choices"][0]["message"]["content"], "Nobody could approve it.", "{chat}");

    let requests = fake.requests();
    assert_eq!(requests.len(), 13, "one model request per turn");
    let not_run = tool_results(&requests[10]);
    assert!(not_run.iter().any(|r| r.contains("max_tool_calls")), "{not_run:?}");
    let refusal = tool_results(&requests[12]);
    assert!(refusal.iter().any(|r| r.contains("no way to ask")), "{refusal:?}");
    assert!(tool_results(&requests[3]).iter().any(|r| r.contains("not that word")));
    let audit = std::fs::read_to_string(config.dir().join("audit.jsonl")).expect("audit log");
    assert!(audit.contains("acme-app") && audit.contains("globex-app"), "callers audited");
    gateway.terminate().await;
}

/// The OpenAI Agents SDK's `HostedMCPTool`, with an `on_approval_request` callback that approves
/// one call and denies another; its Runner sends the conversation back each time instead of
/// continuing a stored response.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_sdk_hosted_mcp_tool_answers_approvals_through_its_callback() {
    let turns = vec![
        Turn::tool_call("fx__echo", r#"{"text":"approve me"}"#),
        Turn::text("It echoed."),
        Turn::tool_call("fx__echo", r#"{"text":"deny me"}"#),
        Turn::text("It was denied."),
    ];
    let fake = FakeLlm::start(Script::turns(turns)).await.expect("the fake LLM starts");
    let config = config(&fake);
    let gateway = HttpGateway::start(&config.path()).await;
    let origin = gateway.url.strip_suffix("/mcp").expect("an /mcp URL").to_owned();
    let report = run_client("py_agents_hosted_mcp.py", &origin).await;
    assert_eq!(report["runs"][0]["final"], "It echoed.", "{report}");
    assert_eq!(report["runs"][1]["final"], "It was denied.", "{report}");
    let items = |run: usize| report["runs"][run]["items"].to_string();
    assert!(items(0).contains("mcp_approval_response_item") && items(0).contains("tool_call_item"));
    assert!(!items(1).contains("tool_call_item"), "the denied call did not run: {report}");
    assert_eq!(report["asked"][0]["arguments"]["text"], "approve me", "{report}");
    assert_eq!(report["asked"][1]["arguments"]["text"], "deny me", "{report}");
    let requests = fake.requests();
    assert_eq!(requests.len(), 4, "one model request per turn");
    assert!(tool_results(&requests[1]).iter().any(|r| r.contains("approve me")));
    let denial = tool_results(&requests[3]);
    assert!(denial.iter().any(|r| r.contains("not this one")), "{denial:?}");
    let audit = std::fs::read_to_string(config.dir().join("audit.jsonl")).expect("audit log");
    assert!(!audit.contains("deny me"), "the denied call never ran");
    gateway.terminate().await;
}

/// The reference servers from the npm registry behind `/v1/responses`: server-memory and
/// server-filesystem over stdio, server-everything over streamable HTTP, all three called in
/// one model turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_servers_answer_hosted_calls() {
    let root = tempfile::tempdir().expect("temp dir");
    let root_path = root.path().canonicalize().expect("canonical");
    std::fs::write(root_path.join("note.txt"), "hello from a file").expect("write");
    let note = root_path.join("note.txt").to_string_lossy().into_owned();
    let memory_file = root_path.join("memory.jsonl").to_string_lossy().into_owned();
    let everything = deps::EverythingServer::start("streamableHttp").await;
    let turns = vec![
        Turn::tool_call(
            "mem__create_entities",
            r#"{"entities":[{"name":"toolgate","entityType":"project","observations":["a gateway"]}]}"#,
        )
        .and_tool_call("files__read_text_file", serde_json::json!({ "path": note }).to_string())
        .and_tool_call("ev__echo", r#"{"message":"hi"}"#),
        Turn::text("All three answered."),
    ];
    let fake = FakeLlm::start(Script::turns(turns)).await.expect("the fake LLM starts");
    let config = ConfigDir::new(&format!(
        "{}{}[servers.ev]\nurl = {}\n\n[gateway]\nllm_api = true\n\n[agent]\n\
         provider = \"compatible\"\nbase_url = {}\nmodel = \"m\"\n\n[llm]\nstore = \"off\"\n",
        deps::npm_stdio_server(
            "mem",
            "mcp-server-memory",
            &[],
            &[("MEMORY_FILE_PATH", &memory_file)]
        ),
        deps::npm_stdio_server(
            "files",
            "mcp-server-filesystem",
            &[&root_path.to_string_lossy()],
            &[]
        ),
        toml_str(&everything.url),
        toml_str(&fake.base_url()),
    ));
    let gateway = HttpGateway::start(&config.path()).await;
    let origin = gateway.url.strip_suffix("/mcp").expect("an /mcp URL").to_owned();
    let tool = |label: &str| serde_json::json!({ "type": "mcp", "server_label": label, "require_approval": "never" });
    let (status, response) = create(
        &origin,
        None,
        serde_json::json!({
            "model": "m", "input": "use them all", "store": false,
            "tools": [tool("mem"), tool("files"), tool("ev")],
        }),
    )
    .await;
    assert_eq!(status, 200, "{response}");
    assert_eq!(
        kinds(&response),
        [
            "mcp_list_tools",
            "mcp_list_tools",
            "mcp_list_tools",
            "mcp_call",
            "mcp_call",
            "mcp_call",
            "message"
        ],
        "{response}"
    );
    let output = response["output"].as_array().expect("output");
    for call in &output[3..6] {
        assert_eq!(call["status"], "completed", "{call}");
    }
    assert!(output[3]["output"].as_str().unwrap_or_default().contains("toolgate"), "{}", output[3]);
    assert!(output[4]["output"].as_str().unwrap_or_default().contains("hello from a file"));
    assert_eq!(output[5]["output"], "Echo: hi");
    let listed: Vec<&str> = output[1]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(listed.contains(&"read_text_file"), "listed by the server's own names: {listed:?}");
    assert!(std::fs::read_to_string(&memory_file).expect("memory file").contains("a gateway"));
    gateway.terminate().await;
}

const ADMIN_TOKEN: &str = "admin-token-5b1e";

/// Servers a request names by URL: server-everything over streamable HTTP, and server-memory
/// behind a second toolgate serving it over HTTP, reached through the gateway's pool, a
/// connection per tenant (the pool holds one: the other tenant's is closed), only where
/// `[llm] allowed_server_urls` allows, never the gateway itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_named_by_url_are_reached_through_the_pool_per_tenant() {
    let everything = deps::EverythingServer::start("streamableHttp").await;
    let memory_dir = tempfile::tempdir().expect("temp dir");
    let memory_file = memory_dir.path().join("memory.jsonl").to_string_lossy().into_owned();
    let inner = ConfigDir::new(&deps::npm_stdio_server(
        "mem",
        "mcp-server-memory",
        &[],
        &[("MEMORY_FILE_PATH", &memory_file)],
    ));
    let second = HttpGateway::start(&inner.path()).await;
    let turns = vec![
        Turn::tool_call("ev__echo", r#"{"message":"hi"}"#),
        Turn::text("Acme echoed."),
        Turn::tool_call("ev__echo", r#"{"message":"again"}"#),
        Turn::text("Globex echoed."),
        Turn::tool_call("mem__mem__read_graph", "{}"),
        Turn::text("The graph is empty."),
    ];
    let fake = FakeLlm::start(Script::turns(turns)).await.expect("the fake LLM starts");
    let acme = toolgate_auth::generate_key().expect("a key");
    let globex = toolgate_auth::generate_key().expect("a key");
    let config = ConfigDir::new(&format!(
        "{}\n[gateway]\nllm_api = true\n\n[agent]\nprovider = \"compatible\"\nbase_url = {}\n\
         model = \"m\"\n\n[llm]\nstore = \"off\"\nallowed_server_urls = [\"http://127.0.0.1:*\"]\n\n\
         [pool]\nmax_connections = 1\n\n[tenants.acme]\nservers = [\"fx\"]\n\n\
         [tenants.globex]\nservers = [\"fx\"]\n\n[audit]\nfile = \"audit.jsonl\"\n\n\
         [admin]\nlisten = \"127.0.0.1:0\"\ntokens = {{ ops = \"{ADMIN_TOKEN}\" }}\n\n\
         [auth.api_keys]\n{}\n{}\n",
        fixture_server("fx", "stdio", None),
        toml_str(&fake.base_url()),
        acme.config_line("acme-app", &[], Some("acme")),
        globex.config_line("globex-app", &[], Some("globex")),
    ));
    let gateway = HttpGateway::start(&config.path()).await;
    let origin = gateway.url.strip_suffix("/mcp").expect("an /mcp URL").to_owned();
    let admin_line = gateway.wait_for_log(&["admin API at http://"]).await;
    let admin = admin_line[admin_line.find("http://").expect("url")..]
        .split_whitespace()
        .next()
        .expect("url")
        .to_owned();
    let named = |label: &str, url: &str| {
        serde_json::json!({
            "model": "m", "input": "go", "store": false,
            "tools": [{ "type": "mcp", "server_label": label, "server_url": url,
                        "require_approval": "never", "headers": { "X-Trace": "t1" } }],
        })
    };

    let (status, first) = create(&origin, Some(&acme.key), named("ev", &everything.url)).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(kinds(&first), ["mcp_list_tools", "mcp_call", "message"], "{first}");
    assert_eq!(first["output"][1]["output"], "Echo: hi", "{first}");
    assert!(!first.to_string().contains("X-Trace"), "headers are not echoed");
    let (_, second_tenant) = create(&origin, Some(&globex.key), named("ev", &everything.url)).await;
    assert_eq!(second_tenant["output"][1]["output"], "Echo: again", "{second_tenant}");

    // Not allowed, not a URL the globs match, and the gateway itself: refused by field.
    let (status, refused) =
        create(&origin, Some(&acme.key), named("ev", "http://localhost:9/mcp")).await;
    assert_eq!((status, refused["error"]["param"].as_str()), (400, Some("tools[0].server_url")));
    for own in [gateway.url.clone(), format!("{admin}/pool")] {
        let (status, refused) = create(&origin, Some(&acme.key), named("me", &own)).await;
        assert_eq!(status, 400, "{own}: {refused}");
        assert!(refused["error"]["message"].as_str().unwrap_or_default().contains("itself"));
    }
    // A label that is a configured server's name would mix its pins and policy: refused.
    let (status, _) = create(&origin, Some(&acme.key), named("fx", &everything.url)).await;
    assert_eq!(status, 400);

    // server-memory, over a second toolgate's streamable HTTP.
    let (status, memory) = create(&origin, Some(&acme.key), named("mem", &second.url)).await;
    assert_eq!(status, 200, "{memory}");
    assert_eq!(memory["output"][1]["status"], "completed", "{memory}");
    assert!(memory["output"][1]["output"].as_str().unwrap_or_default().contains("entities"));

    // The admin API shows the pool: three connections opened, one at a time.
    let pool: Value = reqwest::Client::new()
        .get(format!("{admin}/pool"))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .expect("answered")
        .json()
        .await
        .expect("JSON");
    assert_eq!((pool["size"].as_u64(), pool["max_connections"].as_u64()), (Some(1), Some(1)));
    assert!(pool["misses"].as_u64() >= Some(3) && pool["evictions"].as_u64() >= Some(2), "{pool}");

    let audit = std::fs::read_to_string(config.dir().join("audit.jsonl")).expect("audit log");
    assert!(audit.contains("upstream/closed"), "the pool of one closed a connection:\n{audit}");
    assert!(audit.contains("least_recently_used"), "{audit}");
    gateway.terminate().await;
    second.terminate().await;
}
