//! Clients nobody here wrote, talking to toolgate: the official Python SDK (`mcp` 2.x, in its
//! `legacy` and `auto` modes) and the TypeScript SDK v1, over stdio and streamable HTTP.

use std::path::Path;

use serde_json::{Value, json};
use tokio::process::Command;

use crate::deps;
use crate::support::*;

fn script() -> Value {
    json!([
        {"op": "info"},
        {"op": "list_tools"},
        {"op": "call_tool", "name": "fx__echo", "arguments": {"text": "from an sdk"}},
        {"op": "call_tool", "name": "fx__fail", "arguments": {"message": "expected"}},
        {"op": "call_tool", "name": "fx__absent", "arguments": {}},
        {"op": "read_resource", "uri": "test://static-text"},
        {"op": "get_prompt", "name": "fx__test_prompt_with_arguments",
         "arguments": {"arg1": "one", "arg2": "two"}},
        {"op": "list_prompts"},
        {"op": "ping"},
        {"op": "complete", "ref": {"type": "ref/prompt", "name": "fx__test_prompt_with_arguments"},
         "argument": {"name": "arg1", "value": ""}},
        {"op": "read_resource", "uri": "test://template/7/data"}
    ])
}

/// Runs a client script against toolgate; `target` is the transport word and its arguments.
async fn run_client(mut command: Command, mode: &str, target: &[&str]) -> Value {
    command
        .args(["--mode", mode, "--timeout", "60", "--script"])
        .arg(script().to_string())
        .args(target);
    let output = command.output().await.expect("run the SDK client");
    assert!(
        output.status.success(),
        "client failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    // The Python SDK warns when the gateway's answer to ending the session is not one it takes.
    assert!(!stderr.contains("Session termination failed"), "{stderr}");
    serde_json::from_slice(&output.stdout).expect("the client prints JSON")
}

fn check(report: &Value, expected_protocol: &[&str]) {
    let steps = report["steps"].as_array().expect("steps");
    let step = |i: usize| &steps[i];
    assert_eq!(report["connected"], true, "{report}");
    let protocol = report["protocolVersion"].as_str().unwrap_or_default();
    assert!(expected_protocol.contains(&protocol), "protocol {protocol} in {report}");
    let names = step(1)["names"].as_array().expect("tool names");
    assert!(names.contains(&json!("fx__echo")), "{names:?}");
    assert_eq!(step(2)["result"]["content"][0]["text"], "from an sdk", "{}", step(2));
    assert_eq!(step(3)["result"]["isError"], true, "{}", step(3));
    assert_eq!(step(4)["ok"], false, "an unknown tool is a protocol error: {}", step(4));
    assert_eq!(step(4)["error"]["code"], -32602, "{}", step(4));
    assert_eq!(step(5)["result"]["contents"][0]["uri"], "test://static-text", "{}", step(5));
    let prompt = step(6)["result"]["messages"].to_string();
    assert!(prompt.contains("one") && prompt.contains("two"), "{prompt}");
    assert!(
        step(7)["names"].as_array().expect("prompts").contains(&json!("fx__test_simple_prompt"))
    );
    assert!(step(9)["result"]["completion"]["values"].is_array(), "{}", step(9));
    assert!(step(10)["result"]["contents"].to_string().contains('7'), "{}", step(10));
    // `ping` was removed in 2026-07-28; a client of that era gets "method not found".
    if protocol == "2026-07-28" {
        assert_eq!(step(8)["error"]["code"], -32601, "{}", step(8));
    } else {
        assert_eq!(step(8)["ok"], true, "{}", step(8));
    }
}

fn python_command() -> Command {
    let mut command = Command::new(deps::python());
    command.arg(deps::client_script("py_client.py"));
    command
}

fn node_command() -> Command {
    let mut command = Command::new(deps::node());
    command.arg(deps::client_script("ts_client.mjs")).env("TOOLGATE_TEST_NPM_DIR", deps::npm_dir());
    command
}

fn stdio_target(config: &Path) -> Vec<String> {
    [
        "stdio",
        &toolgate_bin().to_string_lossy(),
        "serve",
        "--stdio",
        "--config",
        &config.to_string_lossy(),
    ]
    .map(str::to_owned)
    .to_vec()
}

async fn python_over_stdio(mode: &str, protocols: &[&str]) {
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let target = stdio_target(&config.path());
    let target: Vec<&str> = target.iter().map(String::as_str).collect();
    check(&run_client(python_command(), mode, &target).await, protocols);
}

async fn python_over_http(mode: &str, protocols: &[&str]) {
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let gateway = HttpGateway::start(&config.path()).await;
    check(&run_client(python_command(), mode, &["http", &gateway.url]).await, protocols);
    assert!(gateway.terminate().await.success());
}

#[tokio::test]
async fn python_sdk_legacy_over_stdio() {
    python_over_stdio("legacy", &["2025-11-25"]).await;
}

#[tokio::test]
async fn python_sdk_auto_over_stdio() {
    python_over_stdio("auto", &["2026-07-28"]).await;
}

#[tokio::test]
async fn python_sdk_legacy_over_http() {
    python_over_http("legacy", &["2025-11-25"]).await;
}

#[tokio::test]
async fn python_sdk_auto_over_http() {
    python_over_http("auto", &["2026-07-28"]).await;
}

#[tokio::test]
async fn typescript_sdk_over_stdio_and_http() {
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let target = stdio_target(&config.path());
    let target: Vec<&str> = target.iter().map(String::as_str).collect();
    check(&run_client(node_command(), "legacy", &target).await, &["2025-11-25"]);

    let gateway = HttpGateway::start(&config.path()).await;
    check(&run_client(node_command(), "legacy", &["http", &gateway.url]).await, &["2025-11-25"]);
    assert!(gateway.terminate().await.success());
}

/// A stdio MCP server of a few lines that writes its JSON as it likes: its `pretty` tool sends
/// progress when asked to, then a result with carriage returns between the JSON tokens (legal
/// JSON whitespace; a line feed would end the message on stdio).
const CR_SERVER: &str = r#"
import json, sys

def send(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()

for line in sys.stdin:
    message = json.loads(line)
    ident = message.get("id")
    method = message.get("method")
    if ident is None or method is None:
        continue
    if method == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"],
                  "capabilities": {"tools": {}},
                  "serverInfo": {"name": "cr", "version": "1"}}
        send(json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}))
    elif method == "tools/list":
        tool = {"name": "pretty", "inputSchema": {"type": "object"}}
        send(json.dumps({"jsonrpc": "2.0", "id": ident, "result": {"tools": [tool]}}))
    elif method == "tools/call":
        token = (message["params"].get("_meta") or {}).get("progressToken")
        if token is not None:
            send(json.dumps({"jsonrpc": "2.0", "method": "notifications/progress",
                             "params": {"progressToken": token, "progress": 1, "total": 2}}))
        send('{"jsonrpc":"2.0","id":' + json.dumps(ident) + ',"result":{\r"content":\r[\r{"type":"text",\r'
             '"text":"kept\\r\\nframed"}\r],\r"isError":false\r}\r}')
    else:
        send(json.dumps({"jsonrpc": "2.0", "id": ident,
                         "error": {"code": -32601, "message": "Method not found"}}))
"#;

/// A raw result whose JSON has carriage returns between its tokens, answered on an event
/// stream (progress came first), reaches the Python SDK whole: each event stays one `data:`
/// line (before, the SDK failed with "Failed to parse SSE message" and lost the answer).
#[tokio::test]
async fn python_sdk_reads_raw_results_with_line_breaks_on_event_streams() {
    let server = ConfigDir::with_file("cr_server.py", CR_SERVER);
    let config = ConfigDir::new(&format!(
        "[servers.cr]\ncommand = {}\nargs = [{}]\n",
        toml_str(&deps::python().to_string_lossy()),
        toml_str(&server.path().to_string_lossy()),
    ));
    let gateway = HttpGateway::start(&config.path()).await;
    for mode in ["legacy", "auto"] {
        let steps = json!([
            {"op": "call_tool", "name": "cr__pretty", "arguments": {}, "progress": true},
            {"op": "call_tool", "name": "cr__pretty", "arguments": {}},
        ]);
        let output = python_command()
            .args(["--mode", mode, "--timeout", "20", "--script"])
            .arg(steps.to_string())
            .args(["http", &gateway.url])
            .output()
            .await
            .expect("run the SDK client");
        let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
            panic!("{mode}: {}", String::from_utf8_lossy(&output.stderr));
        });
        for step in report["steps"].as_array().expect("steps") {
            assert_eq!(step["ok"], true, "{mode}: {report}");
            assert_eq!(step["result"]["content"][0]["text"], "kept\r\nframed", "{mode}: {step}");
        }
        let progress = &report["steps"][0]["progress"];
        assert_eq!(
            progress[0]["progress"], 1.0,
            "{mode}: the answer was an event stream: {report}"
        );
        let notifications = report["notifications"].to_string();
        assert!(!notifications.contains("transportError"), "{mode}: {notifications}");
    }
    assert!(gateway.terminate().await.success());
}
