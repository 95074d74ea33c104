//! `toolgate chat`: the agent's REPL.
//!
//! Line editing and history are `toolgate_terminal::PromptEditor`'s (history in the user's
//! data folder); a line ending in `\` or Alt-Enter continues on the next line. Ctrl-C while
//! the model answers or tools run cancels that turn (tools are sent
//! `notifications/cancelled`); Ctrl-C at the prompt clears the line; Ctrl-D leaves.

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio_util::sync::CancellationToken;
use toolgate_agent::agent::AgentError;
use toolgate_agent::host::ToolHost as _;
use toolgate_core::mcp;
use toolgate_llm::chat::{Message, Part};
use toolgate_terminal::{Console, ConsoleOptions, PromptEditor, ReadLine};
use toolgate_upstream::CallOptions;

use crate::GlobalArgs;
use crate::commands::agent::{self, AgentArgs, Discovery, SessionJournal, Started};
use crate::setup;

#[derive(Debug, Args)]
#[command(after_help = "In the REPL:\n  \
    /tools                 the tools the model can call\n  \
    /servers               each server and its state\n  \
    /prompt NAME [k=v...]  run an MCP prompt (server__name, or name alone when unique)\n  \
    /model [NAME]          show or change the model\n  \
    /clear                 start a new conversation\n  \
    /help                  this list\n  \
    @server:URI            in a message, attaches that resource\n\n\
    A line ending in \\ (or Alt-Enter) continues on the next one. Ctrl-C cancels the running \
    turn; Ctrl-D leaves.")]
pub(crate) struct ChatArgs {
    /// Continue a stored session: the latest, or the one with this id (or unique prefix).
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
    resume: Option<String>,
    #[command(flatten)]
    agent: AgentArgs,
}

const HELP: &str = "\
/tools                 the tools the model can call
/servers               each server and its state
/prompt NAME [k=v...]  run an MCP prompt
/model [NAME]          show or change the model
/clear                 start a new conversation
/help                  this list
@server:URI            in a message, attaches that resource
Ctrl-C cancels the running turn; Ctrl-D leaves.";

pub(crate) async fn run(global: &GlobalArgs, args: ChatArgs) -> anyhow::Result<ExitCode> {
    setup::init_logging(global, "warn");
    let console = Arc::new(Console::new(ConsoleOptions {
        verbose: args.agent.verbose,
        answer_to_stdout: true,
        allow_sampling: args.agent.allow_sampling,
    }));
    let resume = args.resume.clone().map(|id| Some(id).filter(|id| !id.is_empty()));
    let resumed = resume.is_some();
    let mut started =
        agent::start(global, &args.agent, Discovery::Background, console.clone(), resume).await?;
    banner(&started, resumed);
    let mut editor = PromptEditor::new()?;
    // From here on Ctrl-C (SIGINT, while no line is being edited) cancels the running turn
    // instead of ending the process; at the prompt, the line editor reads it as a key. After
    // the editor is made: rustyline puts a SIGINT handler of its own in place while an editor
    // lives (saving the one before), and tokio's is installed only once per process.
    let mut interrupts = signal(SignalKind::interrupt())?;
    editor.load_history();
    loop {
        let line = match editor.read_line("› ").await? {
            ReadLine::Line(line) => line,
            ReadLine::Interrupted => {
                eprintln!("(Ctrl-D leaves)");
                continue;
            }
            ReadLine::Eof => break,
        };
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        editor.add_history(text);
        let message = if let Some(command) = text.strip_prefix('/') {
            match command_line(&mut started, command).await {
                Ok(Step::Send(message)) => message,
                Ok(Step::Stay) => continue,
                Ok(Step::Leave) => break,
                Err(error) => {
                    eprintln!("{error:#}");
                    continue;
                }
            }
        } else {
            match attach_resources(&started, text).await {
                Ok(message) => message,
                Err(error) => {
                    eprintln!("{error:#}");
                    continue;
                }
            }
        };
        // A Ctrl-C from before this turn (between two, not at the prompt) is not for it.
        while let Some(Some(())) = futures::FutureExt::now_or_never(interrupts.recv()) {}
        turn(&mut started, &console, &mut interrupts, message).await;
    }
    editor.save_history();
    console.finish();
    started.running.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

/// One prompt, cancelled by Ctrl-C.
async fn turn(
    started: &mut Started,
    console: &Arc<Console>,
    interrupts: &mut Signal,
    message: Message,
) {
    let cancel = CancellationToken::new();
    console.start_turn(cancel.clone());
    let prompt = started.agent.prompt(message, console.clone(), cancel.clone());
    tokio::pin!(prompt);
    let outcome = loop {
        tokio::select! {
            outcome = &mut prompt => break outcome,
            Some(()) = interrupts.recv() => cancel.cancel(),
        }
    };
    console.end_turn();
    match outcome {
        Ok(report) => {
            if report.usage.input_tokens + report.usage.output_tokens > 0 {
                console.note(&format!(
                    "{} in, {} out",
                    report.usage.input_tokens, report.usage.output_tokens
                ));
            }
        }
        Err(AgentError::Cancelled) => console.note("cancelled"),
        Err(error) => console.error(&error.to_string()),
    }
}

fn banner(started: &Started, resumed: bool) {
    let mut err = std::io::stderr().lock();
    let session = started.session.as_deref().unwrap_or("not saved");
    let _ = writeln!(
        err,
        "toolgate chat · {} {} · session {session}{}",
        started.resolved.provider_name,
        started.resolved.settings.model,
        if resumed {
            format!(" (resumed, {} messages)", started.agent.messages().len())
        } else {
            String::new()
        }
    );
    let servers = started.running.upstreams().len();
    let starting = started.running.starting().len();
    if servers > 0 {
        let _ = writeln!(
            err,
            "{servers} server(s){}",
            if starting > 0 { format!(", {starting} still starting") } else { String::new() }
        );
    }
    for failed in started.running.failed() {
        let _ = writeln!(err, "server {} did not start: {}", failed.name, failed.reason);
    }
    let _ = writeln!(err, "/help for commands, Ctrl-D to leave");
}

/// What follows a `/command`.
enum Step {
    /// Send this to the model.
    Send(Message),
    /// Back to the prompt.
    Stay,
    /// Leave the REPL.
    Leave,
}

/// A `/command`: what it prints, or the message it sends to the model.
async fn command_line(started: &mut Started, command: &str) -> anyhow::Result<Step> {
    let (name, rest) = command.split_once(char::is_whitespace).unwrap_or((command, ""));
    let rest = rest.trim();
    let mut out = std::io::stdout().lock();
    match name {
        "help" | "?" => writeln!(out, "{HELP}")?,
        "tools" => {
            let tools = started.host.tools().await;
            if tools.is_empty() {
                writeln!(out, "no tools (yet: servers may still be starting)")?;
            }
            for tool in tools {
                let description = tool.description.as_deref().unwrap_or_default();
                let first = description.lines().next().unwrap_or_default();
                writeln!(out, "{}  {}", tool.name, toolgate_terminal::sanitize(first))?;
            }
        }
        "servers" => {
            let running = &started.running;
            if running.upstreams().is_empty() {
                writeln!(out, "no servers configured")?;
            }
            for upstream in running.upstreams() {
                let state = if upstream.info().is_some() {
                    format!("up, {} tools", upstream.catalog().tools.len())
                } else if let Some(failed) =
                    running.failed().iter().find(|f| f.name == upstream.name())
                {
                    format!("failed: {}", failed.reason)
                } else {
                    "starting".to_owned()
                };
                writeln!(out, "{}  {state}", upstream.name())?;
            }
        }
        "model" if rest.is_empty() => {
            writeln!(out, "{} {}", started.resolved.provider_name, started.agent.settings().model)?
        }
        "model" => {
            started.agent.set_model(rest.to_owned());
            if let (Some(store), Some(session)) = (&started.store, &started.session) {
                let store = store.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                store.set_model(session, &started.resolved.provider_name, rest)?;
            }
            writeln!(out, "model: {rest}")?;
        }
        "clear" => {
            started.agent.clear();
            if let Some(store) = &started.store {
                let meta = {
                    let store = store.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    store.create(&toolgate_agent::store::NewSession {
                        provider: started.resolved.provider_name.clone(),
                        model: started.agent.settings().model.clone(),
                        cwd: std::env::current_dir()?,
                    })?
                };
                started.agent.set_journal(Some(Arc::new(SessionJournal {
                    store: store.clone(),
                    session: meta.id.clone(),
                })));
                writeln!(out, "new conversation: session {}", meta.id)?;
                started.session = Some(meta.id);
            } else {
                writeln!(out, "new conversation")?;
            }
        }
        "prompt" => return run_prompt(started, rest).await.map(Step::Send),
        "exit" | "quit" => return Ok(Step::Leave),
        other => writeln!(out, "unknown command /{other} (/help lists them)")?,
    }
    Ok(Step::Stay)
}

/// `/prompt NAME k=v ...`: the MCP prompt's messages, sent as the next user message.
async fn run_prompt(started: &Started, rest: &str) -> anyhow::Result<Message> {
    let mut words = rest.split_whitespace();
    let Some(name) = words.next() else {
        anyhow::bail!("usage: /prompt NAME [key=value ...]");
    };
    let mut arguments = serde_json::Map::new();
    for pair in words {
        let Some((key, value)) = pair.split_once('=') else {
            anyhow::bail!("{pair:?} is not key=value");
        };
        arguments.insert(key.to_owned(), serde_json::Value::String(value.to_owned()));
    }
    let name = prompt_name(started, name);
    let name = name.as_str();
    let mut params = mcp::GetPromptRequestParams::new(name);
    if !arguments.is_empty() {
        params = params.with_arguments(arguments);
    }
    let mut ctx = started.host.context();
    let result = started
        .running
        .get_prompt(params, &CallOptions::default(), &mut ctx)
        .await
        .map_err(|error| anyhow::anyhow!("/prompt {name}: {error}"))?;
    let mut parts = Vec::new();
    for message in &result.messages {
        let Ok(content) = serde_json::to_value(&message.content) else { continue };
        let text = |key: &str| content.pointer(key).and_then(|v| v.as_str()).unwrap_or_default();
        match content["type"].as_str() {
            Some("text") => parts.push(Part::text(text("/text"))),
            Some("resource") => parts.push(Part::text(format!(
                "[resource {}]\n{}",
                text("/resource/uri"),
                text("/resource/text")
            ))),
            Some("image") => parts.push(Part::Image {
                mime_type: text("/mimeType").to_owned(),
                data: text("/data").to_owned(),
            }),
            _ => {}
        }
    }
    if parts.is_empty() {
        anyhow::bail!("/prompt {name}: the prompt has no text to send");
    }
    Ok(Message::User { content: parts })
}

/// The exposed name of the prompt the person typed: as typed when a prompt has it, else the
/// only prompt named `<server>__<name>` for it (`/prompt review` for `git__review`).
fn prompt_name(started: &Started, typed: &str) -> String {
    let inventory = started.running.inventory();
    let prompts = inventory.prompts();
    if prompts.iter().any(|prompt| prompt.name == typed) {
        return typed.to_owned();
    }
    let suffix = format!("__{typed}");
    let mut matching = prompts.iter().filter(|prompt| prompt.name.ends_with(&suffix));
    match (matching.next(), matching.next()) {
        (Some(only), None) => only.name.to_string(),
        _ => typed.to_owned(),
    }
}

/// The message, with each `@server:URI` it names read and attached.
async fn attach_resources(started: &Started, text: &str) -> anyhow::Result<Message> {
    let mut parts = vec![Part::text(text)];
    for word in text.split_whitespace() {
        let Some(reference) = word.strip_prefix('@') else { continue };
        let Some((server, uri)) = reference.split_once(':') else { continue };
        if !started.running.upstreams().iter().any(|u| u.name() == server) || uri.is_empty() {
            continue;
        }
        let mut ctx = started.host.context();
        let params = mcp::ReadResourceRequestParams::new(uri);
        let result = started
            .running
            .read_resource(params, &CallOptions::default(), &mut ctx)
            .await
            .map_err(|error| anyhow::anyhow!("@{server}:{uri}: {error}"))?;
        for contents in result.contents {
            match contents {
                mcp::ResourceContents::TextResourceContents { uri, text, .. } => {
                    parts.push(Part::text(format!("[resource {uri}]\n{text}")))
                }
                mcp::ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => {
                    match mime_type.as_deref() {
                        Some(mime) if mime.starts_with("image/") => {
                            parts.push(Part::Image { mime_type: mime.to_owned(), data: blob })
                        }
                        other => parts.push(Part::text(format!(
                            "[resource {uri}: binary ({}) not attached]",
                            other.unwrap_or("unknown type")
                        ))),
                    }
                }
                _ => parts.push(Part::text("[a resource of a kind the agent does not know]")),
            }
        }
    }
    Ok(Message::User { content: parts })
}
