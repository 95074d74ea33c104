//! What `responses` reports: a row per cell, what toolgate adds over the same work without it,
//! as a table and as JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::latency::machine::Machine;
use crate::latency::stats::Summary;
use crate::responses::cells::{CellKind, PAIRS};

/// What the columns and the fields of the JSON mean, for the legend under the table and the
/// report's `legend`.
const CLIENT_CPU: &str = "CPU time per request of this process (column `cli µs`): the load \
    generator, the fake model (in this process), and in direct+mcp the application's own MCP \
    client";
const SERVER_CPU: &str = "CPU time per request of the processes the harness started that \
    served the cell (column `srv µs`): toolgate and the fixture it runs (toolgate cells), the \
    application's fixture (direct+mcp), none (direct)";
const GATEWAY_CPU: &str = "CPU time per request of toolgate's own process alone, without the \
    fixture it started (column `gw µs`); absent (`-`) on the direct cells";
const CPU_RESOLUTION: &str = "CPU times are read from /proc/<pid>/stat (user + system, every \
    thread) right before the first and right after the last measured request of each cell in \
    each round, in clock ticks of 10 ms";
const ADDED: &str = "added.*: the toolgate cell minus its baseline at the same number of \
    callers: p50 and p99 in ms, requests/s as a ratio, and CPU per request of everything the \
    harness runs (cli µs + srv µs)";

/// How the run was made.
#[derive(Debug, Serialize)]
pub(crate) struct Settings {
    /// Measured requests per cell, over all rounds.
    pub(crate) requests: usize,
    pub(crate) rounds: usize,
    /// Unmeasured requests per caller before each cell's measured ones, in every round.
    pub(crate) warmup: usize,
    pub(crate) concurrency: Vec<usize>,
    /// Seed of the order of cells in each round.
    pub(crate) seed: u64,
    /// toolgate's pipeline (bench/pipelines/<name>.toml).
    pub(crate) pipeline: &'static str,
    /// The dialect toolgate speaks to the model (`[agent] provider`).
    pub(crate) model_dialect: &'static str,
    /// toolgate's command line; absent when no toolgate cell ran.
    pub(crate) toolgate: Option<String>,
    pub(crate) fixture: String,
    /// Requests the fake model received over the whole run, warm-ups included.
    pub(crate) model_requests: usize,
    /// toolgate's peak resident set size (`VmHWM`) over the run.
    pub(crate) toolgate_peak_rss_kib: Option<u64>,
}

/// One cell's results.
#[derive(Debug, Serialize)]
pub(crate) struct Row {
    pub(crate) cell: CellKind,
    pub(crate) concurrency: usize,
    /// Unmeasured requests over the run.
    pub(crate) warmup_requests: usize,
    pub(crate) model_calls_per_request: usize,
    pub(crate) mcp_calls_per_request: usize,
    #[serde(flatten)]
    pub(crate) summary: Summary,
}

/// What a toolgate cell adds over its baseline at the same number of callers.
#[derive(Debug, Serialize)]
pub(crate) struct Added {
    pub(crate) cell: CellKind,
    pub(crate) baseline: CellKind,
    pub(crate) concurrency: usize,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) mean_ms: f64,
    /// The cell's requests/s ÷ the baseline's.
    pub(crate) throughput_ratio: f64,
    /// CPU per request of everything the harness runs, cell minus baseline.
    pub(crate) cpu_us_per_request: f64,
}

/// Everything a run measured.
#[derive(Debug, Serialize)]
pub(crate) struct Report {
    machine: Machine,
    settings: Settings,
    /// What a request of each cell is.
    cells: BTreeMap<&'static str, &'static str>,
    results: Vec<Row>,
    added: Vec<Added>,
    legend: BTreeMap<&'static str, &'static str>,
}

impl Report {
    pub(crate) fn new(machine: Machine, settings: Settings, results: Vec<Row>) -> Report {
        let cells = results.iter().map(|row| (row.cell.name(), row.cell.describe())).collect();
        let added = added(&results);
        let legend = BTreeMap::from([
            ("client_cpu_us_per_call", CLIENT_CPU),
            ("server_cpu_us_per_call", SERVER_CPU),
            ("gateway_cpu_us_per_call", GATEWAY_CPU),
            ("cpu_times", CPU_RESOLUTION),
            ("added", ADDED),
        ]);
        Report { machine, settings, cells, results, added, legend }
    }

    /// The printed report.
    pub(crate) fn table(&self) -> String {
        let mut out = String::new();
        let s = &self.settings;
        let _ = writeln!(out, "machine: {}", self.machine);
        let _ = writeln!(
            out,
            "model: toolgate-testkit's fake LLM in this process, no delays; toolgate speaks {} \
             to it (streamed), pipeline {}, the fixture on stdio as fx",
            s.model_dialect, s.pipeline
        );
        let _ = writeln!(
            out,
            "{} requests per cell in {} rounds (cells shuffled, seed {}), warm-up {} per \
             caller; non-streaming requests, connections kept alive",
            s.requests, s.rounds, s.seed, s.warmup
        );
        for (name, what) in &self.cells {
            let _ = writeln!(out, "  {name:<15} {what}");
        }
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{:<15} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8} {:>7} {:>7} {:>7}",
            "cell",
            "callers",
            "p50 ms",
            "p90 ms",
            "p99 ms",
            "max ms",
            "req/s",
            "cli µs",
            "srv µs",
            "gw µs"
        );
        for row in &self.results {
            let r = &row.summary;
            let gateway =
                r.gateway_cpu_us_per_call.map_or_else(|| "-".to_owned(), |us| format!("{us:.0}"));
            let _ = writeln!(
                out,
                "{:<15} {:>7} {:>7.3} {:>7.3} {:>7.3} {:>8.2} {:>8.0} {:>7.0} {:>7.0} {:>7}",
                row.cell.name(),
                row.concurrency,
                r.p50_ms,
                r.p90_ms,
                r.p99_ms,
                r.max_ms,
                r.calls_per_s,
                r.client_cpu_us_per_call,
                r.server_cpu_us_per_call,
                gateway
            );
        }
        if !self.added.is_empty() {
            let _ = writeln!(out);
            let _ = writeln!(out, "added by toolgate, against the same work without it:");
            let _ = writeln!(
                out,
                "{:<15} {:<11} {:>7} {:>8} {:>8} {:>8} {:>8}",
                "cell", "against", "callers", "+p50 ms", "+p99 ms", "req/s ÷", "+CPU µs"
            );
            for added in &self.added {
                let _ = writeln!(
                    out,
                    "{:<15} {:<11} {:>7} {:>8.3} {:>8.3} {:>8.2} {:>8.0}",
                    added.cell.name(),
                    added.baseline.name(),
                    added.concurrency,
                    added.p50_ms,
                    added.p99_ms,
                    added.throughput_ratio,
                    added.cpu_us_per_request
                );
            }
        }
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "cli µs: {CLIENT_CPU}.\nsrv µs: {SERVER_CPU}.\ngw µs: {GATEWAY_CPU}.\n\
             {CPU_RESOLUTION}.\n+CPU µs: (cli µs + srv µs) of the cell minus its baseline's."
        );
        let rss = s.toolgate_peak_rss_kib.map_or_else(String::new, |kib| {
            format!("; toolgate's peak RSS {:.1} MiB", kib as f64 / 1024.0)
        });
        let _ = writeln!(
            out,
            "model requests: {} (warm-ups included), as the cells make them: one per request, \
             two with an MCP call{rss}",
            s.model_requests
        );
        out
    }
}

/// Each pair of [`PAIRS`] that ran, at each number of callers both ran with.
fn added(results: &[Row]) -> Vec<Added> {
    let mut out = Vec::new();
    for (cell, baseline) in PAIRS {
        for row in results.iter().filter(|row| row.cell == cell) {
            let Some(base) =
                results.iter().find(|r| r.cell == baseline && r.concurrency == row.concurrency)
            else {
                continue;
            };
            let (a, b) = (&row.summary, &base.summary);
            let cpu = |s: &Summary| s.client_cpu_us_per_call + s.server_cpu_us_per_call;
            out.push(Added {
                cell,
                baseline,
                concurrency: row.concurrency,
                p50_ms: a.p50_ms - b.p50_ms,
                p99_ms: a.p99_ms - b.p99_ms,
                mean_ms: a.mean_ms - b.mean_ms,
                throughput_ratio: if b.calls_per_s > 0.0 {
                    a.calls_per_s / b.calls_per_s
                } else {
                    0.0
                },
                cpu_us_per_request: cpu(a) - cpu(b),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::latency::stats::Samples;

    fn row(cell: CellKind, concurrency: usize, ms: u64) -> Row {
        let mut samples = Samples::default();
        let d = Duration::from_millis;
        let gateway = cell.via_toolgate().then(|| d(ms));
        samples.add([d(ms), d(ms)], d(2 * ms), d(ms), d(ms), gateway);
        Row {
            cell,
            concurrency,
            warmup_requests: 0,
            model_calls_per_request: cell.model_calls(),
            mcp_calls_per_request: cell.mcp_calls(),
            summary: samples.summary().expect("requests"),
        }
    }

    #[test]
    fn added_is_the_cell_minus_its_baseline_at_the_same_callers() {
        let results = vec![
            row(CellKind::Direct, 1, 1),
            row(CellKind::Toolgate, 1, 3),
            row(CellKind::Toolgate, 8, 5),
            row(CellKind::ToolgateMcp, 1, 4),
        ];
        let added = added(&results);
        assert_eq!(added.len(), 1, "no baseline at 8 callers, none for toolgate+mcp: {added:?}");
        let first = &added[0];
        assert_eq!((first.cell, first.baseline), (CellKind::Toolgate, CellKind::Direct));
        assert_eq!(first.p50_ms, 2.0);
        assert!((first.throughput_ratio - 1.0 / 3.0).abs() < 1e-9, "{first:?}");
        assert_eq!(first.cpu_us_per_request, 2000.0);
        let report = Report::new(
            Machine::describe(),
            Settings {
                requests: 2,
                rounds: 1,
                warmup: 0,
                concurrency: vec![1, 8],
                seed: 1,
                pipeline: "default",
                model_dialect: "openai-responses",
                toolgate: None,
                fixture: "fx".into(),
                model_requests: 10,
                toolgate_peak_rss_kib: None,
            },
            results,
        );
        let table = report.table();
        assert!(table.contains("toolgate        direct"), "{table}");
        assert!(table.contains("model requests: 10"), "{table}");
    }
}
