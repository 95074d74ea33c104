//! `toolgate-bench replicas`: toolgate as several replicas behind a load balancer.
//!
//! Each deployment is some `toolgate serve` (the binary next to this one: release under
//! bench/run) with one config (the fixture over stdio as `fx`, a `limits` rate on it that
//! never refuses, `[state] shared_key` so that any replica serves any session), behind Debian's
//! HAProxy, round robin with no stickiness (scripts/install-test-deps installs it):
//!
//! - `direct`: one replica, the clients connect to it (the baseline);
//! - `lb-1`, `lb-2`, `lb-4`: HAProxy in front of 1, 2 and 4 replicas;
//! - `lb-2-redis`: 2 replicas sharing `[state] backend` on a Redis of their own (Debian's
//!   redis-server): what the shared state costs per call (the rate limit's counter).
//!
//! Each call is the fixture's `echo {"text": "hello"}` in a 2025-11-25 session (one per
//! caller, kept alive; through the balancer its requests go to every replica in turn, which
//! open it from its sealed id). As in `observability`, the run is split in rounds, each running
//! every cell (deployment × concurrent callers) in a freshly shuffled order after a warm-up.
//! Reported per cell: latency, calls per second, and the CPU time per call of every toolgate
//! process (with the fixtures each started) and of HAProxy and Redis, read from /proc.

mod report;

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
use crate::portable::portable;
use crate::proc_stats;
use report::{Report, Row, Settings};

/// The fixture's label, and so the prefix of its tools' names.
const SERVER: &str = "fx";
/// toolgate's log: warnings, and the line that says where it serves.
const SERVE_LOG: &str = "warn,toolgate::commands::serve=info";
/// The replicas' shared key (any 32 bytes; the bench's own).
const SHARED_KEY: &str = "toolgate-bench-replicas-shared-key-0123456789";

/// Options of `replicas`.
#[derive(Debug, clap::Args)]
pub(crate) struct ReplicasArgs {
    /// Measured calls per cell (deployment × concurrency), over all rounds [default: 4000]
    #[arg(long, value_name = "N")]
    calls: Option<usize>,
    /// Rounds: each runs every cell for its share of the calls, cells shuffled [default: 5]
    #[arg(long, value_name = "R")]
    rounds: Option<usize>,
    /// Unmeasured calls per session before each cell's measured ones, in every round
    /// [default: 20]
    #[arg(long, value_name = "W")]
    warmup: Option<usize>,
    /// Numbers of concurrent sessions, comma-separated [default: 1,16]
    #[arg(long, value_name = "C,...", value_delimiter = ',')]
    concurrency: Vec<usize>,
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

/// A deployment: how many replicas, behind a balancer or not, sharing state or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Deployment {
    pub(crate) name: &'static str,
    pub(crate) replicas: usize,
    pub(crate) balanced: bool,
    pub(crate) redis: bool,
}

pub(crate) const DEPLOYMENTS: [Deployment; 5] = [
    Deployment { name: "direct", replicas: 1, balanced: false, redis: false },
    Deployment { name: "lb-1", replicas: 1, balanced: true, redis: false },
    Deployment { name: "lb-2", replicas: 2, balanced: true, redis: false },
    Deployment { name: "lb-4", replicas: 4, balanced: true, redis: false },
    Deployment { name: "lb-2-redis", replicas: 2, balanced: true, redis: true },
];

/// What to run, with every default resolved.
#[derive(Debug)]
struct Plan {
    calls: usize,
    rounds: usize,
    warmup: usize,
    concurrency: Vec<usize>,
    json: Option<PathBuf>,
    seed: u64,
    binaries: Binaries,
}

impl Plan {
    fn new(args: ReplicasArgs) -> anyhow::Result<Plan> {
        let quick = args.quick;
        let calls = args.calls.unwrap_or(if quick { 20 } else { 4000 });
        let rounds = args.rounds.unwrap_or(if quick { 1 } else { 5 });
        if calls == 0 || rounds == 0 || rounds > calls {
            bail!("--calls and --rounds must be at least 1, and --rounds at most --calls");
        }
        let mut concurrency = args.concurrency;
        if concurrency.is_empty() {
            concurrency = vec![1, 16];
        }
        if concurrency.contains(&0) {
            bail!("--concurrency takes numbers of sessions of at least 1");
        }
        concurrency.sort_unstable();
        concurrency.dedup();
        Ok(Plan {
            calls,
            rounds,
            warmup: args.warmup.unwrap_or(if quick { 2 } else { 20 }),
            concurrency,
            json: args.json,
            seed: Shuffler::seed_or_clock(args.seed),
            binaries: args.binaries.resolve()?,
        })
    }

    fn calls_in_round(&self, round: usize) -> usize {
        self.calls / self.rounds + usize::from(round < self.calls % self.rounds)
    }

    fn sessions(&self) -> usize {
        self.concurrency.iter().copied().max().unwrap_or(1)
    }
}

pub(crate) async fn run(args: ReplicasArgs) -> anyhow::Result<()> {
    let plan = Plan::new(args)?;
    tokio::select! {
        result = measure(plan) => result,
        () = crate::interrupted() => bail!("interrupted: the servers it started were killed"),
    }
}

/// One deployment's processes and sessions.
struct Running {
    deployment: Deployment,
    replicas: Vec<Server>,
    balancer: Option<Server>,
    redis: Option<toolgate_testkit::redis::RedisServer>,
    sessions: Vec<Session>,
    /// Calls made to it, warm-ups included.
    calls: AtomicUsize,
}

impl Running {
    /// Every process whose CPU counts for it: each replica and what it started, HAProxy,
    /// Redis.
    fn pids(&self) -> Vec<u32> {
        let mut pids: Vec<u32> =
            self.replicas.iter().flat_map(|server| proc_stats::tree(server.pid())).collect();
        pids.extend(self.balancer.as_ref().map(Server::pid));
        pids.extend(self.redis.as_ref().and_then(|redis| redis.pid()));
        pids
    }

    async fn stop(self) {
        futures::future::join_all(self.sessions.into_iter().map(Session::close)).await;
        // The balancer first, so that it does not see its replicas go.
        for server in self.balancer.into_iter().chain(self.replicas) {
            server.quiet();
            server.stop().await;
        }
        if let Some(mut redis) = self.redis {
            redis.stop().await;
        }
    }
}

async fn measure(plan: Plan) -> anyhow::Result<()> {
    let machine = Machine::describe();
    eprintln!("machine: {machine}");
    let scratch = tempfile::tempdir().context("cannot create a scratch folder")?;
    let mut running = Vec::new();
    for deployment in DEPLOYMENTS {
        match start(&plan, deployment, scratch.path()).await {
            Ok(started) => running.push(started),
            Err(error) => {
                for started in running {
                    started.stop().await;
                }
                return Err(error);
            }
        }
    }
    let result = rounds(&plan, &running).await;
    let peak_rss_kib: Vec<(&'static str, u64)> = running
        .iter()
        .map(|r| {
            let rss = r.replicas.iter().filter_map(|s| proc_stats::peak_rss_kib(s.pid())).sum();
            (r.deployment.name, rss)
        })
        .collect();
    for started in running {
        started.stop().await;
    }
    let rows = result?;
    let report = Report::new(
        machine,
        Settings {
            calls: plan.calls,
            rounds: plan.rounds,
            warmup: plan.warmup,
            concurrency: plan.concurrency.clone(),
            seed: plan.seed,
            toolgate: portable(&plan.binaries.toolgate.display().to_string()),
            fixture: portable(&plan.binaries.fixture.display().to_string()),
            peak_rss_kib,
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

/// Starts a deployment: its Redis, its replicas, its balancer, and its sessions.
async fn start(plan: &Plan, deployment: Deployment, scratch: &Path) -> anyhow::Result<Running> {
    let redis = match deployment.redis {
        true => Some(toolgate_testkit::redis::RedisServer::start().await),
        false => None,
    };
    let dir = scratch.join(deployment.name);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let config = write_config(&dir, plan, redis.as_ref().map(|r| r.url()))?;
    let mut replicas = Vec::new();
    let mut urls = Vec::new();
    for n in 0..deployment.replicas {
        let mut command = Command::new(&plan.binaries.toolgate);
        command.args(["serve", "--listen", "127.0.0.1:0", "--log", SERVE_LOG, "--config"]);
        command.arg(&config).env_remove("TOOLGATE_CONFIG").env_remove("RUST_LOG");
        let label = format!("toolgate-{}-{n}", deployment.name);
        let (server, url) =
            Server::start(&label, command, Ready::StderrMarker("serving MCP at "), None).await?;
        replicas.push(server);
        urls.push(url);
    }
    let (balancer, url) = if deployment.balanced {
        let (balancer, url) = start_balancer(&urls, &dir).await?;
        (Some(balancer), url)
    } else {
        (None, urls[0].clone())
    };
    let opened = futures::future::try_join_all(
        (0..plan.sessions()).map(|_| Session::http(&url, true, Era::Handshake)),
    )
    .await
    .with_context(|| format!("{}: cannot open its sessions", deployment.name))?;
    Ok(Running {
        deployment,
        replicas,
        balancer,
        redis,
        sessions: opened,
        calls: AtomicUsize::new(0),
    })
}

/// HAProxy in front of `urls` (each `http://127.0.0.1:PORT/mcp`), with the test kit's config
/// less its per-request log: its URL.
async fn start_balancer(urls: &[String], dir: &Path) -> anyhow::Result<(Server, String)> {
    let backends = urls
        .iter()
        .map(|url| {
            let address = url.trim_start_matches("http://").trim_end_matches("/mcp");
            address.parse().with_context(|| format!("a replica's address in {url}"))
        })
        .collect::<anyhow::Result<Vec<std::net::SocketAddr>>>()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|probe| probe.local_addr())
        .context("a free port for HAProxy")?
        .port();
    let config = toolgate_testkit::haproxy::config(port, &backends)
        .replace("    log stdout format raw local0 info\n", "");
    let path = dir.join("haproxy.cfg");
    std::fs::write(&path, config).with_context(|| format!("cannot write {}", path.display()))?;
    let mut command = Command::new(toolgate_testkit::deps::haproxy());
    command.args(["-W", "-db", "-f"]).arg(&path);
    let url = format!("http://127.0.0.1:{port}/mcp");
    let ready = Ready::Accepting { port, url: url.clone() };
    let (server, _) = Server::start("haproxy", command, ready, None).await?;
    Ok((server, url))
}

/// The deployment's `toolgate.toml` in `dir`.
fn write_config(dir: &Path, plan: &Plan, redis: Option<String>) -> anyhow::Result<PathBuf> {
    let quoted = |text: &str| toml::Value::String(text.to_owned()).to_string();
    let backend = redis.map(|url| format!("backend = {}\n", quoted(&url))).unwrap_or_default();
    let text = format!(
        "[servers.{SERVER}]\ncommand = {fixture}\nrequired = true\n\n\
         [[pipeline]]\nkind = \"limits\"\nserver.{SERVER} = {{ rate = \"1000000/s\" }}\n\n\
         [state]\n{backend}shared_key = {key}\n",
        fixture = quoted(&plan.binaries.fixture.to_string_lossy()),
        key = quoted(SHARED_KEY),
    );
    let path = dir.join("toolgate.toml");
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// Runs every round; one row per cell.
async fn rounds(plan: &Plan, running: &[Running]) -> anyhow::Result<Vec<Row>> {
    let cells: Vec<(usize, usize)> =
        (0..running.len()).flat_map(|d| plan.concurrency.iter().map(move |&c| (d, c))).collect();
    let call = Call::new(&format!("{SERVER}__echo"), Payload::Small);
    let mut totals: Vec<Samples> = cells.iter().map(|_| Samples::default()).collect();
    let mut order: Vec<usize> = (0..cells.len()).collect();
    let mut shuffler = Shuffler::new(plan.seed);
    for round in 0..plan.rounds {
        let calls = plan.calls_in_round(round);
        let started = Instant::now();
        shuffler.shuffle(&mut order);
        for &index in &order {
            let (deployment, concurrency) = cells[index];
            let target = &running[deployment];
            let (durations, wall, cpu) = run_cell(target, concurrency, &call, calls, plan.warmup)
                .await
                .with_context(|| format!("{}, {concurrency} sessions", target.deployment.name))?;
            totals[index].add(durations, wall, Duration::ZERO, cpu, None);
        }
        eprintln!(
            "round {}/{}: {} cells × {calls} calls in {:.1}s",
            round + 1,
            plan.rounds,
            cells.len(),
            started.elapsed().as_secs_f64()
        );
    }
    cells
        .iter()
        .zip(totals)
        .map(|(&(deployment, concurrency), samples)| {
            Ok(Row {
                deployment: running[deployment].deployment,
                concurrency,
                summary: samples.summary().context("every cell made calls")?,
            })
        })
        .collect()
}

/// One cell in one round: warm-up, then `calls` calls from `concurrency` sessions at once;
/// their durations, the wall time, and the CPU time of the deployment's processes.
async fn run_cell(
    target: &Running,
    concurrency: usize,
    call: &Call,
    calls: usize,
    warmup: usize,
) -> anyhow::Result<(Vec<Duration>, Duration, Duration)> {
    let sessions = &target.sessions[..concurrency];
    futures::future::try_join_all(sessions.iter().map(|session| async move {
        for _ in 0..warmup {
            session.call(call).await.context("warm-up call")?;
        }
        anyhow::Ok(())
    }))
    .await?;
    target.calls.fetch_add(warmup * concurrency, Ordering::Relaxed);
    let pids = target.pids();
    let cpu = || -> Duration { pids.iter().filter_map(|&pid| proc_stats::cpu_time(pid)).sum() };
    let before = cpu();
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
    let cpu = cpu().saturating_sub(before);
    let durations: Vec<Duration> = per_session.into_iter().flatten().collect();
    target.calls.fetch_add(durations.len(), Ordering::Relaxed);
    Ok((durations, wall, cpu))
}
