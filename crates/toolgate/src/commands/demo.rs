//! `toolgate demo-server` (hidden): the built-in demo MCP server, started by toolgate itself
//! as its only upstream when no config exists. Also serves it over HTTP or legacy SSE, which
//! the integration tests use as real upstreams.

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use tokio_util::sync::CancellationToken;
use toolgate_testkit::FixtureOptions;

use crate::GlobalArgs;

#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Transport to serve.
    #[arg(long, value_enum, default_value_t = DemoTransport::Stdio)]
    transport: DemoTransport,
    /// Port for http/sse on 127.0.0.1 (0 = any free port; the URL is printed on stdout).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Wait this many milliseconds before reading the handshake (stdio) or accepting
    /// connections (http, sse): a slow server, for start-up benchmarks.
    #[arg(long, value_name = "MS", default_value_t = 0, hide = true)]
    startup_delay: u64,
    /// List this many more trivial tools (`t0000`, `t0001`, ...), for scale benchmarks.
    #[arg(long, value_name = "N", default_value_t = 0, hide = true)]
    extra_tools: usize,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum DemoTransport {
    Stdio,
    Http,
    Sse,
}

pub(crate) async fn run(global: &GlobalArgs, args: DemoArgs) -> anyhow::Result<ExitCode> {
    crate::setup::init_logging(global, "warn");
    let options = FixtureOptions {
        startup_delay: Duration::from_millis(args.startup_delay),
        extra_tools: args.extra_tools,
        ..FixtureOptions::default()
    };
    if let DemoTransport::Stdio = args.transport {
        toolgate_testkit::serve_stdio(options).await?;
        return Ok(ExitCode::SUCCESS);
    }
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port))
        .await
        .with_context(|| format!("cannot listen on 127.0.0.1:{}", args.port))?;
    let address = listener.local_addr()?;
    let shutdown = CancellationToken::new();
    let signal = shutdown.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        signal.cancel();
    });
    let path = if let DemoTransport::Http = args.transport { "mcp" } else { "sse" };
    let mut out = std::io::stdout().lock();
    writeln!(out, "listening http://{address}/{path}")?;
    out.flush()?;
    drop(out);
    match args.transport {
        DemoTransport::Http => toolgate_testkit::serve_http(listener, shutdown, options).await?,
        _ => toolgate_testkit::serve_sse(listener, shutdown, options).await?,
    }
    Ok(ExitCode::SUCCESS)
}
