//! Memory per idle downstream session: N MCP sessions opened one after another
//! (`initialize` + `notifications/initialized`, no standalone GET stream) and kept, the
//! server's RSS read before and after. Measured for each N (1,000 and 10,000 by default), each
//! on fresh processes, twice: on toolgate (HTTP) fronting one fixture on stdio, and, as the
//! baseline, on the fixture itself served on HTTP by rmcp's streamable HTTP server.
//!
//! toolgate refuses sessions beyond `[gateway] max_sessions` (1,000 by default) and closes
//! them after `session_idle`; the config written here raises both above what is measured.
//! rmcp keeps a session (its handler, a worker task and channels) until the client deletes it
//! or it has been idle for 5 minutes; the sessions here are opened well within that, and the
//! first and last are pinged at the end to show they were still alive when the memory was
//! read.
//!
//! The sessions share a few keep-alive HTTP/1.1 connections (one client, requests one after
//! another), not a socket each: an idle session is state on the server, not a connection, and
//! 10,000 sockets would measure the kernel and the file limits instead. The server's open
//! files are reported to show it. The bench still raises its own soft limit of open files
//! (inherited by the servers it starts) when it is below what the largest count could need.

use std::time::Duration;

use tokio::time::Instant;

use anyhow::Context as _;
use nix::sys::resource::{Resource, getrlimit, setrlimit};
use serde::Serialize;
use serde_json::json;

use super::mib;
use crate::binaries::Binaries;
use crate::proc_stats;
use crate::startup::gateway::{self, Gateway, HttpFixture, Upstream};
use crate::startup::mcp_http::Session;
use crate::startup::report::{Table, ms, thousands};

const PATIENCE: Duration = Duration::from_secs(60);
/// The target: an idle 2025-11-25 session on toolgate costs at most this, at every count.
const TARGET_KIB_PER_SESSION: f64 = 8.0;
/// The most HTTP connections the sessions are opened over (kept alive between requests).
const CONNECTIONS: usize = 4;
/// `max_sessions` is the count plus this (the warm-up session, and room to spare).
const SESSION_MARGIN: usize = 100;
/// Open files the bench keeps for itself beyond one per session, when it raises its limit.
const SPARE_FILES: u64 = 1024;

#[derive(Debug, Serialize)]
pub(super) struct SessionsReport {
    /// The target, KiB per idle session on toolgate.
    target_kib_per_session: f64,
    /// The HTTP connections the sessions shared, at most.
    connections: usize,
    /// The soft limit of open files of the bench and of the servers it started.
    open_files_limit: u64,
    /// One per number of sessions, each on fresh processes.
    runs: Vec<SessionsRun>,
}

/// One number of sessions, on both servers.
#[derive(Debug, Serialize)]
struct SessionsRun {
    sessions: usize,
    /// toolgate on HTTP, one fixture upstream on stdio.
    toolgate: Measurement,
    /// The fixture on HTTP, no gateway.
    direct: Measurement,
}

/// One server's memory as sessions were opened on it.
#[derive(Debug, Serialize)]
struct Measurement {
    /// After one warm-up session (opened, listed, kept).
    rss_kib_before: u64,
    rss_kib_after: u64,
    kib_per_session: f64,
    /// Time to open all of them, one after another (both requests each).
    open_s: f64,
    /// Mean time to open one session.
    open_ms_per_session: f64,
    /// Files (sockets included) the server had open once they were all open.
    open_files_after: Option<usize>,
    /// RSS as the sessions were opened.
    checkpoints: Vec<Checkpoint>,
}

#[derive(Debug, Serialize)]
struct Checkpoint {
    sessions: usize,
    rss_kib: u64,
}

pub(super) async fn run(binaries: &Binaries, counts: &[usize]) -> anyhow::Result<SessionsReport> {
    let most = counts.iter().copied().max().unwrap_or(0) as u64;
    let open_files_limit = raise_open_files(most + SPARE_FILES)?;
    let http = pooled_client()?;
    let mut runs = Vec::with_capacity(counts.len());
    for &count in counts {
        let shown = thousands(count as u64);
        eprintln!("scale: opening {shown} idle sessions on the fixture, directly ...");
        let fixture = HttpFixture::start(&binaries.fixture, PATIENCE).await?;
        let direct = measure(&http, fixture.url(), fixture.pid(), count).await?;
        fixture.stop().await?;

        eprintln!("scale: opening {shown} idle sessions on toolgate ...");
        let dir = tempfile::tempdir().context("cannot make a temporary folder")?;
        let config = gateway::write_config_with(
            dir.path(),
            &binaries.fixture,
            &[Upstream::new("fx")],
            gateway_settings(count),
        )?;
        let gateway = Gateway::start(&binaries.toolgate, &config, PATIENCE).await?;
        let through_toolgate = measure(&http, gateway.url(), gateway.pid(), count).await?;
        gateway.stop().await?;
        runs.push(SessionsRun { sessions: count, toolgate: through_toolgate, direct });
    }
    Ok(SessionsReport {
        target_kib_per_session: TARGET_KIB_PER_SESSION,
        connections: CONNECTIONS,
        open_files_limit,
        runs,
    })
}

/// `[gateway]` for `count` sessions: all of them allowed, none closed for idling before the
/// memory is read.
fn gateway_settings(count: usize) -> toml::Table {
    let mut gateway = toml::Table::new();
    let max_sessions = i64::try_from(count + SESSION_MARGIN).unwrap_or(i64::MAX);
    gateway.insert("max_sessions".into(), max_sessions.into());
    gateway.insert("session_idle".into(), "1h".into());
    // Every session here comes from 127.0.0.1.
    gateway.insert("max_sessions_per_client".into(), max_sessions.into());
    gateway
}

/// One HTTP client for every session: requests go one after another, so they reuse a kept
/// connection; the pool holds at most [`CONNECTIONS`] idle ones.
fn pooled_client() -> anyhow::Result<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .no_proxy()
        .http1_only()
        .pool_max_idle_per_host(CONNECTIONS)
        .pool_idle_timeout(None)
        .build()
        .context("cannot build an HTTP client")
}

/// Raises this process's soft limit of open files to `wanted` (at most the hard limit) when it
/// is lower; servers started afterwards inherit it. Returns the soft limit now.
fn raise_open_files(wanted: u64) -> anyhow::Result<u64> {
    let (soft, hard) =
        getrlimit(Resource::RLIMIT_NOFILE).context("cannot read the limit of open files")?;
    if soft >= wanted {
        return Ok(soft);
    }
    let raised = wanted.min(hard);
    setrlimit(Resource::RLIMIT_NOFILE, raised, hard)
        .with_context(|| format!("cannot raise the limit of open files from {soft} to {raised}"))?;
    eprintln!("scale: limit of open files raised from {soft} to {raised} (hard limit {hard})");
    Ok(raised)
}

/// Opens `count` sessions on the server at `url` (process `pid`) and keeps them until its
/// memory is read.
async fn measure(
    http: &reqwest::Client,
    url: &str,
    pid: u32,
    count: usize,
) -> anyhow::Result<Measurement> {
    let rss = || proc_stats::rss_kib(pid).context("the server is gone: cannot read its memory");
    let mut warm_up = Session::open(http, url).await?;
    warm_up.list_tools().await?;
    let rss_kib_before = rss()?;
    let mut checkpoints = vec![Checkpoint { sessions: 0, rss_kib: rss_kib_before }];
    let every = (count / 4).max(1);
    let mut sessions = Vec::with_capacity(count);
    let started = Instant::now();
    for opened in 1..=count {
        let session = Session::open(http, url)
            .await
            .with_context(|| format!("opening session {opened} of {count}"))?;
        sessions.push(session);
        if opened.is_multiple_of(every) || opened == count {
            checkpoints.push(Checkpoint { sessions: opened, rss_kib: rss()? });
        }
    }
    let open = started.elapsed();
    let rss_kib_after = rss()?;
    let open_files_after = proc_stats::open_files(pid);
    checkpoints.dedup_by_key(|checkpoint| checkpoint.sessions);
    for index in [0, count - 1] {
        let session = &mut sessions[index];
        let id = session.id().to_owned();
        session.request("ping", json!({})).await.with_context(|| format!("session {id}"))?;
    }
    let kib_per_session = rss_kib_after.saturating_sub(rss_kib_before) as f64 / count as f64;
    Ok(Measurement {
        rss_kib_before,
        rss_kib_after,
        kib_per_session,
        open_s: open.as_secs_f64(),
        open_ms_per_session: ms(open) / count as f64,
        open_files_after,
        checkpoints,
    })
}

pub(super) fn render(report: &SessionsReport) -> String {
    let mut table = Table::new(&[
        "server",
        "idle sessions",
        "RSS before",
        "RSS after",
        "per session",
        "open (all)",
        "open (per session)",
        "open files after",
    ]);
    for run in &report.runs {
        let sides = [
            ("fixture on HTTP (rmcp), direct", &run.direct),
            ("toolgate on HTTP → fixture on stdio", &run.toolgate),
        ];
        for (server, measurement) in sides {
            table.row(vec![
                server.to_owned(),
                thousands(run.sessions as u64),
                mib(measurement.rss_kib_before),
                mib(measurement.rss_kib_after),
                format!("{:.1} KiB", measurement.kib_per_session),
                format!("{:.1} s", measurement.open_s),
                format!("{:.2} ms", measurement.open_ms_per_session),
                measurement.open_files_after.map_or("-".to_owned(), |n| n.to_string()),
            ]);
        }
    }
    let target: Vec<String> = report
        .runs
        .iter()
        .map(|run| {
            let kib = run.toolgate.kib_per_session;
            let status = if kib <= report.target_kib_per_session { "met" } else { "missed" };
            format!("{} sessions {kib:.1} KiB ({status})", thousands(run.sessions as u64))
        })
        .collect();
    let ratios: Vec<String> = report
        .runs
        .iter()
        .map(|run| {
            let ratio = if run.direct.kib_per_session > 0.0 {
                format!("{:.2}", run.toolgate.kib_per_session / run.direct.kib_per_session)
            } else {
                "-".to_owned()
            };
            format!("{}: {ratio}", thousands(run.sessions as u64))
        })
        .collect();
    let growth: Vec<String> = report
        .runs
        .iter()
        .map(|run| {
            let steps: Vec<String> = run
                .toolgate
                .checkpoints
                .iter()
                .map(|c| format!("{} → {}", thousands(c.sessions as u64), mib(c.rss_kib)))
                .collect();
            format!("{} sessions: {}", thousands(run.sessions as u64), steps.join(", "))
        })
        .collect();
    format!(
        "Idle downstream sessions (2025-11-25 handshake; opened one after another over at most \
         {} keep-alive HTTP/1.1 connections; open files limit {})\n\n{table}\n\
         target: an idle session on toolgate at most {} KiB: {}.\n\
         toolgate ÷ direct, per session: {}.\n\
         toolgate's RSS as they opened: {}\n",
        report.connections,
        report.open_files_limit,
        report.target_kib_per_session,
        target.join(", "),
        ratios.join("; "),
        growth.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gateway_allows_every_session_for_an_hour() {
        let gateway = gateway_settings(10_000);
        assert_eq!(gateway["max_sessions"].as_integer(), Some(10_100));
        assert_eq!(gateway["max_sessions_per_client"].as_integer(), Some(10_100));
        assert_eq!(gateway["session_idle"].as_str(), Some("1h"));
    }
}
