//! `toolgate-bench responses`: what toolgate's OpenAI-compatible `POST /v1/responses` costs
//! over calling the same model directly, with and without one hosted MCP tool call (issue 28).
//!
//! The model is toolgate-testkit's fake LLM, in this process, with no delays: its answer is
//! chosen by the request alone (offered `fx__echo` and no tool result yet → a call of it;
//! otherwise a short text), which a script file of `toolgate-fixture fake-llm` (turns in
//! order) cannot express once requests run concurrently. Running it here costs nothing in
//! precision: toolgate's CPU is read from its own process, and the fake's lands in this
//! process's (`cli µs`) in every cell alike.
//!
//! toolgate (`toolgate serve`, the binary next to this one: release under bench/run) has
//! `[gateway] llm_api`, `[agent] provider = "openai-responses"` pointing at the fake, so that
//! the fake answers the same dialect on the same path in the direct cells and behind the
//! gateway (toolgate streams its model calls: every provider of toolgate-llm does), the
//! fixture over stdio as `fx`, and one of `bench/pipelines/*.toml` (`default` unless
//! `--pipeline`). The cells:
//!
//! - `direct`: the fake's own `/v1/responses`, no tools;
//! - `toolgate`: toolgate's, no tools, `store: false`;
//! - `toolgate+store`: the same with `store: true` (the response written to SQLite);
//! - `direct+mcp`: an application without the gateway: a model call offering the fixture's
//!   tools as functions, its own MCP call to the fixture (an rmcp client over stdio, kept open
//!   for the run, as toolgate keeps its upstream), and the model call with the result;
//! - `toolgate+mcp`: toolgate's, with `tools: [{"type": "mcp", "server_label": "fx",
//!   "require_approval": "never"}]`: two model calls and one MCP call through the pipeline.
//!
//! Every request is non-streaming and checked (the answer, the call's echo). As in `latency`
//! the run is split in rounds, each running every cell (× concurrent callers) in a freshly
//! shuffled order after a warm-up; callers share one HTTP client that keeps its connections
//! alive. The added latency of a toolgate cell is its p50 (p99) minus its baseline's.

mod cells;
mod report;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context as _, bail};
use tokio::process::Command;
use tokio::time::Instant;
use toolgate_testkit::fake_llm::FakeLlm;

use crate::binaries::{Binaries, BinaryArgs};
use crate::latency::machine::Machine;
use crate::latency::process::{Ready, Server};
use crate::latency::session::{Era, Session};
use crate::latency::stats::{Samples, Shuffler};
use crate::latency::target::Pipeline;
use crate::portable::portable;
use crate::proc_stats;
use cells::{CellKind, Endpoints};
use report::{Report, Row, Settings};

/// The variable toolgate reads the model's key from (the fake wants none, the provider one).
const KEY_VAR: &str = "TOOLGATE_BENCH_MODEL_KEY";
/// toolgate's log: warnings, and the line that says the endpoint is served.
const SERVE_LOG: &str = "warn,toolgate::commands::serve=info";

/// Options of `responses`.
#[derive(Debug, clap::Args)]
pub(crate) struct ResponsesArgs {
    /// Measured requests per cell (cell × concurrency), over all rounds [default: 2000]
    #[arg(long, value_name = "N")]
    requests: Option<usize>,
    /// Rounds: each runs every cell for its share of the requests, cells shuffled
    /// [default: 4]
    #[arg(long, value_name = "R")]
    rounds: Option<usize>,
    /// Unmeasured requests per caller before each cell's measured ones, in every round
    /// [default: 10]
    #[arg(long, value_name = "W")]
    warmup: Option<usize>,
    /// Numbers of concurrent callers, comma-separated [default: 1,8]
    #[arg(long, value_name = "C,...", value_delimiter = ',')]
    concurrency: Vec<usize>,
    /// The cells, comma-separated [default: direct,toolgate,toolgate+store,direct+mcp,
    /// toolgate+mcp]
    #[arg(long, value_name = "CELL,...", value_delimiter = ',', value_enum)]
    cells: Vec<CellKind>,
    /// toolgate's pipeline (bench/pipelines/<name>.toml)
    #[arg(long, value_enum, default_value = "default")]
    pipeline: Pipeline,
    /// A smoke run for CI: 20 requests, 1 round, warm-up 2 (the other options still win)
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
    cells: Vec<CellKind>,
    requests: usize,
    rounds: usize,
    warmup: usize,
    concurrency: Vec<usize>,
    pipeline: Pipeline,
    json: Option<PathBuf>,
    seed: u64,
    binaries: Binaries,
}

impl Plan {
    fn new(args: ResponsesArgs) -> anyhow::Result<Plan> {
        let quick = args.quick;
        let requests = args.requests.unwrap_or(if quick { 20 } else { 2000 });
        let rounds = args.rounds.unwrap_or(if quick { 1 } else { 4 });
        if requests == 0 || rounds == 0 {
            bail!("--requests and --rounds must be at least 1");
        }
        if rounds > requests {
            bail!("--rounds {rounds} is more than --requests {requests}: every round needs one");
        }
        let mut concurrency = args.concurrency;
        if concurrency.is_empty() {
            concurrency = vec![1, 8];
        }
        if concurrency.contains(&0) {
            bail!("--concurrency takes numbers of callers of at least 1");
        }
        concurrency.sort_unstable();
        concurrency.dedup();
        let mut cells = args.cells;
        if cells.is_empty() {
            cells = CellKind::ALL.to_vec();
        }
        cells.sort_unstable();
        cells.dedup();
        Ok(Plan {
            cells,
            requests,
            rounds,
            warmup: args.warmup.unwrap_or(if quick { 2 } else { 10 }),
            concurrency,
            pipeline: args.pipeline,
            json: args.json,
            seed: Shuffler::seed_or_clock(args.seed),
            binaries: args.binaries.resolve()?,
        })
    }

    /// The requests of each cell in round `round` (the first rounds take the remainder).
    fn requests_in_round(&self, round: usize) -> usize {
        self.requests / self.rounds + usize::from(round < self.requests % self.rounds)
    }

    fn needs_toolgate(&self) -> bool {
        self.cells.iter().any(|cell| cell.via_toolgate())
    }
}

pub(crate) async fn run(args: ResponsesArgs) -> anyhow::Result<()> {
    let plan = Plan::new(args)?;
    // On Ctrl-C or SIGTERM the measurement is dropped, and with it every process group it
    // started (each is killed when its guard drops).
    tokio::select! {
        result = measure(plan) => result,
        () = crate::interrupted() => bail!("interrupted: the servers it started were killed"),
    }
}

/// What is up for the run.
struct Running {
    endpoints: Endpoints,
    toolgate: Option<Server>,
    /// toolgate's command line, for the record.
    command: Option<String>,
    fake: FakeLlm,
}

/// Starts everything, runs the rounds, stops everything (also after an error), reports.
async fn measure(plan: Plan) -> anyhow::Result<()> {
    let machine = Machine::describe();
    eprintln!("machine: {machine}");
    let scratch = tempfile::tempdir().context("cannot create a scratch folder")?;
    let mut running = start(&plan, scratch.path()).await?;
    let result = rounds(&plan, &running).await;
    let model_requests = running.fake.requests().len();
    if let Some(toolgate) = &running.toolgate {
        toolgate.quiet();
    }
    let peak_rss_kib = running.toolgate.as_ref().and_then(|t| proc_stats::peak_rss_kib(t.pid()));
    if let Some(session) = running.endpoints.take_session() {
        session.close().await;
    }
    if let Some(toolgate) = running.toolgate.take() {
        toolgate.stop().await;
    }
    let rows = result?;
    let expected: usize = rows
        .iter()
        .map(|row| (row.summary.calls + row.warmup_requests) * row.cell.model_calls())
        .sum();
    if model_requests != expected {
        bail!("the model got {model_requests} requests, not the {expected} the cells make");
    }
    let report = Report::new(
        machine,
        Settings {
            requests: plan.requests,
            rounds: plan.rounds,
            warmup: plan.warmup,
            concurrency: plan.concurrency.clone(),
            seed: plan.seed,
            pipeline: plan.pipeline.name(),
            model_dialect: "openai-responses",
            toolgate: running.command.as_deref().map(portable),
            fixture: portable(&plan.binaries.fixture.display().to_string()),
            model_requests,
            toolgate_peak_rss_kib: peak_rss_kib,
        },
        rows,
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

/// Starts the fake model, toolgate in front of it, and `direct+mcp`'s fixture session.
async fn start(plan: &Plan, scratch: &std::path::Path) -> anyhow::Result<Running> {
    let fake = FakeLlm::start(cells::script()).await.context("the fake model does not start")?;
    let fake_url = format!("{}/responses", fake.base_url());
    let (toolgate, command, toolgate_url) = if plan.needs_toolgate() {
        let config = write_config(scratch, plan, &fake.base_url())?;
        let mut command = Command::new(&plan.binaries.toolgate);
        command.args(["serve", "--listen", "127.0.0.1:0", "--log", SERVE_LOG, "--config"]);
        command
            .arg(&config)
            .env(KEY_VAR, "not-a-key")
            .env_remove("TOOLGATE_CONFIG")
            .env_remove("RUST_LOG");
        let marker = Ready::StderrMarker("serving the OpenAI-compatible API at ");
        let (server, url) = Server::start("toolgate", command, marker, None).await?;
        let described = format!(
            "{} serve --listen 127.0.0.1:0 --config {}",
            plan.binaries.toolgate.display(),
            config.display()
        );
        (Some(server), Some(described), url)
    } else {
        (None, None, String::new())
    };
    let endpoints = Endpoints::new(fake_url, toolgate_url)?;
    let endpoints = if plan.cells.contains(&CellKind::DirectMcp) {
        let mut command = Command::new(&plan.binaries.fixture);
        command.env_remove("RUST_LOG");
        let opened = match Session::stdio("fixture", command, Era::Handshake, None).await {
            Ok(session) => endpoints.with_mcp(session).await,
            Err(error) => Err(error),
        };
        match opened {
            Ok(endpoints) => endpoints,
            Err(error) => {
                if let Some(toolgate) = toolgate {
                    toolgate.stop().await;
                }
                return Err(error.context("direct+mcp: cannot open the fixture's session"));
            }
        }
    } else {
        endpoints
    };
    Ok(Running { endpoints, toolgate, command, fake })
}

/// toolgate's `toolgate.toml` in `dir`: the fixture as `fx` on stdio, the pipeline, the
/// endpoint, the fake as the model, the store beside it.
fn write_config(dir: &std::path::Path, plan: &Plan, model_url: &str) -> anyhow::Result<PathBuf> {
    let quoted = |text: &str| toml::Value::String(text.to_owned()).to_string();
    let text = format!(
        "[servers.{server}]\ncommand = {fixture}\nrequired = true\n\n{pipeline}\n\
         [gateway]\nllm_api = true\n\n\
         [agent]\nprovider = \"openai-responses\"\nbase_url = {model_url}\nmodel = {model}\n\
         api_key_env = \"{KEY_VAR}\"\n\n\
         [llm]\nstore = \"sqlite:responses.db\"\n",
        server = cells::SERVER,
        fixture = quoted(&plan.binaries.fixture.to_string_lossy()),
        pipeline = plan.pipeline.fragment(),
        model_url = quoted(model_url),
        model = quoted(cells::MODEL),
    );
    let path = dir.join("toolgate.toml");
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// One cell: a kind of request and a number of concurrent callers.
#[derive(Debug, Clone, Copy)]
struct Cell {
    kind: CellKind,
    concurrency: usize,
}

/// Runs every round; returns one row per cell.
async fn rounds(plan: &Plan, running: &Running) -> anyhow::Result<Vec<Row>> {
    let mut cells = Vec::new();
    for &kind in &plan.cells {
        for &concurrency in &plan.concurrency {
            cells.push(Cell { kind, concurrency });
        }
    }
    let mut totals: Vec<Samples> = cells.iter().map(|_| Samples::default()).collect();
    let mut order: Vec<usize> = (0..cells.len()).collect();
    let mut shuffler = Shuffler::new(plan.seed);
    for round in 0..plan.rounds {
        let requests = plan.requests_in_round(round);
        let started = Instant::now();
        shuffler.shuffle(&mut order);
        for &index in &order {
            let cell = cells[index];
            let measured = run_cell(running, cell, requests, plan.warmup)
                .await
                .with_context(|| format!("{}, {} callers", cell.kind.name(), cell.concurrency))?;
            totals[index].add(
                measured.durations,
                measured.wall,
                measured.client_cpu,
                measured.server_cpu,
                measured.gateway_cpu,
            );
        }
        eprintln!(
            "round {}/{}: {} cells × {requests} requests in {:.1}s",
            round + 1,
            plan.rounds,
            cells.len(),
            started.elapsed().as_secs_f64()
        );
    }
    let mut rows = Vec::new();
    for (cell, samples) in cells.iter().zip(totals) {
        rows.push(Row {
            cell: cell.kind,
            concurrency: cell.concurrency,
            warmup_requests: plan.warmup * cell.concurrency * plan.rounds,
            model_calls_per_request: cell.kind.model_calls(),
            mcp_calls_per_request: cell.kind.mcp_calls(),
            summary: samples.summary().context("every cell made requests")?,
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
    gateway_cpu: Option<Duration>,
}

/// One cell in one round: warm-up, then `requests` requests from `concurrency` callers at
/// once.
async fn run_cell(
    running: &Running,
    cell: Cell,
    requests: usize,
    warmup: usize,
) -> anyhow::Result<CellRun> {
    let endpoints = &running.endpoints;
    futures::future::try_join_all((0..cell.concurrency).map(|_| async {
        for _ in 0..warmup {
            endpoints.request(cell.kind).await.context("warm-up request")?;
        }
        anyhow::Ok(())
    }))
    .await?;

    // The processes serving the cell besides this one (which runs the fake model): toolgate
    // and the fixture it started, or the application's own fixture.
    let (servers, gateway) = match (cell.kind, &running.toolgate) {
        (kind, Some(toolgate)) if kind.via_toolgate() => {
            (proc_stats::tree(toolgate.pid()), Some(toolgate.pid()))
        }
        (CellKind::DirectMcp, _) => (endpoints.fixture_pid().into_iter().collect(), None),
        _ => (Vec::new(), None),
    };
    let server_cpu = || servers.iter().filter_map(|&pid| proc_stats::cpu_time(pid)).sum();
    let gateway_cpu = || gateway.and_then(proc_stats::cpu_time);
    let (client_before, server_before, gateway_before): (Duration, Duration, _) =
        (proc_stats::own_cpu_time(), server_cpu(), gateway_cpu());
    let started = Instant::now();
    let next = AtomicUsize::new(0);
    let per_caller = futures::future::try_join_all((0..cell.concurrency).map(|_| async {
        let mut durations = Vec::new();
        while next.fetch_add(1, Ordering::Relaxed) < requests {
            let sent = Instant::now();
            endpoints.request(cell.kind).await?;
            durations.push(sent.elapsed());
        }
        anyhow::Ok(durations)
    }))
    .await?;
    let wall = started.elapsed();
    let client_cpu = proc_stats::own_cpu_time().saturating_sub(client_before);
    // toolgate's own time is read after the servers' before and before theirs after, so that
    // it never comes out above the total it is part of.
    let gateway_cpu = match (gateway_before, gateway_cpu()) {
        (Some(before), Some(after)) => Some(after.saturating_sub(before)),
        _ => None,
    };
    let server_cpu = server_cpu().saturating_sub(server_before);
    Ok(CellRun {
        durations: per_caller.into_iter().flatten().collect(),
        wall,
        client_cpu,
        server_cpu,
        gateway_cpu,
    })
}
