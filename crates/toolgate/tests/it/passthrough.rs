//! Tool results passed on as the upstream wrote them: over the HTTP front, a result no
//! interceptor reads reaches the client byte for byte (only the id is the client's), with
//! `resultType` put in front for a 2026-07-28 client; a result an interceptor reads is parsed
//! and written afresh, as every result is on the stdio front.
//!
//! The upstream is a stdio server of a few lines of Python that writes its JSON in ways a
//! parse and a fresh write would change (`\u00e9` escapes, `1e3`, `1.50`, a field no schema
//! has), so the bytes show which way a result went.

use serde_json::{Value, json};

use crate::deps::python;
use crate::support::*;

/// The result the server writes for every call, exactly.
const RESULT: &str = r#"{"content":[{"type":"text","text":"caf\u00e9 \ud83d\ude00 sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"}],"structuredContent":{"n":1e3,"f":1.50},"isError":false,"x-vendor":{"kept":true}}"#;

/// A stdio MCP server in Python's standard library that answers every `tools/call` with
/// [`RESULT`].
const SERVER: &str = r#"
import json, sys
RESULT = open(sys.argv[1]).read()
# With "modern", it speaks 2026-07-28 when asked with server/discover, and its results then
# name their resultType.
MODERN = sys.argv[2:] == ["modern"]
TOOL = {"name": "odd", "description": "answers in JSON written its own way",
        "inputSchema": {"type": "object"}}
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message or "method" not in message:
        continue
    method = message["method"]
    if method == "initialize":
        result = json.dumps({"protocolVersion": message["params"]["protocolVersion"],
                             "capabilities": {"tools": {}},
                             "serverInfo": {"name": "odd", "version": "1"}})
    elif method == "server/discover" and MODERN:
        result = json.dumps({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                             "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "private",
                             "_meta": {"io.modelcontextprotocol/serverInfo":
                                       {"name": "odd", "version": "1"}}})
    elif method == "tools/list":
        result = json.dumps({"tools": [TOOL]})
    elif method == "tools/call" and MODERN:
        result = '{"resultType":"complete",' + RESULT[1:]
    elif method == "tools/call":
        result = RESULT
    else:
        result = "{}"
    sys.stdout.write('{"jsonrpc":"2.0","id":%s,"result":%s}\n' % (json.dumps(message["id"]), result))
    sys.stdout.flush()
"#;

/// The server's files, and a config serving it as `odd` with `pipeline` after it.
struct Setup {
    _server: tempfile::TempDir,
    config: ConfigDir,
}

fn setup(pipeline: &str) -> Setup {
    setup_with(pipeline, false)
}

/// [`setup`], with a server that speaks 2026-07-28 when `modern`.
fn setup_with(pipeline: &str, modern: bool) -> Setup {
    let server = tempfile::tempdir().expect("temp dir");
    let script = server.path().join("server.py");
    let result = server.path().join("result.json");
    std::fs::write(&script, SERVER).expect("write the server");
    std::fs::write(&result, RESULT).expect("write the result");
    let config = ConfigDir::new(&format!(
        "[servers.odd]\ncommand = {}\nargs = [{}, {}{}]\n\n{pipeline}",
        toml_str(&python().to_string_lossy()),
        toml_str(&script.to_string_lossy()),
        toml_str(&result.to_string_lossy()),
        if modern { ", \"modern\"" } else { "" },
    ));
    Setup { _server: server, config }
}

/// `tools/call odd__odd` in a fresh 2025-11-25 session: the response body as sent.
async fn call_in_session(url: &str) -> String {
    let http = reqwest::Client::new();
    let post = |session: Option<&str>, body: Value| {
        let mut request = http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25");
        }
        request.send()
    };
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "passthrough-test", "version": "1"}}});
    let response = post(None, initialize).await.expect("initialize");
    let session = response.headers()["mcp-session-id"].to_str().expect("ascii").to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(Some(&session), initialized).await.expect("initialized").status(), 202);
    let call = json!({"jsonrpc": "2.0", "id": "call-1", "method": "tools/call",
                      "params": {"name": "odd__odd", "arguments": {}}});
    let response = post(Some(&session), call).await.expect("called");
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    response.text().await.expect("body")
}

/// `tools/call odd__odd` as a 2026-07-28 request without a session: the body as sent.
async fn call_stateless(url: &str) -> String {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "passthrough-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                      "params": {"name": "odd__odd", "arguments": {}, "_meta": meta}});
    let response = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "odd__odd")
        .body(call.to_string())
        .send()
        .await
        .expect("called");
    let status = response.status();
    let body = response.text().await.expect("body");
    assert_eq!(status, 200, "{body}");
    body
}

/// The text the server wrote, as a client reads it.
fn text_of(body: &str) -> String {
    let answer: Value = serde_json::from_str(body).expect("a JSON answer");
    answer["result"]["content"][0]["text"].as_str().expect("a text block").to_owned()
}

/// Both eras' clients of `setup`'s gateway get the result as the upstream wrote it: a
/// 2025-11-25 client exactly, a 2026-07-28 client with the result type in front.
async fn assert_passed_on_as_written(setup: &Setup) {
    let gateway = HttpGateway::start(&setup.config.path()).await;
    let body = call_in_session(&gateway.url).await;
    assert_eq!(body, format!(r#"{{"jsonrpc":"2.0","id":"call-1","result":{RESULT}}}"#));
    let body = call_stateless(&gateway.url).await;
    let rest = RESULT.strip_prefix('{').expect("an object");
    assert_eq!(
        body,
        format!(r#"{{"jsonrpc":"2.0","id":9,"result":{{"resultType":"complete",{rest}}}"#),
        "a 2026-07-28 client gets the result type, and the rest as written"
    );
    assert!(gateway.terminate().await.success());
}

#[tokio::test]
async fn a_result_no_interceptor_reads_reaches_an_http_client_as_the_upstream_wrote_it() {
    let setup = setup("[[pipeline]]\nkind = \"policy\"\ndefault = \"allow\"\n");
    assert_passed_on_as_written(&setup).await;
}

/// A 2026-07-28 upstream writes `resultType`: a 2025-11-25 client gets the result without it
/// and every other byte as written, a 2026-07-28 client the result exactly as written.
#[tokio::test]
async fn a_2026_07_28_upstreams_result_reaches_a_handshake_client_as_written_less_its_type() {
    let setup = setup_with("[[pipeline]]\nkind = \"policy\"\ndefault = \"allow\"\n", true);
    let config = setup.config.path().to_string_lossy().into_owned();
    let servers = run_toolgate(&["servers", "--json", "--config", &config]).await;
    let rows: Value = serde_json::from_slice(&servers.stdout).expect("json");
    assert_eq!(rows[0]["protocol"], "2026-07-28", "{rows}");
    assert_passed_on_as_written(&setup).await;
}

#[tokio::test]
async fn a_result_an_interceptor_reads_is_parsed_and_written_afresh() {
    let setup = setup("[[pipeline]]\nkind = \"redact\"\n");
    let gateway = HttpGateway::start(&setup.config.path()).await;
    let body = call_in_session(&gateway.url).await;
    assert!(!body.contains(r"\u00e9"), "written afresh: {body}");
    let text = text_of(&body);
    assert!(text.starts_with("café 😀 "), "{text}");
    assert!(text.contains("[REDACTED:"), "redact saw the result: {text}");
    let answer: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(answer["result"]["structuredContent"], json!({"n": 1000.0, "f": 1.5}));
    assert!(gateway.terminate().await.success());
}

#[tokio::test]
async fn an_interceptor_for_another_server_leaves_the_result_as_written() {
    let setup = setup("[[pipeline]]\nkind = \"redact\"\nservers = [\"elsewhere\"]\n");
    let gateway = HttpGateway::start(&setup.config.path()).await;
    let body = call_in_session(&gateway.url).await;
    assert_eq!(body, format!(r#"{{"jsonrpc":"2.0","id":"call-1","result":{RESULT}}}"#));
    assert!(gateway.terminate().await.success());
}

#[tokio::test]
async fn a_script_with_tools_only_leaves_the_result_as_written() {
    let setup = setup("");
    let config = setup.config.path();
    let scripts = setup.config.dir().join(".toolgate/scripts");
    std::fs::create_dir_all(&scripts).expect("script folder");
    std::fs::write(
        scripts.join("mine.rn"),
        "pub fn tools() { [#{ name: \"t\" }] }\npub fn call_t(args, ctx) { 1 }",
    )
    .expect("write the script");
    let gateway = HttpGateway::start(&config).await;
    let body = call_in_session(&gateway.url).await;
    assert_eq!(body, format!(r#"{{"jsonrpc":"2.0","id":"call-1","result":{RESULT}}}"#));
    assert!(gateway.terminate().await.success());
}

#[tokio::test]
async fn the_stdio_front_and_the_cli_read_the_same_result() {
    let setup = setup("");
    let client = stdio_client(&setup.config.path()).await;
    let result = client
        .peer()
        .call_tool(rmcp::model::CallToolRequestParams::new("odd__odd"))
        .await
        .expect("called");
    let expected: rmcp::model::CallToolResult = serde_json::from_str(RESULT).expect("parses");
    assert_eq!(result, expected);
    client.cancel().await.expect("close");
    let config = setup.config.path();
    let output = run_toolgate(&["call", "odd__odd", "--config", &config.to_string_lossy()]).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("café 😀"), "{stdout}");
}
