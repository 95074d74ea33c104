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
//! Authorization scenarios (`auth/*`) go through toolgate's own sign-in (`toolgate-oauth`), as
//! `toolgate serve` would with a person at hand: tokens in a vault of a temporary folder, and
//! a headless browser that approves at once (the suite's authorization server asks no one).
//! What a user would write in `oauth = {...}` comes from the scenario's context
//! (`MCP_CONFORMANCE_CONTEXT`): a pre-registered client, client credentials with a secret or a
//! private key; the Client ID Metadata Document URL is the one the suite expects.
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
/// Time for the handshake and the catalog listing, which in the auth scenarios includes the
/// whole sign-in with the suite's authorization server (10 s was too short on a busy
/// two-core machine, where scenarios run side by side).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);
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

    let context: Context = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default();
    let mut config = server_config(url);
    if let TransportConfig::Http(http) = &mut config.transport {
        http.oauth = oauth_config(&scenario, &context)?;
    }
    let folder = tempfile::tempdir().context("a temporary folder for the token vault")?;
    let vault = toolgate_oauth::Vault::open_with_key_file(
        &folder.path().join("oauth"),
        &folder.path().join("key"),
    )?;
    let logins = toolgate_oauth::Logins {
        vault: Arc::new(vault),
        browser: Some(Arc::new(toolgate_oauth::Headless::new())),
        principal: None,
    };
    let upstream = Upstream::connect_with(&config, Some(&logins)).await?;
    let outcome = play(&upstream, &scenario, &context.tool_calls).await;
    if tokio::time::timeout(SHUTDOWN_TIMEOUT, upstream.shutdown()).await.is_err() {
        tracing::warn!("the session did not close within {SHUTDOWN_TIMEOUT:?}");
    }
    outcome
}

/// The scenario server as one streamable HTTP upstream.
fn server_config(url: url::Url) -> ServerConfig {
    ServerConfig {
        prefix: String::new(),
        startup_timeout: STARTUP_TIMEOUT,
        timeout: CALL_TIMEOUT,
        required: true,
        ..ServerConfig::new(
            "conformance",
            TransportConfig::Http(HttpConfig {
                transport: HttpTransport::StreamableHttp,
                ..HttpConfig::new(url)
            }),
        )
    }
}

/// The Client ID Metadata Document URL the suite's authorization server accepts.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// What the suite tells a client about a scenario.
#[derive(Debug, Default, serde::Deserialize)]
struct Context {
    /// Calls the scenario wants made, with its own arguments (else every tool is called).
    #[serde(default, rename = "toolCalls")]
    tool_calls: Vec<ToolCall>,
    client_id: Option<String>,
    client_secret: Option<String>,
    private_key_pem: Option<String>,
    signing_algorithm: Option<String>,
}

/// One call a scenario asks for.
#[derive(Debug, Default, serde::Deserialize)]
struct ToolCall {
    name: String,
    #[serde(default)]
    arguments: serde_json::Map<String, serde_json::Value>,
}

/// The `oauth` a user would configure for the scenario's server.
fn oauth_config(scenario: &str, context: &Context) -> anyhow::Result<toolgate_config::OAuthConfig> {
    use toolgate_config::{OAuthConfig, OAuthFlow, Secret};
    let mut oauth = OAuthConfig {
        client_metadata_url: Some(CLIENT_METADATA_URL.parse()?),
        ..OAuthConfig::default()
    };
    if scenario.starts_with("auth/client-credentials") {
        oauth.flow = OAuthFlow::ClientCredentials;
        oauth.client_metadata_url = None;
    }
    if scenario.starts_with("auth/client-credentials") || scenario == "auth/pre-registration" {
        oauth.client_id = context.client_id.clone();
        oauth.client_secret = context.client_secret.clone().map(Secret::new);
        oauth.private_key = context.private_key_pem.clone().map(Secret::new);
        if let Some(algorithm) = &context.signing_algorithm {
            oauth.algorithm = algorithm.clone();
        }
    }
    Ok(oauth)
}

/// What to do once connected.
async fn play(upstream: &Upstream, scenario: &str, calls: &[ToolCall]) -> anyhow::Result<()> {
    if !calls.is_empty() {
        return make_calls(upstream, calls).await;
    }
    match scenario {
        // Connecting was the whole test.
        "initialize" => Ok(()),
        // The server keeps asking for more scopes: giving up after a few sign-ins is the
        // behaviour under test, and the calls fail by design.
        "auth/scope-retry-limit" => {
            if let Err(error) = call_every_tool(upstream).await {
                tracing::info!(%error, "gave up, as the scenario wants");
            }
            Ok(())
        }
        _ => call_every_tool(upstream).await,
    }
}

/// Makes the calls the scenario named, with its arguments.
async fn make_calls(upstream: &Upstream, calls: &[ToolCall]) -> anyhow::Result<()> {
    let options = CallOptions { caller: Some(Arc::new(AcceptDefaults)), ..Default::default() };
    let mut failed = Vec::new();
    for call in calls {
        let params = mcp::CallToolRequestParams::new(call.name.clone())
            .with_arguments(call.arguments.clone());
        match upstream.call_tool(params, &options).await {
            Ok(result) => tracing::info!(tool = %call.name, ?result.content, "result"),
            Err(error) => {
                eprintln!("tool {}: {}", call.name, ErrorChain(&error));
                failed.push(call.name.clone());
            }
        }
    }
    anyhow::ensure!(failed.is_empty(), "calls failed: {}", failed.join(", "));
    Ok(())
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
