//! `toolgate-bench upstream`: what one call costs through toolgate's upstream client alone,
//! against streamable HTTP servers built on each SDK, with the connection kept alive (`pool`,
//! the default) and with one connection per call (`pool = false`).
//!
//! The client is [`toolgate_upstream::Upstream`] in this process, configured through
//! toolgate's own config loader, exactly as `toolgate serve` reaches an HTTP upstream; no
//! gateway process and no downstream hop are in the way, so the difference between the two
//! `pool` settings is not hidden in the noise of a longer path. The servers, each on
//! 127.0.0.1:
//!
//! - `rmcp`: `toolgate-fixture --transport http` (Rust, rmcp on axum, `TCP_NODELAY` set on
//!   every connection, as toolgate's own listeners);
//! - `rmcp-nagle`: the same with `--nagle`, Nagle's algorithm left on, as a plain
//!   `axum::serve` leaves it (and so most rmcp servers);
//! - `typescript`: `@modelcontextprotocol/server-everything streamableHttp` (the TypeScript
//!   SDK on Express, Node), from tests/deps/npm;
//! - `python`: `bench/upstreams/python_echo.py` (the Python SDK's `MCPServer`, formerly
//!   `FastMCP`, on Starlette and Uvicorn), with the interpreter of tests/deps/python/venv.
//!
//! Each is asked one of two tools: `echo` (a five-character text, answered at once) or
//! `wait5` (an answer 5 ms later, after one progress notification: the fixture's `slow`,
//! server-everything's `trigger-long-running-operation`, the Python server's `wait`), whose
//! response headers leave before its answer, as a real tool's do. As in `latency`, the run
//! is split in rounds and each round runs every cell (server × tool × pool × concurrent
//! callers) in a freshly shuffled order. Concurrent callers share the one upstream client, as
//! every downstream session of a gateway shares it. Besides latency and CPU, each cell counts
//! the TCP connections opened to the server while it ran (from /proc/net/tcp and tcp6).

mod connections;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use anyhow::{Context as _, bail};
use serde::Serialize;
use serde_json::json;
use toolgate_config::{FixedEnvironment, Format, ServerConfig};
use toolgate_core::mcp;
use toolgate_upstream::{CallOptions, Upstream};

use crate::latency::machine::Machine;
use crate::latency::process::{Ready, Server, free_port};
use crate::latency::stats::{Samples, Shuffler, Summary};
use crate::portable::portable;
use crate::proc_stats;

/// The text every call echoes.
const TEXT: &str = "hello";

/// Options of `upstream`.
#[derive(Debug, clap::Args)]
pub(crate) struct UpstreamArgs {
    /// The servers, comma-separated [default: rmcp,rmcp-nagle,typescript,python]
    #[arg(long, value_name = "S,...", value_delimiter = ',', value_enum)]
    servers: Vec<Kind>,
    /// The tools, comma-separated: echo (answered at once), wait5 (answered after 5 ms)
    /// [default: echo,wait5]
    #[arg(long, value_name = "T,...", value_delimiter = ',', value_enum)]
    tools: Vec<Tool>,
    /// The `pool` settings to measure, comma-separated [default: true,false]
    #[arg(long, value_name = "BOOL,...", value_delimiter = ',')]
    pool: Vec<bool>,
    /// Measured calls per cell (server × tool × pool × concurrency), over all rounds
    /// [default: 2000]
    #[arg(long, value_name = "N")]
    calls: Option<usize>,
    /// Rounds: each runs every cell for its share of the calls, cells shuffled [default: 4]
    #[arg(long, value_name = "R")]
    rounds: Option<usize>,
    /// Unmeasured calls per caller before each cell's measured calls, in every round
    #[arg(long, value_name = "W", default_value_t = 10)]
    warmup: usize,
    /// Numbers of concurrent callers, comma-separated [default: 1,8]
    #[arg(long, value_name = "C,...", value_delimiter = ',')]
    concurrency: Vec<usize>,
    /// A smoke run for CI: 20 calls, 1 round, 1 caller, echo (the other options still win)
    #[arg(long)]
    quick: bool,
    /// Also write the results as JSON to FILE
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// The rmcp server [default: `toolgate-fixture` next to this executable]
    #[arg(long, value_name = "PATH")]
    fixture: Option<PathBuf>,
    /// tests/deps/npm, where scripts/install-test-deps put server-everything [default: that
    /// folder of this workspace]
    #[arg(long, env = "TOOLGATE_TEST_NPM_DIR", value_name = "DIR")]
    npm_dir: Option<PathBuf>,
    /// The node that runs server-everything.
    #[arg(long, env = "TOOLGATE_TEST_NODE", default_value = "node", value_name = "PATH")]
    node: PathBuf,
    /// The Python interpreter with the MCP SDK [default: tests/deps/python/venv/bin/python of
    /// this workspace]
    #[arg(long, env = "TOOLGATE_TEST_PYTHON", value_name = "PATH")]
    python: Option<PathBuf>,
    /// Seed of the order of cells in each round [default: from the clock]
    #[arg(long)]
    seed: Option<u64>,
}

/// An upstream server, by the SDK it is built on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Kind {
    /// toolgate-fixture: rmcp (Rust), `TCP_NODELAY` set.
    Rmcp,
    /// toolgate-fixture --nagle: rmcp (Rust), Nagle's algorithm on.
    RmcpNagle,
    /// server-everything: the TypeScript SDK.
    Typescript,
    /// bench/upstreams/python_echo.py: the Python SDK.
    Python,
}

impl Kind {
    const ALL: [Kind; 4] = [Kind::Rmcp, Kind::RmcpNagle, Kind::Typescript, Kind::Python];

    fn name(self) -> &'static str {
        match self {
            Kind::Rmcp => "rmcp",
            Kind::RmcpNagle => "rmcp-nagle",
            Kind::Typescript => "typescript",
            Kind::Python => "python",
        }
    }

    /// What the server is built on, for the report.
    fn built_on(self) -> &'static str {
        match self {
            Kind::Rmcp => "toolgate-fixture, rmcp (Rust) on axum, TCP_NODELAY set",
            Kind::RmcpNagle => "toolgate-fixture --nagle, rmcp (Rust) on axum, Nagle on",
            Kind::Typescript => "server-everything, TypeScript SDK on Express (Node)",
            Kind::Python => "bench/upstreams/python_echo.py, Python SDK (MCPServer) on Uvicorn",
        }
    }

    /// The name and arguments of `tool` on this server.
    fn call(self, tool: Tool) -> (&'static str, serde_json::Value) {
        match (tool, self) {
            (Tool::Echo, Kind::Rmcp | Kind::RmcpNagle) => ("echo", json!({ "text": TEXT })),
            (Tool::Echo, Kind::Typescript | Kind::Python) => ("echo", json!({ "message": TEXT })),
            (Tool::Wait5, Kind::Rmcp | Kind::RmcpNagle) => {
                ("slow", json!({ "steps": 1, "step_ms": 5 }))
            }
            (Tool::Wait5, Kind::Typescript) => {
                ("trigger-long-running-operation", json!({ "duration": 0.005, "steps": 1 }))
            }
            (Tool::Wait5, Kind::Python) => ("wait", json!({ "ms": 5 })),
        }
    }
}

/// What a call asks of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Tool {
    /// A short text echoed at once.
    Echo,
    /// An answer 5 ms later, after a progress notification.
    Wait5,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::Echo => "echo",
            Tool::Wait5 => "wait5",
        }
    }
}

/// What to run, with every default resolved.
#[derive(Debug)]
struct Plan {
    servers: Vec<Kind>,
    tools: Vec<Tool>,
    pools: Vec<bool>,
    calls: usize,
    rounds: usize,
    warmup: usize,
    concurrency: Vec<usize>,
    json: Option<PathBuf>,
    seed: u64,
    programs: Programs,
}

/// Where each server's program is.
#[derive(Debug)]
struct Programs {
    fixture: PathBuf,
    node: PathBuf,
    everything: PathBuf,
    python: PathBuf,
    python_script: PathBuf,
}

impl Plan {
    fn new(args: UpstreamArgs) -> anyhow::Result<Plan> {
        let quick = args.quick;
        let calls = args.calls.unwrap_or(if quick { 20 } else { 2000 });
        let rounds = args.rounds.unwrap_or(if quick { 1 } else { 4 });
        if calls == 0 || rounds == 0 {
            bail!("--calls and --rounds must be at least 1");
        }
        if rounds > calls {
            bail!("--rounds {rounds} is more than --calls {calls}: every round needs a call");
        }
        let mut concurrency = args.concurrency;
        if concurrency.is_empty() {
            concurrency = if quick { vec![1] } else { vec![1, 8] };
        }
        if concurrency.contains(&0) {
            bail!("--concurrency takes numbers of callers of at least 1");
        }
        concurrency.sort_unstable();
        concurrency.dedup();
        let mut servers = args.servers;
        if servers.is_empty() {
            servers = Kind::ALL.to_vec();
        }
        servers.sort_unstable();
        servers.dedup();
        let mut tools = args.tools;
        if tools.is_empty() {
            tools = if quick { vec![Tool::Echo] } else { vec![Tool::Echo, Tool::Wait5] };
        }
        tools.sort_unstable();
        tools.dedup();
        let mut pools = args.pool;
        if pools.is_empty() {
            pools = vec![true, false];
        }
        pools.dedup();
        let workspace = workspace();
        let npm_dir = args.npm_dir.unwrap_or_else(|| workspace.join("tests/deps/npm"));
        let programs = Programs {
            fixture: crate::binaries::find(
                args.fixture.as_deref(),
                "toolgate-fixture",
                "--fixture",
                "toolgate-testkit",
            )?,
            node: args.node,
            everything: npm_dir
                .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
            python: args
                .python
                .unwrap_or_else(|| workspace.join("tests/deps/python/venv/bin/python")),
            python_script: workspace.join("bench/upstreams/python_echo.py"),
        };
        let installed = |kind: Kind, path: &Path| {
            if servers.contains(&kind) && !path.is_file() {
                bail!(
                    "{} is missing, needed for the {} server: run scripts/install-test-deps",
                    path.display(),
                    kind.name()
                );
            }
            Ok(())
        };
        installed(Kind::Typescript, &programs.everything)?;
        installed(Kind::Python, &programs.python)?;
        installed(Kind::Python, &programs.python_script)?;
        let seed = Shuffler::seed_or_clock(args.seed);
        Ok(Plan {
            servers,
            tools,
            pools,
            calls,
            rounds,
            warmup: args.warmup,
            concurrency,
            json: args.json,
            seed,
            programs,
        })
    }

    /// The calls of each cell in round `round` (the first rounds take the remainder).
    fn calls_in_round(&self, round: usize) -> usize {
        self.calls / self.rounds + usize::from(round < self.calls % self.rounds)
    }
}

/// The workspace this binary was built from.
fn workspace() -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    workspace.canonicalize().unwrap_or(workspace)
}

pub(crate) async fn run(args: UpstreamArgs) -> anyhow::Result<()> {
    let plan = Plan::new(args)?;
    // On Ctrl-C or SIGTERM the measurement is dropped, and with it every process group it
    // started (each is killed when its guard drops).
    tokio::select! {
        result = measure(plan) => result,
        () = crate::interrupted() => bail!("interrupted: the servers it started were killed"),
    }
}

/// A server, up, with one upstream client per `pool` setting.
struct Running {
    kind: Kind,
    server: Server,
    port: u16,
    /// The command line, for the record.
    command: String,
    clients: Vec<(bool, Arc<Upstream>)>,
}

/// Starts everything, runs the rounds, stops everything (also after an error), reports.
async fn measure(plan: Plan) -> anyhow::Result<()> {
    let machine = Machine::describe();
    eprintln!("machine: {machine}");
    let mut running = Vec::new();
    let mut failure = None;
    for &kind in &plan.servers {
        match start(kind, &plan).await {
            Ok(server) => running.push(server),
            Err(error) => {
                failure = Some(error);
                break;
            }
        }
    }
    let result = match failure {
        Some(error) => Err(error),
        None => rounds(&plan, &running).await,
    };
    for server in running.iter() {
        server.server.quiet();
    }
    let mut commands = Vec::new();
    for server in running {
        for (_, client) in &server.clients {
            client.shutdown().await;
        }
        commands.push((server.kind, server.command));
        server.server.stop().await;
    }
    let rows = result?;
    let report = Report {
        machine,
        settings: Settings {
            calls: plan.calls,
            rounds: plan.rounds,
            warmup: plan.warmup,
            seed: plan.seed,
        },
        servers: commands
            .into_iter()
            .map(|(kind, command)| ServerRecord {
                server: kind,
                built_on: kind.built_on(),
                command: portable(&command),
            })
            .collect(),
        results: rows,
    };
    print!("{}", report.table());
    if let Some(path) = &plan.json {
        let text = serde_json::to_string_pretty(&report).context("cannot serialize the results")?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("results written to {}", path.display());
    }
    Ok(())
}

/// Starts `kind`'s server on a free port of 127.0.0.1 and connects a client per `pool`.
async fn start(kind: Kind, plan: &Plan) -> anyhow::Result<Running> {
    let programs = &plan.programs;
    let label = format!("upstream-{}", kind.name());
    let (server, url, command) = match kind {
        Kind::Rmcp | Kind::RmcpNagle => {
            let mut command = tokio::process::Command::new(&programs.fixture);
            command.args(["--transport", "http", "--port", "0"]).env_remove("RUST_LOG");
            let mut described = format!("{} --transport http --port 0", programs.fixture.display());
            if kind == Kind::RmcpNagle {
                command.arg("--nagle");
                described.push_str(" --nagle");
            }
            let (server, url) =
                Server::start(&label, command, Ready::StdoutPrefix("listening "), None)
                    .await
                    .context("the fixture does not start")?;
            (server, url, described)
        }
        Kind::Typescript => {
            // It binds every interface; only its 127.0.0.1 address is used.
            let port = free_port()?;
            let mut command = tokio::process::Command::new(&programs.node);
            command.arg(&programs.everything).arg("streamableHttp").env("PORT", port.to_string());
            let described = format!(
                "PORT={port} {} {} streamableHttp",
                programs.node.display(),
                programs.everything.display()
            );
            let url = format!("http://127.0.0.1:{port}/mcp");
            let (server, url) =
                Server::start(&label, command, Ready::Accepting { port, url }, None)
                    .await
                    .context("server-everything does not start")?;
            (server, url, described)
        }
        Kind::Python => {
            let port = free_port()?;
            let mut command = tokio::process::Command::new(&programs.python);
            command.arg(&programs.python_script).args(["--port", &port.to_string()]);
            let described = format!(
                "{} {} --port {port}",
                programs.python.display(),
                programs.python_script.display()
            );
            let url = format!("http://127.0.0.1:{port}/mcp");
            let (server, url) =
                Server::start(&label, command, Ready::Accepting { port, url }, None)
                    .await
                    .context("the Python server does not start")?;
            (server, url, described)
        }
    };
    let port = url::Url::parse(&url)
        .ok()
        .and_then(|url| url.port())
        .with_context(|| format!("{label}: no port in {url}"))?;
    let mut running = Running { kind, server, port, command, clients: Vec::new() };
    for &pool in &plan.pools {
        let config = server_config(kind, &url, pool)?;
        match Upstream::connect(&config).await {
            Ok(client) => running.clients.push((pool, client)),
            Err(error) => {
                let tail = running.server.tail();
                for (_, client) in &running.clients {
                    client.shutdown().await;
                }
                running.server.stop().await;
                return Err(anyhow::Error::new(error)
                    .context(format!("cannot connect to the {} server{tail}", kind.name())));
            }
        }
    }
    Ok(running)
}

/// `[servers.<kind>]` with `url` and `pool`, through toolgate's own config loader.
fn server_config(kind: Kind, url: &str, pool: bool) -> anyhow::Result<ServerConfig> {
    let text = format!(
        "[servers.{}]\nurl = {}\ntransport = \"streamable-http\"\npool = {pool}\n\
         startup_timeout = \"30s\"\n",
        kind.name(),
        toml::Value::String(url.to_owned())
    );
    let config =
        toolgate_config::parse_str(&text, Format::Toml, Path::new("."), &FixedEnvironment::new())
            .map_err(|errors| anyhow::anyhow!("the {} server's config: {errors}", kind.name()))?;
    config.servers.into_iter().next().context("the config has the server")
}

/// One cell: a server, a tool, a client (its `pool` setting) and a number of concurrent
/// callers.
#[derive(Debug, Clone, Copy)]
struct Cell {
    server: usize,
    tool: Tool,
    client: usize,
    concurrency: usize,
}

/// What a cell measured over the rounds.
#[derive(Debug, Default)]
struct CellTotals {
    samples: Samples,
    connections: usize,
}

/// Runs every round; returns one row per cell.
async fn rounds(plan: &Plan, running: &[Running]) -> anyhow::Result<Vec<Row>> {
    let mut cells = Vec::new();
    for (server, running) in running.iter().enumerate() {
        for &tool in &plan.tools {
            for client in 0..running.clients.len() {
                for &concurrency in &plan.concurrency {
                    cells.push(Cell { server, tool, client, concurrency });
                }
            }
        }
    }
    let mut totals: Vec<CellTotals> = cells.iter().map(|_| CellTotals::default()).collect();
    let mut order: Vec<usize> = (0..cells.len()).collect();
    let mut shuffler = Shuffler::new(plan.seed);
    for round in 0..plan.rounds {
        let calls = plan.calls_in_round(round);
        let started = Instant::now();
        shuffler.shuffle(&mut order);
        for &index in &order {
            let cell = cells[index];
            let server = &running[cell.server];
            let (pool, client) = &server.clients[cell.client];
            let measured =
                run_cell(server, cell.tool, client, cell.concurrency, calls, plan.warmup)
                    .await
                    .with_context(|| {
                        format!(
                            "{} server, {}, pool = {pool}, {} callers",
                            server.kind.name(),
                            cell.tool.name(),
                            cell.concurrency
                        )
                    })?;
            let total = &mut totals[index];
            total.samples.add(
                measured.calls,
                measured.wall,
                measured.client_cpu,
                measured.server_cpu,
                None,
            );
            total.connections += measured.connections;
        }
        eprintln!(
            "round {}/{}: {} cells × {calls} calls in {:.1}s",
            round + 1,
            plan.rounds,
            cells.len(),
            started.elapsed().as_secs_f64()
        );
    }
    let mut rows = Vec::new();
    for (cell, total) in cells.iter().zip(totals) {
        let server = &running[cell.server];
        let summary = total.samples.summary().context("every cell made calls")?;
        let connections_per_call = total.connections as f64 / summary.calls as f64;
        rows.push(Row {
            server: server.kind,
            tool: cell.tool,
            pool: server.clients[cell.client].0,
            concurrency: cell.concurrency,
            connections: total.connections,
            connections_per_call,
            summary,
        });
    }
    Ok(rows)
}

/// What one cell measured in one round.
struct CellRun {
    calls: Vec<Duration>,
    wall: Duration,
    client_cpu: Duration,
    server_cpu: Duration,
    connections: usize,
}

/// One cell in one round: warm-up, then `calls` calls from `concurrency` callers at once.
async fn run_cell(
    server: &Running,
    tool: Tool,
    client: &Upstream,
    concurrency: usize,
    calls: usize,
    warmup: usize,
) -> anyhow::Result<CellRun> {
    let (name, arguments) = server.kind.call(tool);
    let arguments = arguments.as_object().cloned().unwrap_or_default();
    let params = mcp::CallToolRequestParams::new(name).with_arguments(arguments);
    let options = CallOptions::default();
    let call = || async {
        let result = client
            .call_tool(params.clone(), &options)
            .await
            .with_context(|| format!("{name} failed"))?;
        if result.is_error == Some(true) {
            bail!("{name} answered with an error: {result:?}");
        }
        anyhow::Ok(())
    };
    futures::future::try_join_all((0..concurrency).map(|_| async {
        for _ in 0..warmup {
            call().await.context("warm-up call")?;
        }
        anyhow::Ok(())
    }))
    .await?;

    let processes = proc_stats::tree(server.server.pid());
    let server_cpu = || processes.iter().filter_map(|&pid| proc_stats::cpu_time(pid)).sum();
    let before = connections::client_ports(server.port);
    let (client_before, server_before): (Duration, Duration) =
        (proc_stats::own_cpu_time(), server_cpu());
    let started = Instant::now();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let per_caller = futures::future::try_join_all((0..concurrency).map(|_| async {
        let mut durations = Vec::new();
        while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < calls {
            let sent = Instant::now();
            call().await?;
            durations.push(sent.elapsed());
        }
        anyhow::Ok(durations)
    }))
    .await?;
    let wall = started.elapsed();
    let client_cpu = proc_stats::own_cpu_time().saturating_sub(client_before);
    let server_cpu = server_cpu().saturating_sub(server_before);
    let after = connections::client_ports(server.port);
    Ok(CellRun {
        calls: per_caller.into_iter().flatten().collect(),
        wall,
        client_cpu,
        server_cpu,
        connections: after.difference(&before).count(),
    })
}

/// The settings of a run, for the record.
#[derive(Debug, Serialize)]
struct Settings {
    calls: usize,
    rounds: usize,
    warmup: usize,
    seed: u64,
}

/// A server as it was run.
#[derive(Debug, Serialize)]
struct ServerRecord {
    server: Kind,
    built_on: &'static str,
    command: String,
}

/// One cell's results.
#[derive(Debug, Serialize)]
struct Row {
    server: Kind,
    tool: Tool,
    pool: bool,
    concurrency: usize,
    /// TCP connections to the server opened during the measured calls.
    connections: usize,
    connections_per_call: f64,
    #[serde(flatten)]
    summary: Summary,
}

/// Everything a run measured.
#[derive(Debug, Serialize)]
struct Report {
    machine: Machine,
    settings: Settings,
    servers: Vec<ServerRecord>,
    results: Vec<Row>,
}

impl Report {
    /// The printed report.
    fn table(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let Settings { calls, rounds, warmup, seed } = &self.settings;
        let _ = writeln!(out, "machine: {}", self.machine);
        let _ = writeln!(
            out,
            "upstream client: toolgate-upstream in this process, streamable HTTP; {calls} calls \
             per cell in {rounds} rounds (cells shuffled, seed {seed}), warm-up {warmup} per \
             caller"
        );
        for server in &self.servers {
            let _ = writeln!(out, "{}: {}", server.server.name(), server.built_on);
        }
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{:<11} {:<6} {:<5} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8} {:>7} {:>7} {:>9}",
            "server",
            "tool",
            "pool",
            "callers",
            "p50 ms",
            "p90 ms",
            "p99 ms",
            "max ms",
            "calls/s",
            "cli µs",
            "srv µs",
            "conn/call"
        );
        for row in &self.results {
            let s = &row.summary;
            let _ = writeln!(
                out,
                "{:<11} {:<6} {:<5} {:>7} {:>7.3} {:>7.3} {:>7.3} {:>8.2} {:>8.0} {:>7.0} {:>7.0} {:>9.3}",
                row.server.name(),
                row.tool.name(),
                row.pool,
                row.concurrency,
                s.p50_ms,
                s.p90_ms,
                s.p99_ms,
                s.max_ms,
                s.calls_per_s,
                s.client_cpu_us_per_call,
                s.server_cpu_us_per_call,
                row.connections_per_call
            );
        }
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "tools: echo = a five-character text answered at once; wait5 = answered after 5 ms, \
             after one progress notification"
        );
        let _ = writeln!(
            out,
            "cli µs / srv µs: CPU time per call of this process (the upstream client) / of the \
             server's processes; clock-tick (10 ms) resolution per cell and round.\nconn/call: \
             TCP connections to the server opened during the measured calls (from \
             /proc/net/tcp and tcp6), per call."
        );
        out
    }
}
