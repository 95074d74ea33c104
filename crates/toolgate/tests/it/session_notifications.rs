//! What one session causes stays with that session, and `redact` sees everything the model
//! sees: an upstream's log message about a call goes to the client of that call only (the
//! request whose response stream carried it, for a streamable HTTP upstream; the only call in
//! flight, for a stdio one); one about no call goes only to the sessions that asked for logs;
//! and log messages, progress, prompts and completions pass `redact` like results do.

#![allow(deprecated)] // logging is deprecated in 2026-07-28 (SEP-2577) but still spoken

use rmcp::model::{
    ArgumentInfo, CallToolRequest, CallToolRequestParams, ClientRequest, CompleteRequestParams,
    GetPromptRequestParams, LoggingLevel, Reference, SetLevelRequestParams,
};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};

use crate::recorder::{
    Note, Notes, RecordingClient, recording_http_client, recording_stdio_client,
};
use crate::support::{ConfigDir, FixtureUpstream, HttpGateway, fixture_server, object};

fn notes_call(args: Value) -> CallToolRequestParams {
    CallToolRequestParams::new("fx__notes").with_arguments(object(args))
}

/// The data of the next log message `notes` receives.
async fn next_log(notes: &mut Notes) -> Value {
    notes
        .next_matching(|note| match note {
            Note::Log(log) => Some(log.data.clone()),
            _ => None,
        })
        .await
}

/// The data of every log message received so far.
fn logs_so_far(notes: &mut Notes) -> Vec<Value> {
    notes
        .drain()
        .into_iter()
        .filter_map(|note| match note {
            Note::Log(log) => Some(log.data),
            _ => None,
        })
        .collect()
}

/// The data of the log messages `notes` receives before one whose data is `last`.
async fn logs_until(notes: &mut Notes, last: &str) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let log = next_log(notes).await;
        if log == last {
            return seen;
        }
        seen.push(log);
    }
}

/// A config with the fixture as `fx` over `upstream` (`stdio`, or HTTP served by `fixture`).
fn fixture_config(upstream: &str, fixture: Option<&FixtureUpstream>, extra: &str) -> ConfigDir {
    let server = fixture_server("fx", upstream, fixture.map(|f| f.url.as_str()));
    ConfigDir::new(&format!("{server}\n{extra}"))
}

async fn call(client: &RecordingClient, args: Value) {
    client.call_tool(notes_call(args)).await.expect("fx__notes");
}

/// Three sessions of one HTTP gateway: A and B never ask for logs, C asks for everything.
/// `background`: the upstream can send log messages about no call (a 2026-07-28 server has no
/// stream for them: it sends logs only on a request's own stream).
async fn logs_stay_with_their_session(upstream: &str, background: bool) {
    let fixture = match upstream {
        "stdio" => None,
        other => Some(FixtureUpstream::start(other).await),
    };
    let config = fixture_config(upstream, fixture.as_ref(), "");
    let gateway = HttpGateway::start(&config.path()).await;
    let (a, mut a_notes) = recording_http_client(&gateway.url).await;
    let (b, mut b_notes) = recording_http_client(&gateway.url).await;
    let (c, mut c_notes) = recording_http_client(&gateway.url).await;
    c.set_level(SetLevelRequestParams::new(LoggingLevel::Debug)).await.expect("setLevel");

    // About a call: to its session, whatever the others asked for.
    call(&a, json!({ "text": "A's secret", "level": "debug" })).await;
    assert_eq!(next_log(&mut a_notes).await, "A's secret");
    call(&b, json!({ "text": "B's own", "level": "debug" })).await;
    assert_eq!(next_log(&mut b_notes).await, "B's own", "B's first log is its own");
    // C asked for everything, and hears only its own: had it been sent A's or B's, they
    // would have come first.
    call(&c, json!({ "text": "C's own", "level": "debug" })).await;
    assert_eq!(next_log(&mut c_notes).await, "C's own", "C heard nothing of A or B");

    // A level a session set holds for its own calls too.
    a.set_level(SetLevelRequestParams::new(LoggingLevel::Info)).await.expect("setLevel");
    call(&a, json!({ "text": "below A's level", "level": "debug" })).await;
    call(&a, json!({ "text": "at A's level", "level": "info" })).await;
    assert_eq!(next_log(&mut a_notes).await, "at A's level");

    if background {
        // About no call: to the sessions that asked (A at info, C), and to no other (B).
        call(&a, json!({ "text": "of its own accord", "after_ms": 100 })).await;
        assert_eq!(next_log(&mut c_notes).await, "of its own accord");
        assert_eq!(next_log(&mut a_notes).await, "of its own accord");
        // B asks now: it hears the next one, and had not heard the last (it would have come
        // first on the same stream).
        b.set_level(SetLevelRequestParams::new(LoggingLevel::Info)).await.expect("setLevel");
        call(&c, json!({ "text": "heard by B", "after_ms": 100 })).await;
        assert_eq!(next_log(&mut b_notes).await, "heard by B");
        assert_eq!(next_log(&mut c_notes).await, "heard by B");
        assert_eq!(next_log(&mut a_notes).await, "heard by B");
    }
    assert_eq!(logs_so_far(&mut b_notes), Vec::<Value>::new());

    for client in [a, b, c] {
        client.cancel().await.expect("close");
    }
    assert!(gateway.terminate().await.success());
}

#[tokio::test]
async fn a_stdio_upstreams_logs_stay_with_the_session_whose_call_they_are_about() {
    logs_stay_with_their_session("stdio", true).await;
}

#[tokio::test]
async fn a_legacy_sse_upstreams_logs_stay_with_the_session_whose_call_they_are_about() {
    logs_stay_with_their_session("sse", true).await;
}

#[tokio::test]
async fn an_http_upstreams_logs_stay_with_the_session_whose_call_they_are_about() {
    logs_stay_with_their_session("http", false).await;
}

/// While A's call runs, B calls: a streamable HTTP upstream's log about B's call comes on B's
/// request's stream and goes to B; a stdio upstream's could be about either call, so it goes
/// to neither.
async fn a_log_during_anothers_call(upstream: &str) -> (Vec<Value>, Vec<Value>) {
    let fixture = match upstream {
        "stdio" => None,
        other => Some(FixtureUpstream::start(other).await),
    };
    let config = fixture_config(upstream, fixture.as_ref(), "");
    let gateway = HttpGateway::start(&config.path()).await;
    let (a, mut a_notes) = recording_http_client(&gateway.url).await;
    let (b, mut b_notes) = recording_http_client(&gateway.url).await;
    let slow = CallToolRequestParams::new("fx__slow")
        .with_arguments(object(json!({ "steps": 3, "step_ms": 300 })));
    // Sent with a progress token (rmcp gives every request one).
    let running = a
        .peer()
        .send_request_with_option(
            ClientRequest::CallToolRequest(CallToolRequest::new(slow)),
            PeerRequestOptions::no_options(),
        )
        .await
        .expect("send");
    // A's call is upstream once its first progress arrives.
    a_notes.next_matching(|n| matches!(n, Note::Progress(_)).then_some(())).await;
    call(&b, json!({ "text": "during A's call", "level": "info" })).await;
    running.await_response().await.expect("A's call ends");
    // Each session's own next log closes its run: whatever it was sent before came before it.
    call(&a, json!({ "text": "the end" })).await;
    call(&b, json!({ "text": "the end" })).await;
    let seen_by_a = logs_until(&mut a_notes, "the end").await;
    let seen_by_b = logs_until(&mut b_notes, "the end").await;
    for client in [a, b] {
        client.cancel().await.expect("close");
    }
    assert!(gateway.terminate().await.success());
    (seen_by_a, seen_by_b)
}

#[tokio::test]
async fn a_log_on_a_requests_own_stream_reaches_its_session_even_while_others_run() {
    let (a, b) = a_log_during_anothers_call("http").await;
    assert_eq!(a, Vec::<Value>::new(), "A heard nothing of B's call");
    assert_eq!(b, [json!("during A's call")]);
}

#[tokio::test]
async fn a_stdio_log_that_could_be_about_either_call_reaches_neither() {
    let (a, b) = a_log_during_anothers_call("stdio").await;
    assert_eq!(a, Vec::<Value>::new(), "A heard nothing of B's call");
    assert_eq!(b, Vec::<Value>::new(), "dropped: it could have been about A's call");
}

const AWS: &str = "AKIAIOSFODNN7EXAMPLE";

/// `redact` with a custom detector for a word the fixture's completions hold.
const REDACT: &str = "[[pipeline]]\nkind = \"redact\"\n\
                      custom = [{ name = \"city\", regex = \"paris\" }]\n";

/// Log messages, progress, prompts and completions reach the client redacted, over `client`.
async fn redacted_everywhere(client: &RecordingClient, notes: &mut Notes) {
    // A 2026-07-28 upstream logs about a request only when it is asked to.
    client.set_level(SetLevelRequestParams::new(LoggingLevel::Info)).await.expect("setLevel");
    let request = CallToolRequest::new(notes_call(json!({ "text": format!("key {AWS}") })));
    // Sent with a progress token (rmcp gives every request one).
    client
        .peer()
        .send_request_with_option(
            ClientRequest::CallToolRequest(request),
            PeerRequestOptions::no_options(),
        )
        .await
        .expect("send")
        .await_response()
        .await
        .expect("fx__notes");
    // The two may come in either order: rmcp handles each notification in a task of its own.
    let (mut progress, mut log) = (None, None);
    while progress.is_none() || log.is_none() {
        match notes.next_matching(|note| Some(note.clone())).await {
            Note::Progress(said) => progress = said.message,
            Note::Log(said) => log = Some(said.data),
            _ => {}
        }
    }
    assert_eq!(progress.as_deref(), Some("key [REDACTED:aws_access_key]"));
    assert_eq!(log, Some(Value::from("key [REDACTED:aws_access_key]")));

    let prompt = client
        .get_prompt(
            GetPromptRequestParams::new("fx__test_prompt_with_arguments")
                .with_arguments(object(json!({ "arg1": AWS, "arg2": "plain" }))),
        )
        .await
        .expect("prompts/get");
    let text = serde_json::to_string(&prompt).expect("JSON");
    assert!(!text.contains(AWS) && text.contains("[REDACTED:aws_access_key]"), "{text}");

    let argument: ArgumentInfo =
        serde_json::from_value(json!({ "name": "arg1", "value": "pa" })).expect("an argument");
    let completion = client
        .complete(CompleteRequestParams::new(
            Reference::for_prompt("fx__test_prompt_with_arguments"),
            argument,
        ))
        .await
        .expect("completion/complete");
    assert_eq!(completion.completion.values, ["[REDACTED:city]", "park", "party"]);
}

#[tokio::test]
async fn redact_sees_logs_progress_prompts_and_completions_over_stdio() {
    let config = fixture_config("stdio", None, REDACT);
    let (client, mut notes, _pid) = recording_stdio_client(&config.path()).await;
    redacted_everywhere(&client, &mut notes).await;
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn redact_sees_logs_progress_prompts_and_completions_over_http() {
    let fixture = FixtureUpstream::start("http").await;
    let config = fixture_config("http", Some(&fixture), REDACT);
    let gateway = HttpGateway::start(&config.path()).await;
    let (client, mut notes) = recording_http_client(&gateway.url).await;
    redacted_everywhere(&client, &mut notes).await;
    client.cancel().await.expect("close");
    assert!(gateway.terminate().await.success());
}

/// A policy that cuts a server off from the client cuts off its log messages and progress
/// too: `fx` may be called, but nothing it says on the side reaches the client; `other`'s
/// does.
#[tokio::test]
async fn a_policy_rule_stops_a_servers_log_messages_and_progress() {
    let config = ConfigDir::new(&format!(
        "{}\n{}\n[[pipeline]]\nkind = \"policy\"\n\
         rules = [{{ servers = [\"fx\"], events = [\"notifications/*\"], decision = \"deny\", \
         reason = \"fx keeps quiet\" }}]\n",
        fixture_server("fx", "stdio", None),
        fixture_server("other", "stdio", None),
    ));
    let (client, mut notes, _pid) = recording_stdio_client(&config.path()).await;
    let notes_of = |server: &str| {
        CallToolRequest::new(
            CallToolRequestParams::new(format!("{server}__notes"))
                .with_arguments(object(json!({ "text": format!("from {server}") }))),
        )
    };
    for server in ["fx", "other"] {
        client
            .peer()
            .send_request_with_option(
                ClientRequest::CallToolRequest(notes_of(server)),
                PeerRequestOptions::no_options(),
            )
            .await
            .expect("send")
            .await_response()
            .await
            .expect("notes answers: the call itself is allowed");
    }
    // What fx said would have come before what other said.
    let said = notes
        .next_matching(|note| match note {
            Note::Log(log) => Some(("log", log.data.clone())),
            Note::Progress(progress) => {
                progress.message.clone().map(|message| ("progress", Value::from(message)))
            }
            _ => None,
        })
        .await;
    assert_eq!(said.1, "from other", "fx's {} reached the client", said.0);
    client.cancel().await.expect("close");
}
