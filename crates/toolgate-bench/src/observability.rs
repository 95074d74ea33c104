//! `toolgate-bench observability`: what metrics and tracing add to a tool call through
//! toolgate.
//!
//! Four toolgates (`toolgate serve`, the binary next to this one: release under bench/run), the
//! same but for what watches them: the fixture over stdio as `fx`, one of
//! `bench/pipelines/*.toml` (`default` unless `--pipeline`), the streamable HTTP front, and
//!
//! - `plain`: nothing else (the baseline);
//! - `metrics`: `[gateway] metrics = true`, so that the collector subscribes to every event
//!   (and the gateway builds them);
//! - `traces-1`: `[telemetry]` with `sampling = 1.0`, every call's spans (the request's, the
//!   interceptors', the upstream call's) exported over OTLP/HTTP to a sink in this process that
//!   accepts and drops them (`sink.rs`);
//! - `traces-0.01`: the same with `sampling = 0.01`.
//!
//! Each call is the fixture's `echo {"text": "hello"}`, checked. As in `latency`, the run is
//! split in rounds, each running every cell (× concurrent callers, one MCP session each, kept
//! alive) in a freshly shuffled order after a warm-up. What a cell adds is its p50 (p99) minus
//! `plain`'s, its calls per second as a ratio of `plain`'s, and the CPU of toolgate's own
//! process per call minus `plain`'s. After the run, `metrics`' `/metrics` must have counted
//! every call, and the `traces-1` sink must have received exports.

mod cells;
mod report;
mod sink;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context as _, bail};
use tokio::process::Command;
use tokio::time::Instant;

use crate::binaries::{Binaries, BinaryArgs};
use crate::latency::machine::Machine;
use crate::latency::process::{Ready, Server};
use crate::latency::session::{Call, Era, Payload, Session};
use crate::latency::stats::{Samples, Shuffler};
use crate::latency::target::Pipeline;
use crate::portable::portable;
use crate::proc_stats;
use cells::CellKind;
use report::{Exports, Report, Row, Settings};
use sink::Sink;

/// The fixture's label, and so the prefix of its tools' names.
const SERVER: &str = "fx";
/// toolgate's log: warnings, and the line that says where it serves.
const SERVE_LOG: &str = "warn,toolgate::commands::serve=info";

/// Options of `observability`.
#[derive(Debug, clap::Args)]
pub(crate) struct ObservabilityArgs {
    /// Measured calls per cell (cell × concurrency), over all rounds [default: 20000]
    #[arg(long, value_name = "N")]
    calls: Option<usize>,
    /// Rounds: each runs every cell for its share of the calls, cells shuffled [default: 10]
    #[arg(long, value_name = "R")]
    rounds: Option<usize>,
    /// Unmeasured calls per session before each cell's measured ones, in every round
    /// [default: 50]
    #[arg(long, value_name = "W")]
    warmup: Option<usize>,
    /// Numbers of concurrent sessions, comma-separated [default: 1,8]
    #[arg(long, value_name = "C,...", value_delimiter = ',')]
    concurrency: Vec<usize>,
    /// toolgate's pipeline (bench/pipelines/<name>.toml)
    #[arg(long, value_enum, default_value = "default")]
    pipeline: Pipeline,
    /// A smoke run for CI: 20 calls, 1 round, warm-up 2 (the other options still win)
    #[arg(long)]
    quick: bool,
    /// Also write the results as JSON to FILE
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Seed of the order of cells in each round [default: from the clock]
    #[arg(long)]
    seed: Option<u64>,
    #[command(flatten)]
    binaries: BinaryArgs,
}

/// What to run, with every default resolved.
#[derive(Debug)]
struct Plan {
    calls: usize,
    rounds: usize,
    warmup: usize,
    concurrency: Vec<usize>,
    pipeline: Pipeline,
    json: Option<PathBuf>,
    seed: u64,
    binaries: Binaries,
}

impl Plan {
    fn new(args: ObservabilityArgs) -> anyhow::Result<Plan> {
        let quick = args.quick;
        // The differences are tens of microseconds: many calls, in many short rounds, so that
        // what the neighbours do hits every cell alike.
        let calls = args.calls.unwrap_or(if quick { 20 } else { 20_000 });
        let rounds = args.rounds.unwrap_or(if quick { 1 } else { 10 });
        if calls == 0 || rounds == 0 {
            bail!("--calls and --rounds must be at least 1");
        }
        if rounds > calls {
            bail!("--rounds {rounds} is more than --calls {calls}: every round needs one");
        }
        let mut concurrency = args.concurrency;
        if concurrency.is_empty() {
            concurrency = vec![1, 8];
        }
        if concurrency.contains(&0) {
            bail!("--concurrency takes numbers of sessions of at least 1");
        }
        concurrency.sort_unstable();
        concurrency.dedup();
        Ok(Plan {
            calls,
            rounds,
            warmup: args.warmup.unwrap_or(if quick { 2 } else { 50 }),
            concurrency,
            pipeline: args.pipeline,
            json: args.json,
            seed: Shuffler::seed_or_clock(args.seed),
            binaries: args.binaries.resolve()?,
        })
    }

    /// The calls of each cell in round `round` (the first rounds take the remainder).
    fn calls_in_round(&self, round: usize) -> usize {
        self.calls / self.rounds + usize::from(round < self.calls % self.rounds)
    }

    /// Sessions each toolgate needs: the most callers of any cell.
    fn sessions(&self) -> usize {
        self.concurrency.iter().copied().max().unwrap_or(1)
    }
}

pub(crate) async fn run(args: ObservabilityArgs) -> anyhow::Result<()> {
    let plan = Plan::new(args)?;
    // On Ctrl-C or SIGTERM the measurement is dropped, and with it every process group it
    // started (each is killed when its guard drops).
    tokio::select! {
        result = measure(plan) => result,
        () = crate::interrupted() => bail!("interrupted: the servers it started were killed"),
    }
}

/// One cell's toolgate, its sessions, and its OTLP sink when traced.
struct Gateway {
    kind: CellKind,
    server: Server,
    /// Where it serves MCP.
    url: String,
    sessions: Vec<Session>,
    sink: Option<Sink>,
    /// Its command line, for the record.
    command: String,
    /// Calls made to it, warm-ups included.
    calls: AtomicUsize,
}

/// Starts every toolgate, runs the rounds, stops everything (also after an error), checks
/// that metrics and traces were there, reports.
async fn measure(plan: Plan) -> anyhow::Result<()> {
    let machine = Machine::describe();
    eprintln!("machine: {machine}");
    let scratch = tempfile::tempdir().context("cannot create a scratch folder")?;
    let mut gateways = Vec::new();
    for kind in CellKind::ALL {
        match start(&plan, kind, scratch.path()).await {
            Ok(gateway) => gateways.push(gateway),
            Err(error) => {
                stop(gateways).await;
                return Err(error);
            }
        }
    }
    let result = rounds(&plan, &gateways).await;
    let counted = match &result {
        Ok(_) => counted_by_metrics(&gateways).await,
        Err(_) => Ok(0),
    };
    let peak_rss_kib: BTreeMap<&'static str, u64> = gateways
        .iter()
        .filter_map(|g| Some((g.kind.name(), proc_stats::peak_rss_kib(g.server.pid())?)))
        .collect();
    let commands: BTreeMap<&'static str, String> =
        gateways.iter().map(|g| (g.kind.name(), portable(&g.command))).collect();
    let calls: Vec<(CellKind, usize)> =
        gateways.iter().map(|g| (g.kind, g.calls.load(Ordering::Relaxed))).collect();
    // Ending toolgate exports the spans it still holds: read the sinks after.
    let sinks: Vec<(CellKind, Option<Sink>)> = {
        let mut sinks = Vec::new();
        for gateway in gateways {
            sinks.push((gateway.kind, stop_one(gateway).await));
        }
        sinks
    };
    let rows = result?;
    let made = |kind: CellKind| calls.iter().find(|(k, _)| *k == kind).map_or(0, |(_, n)| *n);
    let counted = counted?;
    if counted != made(CellKind::Metrics) {
        bail!(
            "metrics counted {counted} calls of {SERVER}__echo, not the {} made",
            made(CellKind::Metrics)
        );
    }
    let exports: Vec<Exports> = sinks
        .iter()
        .filter_map(|(kind, sink)| {
            let received = &sink.as_ref()?.received;
            Some(Exports {
                cell: *kind,
                calls: made(*kind),
                exports: received.exports(),
                bytes: received.bytes(),
            })
        })
        .collect();
    if exports.iter().any(|e| e.cell == CellKind::Traces100 && e.exports == 0) {
        bail!("the traces-1 toolgate exported nothing: tracing did not run");
    }
    let report = Report::new(
        machine,
        Settings {
            calls: plan.calls,
            rounds: plan.rounds,
            warmup: plan.warmup,
            concurrency: plan.concurrency.clone(),
            seed: plan.seed,
            pipeline: plan.pipeline.name(),
            toolgate: commands,
            fixture: portable(&plan.binaries.fixture.display().to_string()),
            counted_by_metrics: counted,
            peak_rss_kib,
        },
        rows,
        exports,
    );
    print!("{}", report.table());
    if let Some(path) = &plan.json {
        let text = serde_json::to_string_pretty(&report).context("cannot serialize the results")?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("results written to {}", path.display());
    }
    Ok(())
}

/// Starts `kind`'s toolgate (and its sink) and opens its sessions.
async fn start(plan: &Plan, kind: CellKind, scratch: &Path) -> anyhow::Result<Gateway> {
    let sink = match kind.sampling() {
        Some(_) => Some(Sink::start().await?),
        None => None,
    };
    let dir = scratch.join(kind.name());
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let config = write_config(&dir, plan, kind, sink.as_ref().map(|s| s.url.as_str()))?;
    let mut command = Command::new(&plan.binaries.toolgate);
    command.args(["serve", "--listen", "127.0.0.1:0", "--log", SERVE_LOG, "--config"]);
    command
        .arg(&config)
        .env_remove("TOOLGATE_CONFIG")
        .env_remove("RUST_LOG")
        .env_remove("TOOLGATE_LOG");
    // The config says everything: no exporter settings from this environment.
    for (name, _) in std::env::vars() {
        if name.starts_with("OTEL_") {
            command.env_remove(name);
        }
    }
    let label = format!("toolgate-{}", kind.name());
    let (server, url) =
        Server::start(&label, command, Ready::StderrMarker("serving MCP at "), None).await?;
    let opened = futures::future::try_join_all(
        (0..plan.sessions()).map(|_| Session::http(&url, true, Era::Handshake)),
    )
    .await;
    let sessions = match opened {
        Ok(sessions) => sessions,
        Err(error) => {
            let tail = server.tail();
            server.stop().await;
            return Err(error.context(format!("{label}: cannot open its sessions{tail}")));
        }
    };
    let command = format!(
        "{} serve --listen 127.0.0.1:0 --config {}",
        plan.binaries.toolgate.display(),
        config.display()
    );
    Ok(Gateway { kind, server, url, sessions, sink, command, calls: AtomicUsize::new(0) })
}

/// The cell's `toolgate.toml` in `dir`: the fixture as `fx` on stdio, the pipeline, and what
/// the cell turns on.
fn write_config(
    dir: &Path,
    plan: &Plan,
    kind: CellKind,
    sink: Option<&str>,
) -> anyhow::Result<PathBuf> {
    let quoted = |text: &str| toml::Value::String(text.to_owned()).to_string();
    let text = format!(
        "[servers.{SERVER}]\ncommand = {fixture}\nrequired = true\n\n{pipeline}\n{cell}",
        fixture = quoted(&plan.binaries.fixture.to_string_lossy()),
        pipeline = plan.pipeline.fragment(),
        cell = kind.fragment(sink),
    );
    let path = dir.join("toolgate.toml");
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// Closes a toolgate's sessions and ends it; its sink, to read after.
async fn stop_one(gateway: Gateway) -> Option<Sink> {
    gateway.server.quiet();
    futures::future::join_all(gateway.sessions.into_iter().map(Session::close)).await;
    gateway.server.stop().await;
    gateway.sink
}

async fn stop(gateways: Vec<Gateway>) {
    for gateway in gateways {
        stop_one(gateway).await;
    }
}

/// The `tools/call`s of `fx__echo` the `metrics` toolgate's `/metrics` counted as `ok`.
async fn counted_by_metrics(gateways: &[Gateway]) -> anyhow::Result<usize> {
    let gateway = gateways
        .iter()
        .find(|g| g.kind == CellKind::Metrics)
        .context("the metrics cell's toolgate")?;
    let url = format!("{}/metrics", gateway.url.trim_end_matches("/mcp"));
    let text = reqwest::get(&url)
        .await
        .and_then(reqwest::Response::error_for_status)
        .with_context(|| format!("GET {url}"))?
        .text()
        .await
        .context("the metrics' text")?;
    let series = format!(
        "toolgate_requests_total{{method=\"tools/call\",server=\"{SERVER}\",\
         tool=\"{SERVER}__echo\",outcome=\"ok\"}} "
    );
    let line = text.lines().find_map(|line| line.strip_prefix(series.as_str()));
    let count = line.with_context(|| format!("no {series}in {url}:\n{text}"))?;
    count.trim().parse().with_context(|| format!("{series}{count}"))
}

/// One cell: a toolgate and a number of concurrent sessions.
#[derive(Debug, Clone, Copy)]
struct Cell {
    /// Its toolgate, by index.
    gateway: usize,
    concurrency: usize,
}

/// Runs every round; returns one row per cell.
async fn rounds(plan: &Plan, gateways: &[Gateway]) -> anyhow::Result<Vec<Row>> {
    let mut cells = Vec::new();
    for gateway in 0..gateways.len() {
        for &concurrency in &plan.concurrency {
            cells.push(Cell { gateway, concurrency });
        }
    }
    let call = Call::new(&format!("{SERVER}__echo"), Payload::Small);
    let mut totals: Vec<Samples> = cells.iter().map(|_| Samples::default()).collect();
    let mut order: Vec<usize> = (0..cells.len()).collect();
    let mut shuffler = Shuffler::new(plan.seed);
    for round in 0..plan.rounds {
        let calls = plan.calls_in_round(round);
        let started = Instant::now();
        shuffler.shuffle(&mut order);
        for &index in &order {
            let cell = cells[index];
            let gateway = &gateways[cell.gateway];
            let measured =
                run_cell(gateway, cell.concurrency, &call, calls, plan.warmup).await.with_context(
                    || format!("{}, {} sessions", gateway.kind.name(), cell.concurrency),
                )?;
            totals[index].add(
                measured.durations,
                measured.wall,
                measured.client_cpu,
                measured.server_cpu,
                Some(measured.gateway_cpu),
            );
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
    for (cell, samples) in cells.iter().zip(totals) {
        rows.push(Row {
            cell: gateways[cell.gateway].kind,
            concurrency: cell.concurrency,
            warmup_calls: plan.warmup * cell.concurrency * plan.rounds,
            summary: samples.summary().context("every cell made calls")?,
        });
    }
    Ok(rows)
}

/// What one cell measured in one round.
struct CellRun {
    durations: Vec<Duration>,
    wall: Duration,
    client_cpu: Duration,
    server_cpu: Duration,
    gateway_cpu: Duration,
}

/// One cell in one round: warm-up, then `calls` calls from `concurrency` sessions at once.
async fn run_cell(
    gateway: &Gateway,
    concurrency: usize,
    call: &Call,
    calls: usize,
    warmup: usize,
) -> anyhow::Result<CellRun> {
    let sessions = &gateway.sessions[..concurrency];
    futures::future::try_join_all(sessions.iter().map(|session| async move {
        for _ in 0..warmup {
            session.call(call).await.context("warm-up call")?;
        }
        anyhow::Ok(())
    }))
    .await?;
    gateway.calls.fetch_add(warmup * concurrency, Ordering::Relaxed);
    // toolgate and the fixture it started; toolgate's own process alone.
    let pid = gateway.server.pid();
    let servers = proc_stats::tree(pid);
    let server_cpu = || servers.iter().filter_map(|&pid| proc_stats::cpu_time(pid)).sum();
    let gateway_cpu = || proc_stats::cpu_time(pid).unwrap_or_default();
    let (client_before, server_before, gateway_before): (Duration, Duration, Duration) =
        (proc_stats::own_cpu_time(), server_cpu(), gateway_cpu());
    let started = Instant::now();
    let next = AtomicUsize::new(0);
    let per_session = futures::future::try_join_all(sessions.iter().map(|session| {
        let next = &next;
        async move {
            let mut durations = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < calls {
                durations.push(session.call(call).await?);
            }
            anyhow::Ok(durations)
        }
    }))
    .await?;
    let wall = started.elapsed();
    let client_cpu = proc_stats::own_cpu_time().saturating_sub(client_before);
    // toolgate's own time is read after the servers' before and before theirs after, so that
    // it never comes out above the total it is part of.
    let gateway_cpu = gateway_cpu().saturating_sub(gateway_before);
    let server_cpu = server_cpu().saturating_sub(server_before);
    let durations: Vec<Duration> = per_session.into_iter().flatten().collect();
    gateway.calls.fetch_add(durations.len(), Ordering::Relaxed);
    Ok(CellRun { durations, wall, client_cpu, server_cpu, gateway_cpu })
}
