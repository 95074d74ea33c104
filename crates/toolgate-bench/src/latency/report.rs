//! What a run reports: rows with ratios to the direct baseline and to each peer, as a
//! readable table and as JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::latency::machine::Machine;
use crate::latency::stats::Summary;
use crate::latency::target::{Peer, Transport, Via};

/// Everything a run measured.
#[derive(Debug, Serialize)]
pub(crate) struct Report {
    pub(crate) machine: Machine,
    pub(crate) settings: Settings,
    /// Skipped paths and caveats.
    pub(crate) notes: Vec<String>,
    pub(crate) paths: Vec<PathRecord>,
    pub(crate) results: Vec<Row>,
}

/// How the run was made.
#[derive(Debug, Serialize)]
pub(crate) struct Settings {
    /// Measured calls per cell, over all rounds.
    pub(crate) calls: usize,
    pub(crate) rounds: usize,
    /// Unmeasured calls per session before each cell's measured calls, in every round.
    pub(crate) warmup: usize,
    pub(crate) concurrency: Vec<usize>,
    pub(crate) payloads: Vec<&'static str>,
    /// Seed of the order of cells in each round.
    pub(crate) seed: u64,
    pub(crate) toolgate: String,
    /// The upstream server (`toolgate-fixture`).
    pub(crate) fixture: String,
    pub(crate) client: String,
}

/// One path as it ran.
#[derive(Debug, Serialize)]
pub(crate) struct PathRecord {
    pub(crate) name: String,
    /// `direct`, `toolgate` or `peer`.
    pub(crate) via: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) pipeline: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) peer: Option<PeerRecord>,
    pub(crate) front: Transport,
    pub(crate) upstream: Transport,
    pub(crate) command: String,
    /// Processes the client talks to: one, or one per session on stdio.
    pub(crate) front_processes: usize,
    /// Peak resident set size (`VmHWM`) of the front process, the highest among them on
    /// stdio, over the whole run.
    pub(crate) peak_rss_kib: Option<u64>,
    /// The protocol version the path's sessions negotiated.
    pub(crate) protocol: String,
}

#[derive(Debug, Serialize)]
pub(crate) struct PeerRecord {
    pub(crate) name: &'static str,
    pub(crate) version: &'static str,
}

/// One cell: a path, a payload and a concurrency.
#[derive(Debug, Serialize)]
pub(crate) struct Row {
    pub(crate) path: String,
    pub(crate) payload: &'static str,
    pub(crate) concurrency: usize,
    #[serde(flatten)]
    pub(crate) summary: Summary,
    /// Against calling the fixture directly over the upstream's transport.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) vs_direct: Option<VsDirect>,
    /// Against each peer (toolgate rows only), by peer name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) vs_peers: BTreeMap<&'static str, VsPeer>,
    #[serde(skip)]
    pub(crate) via: Via,
    #[serde(skip)]
    pub(crate) upstream: Transport,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct VsDirect {
    pub(crate) baseline: String,
    pub(crate) p50_ratio: f64,
    pub(crate) added_p50_us: f64,
    pub(crate) calls_per_s_ratio: f64,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct VsPeer {
    pub(crate) p50_ratio: f64,
    pub(crate) calls_per_s_ratio: f64,
    /// toolgate's added p50 over direct ÷ the peer's (both against the same direct row).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) added_p50_ratio: Option<f64>,
}

/// Fills in `vs_direct` and `vs_peers` of every row.
pub(crate) fn compare(rows: &mut [Row]) {
    let find = |rows: &[Row], path: &str, payload: &str, concurrency: usize| {
        rows.iter()
            .position(|r| r.path == path && r.payload == payload && r.concurrency == concurrency)
    };
    for i in 0..rows.len() {
        let row = &rows[i];
        if row.via == Via::Direct {
            continue;
        }
        let baseline = format!("direct-{}", row.upstream);
        if let Some(j) = find(rows, &baseline, row.payload, row.concurrency) {
            let direct = rows[j].summary.clone();
            let row = &mut rows[i];
            row.vs_direct = Some(VsDirect {
                baseline,
                p50_ratio: row.summary.p50_ms / direct.p50_ms,
                added_p50_us: (row.summary.p50_ms - direct.p50_ms) * 1e3,
                calls_per_s_ratio: row.summary.calls_per_s / direct.calls_per_s,
            });
        }
    }
    for i in 0..rows.len() {
        if !matches!(rows[i].via, Via::Toolgate(_)) {
            continue;
        }
        for peer in Peer::ALL {
            let peer_path = format!("{}-http-stdio", peer.name());
            let Some(j) = find(rows, &peer_path, rows[i].payload, rows[i].concurrency) else {
                continue;
            };
            let theirs = (rows[j].summary.clone(), rows[j].vs_direct.clone());
            let row = &mut rows[i];
            let added_p50_ratio = match (&row.vs_direct, &theirs.1) {
                (Some(ours), Some(them))
                    if ours.baseline == them.baseline && them.added_p50_us > 0.0 =>
                {
                    Some(ours.added_p50_us / them.added_p50_us)
                }
                _ => None,
            };
            row.vs_peers.insert(
                peer.name(),
                VsPeer {
                    p50_ratio: row.summary.p50_ms / theirs.0.p50_ms,
                    calls_per_s_ratio: row.summary.calls_per_s / theirs.0.calls_per_s,
                    added_p50_ratio,
                },
            );
        }
    }
}

impl Report {
    /// The readable form: the machine, the settings, one table per payload and concurrency.
    pub(crate) fn table(&self) -> String {
        let mut out = String::new();
        let s = &self.settings;
        let _ = writeln!(out, "machine: {}", self.machine);
        let _ = writeln!(
            out,
            "latency: {} calls per cell in {} rounds (cells shuffled, seed {}), warm-up {} \
             per session; client: {}",
            s.calls, s.rounds, s.seed, s.warmup, s.client
        );
        for note in &self.notes {
            let _ = writeln!(out, "note: {note}");
        }
        let peers: Vec<Peer> = Peer::ALL
            .into_iter()
            .filter(|peer| {
                self.paths.iter().any(|p| p.peer.as_ref().is_some_and(|r| r.name == peer.name()))
            })
            .collect();
        let rss: BTreeMap<&str, Option<u64>> =
            self.paths.iter().map(|p| (p.name.as_str(), p.peak_rss_kib)).collect();
        let mut sections: Vec<(&str, usize)> =
            self.results.iter().map(|r| (r.payload, r.concurrency)).collect();
        sections.dedup();
        sections.sort_by_key(|&(payload, concurrency)| (payload != "small", concurrency));
        sections.dedup();
        for (payload, concurrency) in sections {
            let _ = writeln!(out, "\npayload {payload}, {concurrency} session(s)");
            let mut header: Vec<String> = [
                "path",
                "p50 ms",
                "p90 ms",
                "p99 ms",
                "max ms",
                "calls/s",
                "cli µs",
                "srv µs",
                "RSS MiB",
                "÷direct",
                "+p50 µs",
                "tput÷dir",
            ]
            .into_iter()
            .map(str::to_owned)
            .collect();
            header.extend(peers.iter().map(|peer| format!("÷{}", peer.short())));
            let mut lines = vec![header];
            for row in
                self.results.iter().filter(|r| r.payload == payload && r.concurrency == concurrency)
            {
                let m = &row.summary;
                let mut line = vec![
                    row.path.clone(),
                    format!("{:.3}", m.p50_ms),
                    format!("{:.3}", m.p90_ms),
                    format!("{:.3}", m.p99_ms),
                    format!("{:.2}", m.max_ms),
                    format!("{:.0}", m.calls_per_s),
                    format!("{:.0}", m.client_cpu_us_per_call),
                    format!("{:.0}", m.server_cpu_us_per_call),
                    rss.get(row.path.as_str())
                        .copied()
                        .flatten()
                        .map_or("-".to_owned(), |kib| format!("{:.1}", kib as f64 / 1024.0)),
                ];
                match &row.vs_direct {
                    Some(d) => line.extend([
                        format!("{:.2}", d.p50_ratio),
                        format!("{:+.0}", d.added_p50_us),
                        format!("{:.2}", d.calls_per_s_ratio),
                    ]),
                    None => line.extend(["-", "-", "-"].map(str::to_owned)),
                }
                for peer in &peers {
                    line.push(
                        row.vs_peers
                            .get(peer.name())
                            .map_or("-".to_owned(), |v| format!("{:.2}", v.p50_ratio)),
                    );
                }
                lines.push(line);
            }
            render(&mut out, &lines);
        }
        let _ = writeln!(
            out,
            "\n÷direct: p50 ÷ the direct path over the upstream's transport (direct-stdio or \
             direct-http); +p50 µs: p50 added over it; tput÷dir: calls/s ÷ its calls/s."
        );
        if !peers.is_empty() {
            let names: Vec<String> =
                peers.iter().map(|p| format!("{} = {}", p.short(), p.name())).collect();
            let _ = writeln!(
                out,
                "÷rs ÷py ÷sg: toolgate's p50 ÷ the peer's at the same payload and sessions ({}).",
                names.join(", ")
            );
        }
        let _ = writeln!(
            out,
            "cli µs / srv µs: CPU time per call of the load generator / of every process \
             serving the path (front, upstream, their children); clock-tick (10 ms) resolution \
             per round. RSS: peak of the front process (the largest of the per-session \
             processes on stdio fronts), over the whole run."
        );
        out
    }
}

/// Appends `lines` as aligned columns: the first left-aligned, the others right-aligned.
fn render(out: &mut String, lines: &[Vec<String>]) {
    let columns = lines.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            lines.iter().filter_map(|l| l.get(c)).map(|s| s.chars().count()).max().unwrap_or(0)
        })
        .collect();
    for line in lines {
        let mut text = String::new();
        for (c, cell) in line.iter().enumerate() {
            let pad = widths[c] - cell.chars().count();
            if c == 0 {
                text.push_str(cell);
                text.push_str(&" ".repeat(pad));
            } else {
                text.push_str("  ");
                text.push_str(&" ".repeat(pad));
                text.push_str(cell);
            }
        }
        let _ = writeln!(out, "{}", text.trim_end());
    }
}
