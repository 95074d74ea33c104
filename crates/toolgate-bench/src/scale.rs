//! `toolgate-bench scale`: many tools, many upstreams, many idle sessions.
//!
//! - [`tools`]: 100 upstreams (the fixture on stdio, each listing 100 extra tools, toolgate
//!   exposing only those: 10,000 tools): start-up, `tools/list`, toolgate's memory, and a call
//!   to one tool among the 10,000 against the same call with one upstream of 100 tools;
//! - [`sessions`]: toolgate fronting one fixture, 1,000 and then (a fresh gateway) 10,000 idle
//!   MCP sessions opened on it (`initialize` + `initialized`, kept): toolgate's memory per
//!   session, and the time it took to open them.

mod sessions;
mod tools;

use std::path::PathBuf;

use anyhow::bail;
use serde::Serialize;

use crate::binaries::BinaryArgs;
use crate::portable::portable;
use crate::startup::report;

/// Options of `scale`.
#[derive(Debug, clap::Args)]
pub(crate) struct ScaleArgs {
    /// Upstream servers for the many-tools part.
    #[arg(long, default_value_t = 100, value_name = "N")]
    upstreams: usize,
    /// Tools each of those upstreams exposes.
    #[arg(long, default_value_t = 100, value_name = "N")]
    tools_per_upstream: usize,
    /// Timed `tools/list` requests (after the first).
    #[arg(long, default_value_t = 10, value_name = "N")]
    lists: usize,
    /// Timed calls on each side of the name-resolution comparison.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    calls: usize,
    /// Numbers of idle sessions for the memory-per-session part, comma-separated; each is
    /// measured on a fresh server [default: 1000,10000; with --quick: 20,50]
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    sessions: Vec<usize>,
    /// For CI: 10 upstreams × 100 tools, 3 lists, 50 calls, 20 and 50 sessions (--sessions
    /// still wins).
    #[arg(long)]
    quick: bool,
    /// Also write the results to FILE as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    #[command(flatten)]
    binaries: BinaryArgs,
}

/// What `--json` writes.
#[derive(Debug, Serialize)]
struct Report {
    benchmark: &'static str,
    toolgate: String,
    tools: tools::ToolsReport,
    sessions: sessions::SessionsReport,
}

pub(crate) async fn run(args: ScaleArgs) -> anyhow::Result<()> {
    tokio::select! {
        result = bench(args) => result,
        // Dropping the bench stops the gateways it runs (SIGTERM).
        () = crate::interrupted() => bail!("interrupted"),
    }
}

async fn bench(mut args: ScaleArgs) -> anyhow::Result<()> {
    if args.quick {
        (args.upstreams, args.tools_per_upstream) = (10, 100);
        (args.lists, args.calls) = (3, 50);
    }
    if args.sessions.is_empty() {
        args.sessions = if args.quick { vec![20, 50] } else { vec![1000, 10_000] };
    }
    args.sessions.sort_unstable();
    args.sessions.dedup();
    if args.upstreams == 0 || args.tools_per_upstream == 0 || args.sessions.contains(&0) {
        bail!("--upstreams, --tools-per-upstream and --sessions must be at least 1");
    }
    let binaries = args.binaries.resolve()?;
    let http = crate::startup::mcp_http::http_client()?;

    let tools_settings = tools::Settings {
        upstreams: args.upstreams,
        tools_per_upstream: args.tools_per_upstream,
        lists: args.lists,
        calls: args.calls,
    };
    let tools = tools::run(&binaries, &http, &tools_settings).await?;
    let sessions = sessions::run(&binaries, &args.sessions).await?;

    println!("{}", tools::render(&tools));
    println!("{}", sessions::render(&sessions));
    let report = Report {
        benchmark: "scale",
        toolgate: portable(&binaries.toolgate.display().to_string()),
        tools,
        sessions,
    };
    if let Some(path) = &args.json {
        report::write_json(path, &report)?;
        eprintln!("scale: wrote {}", path.display());
    }
    Ok(())
}

/// KiB as MiB, for the tables.
fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}
