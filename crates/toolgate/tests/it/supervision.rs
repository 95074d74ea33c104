//! Upstreams that die, restart, or misbehave; shutdown that leaves nothing behind.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use serde_json::json;

use crate::recorder::*;
use crate::support::*;

fn call(name: &str, args: serde_json::Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_owned()).with_arguments(object(args))
}

/// A stdio upstream that refuses to start while `<dir>/down` exists.
fn switchable_server(name: &str, dir: &std::path::Path) -> String {
    let script = format!(
        "if [ -e {dir}/down ]; then echo 'switched off' >&2; exit 1; fi; exec {bin}",
        dir = dir.display(),
        bin = fixture_bin().display()
    );
    format!("[servers.{name}]\ncommand = \"sh\"\nargs = [\"-c\", {}]\n", toml_str(&script))
}

async fn tool_names(client: &RecordingClient) -> Vec<String> {
    client.list_all_tools().await.expect("tools/list").iter().map(|t| t.name.to_string()).collect()
}

#[tokio::test]
async fn a_dead_upstream_ends_its_calls_leaves_and_returns_with_list_changed() {
    let switch = tempfile::tempdir().expect("temp dir");
    let config = ConfigDir::new(&format!(
        "{}\n{}",
        switchable_server("fx", switch.path()),
        fixture_server("other", "stdio", None)
    ));
    let (client, mut notes, _pid) = recording_stdio_client(&config.path()).await;
    assert!(tool_names(&client).await.contains(&"fx__echo".to_owned()));

    // Keep it down after it dies.
    std::fs::write(switch.path().join("down"), "").expect("switch off");
    let crashed = tokio::time::timeout(
        Duration::from_secs(10),
        client.call_tool(call("fx__crash", json!({"code": 3}))),
    )
    .await
    .expect("a call to a dying upstream ends promptly");
    match crashed {
        Ok(result) => {
            assert_eq!(result.is_error, Some(true), "{result:?}");
            assert!(first_text(&result).contains("fx"), "the error names the upstream: {result:?}");
        }
        Err(error) => assert!(error.to_string().contains("fx"), "{error}"),
    }
    notes.next_matching(|n| matches!(n, Note::ToolsChanged).then_some(())).await;
    let names = tool_names(&client).await;
    assert!(!names.iter().any(|n| n.starts_with("fx__")), "its tools left: {names:?}");
    assert!(names.contains(&"other__echo".to_owned()), "the others stayed: {names:?}");
    let down = client.call_tool(call("fx__echo", json!({"text": "x"}))).await;
    assert!(down.is_err(), "a tool of a down server is unknown while it is down");

    // Let it come back.
    std::fs::remove_file(switch.path().join("down")).expect("switch on");
    notes.next_matching(|n| matches!(n, Note::ToolsChanged).then_some(())).await;
    let echo = client.call_tool(call("fx__echo", json!({"text": "back"}))).await.expect("echo");
    assert_eq!(first_text(&echo), "back");
    client.cancel().await.expect("close");
}

/// A stdio fixture upstream that knows its own pid: `sh` exports it and `exec`s the fixture,
/// which keeps the pid, so `<name>__env_get {"name": "FIXTURE_PID"}` answers with it.
fn fixture_knowing_its_pid(name: &str) -> String {
    // `$$$$` is `$$` once the config has expanded its variables.
    let script = format!("export FIXTURE_PID=$$$$; exec {}", fixture_bin().display());
    format!("[servers.{name}]\ncommand = \"sh\"\nargs = [\"-c\", {}]\n", toml_str(&script))
}

/// The pid of the `fx` upstream as it runs now: the call waits while it restarts. A call
/// that went out just before a kill fails; the next one waits for the new process.
async fn upstream_pid(client: &RecordingClient) -> u32 {
    for _ in 0..100 {
        let asked = call("fx__env_get", json!({"name": "FIXTURE_PID"}));
        let result = tokio::time::timeout(Duration::from_secs(20), client.call_tool(asked))
            .await
            .expect("asking the upstream its pid does not hang");
        if let Ok(result) = result
            && result.is_error != Some(true)
        {
            let text = first_text(&result);
            return text.parse().unwrap_or_else(|_| panic!("a pid, not {text:?}"));
        }
    }
    panic!("the upstream did not come back");
}

/// Why a call made while its upstream was killed failed, if it did; panics on what must never
/// happen during a restart: an unknown tool (or any protocol error), a hang.
async fn echo_during_kills(client: &RecordingClient, text: &str) -> Option<String> {
    let echo = client.call_tool(call("fx__echo", json!({"text": text})));
    match tokio::time::timeout(Duration::from_secs(20), echo).await {
        Err(_) => panic!("a call hung while its upstream was being killed"),
        Ok(Err(error)) => panic!("a call during a restart got a protocol error: {error}"),
        Ok(Ok(result)) if result.is_error == Some(true) => {
            let message = first_text(&result);
            assert!(!message.to_lowercase().contains("unknown tool"), "{message}");
            assert!(message.contains("fx"), "the error names the upstream: {message}");
            Some(message)
        }
        Ok(Ok(result)) => {
            assert_eq!(first_text(&result), text);
            None
        }
    }
}

#[tokio::test]
async fn an_upstream_killed_100_times_under_load_leaves_no_process_and_no_hung_call() {
    let config = ConfigDir::new(&fixture_knowing_its_pid("fx"));
    let (client, mut notes, gateway) = recording_stdio_client(&config.path()).await;
    let client = Arc::new(client);
    let stop = tokio_util::sync::CancellationToken::new();
    let mut load = Vec::new();
    for worker in 0..4 {
        let (client, stop) = (client.clone(), stop.clone());
        load.push(tokio::spawn(async move {
            let (mut ok, mut failures) = (0u32, Vec::new());
            while !stop.is_cancelled() {
                match echo_during_kills(&client, &format!("w{worker}")).await {
                    None => ok += 1,
                    Some(message) => failures.push(message),
                }
            }
            (ok, failures)
        }));
    }
    let mut seen = Vec::new();
    let mut previous = None;
    for _ in 0..100 {
        // Kill a connected upstream, not one still starting (that would count as a failed
        // start and back off for longer each time): its answer says it is up.
        let child = upstream_pid(&client).await;
        assert_ne!(Some(child), previous, "a new process after each kill");
        seen.push(child);
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .expect("kill the upstream");
        previous = Some(child);
    }
    // Back once more, then the load stops.
    seen.push(upstream_pid(&client).await);
    stop.cancel();
    let (mut total_ok, mut failures) = (0, Vec::new());
    for worker in load {
        let (ok, failed) = worker.await.expect("load worker");
        total_ok += ok;
        failures.extend(failed);
    }
    assert!(total_ok > 0, "some calls succeeded between the kills");
    eprintln!("{total_ok} calls answered, {} failed in flight at a kill", failures.len());
    let mut kinds: Vec<_> =
        failures.iter().map(|f| f.chars().take(120).collect::<String>()).collect();
    kinds.sort();
    kinds.dedup();
    eprintln!("{kinds:#?}");
    // Only calls already sent to a process that was killed may fail; every other call waited
    // for the restart. The catalog never changed, so clients were told nothing.
    for failure in &failures {
        assert!(failure.contains("connection lost during tools/call `echo`"), "{failure}");
    }
    assert!(
        failures.len() <= 4 * 100,
        "at most one failed call per worker and kill, got {}: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    let told: Vec<_> =
        notes.drain().into_iter().filter(|n| matches!(n, Note::ToolsChanged)).collect();
    assert!(told.is_empty(), "no list_changed for a catalog that did not change: {told:?}");
    let after = client.call_tool(call("fx__echo", json!({"text": "after"}))).await.expect("echo");
    assert_eq!(first_text(&after), "after");
    let client = Arc::into_inner(client).expect("only owner left");
    client.cancel().await.expect("close: toolgate exits on stdin EOF");
    seen.push(gateway);
    all_gone(&seen).await;
}

#[tokio::test]
async fn a_call_waits_restart_wait_then_says_the_server_is_restarting() {
    // Started again once `<dir>/slow` exists, the upstream takes 3 s to answer its handshake.
    let switch = tempfile::tempdir().expect("temp dir");
    let script = format!(
        "if [ -e {dir}/slow ]; then exec {bin} --startup-delay 3s; else exec {bin}; fi",
        dir = switch.path().display(),
        bin = fixture_bin().display()
    );
    let config = ConfigDir::new(&format!(
        "[servers.fx]\ncommand = \"sh\"\nargs = [\"-c\", {}]\nrestart_wait = \"300ms\"\n",
        toml_str(&script)
    ));
    let (client, mut notes, gateway) = recording_stdio_client(&config.path()).await;
    let echo = client.call_tool(call("fx__echo", json!({"text": "up"}))).await.expect("echo");
    assert_eq!(first_text(&echo), "up");
    std::fs::write(switch.path().join("slow"), "").expect("slow down");
    let crashed = client.call_tool(call("fx__crash", json!({"code": 3}))).await;
    assert!(crashed.is_err() || crashed.is_ok_and(|r| r.is_error == Some(true)));

    let waited = client.call_tool(call("fx__echo", json!({"text": "x"}))).await;
    let waited = waited.expect("a tool error, not a protocol error (unknown tool)");
    let message = first_text(&waited);
    assert_eq!(waited.is_error, Some(true), "{message}");
    assert!(
        message.contains("restarting") && message.contains("300ms") && message.contains("fx"),
        "says it is restarting, for how long it waited and which server: {message}"
    );
    assert!(
        tool_names(&client).await.contains(&"fx__echo".to_owned()),
        "its tools stay listed while it restarts"
    );
    // It comes back with the same catalog: calls work again, and clients were told nothing.
    let back = client.call_tool(call("fx__slow", json!({"steps": 1, "step_ms": 0})));
    let mut back = tokio::time::timeout(Duration::from_secs(20), back).await.expect("no hang");
    while back.as_ref().is_ok_and(|r| r.is_error == Some(true)) {
        let again = client.call_tool(call("fx__slow", json!({"steps": 1, "step_ms": 0})));
        back = tokio::time::timeout(Duration::from_secs(20), again).await.expect("no hang");
    }
    assert_eq!(first_text(&back.expect("the upstream is back")), "done 1");
    let told: Vec<_> =
        notes.drain().into_iter().filter(|n| matches!(n, Note::ToolsChanged)).collect();
    assert!(told.is_empty(), "no list_changed for a catalog that did not change: {told:?}");
    client.cancel().await.expect("close");
    all_gone(&[gateway]).await;
}

#[tokio::test]
async fn sigterm_lets_a_call_in_flight_finish_then_ends_every_child() {
    let config = ConfigDir::new(&fixture_knowing_its_pid("fx"));
    let gateway = HttpGateway::start(&config.path()).await;
    let toolgate = gateway.pid();
    let (client, mut notes) = recording_http_client(&gateway.url).await;
    let child = upstream_pid(&client).await;
    let slow = tokio::spawn(async move {
        let call = client.call_tool(call("fx__slow", json!({"steps": 5, "step_ms": 200})));
        let result = tokio::time::timeout(Duration::from_secs(20), call).await;
        (client, result.expect("the call in flight is answered, not dropped"))
    });
    // The call is in flight once the upstream reports progress on it.
    notes.next_matching(|n| matches!(n, Note::Progress(_)).then_some(())).await;
    let status = gateway.terminate().await;
    let (_client, result) = slow.await.expect("call task");
    let result = result.expect("the call in flight completed during the grace period");
    assert_eq!(first_text(&result), "done 5");
    assert!(status.success(), "toolgate exits 0 after SIGTERM: {status:?}");
    all_gone(&[toolgate, child]).await;
}

#[tokio::test]
async fn an_upstream_timeout_names_the_tool_and_the_timeout() {
    let config =
        ConfigDir::new(&format!("{}timeout = \"1s\"\n", fixture_server("fx", "stdio", None)));
    let (client, _notes, _pid) = recording_stdio_client(&config.path()).await;
    let result = tokio::time::timeout(
        Duration::from_secs(20),
        client.call_tool(call("fx__slow", json!({"steps": 1, "step_ms": 5000}))),
    )
    .await
    .expect("the timeout ends the call")
    .expect("a timeout is a tool error result");
    assert_eq!(result.is_error, Some(true));
    let text = first_text(&result);
    assert!(text.contains("slow") && text.contains("1s"), "{text}");
    // Progress resets the timeout: many short steps take longer than 1s in all.
    let patient = client
        .call_tool(call("fx__slow", json!({"steps": 6, "step_ms": 400})))
        .await
        .expect("progress keeps the call alive");
    assert_eq!(first_text(&patient), "done 6");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn progress_cannot_keep_a_call_alive_past_the_hard_maximum() {
    let config =
        ConfigDir::new(&format!("{}timeout = \"300ms\"\n", fixture_server("fx", "stdio", None)));
    let gateway = HttpGateway::start(&config.path()).await;
    let (client, _notes) = recording_http_client(&gateway.url).await;
    // Progress every 100ms for 60s: only the hard maximum (10 x 300ms) ends it.
    let started = tokio::time::Instant::now();
    let result = client
        .call_tool(call("fx__slow", json!({"steps": 600, "step_ms": 100})))
        .await
        .expect("a timeout is a tool error result");
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
    assert_eq!(result.is_error, Some(true));
    let text = first_text(&result);
    assert!(text.contains("`slow`") && text.contains("3s in all"), "{text}");
    // The upstream was told to stop.
    gateway.wait_for_log(&["slow: cancelled", "fx"]).await;
    client.cancel().await.expect("close");
    assert!(gateway.terminate().await.success());
}

/// The resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("process status");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("a VmRSS line");
    line.split_whitespace().nth(1).and_then(|kib| kib.parse().ok()).expect("VmRSS in kB")
}

/// Sessions calling at once while their upstream is killed.
const SESSIONS: usize = 32;

/// An upstream killed 100 times while 32 HTTP sessions call it: no call hangs past its bound,
/// none is told of an unknown tool, only calls already sent to a killed process fail, no
/// child process is left after toolgate, and toolgate's memory is back where it was once the
/// sessions are warm.
#[tokio::test]
async fn an_upstream_killed_100_times_while_32_http_sessions_call_it_loses_nothing() {
    let config = ConfigDir::new(&fixture_knowing_its_pid("fx"));
    let gateway = HttpGateway::start(&config.path()).await;
    let toolgate = gateway.pid();
    let (control, _) = recording_http_client(&gateway.url).await;
    let mut sessions = Vec::new();
    for _ in 0..SESSIONS {
        sessions.push(Arc::new(recording_http_client(&gateway.url).await.0));
    }
    // Warm: every session has called, so what stays allocated per session is in the baseline.
    for _ in 0..3 {
        let calls = sessions.iter().map(|s| echo_during_kills(s, "warm"));
        assert!(futures::future::join_all(calls).await.iter().all(Option::is_none));
    }
    let before = rss_kib(toolgate);
    let stop = tokio_util::sync::CancellationToken::new();
    let load: Vec<_> = sessions
        .iter()
        .enumerate()
        .map(|(i, session)| {
            let (session, stop) = (session.clone(), stop.clone());
            tokio::spawn(async move {
                let (mut ok, mut failures) = (0u32, Vec::new());
                while !stop.is_cancelled() {
                    match echo_during_kills(&session, &format!("s{i}")).await {
                        None => ok += 1,
                        Some(message) => failures.push(message),
                    }
                }
                (ok, failures)
            })
        })
        .collect();
    let mut seen = Vec::new();
    for _ in 0..100 {
        let child = upstream_pid(&control).await;
        assert!(seen.last() != Some(&child), "a new process after each kill");
        seen.push(child);
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .expect("kill the upstream");
    }
    seen.push(upstream_pid(&control).await);
    stop.cancel();
    let (mut answered, mut failures) = (0, Vec::new());
    for worker in load {
        let (ok, failed) = worker.await.expect("load worker");
        answered += ok;
        failures.extend(failed);
    }
    eprintln!("{answered} calls answered, {} failed in flight at a kill", failures.len());
    assert!(answered > 0, "calls were answered between the kills");
    for failure in &failures {
        assert!(failure.contains("connection lost during tools/call `echo`"), "{failure}");
    }
    assert!(failures.len() <= SESSIONS * 100, "at most one failure per session and kill");
    // Every session still works, and memory is back within a few MiB of the warm baseline.
    let calls = sessions.iter().map(|s| echo_during_kills(s, "after"));
    assert!(futures::future::join_all(calls).await.iter().all(Option::is_none));
    let after = rss_kib(toolgate);
    eprintln!("toolgate: {before} KiB warm, {after} KiB after 100 kills");
    assert!(after <= before + 8 * 1024, "toolgate grew from {before} KiB to {after} KiB");
    drop(sessions);
    assert!(gateway.terminate().await.success());
    seen.push(toolgate);
    all_gone(&seen).await;
}
