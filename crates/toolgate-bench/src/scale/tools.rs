//! Many tools across many upstreams: 100 fixtures on stdio, each listing 100 extra tools
//! (`t0000`..`t0099`) that toolgate alone exposes (`allow_tools = ["t[0-9]*"]`), so 10,000
//! tools in all.
//!
//! Measured: time to `serving MCP at`; the first `tools/list` and then `--lists` more (to the
//! answer's last byte); toolgate's RSS after start and after listing; and the cost of finding
//! one tool among 10,000: the same call (`<upstream>__t0050`, answered by the fixture with a
//! fixed text) through this gateway and through a second one with a single upstream of 100
//! tools, alternating between the two so that drift hits both alike.

use std::time::Duration;

use anyhow::{Context as _, bail};
use serde::Serialize;

use super::mib;
use crate::binaries::Binaries;
use crate::proc_stats;
use crate::startup::gateway::{self, Gateway, Upstream};
use crate::startup::mcp_http::Session;
use crate::startup::report::{self, Summary, Table, ms, thousands};
use crate::startup::upstream_names;

/// How long a start may take (100 upstreams on 2 cores take a few seconds).
const PATIENCE: Duration = Duration::from_secs(180);

/// What to measure.
#[derive(Debug)]
pub(super) struct Settings {
    pub(super) upstreams: usize,
    pub(super) tools_per_upstream: usize,
    pub(super) lists: usize,
    pub(super) calls: usize,
}

#[derive(Debug, Serialize)]
pub(super) struct ToolsReport {
    upstreams: usize,
    tools_per_upstream: usize,
    tools_exposed: usize,
    /// Spawn to `serving MCP at`.
    serving_ms: f64,
    /// CPU time toolgate had used by then.
    cpu_ms_at_serving: f64,
    first_list_ms: f64,
    /// Timed `tools/list` requests after the first.
    lists: usize,
    list_ms: Summary,
    /// toolgate's CPU time while the timed `tools/list`s ran, per list: their cost plus
    /// whatever else it did meanwhile (in 10 ms clock ticks, so coarse).
    cpu_ms_per_list: f64,
    list_bytes: usize,
    rss_kib_after_start: u64,
    rss_kib_after_listing: u64,
    peak_rss_kib: u64,
    /// The gateway with one upstream of `tools_per_upstream` tools, after listing.
    one_upstream_rss_kib: u64,
    /// The call through the gateway with one upstream.
    call_one_upstream: CallStats,
    /// The same call through the gateway with every upstream.
    call_all_upstreams: CallStats,
    /// Median of all-upstreams calls minus median of one-upstream calls.
    resolution_cost_us: f64,
    /// The same with the fastest calls, which no stall reached.
    resolution_cost_min_us: f64,
}

/// Timings of one tool's calls, in µs.
#[derive(Debug, Serialize)]
struct CallStats {
    tool: String,
    calls: usize,
    median_us: f64,
    p90_us: f64,
    min_us: f64,
    max_us: f64,
}

impl CallStats {
    fn of(tool: &str, samples: &[f64]) -> CallStats {
        let summary = Summary::of(samples);
        CallStats {
            tool: tool.to_owned(),
            calls: samples.len(),
            median_us: summary.median,
            p90_us: report::quantile(samples, 0.9),
            min_us: summary.min,
            max_us: summary.max,
        }
    }
}

pub(super) async fn run(
    binaries: &Binaries,
    http: &reqwest::Client,
    settings: &Settings,
) -> anyhow::Result<ToolsReport> {
    let Settings { upstreams, tools_per_upstream, lists, calls } = *settings;
    let expected = upstreams * tools_per_upstream;
    let dir = tempfile::tempdir().context("cannot make a temporary folder")?;
    let names = upstream_names(upstreams);
    let upstream = |name: &str| Upstream {
        extra_tools: tools_per_upstream,
        only_extra_tools: true,
        ..Upstream::new(name)
    };
    let all: Vec<Upstream> = names.iter().map(|name| upstream(name)).collect();
    let all_dir = dir.path().join("all");
    let one_dir = dir.path().join("one");
    for folder in [&all_dir, &one_dir] {
        std::fs::create_dir(folder).context("cannot make a temporary folder")?;
    }
    let all_config = gateway::write_config(&all_dir, &binaries.fixture, &all)?;
    let one_config = gateway::write_config(&one_dir, &binaries.fixture, &[upstream(&names[0])])?;

    eprintln!(
        "scale: starting toolgate with {upstreams} upstreams × {tools_per_upstream} tools ..."
    );
    let big = Gateway::start(&binaries.toolgate, &all_config, PATIENCE).await?;
    let serving_ms = ms(big.serving_after());
    let cpu_ms_at_serving = proc_stats::cpu_time(big.pid()).map(ms).unwrap_or_default();
    let rss_kib_after_start = rss(&big)?;
    let mut session = Session::open(http, big.url()).await?;
    let first = session.list_tools().await?;
    if first.value.len() != expected {
        bail!("tools/list lists {} tools, not {expected}", first.value.len());
    }
    let mut list_samples = Vec::with_capacity(lists);
    let cpu_before = cpu(&big)?;
    for _ in 0..lists {
        list_samples.push(ms(session.list_tools().await?.elapsed));
    }
    let cpu_ms_per_list = ms(cpu(&big)?.saturating_sub(cpu_before)) / lists.max(1) as f64;
    let rss_kib_after_listing = rss(&big)?;
    let peak_rss_kib = proc_stats::peak_rss_kib(big.pid()).unwrap_or_default();
    eprintln!(
        "scale: serving after {serving_ms:.0} ms; tools/list of {expected} tools: first \
         {:.1} ms, then median {:.1} ms",
        ms(first.elapsed),
        report::median(&list_samples)
    );

    let small = Gateway::start(&binaries.toolgate, &one_config, PATIENCE).await?;
    let mut small_session = Session::open(http, small.url()).await?;
    let listed = small_session.list_tools().await?.value.len();
    if listed != tools_per_upstream {
        bail!("the one-upstream gateway lists {listed} tools, not {tools_per_upstream}");
    }
    let one_upstream_rss_kib = rss(&small)?;

    let tool = gateway::extra_tool(tools_per_upstream / 2);
    let in_all = format!("{}__{tool}", names[upstreams / 2]);
    let in_one = format!("{}__{tool}", names[0]);
    let answer = format!("{tool} called");
    // Warm-up: connections, allocator, caches.
    for _ in 0..(calls / 10).max(5) {
        call(&mut session, &in_all, &answer).await?;
        call(&mut small_session, &in_one, &answer).await?;
    }
    let (mut all_us, mut one_us) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
    for i in 0..calls {
        // Alternate which goes first, so neither always follows the other.
        if i.is_multiple_of(2) {
            all_us.push(call(&mut session, &in_all, &answer).await?);
            one_us.push(call(&mut small_session, &in_one, &answer).await?);
        } else {
            one_us.push(call(&mut small_session, &in_one, &answer).await?);
            all_us.push(call(&mut session, &in_all, &answer).await?);
        }
    }
    small.stop().await?;
    big.stop().await?;

    let call_all_upstreams = CallStats::of(&in_all, &all_us);
    let call_one_upstream = CallStats::of(&in_one, &one_us);
    let resolution_cost_us = call_all_upstreams.median_us - call_one_upstream.median_us;
    let resolution_cost_min_us = call_all_upstreams.min_us - call_one_upstream.min_us;
    Ok(ToolsReport {
        upstreams,
        tools_per_upstream,
        tools_exposed: expected,
        serving_ms,
        cpu_ms_at_serving,
        first_list_ms: ms(first.elapsed),
        lists,
        list_ms: Summary::of(&list_samples),
        cpu_ms_per_list,
        list_bytes: first.bytes,
        rss_kib_after_start,
        rss_kib_after_listing,
        peak_rss_kib,
        one_upstream_rss_kib,
        call_one_upstream,
        call_all_upstreams,
        resolution_cost_us,
        resolution_cost_min_us,
    })
}

/// One call; its time in µs.
async fn call(session: &mut Session, tool: &str, answer: &str) -> anyhow::Result<f64> {
    let result = session.call_tool(tool).await?;
    if result.value != answer {
        bail!("{tool} answered {:?}, not {answer:?}", result.value);
    }
    Ok(result.elapsed.as_secs_f64() * 1e6)
}

fn cpu(gateway: &Gateway) -> anyhow::Result<Duration> {
    proc_stats::cpu_time(gateway.pid()).context("toolgate is gone: cannot read its CPU time")
}

fn rss(gateway: &Gateway) -> anyhow::Result<u64> {
    proc_stats::rss_kib(gateway.pid()).context("toolgate is gone: cannot read its memory")
}

pub(super) fn render(report: &ToolsReport) -> String {
    let calls = |stats: &CallStats| {
        format!(
            "{:.0} / {:.0} / {:.0} µs (min / median / p90 of {})",
            stats.min_us, stats.median_us, stats.p90_us, stats.calls
        )
    };
    let mut table = Table::new(&["measure", "value"]);
    let mut row = |measure: &str, value: String| table.row(vec![measure.to_owned(), value]);
    row(
        "tools exposed",
        format!(
            "{} ({} upstreams × {} tools)",
            thousands(report.tools_exposed as u64),
            report.upstreams,
            report.tools_per_upstream
        ),
    );
    row(
        "start-up to `serving MCP at`",
        format!("{:.0} ms (toolgate CPU {:.0} ms)", report.serving_ms, report.cpu_ms_at_serving),
    );
    row("first tools/list", format!("{:.1} ms", report.first_list_ms));
    row("toolgate CPU while listing, per tools/list", format!("{:.1} ms", report.cpu_ms_per_list));
    row(
        "tools/list, min / median / max",
        format!(
            "{} ms ({} KiB, {} runs)",
            report.list_ms.show(1),
            report.list_bytes / 1024,
            report.lists
        ),
    );
    row("toolgate RSS after start", mib(report.rss_kib_after_start));
    row("toolgate RSS after listing", mib(report.rss_kib_after_listing));
    row("toolgate peak RSS", mib(report.peak_rss_kib));
    row(
        &format!("toolgate RSS with 1 upstream × {} tools", report.tools_per_upstream),
        mib(report.one_upstream_rss_kib),
    );
    row(
        &format!("call, 1 upstream × {} tools", report.tools_per_upstream),
        calls(&report.call_one_upstream),
    );
    row(
        &format!("call, {} tools", thousands(report.tools_exposed as u64)),
        calls(&report.call_all_upstreams),
    );
    row(
        "name resolution cost per call (difference of medians; of minimums)",
        format!("{:.0} µs; {:.0} µs", report.resolution_cost_us, report.resolution_cost_min_us),
    );
    format!(
        "{} tools across {} upstreams (fixture on stdio, HTTP front)\n\n{table}",
        thousands(report.tools_exposed as u64),
        report.upstreams
    )
}
