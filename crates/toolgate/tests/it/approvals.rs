//! Policy, approval and audit end to end: a call held for a person, approved from the MCP
//! client (elicitation) or over the admin API, refused, and afterwards proven from the audit
//! log; the event stream; the pipeline as `interceptors/list` and `toolgate interceptors`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt as _;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest, CustomRequest,
    ElicitRequestParams, ElicitResult, ElicitationCapability, FormElicitationCapability,
    Implementation, ServerResult,
};
use rmcp::service::RequestContext;
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::process::Command;

use crate::recorder::{Note, Notes, RecordingClient, recording_http_client};
use crate::support::*;

const ALICE: &str = "alice-token-0123456789";
const ANONYMOUS: &str = "anonymous-token-0123456789";

/// A pipeline in which reading the environment needs a person's approval.
fn pipeline(approval: &str) -> String {
    format!(
        "[[pipeline]]\nkind = \"policy\"\ndefault = \"allow\"\n\
         rules = [{{ tools = [\"env_get\"], decision = \"ask\", reason = \"it reads the environment\" }}]\n\n\
         [[pipeline]]\nkind = \"approval\"\n{approval}\n"
    )
}

/// An MCP client whose user answers approval questions from a list, in order.
#[derive(Clone)]
struct Person {
    answers: Arc<Mutex<Vec<Value>>>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl Person {
    fn answering(answers: &[Value]) -> Person {
        Person {
            answers: Arc::new(Mutex::new(answers.iter().rev().cloned().collect())),
            asked: Arc::default(),
        }
    }
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation =
            Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        ClientConfig::new(capabilities, Implementation::new("person", "1"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let asked = serde_json::to_value(&request).expect("serializes");
        self.asked.lock().unwrap().push(asked["message"].as_str().unwrap_or("").to_owned());
        let content = self.answers.lock().unwrap().pop().expect("an answer is ready");
        Ok(serde_json::from_value(json!({ "action": "accept", "content": content }))
            .expect("a valid result"))
    }
}

async fn call(
    client: &rmcp::service::Peer<RoleClient>,
    tool: &str,
    args: Value,
) -> rmcp::model::CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(object(args)))
        .await
        .expect("a tool result (refusals included)")
}

#[tokio::test]
async fn the_person_at_the_client_approves_through_elicitation() {
    let config = ConfigDir::new(&format!(
        "{}\n{}",
        fixture_server("fx", "stdio", None),
        pipeline("via = \"elicit\"")
    ));
    let person = Person::answering(&[
        json!({ "decision": "allow once" }),
        json!({ "decision": "deny", "reason": "not now" }),
    ]);
    let mut command = Command::new(toolgate_bin());
    command.args(["serve", "--stdio", "--config"]).arg(config.path());
    let transport = TokioChildProcess::new(command).expect("spawn toolgate --stdio");
    let client = person.clone().serve(transport).await.expect("connects");

    let allowed = call(client.peer(), "fx__env_get", json!({"name": "HOME"})).await;
    assert_ne!(allowed.is_error, Some(true), "{allowed:?}");
    let asked = person.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert!(asked[0].contains("fx__env_get") && asked[0].contains("HOME"), "{}", asked[0]);
    assert!(asked[0].contains("it reads the environment"), "{}", asked[0]);

    let denied = call(client.peer(), "fx__env_get", json!({"name": "HOME"})).await;
    assert_eq!(denied.is_error, Some(true));
    let text = first_text(&denied);
    assert!(text.starts_with("refused by approval:") && text.contains("not now"), "{text}");

    let echo = call(client.peer(), "fx__echo", json!({"text": "no question"})).await;
    assert_eq!(first_text(&echo), "no question");
    assert_eq!(person.asked.lock().unwrap().len(), 2, "only `ask` calls are asked about");
    client.cancel().await.expect("close");

    // A client that cannot be asked is refused, saying why.
    let plain = stdio_client(&config.path()).await;
    let refused = call(plain.peer(), "fx__env_get", json!({"name": "HOME"})).await;
    assert_eq!(refused.is_error, Some(true));
    let text = first_text(&refused);
    assert!(text.contains("does not support elicitation"), "{text}");
    plain.cancel().await.expect("close");
}

/// A person who, asked to approve, first has `fx__dynamic_tool` removed from the upstream
/// (through another session, `other`) and waits until toolgate has seen it go, then allows.
#[derive(Clone)]
struct SlowPerson {
    other: Arc<tokio::sync::Mutex<(RecordingClient, Notes)>>,
    asked: Arc<Mutex<usize>>,
}

impl ClientHandler for SlowPerson {
    fn get_info(&self) -> ClientConfig {
        Person::answering(&[]).get_info()
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        *self.asked.lock().unwrap() += 1;
        let (other, notes) = &mut *self.other.lock().await;
        let toggled = call(other.peer(), "fx__toggle_tool", json!({"enabled": false})).await;
        assert_eq!(first_text(&toggled), "dynamic_tool disabled");
        notes.next_matching(|n| matches!(n, Note::ToolsChanged).then_some(())).await;
        Ok(serde_json::from_value(
            json!({ "action": "accept", "content": { "decision": "allow once" } }),
        )
        .expect("a valid result"))
    }
}

#[tokio::test]
async fn a_call_whose_tool_changed_while_it_waited_for_approval_is_not_sent() {
    let config = ConfigDir::new(&format!(
        "{}\n{}",
        fixture_server("fx", "stdio", None),
        pipeline("via = \"elicit\"").replace("env_get", "dynamic_tool"),
    ));
    let gateway = HttpGateway::start(&config.path()).await;
    let (other, mut notes) = recording_http_client(&gateway.url).await;
    let enabled = call(other.peer(), "fx__toggle_tool", json!({"enabled": true})).await;
    assert_eq!(first_text(&enabled), "dynamic_tool enabled");
    notes.next_matching(|n| matches!(n, Note::ToolsChanged).then_some(())).await;

    let person = SlowPerson {
        other: Arc::new(tokio::sync::Mutex::new((other, notes))),
        asked: Arc::default(),
    };
    let client = person
        .clone()
        .serve(rmcp::transport::StreamableHttpClientTransport::from_uri(gateway.url.as_str()))
        .await
        .expect("connects");
    let refused = call(client.peer(), "fx__dynamic_tool", json!({})).await;
    assert_eq!(*person.asked.lock().unwrap(), 1, "the person was asked and approved");
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    let text = first_text(&refused);
    assert!(
        text.starts_with("refused by approval:") && text.contains("changed after it was approved"),
        "{text}"
    );
    assert!(!text.contains("dynamic tool called"), "{text}");
    client.cancel().await.expect("close");
    assert!(gateway.terminate().await.success());
}

/// The admin API's base URL, from the gateway's log.
async fn admin_url(gateway: &HttpGateway) -> String {
    let line = gateway.wait_for_log(&["admin API at http://"]).await;
    let at = line.find("http://").expect("url");
    line[at..].split_whitespace().next().expect("url").to_owned()
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// `GET /approvals` as Alice.
async fn held_calls(http: &reqwest::Client, admin: &str) -> Value {
    let response = http
        .get(format!("{admin}/approvals"))
        .header("authorization", bearer(ALICE))
        .send()
        .await
        .expect("GET /approvals");
    response.json().await.expect("JSON")
}

/// Reads a server-sent events body into (event, data) pairs on a channel.
pub(crate) fn sse_events(
    response: reqwest::Response,
) -> tokio::sync::mpsc::UnboundedReceiver<(String, Value)> {
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut body = response.bytes_stream();
        let mut buffer = String::new();
        while let Some(Ok(chunk)) = body.next().await {
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buffer.find("\n\n") {
                let block: String = buffer.drain(..end + 2).collect();
                let mut event = String::new();
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(value) = line.strip_prefix("event:") {
                        event = value.trim().to_owned();
                    } else if let Some(value) = line.strip_prefix("data:") {
                        data.push_str(value.trim());
                    }
                }
                if !event.is_empty() {
                    let data = serde_json::from_str(&data).unwrap_or(Value::Null);
                    if sender.send((event, data)).is_err() {
                        return;
                    }
                }
            }
        }
    });
    receiver
}

pub(crate) async fn next_event(
    events: &mut tokio::sync::mpsc::UnboundedReceiver<(String, Value)>,
) -> (String, Value) {
    tokio::time::timeout(Duration::from_secs(30), events.recv())
        .await
        .expect("an event in time")
        .expect("the stream is open")
}

#[tokio::test]
async fn an_approver_decides_over_the_admin_api_and_the_audit_log_proves_it() {
    let config = ConfigDir::new(&format!(
        "{}\n{}\n[audit]\nfile = \"audit.jsonl\"\nredact = [\"name\"]\n\n\
         [admin]\nlisten = \"127.0.0.1:0\"\n\
         tokens = {{ alice = \"{ALICE}\", anonymous = \"{ANONYMOUS}\" }}\n",
        fixture_server("fx", "stdio", None),
        pipeline("via = \"external\"\nseparate_duties = true")
    ));
    let gateway = HttpGateway::start(&config.path()).await;
    let admin = admin_url(&gateway).await;
    let http = reqwest::Client::new();

    // Nobody without a token.
    let response = http.get(format!("{admin}/approvals")).send().await.expect("GET");
    assert_eq!(response.status(), 401);

    let stream = http
        .get(format!("{admin}/events?pattern=approval/*&pattern=tools/call/denied"))
        .header("authorization", bearer(ALICE))
        .send()
        .await
        .expect("GET /events");
    assert_eq!(stream.status(), 200);
    let mut events = sse_events(stream);

    // A call is held.
    let client = http_client(&gateway.url).await;
    let peer = client.peer().clone();
    let held =
        tokio::spawn(async move { call(&peer, "fx__env_get", json!({"name": "HOME"})).await });
    gateway.wait_for_log(&["is held for approval", "POST /approvals/"]).await;
    let (kind, requested) = next_event(&mut events).await;
    assert_eq!(kind, "approval/requested");
    assert_eq!(requested["tool"], "env_get");

    let pending = held_calls(&http, &admin).await;
    let entry = &pending["approvals"][0];
    assert_eq!(entry["exposed"], "fx__env_get");
    assert_eq!(entry["arguments"], json!({"name": "HOME"}));
    assert_eq!(entry["caller"], "anonymous:anonymous");
    assert_eq!(entry["reason"], "it reads the environment (rules[0])");
    let id = entry["id"].as_str().expect("an id").to_owned();
    let decide = |token: &'static str, id: String, body: Value| {
        let http = http.clone();
        let url = format!("{admin}/approvals/{id}");
        async move {
            http.post(url)
                .header("authorization", bearer(token))
                .json(&body)
                .send()
                .await
                .expect("POST")
        }
    };

    // Separation of duties: the caller cannot approve its own call.
    let own = decide(ANONYMOUS, id.clone(), json!({"decision": "allow"})).await;
    assert_eq!(own.status(), 403);
    assert_eq!(decide(ALICE, "a999".into(), json!({"decision": "allow"})).await.status(), 404);
    assert_eq!(decide(ALICE, id.clone(), json!({"decision": "perhaps"})).await.status(), 400);
    assert!(!held.is_finished(), "still held after refused attempts");

    let granted = decide(ALICE, id.clone(), json!({"decision": "allow"})).await;
    assert_eq!(granted.status(), 200);
    let result =
        tokio::time::timeout(Duration::from_secs(30), held).await.expect("in time").unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let (kind, granted) = next_event(&mut events).await;
    assert_eq!((kind.as_str(), granted["by"].as_str()), ("approval/granted", Some("alice")));

    // A denial reaches the model as a tool error naming who refused.
    let peer = client.peer().clone();
    let held =
        tokio::spawn(async move { call(&peer, "fx__env_get", json!({"name": "PATH"})).await });
    let (_, requested) = next_event(&mut events).await;
    let digest = requested["digest"].as_str().expect("a digest").to_owned();
    let pending = held_calls(&http, &admin).await;
    let id = pending["approvals"][0]["id"].as_str().expect("an id").to_owned();
    assert_eq!(pending["approvals"][0]["digest"], digest.as_str());
    assert_eq!(requested["id"], id.as_str(), "the event names the call as the desk does");
    let denied = decide(ALICE, id, json!({"decision": "deny", "reason": "PATH is private"})).await;
    assert_eq!(denied.status(), 200);
    let result =
        tokio::time::timeout(Duration::from_secs(30), held).await.expect("in time").unwrap();
    assert_eq!(result.is_error, Some(true));
    let text = first_text(&result);
    assert!(text.contains("alice did not approve this call: PATH is private"), "{text}");
    assert_eq!(next_event(&mut events).await.0, "approval/refused");
    assert_eq!(next_event(&mut events).await.0, "tools/call/denied");

    client.cancel().await.expect("close");
    assert!(gateway.terminate().await.success());

    // The audit log: intact, and it says what ran and who allowed it.
    let log = config.dir().join("audit.jsonl");
    let report = toolgate_audit::verify(&log).expect("the chain is intact");
    assert!(report.records >= 6, "{report:?}");
    let records: Vec<Value> = std::fs::read_to_string(&log)
        .expect("read the log")
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON record"))
        .collect();
    let find = |kind: &'static str| records.iter().filter(move |r| r["kind"] == kind);
    let started: Vec<_> = find("tools/call/started").collect();
    assert_eq!(started.len(), 2);
    assert_eq!(started[0]["arguments"], json!({"name": "***"}), "redacted");
    assert_eq!(started[0]["arguments_sha256"].as_str().map(str::len), Some(64));
    assert_eq!(started[0]["principal"], "anonymous:anonymous");
    let finished = find("tools/call/finished").next().expect("the approved call finished");
    assert_eq!(finished["approved_by"], "alice");
    assert_eq!(finished["server"], "fx");
    assert_eq!(finished["tool"], "env_get");
    assert_eq!(finished["call"], started[0]["call"]);
    assert!(
        finished["duration_ms"].as_f64().is_some() && finished["response_bytes"].as_u64() > Some(0)
    );
    let denied = find("tools/call/denied").next().expect("the denied call");
    assert_eq!(denied["interceptor"], "approval");
    assert_eq!(find("approval/granted").next().expect("granted")["by"], "alice");
    assert_eq!(find("approval/refused").next().expect("refused")["reason"], "PATH is private");
    let connected = find("upstream/connected").next().expect("the upstream's start is recorded");
    assert_eq!(connected["server"], "fx");
}

/// Every HTTP client that did not authenticate is `anonymous:anonymous`. An approver allows one
/// session's call and asks that it be remembered: the same session's identical call goes
/// through without asking, another session's is held for an approver again.
#[tokio::test]
async fn an_approval_remembered_for_one_session_does_not_let_another_through() {
    let config = ConfigDir::new(&format!(
        "{}\n{}\n[admin]\nlisten = \"127.0.0.1:0\"\ntokens = {{ alice = \"{ALICE}\" }}\n",
        fixture_server("fx", "stdio", None),
        pipeline("via = \"external\"")
    ));
    let gateway = HttpGateway::start(&config.path()).await;
    let admin = admin_url(&gateway).await;
    let http = reqwest::Client::new();
    let decide = async |id: &str, body: Value| {
        http.post(format!("{admin}/approvals/{id}"))
            .header("authorization", bearer(ALICE))
            .json(&body)
            .send()
            .await
            .expect("POST")
            .status()
    };
    let first = http_client(&gateway.url).await;
    let second = http_client(&gateway.url).await;
    let arguments = json!({"name": "HOME"});

    let peer = first.peer().clone();
    let held = tokio::spawn({
        let arguments = arguments.clone();
        async move { call(&peer, "fx__env_get", arguments).await }
    });
    gateway.wait_for_log(&["call a1 ", "is held for approval"]).await;
    assert_eq!(decide("a1", json!({"decision": "allow", "remember": "10m"})).await, 200);
    let allowed = held.await.expect("the call ends");
    assert_ne!(allowed.is_error, Some(true), "{allowed:?}");

    // The same session, the very same call: remembered, nobody is asked.
    let again = call(first.peer(), "fx__env_get", arguments.clone()).await;
    assert_ne!(again.is_error, Some(true), "{again:?}");
    assert_eq!(held_calls(&http, &admin).await["approvals"], json!([]));

    // Another session, the very same call: held for an approver, who refuses it this time.
    let peer = second.peer().clone();
    let held = tokio::spawn(async move { call(&peer, "fx__env_get", arguments).await });
    gateway.wait_for_log(&["call a2 ", "is held for approval"]).await;
    let pending = held_calls(&http, &admin).await;
    assert_eq!(pending["approvals"][0]["id"], "a2", "{pending}");
    assert_eq!(decide("a2", json!({"decision": "deny", "reason": "not yours"})).await, 200);
    let refused = held.await.expect("the call ends");
    assert_eq!(refused.is_error, Some(true));
    let text = first_text(&refused);
    assert!(text.contains("alice did not approve this call: not yours"), "{text}");

    first.cancel().await.expect("close");
    second.cancel().await.expect("close");
    assert!(gateway.terminate().await.success());
}

#[tokio::test]
async fn the_pipeline_is_listed_as_sep_2624_descriptors() {
    let config = ConfigDir::new(&format!(
        "{}\n{}",
        fixture_server("fx", "stdio", None),
        pipeline("via = \"deny\"")
    ));
    let client = stdio_client(&config.path()).await;
    let answer = client
        .send_request(ClientRequest::CustomRequest(CustomRequest::new("interceptors/list", None)))
        .await
        .expect("interceptors/list");
    let ServerResult::CustomResult(result) = answer else { panic!("a custom result: {answer:?}") };
    let listed = result.0;
    let interceptors = listed["interceptors"].as_array().expect("a list");
    assert_eq!(interceptors.len(), 2);
    assert_eq!(interceptors[0]["name"], "policy");
    assert_eq!(interceptors[0]["type"], "mutation");
    assert_eq!(interceptors[1]["name"], "approval");
    assert_eq!(interceptors[1]["type"], "validation");
    assert_eq!(interceptors[1]["failOpen"], false);
    assert_eq!(interceptors[1]["hooks"], json!([{ "events": ["tools/call"], "phase": "request" }]));
    assert_eq!(listed["runOrder"]["request"], json!(["policy", "approval"]));
    // `via = "deny"`: held calls are refused at once.
    let refused = call(client.peer(), "fx__env_get", json!({"name": "HOME"})).await;
    assert!(first_text(&refused).contains("via = \"deny\""), "{}", first_text(&refused));
    client.cancel().await.expect("close");

    let path = config.path();
    let path = path.to_string_lossy();
    let output = run_toolgate(&["interceptors", "--config", &path]).await;
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("request phase"), "{text}");
    let policy = text.find("1. policy").expect("policy first");
    let approval = text.find("2. approval").expect("approval second");
    assert!(policy < approval, "{text}");
    let output = run_toolgate(&["interceptors", "--config", &path, "--json"]).await;
    let json: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(json, listed, "the CLI shows what the method returns");
}

#[tokio::test]
async fn ask_without_an_approval_interceptor_is_refused_at_dispatch() {
    let config = ConfigDir::new(&format!(
        "{}\n[[pipeline]]\nkind = \"policy\"\n\
         rules = [{{ tools = [\"env_get\"], decision = \"ask\", reason = \"it reads the environment\" }}]\n",
        fixture_server("fx", "stdio", None)
    ));
    let path = config.path();
    let path = path.to_string_lossy();
    let output = run_toolgate(&["call", "--config", &path, "fx__env_get", "name=HOME"]).await;
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("refused by policy"), "{stdout}");
    assert!(stdout.contains("no approval interceptor handles it"), "{stdout}");
}
