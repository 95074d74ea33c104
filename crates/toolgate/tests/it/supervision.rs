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

/// The upstream child of toolgate `gateway` (the `toolgate-fixture`), waiting for a new one when
/// `previous` is given.
async fn upstream_child(gateway: u32, previous: Option<u32>) -> u32 {
    for _ in 0..400 {
        let found = children_of(gateway).into_iter().find(|pid| {
            Some(*pid) != previous
                && std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| c.contains("toolgate-fixture"))
        });
        if let Some(pid) = found {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no upstream child of toolgate {gateway}");
}

async fn wait_until_connected(client: &RecordingClient) {
    for _ in 0..400 {
        let call = client.call_tool(call("fx__echo", json!({"text": "up?"})));
        if let Ok(Ok(result)) = tokio::time::timeout(Duration::from_secs(10), call).await
            && result.is_error != Some(true)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the upstream did not come back");
}

#[tokio::test]
async fn an_upstream_killed_100_times_under_load_leaves_no_process_and_no_hung_call() {
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let (client, mut notes, gateway) = recording_stdio_client(&config.path()).await;
    let client = Arc::new(client);
    let stop = tokio_util::sync::CancellationToken::new();
    let mut load = Vec::new();
    for worker in 0..4 {
        let (client, stop) = (client.clone(), stop.clone());
        load.push(tokio::spawn(async move {
            let (mut ok, mut failed) = (0u32, 0u32);
            while !stop.is_cancelled() {
                let text = format!("w{worker}");
                let call = client.call_tool(call("fx__echo", json!({"text": text})));
                match tokio::time::timeout(Duration::from_secs(20), call).await {
                    Ok(Ok(result)) if result.is_error != Some(true) => {
                        assert_eq!(first_text(&result), text);
                        ok += 1;
                    }
                    Ok(_) => failed += 1,
                    Err(_) => panic!("a call hung while its upstream was being killed"),
                }
            }
            (ok, failed)
        }));
    }
    let mut seen = Vec::new();
    let mut previous = None;
    for _ in 0..100 {
        // Kill a connected upstream, not one still starting (that would count as a failed
        // start and back off for longer each time).
        wait_until_connected(&client).await;
        let child = upstream_child(gateway, previous).await;
        seen.push(child);
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .expect("kill the upstream");
        previous = Some(child);
    }
    // Back once more, then the load stops.
    upstream_child(gateway, previous).await;
    notes.drain();
    stop.cancel();
    let mut total_ok = 0;
    for worker in load {
        let (ok, _failed) = worker.await.expect("load worker");
        total_ok += ok;
    }
    assert!(total_ok > 0, "some calls succeeded between the kills");
    let mut echo = None;
    for _ in 0..100 {
        match client.call_tool(call("fx__echo", json!({"text": "after"}))).await {
            Ok(result) if result.is_error != Some(true) => {
                echo = Some(result);
                break;
            }
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    assert_eq!(first_text(&echo.expect("the upstream is back")), "after");
    let client = Arc::into_inner(client).expect("only owner left");
    client.cancel().await.expect("close: toolgate exits on stdin EOF");
    seen.push(gateway);
    all_gone(&seen).await;
}

#[tokio::test]
async fn sigterm_lets_a_call_in_flight_finish_then_ends_every_child() {
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let gateway = HttpGateway::start(&config.path()).await;
    let toolgate = gateway.pid();
    let child = upstream_child(toolgate, None).await;
    let client = http_client(&gateway.url).await;
    let slow = tokio::spawn(async move {
        let call = client.call_tool(call("fx__slow", json!({"steps": 5, "step_ms": 200})));
        let result = tokio::time::timeout(Duration::from_secs(20), call).await;
        (client, result.expect("the call in flight is answered, not dropped"))
    });
    // The call is in flight once the upstream has it; give it a moment to get there.
    tokio::time::sleep(Duration::from_millis(300)).await;
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
    let started = std::time::Instant::now();
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
