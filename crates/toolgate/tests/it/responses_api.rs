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
    ]
}

fn config(fake: &FakeLlm) -> ConfigDir {
    ConfigDir::new(&format!(
        "{}\n[gateway]\nllm_api = true\n\n[agent]\nprovider = \"compatible\"\nbase_url = {}\n\
         model = \"unused-default\"\n\n[llm]\nstore = \"sqlite:responses.db\"\n\n\
         [audit]\nfile = \"audit.jsonl\"\n",
        fixture_server("fx", "stdio", None),
        toml_str(&fake.base_url()),
    ))
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
    let client = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/clients/py_responses.py");
    let base_url = format!("{origin}/v1");
    let (ok, printed) = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::task::spawn_blocking(move || deps::run_python(&client, &[base_url.into()])),
    )
    .await
    .expect("the client finishes in time")
    .expect("the client ran");
    assert!(ok, "the openai SDK client failed:\n{printed}");
    let report: Value = serde_json::from_str(printed.lines().next().unwrap_or_default())
        .unwrap_or_else(|e| panic!("a JSON report ({e}):\n{printed}"));
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
