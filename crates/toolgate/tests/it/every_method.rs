//! Every intercepted request method and notification, end to end over stdio and HTTP, walking
//! the method table (`toolgate_gateway::methods`): a policy rule about each event refuses it
//! before it reaches the upstream (or, for what an upstream asks or says, before it reaches the
//! client), and the same rule in audit mode lets it through and records what it would have
//! done.

#![allow(deprecated)] // sampling, roots and logging are deprecated in 2026-07-28 but still spoken

use std::sync::{Arc, Mutex};

use rmcp::model::{
    ArgumentInfo, CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest,
    CompleteRequestParams, CreateMessageRequestParams, CreateMessageResult, CustomRequest,
    ElicitRequestParams, ElicitResult, ElicitationCapability, FormElicitationCapability,
    GetPromptRequestParams, Implementation, ListRootsResult, LoggingLevel,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProtocolVersion,
    ReadResourceRequestParams, Reference, Role, Root, RootsCapabilities, SamplingMessage,
    SetLevelRequestParams, SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{
    ClientLifecycleMode, NotificationContext, Peer, RequestContext, RunningService,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ClientServiceExt, ErrorData, RoleClient, ServiceError, ServiceExt};
use serde_json::{Value, json};
use tokio::process::Command;
use toolgate_gateway::methods::{Handling, METHODS, Sender};

use crate::support::{
    ConfigDir, FixtureUpstream, HttpGateway, fixture_server, object, toml_str, toolgate_bin,
};

const WATCHED: &str = "test://watched-resource";

/// JSON text of a result, for assertions on what came back.
macro_rules! json_text {
    ($value:expr) => {
        serde_json::to_string($value).expect("serializes")
    };
}

/// A client that can answer everything an upstream may ask, and notes what it was asked and
/// told (log messages, progress).
#[derive(Clone, Default)]
struct Answering {
    asked: Arc<Mutex<Vec<&'static str>>>,
    noted: Arc<tokio::sync::Notify>,
}

impl Answering {
    fn asked(&self) -> Vec<&'static str> {
        self.asked.lock().expect("asked lock").clone()
    }

    fn note(&self, what: &'static str) {
        self.asked.lock().expect("asked lock").push(what);
        self.noted.notify_waiters();
    }

    /// Waits (at most 20 s) until `what` is among what was noted since `since`.
    async fn wait_for(&self, what: &'static str, since: usize) {
        let waiting = async {
            loop {
                let noted = self.noted.notified();
                if self.asked()[since..].contains(&what) {
                    return;
                }
                noted.await;
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(20), waiting)
            .await
            .unwrap_or_else(|_| panic!("{what} did not reach the client"));
    }
}

impl ClientHandler for Answering {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.sampling = Some(Default::default());
        capabilities.elicitation =
            Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        capabilities.roots = Some(RootsCapabilities::default());
        ClientConfig::new(capabilities, Implementation::new("answering", "1"))
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.note("sampling/createMessage");
        Ok(CreateMessageResult::new(
            SamplingMessage::new(Role::Assistant, "from the client"),
            "test-model".into(),
        ))
    }

    async fn create_elicitation(
        &self,
        _params: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.note("elicitation/create");
        Ok(serde_json::from_value(json!({
            "action": "accept",
            "content": { "username": "ada", "email": "ada@example.com" }
        }))
        .expect("a valid result"))
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        self.note("roots/list");
        Ok(ListRootsResult::new(vec![Root::new("file:///work/project")]))
    }

    async fn on_logging_message(
        &self,
        _params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.note("notifications/message");
    }

    async fn on_progress(
        &self,
        _params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.note("notifications/progress");
    }
}

/// Every event the method table intercepts, but `tools/call` (whose policy rules have tests of
/// their own): the rule under test is about all of them.
fn events_under_test() -> Vec<&'static str> {
    METHODS
        .iter()
        .filter_map(|m| match m.handling {
            Handling::Intercepted { event, .. } if event.as_str() != "tools/call" => {
                Some(event.as_str())
            }
            _ => None,
        })
        .collect()
}

fn config(mode: &str, audit_log: &std::path::Path) -> String {
    config_with(&fixture_server("fx", "stdio", None), mode, audit_log)
}

fn config_with(upstream: &str, mode: &str, audit_log: &std::path::Path) -> String {
    let events: Vec<String> = events_under_test().iter().map(|e| toml_str(e)).collect();
    format!(
        "{upstream}\n[audit]\nfile = {}\n\n[[pipeline]]\nkind = \"policy\"\nmode = \"{mode}\"\n\
         rules = [{{ events = [{}], decision = \"deny\", reason = \"the rule under test\" }}]\n",
        toml_str(&audit_log.to_string_lossy()),
        events.join(", ")
    )
}

/// Sends one request of `method` (a client method, or the tool call that makes the upstream
/// ask the client it) and returns what came back, as text.
async fn exercise(peer: &Peer<RoleClient>, method: &str) -> Result<String, ServiceError> {
    Ok(match method {
        "tools/list" => json_text!(&peer.list_tools(None).await?),
        "prompts/list" => json_text!(&peer.list_prompts(None).await?),
        "prompts/get" => {
            json_text!(
                &peer.get_prompt(GetPromptRequestParams::new("fx__test_simple_prompt")).await?
            )
        }
        "resources/list" => json_text!(&peer.list_resources(None).await?),
        "resources/templates/list" => json_text!(&peer.list_resource_templates(None).await?),
        "resources/read" => {
            json_text!(
                &peer.read_resource(ReadResourceRequestParams::new("test://static-text")).await?
            )
        }
        "resources/subscribe" => {
            peer.subscribe(SubscribeRequestParams::new(WATCHED)).await?;
            "subscribed".into()
        }
        "resources/unsubscribe" => {
            peer.unsubscribe(UnsubscribeRequestParams::new(WATCHED)).await?;
            "unsubscribed".into()
        }
        "completion/complete" => {
            let reference = Reference::for_prompt("fx__test_prompt_with_arguments");
            let argument: ArgumentInfo =
                serde_json::from_value(json!({"name": "arg1", "value": ""})).expect("an argument");
            json_text!(&peer.complete(CompleteRequestParams::new(reference, argument)).await?)
        }
        "logging/setLevel" => {
            peer.set_level(SetLevelRequestParams::new(LoggingLevel::Debug)).await?;
            "level set".into()
        }
        "interceptors/list" => {
            let request = CustomRequest::new("interceptors/list", None);
            json_text!(&peer.send_request(ClientRequest::CustomRequest(request)).await?)
        }
        "sampling/createMessage" => {
            call(peer, "fx__test_sampling", json!({"prompt": "hi"})).await?
        }
        "elicitation/create" => {
            call(peer, "fx__test_elicitation", json!({"message": "who are you?"})).await?
        }
        "roots/list" => call(peer, "fx__list_roots", json!({})).await?,
        // The tool logs and reports progress while it runs.
        "notifications/message" | "notifications/progress" => {
            call(peer, "fx__notes", json!({"text": "a note"})).await?
        }
        "subscriptions/listen" => {
            unreachable!("a 2026-07-28 request: see `listen_is_refused_then_audited`")
        }
        other => panic!("no sample request for {other}: add one, so that its rule is tested"),
    })
}

async fn call(peer: &Peer<RoleClient>, tool: &str, args: Value) -> Result<String, ServiceError> {
    let result = peer
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(object(args)))
        .await?;
    Ok(serde_json::to_string(&result).expect("serializes"))
}

/// `toolgate serve --stdio` as a child of ours, so that its exit can be awaited.
fn spawn_stdio(config: &std::path::Path) -> tokio::process::Child {
    Command::new(toolgate_bin())
        .args(["serve", "--stdio", "--config"])
        .arg(config)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn toolgate --stdio")
}

async fn http_client(url: &str, handler: Answering) -> RunningService<RoleClient, Answering> {
    handler
        .serve(StreamableHttpClientTransport::from_uri(url))
        .await
        .expect("client connects over HTTP")
}

/// The audit log's records of `kind`.
fn audit_records(log: &std::path::Path, kind: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("a JSON record"))
        .filter(|record| record["kind"] == kind)
        .collect()
}

/// Walks every intercepted method on `peer`: refused by the rule (`active`), or let through
/// and recorded as what the rule would have done (`audit`).
async fn walk(peer: &Peer<RoleClient>, answering: &Answering, mode: &str) {
    for method in events_under_test() {
        if method == "subscriptions/listen" {
            continue;
        }
        let upstream_asks =
            METHODS.iter().any(|m| m.name == method && m.sender == Sender::Upstream);
        let before = answering.asked().len();
        let outcome = exercise(peer, method).await;
        if method.starts_with("notifications/") {
            let result = outcome.unwrap_or_else(|e| panic!("{method}: {e}"));
            assert!(result.contains("noted"), "{method}: the call went through: {result}");
            if mode == "active" {
                // Sent, had it been, before the call's answer: a round trip later it is here.
                peer.send_request(ClientRequest::PingRequest(Default::default()))
                    .await
                    .expect("ping");
                assert!(
                    !answering.asked()[before..].contains(&method),
                    "{method} reached the client"
                );
            } else {
                answering.wait_for(method, before).await;
            }
            continue;
        }
        match (mode, upstream_asks) {
            ("active", false) => {
                let error = outcome.expect_err(method).to_string();
                assert!(
                    error.contains("refused by policy") && error.contains("the rule under test"),
                    "{method}: {error}"
                );
            }
            ("active", true) => {
                // The tool call went through; the upstream's question was refused, and the
                // client never saw it.
                let result = outcome.unwrap_or_else(|e| panic!("{method}: {e}"));
                assert!(result.contains("refused by policy"), "{method}: {result}");
                assert_eq!(answering.asked().len(), before, "{method} reached the client");
            }
            (_, false) => {
                outcome.unwrap_or_else(|e| panic!("{method} in audit mode: {e}"));
            }
            (_, true) => {
                let result = outcome.unwrap_or_else(|e| panic!("{method}: {e}"));
                assert!(!result.contains("\"isError\":true"), "{method}: {result}");
                assert_eq!(answering.asked()[before..], [method], "{method} reached the client");
            }
        }
    }
}

/// The records of `kind`, which must exist (read after toolgate exited and flushed its log).
fn records(log: &std::path::Path, kind: &str) -> Vec<Value> {
    let found = audit_records(log, kind);
    assert!(!found.is_empty(), "no {kind} record in the audit log");
    found
}

fn check_audit_log(log: &std::path::Path, mode: &str) {
    for method in events_under_test() {
        if method == "subscriptions/listen" {
            continue;
        }
        match mode {
            "active" => {
                let denied = records(log, &format!("{method}/denied"));
                assert_eq!(denied[0]["interceptor"], "policy", "{method}: {denied:?}");
            }
            _ => {
                let finished = records(log, &format!("{method}/finished"));
                let decisions = finished[0]["decisions"].to_string();
                assert!(decisions.contains("\"would_have\":\"refused\""), "{method}: {decisions}");
            }
        }
    }
}

async fn every_method_over(transport: &str, mode: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("audit.jsonl");
    let config = ConfigDir::new(&config(mode, &log));
    let answering = Answering::default();
    match transport {
        "stdio" => {
            let mut child = spawn_stdio(&config.path());
            let stdout = child.stdout.take().expect("stdout");
            let stdin = child.stdin.take().expect("stdin");
            let client = answering.clone().serve((stdout, stdin)).await.expect("connects");
            walk(client.peer(), &answering, mode).await;
            client.cancel().await.expect("close");
            let status = tokio::time::timeout(std::time::Duration::from_secs(20), child.wait())
                .await
                .expect("exits when its input closes")
                .expect("wait");
            assert!(status.success(), "{status}");
        }
        _ => {
            let gateway = HttpGateway::start(&config.path()).await;
            let client = http_client(&gateway.url, answering.clone()).await;
            walk(client.peer(), &answering, mode).await;
            client.cancel().await.expect("close");
            assert!(gateway.terminate().await.success());
        }
    }
    check_audit_log(&log, mode);
}

#[tokio::test]
async fn a_rule_about_each_event_refuses_it_over_stdio() {
    every_method_over("stdio", "active").await;
}

#[tokio::test]
async fn a_rule_about_each_event_refuses_it_over_http() {
    every_method_over("http", "active").await;
}

#[tokio::test]
async fn in_audit_mode_each_event_passes_and_is_recorded_over_stdio() {
    every_method_over("stdio", "audit").await;
}

#[tokio::test]
async fn in_audit_mode_each_event_passes_and_is_recorded_over_http() {
    every_method_over("http", "audit").await;
}

/// `subscriptions/listen` is a 2026-07-28 request: a client of that era opens a stream, which
/// the rule refuses (active) or lets open (audit).
#[tokio::test]
async fn listen_is_refused_then_audited() {
    for mode in ["active", "audit"] {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = dir.path().join("audit.jsonl");
        let config = ConfigDir::new(&config(mode, &log));
        let gateway = HttpGateway::start(&config.path()).await;
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        let transport = StreamableHttpClientTransport::from_uri(gateway.url.as_str());
        let client = ().serve_with_lifecycle(transport, lifecycle).await.expect("discover");
        let mut filter = SubscriptionFilter::new();
        filter.resource_subscriptions = Some(vec![WATCHED.to_owned()]);
        let opened = client.listen(filter).await;
        match mode {
            "active" => {
                let error = match opened {
                    Ok(mut stream) => match stream.next().await {
                        Err(error) => error.to_string(),
                        Ok(next) => panic!("the stream stayed open: {next:?}"),
                    },
                    Err(error) => error.to_string(),
                };
                assert!(error.contains("refused by policy"), "{error}");
            }
            _ => {
                let mut stream = opened.expect("the stream opens in audit mode");
                let _ = stream.cancel().await;
            }
        }
        client.cancel().await.expect("close");
        assert!(gateway.terminate().await.success());
        match mode {
            "active" => {
                records(&log, "subscriptions/listen/denied");
            }
            _ => {
                let finished = records(&log, "subscriptions/listen/finished");
                assert!(finished[0]["decisions"].to_string().contains("would_have"));
                let subscribed = records(&log, "resources/subscribe/finished");
                assert_eq!(subscribed[0]["exposed"], WATCHED, "{subscribed:?}");
            }
        }
    }
}

/// A 2026-07-28 upstream asks its questions as `input_required` rounds of the tool call, not
/// as requests of its own: each question passes the same events, refused or audited alike.
#[tokio::test]
async fn questions_asked_as_input_required_rounds_pass_the_pipeline_too() {
    let upstream = FixtureUpstream::start("http").await;
    for mode in ["active", "audit"] {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = dir.path().join("audit.jsonl");
        let server = fixture_server("fx", "http", Some(&upstream.url));
        let config = ConfigDir::new(&config_with(&server, mode, &log));
        let gateway = HttpGateway::start(&config.path()).await;
        let answering = Answering::default();
        let client = http_client(&gateway.url, answering.clone()).await;
        for method in ["sampling/createMessage", "elicitation/create", "roots/list"] {
            let result = exercise(client.peer(), method).await.expect("a tool result");
            match mode {
                "active" => {
                    assert!(result.contains("refused by policy"), "{method}: {result}");
                    assert!(answering.asked().is_empty(), "{method} reached the client");
                }
                _ => {
                    assert!(!result.contains("\"isError\":true"), "{method}: {result}");
                    assert_eq!(answering.asked().last(), Some(&method));
                }
            }
        }
        client.cancel().await.expect("close");
        assert!(gateway.terminate().await.success());
        let kind = if mode == "active" { "denied" } else { "finished" };
        for method in ["sampling/createMessage", "elicitation/create", "roots/list"] {
            let found = records(&log, &format!("{method}/{kind}"));
            assert_eq!(found[0]["server"], "fx", "{found:?}");
        }
    }
}
