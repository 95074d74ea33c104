//! `toolgate-bench latency`: the end-to-end load generator.
//!
//! One cell is a path (how the client reaches the fixture's tools: directly, through toolgate
//! with a pipeline and a pair of transports, or through a peer gateway), a payload and a
//! number of concurrent sessions. Every path's processes are started once, on 127.0.0.1, and
//! kept up for the whole run; each opens as many sessions (its own MCP client connection
//! each) as the highest concurrency measured. The run is split in rounds, and each round runs
//! every cell for its share of the calls in a freshly shuffled order, so that drift of the
//! machine hits every path alike. Per-call durations are pooled over the rounds.
//!
//! In a cell, each of the C sessions first makes its warm-up calls; then all C call
//! sequentially, at once, until the cell's calls for the round are made. Only that measured
//! part counts toward the durations, wall time, and client and server CPU time.
//!
//! toolgate's pipelines are `bench/pipelines/{bare,default,full}.toml`, built into the binary
//! (`--pipelines DIR` reads other files). The peers run from `bench/.peers`, where bench/setup
//! installs them; a missing one is left out with a note. Each server process gets a process
//! group of its own and is ended with it: after the run, after an error, and on Ctrl-C.
//!
//! The client is rmcp's, as toolgate uses it. Its default HTTP client opens a connection per
//! request (rmcp does so to dodge delayed-ACK stalls on reused connections); `--keep-alive`
//! measures reused connections instead.
//!
//! Besides the CPU of everything serving a path (`srv µs`), each gateway path reports the CPU
//! of the gateway's own process without its descendants (`gw µs`: toolgate or the peer, not
//! the upstream fixture it started), read at the same moments. `--pin` runs the load
//! generator on one CPU and everything it starts on the others ([`pin`]).

pub(crate) mod machine;
mod pin;
pub(crate) mod process;
mod report;
pub(crate) mod session;
pub(crate) mod stats;
pub(crate) mod target;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use anyhow::{Context as _, bail};

use crate::binaries::{Binaries, BinaryArgs};
use crate::latency::machine::Machine;
use crate::latency::pin::Pinning;
use crate::latency::report::{PathRecord, PeerRecord, PinRecord, Report, Row, Settings};
use crate::latency::session::{Call, Era, Payload};
use crate::latency::stats::{Samples, Shuffler};
use crate::latency::target::{PathSpec, Setup, Target, Via};
use crate::portable::portable;
use crate::proc_stats;

/// How many paths start at the same time.
const PARALLEL_STARTS: usize = 4;

/// Options of `latency`.
#[derive(Debug, clap::Args)]
pub(crate) struct LatencyArgs {
    /// Measured calls per cell (path × payload × concurrency), over all rounds [default: 2000]
    #[arg(long, value_name = "N")]
    calls: Option<usize>,
    /// Rounds: each runs every cell for its share of the calls, cells shuffled [default: 4]
    #[arg(long, value_name = "R")]
    rounds: Option<usize>,
    /// Unmeasured calls per session before each cell's measured calls, in every round
    #[arg(long, value_name = "W", default_value_t = 5)]
    warmup: usize,
    /// Numbers of concurrent sessions, comma-separated [default: 1,8,32]
    #[arg(long, value_name = "C,...", value_delimiter = ',')]
    concurrency: Vec<usize>,
    /// Payloads, comma-separated: small (echo "hello"), 100k (a 100 KiB result)
    /// [default: small,100k]
    #[arg(long, value_name = "P,...", value_delimiter = ',', value_enum)]
    payload: Vec<Payload>,
    /// Only the paths whose name contains this text or matches this glob (`*`, `?`);
    /// comma-separated or repeated. Names: direct-stdio, direct-http,
    /// toolgate-<front>-<upstream>-<bare|default|full> (front and upstream: stdio or http),
    /// mcp-proxy-rs-http-stdio, mcp-proxy-py-http-stdio, supergateway-http-stdio
    #[arg(long, value_name = "PATTERN", value_delimiter = ',')]
    only: Vec<String>,
    /// Leave out the peer gateways
    #[arg(long)]
    skip_peers: bool,
    /// A smoke run for CI: 20 calls, 1 round, 1 and 8 sessions, small payload, no peers
    /// (--calls, --rounds, --concurrency and --payload still win)
    #[arg(long)]
    quick: bool,
    /// Also write the results as JSON to FILE
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    #[command(flatten)]
    binaries: BinaryArgs,
    /// Where bench/setup installed the peers [default: bench/.peers of this workspace]
    #[arg(long, value_name = "DIR")]
    peers: Option<PathBuf>,
    /// Seed of the order of cells in each round [default: from the clock]
    #[arg(long)]
    seed: Option<u64>,
    /// Keep each HTTP session's connection open between calls, as most clients do (by
    /// default the sessions use rmcp's HTTP client, which opens a connection per request)
    #[arg(long)]
    keep_alive: bool,
    /// The protocol era of the load generator's sessions (the protocol each path negotiated is
    /// printed)
    #[arg(long, value_enum, default_value_t)]
    era: Era,
    /// Read the pipelines (bare.toml, default.toml, full.toml: what follows `[servers.fx]` in
    /// toolgate's config) from DIR [default: built-in copies of bench/pipelines]
    #[arg(long, value_name = "DIR")]
    pipelines: Option<PathBuf>,
    /// Run the load generator on the first CPU this process may use and everything it starts
    /// (gateways, upstreams, peers) on the others, and report throughput at 32 sessions ÷
    /// direct against the target (at least 0.8); with fewer than 2 CPUs nothing is measured
    /// and the report says why
    #[arg(long)]
    pin: bool,
    /// Whether toolgate keeps its connections to HTTP upstreams alive (`pool`, its default);
    /// `false` writes `pool = false` in its configs (a connection per request)
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    upstream_pool: bool,
}

/// What to run, with every default resolved.
#[derive(Debug)]
struct Plan {
    calls: usize,
    rounds: usize,
    warmup: usize,
    concurrency: Vec<usize>,
    payloads: Vec<Payload>,
    paths: Vec<PathSpec>,
    binaries: Binaries,
    peers: PathBuf,
    json: Option<PathBuf>,
    seed: u64,
    keep_alive: bool,
    era: Era,
    pipelines: Option<PathBuf>,
    /// With `--pin`: the CPUs of each side, or why there is nothing to split.
    pin: Option<Result<Pinning, String>>,
    upstream_pool: bool,
    notes: Vec<String>,
}

impl Plan {
    fn new(args: LatencyArgs) -> anyhow::Result<Plan> {
        let quick = args.quick;
        let calls = args.calls.unwrap_or(if quick { 20 } else { 2000 });
        let rounds = args.rounds.unwrap_or(if quick { 1 } else { 4 });
        let mut concurrency = args.concurrency;
        if concurrency.is_empty() {
            concurrency = if quick { vec![1, 8] } else { vec![1, 8, 32] };
        }
        concurrency.sort_unstable();
        concurrency.dedup();
        let mut payloads = args.payload;
        if payloads.is_empty() {
            payloads =
                if quick { vec![Payload::Small] } else { vec![Payload::Small, Payload::Large100k] };
        }
        payloads.sort_unstable();
        payloads.dedup();
        if calls == 0 || rounds == 0 {
            bail!("--calls and --rounds must be at least 1");
        }
        if rounds > calls {
            bail!("--rounds {rounds} is more than --calls {calls}: every round needs a call");
        }
        if concurrency.contains(&0) {
            bail!("--concurrency takes numbers of sessions of at least 1");
        }
        let binaries = args.binaries.resolve()?;
        let peers = args.peers.unwrap_or_else(default_peers);
        let mut notes = Vec::new();
        let all = PathSpec::all();
        let mut paths: Vec<PathSpec> =
            all.into_iter().filter(|spec| selected(&spec.name(), &args.only)).collect();
        if args.skip_peers || quick {
            if paths.iter().any(|spec| matches!(spec.via, Via::Peer(_))) {
                notes.push("peers left out (--skip-peers or --quick)".to_owned());
            }
            paths.retain(|spec| !matches!(spec.via, Via::Peer(_)));
        }
        paths.retain(|spec| match spec.via {
            Via::Peer(peer) => match peer.find(&peers) {
                Ok(_) => true,
                Err(why) => {
                    notes.push(format!("{} skipped: {why}", spec.name()));
                    false
                }
            },
            _ => true,
        });
        if paths.iter().any(|spec| spec.via == Via::Peer(target::Peer::Supergateway)) {
            notes.push(
                "supergateway has no host option and listens on every interface, not only \
                 127.0.0.1 (a known issue of that peer; harmless on a bench machine)"
                    .to_owned(),
            );
        }
        if let Some(dir) = &args.pipelines {
            notes.push(format!(
                "pipelines read from {}, not bench/pipelines",
                portable(&dir.display().to_string())
            ));
        }
        if paths.is_empty() {
            bail!("no path left to measure (--only {:?})", args.only.join(","));
        }
        if !args.upstream_pool {
            notes.push(
                "toolgate's HTTP upstreams with pool = false: a connection per request \
                 (--upstream-pool false)"
                    .to_owned(),
            );
        }
        let seed = Shuffler::seed_or_clock(args.seed);
        Ok(Plan {
            calls,
            rounds,
            warmup: args.warmup,
            concurrency,
            payloads,
            paths,
            binaries,
            peers,
            json: args.json,
            seed,
            keep_alive: args.keep_alive,
            era: args.era,
            pipelines: args.pipelines,
            pin: args.pin.then(Pinning::plan),
            upstream_pool: args.upstream_pool,
            notes,
        })
    }

    /// The calls of each cell in round `round` (the first rounds take the remainder).
    fn calls_in_round(&self, round: usize) -> usize {
        self.calls / self.rounds + usize::from(round < self.calls % self.rounds)
    }
}

/// `bench/.peers` of the workspace this binary was built from.
fn default_peers() -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    workspace.canonicalize().unwrap_or(workspace).join("bench/.peers")
}

/// Whether `name` is selected by `--only` (no pattern: every path).
fn selected(name: &str, patterns: &[String]) -> bool {
    patterns.is_empty()
        || patterns.iter().any(|pattern| {
            if pattern.contains(['*', '?']) {
                glob_match(pattern.as_bytes(), name.as_bytes())
            } else {
                name.contains(pattern.as_str())
            }
        })
}

/// `*` (any run of characters) and `?` (one character), over the whole name.
fn glob_match(pattern: &[u8], name: &[u8]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len()).any(|skip| glob_match(rest, &name[skip..])),
        Some((&c, rest)) => name
            .split_first()
            .is_some_and(|(&n, tail)| (c == b'?' || c == n) && glob_match(rest, tail)),
    }
}

pub(crate) async fn run(args: LatencyArgs) -> anyhow::Result<()> {
    let plan = Plan::new(args)?;
    // On Ctrl-C or SIGTERM the measurement is dropped, and with it every process group it
    // started (each is killed when its guard drops).
    tokio::select! {
        result = measure(plan) => result,
        () = crate::interrupted() => bail!("interrupted: the servers it started were killed"),
    }
}

/// Starts everything, runs the rounds, stops everything (also after an error), reports.
async fn measure(plan: Plan) -> anyhow::Result<()> {
    let machine = Machine::describe();
    let pin = match &plan.pin {
        None => None,
        Some(Err(why)) => return skip_pinned(&plan, machine, why),
        Some(Ok(pinning)) => {
            pinning.pin_this_process()?;
            eprintln!(
                "pinned: load generator on {}, everything it starts on {}",
                Pinning::describe(&pinning.client),
                Pinning::describe(&pinning.servers)
            );
            Some(pinning.clone())
        }
    };
    let scratch = tempfile::Builder::new()
        .prefix("toolgate-bench-")
        .tempdir()
        .context("cannot create a temporary folder")?;
    eprintln!("machine: {machine}");
    for note in &plan.notes {
        eprintln!("note: {note}");
    }
    let needs_http_fixture = plan.paths.iter().any(|spec| spec.upstream == target::Transport::Http);
    let (fixture, shared) = if needs_http_fixture {
        let (server, shared) =
            target::start_http_fixture(&plan.binaries.fixture, pin.as_ref()).await?;
        (Some(server), Some(shared))
    } else {
        (None, None)
    };
    let setup = Setup {
        toolgate: plan.binaries.toolgate.clone(),
        fixture: plan.binaries.fixture.clone(),
        peers: plan.peers.clone(),
        scratch: scratch.path().to_owned(),
        http_fixture: shared,
        sessions: plan.concurrency.iter().copied().max().unwrap_or(1),
        keep_alive: plan.keep_alive,
        era: plan.era,
        pipelines: plan.pipelines.clone(),
        pin,
        upstream_pool: plan.upstream_pool,
    };
    let started = Instant::now();
    let (targets, failure) = start_targets(&plan, &setup).await;
    let mut pinned = None;
    let result = match failure {
        Some(error) => Err(error),
        None => {
            eprintln!(
                "{} paths up, {} sessions each, in {:.1}s",
                targets.len(),
                setup.sessions,
                started.elapsed().as_secs_f64()
            );
            if let Some(pinning) = &setup.pin {
                let record = PinRecord::read_back(
                    pinning,
                    &targets,
                    setup.http_fixture.as_ref().map(|fixture| fixture.pid),
                );
                eprintln!("{}", record.describe());
                pinned = Some(record);
            }
            rounds(&plan, &targets).await
        }
    };
    let records = result.map(|samples| (records(&targets), samples));
    if let Some(fixture) = &fixture {
        fixture.quiet();
    }
    futures::future::join_all(targets.into_iter().map(Target::stop)).await;
    if let Some(fixture) = fixture {
        fixture.stop().await;
    }
    let (paths, samples) = records?;
    let report = build_report(&plan, machine, paths, samples, pinned);
    print!("{}", report.table());
    write_json(plan.json.as_deref(), &report)
}

/// `--pin` on a machine with one CPU: nothing to measure; the report says why.
fn skip_pinned(plan: &Plan, machine: Machine, why: &str) -> anyhow::Result<()> {
    #[derive(serde::Serialize)]
    struct Skipped<'a> {
        machine: Machine,
        pinning: SkippedPinning<'a>,
    }
    #[derive(serde::Serialize)]
    struct SkippedPinning<'a> {
        skipped: &'a str,
    }
    println!("machine: {machine}");
    println!("pinned section skipped: {why}");
    eprintln!("pinned section skipped: {why}");
    write_json(plan.json.as_deref(), &Skipped { machine, pinning: SkippedPinning { skipped: why } })
}

/// Writes `report` as pretty JSON to `path`, when there is one.
fn write_json(path: Option<&Path>, report: &impl serde::Serialize) -> anyhow::Result<()> {
    let Some(path) = path else { return Ok(()) };
    let text = serde_json::to_string_pretty(report).context("cannot serialize the results")?;
    std::fs::write(path, text + "\n")
        .with_context(|| format!("cannot write {}", path.display()))?;
    eprintln!("results written to {}", path.display());
    Ok(())
}

/// Starts every path, a few at a time; returns the ones that started and the first failure.
async fn start_targets(plan: &Plan, setup: &Setup) -> (Vec<Target>, Option<anyhow::Error>) {
    use futures::StreamExt as _;
    let results: Vec<anyhow::Result<Target>> = futures::stream::iter(plan.paths.iter())
        .map(|&spec| Target::start(spec, setup))
        .buffered(PARALLEL_STARTS)
        .collect()
        .await;
    let mut targets = Vec::new();
    let mut failure = None;
    for result in results {
        match result {
            Ok(target) => targets.push(target),
            Err(error) => {
                failure.get_or_insert(error);
            }
        }
    }
    (targets, failure)
}

/// A path's samples, by payload and concurrency.
type PathSamples = Vec<(Payload, usize, Samples)>;

/// Runs every round; returns the samples of each target, in target order.
async fn rounds(plan: &Plan, targets: &[Target]) -> anyhow::Result<Vec<PathSamples>> {
    let mut cells: Vec<(usize, Payload, usize)> = Vec::new();
    for t in 0..targets.len() {
        for &payload in &plan.payloads {
            for &concurrency in &plan.concurrency {
                cells.push((t, payload, concurrency));
            }
        }
    }
    let mut samples: Vec<PathSamples> = targets
        .iter()
        .map(|_| {
            let mut cells = Vec::new();
            for &payload in &plan.payloads {
                for &concurrency in &plan.concurrency {
                    cells.push((payload, concurrency, Samples::default()));
                }
            }
            cells
        })
        .collect();
    let mut shuffler = Shuffler::new(plan.seed);
    for round in 0..plan.rounds {
        let calls = plan.calls_in_round(round);
        let started = Instant::now();
        shuffler.shuffle(&mut cells);
        for &(t, payload, concurrency) in &cells {
            let target = &targets[t];
            let cell = run_cell(target, payload, concurrency, calls, plan.warmup)
                .await
                .with_context(|| {
                    format!("{}, payload {}, {concurrency} sessions", target.name, payload.name())
                })?;
            let slot = samples[t]
                .iter_mut()
                .find(|(p, c, _)| *p == payload && *c == concurrency)
                .context("every cell has a slot")?;
            slot.2.add(cell.calls, cell.wall, cell.client_cpu, cell.server_cpu, cell.gateway_cpu);
        }
        eprintln!(
            "round {}/{}: {} cells × {calls} calls in {:.1}s",
            round + 1,
            plan.rounds,
            cells.len(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(samples)
}

/// What one cell measured in one round.
struct CellRun {
    calls: Vec<Duration>,
    wall: Duration,
    client_cpu: Duration,
    server_cpu: Duration,
    /// The gateway's own processes without their descendants; `None` on direct paths.
    gateway_cpu: Option<Duration>,
}

/// One cell in one round: warm-up, then `calls` calls over `concurrency` sessions at once.
async fn run_cell(
    target: &Target,
    payload: Payload,
    concurrency: usize,
    calls: usize,
    warmup: usize,
) -> anyhow::Result<CellRun> {
    let call = Arc::new(Call::new(target.tool(payload), payload));
    let sessions = &target.sessions[..concurrency.min(target.sessions.len())];
    futures::future::try_join_all(sessions.iter().map(|session| {
        let call = &call;
        async move {
            for _ in 0..warmup {
                session.call(call).await.context("warm-up call")?;
            }
            anyhow::Ok(())
        }
    }))
    .await?;
    // Both the whole path's processes and the gateway's own are read at the same moments,
    // right around the measured calls; the gateway's processes are among `servers` (each
    // front and its descendants), and each one's own CPU excludes its children's.
    let servers = target.server_processes();
    let gateway = target.gateway_processes();
    let server_before = cpu_times(&servers);
    let next = Arc::new(AtomicUsize::new(0));
    let client_before = proc_stats::own_cpu_time();
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for session in sessions {
        let (session, call, next) = (session.clone(), call.clone(), next.clone());
        tasks.spawn(async move {
            let mut durations = Vec::with_capacity(calls / concurrency + 1);
            while next.fetch_add(1, Ordering::Relaxed) < calls {
                durations.push(session.call(&call).await?);
            }
            anyhow::Ok(durations)
        });
    }
    let mut durations = Vec::with_capacity(calls);
    while let Some(joined) = tasks.join_next().await {
        durations.extend(joined.context("a session's task failed")??);
    }
    let wall = start.elapsed();
    let client_cpu = proc_stats::own_cpu_time().saturating_sub(client_before);
    let server_after = cpu_times(&servers);
    let server_cpu = cpu_spent(&servers, &server_before, &server_after, |_| true);
    let gateway_cpu = gateway.map(|gateway| {
        cpu_spent(&servers, &server_before, &server_after, |pid| gateway.contains(&pid))
    });
    Ok(CellRun { calls: durations, wall, client_cpu, server_cpu, gateway_cpu })
}

fn cpu_times(pids: &[u32]) -> Vec<Option<Duration>> {
    pids.iter().map(|&pid| proc_stats::cpu_time(pid)).collect()
}

/// The CPU time the `counted` ones of `pids` used between two readings (a process that was
/// gone at either reading counts for nothing).
fn cpu_spent(
    pids: &[u32],
    before: &[Option<Duration>],
    after: &[Option<Duration>],
    counted: impl Fn(u32) -> bool,
) -> Duration {
    pids.iter()
        .zip(before.iter().zip(after))
        .filter(|(pid, _)| counted(**pid))
        .filter_map(|(_, (before, after))| Some(after.as_ref()?.saturating_sub(*before.as_ref()?)))
        .sum()
}

/// What is recorded of each path (peak memory is read before the processes stop).
fn records(targets: &[Target]) -> Vec<PathRecord> {
    targets
        .iter()
        .map(|target| {
            let spec = target.spec;
            let (via, pipeline, peer) = match spec.via {
                Via::Direct => ("direct", None, None),
                Via::Toolgate(pipeline) => ("toolgate", Some(pipeline.name()), None),
                Via::Peer(peer) => {
                    ("peer", None, Some(PeerRecord { name: peer.name(), version: peer.version() }))
                }
            };
            PathRecord {
                name: target.name.clone(),
                via,
                pipeline,
                peer,
                front: spec.front,
                upstream: spec.upstream,
                command: portable(&target.command),
                front_processes: target.front_processes(),
                peak_rss_kib: target.peak_rss_kib(),
                protocol: target.sessions.first().map(|s| s.protocol()).unwrap_or_default(),
            }
        })
        .collect()
}

/// With `--era discover`, which protocol each path ended up speaking.
fn protocols_note(era: Era, paths: &[PathRecord]) -> Option<String> {
    let protocols: Vec<String> =
        paths.iter().map(|path| format!("{} {}", path.name, path.protocol)).collect();
    (era == Era::Discover).then(|| format!("protocol per path: {}", protocols.join(", ")))
}

fn build_report(
    plan: &Plan,
    machine: Machine,
    paths: Vec<PathRecord>,
    samples: Vec<PathSamples>,
    pinning: Option<PinRecord>,
) -> Report {
    let mut results = Vec::new();
    for (spec, cells) in plan.paths.iter().zip(samples) {
        for (payload, concurrency, samples) in cells {
            let Some(summary) = samples.summary() else { continue };
            results.push(Row {
                path: spec.name(),
                payload: payload.name(),
                concurrency,
                summary,
                vs_direct: None,
                vs_peers: Default::default(),
                via: spec.via,
                upstream: spec.upstream,
            });
        }
    }
    report::compare(&mut results);
    let pinning = pinning.map(|record| record.with_throughput(&results, &plan.concurrency));
    Report {
        machine,
        settings: Settings {
            calls: plan.calls,
            rounds: plan.rounds,
            warmup: plan.warmup,
            concurrency: plan.concurrency.clone(),
            payloads: plan.payloads.iter().map(|p| p.name()).collect(),
            seed: plan.seed,
            toolgate: portable(&plan.binaries.toolgate.display().to_string()),
            fixture: portable(&plan.binaries.fixture.display().to_string()),
            client: format!(
                "rmcp 3.9.0 (toolgate's client) in this process, {}, HTTP {}",
                match plan.era {
                    Era::Handshake => "handshake era (initialize, 2025-11-25)",
                    Era::Discover => "server/discover (2026-07-28) where offered (--era discover)",
                },
                if plan.keep_alive {
                    "connections kept alive (--keep-alive)"
                } else {
                    "connection per request (rmcp's default client)"
                }
            ),
        },
        notes: plan.notes.iter().cloned().chain(protocols_note(plan.era, &paths)).collect(),
        paths,
        results,
        pinning,
        legend: report::legend(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_takes_text_or_globs() {
        let only = |patterns: &[&str], name: &str| {
            selected(name, &patterns.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>())
        };
        assert!(only(&[], "direct-stdio"));
        assert!(only(&["direct"], "direct-http"));
        assert!(only(&["toolgate-*-stdio-full"], "toolgate-http-stdio-full"));
        assert!(!only(&["toolgate-*-stdio-full"], "toolgate-http-http-full"));
        assert!(only(&["nothing", "*-bare"], "toolgate-stdio-http-bare"));
        assert!(!only(&["direct-?"], "direct-http"));
    }

    #[test]
    fn rounds_share_the_calls() {
        let plan = |calls, rounds| Plan {
            calls,
            rounds,
            warmup: 0,
            concurrency: vec![1],
            payloads: vec![Payload::Small],
            paths: Vec::new(),
            binaries: Binaries { toolgate: PathBuf::new(), fixture: PathBuf::new() },
            peers: PathBuf::new(),
            json: None,
            seed: 0,
            keep_alive: false,
            era: Era::Handshake,
            pipelines: None,
            pin: None,
            upstream_pool: true,
            notes: Vec::new(),
        };
        let split = |calls, rounds| {
            let plan = plan(calls, rounds);
            (0..rounds).map(|r| plan.calls_in_round(r)).collect::<Vec<_>>()
        };
        assert_eq!(split(2000, 4), [500, 500, 500, 500]);
        assert_eq!(split(10, 4), [3, 3, 2, 2]);
    }

    #[test]
    fn path_names_are_unique() {
        let mut names: Vec<String> = PathSpec::all().iter().map(PathSpec::name).collect();
        let count = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), count);
        assert!(names.contains(&"toolgate-http-stdio-default".to_owned()));
        assert!(names.contains(&"mcp-proxy-rs-http-stdio".to_owned()));
    }
}
