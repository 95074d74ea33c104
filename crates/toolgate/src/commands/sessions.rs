//! `toolgate sessions`: the agent's stored conversations.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use toolgate_agent::store::{Format, Store};

use crate::GlobalArgs;
use crate::setup;

#[derive(Debug, Subcommand)]
pub(crate) enum SessionsCommand {
    /// The newest sessions: id, last change, model, messages, tool calls, tokens, title.
    List(ListArgs),
    /// One session as a readable transcript (an id or a unique prefix of one).
    Show(ShowArgs),
    /// One session as JSON (the messages as stored) or Markdown.
    Export(ExportArgs),
    /// Delete one session.
    Delete(ShowArgs),
}

#[allow(
    rustdoc::broken_intra_doc_links,
    reason = "clap help text: [agent] is a table of toolgate.toml, not a link"
)]
#[derive(Debug, Args)]
pub(crate) struct StoreArgs {
    /// The sessions database (default: [agent] sessions, else the user's data folder).
    #[arg(long, value_name = "FILE")]
    sessions: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// How many.
    #[arg(long, short = 'n', default_value_t = 20)]
    limit: usize,
    /// As JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    store: StoreArgs,
}

#[derive(Debug, Args)]
pub(crate) struct ShowArgs {
    /// The session's id, or a unique prefix of it.
    id: String,
    #[command(flatten)]
    store: StoreArgs,
}

#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// The session's id, or a unique prefix of it.
    id: String,
    /// json or markdown.
    #[arg(long, default_value = "json")]
    format: Format,
    #[command(flatten)]
    store: StoreArgs,
}

pub(crate) fn run(global: &GlobalArgs, command: SessionsCommand) -> anyhow::Result<ExitCode> {
    setup::init_logging(global, "warn");
    let mut out = std::io::stdout().lock();
    match command {
        SessionsCommand::List(args) => {
            let store = open(global, &args.store)?;
            let sessions = store.list(args.limit)?;
            if args.json {
                serde_json::to_writer_pretty(&mut out, &sessions)?;
                writeln!(out)?;
            } else if sessions.is_empty() {
                writeln!(out, "no sessions yet in {}", store.path().display())?;
            } else {
                for session in sessions {
                    let tokens =
                        session.total.usage.input_tokens + session.total.usage.output_tokens;
                    let cost = session
                        .total
                        .cost_usd
                        .map(|usd| format!(" ~${usd:.4}"))
                        .unwrap_or_default();
                    writeln!(
                        out,
                        "{}  {}  {}  {} msgs  {} tools  {} tokens{cost}  {}",
                        session.meta.id,
                        &session.meta.updated_at[..session.meta.updated_at.len().min(16)],
                        session.meta.model,
                        session.messages,
                        session.tool_calls,
                        tokens,
                        session.meta.title,
                    )?;
                }
            }
        }
        SessionsCommand::Show(args) => {
            let store = open(global, &args.store)?;
            out.write_all(store.export(&args.id, Format::Markdown)?.as_bytes())?;
        }
        SessionsCommand::Export(args) => {
            let store = open(global, &args.store)?;
            out.write_all(store.export(&args.id, args.format)?.as_bytes())?;
        }
        SessionsCommand::Delete(args) => {
            let store = open(global, &args.store)?;
            let meta = store.resolve(&args.id)?;
            store.delete(&meta.id)?;
            writeln!(out, "deleted {}", meta.id)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The store `--sessions` names, else the config's `[agent] sessions`, else the default.
fn open(global: &GlobalArgs, args: &StoreArgs) -> anyhow::Result<Store> {
    let configured = || match crate::setup::load(global) {
        Ok(loaded) => Ok(loaded.and_then(|loaded| loaded.config.agent.sessions)),
        // A config found in the working directory and not trusted names no store either.
        Err(error) if error.is::<crate::trust::Untrusted>() => Err(error),
        Err(_) => Ok(None),
    };
    let path = match args.sessions.clone() {
        Some(path) => path,
        None => match configured()? {
            Some(path) => path,
            None => toolgate_agent::store::default_path()?,
        },
    };
    Store::open(&path).with_context(|| format!("opening {}", path.display()))
}
