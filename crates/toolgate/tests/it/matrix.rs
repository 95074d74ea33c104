//! The transport matrix: downstream {stdio, HTTP} × upstream {stdio, streamable HTTP, legacy
//! SSE}, every cell running the same assertions.

use rmcp::model::{CallToolRequestParams, GetPromptRequestParams, ReadResourceRequestParams};
use serde_json::json;

use crate::support::*;

/// What every cell must show: list, call, error result, unknown tool, resource read, prompts.
async fn standard_assertions(client: &Client) {
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for expected in ["fx__echo", "fx__fail", "fx__test_simple_text", "fx__test_image_content"] {
        assert!(names.contains(&expected), "{expected} missing from {names:?}");
    }
    assert!(names.iter().all(|n| toolgate_core::name::is_valid_exposed(n)), "{names:?}");

    let echo = client
        .call_tool(
            CallToolRequestParams::new("fx__echo").with_arguments(object(json!({"text": "hello"}))),
        )
        .await
        .expect("echo call");
    assert_eq!(first_text(&echo), "hello");
    assert_ne!(echo.is_error, Some(true));

    let failed = client
        .call_tool(
            CallToolRequestParams::new("fx__fail")
                .with_arguments(object(json!({"message": "boom"}))),
        )
        .await
        .expect("a tool error is a result, not a protocol error");
    assert_eq!(failed.is_error, Some(true));
    assert!(first_text(&failed).contains("boom"));

    let unknown = client.call_tool(CallToolRequestParams::new("fx__nope")).await;
    let error = unknown.expect_err("unknown tools are protocol errors");
    assert!(error.to_string().contains("fx__nope"), "{error}");

    let resources = client.list_all_resources().await.expect("resources/list");
    assert!(resources.iter().any(|r| r.uri == "test://static-text"), "{resources:?}");
    let read = client
        .read_resource(ReadResourceRequestParams::new("test://static-text"))
        .await
        .expect("resources/read");
    let contents = serde_json::to_value(&read.contents).expect("serializes");
    assert_eq!(contents[0]["uri"], "test://static-text");
    assert!(contents[0]["text"].as_str().is_some_and(|t| !t.is_empty()));

    let templated = client
        .read_resource(ReadResourceRequestParams::new("test://template/42/data"))
        .await
        .expect("a templated resource routes to its upstream");
    assert!(serde_json::to_string(&templated).expect("json").contains("42"));

    let prompts = client.list_all_prompts().await.expect("prompts/list");
    assert!(prompts.iter().any(|p| p.name == "fx__test_simple_prompt"), "{prompts:?}");
    let prompt = client
        .get_prompt(GetPromptRequestParams::new("fx__test_simple_prompt"))
        .await
        .expect("prompts/get");
    assert!(!prompt.messages.is_empty());
}

async fn upstream_config(transport: &str) -> (ConfigDir, Option<FixtureUpstream>) {
    let fixture = match transport {
        "stdio" => None,
        other => Some(FixtureUpstream::start(other).await),
    };
    let url = fixture.as_ref().map(|f| f.url.as_str());
    (ConfigDir::new(&fixture_server("fx", transport, url)), fixture)
}

async fn stdio_cell(upstream: &str) {
    let (config, _fixture) = upstream_config(upstream).await;
    let client = stdio_client(&config.path()).await;
    standard_assertions(&client).await;
    client.cancel().await.expect("client closes");
}

async fn http_cell(upstream: &str) {
    let (config, _fixture) = upstream_config(upstream).await;
    let gateway = HttpGateway::start(&config.path()).await;
    let client = http_client(&gateway.url).await;
    standard_assertions(&client).await;
    client.cancel().await.expect("client closes");
    assert!(gateway.terminate().await.success(), "toolgate exits cleanly on SIGTERM");
}

#[tokio::test]
async fn stdio_to_stdio() {
    stdio_cell("stdio").await;
}

#[tokio::test]
async fn stdio_to_streamable_http() {
    stdio_cell("http").await;
}

#[tokio::test]
async fn stdio_to_legacy_sse() {
    stdio_cell("sse").await;
}

#[tokio::test]
async fn http_to_stdio() {
    http_cell("stdio").await;
}

#[tokio::test]
async fn http_to_streamable_http() {
    http_cell("http").await;
}

#[tokio::test]
async fn http_to_legacy_sse() {
    http_cell("sse").await;
}

/// `transport = "auto"` (the default for URLs) finds both kinds of HTTP server.
#[tokio::test]
async fn auto_transport_detects_streamable_and_legacy() {
    let http = FixtureUpstream::start("http").await;
    let sse = FixtureUpstream::start("sse").await;
    let config = ConfigDir::new(&format!(
        "[servers.a]\nurl = {}\n[servers.b]\nurl = {}\n",
        toml_str(&http.url),
        toml_str(&sse.url)
    ));
    let output =
        run_toolgate(&["servers", "--json", "--config", &config.path().to_string_lossy()]).await;
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(rows[0]["transport"], "streamable-http", "{rows}");
    assert_eq!(rows[1]["transport"], "sse", "{rows}");
    // The fixture speaks 2026-07-28, so the `Auto` probe settles on the sessionless era; the
    // legacy SSE transport only knows the handshake era.
    assert_eq!(rows[0]["protocol"], "2026-07-28", "{rows}");
    assert_eq!(rows[1]["protocol"], "2025-11-25", "{rows}");
}

/// A handshake-era stand-in over stdio: the fixture behind a shell script that does `on_probe`
/// when the first line it reads is a `server/discover` (with `$id` its request id), and
/// otherwise passes every line on to the fixture, which then speaks the handshake era.
fn probe_hater(dir: &std::path::Path, name: &str, on_probe: &str) -> String {
    let script = dir.join(format!("{name}.sh"));
    let body = format!(
        "IFS= read -r line\n\
         case \"$line\" in\n\
         *'\"server/discover\"'*)\n\
         id=$(printf '%s' \"$line\" | sed -n 's/.*\"id\":\\([0-9]*\\).*/\\1/p')\n\
         {on_probe}\n\
         ;;\n\
         esac\n\
         {{ printf '%s\\n' \"$line\"; exec cat; }} | exec {}\n",
        shell_quote(&fixture_bin().to_string_lossy())
    );
    std::fs::write(&script, body).expect("write the script");
    format!(
        "[servers.{name}]\ncommand = \"sh\"\nargs = [{}]\nrequired = true\n",
        toml_str(&script.to_string_lossy())
    )
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// Over stdio, `protocol = "auto"` (the default) asks with `server/discover` first, as the
/// 2026-07-28 specification says a client should: the fixture and the Python SDK's
/// `mcp-server-time` speak 2026-07-28; the TypeScript SDK's `server-filesystem` refuses the
/// probe and is asked with `initialize` on the same pipe; `protocol = "2025-11-25"` skips the
/// probe. A server of the handshake era that ends when it reads the probe, or answers it with a
/// result of the wrong shape, is started again and asked with `initialize`: every one of them
/// is up, with its tools, in the era it speaks.
#[tokio::test]
async fn stdio_servers_are_probed_for_their_protocol_era() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = fixture_server("modern", "stdio", None);
    config.push_str(&fixture_server("pinned", "stdio", None));
    config.push_str("protocol = \"2025-11-25\"\n");
    config.push_str(&format!(
        "[servers.time]\ncommand = {}\nrequired = true\n",
        toml_str(&crate::deps::python_server_bin("mcp-server-time").to_string_lossy())
    ));
    config.push_str(&crate::deps::npm_stdio_server(
        "files",
        "mcp-server-filesystem",
        &[&dir.path().to_string_lossy()],
        &[],
    ));
    config.push_str(&probe_hater(dir.path(), "ends", "exit 3"));
    config.push_str(&probe_hater(
        dir.path(),
        "odd",
        "printf '{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}\\n' \"$id\"; sleep 30",
    ));
    let config = ConfigDir::new(&config);
    let output =
        run_toolgate(&["servers", "--json", "--config", &config.path().to_string_lossy()]).await;
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    let row = |name: &str| {
        rows.as_array()
            .and_then(|rows| rows.iter().find(|row| row["name"] == name))
            .unwrap_or_else(|| panic!("{name} missing from {rows}"))
            .clone()
    };
    for (name, era) in [
        ("modern", "2026-07-28"),
        ("pinned", "2025-11-25"),
        ("time", "2026-07-28"),
        ("files", "2025-11-25"),
        ("ends", "2025-11-25"),
        ("odd", "2025-11-25"),
    ] {
        let row = row(name);
        assert_eq!(row["protocol"], era, "{name}: {row}");
        assert_eq!(row["state"], "connected", "{name}: {row}");
        assert!(row["tools"].as_u64().is_some_and(|n| n > 0), "{name}: {row}");
    }
}

/// Servers start concurrently: each of these three waits until all three have been started
/// before it answers its handshake, so a gateway that started them one by one would never get
/// past the first (it would time out).
#[tokio::test]
async fn upstreams_start_concurrently() {
    let gate = tempfile::tempdir().expect("temp dir");
    let gate_dir = gate.path().to_string_lossy().into_owned();
    let mut config = String::new();
    for name in ["one", "two", "three"] {
        let script = format!(
            "touch {gate_dir}/{name}; while [ $(ls {gate_dir} | wc -l) -lt 3 ]; do sleep 0.02; done; \
             exec {}",
            fixture_bin().to_string_lossy()
        );
        config.push_str(&format!(
            "[servers.{name}]\ncommand = \"sh\"\nargs = [\"-c\", {}]\nstartup_timeout = \"20s\"\nrequired = true\n\n",
            toml_str(&script)
        ));
    }
    let config = ConfigDir::new(&config);
    let output =
        run_toolgate(&["servers", "--json", "--config", &config.path().to_string_lossy()]).await;
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stdout));
    let rows: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert!(rows.as_array().expect("rows").iter().all(|r| r["state"] == "connected"), "{rows}");
}
