//! What `replicas` reports: a row per cell, and each deployment against `direct` at the same
//! number of sessions; as a table and as JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::{DEPLOYMENTS, Deployment};
use crate::latency::machine::Machine;
use crate::latency::stats::Summary;

const CPU: &str = "CPU time per call of every process of the deployment (each replica and \
    the fixture it started, HAProxy, Redis), read from /proc/<pid>/stat (user + system) right \
    before the first and right after the last measured call of each cell in each round, in \
    clock ticks of 10 ms (column `cpu µs`)";
const VERSUS: &str = "versus_direct: the cell against `direct` at the same number of sessions: \
    p50 and p99 added in ms, calls/s as a ratio, CPU per call added in µs";

/// How the run was made.
#[derive(Debug, Serialize)]
pub(crate) struct Settings {
    pub(crate) calls: usize,
    pub(crate) rounds: usize,
    pub(crate) warmup: usize,
    pub(crate) concurrency: Vec<usize>,
    pub(crate) seed: u64,
    pub(crate) toolgate: String,
    pub(crate) fixture: String,
    /// The sum of the replicas' peak resident set sizes (`VmHWM`), by deployment.
    pub(crate) peak_rss_kib: Vec<(&'static str, u64)>,
}

/// One cell's results.
#[derive(Debug, Serialize)]
pub(crate) struct Row {
    pub(crate) deployment: Deployment,
    pub(crate) concurrency: usize,
    #[serde(flatten)]
    pub(crate) summary: Summary,
}

/// A cell against `direct` at the same number of sessions.
#[derive(Debug, Serialize)]
pub(crate) struct Versus {
    pub(crate) deployment: &'static str,
    pub(crate) concurrency: usize,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) throughput_ratio: f64,
    pub(crate) cpu_us_per_call: f64,
}

/// Everything a run measured.
#[derive(Debug, Serialize)]
pub(crate) struct Report {
    machine: Machine,
    settings: Settings,
    results: Vec<Row>,
    versus_direct: Vec<Versus>,
    legend: BTreeMap<&'static str, &'static str>,
}

impl Report {
    pub(crate) fn new(machine: Machine, settings: Settings, results: Vec<Row>) -> Report {
        let versus_direct = versus_direct(&results);
        let legend = BTreeMap::from([("server_cpu_us_per_call", CPU), ("versus_direct", VERSUS)]);
        Report { machine, settings, results, versus_direct, legend }
    }

    /// The printed report.
    pub(crate) fn table(&self) -> String {
        let mut out = String::new();
        let s = &self.settings;
        let _ = writeln!(out, "machine: {}", self.machine);
        let _ = writeln!(
            out,
            "toolgate replicas (the fixture on stdio as fx, a limits rate that never refuses, \
             [state] shared_key) behind HAProxy round robin; each call is fx__echo in a \
             2025-11-25 session per caller"
        );
        let _ = writeln!(
            out,
            "{} calls per cell in {} rounds (cells shuffled, seed {}), warm-up {} per session",
            s.calls, s.rounds, s.seed, s.warmup
        );
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{:<11} {:>8} {:>7} {:>7} {:>7} {:>9} {:>8} {:>10}",
            "deployment",
            "sessions",
            "p50 ms",
            "p90 ms",
            "p99 ms",
            "calls/s",
            "cpu µs",
            "vs direct"
        );
        for row in &self.results {
            let m = &row.summary;
            let versus = self
                .versus_direct
                .iter()
                .find(|v| v.deployment == row.deployment.name && v.concurrency == row.concurrency)
                .map(|v| format!("×{:.2}", v.throughput_ratio))
                .unwrap_or_else(|| "-".to_owned());
            let _ = writeln!(
                out,
                "{:<11} {:>8} {:>7.3} {:>7.3} {:>7.3} {:>9.0} {:>8.0} {:>10}",
                row.deployment.name,
                row.concurrency,
                m.p50_ms,
                m.p90_ms,
                m.p99_ms,
                m.calls_per_s,
                m.server_cpu_us_per_call,
                versus
            );
        }
        let _ = writeln!(out);
        let _ = writeln!(out, "{CPU}.");
        let _ = writeln!(out, "{VERSUS}.");
        for (deployment, kib) in &s.peak_rss_kib {
            let _ = writeln!(out, "peak RSS of {deployment}'s replicas together: {kib} KiB");
        }
        out
    }
}

fn versus_direct(results: &[Row]) -> Vec<Versus> {
    let direct = |concurrency: usize| {
        results
            .iter()
            .find(|r| r.deployment.name == DEPLOYMENTS[0].name && r.concurrency == concurrency)
    };
    results
        .iter()
        .filter(|row| row.deployment.name != DEPLOYMENTS[0].name)
        .filter_map(|row| {
            let base = &direct(row.concurrency)?.summary;
            let m = &row.summary;
            Some(Versus {
                deployment: row.deployment.name,
                concurrency: row.concurrency,
                p50_ms: m.p50_ms - base.p50_ms,
                p99_ms: m.p99_ms - base.p99_ms,
                throughput_ratio: if base.calls_per_s > 0.0 {
                    m.calls_per_s / base.calls_per_s
                } else {
                    0.0
                },
                cpu_us_per_call: m.server_cpu_us_per_call - base.server_cpu_us_per_call,
            })
        })
        .collect()
}
