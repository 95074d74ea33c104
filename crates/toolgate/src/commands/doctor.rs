//! `toolgate doctor`: what is installed and whether each configured MCP server starts.
//!
//! In order: toolgate itself (its version, the config it would use and whether `config
//! check` passes), the programs servers are usually started with (`tools.rs`), each MCP
//! client (installed, `detect.rs`; its config files and servers), then every server of
//! toolgate's config and of the clients' files (`gather.rs`), each started for real through
//! the upstream layer (`probe.rs`), with the cause of a failure and the next step
//! (`cause.rs`). `report.rs` prints it all, as text or JSON.

mod cause;
mod detect;
mod gather;
mod probe;
mod report;
mod tools;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use toolgate_config::{Environment, SystemEnvironment};

use crate::GlobalArgs;
use crate::clients::{self, CLIENTS, Client};
use gather::{Candidates, TOOLGATE_CONFIG};
use report::{ClientSection, FileSection, Report, ServerRow, State, ToolgateSection};

/// `--help`'s long text.
pub(crate) const LONG_ABOUT: &str = "\
Check what toolgate needs and whether each MCP server starts, and say what to do about each \
problem.

It reports, in order:
  toolgate   its version, the config it would use, and whether `config check` passes on it
  tools      node, npx, npm, uv, uvx, python and docker on PATH, with their versions (each is
             run with --version only; nothing else on PATH is run)
  clients    each MCP client (Claude Desktop, Claude Code, Cursor, VS Code, Windsurf, Gemini
             CLI, Zed, Continue, goose, Codex): installed or not, and on what evidence; its
             config files, how many servers each has, and whether toolgate is in it
  servers    every server of toolgate's config and of the clients' files (a definition found
             in several files is started once), started for real as `serve` starts them, at
             most 4 at once: ok (name, version, tools, start-up time), or failed with the cause
             (command not found, package not found, port in use, needs a login, unreachable,
             exited, no answer in time, environment variable not set, ...) and the next step

Servers found only in this directory's own client files (.mcp.json, .cursor/mcp.json, \
.vscode/mcp.json, .gemini/settings.json) are listed but not started without --project: \
whoever wrote the directory chose their commands. Values of variables and headers are never \
printed.

--json prints one object: {\"toolgate\": {\"version\", \"config\", \"ok\", \"problems\", \
\"warnings\"}, \"tools\": [{\"name\", \"path\", \"version\", \"error\"}], \"clients\": [{\"name\", \
\"title\", \"installed\", \"evidence\", \"files\": [{\"path\", \"project\", \"servers\", \
\"toolgate\", \"problems\"}], \"toolgate\"}], \"servers\": [{\"name\", \"from\", \"transport\", \
\"state\" (ok, failed, disabled or skipped), \"server\", \"version\", \"tools\", \"startup_ms\", \
\"cause\", \"subject\", \"detail\", \"next_step\"}]}.

Exit status: 0 when every server found starts and the config is valid, 1 otherwise, 2 for a \
usage error.";

#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    /// Print the report as one JSON object (see above).
    #[arg(long)]
    json: bool,
    /// Only this client and its servers (repeatable; claude-desktop, claude-code, cursor,
    /// vscode, windsurf, gemini, zed, continue, goose, codex). toolgate's own servers are then
    /// left out.
    #[arg(long = "client", value_name = "NAME", value_parser = client_name)]
    clients: Vec<&'static str>,
    /// How long each server gets to start and complete the MCP handshake.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = timeout)]
    timeout: Duration,
    /// Also start the servers of this directory's own client files.
    #[arg(long)]
    project: bool,
}

pub(crate) async fn run(global: &GlobalArgs, args: DoctorArgs) -> anyhow::Result<ExitCode> {
    crate::setup::init_logging(global, "error");
    let chosen: Vec<&'static Client> = CLIENTS
        .iter()
        .filter(|c| args.clients.is_empty() || args.clients.contains(&c.name))
        .collect();
    let env = SystemEnvironment;
    let mut candidates = Candidates::default();
    let toolgate = toolgate_section(global, &env, &mut candidates, args.clients.is_empty());
    let path = detect::path_folders();
    let clients: Vec<ClientSection> =
        chosen.iter().map(|client| client_section(client, &env, &path, &mut candidates)).collect();

    let mut probes = Vec::new();
    let mut rows = Vec::new();
    for candidate in candidates.0 {
        let state = match &candidate.config {
            None => State::Failed(cause::config_problems(&candidate.problems)),
            Some(config) if !config.enabled => State::Disabled,
            Some(_) if !candidate.chosen && !args.project => State::Skipped,
            Some(config) => {
                probes.push((
                    rows.len(),
                    probe::Probe { config: config.clone(), in_toolgate: candidate.in_toolgate() },
                ));
                State::Starting
            }
        };
        let transport = candidate.config.as_ref().map(|c| c.transport.kind());
        rows.push(ServerRow { name: candidate.name, from: candidate.from, transport, state });
    }
    let needs_logins = probes
        .iter()
        .any(|(_, p)| matches!(p.config.transport, toolgate_config::TransportConfig::Http(_)));
    let logins = if needs_logins { crate::logins::for_serving() } else { None };
    let (places, probes): (Vec<usize>, Vec<probe::Probe>) = probes.into_iter().unzip();
    let (tools, outcomes) =
        tokio::join!(tools::survey(&path), probe::start_all(probes, args.timeout, logins.as_ref()));
    for (at, outcome) in places.into_iter().zip(outcomes) {
        rows[at].state = match outcome {
            probe::Outcome::Started { server, version, tools, startup } => {
                State::Ok { server, version, tools, startup }
            }
            probe::Outcome::Failed(diagnosis) => State::Failed(diagnosis),
        };
    }

    let report = Report { toolgate, tools, clients, servers: rows };
    let mut out = std::io::stdout().lock();
    if args.json {
        report::write_json(&mut out, &report)?;
    } else {
        report::write_text(&mut out, &report)?;
    }
    Ok(if report.healthy() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// A `--timeout`: a duration greater than zero.
fn timeout(text: &str) -> Result<Duration, String> {
    match toolgate_core::duration::parse(text) {
        Ok(duration) if duration.is_zero() => Err("must be greater than zero".into()),
        Ok(duration) => Ok(duration),
        Err(error) => Err(error.to_string()),
    }
}

/// The client `name` (or an alias) names, by its own name.
fn client_name(name: &str) -> Result<&'static str, String> {
    clients::find(name)
        .map(|client| client.name)
        .ok_or_else(|| format!("unknown client {name:?} (clients: {})", clients::names()))
}

/// toolgate's version and config; the config's servers are added to `candidates` when
/// `with_servers`.
fn toolgate_section(
    global: &GlobalArgs,
    env: &dyn Environment,
    candidates: &mut Candidates,
    with_servers: bool,
) -> ToolgateSection {
    let mut section = ToolgateSection {
        version: env!("CARGO_PKG_VERSION"),
        config: None,
        problems: Vec::new(),
        warnings: Vec::new(),
    };
    let found = match toolgate_config::discover_file(global.config.as_deref(), env) {
        Ok(Some(found)) => found,
        Ok(None) => return section,
        Err(error) => {
            section.problems.push(error.to_string());
            return section;
        }
    };
    section.config = Some(found.path.clone());
    // An untrusted file is not even checked: a check reads the variables it names.
    if found.needs_trust()
        && let Err(error) = crate::trust::discover(global)
    {
        section.problems.push(format!("{error:#}"));
        return section;
    }
    let checked = toolgate_config::check_file(&found.path, env);
    let (problems, warnings) = crate::commands::config::review(&checked);
    section.problems = problems.iter().map(ToString::to_string).collect();
    section.warnings = warnings;
    if with_servers {
        candidates.add_file(
            TOOLGATE_CONFIG,
            true,
            &checked.config.servers,
            checked.errors.errors(),
        );
    }
    section
}

/// What is known of `client`; the servers of its files are added to `candidates`.
fn client_section(
    client: &'static Client,
    env: &dyn Environment,
    path: &[PathBuf],
    candidates: &mut Candidates,
) -> ClientSection {
    let home = env.home_dir();
    let project = env.current_dir();
    let users: Vec<PathBuf> = client.existing(home.as_deref(), None);
    let files = client
        .existing(home.as_deref(), project.as_deref())
        .into_iter()
        .map(|file| {
            let chosen = users.contains(&file);
            let checked = toolgate_config::check_file(&file, env);
            let (servers, toolgate) = candidates.add_file(
                client.name,
                chosen,
                &checked.config.servers,
                checked.errors.errors(),
            );
            FileSection {
                path: file,
                project: !chosen,
                servers,
                toolgate,
                problems: checked.errors.errors().iter().map(ToString::to_string).collect(),
            }
        })
        .collect();
    ClientSection {
        name: client.name,
        title: client.title,
        evidence: detect::installed(client.name, home.as_deref(), path),
        files,
    }
}
