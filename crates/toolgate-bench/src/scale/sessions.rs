//! Memory per idle downstream session: N MCP sessions opened one after another
//! (`initialize` + `notifications/initialized`, no standalone GET stream) and kept, the
//! server's RSS read before and after. Measured twice: on toolgate (HTTP) fronting one
//! fixture on stdio, and, as the baseline, on the fixture itself served on HTTP by rmcp's
//! streamable HTTP server, which toolgate's HTTP front is built on too.
//!
//! rmcp keeps a session (its handler, a worker task and channels) until the client deletes
//! it or it has been idle for 5 minutes; the sessions here are opened well within that, and
//! the first and last are pinged at the end to show they were still alive when the memory was
//! read.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde::Serialize;
use serde_json::json;

use super::mib;
use crate::binaries::Binaries;
use crate::proc_stats;
use crate::startup::gateway::{self, Gateway, HttpFixture, Upstream};
use crate::startup::mcp_http::Session;
use crate::startup::report::{Table, ms, thousands};

const PATIENCE: Duration = Duration::from_secs(60);

#[derive(Debug, Serialize)]
pub(super) struct SessionsReport {
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
    /// Mean time to open one session (both requests).
    open_ms_per_session: f64,
    /// RSS as the sessions were opened.
    checkpoints: Vec<Checkpoint>,
}

#[derive(Debug, Serialize)]
struct Checkpoint {
    sessions: usize,
    rss_kib: u64,
}

pub(super) async fn run(
    binaries: &Binaries,
    http: &reqwest::Client,
    count: usize,
) -> anyhow::Result<SessionsReport> {
    eprintln!("scale: opening {count} idle sessions on the fixture, directly ...");
    let fixture = HttpFixture::start(&binaries.fixture, PATIENCE).await?;
    let direct = measure(http, fixture.url(), fixture.pid(), count).await?;
    fixture.stop().await?;

    eprintln!("scale: opening {count} idle sessions on toolgate ...");
    let dir = tempfile::tempdir().context("cannot make a temporary folder")?;
    let config = gateway::write_config(dir.path(), &binaries.fixture, &[Upstream::new("fx")])?;
    let gateway = Gateway::start(&binaries.toolgate, &config, PATIENCE).await?;
    let through_toolgate = measure(http, gateway.url(), gateway.pid(), count).await?;
    gateway.stop().await?;
    Ok(SessionsReport { sessions: count, toolgate: through_toolgate, direct })
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
    let open_ms_per_session = ms(started.elapsed()) / count as f64;
    let rss_kib_after = rss()?;
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
        open_ms_per_session,
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
        "open (per session)",
    ]);
    let sides = [
        ("fixture on HTTP (rmcp), direct", &report.direct),
        ("toolgate on HTTP → fixture on stdio", &report.toolgate),
    ];
    for (server, measurement) in sides {
        table.row(vec![
            server.to_owned(),
            thousands(report.sessions as u64),
            mib(measurement.rss_kib_before),
            mib(measurement.rss_kib_after),
            format!("{:.1} KiB", measurement.kib_per_session),
            format!("{:.2} ms", measurement.open_ms_per_session),
        ]);
    }
    let growth: Vec<String> = report
        .toolgate
        .checkpoints
        .iter()
        .map(|c| format!("{} → {}", c.sessions, mib(c.rss_kib)))
        .collect();
    let ratio = if report.direct.kib_per_session > 0.0 {
        format!("{:.2}", report.toolgate.kib_per_session / report.direct.kib_per_session)
    } else {
        "-".to_owned()
    };
    format!(
        "Idle downstream sessions\n\n{table}\ntoolgate ÷ direct, per session: {ratio}. toolgate's \
         RSS as they opened: {}\n",
        growth.join(", ")
    )
}
