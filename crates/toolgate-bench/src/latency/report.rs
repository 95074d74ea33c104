//! What a run reports: rows with ratios to the direct baseline and to each peer, as a
//! readable table and as JSON; with `--pin`, which CPUs each side got and the throughput
//! against the target.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::latency::machine::Machine;
use crate::latency::pin::{self, Pinning};
use crate::latency::stats::Summary;
use crate::latency::target::{Peer, Target, Transport, Via};

/// The target for the gateway's own CPU per call: at most this × the Rust mcp-proxy's, HTTP
/// front → stdio upstream, default pipeline, small payload.
const GATEWAY_CPU_TARGET: f64 = 0.5;
/// The path and payload that target is read on.
const GATEWAY_CPU_TARGET_PATH: &str = "toolgate-http-stdio-default";
const GATEWAY_CPU_TARGET_PAYLOAD: &str = "small";
/// The target for pinned throughput: at least this × direct, at [`PINNED_SESSIONS`].
const PINNED_TARGET: f64 = 0.8;
/// The sessions pinned throughput is read at (or the most measured, when these were not).
const PINNED_SESSIONS: usize = 32;

/// What the CPU columns and the fields of the JSON mean, for the legend under the table and
/// the report's `legend`.
const CLIENT_CPU: &str = "CPU time per measured call of the load generator (this process; \
    column `cli µs`)";
const SERVER_CPU: &str = "CPU time per measured call of every process serving the path: the \
    front, the upstream, and their children (column `srv µs`)";
const GATEWAY_CPU: &str = "CPU time per measured call of the gateway's own process alone (column \
    `gw µs`): toolgate, or the peer gateway, the process the client talks to (on stdio fronts \
    the sum of the per-session toolgate processes), without any process it started (the \
    upstream fixture on stdio) and without the shared HTTP fixture; absent (`-`) on direct \
    paths, which have no gateway";
const CPU_RESOLUTION: &str = "CPU times are read from /proc/<pid>/stat (user + system, every \
    thread) right before the first and right after the last measured call of each cell in \
    each round, in clock ticks of 10 ms";
const GATEWAY_CPU_RATIO: &str = "toolgate's gateway_cpu_us_per_call ÷ the peer's, at the same \
    payload and sessions (column `gw÷rs` for mcp-proxy-rs); target: at most 0.5 × \
    mcp-proxy-rs on toolgate-http-stdio-default, small payload";
const PINNING: &str = "with --pin: the load generator ran on client_cpus, every process it \
    started (and their children, by inheritance) on server_cpus; *_seen is what the kernel \
    listed (Cpus_allowed_list) once every path was up; throughput is calls/s ÷ the direct \
    path's at target_sessions, target at least 0.8";

/// The report's `legend`: what its fields mean.
pub(crate) fn legend() -> BTreeMap<&'static str, &'static str> {
    BTreeMap::from([
        ("client_cpu_us_per_call", CLIENT_CPU),
        ("server_cpu_us_per_call", SERVER_CPU),
        ("gateway_cpu_us_per_call", GATEWAY_CPU),
        ("cpu_times", CPU_RESOLUTION),
        ("vs_peers.*.gateway_cpu_ratio", GATEWAY_CPU_RATIO),
        ("pinning", PINNING),
    ])
}

/// Everything a run measured.
#[derive(Debug, Serialize)]
pub(crate) struct Report {
    pub(crate) machine: Machine,
    pub(crate) settings: Settings,
    /// Skipped paths and caveats.
    pub(crate) notes: Vec<String>,
    pub(crate) paths: Vec<PathRecord>,
    pub(crate) results: Vec<Row>,
    /// With `--pin`: the CPUs of each side and the throughput against the target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) pinning: Option<PinRecord>,
    /// What the CPU fields mean.
    pub(crate) legend: BTreeMap<&'static str, &'static str>,
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
    /// toolgate's gateway CPU per call ÷ the peer's (see the report's `legend`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) gateway_cpu_ratio: Option<f64>,
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
            let gateway_cpu_ratio =
                match (row.summary.gateway_cpu_us_per_call, theirs.0.gateway_cpu_us_per_call) {
                    (Some(ours), Some(them)) if them > 0.0 => Some(ours / them),
                    _ => None,
                };
            row.vs_peers.insert(
                peer.name(),
                VsPeer {
                    p50_ratio: row.summary.p50_ms / theirs.0.p50_ms,
                    calls_per_s_ratio: row.summary.calls_per_s / theirs.0.calls_per_s,
                    added_p50_ratio,
                    gateway_cpu_ratio,
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
        if let Some(pinning) = &self.pinning {
            let _ = writeln!(out, "{}", pinning.describe());
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
                "gw µs",
                "RSS MiB",
                "÷direct",
                "+p50 µs",
                "tput÷dir",
            ]
            .into_iter()
            .map(str::to_owned)
            .collect();
            header.extend(peers.iter().map(|peer| format!("÷{}", peer.short())));
            let rs = peers.contains(&Peer::McpProxyRs);
            if rs {
                header.push(format!("gw÷{}", Peer::McpProxyRs.short()));
            }
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
                    m.gateway_cpu_us_per_call.map_or("-".to_owned(), |us| format!("{us:.0}")),
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
                if rs {
                    line.push(
                        row.vs_peers
                            .get(Peer::McpProxyRs.name())
                            .and_then(|v| v.gateway_cpu_ratio)
                            .map_or("-".to_owned(), |ratio| format!("{ratio:.2}")),
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
        let _ = writeln!(
            out,
            "gw µs: CPU time per call of the gateway's own process alone (toolgate or the peer; \
             on stdio fronts the sum of the per-session toolgate processes), without the \
             upstream fixture it started or anything else; same resolution; `-` on direct \
             paths, which have no gateway."
        );
        if peers.contains(&Peer::McpProxyRs) {
            let _ = writeln!(
                out,
                "gw÷rs: toolgate's gw µs ÷ mcp-proxy-rs's at the same payload and sessions \
                 (target: at most {GATEWAY_CPU_TARGET} on {GATEWAY_CPU_TARGET_PATH}, \
                 {GATEWAY_CPU_TARGET_PAYLOAD} payload)."
            );
            if let Some(line) = self.gateway_cpu_target() {
                let _ = writeln!(out, "{line}");
            }
        }
        if let Some(pinning) = &self.pinning {
            pinning.render(&mut out);
        }
        out
    }

    /// The gateway CPU target, read on every number of sessions measured; `None` without the
    /// rows it needs.
    fn gateway_cpu_target(&self) -> Option<String> {
        let readings: Vec<String> = self
            .results
            .iter()
            .filter(|r| {
                r.path == GATEWAY_CPU_TARGET_PATH && r.payload == GATEWAY_CPU_TARGET_PAYLOAD
            })
            .filter_map(|r| {
                let ratio = r.vs_peers.get(Peer::McpProxyRs.name())?.gateway_cpu_ratio?;
                let status = if ratio <= GATEWAY_CPU_TARGET { "met" } else { "missed" };
                Some(format!("{} session(s) {ratio:.2} ({status})", r.concurrency))
            })
            .collect();
        (!readings.is_empty()).then(|| {
            format!(
                "target gw÷rs ≤ {GATEWAY_CPU_TARGET} ({GATEWAY_CPU_TARGET_PATH}, \
                 {GATEWAY_CPU_TARGET_PAYLOAD} payload): {}",
                readings.join(", ")
            )
        })
    }
}

/// `--pin`: which CPUs each side got, and throughput at 32 sessions against direct.
#[derive(Debug, Serialize)]
pub(crate) struct PinRecord {
    /// The CPUs given to the load generator.
    pub(crate) client_cpus: Vec<usize>,
    /// The CPUs given to every process the harness started.
    pub(crate) server_cpus: Vec<usize>,
    /// Once every path was up, each `Cpus_allowed_list` among the load generator's threads
    /// and how many threads had it.
    pub(crate) client_seen: Vec<CpusSeen>,
    /// The same among the processes serving the paths (fronts, upstreams, their children).
    pub(crate) servers_seen: Vec<CpusSeen>,
    /// Sessions at which throughput is compared: 32, or the most measured.
    pub(crate) target_sessions: usize,
    /// Calls/s ÷ direct must be at least this.
    pub(crate) target_ratio: f64,
    pub(crate) throughput: Vec<PinnedThroughput>,
}

/// A CPU list as the kernel writes it (`1`, `1-3`) and how many threads or processes had it.
#[derive(Debug, Serialize)]
pub(crate) struct CpusSeen {
    pub(crate) cpus: String,
    pub(crate) count: usize,
}

/// One gateway path's pinned throughput against its direct baseline.
#[derive(Debug, Serialize)]
pub(crate) struct PinnedThroughput {
    pub(crate) path: String,
    pub(crate) payload: &'static str,
    pub(crate) calls_per_s: f64,
    pub(crate) baseline: String,
    pub(crate) baseline_calls_per_s: f64,
    pub(crate) ratio: f64,
    pub(crate) met: bool,
}

impl PinRecord {
    /// What the kernel says about the CPUs of this process's threads and of every process
    /// serving `targets` (and the shared HTTP fixture, `fixture`), now.
    pub(crate) fn read_back(pinning: &Pinning, targets: &[Target], fixture: Option<u32>) -> Self {
        let mut servers: Vec<u32> = fixture.into_iter().collect();
        for target in targets {
            for pid in target.server_processes() {
                if !servers.contains(&pid) {
                    servers.push(pid);
                }
            }
        }
        let seen = |lists: Vec<(String, usize)>| {
            lists.into_iter().map(|(cpus, count)| CpusSeen { cpus, count }).collect()
        };
        PinRecord {
            client_cpus: pinning.client.clone(),
            server_cpus: pinning.servers.clone(),
            client_seen: seen(pin::this_process_cpus()),
            servers_seen: seen(pin::cpus_of(&servers)),
            target_sessions: PINNED_SESSIONS,
            target_ratio: PINNED_TARGET,
            throughput: Vec::new(),
        }
    }

    /// Adds the throughput of every gateway row at 32 sessions (or the most measured).
    pub(crate) fn with_throughput(mut self, rows: &[Row], concurrency: &[usize]) -> Self {
        if !concurrency.contains(&PINNED_SESSIONS)
            && let Some(&most) = concurrency.iter().max()
        {
            self.target_sessions = most;
        }
        for row in rows.iter().filter(|r| r.concurrency == self.target_sessions) {
            let Some(direct) = &row.vs_direct else { continue };
            let ratio = direct.calls_per_s_ratio;
            self.throughput.push(PinnedThroughput {
                path: row.path.clone(),
                payload: row.payload,
                calls_per_s: row.summary.calls_per_s,
                baseline: direct.baseline.clone(),
                baseline_calls_per_s: row.summary.calls_per_s / ratio,
                ratio,
                met: ratio >= self.target_ratio,
            });
        }
        self
    }

    /// One line: the CPUs each side was given, and what the kernel listed for them.
    pub(crate) fn describe(&self) -> String {
        let seen = |planned: &[usize], seen: &[CpusSeen], what: &str| {
            let lists: Vec<String> = seen
                .iter()
                .map(|s| {
                    let as_planned = pin::parse_list(&s.cpus).as_deref() == Some(planned);
                    let warning = if as_planned { "" } else { ", NOT as planned" };
                    format!("{} for {} {what}{warning}", s.cpus, s.count)
                })
                .collect();
            if lists.is_empty() { "nothing read".to_owned() } else { lists.join("; ") }
        };
        format!(
            "pinned (--pin): load generator on {} (the kernel lists {}); gateways, upstreams \
             and peers on {} (the kernel lists {})",
            Pinning::describe(&self.client_cpus),
            seen(&self.client_cpus, &self.client_seen, "thread(s)"),
            Pinning::describe(&self.server_cpus),
            seen(&self.server_cpus, &self.servers_seen, "process(es)"),
        )
    }

    /// The throughput against the target, as a table.
    fn render(&self, out: &mut String) {
        let sessions = if self.target_sessions == PINNED_SESSIONS {
            format!("{PINNED_SESSIONS} sessions")
        } else {
            format!(
                "{} session(s) ({PINNED_SESSIONS} were not measured: the most that were)",
                self.target_sessions
            )
        };
        let _ = writeln!(
            out,
            "\npinned throughput at {sessions} ÷ direct (target: at least {:.1} × direct)",
            self.target_ratio
        );
        if self.throughput.is_empty() {
            let _ = writeln!(out, "no gateway path with its direct baseline was measured");
            return;
        }
        let mut lines = vec![
            ["path", "payload", "calls/s", "direct", "calls/s", "÷direct", "target"]
                .map(str::to_owned)
                .to_vec(),
        ];
        for t in &self.throughput {
            lines.push(vec![
                t.path.clone(),
                t.payload.to_owned(),
                format!("{:.0}", t.calls_per_s),
                t.baseline.clone(),
                format!("{:.0}", t.baseline_calls_per_s),
                format!("{:.2}", t.ratio),
                if t.met { "met" } else { "missed" }.to_owned(),
            ]);
        }
        render(out, &lines);
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
