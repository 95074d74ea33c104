//! The paths a call can take to the fixture's tools (direct, through toolgate with each
//! pipeline and transport pair, through each peer gateway), and starting them as real
//! processes on 127.0.0.1.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, bail};
use serde::Serialize;
use tokio::process::Command;

use crate::latency::pin::Pinning;
use crate::latency::process::{Ready, Server, free_port};
use crate::latency::session::{Era, Payload, Session};
use crate::proc_stats;

/// The fixture's name as an upstream of a gateway: its tools become `fx__echo` in toolgate,
/// `fx/echo` in the Rust mcp-proxy.
const UPSTREAM: &str = "fx";

/// Log filter for `toolgate serve` on HTTP: warnings, and the line that says where it serves.
const SERVE_LOG: &str = "warn,toolgate::commands::serve=info";

/// A transport, on either side of a gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Transport {
    Stdio,
    Http,
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Transport::Stdio => "stdio",
            Transport::Http => "http",
        })
    }
}

/// toolgate's interceptor pipeline: `bench/pipelines/<name>.toml`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Pipeline {
    Bare,
    Default,
    Full,
}

impl Pipeline {
    const ALL: [Pipeline; 3] = [Pipeline::Bare, Pipeline::Default, Pipeline::Full];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Pipeline::Bare => "bare",
            Pipeline::Default => "default",
            Pipeline::Full => "full",
        }
    }

    /// The config that follows `[servers.fx]` (`bench/pipelines/<name>.toml`, built into the
    /// binary).
    pub(crate) fn fragment(self) -> &'static str {
        match self {
            Pipeline::Bare => include_str!("../../../../bench/pipelines/bare.toml"),
            Pipeline::Default => include_str!("../../../../bench/pipelines/default.toml"),
            Pipeline::Full => include_str!("../../../../bench/pipelines/full.toml"),
        }
    }
}

/// Another gateway, run as the peers table says, fronting the fixture over stdio with
/// streamable HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Peer {
    /// crates.io `mcp-proxy` 0.6.0 (joshrotenberg).
    McpProxyRs,
    /// PyPI `mcp-proxy` 0.13.0 (sparfenyuk).
    McpProxyPy,
    /// npm `supergateway` 4.0.0, `--stateful`.
    Supergateway,
}

impl Peer {
    pub(crate) const ALL: [Peer; 3] = [Peer::McpProxyRs, Peer::McpProxyPy, Peer::Supergateway];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Peer::McpProxyRs => "mcp-proxy-rs",
            Peer::McpProxyPy => "mcp-proxy-py",
            Peer::Supergateway => "supergateway",
        }
    }

    /// Short column label in the table.
    pub(crate) fn short(self) -> &'static str {
        match self {
            Peer::McpProxyRs => "rs",
            Peer::McpProxyPy => "py",
            Peer::Supergateway => "sg",
        }
    }

    pub(crate) fn version(self) -> &'static str {
        match self {
            Peer::McpProxyRs => "0.6.0",
            Peer::McpProxyPy => "0.13.0",
            Peer::Supergateway => "4.0.0",
        }
    }

    /// Its executable, relative to the peers folder (`bench/.peers`).
    fn executable(self) -> &'static str {
        match self {
            Peer::McpProxyRs => "cargo/bin/mcp-proxy",
            Peer::McpProxyPy => "venv-mcp-proxy/bin/mcp-proxy",
            Peer::Supergateway => "npm/node_modules/.bin/supergateway",
        }
    }

    /// Its executable in `peers`, or why it cannot be used.
    pub(crate) fn find(self, peers: &Path) -> Result<PathBuf, String> {
        let path = peers.join(self.executable());
        if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "{} {} is not installed ({} not found; bench/setup installs it)",
                self.name(),
                self.version(),
                path.display()
            ))
        }
    }

    /// What the client calls the fixture's `tool` through this peer.
    fn tool_name(self, tool: &str) -> String {
        match self {
            Peer::McpProxyRs => format!("{UPSTREAM}/{tool}"),
            Peer::McpProxyPy | Peer::Supergateway => tool.to_owned(),
        }
    }
}

/// Who sits between the client and the fixture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Via {
    Direct,
    Toolgate(Pipeline),
    Peer(Peer),
}

/// One path to the fixture's tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PathSpec {
    pub(crate) via: Via,
    /// What the client speaks.
    pub(crate) front: Transport,
    /// What the fixture speaks (the same as `front` for direct paths).
    pub(crate) upstream: Transport,
}

impl PathSpec {
    fn new(via: Via, front: Transport, upstream: Transport) -> PathSpec {
        PathSpec { via, front, upstream }
    }

    /// Every path, in table order: direct, toolgate by front and upstream, peers.
    pub(crate) fn all() -> Vec<PathSpec> {
        use Transport::{Http, Stdio};
        let mut out =
            vec![PathSpec::new(Via::Direct, Stdio, Stdio), PathSpec::new(Via::Direct, Http, Http)];
        for (front, upstream) in [(Http, Stdio), (Http, Http), (Stdio, Stdio), (Stdio, Http)] {
            for pipeline in Pipeline::ALL {
                out.push(PathSpec::new(Via::Toolgate(pipeline), front, upstream));
            }
        }
        for peer in Peer::ALL {
            out.push(PathSpec::new(Via::Peer(peer), Http, Stdio));
        }
        out
    }

    /// `direct-stdio`, `toolgate-http-stdio-default`, `mcp-proxy-rs-http-stdio`, ...
    pub(crate) fn name(&self) -> String {
        match self.via {
            Via::Direct => format!("direct-{}", self.upstream),
            Via::Toolgate(pipeline) => {
                format!("toolgate-{}-{}-{}", self.front, self.upstream, pipeline.name())
            }
            Via::Peer(peer) => format!("{}-{}-{}", peer.name(), self.front, self.upstream),
        }
    }

    /// What the client calls the fixture's `tool` on this path.
    fn tool_name(&self, tool: &str) -> String {
        match self.via {
            Via::Direct => tool.to_owned(),
            Via::Toolgate(_) => format!("{UPSTREAM}__{tool}"),
            Via::Peer(peer) => peer.tool_name(tool),
        }
    }
}

/// What every path needs to start.
#[derive(Debug)]
pub(crate) struct Setup {
    /// The `toolgate` binary.
    pub(crate) toolgate: PathBuf,
    /// The `toolgate-fixture` binary, the upstream of every path.
    pub(crate) fixture: PathBuf,
    /// Where the peers are installed (`bench/.peers`).
    pub(crate) peers: PathBuf,
    /// A temporary folder for configs and audit logs.
    pub(crate) scratch: PathBuf,
    /// The fixture on streamable HTTP, shared by every path whose upstream is HTTP.
    pub(crate) http_fixture: Option<SharedFixture>,
    /// Sessions each path opens: the highest concurrency measured.
    pub(crate) sessions: usize,
    /// HTTP sessions keep their connections open between calls.
    pub(crate) keep_alive: bool,
    pub(crate) era: Era,
    /// A folder with `bare.toml`, `default.toml` and `full.toml` to use instead of the
    /// built-in copies of `bench/pipelines`.
    pub(crate) pipelines: Option<PathBuf>,
    /// With `--pin`: every process started runs on the servers' CPUs.
    pub(crate) pin: Option<Pinning>,
    /// toolgate keeps its connections to an HTTP upstream alive (`pool = false` when not).
    pub(crate) upstream_pool: bool,
}

/// The fixture on streamable HTTP.
#[derive(Debug, Clone)]
pub(crate) struct SharedFixture {
    pub(crate) url: String,
    pub(crate) pid: u32,
}

/// Starts the fixture on streamable HTTP (`toolgate-fixture --transport http`), on the
/// servers' CPUs with `pin`.
pub(crate) async fn start_http_fixture(
    fixture: &Path,
    pin: Option<&Pinning>,
) -> anyhow::Result<(Server, SharedFixture)> {
    let mut command = Command::new(fixture);
    command.args(["--transport", "http", "--port", "0"]).env_remove("RUST_LOG");
    let (server, url) =
        Server::start("fixture-http", command, Ready::StdoutPrefix("listening "), pin).await?;
    let pid = server.pid();
    Ok((server, SharedFixture { url, pid }))
}

/// A path, started: its processes are up and its sessions open.
#[derive(Debug)]
pub(crate) struct Target {
    pub(crate) spec: PathSpec,
    pub(crate) name: String,
    /// How the front is run, for the record.
    pub(crate) command: String,
    /// The server process clients reach over HTTP (none for stdio fronts and direct-http,
    /// whose server is the shared fixture).
    front: Option<Server>,
    /// The processes whose peak memory is reported: the front(s) the client talks to.
    front_pids: Vec<u32>,
    /// Every process that serves this path (descendants are added when CPU is sampled).
    server_pids: Vec<u32>,
    pub(crate) sessions: Vec<Arc<Session>>,
    /// The tool name to call, by payload.
    tools: BTreeMap<Payload, String>,
}

impl Target {
    /// Starts `spec`'s processes and opens `setup.sessions` sessions.
    pub(crate) async fn start(spec: PathSpec, setup: &Setup) -> anyhow::Result<Target> {
        let name = spec.name();
        let pin = setup.pin.as_ref();
        let (front, url, command) = match (spec.via, spec.front) {
            (_, Transport::Stdio) => (None, None, stdio_command(&spec, setup, 0)?.1),
            (Via::Direct, Transport::Http) => {
                let fixture = setup.http_fixture.as_ref().context("the HTTP fixture is up")?;
                let command = format!("{} --transport http", setup.fixture.display());
                (None, Some(fixture.url.clone()), command)
            }
            (Via::Toolgate(pipeline), Transport::Http) => {
                let config = write_config(&name, None, pipeline, spec.upstream, setup)?;
                let mut command = Command::new(&setup.toolgate);
                command.args(["serve", "--listen", "127.0.0.1:0", "--log", SERVE_LOG, "--config"]);
                command.arg(&config).env_remove("TOOLGATE_CONFIG");
                let (server, url) =
                    Server::start(&name, command, Ready::StderrMarker("serving MCP at "), pin)
                        .await?;
                let described = format!(
                    "{} serve --listen 127.0.0.1:0 --config {}",
                    setup.toolgate.display(),
                    config.display()
                );
                (Some(server), Some(url), described)
            }
            (Via::Peer(peer), Transport::Http) => {
                let (server, url, described) = start_peer(peer, &name, setup).await?;
                (Some(server), Some(url), described)
            }
        };
        let mut sessions = Vec::with_capacity(setup.sessions);
        let opened = futures::future::try_join_all((0..setup.sessions).map(|i| {
            let (spec, url, name) = (&spec, url.as_deref(), &name);
            async move {
                match url {
                    Some(url) => Session::http(url, setup.keep_alive, setup.era).await,
                    None => {
                        let (command, _) = stdio_command(spec, setup, i)?;
                        Session::stdio(&format!("{name}#{i}"), command, setup.era, pin).await
                    }
                }
            }
        }));
        let opened = match opened.await {
            Ok(opened) => opened,
            Err(error) => {
                let tail = front.as_ref().map(Server::tail).unwrap_or_default();
                if let Some(front) = front {
                    front.stop().await;
                }
                return Err(error.context(format!("{name}: cannot open its sessions{tail}")));
            }
        };
        sessions.extend(opened.into_iter().map(Arc::new));
        let mut target = Target {
            spec,
            name,
            command,
            front_pids: Vec::new(),
            server_pids: Vec::new(),
            front,
            sessions,
            tools: BTreeMap::new(),
        };
        target.front_pids = match (&target.front, spec.front) {
            (Some(front), _) => vec![front.pid()],
            (None, Transport::Stdio) => target.sessions.iter().filter_map(|s| s.pid()).collect(),
            (None, Transport::Http) => setup.http_fixture.iter().map(|f| f.pid).collect(),
        };
        target.server_pids = target.front_pids.clone();
        if let (Transport::Http, Some(fixture)) = (spec.upstream, &setup.http_fixture)
            && !target.server_pids.contains(&fixture.pid)
        {
            target.server_pids.push(fixture.pid);
        }
        if let Err(error) = target.find_tools().await {
            target.stop().await;
            return Err(error);
        }
        Ok(target)
    }

    /// Checks that the first session sees the tools this path is measured with.
    async fn find_tools(&mut self) -> anyhow::Result<()> {
        let session = self.sessions.first().context("at least one session")?;
        let listed = session.tool_names().await.with_context(|| self.name.clone())?;
        for payload in [Payload::Small, Payload::Large100k] {
            let tool = self.spec.tool_name(payload.tool());
            if !listed.contains(&tool) {
                bail!(
                    "{}: no tool {tool} among the {} listed: {listed:?}",
                    self.name,
                    listed.len()
                );
            }
            self.tools.insert(payload, tool);
        }
        Ok(())
    }

    /// The tool to call for `payload`.
    pub(crate) fn tool(&self, payload: Payload) -> &str {
        self.tools.get(&payload).map_or("", String::as_str)
    }

    /// Every process serving this path now, descendants included.
    pub(crate) fn server_processes(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for &pid in &self.server_pids {
            for member in proc_stats::tree(pid) {
                if !out.contains(&member) {
                    out.push(member);
                }
            }
        }
        out
    }

    /// The gateway's own processes, whose CPU is counted without their descendants: the front
    /// (toolgate or the peer; on stdio fronts one toolgate process per session); `None` on
    /// direct paths, which have no gateway.
    pub(crate) fn gateway_processes(&self) -> Option<&[u32]> {
        match self.spec.via {
            Via::Direct => None,
            Via::Toolgate(_) | Via::Peer(_) => Some(&self.front_pids),
        }
    }

    /// The highest peak resident set size among the front processes, in KiB.
    pub(crate) fn peak_rss_kib(&self) -> Option<u64> {
        self.front_pids.iter().filter_map(|&pid| proc_stats::peak_rss_kib(pid)).max()
    }

    /// How many front processes there are (one per session on stdio).
    pub(crate) fn front_processes(&self) -> usize {
        self.front_pids.len()
    }

    /// Closes the sessions and ends the processes.
    pub(crate) async fn stop(self) {
        if let Some(front) = &self.front {
            front.quiet();
        }
        let sessions = self.sessions.into_iter().filter_map(|s| Arc::try_unwrap(s).ok());
        futures::future::join_all(sessions.map(Session::close)).await;
        if let Some(front) = self.front {
            front.stop().await;
        }
    }
}

/// The command that serves session `index` of a stdio-front path, and how it reads.
fn stdio_command(
    spec: &PathSpec,
    setup: &Setup,
    index: usize,
) -> anyhow::Result<(Command, String)> {
    let program = if spec.via == Via::Direct { &setup.fixture } else { &setup.toolgate };
    let mut command = Command::new(program);
    command.env_remove("TOOLGATE_CONFIG").env_remove("RUST_LOG").env_remove("TOOLGATE_LOG");
    match spec.via {
        Via::Direct => Ok((command, setup.fixture.display().to_string())),
        Via::Toolgate(pipeline) => {
            let config = write_config(&spec.name(), Some(index), pipeline, spec.upstream, setup)?;
            command.args(["serve", "--stdio", "--config"]).arg(&config);
            let described = format!(
                "{} serve --stdio --config {} (one process per session)",
                setup.toolgate.display(),
                config.display()
            );
            Ok((command, described))
        }
        Via::Peer(peer) => bail!("{} has no stdio front here", peer.name()),
    }
}

/// Writes a gateway's `toolgate.toml` in a folder of its own (the audit log of the `full`
/// pipeline lands next to it, one writer per file) and returns its path.
fn write_config(
    name: &str,
    session: Option<usize>,
    pipeline: Pipeline,
    upstream: Transport,
    setup: &Setup,
) -> anyhow::Result<PathBuf> {
    let mut dir = setup.scratch.join(name);
    if let Some(session) = session {
        dir = dir.join(format!("session-{session}"));
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let server = match upstream {
        Transport::Stdio => format!(
            "[servers.{UPSTREAM}]\ncommand = {}\nrequired = true\n",
            toml_string(&setup.fixture.to_string_lossy())
        ),
        Transport::Http => {
            let fixture = setup.http_fixture.as_ref().context("the HTTP fixture is up")?;
            // Written only when off, so that a toolgate from before the option reads the rest.
            let pool = if setup.upstream_pool { "" } else { "pool = false\n" };
            format!(
                "[servers.{UPSTREAM}]\nurl = {}\ntransport = \"streamable-http\"\n{pool}\
                 required = true\n",
                toml_string(&fixture.url)
            )
        }
    };
    let path = dir.join("toolgate.toml");
    let fragment = match &setup.pipelines {
        Some(dir) => {
            let path = dir.join(format!("{}.toml", pipeline.name()));
            std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read {}", path.display()))?
        }
        None => pipeline.fragment().to_owned(),
    };
    let text = format!("{server}\n{fragment}");
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// A TOML basic string.
fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

/// Starts `peer` in front of the fixture on stdio, on a free port; returns the server, its
/// MCP URL and its command line.
async fn start_peer(
    peer: Peer,
    name: &str,
    setup: &Setup,
) -> anyhow::Result<(Server, String, String)> {
    let executable = peer.find(&setup.peers).map_err(anyhow::Error::msg)?;
    let port = free_port()?;
    let fixture = setup.fixture.display().to_string();
    let mut command = Command::new(&executable);
    let (path, described) = match peer {
        Peer::McpProxyRs => {
            let dir = setup.scratch.join(name);
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            let config = dir.join("proxy.toml");
            let text = format!(
                "[proxy]\nname = \"bench\"\nseparator = \"/\"\n\n[proxy.listen]\n\
                 host = \"127.0.0.1\"\nport = {port}\n\n[observability]\nlog_level = \"warn\"\n\n\
                 [[backends]]\nname = \"{UPSTREAM}\"\ntransport = \"stdio\"\ncommand = {}\n\
                 args = []\n",
                toml_string(&setup.fixture.to_string_lossy())
            );
            std::fs::write(&config, text)
                .with_context(|| format!("cannot write {}", config.display()))?;
            // Without `log_level` it logs every request at debug level (its default filter is
            // empty); it does not read RUST_LOG.
            command.arg("--config").arg(&config);
            ("/", format!("{} --config {}", executable.display(), config.display()))
        }
        Peer::McpProxyPy => {
            let args =
                ["--host", "127.0.0.1", "--port", &port.to_string(), "--log-level", "WARNING"];
            command.args(args).arg("--").arg(&setup.fixture);
            ("/mcp", format!("{} {} -- {fixture}", executable.display(), args.join(" ")))
        }
        Peer::Supergateway => {
            // It has no host option: it binds every interface.
            let port = port.to_string();
            let args = ["--stateful", "--outputTransport", "streamableHttp", "--port", &port];
            command.args(args).args(["--logLevel", "none", "--stdio", &fixture]);
            let described = format!(
                "{} {} --logLevel none --stdio \"{fixture}\"",
                executable.display(),
                args.join(" ")
            );
            ("/mcp", described)
        }
    };
    let url = format!("http://127.0.0.1:{port}{path}");
    let ready = Ready::Accepting { port, url };
    let (server, url) = Server::start(name, command, ready, setup.pin.as_ref()).await?;
    Ok((server, url, described))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(scratch: &Path) -> Setup {
        Setup {
            toolgate: PathBuf::from("toolgate"),
            fixture: PathBuf::from("toolgate-fixture"),
            peers: PathBuf::new(),
            scratch: scratch.to_owned(),
            http_fixture: None,
            sessions: 1,
            keep_alive: true,
            era: Era::Handshake,
            pipelines: None,
            pin: None,
            upstream_pool: true,
        }
    }

    fn config(spec: PathSpec, scratch: &Path) -> toml::Table {
        let Via::Toolgate(pipeline) = spec.via else { panic!("a toolgate path") };
        let setup = setup(scratch);
        let path =
            write_config(&spec.name(), None, pipeline, spec.upstream, &setup).expect("written");
        std::fs::read_to_string(path).expect("read").parse().expect("valid TOML")
    }

    #[test]
    fn a_path_s_config_names_its_upstream_and_pipeline() {
        let dir = tempfile::tempdir().expect("temp dir");
        let spec =
            PathSpec::new(Via::Toolgate(Pipeline::Default), Transport::Http, Transport::Stdio);
        assert_eq!(spec.name(), "toolgate-http-stdio-default");
        let config = config(spec, dir.path());
        assert_eq!(config["servers"]["fx"]["command"].as_str(), Some("toolgate-fixture"));
        assert!(config["pipeline"].as_array().is_some_and(|p| p.len() == 2), "default pipeline");
        assert!(config.get("gateway").is_none());
    }
}
