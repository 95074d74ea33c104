//! A real browser as a client of the HTTP front: headless Chromium loads a page (served by the
//! test on 127.0.0.1) whose script opens an MCP session with `fetch`, lists the tools, calls the
//! fixture's `echo` and a tool that reports progress (its answer an SSE stream), and ends the
//! session with `DELETE`, all cross-origin, so every step passes Chromium's own CORS checks
//! (preflights, and reading `Mcp-Session-Id` only when it is exposed). The page writes what it
//! got as JSON into the DOM, which Chromium dumps (`--dump-dom`) when the page is done.
//!
//! Chromium is Debian's (`deps::chromium`: `$TOOLGATE_TEST_CHROMIUM`, or `/usr/bin/chromium`,
//! which `scripts/install-test-deps` installs); without it these fail, saying how to install
//! it, unless `TOOLGATE_TEST_SKIP_BROWSER=1` skips them.
//!
//! Other origins are given to the page by name: `--host-resolver-rules` maps `app.test` and
//! `evil.test` to 127.0.0.1 (and every other name to nothing), so the page server is reached
//! as `http://app.test:PORT` and the browser sends that as the `Origin`.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::process::Command;

use crate::deps::chromium;
use crate::support::*;

/// The page; `__GATEWAY__` stands for the gateway's URL.
const PAGE: &str = include_str!("browser/page.html");

/// How long Chromium may take to load the page and run its script to the end, on a busy
/// 2-core machine.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(90);

/// Names Chromium resolves, all to the loopback address; nothing else resolves.
const HOST_RULES: &str =
    "MAP app.test 127.0.0.1, MAP evil.test 127.0.0.1, MAP * ~NOTFOUND, EXCLUDE 127.0.0.1";

/// The page server: bound first, so that its port can go into the gateway's config, and
/// serving once the gateway's URL is known.
struct PageServer {
    listener: tokio::net::TcpListener,
    port: u16,
}

impl PageServer {
    async fn bind() -> PageServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("address").port();
        PageServer { listener, port }
    }

    /// Serves the page for `gateway` at `/`, whatever the `Host`.
    fn serve(self, gateway: &str) {
        let page = PAGE.replace("__GATEWAY__", gateway);
        let app = axum::Router::new().route(
            "/",
            axum::routing::get(move || {
                let page = page.clone();
                async move { axum::response::Html(page) }
            }),
        );
        tokio::spawn(async move { axum::serve(self.listener, app).await });
    }
}

/// Loads `url` in a fresh headless Chromium and returns the page's report.
async fn open_page(chromium: &Path, url: &str) -> Value {
    let profile = tempfile::tempdir().expect("profile dir");
    let mut command = Command::new(chromium);
    command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--no-default-browser-check",
            "--no-proxy-server",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-default-apps",
            "--disable-extensions",
            "--disable-sync",
            "--enable-logging=stderr",
        ])
        .arg(format!("--host-resolver-rules={HOST_RULES}"))
        .arg(format!("--user-data-dir={}", profile.path().display()))
        // Virtual time stands still while a fetch is pending, and the page sets no timers: the
        // DOM is dumped once its script has written the report, however long the calls take.
        .arg("--virtual-time-budget=10000")
        .arg("--dump-dom")
        .arg(url)
        .env("HOME", profile.path())
        .env("XDG_CONFIG_HOME", profile.path())
        .env("XDG_CACHE_HOME", profile.path())
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(BROWSER_TIMEOUT, command.output())
        .await
        .unwrap_or_else(|_| panic!("Chromium did not finish {url} in {BROWSER_TIMEOUT:?}"))
        .expect("run Chromium");
    let dom = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let said = || {
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.contains("dbus")).collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    };
    let report = dom
        .split_once("<pre id=\"report\">")
        .and_then(|(_, rest)| rest.split_once("</pre>"))
        .map(|(report, _)| report)
        .unwrap_or_else(|| {
            panic!("no report in Chromium's DOM of {url} ({}):\n{dom}\n{}", output.status, said())
        });
    eprintln!("{url}: {report}");
    serde_json::from_str(report).unwrap_or_else(|e| {
        panic!("the page's report {report:?} is not JSON ({e}); Chromium said:\n{}", said())
    })
}

/// Checks that the page at `origin` went through every step and got its echo back.
fn assert_connected(report: &Value, origin: &str) {
    assert_eq!(report["origin"], origin, "{report:#}");
    assert_eq!(report["step"], "done", "the page stopped: {report:#}");
    assert!(report["session"].as_str().is_some_and(|s| !s.is_empty()), "{report:#}");
    assert_eq!(report["protocolVersion"], "2025-11-25", "{report:#}");
    assert_eq!(report["initializedStatus"], 202, "{report:#}");
    let tools = report["tools"].as_array().expect("tools");
    assert!(tools.iter().any(|t| t == "fx__echo"), "{report:#}");
    assert_eq!(report["isError"], false, "{report:#}");
    assert_eq!(report["echo"], format!("hello from {origin}"), "{report:#}");
    // The last answer, with progress before it, came as an SSE stream; the others as JSON.
    assert_eq!(report["progress"], json!([0, 50, 100]), "{report:#}");
    assert_eq!(report["progressResult"], "Progress test completed", "{report:#}");
    let types: Vec<&str> = report["contentTypes"]
        .as_array()
        .expect("content types")
        .iter()
        .map(|t| t.as_str().unwrap_or("none").split(';').next().unwrap_or_default().trim())
        .collect();
    assert_eq!(
        types,
        ["application/json", "none", "application/json", "application/json", "text/event-stream"],
        "initialize, notifications/initialized, tools/list, tools/call, the call with progress"
    );
    let deleted = report["deleteStatus"].as_u64().expect("DELETE status");
    assert!((200..300).contains(&deleted), "{report:#}");
}

#[tokio::test]
async fn a_page_on_a_loopback_origin_lists_and_calls_a_tool_through_the_gateway() {
    let Some(chromium) = chromium() else { return };
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let pages = PageServer::bind().await;
    let port = pages.port;
    let gateway = HttpGateway::start(&config.path()).await;
    pages.serve(&gateway.url);

    let origin = format!("http://127.0.0.1:{port}");
    let report = open_page(&chromium, &format!("{origin}/")).await;
    assert_connected(&report, &origin);
    assert!(gateway.terminate().await.success());
}

/// One gateway allowing `http://app.test:PORT`: a page from `evil.test` fails at its first
/// request (the preflight gets no `Access-Control-Allow-Origin`) and the gateway runs no call
/// for it; then a page from `app.test` goes through, and the audit log holds its calls alone.
#[tokio::test]
async fn a_page_on_an_allowed_origin_connects_and_one_on_another_origin_calls_nothing() {
    let Some(chromium) = chromium() else { return };
    let pages = PageServer::bind().await;
    let port = pages.port;
    let config = ConfigDir::new(&format!(
        "[gateway]\nallowed_origins = [\"http://app.test:{port}\"]\n\n\
         [audit]\nfile = \"audit.jsonl\"\n\n{}",
        fixture_server("fx", "stdio", None)
    ));
    let gateway = HttpGateway::start(&config.path()).await;
    pages.serve(&gateway.url);

    let evil = format!("http://evil.test:{port}");
    let refused = open_page(&chromium, &format!("{evil}/")).await;
    assert_eq!(refused["origin"], evil, "{refused:#}");
    assert_eq!(refused["step"], "initialize", "{refused:#}");
    assert_eq!(refused["error"], "TypeError: Failed to fetch", "{refused:#}");
    assert!(refused.get("session").is_none(), "{refused:#}");

    let app = format!("http://app.test:{port}");
    let report = open_page(&chromium, &format!("{app}/")).await;
    assert_connected(&report, &app);

    // Ending the gateway writes out what is left of the audit log.
    assert!(gateway.terminate().await.success());
    let audit = std::fs::read_to_string(config.dir().join("audit.jsonl")).expect("audit log");
    let records: Vec<Value> =
        audit.lines().map(|line| serde_json::from_str(line).expect("a JSON record")).collect();
    let session = &report["session"];
    let others: Vec<&Value> =
        records.iter().filter(|r| r.get("session").is_some_and(|s| s != session)).collect();
    assert!(others.is_empty(), "records of another session than app.test's: {others:#?}");
    let started: Vec<&Value> =
        records.iter().filter(|record| record["kind"] == "tools/call/started").collect();
    let calls: Vec<(&Value, &Value)> =
        started.iter().map(|record| (&record["exposed"], &record["session"])).collect();
    assert_eq!(
        calls,
        [(&json!("fx__echo"), session), (&json!("fx__test_tool_with_progress"), session)],
        "app.test's two calls and nothing else: {started:#?}"
    );
    assert_eq!(started[0]["arguments"]["text"], format!("hello from {app}"), "{started:#?}");
}
