//! The `toolgate` command line (see ARCHITECTURE.md, `toolgate`): parse arguments, load the
//! config, build, run. Each subcommand lives in its own module under `commands/`.

mod admin;
mod client_file;
mod clients;
mod commands;
mod console;
mod events;
mod gateway_entry;
mod health;
mod llm_api;
mod logins;
mod metrics;
mod scrub;
mod setup;
mod telemetry;
mod trust;
mod usage;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

/// An MCP gateway: one safe entry in front of all your MCP servers.
///
/// toolgate connects to the MCP servers in its config (child processes, streamable HTTP or
/// legacy SSE), merges their tools, prompts and resources under `<server>__<name>` names, and
/// serves them as one MCP server over stdio or streamable HTTP.
///
/// Config: `--config FILE`, else $TOOLGATE_CONFIG, else ./toolgate.toml (used only once you
/// trust it: `toolgate trust`), else ~/.config/toolgate/toolgate.toml. Claude Desktop / Cursor
/// / VS Code JSON files work as they are. With no config at all, a built-in demo server is
/// used.
#[derive(Debug, Parser)]
#[command(name = "toolgate", version, propagate_version = true, max_term_width = 100)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

/// Options every subcommand takes.
#[derive(Debug, Args, Clone)]
struct GlobalArgs {
    /// Config file (toolgate.toml, or a client's mcpServers / servers JSON).
    #[arg(long, short = 'c', global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Log filter, as in RUST_LOG (for example `debug` or `toolgate=debug`). Logs go to stderr.
    #[arg(long, global = true, value_name = "FILTER", env = "TOOLGATE_LOG")]
    log: Option<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the merged servers as one MCP server (streamable HTTP, or stdio with --stdio).
    Serve(commands::serve::ServeArgs),
    /// Connect, list the exposed tools with the server each comes from, and exit.
    Tools(commands::tools::ToolsArgs),
    /// Call one tool through the gateway and print its result.
    Call(commands::call::CallArgs),
    /// Ask the agent once: a model that uses your servers' tools through the gateway;
    /// the answer streams to stdout.
    Run(commands::run::RunArgs),
    /// Talk with the agent (a REPL): tools through the gateway, approvals at the terminal.
    Chat(commands::chat::ChatArgs),
    /// The agent's stored conversations: list, show, export, delete.
    #[command(subcommand)]
    Sessions(commands::sessions::SessionsCommand),
    /// Connect and show each configured server: state, sign-in, transport, protocol, tools,
    /// start-up time.
    Servers(commands::servers::ServersArgs),
    /// Sign in to a server that asks for OAuth: opens the authorization page, receives the
    /// redirect on a loopback port, and keeps the tokens (encrypted) for every toolgate run.
    Login(commands::login::LoginArgs),
    /// Forget the sign-in to a server (its tokens are deleted).
    Logout(commands::login::LogoutArgs),
    /// Pin what each server offers in toolgate.lock, or check (--check) and show (--diff) what
    /// changed since: descriptions, schemas, annotations of every tool, prompt and resource.
    Pin(commands::pin::PinArgs),
    /// Scan what each server tells the model (tool, parameter and prompt descriptions, names)
    /// for hidden instructions, offline (--judge: the agent's model too); exit 1 on a finding
    /// of medium or high severity.
    Scan(commands::scan::ScanArgs),
    /// Show the interceptor pipeline as it will run, phase by phase (--json: SEP-2624 form).
    Interceptors(commands::interceptors::InterceptorsArgs),
    /// Rune scripts: compile and show diagnostics (check), run hooks on a sample (test),
    /// write a starting point (new).
    #[command(subcommand)]
    Script(commands::script::ScriptCommand),
    /// Add the MCP servers of your clients' config files (Claude Desktop, Claude Code, Cursor,
    /// VS Code, Windsurf, Gemini CLI, Zed, Continue, goose, Codex) to toolgate.toml, keeping its
    /// comments; literal secrets become ${VAR} references to set.
    Import(commands::import::ImportArgs),
    /// Put toolgate into an MCP client's config as its one server: the client's servers move
    /// into toolgate.toml, its file is kept as <file>.toolgate-backup, and a secret a server had
    /// moves into toolgate's entry. Run again, it changes nothing; --dry-run shows the diffs.
    Install(commands::install::InstallArgs),
    /// Take toolgate out of an MCP client's config and put the client's own servers back from
    /// the backup `install` kept (they stay in toolgate.toml too).
    Uninstall(commands::install::UninstallArgs),
    /// Check the installation: toolgate's config, node/npx/uv/python/docker on PATH, each MCP
    /// client (installed, config files, toolgate in it), and whether each configured server
    /// starts, with the cause of a failure and the next step (--json for scripts).
    #[command(long_about = commands::doctor::LONG_ABOUT)]
    Doctor(commands::doctor::DoctorArgs),
    /// Work with the config file.
    #[command(subcommand)]
    Config(commands::config::ConfigCommand),
    /// Check the audit log's hash chain, or print its last records.
    #[command(subcommand)]
    Audit(commands::audit::AuditCommand),
    /// Trust a toolgate.toml found in a working directory (a checkout), so that toolgate uses
    /// it; list what is trusted, or take trust back.
    #[command(long_about = commands::trust::LONG_ABOUT)]
    Trust(commands::trust::TrustArgs),
    /// API keys for the HTTP front: `new` makes one and prints its `[auth.api_keys]` line.
    #[command(subcommand)]
    Keys(commands::keys::KeysCommand),
    /// Print the shell completion script for bash, zsh, fish, elvish or powershell.
    Completions(commands::completions::CompletionsArgs),
    /// Print the manual page (roff), or write one page per command into a folder.
    Man(commands::man::ManArgs),
    /// Run the built-in demo MCP server on stdio (what toolgate starts when no config exists).
    #[command(hide = true)]
    DemoServer,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("toolgate: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Serve(args) => commands::serve::run(&cli.global, args).await,
            Command::Tools(args) => commands::tools::run(&cli.global, args).await,
            Command::Pin(args) => commands::pin::run(&cli.global, args).await,
            Command::Scan(args) => commands::scan::run(&cli.global, args).await,
            Command::Call(args) => commands::call::run(&cli.global, args).await,
            Command::Run(args) => commands::run::run(&cli.global, args).await,
            Command::Chat(args) => commands::chat::run(&cli.global, args).await,
            Command::Sessions(command) => commands::sessions::run(&cli.global, command),
            Command::Servers(args) => commands::servers::run(&cli.global, args).await,
            Command::Login(args) => commands::login::login(&cli.global, args).await,
            Command::Logout(args) => commands::login::logout(&cli.global, args),
            Command::Interceptors(args) => commands::interceptors::run(&cli.global, args).await,
            Command::Script(command) => commands::script::run(&cli.global, command).await,
            Command::Import(args) => commands::import::run(&cli.global, &args),
            Command::Install(args) => commands::install::install(&cli.global, &args),
            Command::Uninstall(args) => commands::install::uninstall(&cli.global, &args),
            Command::Doctor(args) => commands::doctor::run(&cli.global, args).await,
            Command::Config(command) => commands::config::run(&cli.global, command),
            Command::Audit(command) => commands::audit::run(&cli.global, command).await,
            Command::Trust(args) => commands::trust::run(&cli.global, args),
            Command::Keys(command) => commands::keys::run(command),
            Command::Completions(args) => commands::completions::run(&args),
            Command::Man(args) => commands::man::run(&args),
            Command::DemoServer => commands::demo::run(&cli.global).await,
        }
    });
    // Children are ended by the commands themselves; don't wait for blocked stdin readers.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    telemetry::shutdown();
    match result {
        Ok(code) => code,
        Err(error) => {
            if is_broken_pipe(&error) {
                return ExitCode::SUCCESS;
            }
            eprintln!("toolgate: {error:#}");
            setup::exit_code_for(&error)
        }
    }
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
