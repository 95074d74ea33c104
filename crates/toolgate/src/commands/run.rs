//! `toolgate run`: one prompt, one streamed answer, then exit.

use std::io::{IsTerminal as _, Read as _, Write as _};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Args;
use serde_json::json;
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;
use toolgate_agent::agent::AgentError;
use toolgate_llm::chat::Message;
use toolgate_terminal::{Console, ConsoleOptions};

use crate::GlobalArgs;
use crate::commands::agent::{self, AgentArgs, Discovery};
use crate::setup;

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    toolgate run \"list the files in /tmp\"\n  \
    git diff | toolgate run \"review this diff\"\n  \
    toolgate run --provider anthropic --model claude-sonnet-4-5 \"what can you do?\"\n  \
    toolgate run --base-url http://127.0.0.1:11434/v1 --model qwen3 \"hello\"   # Ollama\n\n\
    The prompt is the argument; with none (or -), it is read from stdin; with both, stdin (a \
    pipe or a file) is added after the prompt. The answer streams to stdout (Markdown rendered on a terminal, \
    plain text when piped); tool calls, reasoning and notices go to stderr.\n\
    Exit status: 0 answered, 1 failed (provider error, turn limit, cancelled), 64 usage or \
    config error.")]
pub(crate) struct RunArgs {
    /// The prompt (default: read from stdin).
    prompt: Option<String>,
    /// Print a JSON transcript (the session, the answer, the messages, usage) instead of the
    /// streamed answer.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    agent: AgentArgs,
}

pub(crate) async fn run(global: &GlobalArgs, args: RunArgs) -> anyhow::Result<ExitCode> {
    setup::init_logging(global, "warn");
    let prompt = read_prompt(args.prompt.as_deref())?;
    // Ctrl-C cancels the prompt (the model's stream, or the tools, which are told) and the
    // answer so far is kept in the session; it does not end the process on the spot.
    let mut interrupts = signal(SignalKind::interrupt())?;
    let console = Arc::new(Console::new(ConsoleOptions {
        verbose: args.agent.verbose,
        answer_to_stdout: !args.json,
        allow_sampling: args.agent.allow_sampling,
    }));
    let started = agent::start(global, &args.agent, Discovery::All, console.clone(), None).await?;
    let agent::Started { mut agent, running, resolved, session, .. } = started;
    let cancel = CancellationToken::new();
    let before = agent.messages().len();
    console.start_turn(cancel.clone());
    let outcome = {
        let prompt = agent.prompt(Message::user_text(prompt), console.clone(), cancel.clone());
        tokio::pin!(prompt);
        loop {
            tokio::select! {
                outcome = &mut prompt => break outcome,
                Some(()) = interrupts.recv() => cancel.cancel(),
            }
        }
    };
    console.finish();
    running.shutdown().await;
    if args.json {
        let (status, error) = match &outcome {
            Ok(_) => ("answered", None),
            Err(AgentError::Cancelled) => ("cancelled", Some("cancelled".to_owned())),
            Err(error) => ("failed", Some(error.to_string())),
        };
        let report = outcome.as_ref().ok();
        let transcript = json!({
            "status": status,
            "error": error,
            "session": session,
            "provider": resolved.provider_name,
            "model": resolved.settings.model,
            "answer": report.map(|r| r.answer.clone()),
            "turns": report.map(|r| r.turns),
            "tool_calls": report.map(|r| r.tool_calls),
            "usage": report.map(|r| r.usage),
            "messages": &agent.messages()[before..],
        });
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, &transcript)?;
        writeln!(out)?;
    }
    match outcome {
        Ok(_) => Ok(ExitCode::SUCCESS),
        Err(error) if args.json => {
            tracing::debug!(%error, "the prompt failed");
            Ok(ExitCode::FAILURE)
        }
        Err(error) => Err(anyhow::Error::new(error)),
    }
}

/// The prompt: the argument, stdin, or both (stdin after the argument).
///
/// With an argument, stdin is read only when it is a pipe or a file: a socket or a device
/// stdin (`ssh host toolgate run "..."`, a process manager) may stay open without ever being
/// written, and waiting for its end would hang the command.
fn read_prompt(argument: Option<&str>) -> anyhow::Result<String> {
    let argument = argument.filter(|text| *text != "-");
    let stdin = std::io::stdin();
    let piped = if stdin.is_terminal() || (argument.is_some() && !stdin_is_pipe_or_file()) {
        String::new()
    } else {
        let mut text = String::new();
        stdin.lock().read_to_string(&mut text).context("reading the prompt from stdin")?;
        text
    };
    let prompt = match (argument, piped.trim().is_empty()) {
        (Some(argument), true) => argument.to_owned(),
        (Some(argument), false) => format!("{argument}\n\n{piped}"),
        (None, false) => piped,
        (None, true) => {
            return Err(setup::usage(
                "no prompt: pass it as an argument (toolgate run \"...\") or on stdin",
            ));
        }
    };
    Ok(prompt)
}

/// Whether stdin is a pipe or a regular file (not a socket, a terminal or another device).
fn stdin_is_pipe_or_file() -> bool {
    use std::os::unix::fs::FileTypeExt as _;
    std::fs::metadata("/dev/stdin")
        .map(|meta| meta.file_type().is_fifo() || meta.file_type().is_file())
        .unwrap_or(false)
}
