//! The no-leak test: `toolgate serve` with the `redact` interceptor (results, and arguments of
//! one tool), an audit log, a webhook, the admin `/events` stream and the most verbose logging
//! (toolgate's and the fixture upstream's, which logs its own traffic to the stderr toolgate
//! relays). The fixture is called with one value of every detector kind, returns them as
//! text, `structuredContent` and an embedded resource, and serves them as a resource. The
//! client must get `[REDACTED:<kind>]` for each, and no value may appear in anything toolgate
//! wrote: stdout, stderr, the audit log, the webhook's bodies, the `/events` stream.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt as _;
use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams, ResourceContents};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::Command;

use crate::support::*;

/// One value of each kind (public example values or made up in the real shape; none is a
/// real secret), and how it is written in the text the tools get.
const VALUES: &[(&str, &str, &str)] = &[
    ("aws_access_key", "AKIAIOSFODNN7EXAMPLE", "{}"),
    ("aws_secret_key", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key={}"),
    ("github_token", "ghp_1234567890abcdefghijABCDEFGHIJ123456", "{}"),
    ("openai_key", "sk-proj-EXAMPLEexample0123456789EXAMPLEexample0123", "{}"),
    ("anthropic_key", "sk-ant-api03-EXAMPLEexample0123456789-EXAMPLEexample_0123456789AA", "{}"),
    ("slack_token", "xoxb-not-a-real-token-this-will-not-work", "{}"),
    (
        "slack_webhook",
        "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "{}",
    ),
    ("google_api_key", "AIzaSyEXAMPLE-example_0123456789ABCDEFG", "{}"),
    ("stripe_key", "sk_test_4eC39HqLyjWDarjtT1zdp7dc", "{}"),
    (
        "private_key",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAtoolgateNOLEAKexample0123456789\n-----END RSA PRIVATE KEY-----",
        "{}",
    ),
    (
        "jwt",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        "{}",
    ),
    ("url_credentials", "s3cr3t-user:s3cr3t-pass", "postgres://{}@db.example.com/app"),
    ("bearer_token", "0123456789abcdefghijKLMN", "Authorization: Bearer {}"),
    ("email", "jane.doe@example.com", "{}"),
    ("card_number", "4242 4242 4242 4242", "{}"),
    ("iban", "GB82 WEST 1234 5698 7654 32", "{}"),
    ("employee_id", "EMP-004211", "{}"),
];

/// What must appear nowhere: each value, and the forms it may be written in (JSON-escaped,
/// without its spaces, its distinctive part).
fn forbidden() -> Vec<String> {
    let mut out = Vec::new();
    for (_, value, _) in VALUES {
        out.push((*value).to_owned());
        let escaped = serde_json::to_string(value).expect("a string");
        out.push(escaped.trim_matches('"').to_owned());
        if value.contains(' ') {
            out.push(value.replace(' ', ""));
        }
    }
    out.extend(
        [
            "MIIEpAIBAAKCAQEAtoolgateNOLEAKexample0123456789",
            "s3cr3t-pass",
            "EXAMPLEexample0123456789",
        ]
        .map(str::to_owned),
    );
    out
}

/// The text the tools are given: one value of each kind, each on its line after its kind.
fn secret_text() -> String {
    VALUES
        .iter()
        .map(|(kind, value, written)| format!("{kind}: {}\n", written.replace("{}", value)))
        .collect()
}

/// The same with each value replaced by its marker: what the client must get.
fn redacted_text() -> String {
    VALUES
        .iter()
        .map(|(kind, _, written)| {
            format!("{kind}: {}\n", written.replace("{}", &format!("[REDACTED:{kind}]")))
        })
        .collect()
}

const ADMIN_TOKEN: &str = "admin-token-0123456789";

/// Everything a process wrote on one stream, kept as it arrives.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<String>>);

impl Captured {
    fn text(&self) -> String {
        self.0.lock().unwrap().clone()
    }
}

/// A webhook receiver on 127.0.0.1 that keeps every body as it arrived, as text.
async fn webhook() -> (String, Captured, tokio::sync::mpsc::UnboundedReceiver<Value>) {
    let bodies = Captured::default();
    let (sender, events) = tokio::sync::mpsc::unbounded_channel();
    let kept = bodies.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: String| {
            let (kept, sender) = (kept.clone(), sender.clone());
            async move {
                kept.0.lock().unwrap().push_str(&body);
                kept.0.lock().unwrap().push('\n');
                let _ = sender.send(serde_json::from_str(&body).unwrap_or(Value::Null));
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/hook", listener.local_addr().expect("address"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, bodies, events)
}

/// `toolgate serve` on HTTP with every log level on, its stdout and stderr captured whole.
struct Gateway {
    child: tokio::process::Child,
    url: String,
    admin: String,
    stdout: Captured,
    stderr: Captured,
    stdout_done: tokio::task::JoinHandle<()>,
    stderr_done: tokio::task::JoinHandle<()>,
}

impl Gateway {
    async fn start(config: &std::path::Path) -> Gateway {
        let mut child = Command::new(toolgate_bin())
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(config)
            // toolgate's log at its most verbose (rmcp is capped by toolgate itself), and the
            // fixture upstream's too: it inherits RUST_LOG and logs every message it gets and
            // sends, to the stderr toolgate relays line by line.
            .env("TOOLGATE_LOG", "trace")
            .env("RUST_LOG", "trace")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn toolgate serve");
        let (stdout, stderr) = (Captured::default(), Captured::default());
        let mut out = child.stdout.take().expect("stdout");
        let kept = stdout.clone();
        let stdout_done = tokio::spawn(async move {
            let mut bytes = Vec::new();
            let _ = out.read_to_end(&mut bytes).await;
            kept.0.lock().unwrap().push_str(&String::from_utf8_lossy(&bytes));
        });
        let (ready, mut waiting) = tokio::sync::mpsc::unbounded_channel();
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let kept = stderr.clone();
        let stderr_done = tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                for marker in ["serving MCP at ", "admin API at "] {
                    if let Some(at) = line.find(marker) {
                        let url = line[at + marker.len()..].split_whitespace().next();
                        let _ = ready.send((marker, url.unwrap_or_default().to_owned()));
                    }
                }
                let mut all = kept.0.lock().unwrap();
                all.push_str(&line);
                all.push('\n');
            }
        });
        let (mut url, mut admin) = (String::new(), String::new());
        while url.is_empty() || admin.is_empty() {
            let (marker, found) = tokio::time::timeout(Duration::from_secs(30), waiting.recv())
                .await
                .expect("toolgate ready in time")
                .expect("toolgate exited before serving");
            if marker.starts_with("serving") {
                url = found;
            } else {
                admin = found;
            }
        }
        Gateway { child, url, admin, stdout, stderr, stdout_done, stderr_done }
    }

    /// SIGTERM; waits for the exit and the end of both streams.
    async fn stop(mut self) -> (String, String) {
        let pid = nix::unistd::Pid::from_raw(self.child.id().expect("running") as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("signal");
        let status = tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .expect("exits after SIGTERM")
            .expect("wait");
        assert!(status.success(), "{status}");
        let _ = tokio::time::timeout(Duration::from_secs(10), &mut self.stdout_done).await;
        let _ = tokio::time::timeout(Duration::from_secs(10), &mut self.stderr_done).await;
        (self.stdout.text(), self.stderr.text())
    }
}

/// The admin API's `/events` stream, kept whole as text.
async fn admin_events(admin: &str) -> Captured {
    let response = reqwest::Client::new()
        .get(format!("{admin}/events"))
        .header("authorization", format!("Bearer {ADMIN_TOKEN}"))
        .send()
        .await
        .expect("GET /events");
    assert!(response.status().is_success(), "{}", response.status());
    let captured = Captured::default();
    let kept = captured.clone();
    tokio::spawn(async move {
        let mut body = response.bytes_stream();
        while let Some(Ok(chunk)) = body.next().await {
            kept.0.lock().unwrap().push_str(&String::from_utf8_lossy(&chunk));
        }
    });
    captured
}

fn texts(result: &rmcp::model::CallToolResult) -> Vec<String> {
    result
        .content
        .iter()
        .filter_map(|block| {
            let json = serde_json::to_value(block).expect("serializes");
            json["text"].as_str().or_else(|| json["resource"]["text"].as_str()).map(str::to_owned)
        })
        .collect()
}

#[tokio::test]
async fn no_redacted_value_appears_anywhere_toolgate_writes() {
    let (hook, hook_bodies, mut hook_events) = webhook().await;
    let custom = r#"custom = [{ name = "employee_id", regex = "EMP-[0-9]{6}" }]"#;
    let config = ConfigDir::new(&format!(
        "{}\n\
         [[pipeline]]\nkind = \"redact\"\nname = \"redact_results\"\n{custom}\n\n\
         [[pipeline]]\nkind = \"redact\"\nname = \"redact_echo_arguments\"\ntools = [\"echo\"]\n\
         arguments = true\nresults = false\n{custom}\n\n\
         [audit]\nfile = \"audit.jsonl\"\n[[audit.webhook]]\nurl = {}\n\n\
         [admin]\nlisten = \"127.0.0.1:0\"\ntokens = {{ ops = \"{ADMIN_TOKEN}\" }}\n",
        fixture_server("fx", "stdio", None),
        toml_str(&hook),
    ));
    let gateway = Gateway::start(&config.path()).await;
    let events = admin_events(&gateway.admin).await;
    let client = http_client(&gateway.url).await;
    let text = secret_text();
    let expected = redacted_text();

    // The arguments of `echo` are redacted before the upstream sees them: it echoes markers.
    let echoed = client
        .call_tool(
            CallToolRequestParams::new("fx__echo").with_arguments(object(json!({"text": text}))),
        )
        .await
        .expect("echo");
    assert_eq!(texts(&echoed), std::slice::from_ref(&expected));

    // `rich_echo` gets them as they are and returns them three ways; the result is redacted.
    let rich = client
        .call_tool(
            CallToolRequestParams::new("fx__rich_echo")
                .with_arguments(object(json!({"text": text}))),
        )
        .await
        .expect("rich_echo");
    assert_eq!(texts(&rich), [expected.clone(), expected.clone()], "text and embedded resource");
    assert_eq!(rich.structured_content, Some(json!({"text": expected})));

    // The upstream kept the last text; reading it as a resource is redacted too.
    let read = client
        .read_resource(ReadResourceRequestParams::new("test://rich-echo"))
        .await
        .expect("resources/read");
    let ResourceContents::TextResourceContents { text: read, .. } = &read.contents[0] else {
        panic!("a text resource: {read:?}")
    };
    assert_eq!(read, &expected);

    // Every event of the three requests has reached the webhook before toolgate stops.
    let mut seen = Vec::new();
    while seen.iter().filter(|k: &&String| k.ends_with("/finished")).count() < 3
        || seen.iter().filter(|k: &&String| *k == "transform/applied").count() < 3
    {
        let event = tokio::time::timeout(Duration::from_secs(30), hook_events.recv())
            .await
            .unwrap_or_else(|_| panic!("the webhook got only {seen:?}"))
            .expect("the receiver is up");
        seen.push(event["kind"].as_str().unwrap_or_default().to_owned());
    }
    client.cancel().await.expect("close");
    let (stdout, stderr) = gateway.stop().await;
    let audit = std::fs::read_to_string(config.dir().join("audit.jsonl")).expect("the audit log");
    let events = events.text();
    let hook = hook_bodies.text();

    // What was published says what was redacted, by kind, and where.
    let applied: Vec<Value> = audit
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("JSON lines"))
        .filter(|record| record["kind"] == "transform/applied")
        .collect();
    let parts: Vec<(&str, &str)> = applied
        .iter()
        .map(|r| (r["interceptor"].as_str().unwrap(), r["part"].as_str().unwrap()))
        .collect();
    assert_eq!(
        parts,
        [
            ("redact_echo_arguments", "arguments"),
            ("redact_results", "result"),
            ("redact_results", "resource")
        ],
        "echo's result had nothing left to redact"
    );
    let every_kind: serde_json::Map<String, Value> =
        VALUES.iter().map(|(kind, _, _)| ((*kind).to_owned(), json!(1))).collect();
    assert_eq!(applied[0]["counts"], Value::Object(every_kind.clone()));
    assert_eq!(applied[2]["counts"], Value::Object(every_kind));
    // The audit log recorded rich_echo's arguments, as the caller sent them, redacted.
    assert!(audit.contains(&serde_json::to_string(&expected).unwrap()), "{audit}");

    // Each channel really carried the calls, and the log really saw values to scrub (the
    // fixture logs the messages it gets; toolgate relays its stderr).
    assert!(events.contains("transform/applied") && events.contains("tools/call/started"));
    assert!(hook.contains("transform/applied") && hook.contains("resources/read/finished"));
    assert!(stderr.contains("upstream=fx") && stderr.contains("[REDACTED:"), "{stderr}");
    for (name, written) in [
        ("stdout", &stdout),
        ("stderr", &stderr),
        ("the audit log", &audit),
        ("the admin /events stream", &events),
        ("the webhook bodies", &hook),
    ] {
        for value in forbidden() {
            if let Some(at) = written.find(&value) {
                let from = written[..at].char_indices().rev().nth(200).map_or(0, |(i, _)| i);
                panic!("{value:?} is in {name}: ...{}", &written[from..(at + value.len())]);
            }
        }
    }
}
