//! One MCP client session (toolgate's own rmcp client) and the tool calls it times.

use std::process::Stdio;
use std::time::Duration;

use tokio::time::Instant;

use anyhow::{Context as _, bail};
use rmcp::RoleClient;
use rmcp::model::ProtocolVersion;
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject, Tool};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt as _, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::process::Command;

use crate::latency::pin::Pinning;
use crate::latency::process::{GroupGuard, Tail, forward_lines};

/// How long one call may take before the run fails (a server that died mid-call may leave
/// the client waiting for ever).
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// What a measured call sends and what its result must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, clap::ValueEnum)]
pub(crate) enum Payload {
    /// `echo {"text": "hello"}`, answered with `hello`.
    #[value(name = "small")]
    Small,
    /// `large {"kb": 100}`, answered with 100 KiB of text.
    #[value(name = "100k")]
    Large100k,
}

impl Payload {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Payload::Small => "small",
            Payload::Large100k => "100k",
        }
    }

    /// The fixture's own name of the tool this payload calls.
    pub(crate) fn tool(self) -> &'static str {
        match self {
            Payload::Small => "echo",
            Payload::Large100k => "large",
        }
    }

    fn arguments(self) -> JsonObject {
        let value = match self {
            Payload::Small => serde_json::json!({ "text": "hello" }),
            Payload::Large100k => serde_json::json!({ "kb": 100 }),
        };
        let serde_json::Value::Object(object) = value else { unreachable!("a JSON object") };
        object
    }

    /// The length of the text the tool answers with.
    fn result_len(self) -> usize {
        match self {
            Payload::Small => "hello".len(),
            Payload::Large100k => 100 * 1024,
        }
    }
}

/// One call, ready to be sent again and again.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    params: CallToolRequestParams,
    result_len: usize,
}

impl Call {
    /// A call of `tool` (the name the client sees) with `payload`'s arguments.
    pub(crate) fn new(tool: &str, payload: Payload) -> Self {
        Call {
            params: CallToolRequestParams::new(tool.to_owned()).with_arguments(payload.arguments()),
            result_len: payload.result_len(),
        }
    }
}

/// The protocol era the load generator's sessions speak.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Era {
    /// The `initialize` handshake, 2025-11-25 (sessions over HTTP)
    #[default]
    Handshake,
    /// `server/discover`, 2026-07-28 (no sessions), where the server offers it; the handshake
    /// elsewhere
    Discover,
}

impl Era {
    fn lifecycle(self) -> ClientLifecycleMode {
        match self {
            Era::Handshake => ClientLifecycleMode::Initialize,
            Era::Discover => ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                legacy_version: Some(ProtocolVersion::V_2025_11_25),
            },
        }
    }
}

/// An MCP client connection: to an HTTP endpoint, or to a child process on stdio.
#[derive(Debug)]
pub(crate) struct Session {
    client: RunningService<RoleClient, ()>,
    /// The child serving this session on stdio, if any.
    pid: Option<u32>,
    guard: Option<GroupGuard>,
    tail: Option<Tail>,
}

impl Session {
    /// Connects to a streamable HTTP endpoint. With `keep_alive`, the session's HTTP client
    /// keeps its connection open between requests; without, it is rmcp's default client, which
    /// opens a connection per request.
    pub(crate) async fn http(url: &str, keep_alive: bool, era: Era) -> anyhow::Result<Self> {
        let transport = if keep_alive {
            let http = reqwest::Client::builder().build().context("cannot build an HTTP client")?;
            let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
            StreamableHttpClientTransport::with_client(http, config)
        } else {
            StreamableHttpClientTransport::from_uri(url)
        };
        let client =
            ().serve_with_lifecycle(transport, era.lifecycle())
                .await
                .with_context(|| format!("cannot start an MCP session at {url}"))?;
        Ok(Session { client, pid: None, guard: None, tail: None })
    }

    /// Starts `command` in a process group of its own (on the servers' CPUs when `pin` says
    /// so) and talks MCP to it on stdio; its stderr goes to ours, prefixed with `label`.
    pub(crate) async fn stdio(
        label: &str,
        mut command: Command,
        era: Era,
        pin: Option<&Pinning>,
    ) -> anyhow::Result<Self> {
        command.process_group(0).kill_on_drop(true);
        let program = command.as_std().get_program().to_string_lossy().into_owned();
        let builder = TokioChildProcess::builder(command).stderr(Stdio::piped());
        let spawned = match pin {
            Some(pin) => pin.spawn_on_servers(|| builder.spawn())?,
            None => builder.spawn(),
        };
        let (transport, stderr) =
            spawned.with_context(|| format!("{label}: cannot run {program}"))?;
        let pid = transport.id().with_context(|| format!("{label}: exited at once"))?;
        let guard = GroupGuard::new(pid);
        let tail = Tail::default();
        if let Some(stderr) = stderr {
            forward_lines(label.to_owned(), stderr, tail.clone(), None);
        }
        let client = ().serve_with_lifecycle(transport, era.lifecycle()).await.with_context(|| {
            format!("{label}: cannot start an MCP session on stdio{}", tail.render())
        })?;
        Ok(Session { client, pid: Some(pid), guard: Some(guard), tail: Some(tail) })
    }

    /// The protocol version the session negotiated.
    pub(crate) fn protocol(&self) -> String {
        self.client
            .peer_info()
            .map(|info| info.protocol_version.to_string())
            .unwrap_or_else(|| "unknown".to_owned())
    }

    /// The child process serving this session on stdio.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// The names of the tools the session sees.
    pub(crate) async fn tool_names(&self) -> anyhow::Result<Vec<String>> {
        Ok(self.tools().await?.into_iter().map(|tool| tool.name.to_string()).collect())
    }

    /// The tools the session sees, as the server lists them.
    pub(crate) async fn tools(&self) -> anyhow::Result<Vec<Tool>> {
        self.client.list_all_tools().await.context("tools/list failed")
    }

    /// Calls a tool once; its result as the server gave it, an error result included.
    pub(crate) async fn call_tool(
        &self,
        params: CallToolRequestParams,
    ) -> anyhow::Result<CallToolResult> {
        let name = params.name.clone();
        tokio::time::timeout(CALL_TIMEOUT, self.client.call_tool(params))
            .await
            .map_err(|_| {
                anyhow::anyhow!("tools/call {name} got no answer in {}s", CALL_TIMEOUT.as_secs())
            })?
            .with_context(|| format!("tools/call {name} failed"))
    }

    /// Makes `call` once and returns how long it took; a failed call or an unexpected result
    /// is an error.
    pub(crate) async fn call(&self, call: &Call) -> anyhow::Result<Duration> {
        let params = call.params.clone();
        let start = Instant::now();
        let result = tokio::time::timeout(CALL_TIMEOUT, self.client.call_tool(params)).await;
        let elapsed = start.elapsed();
        let result = result
            .map_err(|_| {
                anyhow::anyhow!(
                    "tools/call {} got no answer in {}s",
                    call.params.name,
                    CALL_TIMEOUT.as_secs()
                )
            })?
            .with_context(|| format!("tools/call {} failed", call.params.name))?;
        let text = result.content.first().and_then(|block| block.as_text()).map(|t| &t.text);
        if result.is_error == Some(true) {
            bail!("{} answered with an error result: {}", call.params.name, text.map_or("", |t| t));
        }
        match text {
            Some(text) if text.len() == call.result_len => Ok(elapsed),
            Some(text) => bail!(
                "{} answered with {} bytes of text, expected {}",
                call.params.name,
                text.len(),
                call.result_len
            ),
            None => bail!("{} answered without a text block", call.params.name),
        }
    }

    /// Ends the session: for stdio, closes the child's stdin and waits for it to exit
    /// (SIGTERM, then SIGKILL, if it does not), then kills whatever is left of its group.
    pub(crate) async fn close(mut self) {
        if let Some(tail) = &self.tail {
            tail.quiet();
        }
        let _ = self.client.close().await;
        if let Some(mut guard) = self.guard.take() {
            guard.finish();
        }
    }
}
