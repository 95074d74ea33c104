//! Restarting a stdio server from the console and over the admin API: a new process each
//! time, the old one gone (reaped), a call in flight failing saying why, the tools still
//! listed and calls working after; who restarted it in the audit log.

use std::time::Duration;

use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};

use super::{ALICE, Browser, admin_url, csrf, location};
use crate::recorder::*;
use crate::support::*;

/// The fixture as `fx`, run by `sh`, which exports its own pid and `exec`s the fixture (so
/// `fx__env_get {"name": "FIXTURE_PID"}` answers with the fixture's pid); an admin token; an
/// audit log.
fn config() -> ConfigDir {
    // `$$$$` is `$$` once the config has expanded its variables.
    let script = format!("export FIXTURE_PID=$$$$; exec {}", fixture_bin().display());
    ConfigDir::new(&format!(
        "[servers.fx]\ncommand = \"sh\"\nargs = [\"-c\", {}]\n\n\
         [audit]\nfile = \"audit.jsonl\"\n\n\
         [admin]\nlisten = \"127.0.0.1:0\"\ntokens = {{ alice = \"{ALICE}\" }}\n",
        toml_str(&script)
    ))
}

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_owned()).with_arguments(object(arguments))
}

async fn fixture_pid(client: &RecordingClient) -> u32 {
    let asked = client.call_tool(call("fx__env_get", json!({"name": "FIXTURE_PID"}))).await;
    let text = first_text(&asked.expect("the upstream answers"));
    text.parse().unwrap_or_else(|_| panic!("a pid, not {text:?}"))
}

/// Whether `pid` has no entry in `/proc` at all: ended and reaped (a zombie still has one).
fn reaped(pid: u32) -> bool {
    !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[tokio::test]
async fn a_restart_from_the_console_replaces_the_process_and_the_server_works_after() {
    let config = config();
    let gateway = HttpGateway::start(&config.path()).await;
    let admin = admin_url(&gateway).await;
    let (client, mut notes) = recording_http_client(&gateway.url).await;
    let first = fixture_pid(&client).await;

    let stranger = Browser::new(&admin);
    let response = stranger.post("/console/servers/fx/restart", &[("csrf", "x")], true).await;
    assert_eq!((response.status().as_u16(), location(&response)), (303, "/console/login"));
    let browser = Browser::sign_in(&admin, ALICE).await;
    let page = browser.page("/console/servers").await;
    assert!(page.contains("action=\"/console/servers/fx/restart\""), "{page}");
    assert!(page.contains("aria-label=\"Restart fx\""), "{page}");
    let token = csrf(&page);
    let forged = browser.post("/console/servers/fx/restart", &[], true).await;
    assert_eq!(forged.status(), 403, "no form token");
    let cross = browser.post("/console/servers/fx/restart", &[("csrf", &token)], false).await;
    assert_eq!(cross.status(), 403, "no Origin");
    let unknown = browser.post("/console/servers/nope/restart", &[("csrf", &token)], true).await;
    assert_eq!(unknown.status(), 404);
    assert!(unknown.text().await.expect("body").contains("no server `nope` is configured"));
    assert_eq!(fixture_pid(&client).await, first, "nothing was restarted yet");

    // A call in flight (the server reports progress on it) when the restart comes.
    let slow = CallToolRequest::new(call("fx__slow", json!({"steps": 100, "step_ms": 100})));
    let running = client
        .peer()
        .send_request_with_option(
            ClientRequest::CallToolRequest(slow),
            PeerRequestOptions::no_options(),
        )
        .await
        .expect("send");
    notes.next_matching(|n| matches!(n, Note::Progress(_)).then_some(())).await;

    let restarted = browser.post("/console/servers/fx/restart", &[("csrf", &token)], true).await;
    assert_eq!(restarted.status(), 303);
    assert_eq!(location(&restarted), "/console/servers?restarted=fx");
    let answer = tokio::time::timeout(Duration::from_secs(10), running.await_response())
        .await
        .expect("the call in flight ends at once")
        .expect("an answer");
    let rmcp::model::ServerResult::CallToolResult(failed) = answer else {
        panic!("a tool result, not {answer:?}")
    };
    assert_eq!(failed.is_error, Some(true));
    let said = first_text(&failed);
    assert!(said.contains("upstream fx: the server was restarted during tools/call `slow`"));
    assert!(reaped(first), "the old process is gone, reaped");
    let page = browser.page("/console/servers?restarted=fx").await;
    assert!(page.contains("fx was restarted and is connected."), "{page}");

    let second = fixture_pid(&client).await;
    assert_ne!(second, first, "a new process");
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "fx__echo"), "still listed");
    let echo = client.call_tool(call("fx__echo", json!({"text": "after"}))).await;
    assert_eq!(first_text(&echo.expect("echo")), "after");

    // The same over the admin API.
    let http = reqwest::Client::new();
    let restart = |server: &str, token: Option<&str>| {
        let request = http.post(format!("{admin}/servers/{server}/restart"));
        match token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
        .send()
    };
    assert_eq!(restart("fx", None).await.expect("answered").status(), 401);
    assert_eq!(restart("nope", Some(ALICE)).await.expect("answered").status(), 404);
    let done = restart("fx", Some(ALICE)).await.expect("answered");
    assert_eq!(done.status(), 200);
    let done: Value = done.json().await.expect("JSON");
    assert_eq!(done, json!({"server": "fx", "by": "alice", "connected": true}));
    assert!(reaped(second));
    let third = fixture_pid(&client).await;
    assert!(third != first && third != second, "{first} {second} {third}");

    client.cancel().await.expect("close");
    // Ending the gateway writes out what is left of the audit log.
    assert!(gateway.terminate().await.success());
    let audit = std::fs::read_to_string(config.dir().join("audit.jsonl")).expect("audit log");
    let kinds: Vec<(String, Value)> = audit
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("a record"))
        .filter(|r| r["kind"].as_str().is_some_and(|k| k.starts_with("upstream/")))
        .map(|r| (r["kind"].as_str().unwrap_or_default().to_owned(), r))
        .collect();
    let names: Vec<&str> = kinds.iter().map(|(kind, _)| kind.as_str()).collect();
    assert_eq!(
        names,
        [
            "upstream/connected",
            "upstream/restart_requested",
            "upstream/failed",
            "upstream/restarted",
            "upstream/restart_requested",
            "upstream/failed",
            "upstream/restarted",
        ],
        "{audit}"
    );
    assert_eq!(kinds[1].1["by"], "alice");
    assert_eq!(kinds[1].1["server"], "fx");
    assert_eq!(kinds[2].1["reason"], "restarted on request");
}
