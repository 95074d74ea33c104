//! A stdio server's stderr is read safely (issue 23): a line with no end does not grow the
//! gateway, and bytes that are not UTF-8 do not stop the reading (a child whose stderr pipe
//! is not read blocks on its next write and stops answering).

use std::time::Duration;

use tokio::time::Instant;

use rmcp::model::CallToolRequestParams;
use serde_json::json;

use crate::support::*;

/// Bytes of stderr written with no newline: 128 MiB, which the old reader kept whole.
const HUGE_LINE: u64 = 128 * 1024 * 1024;

/// The gateway's peak resident memory, in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("process status");
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("a VmHWM line");
    line.split_whitespace().nth(1).and_then(|kib| kib.parse().ok()).expect("VmHWM in kB")
}

/// A stdio fixture run by `sh` after `prelude` (whose stderr is the server's).
fn fixture_after(prelude: &str, extra: &str) -> String {
    let script = format!("{prelude}; exec {}", fixture_bin().display());
    format!(
        "[servers.fx]\ncommand = \"sh\"\nargs = [\"-c\", {}]\nrequired = true\n{extra}",
        toml_str(&script)
    )
}

#[tokio::test]
async fn a_stderr_line_without_end_does_not_grow_the_gateway() {
    let prelude =
        format!("head -c {HUGE_LINE} /dev/zero | tr '\\0' x >&2; echo ' and the end' >&2");
    let config = ConfigDir::new(&fixture_after(&prelude, ""));
    let started = Instant::now();
    let gateway = HttpGateway::start(&config.path()).await;
    assert_http_healthy(&gateway.url).await;
    let peak = peak_rss_kib(gateway.pid());
    eprintln!(
        "{HUGE_LINE} bytes of stderr in {:?}; gateway peak RSS {peak} KiB",
        started.elapsed()
    );
    assert!(peak < 96 * 1024, "the gateway peaked at {peak} KiB");
    // The line was logged cut, and marked.
    gateway.wait_for_log(&["more bytes]", "fx"]).await;
    assert!(gateway.terminate().await.success());
}

#[tokio::test]
async fn invalid_utf8_on_stderr_does_not_stop_the_reading() {
    // Written before the server starts; then each call writes 256 KiB more, four times what a
    // pipe holds: unread, the server would block on it and its call time out.
    let prelude = r"printf 'bad \377\376 bytes\n' >&2";
    let config = ConfigDir::new(&fixture_after(prelude, "timeout = \"10s\"\n"));
    let gateway = HttpGateway::start(&config.path()).await;
    let client = http_client(&gateway.url).await;
    let line = "x".repeat(256 * 1024);
    for _ in 0..3 {
        let started = Instant::now();
        let result = client
            .call_tool(
                CallToolRequestParams::new("fx__stderr")
                    .with_arguments(object(json!({ "line": line }))),
            )
            .await
            .expect("the call is answered");
        assert_eq!(first_text(&result), "ok");
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    }
    // The bad line was logged, decoded lossily.
    gateway.wait_for_log(&["bad \u{fffd}\u{fffd} bytes"]).await;
    client.cancel().await.expect("close");
    assert!(gateway.terminate().await.success());
}
