//! What `observability` reports: a row per cell, what each adds over `plain` at the same
//! number of sessions, and what the trace sinks received; as a table and as JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::cells::CellKind;
use crate::latency::machine::Machine;
use crate::latency::stats::Summary;

const GATEWAY_CPU: &str = "CPU time per call of toolgate's own process, without the fixture \
    it started (column `gw µs`), read from /proc/<pid>/stat (user + system, every thread) \
    right before the first and right after the last measured call of each cell in each round, \
    in clock ticks of 10 ms";
const SERVER_CPU: &str = "CPU time per call of toolgate and the fixture it runs (column `srv µs`)";
const ADDED: &str = "added.*: the cell minus `plain` at the same number of sessions: p50 and \
    p99 in ms, calls/s as a ratio, and toolgate's own CPU per call (gw µs) in µs";

/// How the run was made.
#[derive(Debug, Serialize)]
pub(crate) struct Settings {
    /// Measured calls per cell, over all rounds.
    pub(crate) calls: usize,
    pub(crate) rounds: usize,
    /// Unmeasured calls per session before each cell's measured ones, in every round.
    pub(crate) warmup: usize,
    pub(crate) concurrency: Vec<usize>,
    /// Seed of the order of cells in each round.
    pub(crate) seed: u64,
    /// toolgate's pipeline (bench/pipelines/<name>.toml).
    pub(crate) pipeline: &'static str,
    /// Each cell's toolgate command line, by cell.
    pub(crate) toolgate: BTreeMap<&'static str, String>,
    pub(crate) fixture: String,
    /// The calls the `metrics` toolgate's `/metrics` counted after the run (all it was sent,
    /// warm-ups included; the run fails otherwise).
    pub(crate) counted_by_metrics: usize,
    /// Each toolgate's peak resident set size (`VmHWM`) over the run, by cell.
    pub(crate) peak_rss_kib: BTreeMap<&'static str, u64>,
}

/// One cell's results.
#[derive(Debug, Serialize)]
pub(crate) struct Row {
    pub(crate) cell: CellKind,
    pub(crate) concurrency: usize,
    /// Unmeasured calls over the run.
    pub(crate) warmup_calls: usize,
    #[serde(flatten)]
    pub(crate) summary: Summary,
}

/// What a traced cell's sink received over the run.
#[derive(Debug, Serialize)]
pub(crate) struct Exports {
    pub(crate) cell: CellKind,
    /// Calls its toolgate was sent, warm-ups included.
    pub(crate) calls: usize,
    /// OTLP export requests received.
    pub(crate) exports: u64,
    /// Bytes of their bodies.
    pub(crate) bytes: u64,
}

/// What a cell adds over `plain` at the same number of sessions.
#[derive(Debug, Serialize)]
pub(crate) struct Added {
    pub(crate) cell: CellKind,
    pub(crate) concurrency: usize,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) mean_ms: f64,
    /// The cell's calls/s ÷ plain's.
    pub(crate) throughput_ratio: f64,
    /// toolgate's own CPU per call, cell minus plain.
    pub(crate) gateway_cpu_us_per_call: f64,
}

/// Everything a run measured.
#[derive(Debug, Serialize)]
pub(crate) struct Report {
    machine: Machine,
    settings: Settings,
    /// What each cell's toolgate has on.
    cells: BTreeMap<&'static str, &'static str>,
    results: Vec<Row>,
    added: Vec<Added>,
    exports: Vec<Exports>,
    legend: BTreeMap<&'static str, &'static str>,
}

impl Report {
    pub(crate) fn new(
        machine: Machine,
        settings: Settings,
        results: Vec<Row>,
        exports: Vec<Exports>,
    ) -> Report {
        let cells = CellKind::ALL.iter().map(|cell| (cell.name(), cell.describe())).collect();
        let added = added(&results);
        let legend = BTreeMap::from([
            ("gateway_cpu_us_per_call", GATEWAY_CPU),
            ("server_cpu_us_per_call", SERVER_CPU),
            ("added", ADDED),
        ]);
        Report { machine, settings, cells, results, added, exports, legend }
    }

    /// The printed report.
    pub(crate) fn table(&self) -> String {
        let mut out = String::new();
        let s = &self.settings;
        let _ = writeln!(out, "machine: {}", self.machine);
        let _ = writeln!(
            out,
            "one toolgate per cell: HTTP front, the fixture on stdio as fx, pipeline {}; each \
             call is fx__echo {{\"text\": \"hello\"}}",
            s.pipeline
        );
        let _ = writeln!(
            out,
            "{} calls per cell in {} rounds (cells shuffled, seed {}), warm-up {} per session; \
             one MCP session per caller, connections kept alive",
            s.calls, s.rounds, s.seed, s.warmup
        );
        for cell in CellKind::ALL {
            let _ = writeln!(out, "  {:<12} {}", cell.name(), cell.describe());
        }
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{:<12} {:>8} {:>7} {:>7} {:>7} {:>8} {:>8} {:>7} {:>7}",
            "cell",
            "sessions",
            "p50 ms",
            "p90 ms",
            "p99 ms",
            "max ms",
            "calls/s",
            "srv µs",
            "gw µs"
        );
        for row in &self.results {
            let r = &row.summary;
            let _ = writeln!(
                out,
                "{:<12} {:>8} {:>7.3} {:>7.3} {:>7.3} {:>8.2} {:>8.0} {:>7.0} {:>7.0}",
                row.cell.name(),
                row.concurrency,
                r.p50_ms,
                r.p90_ms,
                r.p99_ms,
                r.max_ms,
                r.calls_per_s,
                r.server_cpu_us_per_call,
                r.gateway_cpu_us_per_call.unwrap_or_default(),
            );
        }
        if !self.added.is_empty() {
            let _ = writeln!(out);
            let _ = writeln!(out, "added over plain, at the same number of sessions:");
            let _ = writeln!(
                out,
                "{:<12} {:>8} {:>8} {:>8} {:>9} {:>9}",
                "cell", "sessions", "+p50 ms", "+p99 ms", "calls/s ÷", "+gw µs"
            );
            for added in &self.added {
                let _ = writeln!(
                    out,
                    "{:<12} {:>8} {:>8.3} {:>8.3} {:>9.2} {:>9.0}",
                    added.cell.name(),
                    added.concurrency,
                    added.p50_ms,
                    added.p99_ms,
                    added.throughput_ratio,
                    added.gateway_cpu_us_per_call
                );
            }
        }
        let _ = writeln!(out);
        for exports in &self.exports {
            let _ = writeln!(
                out,
                "{}: the sink received {} exports, {} bytes, for {} calls (warm-ups included)",
                exports.cell.name(),
                exports.exports,
                exports.bytes,
                exports.calls
            );
        }
        let _ = writeln!(
            out,
            "metrics: /metrics counted {} calls, every call the metrics toolgate was sent",
            s.counted_by_metrics
        );
        let rss: Vec<String> = s
            .peak_rss_kib
            .iter()
            .map(|(cell, kib)| format!("{cell} {:.1}", *kib as f64 / 1024.0))
            .collect();
        if !rss.is_empty() {
            let _ = writeln!(out, "peak RSS, MiB: {}", rss.join(", "));
        }
        let _ = writeln!(out, "srv µs: {SERVER_CPU}.\ngw µs: {GATEWAY_CPU}.");
        out
    }
}

/// Each cell but `plain` against `plain` at each number of sessions both ran with.
fn added(results: &[Row]) -> Vec<Added> {
    let mut out = Vec::new();
    for row in results.iter().filter(|row| row.cell != CellKind::Plain) {
        let Some(base) =
            results.iter().find(|r| r.cell == CellKind::Plain && r.concurrency == row.concurrency)
        else {
            continue;
        };
        let (a, b) = (&row.summary, &base.summary);
        let gateway = |s: &Summary| s.gateway_cpu_us_per_call.unwrap_or_default();
        out.push(Added {
            cell: row.cell,
            concurrency: row.concurrency,
            p50_ms: a.p50_ms - b.p50_ms,
            p99_ms: a.p99_ms - b.p99_ms,
            mean_ms: a.mean_ms - b.mean_ms,
            throughput_ratio: if b.calls_per_s > 0.0 { a.calls_per_s / b.calls_per_s } else { 0.0 },
            gateway_cpu_us_per_call: gateway(a) - gateway(b),
        });
    }
    out.sort_by_key(|added| (added.cell, added.concurrency));
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
        samples.add([d(ms), d(ms)], d(2 * ms), d(ms), d(ms), Some(d(ms)));
        Row { cell, concurrency, warmup_calls: 0, summary: samples.summary().expect("calls") }
    }

    #[test]
    fn added_is_the_cell_minus_plain_at_the_same_sessions() {
        let results = vec![
            row(CellKind::Plain, 1, 1),
            row(CellKind::Metrics, 1, 2),
            row(CellKind::Traces100, 1, 4),
            row(CellKind::Traces100, 8, 4),
        ];
        let added = added(&results);
        assert_eq!(added.len(), 2, "no plain at 8 sessions: {added:?}");
        assert_eq!((added[0].cell, added[0].p50_ms), (CellKind::Metrics, 1.0));
        assert!((added[0].throughput_ratio - 0.5).abs() < 1e-9, "{added:?}");
        assert_eq!(added[1].gateway_cpu_us_per_call, 1500.0);
        let report = Report::new(
            Machine::describe(),
            Settings {
                calls: 2,
                rounds: 1,
                warmup: 0,
                concurrency: vec![1, 8],
                seed: 1,
                pipeline: "default",
                toolgate: BTreeMap::new(),
                fixture: "fx".into(),
                counted_by_metrics: 2,
                peak_rss_kib: BTreeMap::from([("plain", 2048)]),
            },
            results,
            vec![Exports { cell: CellKind::Traces100, calls: 4, exports: 1, bytes: 10 }],
        );
        let table = report.table();
        assert!(table.contains("traces-1: the sink received 1 exports"), "{table}");
        assert!(table.contains("peak RSS, MiB: plain 2.0"), "{table}");
    }
}
