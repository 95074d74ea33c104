//! `toolgate-conformance-client <server-url>`: the client under test in the MCP conformance
//! suite's client mode (`conformance client --command toolgate-conformance-client ...`).
//!
//! The suite starts a scenario server and runs this binary with the server's URL as the last
//! argument and the scenario's name in `MCP_CONFORMANCE_SCENARIO`. It is built on toolgate's
//! own upstream layer (`toolgate-upstream`), so the suite judges the code toolgate uses to
//! reach streamable HTTP servers:
//!
//! - `initialize`: connect (the handshake and the catalog listing) and disconnect;
//! - anything else (`tools_call`, `elicitation-sep1034-client-defaults`, `sse-retry`, ...):
//!   connect, then call every listed tool with arguments made up from its input schema,
//!   accepting any elicitation with the defaults of its schema.
//!
//! Exit status 0 when every step worked, 1 otherwise (the reason goes to stderr, which the
//! suite saves as `stderr.txt`). Logging: `RUST_LOG` (default `warn`), to stderr.

mod defaults;

use std::io::IsTerminal as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use toolgate_config::{HttpConfig, HttpTransport, ServerConfig, TransportConfig};
use toolgate_core::{ErrorChain, mcp};
use toolgate_upstream::{CallOptions, Upstream};

use crate::defaults::AcceptDefaults;

/// The suite gives a client 30 s per scenario; give up a little earlier, with a message.
const DEADLINE: Duration = Duration::from_secs(25);
/// Time for the handshake and the catalog listing.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// Time for one tool call.
const CALL_TIMEOUT: Duration = Duration::from_secs(15);
/// Time to close the session.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(3);

#[tokio::main]
async fn main() -> ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();

    match tokio::time::timeout(DEADLINE, run()).await {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(error)) => {
            eprintln!("toolgate-conformance-client: {error:#}");
            ExitCode::FAILURE
        }
        Err(_) => {
            eprintln!("toolgate-conformance-client: scenario not done within {DEADLINE:?}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> anyhow::Result<()> {
    let url = std::env::args().skip(1).last().context(
        "usage: toolgate-conformance-client <server-url> (scenario in $MCP_CONFORMANCE_SCENARIO)",
    )?;
    let url = url::Url::parse(&url).with_context(|| format!("invalid server URL `{url}`"))?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    tracing::info!(%url, %scenario, "starting");

    let upstream = Upstream::connect(&server_config(url)).await?;
    let outcome = play(&upstream, &scenario).await;
    if tokio::time::timeout(SHUTDOWN_TIMEOUT, upstream.shutdown()).await.is_err() {
        tracing::warn!("the session did not close within {SHUTDOWN_TIMEOUT:?}");
    }
    outcome
}

/// The scenario server as one streamable HTTP upstream.
fn server_config(url: url::Url) -> ServerConfig {
    ServerConfig {
        name: "conformance".into(),
        transport: TransportConfig::Http(HttpConfig {
            url,
            transport: HttpTransport::StreamableHttp,
            headers: Default::default(),
            pool: true,
            proxy: Default::default(),
            tls: Default::default(),
        }),
        prefix: String::new(),
        tools: Default::default(),
        protocol: Default::default(),
        startup_timeout: STARTUP_TIMEOUT,
        timeout: CALL_TIMEOUT,
        restart_wait: toolgate_config::DEFAULT_RESTART_WAIT,
        required: true,
        enabled: true,
        integrity: None,
        response_format: Vec::new(),
    }
}

/// What to do once connected.
async fn play(upstream: &Upstream, scenario: &str) -> anyhow::Result<()> {
    match scenario {
        // Connecting was the whole test.
        "initialize" => Ok(()),
        _ => call_every_tool(upstream).await,
    }
}

/// Calls every listed tool once, in listing order, answering elicitations with defaults.
async fn call_every_tool(upstream: &Upstream) -> anyhow::Result<()> {
    let options = CallOptions { caller: Some(Arc::new(AcceptDefaults)), ..Default::default() };
    let catalog = upstream.catalog();
    let mut failed = Vec::new();
    for tool in &catalog.tools {
        let schema = serde_json::Value::Object(tool.input_schema.as_ref().clone());
        let arguments = defaults::tool_arguments(&schema);
        let shown = serde_json::Value::Object(arguments.clone());
        tracing::info!(tool = %tool.name, arguments = %shown, "calling");
        let params = mcp::CallToolRequestParams::new(tool.name.clone()).with_arguments(arguments);
        match upstream.call_tool(params, &options).await {
            Ok(result) if result.is_error == Some(true) => {
                // The tool ran and said no: the scenario's checks judge that, not us.
                tracing::warn!(tool = %tool.name, ?result.content, "the tool returned an error");
            }
            Ok(result) => tracing::info!(tool = %tool.name, ?result.content, "result"),
            Err(error) => {
                eprintln!("tool {}: {}", tool.name, ErrorChain(&error));
                failed.push(tool.name.to_string());
            }
        }
    }
    anyhow::ensure!(failed.is_empty(), "calls failed: {}", failed.join(", "));
    Ok(())
}
