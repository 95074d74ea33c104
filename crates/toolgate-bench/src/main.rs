//! `toolgate-bench`: what a call through toolgate costs (see docs/benchmarks.md).
//!
//! - `latency`: the load generator; direct calls, toolgate with each pipeline, and peer
//!   gateways, side by side and interleaved;
//! - `startup`: time until toolgate is ready with 1, 5 and 10 upstreams;
//! - `scale`: 10,000 tools across 100 upstreams, and idle sessions;
//! - `upstream`: toolgate's HTTP upstream client alone against servers on each SDK, with
//!   connections kept alive and with one connection per call;
//! - `responses`: toolgate's `/v1/responses` against the same fake model called directly,
//!   with and without one hosted MCP tool call;
//! - `observability`: what metrics and tracing (sampling 1 and 0.01) add to a tool call;
//! - `corpus`: realistic tool results from real MCP servers and test runners;
//! - `tokens`: what each transform saves on that corpus, in tokens (docs/token-economy.md).

mod binaries;
mod corpus;
mod latency;
mod observability;
mod portable;
mod proc_stats;
mod replicas;
mod responses;
mod scale;
mod startup;
mod tokens;
mod upstream;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// toolgate's benchmark harness.
#[derive(Debug, Parser)]
#[command(name = "toolgate-bench", max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Latency and throughput of one tool call, direct vs through toolgate vs peers.
    Latency(latency::LatencyArgs),
    /// Time until toolgate is ready with 1, 5 and 10 upstream servers.
    Startup(startup::StartupArgs),
    /// Many tools, many upstreams, many idle sessions.
    Scale(scale::ScaleArgs),
    /// toolgate's HTTP upstream client against servers built on rmcp and the TypeScript and
    /// Python SDKs, with connections kept alive (`pool`) and one per call (`pool = false`).
    Upstream(upstream::UpstreamArgs),
    /// toolgate's `/v1/responses` against the same fake model called directly, with and
    /// without one hosted MCP tool call.
    Responses(responses::ResponsesArgs),
    /// What metrics (`[gateway] metrics`) and tracing (`[telemetry]`, sampling 1 and 0.01,
    /// to a local OTLP sink) add to a tool call through toolgate.
    Observability(observability::ObservabilityArgs),
    /// toolgate as 1, 2 and 4 replicas behind HAProxy (and 2 sharing a Redis) against one
    /// replica called directly.
    Replicas(replicas::ReplicasArgs),
    /// Realistic tool results from real MCP servers and test runners, one JSON file each.
    Corpus(corpus::CorpusArgs),
    /// What each transform saves, in tokens, on the corpus (docs/token-economy.md).
    Tokens(tokens::TokensArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("toolgate-bench: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Latency(args) => latency::run(args).await,
            Command::Startup(args) => startup::run(args).await,
            Command::Scale(args) => scale::run(args).await,
            Command::Upstream(args) => upstream::run(args).await,
            Command::Responses(args) => responses::run(args).await,
            Command::Observability(args) => observability::run(args).await,
            Command::Replicas(args) => replicas::run(args).await,
            Command::Corpus(args) => corpus::run(args).await,
            Command::Tokens(args) => tokens::run(args).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("toolgate-bench: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
pub(crate) async fn interrupted() {
    use tokio::signal::unix::{SignalKind, signal};
    let terminate = async {
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                terminate.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}
