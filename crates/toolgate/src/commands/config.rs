//! `toolgate config check`: everything `serve` would refuse in the config, printed at once,
//! with nothing started, no socket opened and no file written.
//!
//! In order: the file itself (`toolgate-config`), the pipeline as `build_pipeline` would build
//! it, including what needs an `[admin]` section (`toolgate-interceptors`), `[audit]` as the
//! sinks would take it, and the audit log's place on the file system (read only).

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::json;
use toolgate_config::{Config, ConfigError, SystemEnvironment};

use crate::GlobalArgs;
use crate::events::{self, AuditPlan};
use crate::setup;

#[allow(
    rustdoc::broken_intra_doc_links,
    reason = "clap help text: [audit] is a table of toolgate.toml, not a link"
)]
#[derive(Debug, Subcommand)]
pub(crate) enum ConfigCommand {
    /// Check the config as `serve` would (the file, every pipeline entry and its options,
    /// [audit], [admin]) and print every problem with its path; exit 64 when it is invalid.
    /// Starts nothing and writes nothing.
    Check(CheckArgs),
}

#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// Print {"ok", "path", "problems": [{"path", "message"}], "warnings"} as JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(global: &GlobalArgs, command: ConfigCommand) -> anyhow::Result<ExitCode> {
    setup::init_logging(global, "warn");
    match command {
        ConfigCommand::Check(args) => check(global, &args),
    }
}

/// What was checked and what was found.
struct Report<'a> {
    /// The file, when one was found.
    path: Option<&'a Path>,
    problems: Vec<ConfigError>,
    warnings: &'a [String],
}

fn check(global: &GlobalArgs, args: &CheckArgs) -> anyhow::Result<ExitCode> {
    let env = SystemEnvironment;
    let path = match toolgate_config::discover_file(global.config.as_deref(), &env) {
        Ok(Some(found)) => {
            // Not even checked until trusted: a check reads the variables it names, and
            // `--config` checks it without trusting it.
            if found.needs_trust() {
                crate::trust::discover(global)?;
            }
            found.path
        }
        Ok(None) => return no_config(args),
        Err(error) => {
            let report = Report { path: None, problems: vec![error], warnings: &[] };
            return print(args, &report, None);
        }
    };
    let checked = toolgate_config::check_file(&path, &env);
    let (problems, warnings) = review(&checked);
    let report = Report { path: Some(&checked.path), problems, warnings: &warnings };
    print(args, &report, Some(&checked.config))
}

/// Every problem `serve` would refuse in a checked file (the file's own, the pipeline's,
/// `[audit]`'s, the audit log's place), and the warnings: what `config check` prints (and
/// `doctor` reports).
pub(crate) fn review(checked: &toolgate_config::Checked) -> (Vec<ConfigError>, Vec<String>) {
    let config = &checked.config;
    let mut problems: Vec<ConfigError> = checked.errors.errors().to_vec();
    // An [admin] section with a problem of its own still counts as written: `approval` is not
    // blamed for its absence.
    let admin_written = config.admin.is_some()
        || problems.iter().any(|p| p.path == "admin" || p.path.starts_with("admin."));
    let config_dir = checked.path.parent();
    problems.extend(toolgate_interceptors::check_config_pipeline(
        &crate::setup::pipeline_entries(config, config_dir),
        admin_written,
        &config.servers,
        config_dir,
    ));
    problems.extend(AuditPlan::new(&config.audit).err().unwrap_or_default());
    problems.extend(events::check_log_file(&config.audit));
    let mut warnings = config.warnings.clone();
    warnings.extend(events::log_file_warning(&config.audit));
    warnings.extend(crate::setup::script_tool_problems(config, config_dir));
    (problems, warnings)
}

/// Prints `report` (and, for a valid `config`, what it holds); the exit code says whether it
/// is valid.
fn print(
    args: &CheckArgs,
    report: &Report<'_>,
    config: Option<&Config>,
) -> anyhow::Result<ExitCode> {
    let ok = report.problems.is_empty();
    let mut out = std::io::stdout().lock();
    if args.json {
        let problems: Vec<_> = report
            .problems
            .iter()
            .map(|p| json!({ "path": p.path, "message": p.message }))
            .collect();
        let value = json!({
            "ok": ok,
            "path": report.path.map(|p| p.display().to_string()),
            "problems": problems,
            "warnings": report.warnings,
        });
        serde_json::to_writer_pretty(&mut out, &value)?;
        writeln!(out)?;
    } else {
        for warning in report.warnings {
            writeln!(out, "warning: {warning}")?;
        }
        for problem in &report.problems {
            writeln!(out, "{problem}")?;
        }
        let file = report.path.map_or_else(|| "config".to_owned(), |p| p.display().to_string());
        match config {
            Some(config) if ok => {
                summary(&mut out, &file, config, report.path.and_then(Path::parent))?;
            }
            _ => {
                let count = report.problems.len();
                let noun = if count == 1 { "problem" } else { "problems" };
                writeln!(out, "{file}: invalid ({count} {noun})")?;
            }
        }
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(setup::EXIT_USAGE) })
}

/// What a valid config holds, in a few lines.
fn summary(
    out: &mut impl std::io::Write,
    file: &str,
    config: &Config,
    config_dir: Option<&Path>,
) -> std::io::Result<()> {
    let enabled = config.servers.iter().filter(|s| s.enabled).count();
    writeln!(out, "{file}: ok ({} servers, {enabled} enabled)", config.servers.len())?;
    // With the scripts found in the script folders, as `serve` would run them.
    let entries = setup::pipeline_entries(config, config_dir);
    let kinds: Vec<_> = entries.iter().map(|entry| entry.kind.as_str()).collect();
    if kinds.is_empty() {
        writeln!(out, "pipeline: empty")?;
    } else {
        writeln!(out, "pipeline: {} ({} entries)", kinds.join(", "), kinds.len())?;
    }
    let log = match &config.audit.file {
        Some(path) => format!("log {}", path.display()),
        None => "no log".to_owned(),
    };
    let hooks = config.audit.webhooks.len();
    writeln!(out, "audit: {log}, {hooks} webhook{}", if hooks == 1 { "" } else { "s" })?;
    match &config.admin {
        Some(admin) => {
            let tokens = admin.tokens.len();
            let noun = if tokens == 1 { "token" } else { "tokens" };
            writeln!(out, "admin: {} ({tokens} {noun})", admin.listen)
        }
        None => writeln!(out, "admin: none"),
    }
}

/// No config anywhere: what toolgate would do instead.
fn no_config(args: &CheckArgs) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    if args.json {
        let value = json!({ "ok": true, "path": null, "problems": [], "warnings": [] });
        serde_json::to_writer_pretty(&mut out, &value)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "no config found ($TOOLGATE_CONFIG, ./toolgate.toml, \
             ~/.config/toolgate/toolgate.toml); toolgate would serve its demo server"
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
