//! `toolgate-bench startup`: time until toolgate is ready with 1, 5 and 10 upstream servers.
//!
//! Each upstream is the testkit fixture on stdio (`toolgate-fixture`) waiting before it
//! reads its handshake, the k-th one (from 0) `base + k × step` ms, so that the table shows
//! whether start-up follows the slowest server or the sum of them. The same cases with no
//! delay show what toolgate's own start costs.
//!
//! Ready means both: toolgate logged `serving MCP at <url>`, and a first `tools/list` over
//! HTTP (a new session) answered with tools of every upstream. Time runs from just before
//! toolgate is spawned. Every case runs `--repeat` times, the cases interleaved so that a
//! drifting machine hits them alike.
//!
//! The submodules are shared with `scale`: [`gateway`] (toolgate as a child process),
//! [`mcp_http`] (a minimal MCP client on plain HTTP) and [`report`] (summaries, tables, JSON).

pub(crate) mod gateway;
pub(crate) mod mcp_http;
pub(crate) mod report;

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::time::Instant;

use anyhow::{Context as _, bail};
use serde::Serialize;

use self::gateway::{Gateway, Upstream};
use self::mcp_http::Session;
use self::report::{Summary, Table, ms};
use crate::binaries::{Binaries, BinaryArgs};
use crate::portable::portable;

/// The target from issue 5: ready at most this long after the slowest server.
const TARGET_OVERHEAD_MS: f64 = 50.0;
/// How long one start may take before the run fails.
const PATIENCE: Duration = Duration::from_secs(120);

/// Options of `startup`.
#[derive(Debug, clap::Args)]
pub(crate) struct StartupArgs {
    /// Numbers of upstream servers: one case each (with delays, and again without).
    #[arg(long, value_delimiter = ',', default_value = "1,5,10", value_name = "N,...")]
    servers: Vec<usize>,
    /// Runs of each case.
    #[arg(long, short = 'r', default_value_t = 5, value_name = "R")]
    repeat: usize,
    /// Start delay of the first upstream, in ms.
    #[arg(long, default_value_t = 100, value_name = "MS")]
    delay_base: u64,
    /// Added for each further upstream: the k-th (from 0) waits base + k × step ms.
    #[arg(long, default_value_t = 20, value_name = "MS")]
    delay_step: u64,
    /// For CI: one run each of the cases with 1 and 5 upstreams.
    #[arg(long)]
    quick: bool,
    /// Also write the results to FILE as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    #[command(flatten)]
    binaries: BinaryArgs,
}

/// One configuration of upstreams to start.
#[derive(Debug)]
struct Case {
    delays: Vec<Duration>,
}

impl Case {
    fn new(upstreams: usize, base: u64, step: u64) -> Case {
        let delays =
            (0..upstreams as u64).map(|k| Duration::from_millis(base + k * step)).collect();
        Case { delays }
    }

    fn slowest(&self) -> Duration {
        self.delays.iter().copied().max().unwrap_or_default()
    }

    fn sum(&self) -> Duration {
        self.delays.iter().sum()
    }

    fn upstreams(&self) -> Vec<Upstream> {
        let names = upstream_names(self.delays.len());
        names
            .into_iter()
            .zip(&self.delays)
            .map(|(name, delay)| Upstream { startup_delay: *delay, ..Upstream::new(name) })
            .collect()
    }

    /// `100`, `100..280 (+20)`, or `0`.
    fn describe_delays(&self) -> String {
        let (Some(first), Some(last)) = (self.delays.first(), self.delays.last()) else {
            return "-".to_owned();
        };
        if first == last {
            return format!("{}", first.as_millis());
        }
        let step = self.delays[1].saturating_sub(*first);
        format!("{}..{} (+{})", first.as_millis(), last.as_millis(), step.as_millis())
    }
}

/// `s00`, `s01`, ...: server names, also the tools' prefixes.
pub(crate) fn upstream_names(count: usize) -> Vec<String> {
    let width = count.saturating_sub(1).to_string().len().max(2);
    (0..count).map(|k| format!("s{k:0width$}")).collect()
}

/// What `--json` writes.
#[derive(Debug, Serialize)]
struct Report {
    benchmark: &'static str,
    toolgate: String,
    repeat: usize,
    delay_base_ms: u64,
    delay_step_ms: u64,
    target_overhead_ms: f64,
    cases: Vec<CaseReport>,
}

#[derive(Debug, Serialize)]
struct CaseReport {
    upstreams: usize,
    delays_ms: Vec<u64>,
    slowest_delay_ms: u64,
    sum_delays_ms: u64,
    /// Spawn to `serving MCP at`.
    serving_ms: Summary,
    /// Spawn to a `tools/list` with every upstream's tools.
    ready_ms: Summary,
    /// `ready` minus the slowest delay.
    overhead_ms: Summary,
    /// Median of `ready` minus `serving`: the first session and `tools/list` over HTTP.
    first_request_ms: f64,
    /// Whether the median overhead is within the target (cases with delays only).
    meets_target: Option<bool>,
    samples: Vec<Sample>,
}

/// One run of a case.
#[derive(Debug, Clone, Serialize)]
struct Sample {
    serving_ms: f64,
    ready_ms: f64,
    /// Of the time between serving and ready: `initialize` + `initialized`.
    session_ms: f64,
    /// Of the time between serving and ready: the first `tools/list`.
    first_list_ms: f64,
    /// `tools/list` requests until every upstream's tools were there (1 unless toolgate said
    /// it serves before it had them all).
    list_attempts: u32,
    tools: usize,
    /// SIGTERM to exit.
    stop_ms: f64,
}

pub(crate) async fn run(args: StartupArgs) -> anyhow::Result<()> {
    tokio::select! {
        result = bench(args) => result,
        // Dropping the bench stops the gateway it runs (SIGTERM).
        () = crate::interrupted() => bail!("interrupted"),
    }
}

async fn bench(args: StartupArgs) -> anyhow::Result<()> {
    let Binaries { toolgate, fixture } = args.binaries.resolve()?;
    let (counts, repeat) =
        if args.quick { (vec![1, 5], 1) } else { (args.servers.clone(), args.repeat) };
    if repeat == 0 || counts.is_empty() || counts.contains(&0) {
        bail!("need at least one run (--repeat) and one case (--servers), each with a server");
    }
    let delayed = counts.iter().map(|&n| Case::new(n, args.delay_base, args.delay_step));
    let undelayed = counts.iter().map(|&n| Case::new(n, 0, 0));
    let cases: Vec<Case> = delayed.chain(undelayed).collect();

    let dir = tempfile::tempdir().context("cannot make a temporary folder")?;
    let mut configs = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let case_dir = dir.path().join(format!("case{i}"));
        std::fs::create_dir(&case_dir).context("cannot make a temporary folder")?;
        configs.push(gateway::write_config(&case_dir, &fixture, &case.upstreams())?);
    }
    let http = mcp_http::http_client()?;
    let mut samples: Vec<Vec<Sample>> = cases.iter().map(|_| Vec::new()).collect();
    for round in 1..=repeat {
        for (i, case) in cases.iter().enumerate() {
            let what =
                format!("{} upstreams, delays {} ms", case.delays.len(), case.describe_delays());
            let sample = run_once(&toolgate, &configs[i], case, &http)
                .await
                .with_context(|| format!("start-up with {what}"))?;
            eprintln!(
                "startup: {what}, run {round}/{repeat}: serving after {:.1} ms, ready after {:.1} ms",
                sample.serving_ms, sample.ready_ms
            );
            samples[i].push(sample);
        }
    }

    let report = Report {
        benchmark: "startup",
        toolgate: portable(&toolgate.display().to_string()),
        repeat,
        delay_base_ms: args.delay_base,
        delay_step_ms: args.delay_step,
        target_overhead_ms: TARGET_OVERHEAD_MS,
        cases: cases
            .iter()
            .zip(samples)
            .map(|(case, samples)| case_report(case, samples))
            .collect(),
    };
    println!("{}", render(&report));
    if let Some(path) = &args.json {
        report::write_json(path, &report)?;
        eprintln!("startup: wrote {}", path.display());
    }
    Ok(())
}

/// Starts toolgate with `config`, waits until it is ready, and stops it.
async fn run_once(
    toolgate: &Path,
    config: &Path,
    case: &Case,
    http: &reqwest::Client,
) -> anyhow::Result<Sample> {
    let spawned = Instant::now();
    let gateway = Gateway::start(toolgate, config, PATIENCE).await?;
    let serving = gateway.serving_after();
    let names = upstream_names(case.delays.len());
    let opening = Instant::now();
    let mut session = Session::open(http, gateway.url()).await?;
    let session_ms = ms(opening.elapsed());
    let mut list_attempts = 0;
    let mut first_list_ms = None;
    let tools = loop {
        list_attempts += 1;
        let listed = session.list_tools().await?;
        first_list_ms.get_or_insert(ms(listed.elapsed));
        let tools = listed.value;
        let missing = names.iter().find(|name| !lists_tools_of(&tools, name));
        match missing {
            None => break tools,
            Some(name) if spawned.elapsed() > PATIENCE => {
                bail!("after {PATIENCE:?}, tools/list still has no tools of {name}")
            }
            // toolgate said it serves before it had every upstream's tools: ask again.
            Some(_) => {}
        }
    };
    let ready = spawned.elapsed();
    let stop = gateway.stop().await?;
    Ok(Sample {
        serving_ms: ms(serving),
        ready_ms: ms(ready),
        session_ms,
        first_list_ms: first_list_ms.unwrap_or_default(),
        list_attempts,
        tools: tools.len(),
        stop_ms: ms(stop),
    })
}

/// Whether `tools` has a tool of upstream `name` (`<name>__...`).
fn lists_tools_of(tools: &[serde_json::Value], name: &str) -> bool {
    let prefix = format!("{name}__");
    tools.iter().any(|tool| tool["name"].as_str().is_some_and(|n| n.starts_with(&prefix)))
}

fn case_report(case: &Case, samples: Vec<Sample>) -> CaseReport {
    let slowest = ms(case.slowest());
    let serving: Vec<f64> = samples.iter().map(|s| s.serving_ms).collect();
    let ready: Vec<f64> = samples.iter().map(|s| s.ready_ms).collect();
    let overhead: Vec<f64> = ready.iter().map(|r| r - slowest).collect();
    let overhead_ms = Summary::of(&overhead);
    let first_requests: Vec<f64> = samples.iter().map(|s| s.ready_ms - s.serving_ms).collect();
    let delayed = !case.slowest().is_zero();
    CaseReport {
        upstreams: case.delays.len(),
        delays_ms: case.delays.iter().map(|d| d.as_millis() as u64).collect(),
        slowest_delay_ms: case.slowest().as_millis() as u64,
        sum_delays_ms: case.sum().as_millis() as u64,
        serving_ms: Summary::of(&serving),
        ready_ms: Summary::of(&ready),
        overhead_ms,
        first_request_ms: report::median(&first_requests),
        meets_target: delayed.then_some(overhead_ms.median <= TARGET_OVERHEAD_MS),
        samples,
    }
}

/// The table, and a line per delayed case comparing it with the target.
fn render(report: &Report) -> String {
    let mut table = Table::new(&[
        "upstreams",
        "delays (ms)",
        "slowest (ms)",
        "sum (ms)",
        "serving (ms) min / median / max",
        "ready (ms) min / median / max",
        "ready − serving (ms) median",
        "ready − slowest (ms) median",
    ]);
    for case in &report.cases {
        let delays =
            Case { delays: case.delays_ms.iter().map(|&d| Duration::from_millis(d)).collect() };
        table.row(vec![
            case.upstreams.to_string(),
            delays.describe_delays(),
            case.slowest_delay_ms.to_string(),
            case.sum_delays_ms.to_string(),
            case.serving_ms.show(1),
            case.ready_ms.show(1),
            format!("{:.1}", case.first_request_ms),
            format!("{:.1}", case.overhead_ms.median),
        ]);
    }
    let mut text = format!(
        "toolgate start-up: {} run(s) per case; ready = `serving MCP at` logged and a first \
         tools/list lists every upstream's tools\n\n{table}\n",
        report.repeat
    );
    for case in report.cases.iter().filter(|case| case.meets_target.is_some()) {
        let verdict = if case.meets_target == Some(true) { "met" } else { "MISSED" };
        text.push_str(&format!(
            "{} upstream(s): ready after {:.1} ms = slowest delay {} ms + {:.1} ms \
             (target: + at most {TARGET_OVERHEAD_MS} ms: {verdict}); the delays add up to {} ms\n",
            case.upstreams,
            case.ready_ms.median,
            case.slowest_delay_ms,
            case.overhead_ms.median,
            case.sum_delays_ms,
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_spread_their_delays() {
        let case = Case::new(10, 100, 20);
        assert_eq!(case.slowest(), Duration::from_millis(280));
        assert_eq!(case.sum(), Duration::from_millis(1900));
        assert_eq!(case.describe_delays(), "100..280 (+20)");
        assert_eq!(Case::new(1, 100, 20).describe_delays(), "100");
        assert_eq!(Case::new(5, 0, 0).describe_delays(), "0");
        let upstreams = case.upstreams();
        assert_eq!(upstreams[3].name, "s03");
        assert_eq!(upstreams[3].startup_delay, Duration::from_millis(160));
    }

    #[test]
    fn upstream_names_sort_in_order() {
        assert_eq!(upstream_names(3), ["s00", "s01", "s02"]);
        assert_eq!(upstream_names(101)[100], "s100");
        assert_eq!(upstream_names(101)[7], "s007");
    }

    #[test]
    fn every_upstream_must_be_listed() {
        let tools = vec![serde_json::json!({ "name": "s00__echo" })];
        assert!(lists_tools_of(&tools, "s00"));
        assert!(!lists_tools_of(&tools, "s01"));
        assert!(!lists_tools_of(&tools, "s0"));
    }
}
