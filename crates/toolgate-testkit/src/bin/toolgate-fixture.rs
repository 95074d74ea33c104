//! `toolgate-fixture`: the fixture MCP server on stdio (the default), streamable HTTP or
//! legacy SSE. toolgate's integration tests and benchmarks run it as their upstream.
//!
//! For http and sse it binds, prints exactly one line, `listening http://HOST:PORT/mcp` (or
//! `/sse`), to stdout, and serves until SIGTERM or ctrl-c. Logs go to stderr (`RUST_LOG`,
//! default `warn`).
//!
//! `toolgate-fixture fake-llm` serves the fake LLM provider instead (`toolgate_testkit::fake_llm`)
//! and prints `listening http://HOST:PORT/v1`, the base URL an OpenAI client takes (Chat
//! Completions, Responses); an Anthropic client takes it without the `/v1` (its SDKs append
//! `/v1/messages`). What it received is at `GET /fake/requests`. `--script FILE` answers from
//! a JSON array of turns (the serde shape of `toolgate_testkit::fake_llm::Turn`).

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use tokio_util::sync::CancellationToken;
use toolgate_testkit::{FixtureOptions, FixtureTransport};

/// How long exiting waits for tasks still blocked (a stdin read, say).
const SHUTDOWN_GRACE: Duration = Duration::from_millis(200);

/// The toolgate fixture MCP server.
#[derive(Debug, Parser)]
#[command(version, about, args_conflicts_with_subcommands = true)]
struct Args {
    /// Serve something other than the MCP fixture.
    #[command(subcommand)]
    command: Option<Command>,
    /// Transport to serve.
    #[arg(long, value_enum, default_value_t = FixtureTransport::Stdio)]
    transport: FixtureTransport,
    /// Port to listen on (http, sse); 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Address to listen on (http, sse).
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Wait this long before accepting connections or reading the handshake (`500ms`, `2s`).
    #[arg(long, value_parser = toolgate_core::duration::parse, default_value = "0ms")]
    startup_delay: Duration,
    /// `serverInfo.name` to report.
    #[arg(long, default_value = "toolgate-fixture")]
    name: String,
    /// List this many more trivial tools (`t0000`, `t0001`, ...), for scale benchmarks.
    #[arg(long, value_name = "N", default_value_t = 0)]
    extra_tools: usize,
    /// Also list a tool NAME described by TEXT, without arguments (repeatable), for tests of
    /// the poisoning scan.
    #[arg(long = "tool", value_name = "NAME=TEXT", value_parser = described_tool)]
    tools: Vec<(String, String)>,
    /// Also list `weather`, as it is at STAGE (0 to 3), and `rug_pull`, which changes it at
    /// runtime: a server that changes its promises, for integrity tests.
    #[arg(long, value_name = "STAGE", value_parser = clap::value_parser!(u8).range(0..=3))]
    rug_pull: Option<u8>,
    /// http, sse: leave Nagle's algorithm on (no TCP_NODELAY), as a plain `axum::serve` does
    /// and so most rmcp servers: small writes wait for the client's ACK.
    #[arg(long)]
    nagle: bool,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// A fake LLM provider (OpenAI Chat Completions at /v1/chat/completions, Responses at
    /// /v1/responses, Anthropic Messages at /v1/messages), recording every request at
    /// GET /fake/requests.
    FakeLlm(FakeLlmArgs),
}

#[derive(Debug, clap::Args)]
struct FakeLlmArgs {
    /// Port to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Answer with TEXT; repeated, the replies come in order and the last one repeats.
    /// Without it, the reply says how long the last user message was.
    #[arg(long, value_name = "TEXT")]
    reply: Vec<String>,
    /// Answer from FILE, a JSON array of turns, one per request in order (then a 500
    /// `script_exhausted`). A turn: `{"text", "reasoning", "tool_calls": [{"name",
    /// "arguments", "id"}], "usage": {"input_tokens", "output_tokens"}, "finish", "quirks",
    /// "delay_ms"}` (all optional), `{"error": {"status", "message", "type", "code",
    /// "retry_after"}}` or `{"raw": {"status", "content_type", "body"}}`.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["reply", "fail"])]
    script: Option<std::path::PathBuf>,
    /// Fail every request with this HTTP status and the provider's error body.
    #[arg(long, value_name = "STATUS", conflicts_with = "reply",
          value_parser = clap::value_parser!(u16).range(400..=599))]
    fail: Option<u16>,
    /// Wait this long before every answer (`500ms`, `30s`); a script's turns without a
    /// `delay_ms` of their own too.
    #[arg(long, value_parser = toolgate_core::duration::parse, default_value = "0ms")]
    delay: Duration,
    /// Require `Authorization: Bearer KEY` (Anthropic: `x-api-key: KEY`); other requests are
    /// answered 401.
    #[arg(long, value_name = "KEY")]
    api_key: Option<String>,
}

/// `--tool NAME=TEXT`.
fn described_tool(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, description)) if !name.is_empty() => {
            Ok((name.to_owned(), description.to_owned()))
        }
        _ => Err(format!("{text:?} is not NAME=TEXT")),
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter(filter).init();

    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            tracing::error!(%error, "failed to start the tokio runtime");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(args));
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!("{error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    if let Some(Command::FakeLlm(fake)) = args.command {
        return fake_llm(fake).await;
    }
    let opts = FixtureOptions {
        name: args.name,
        startup_delay: args.startup_delay,
        extra_tools: args.extra_tools,
        described_tools: args.tools,
        rug_pull: args.rug_pull,
        nagle: args.nagle,
        ..FixtureOptions::default()
    };
    let shutdown = CancellationToken::new();
    tokio::spawn({
        let shutdown = shutdown.clone();
        async move {
            terminated().await;
            shutdown.cancel();
        }
    });

    let Some(path) = args.transport.path() else {
        return tokio::select! {
            result = toolgate_testkit::serve_stdio(opts) => result,
            () = shutdown.cancelled() => Ok(()),
        };
    };
    let listener = tokio::net::TcpListener::bind((args.host.as_str(), args.port))
        .await
        .with_context(|| format!("failed to bind {}:{}", args.host, args.port))?;
    let addr = listener.local_addr().context("failed to read the bound address")?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening http://{addr}{path}")
        .and_then(|()| stdout.flush())
        .context("failed to print the listening line")?;
    drop(stdout);

    match args.transport {
        FixtureTransport::Sse => toolgate_testkit::serve_sse(listener, shutdown, opts).await,
        _ => toolgate_testkit::serve_http(listener, shutdown, opts).await,
    }
}

/// Serves the fake LLM provider until SIGTERM or ctrl-c.
async fn fake_llm(args: FakeLlmArgs) -> anyhow::Result<()> {
    use toolgate_testkit::fake_llm::{FakeLlmOptions, Script, Turn};
    let delayed = |turn: Turn| turn.after(args.delay);
    let script = if let Some(path) = &args.script {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("failed to read the script {}", path.display()))?;
        let turns: Vec<Turn> = serde_json::from_str(&text)
            .with_context(|| format!("the script {} is not an array of turns", path.display()))?;
        Script::turns(
            turns.into_iter().map(|turn| if turn.delay.is_zero() { delayed(turn) } else { turn }),
        )
    } else if let Some(status) = args.fail {
        Script::always(delayed(Turn::fail(status)))
    } else if let Some((last, first)) = args.reply.split_last() {
        Script::turns(first.iter().map(|text| delayed(Turn::text(text))))
            .then_always(delayed(Turn::text(last)))
    } else {
        let delay = args.delay;
        Script::respond(move |request| {
            let length = request.last_user_text().map_or(0, |text| text.chars().count());
            Turn::text(format!("The fake read {length} characters.")).after(delay)
        })
    };
    let listener = tokio::net::TcpListener::bind((args.host.as_str(), args.port))
        .await
        .with_context(|| format!("failed to bind {}:{}", args.host, args.port))?;
    let addr = listener.local_addr().context("failed to read the bound address")?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening http://{addr}/v1")
        .and_then(|()| stdout.flush())
        .context("failed to print the listening line")?;
    drop(stdout);
    let shutdown = CancellationToken::new();
    tokio::spawn({
        let shutdown = shutdown.clone();
        async move {
            terminated().await;
            shutdown.cancel();
        }
    });
    let options = FakeLlmOptions { api_key: args.api_key };
    toolgate_testkit::fake_llm::serve_fake_llm(listener, shutdown, script, options)
        .await
        .context("the fake LLM failed")
}

/// Resolves on SIGTERM or ctrl-c.
async fn terminated() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut sigterm) => {
                tokio::select! {
                    _ = sigterm.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
                return;
            }
            Err(error) => tracing::warn!(%error, "cannot listen for SIGTERM"),
        }
    }
    if let Err(error) = tokio::signal::ctrl_c().await {
        tracing::warn!(%error, "cannot listen for ctrl-c");
        std::future::pending::<()>().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory as _;
        Args::command().debug_assert();
    }
}
