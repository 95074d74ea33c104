//! `toolgate uninstall --client NAME`: toolgate's entry taken out of the client's file and the
//! servers of the backup `install` kept put back. A file nobody edited since the install
//! becomes the backup again, byte for byte (comments and all); an edited one keeps its edits
//! and gets the servers back. The servers stay in toolgate.toml.

use std::io::Write as _;
use std::process::ExitCode;

use clap::Args;
use serde_json::{Value, json};
use toolgate_config::SystemEnvironment;

use super::target::{ClientArgs, Target, entry_env, parse, read_text};
use crate::GlobalArgs;
use crate::client_file;
use crate::commands::import;
use crate::setup;

#[derive(Debug, Args)]
pub(crate) struct UninstallArgs {
    #[command(flatten)]
    target: ClientArgs,
}

/// What becomes of the client's file.
enum Change {
    /// Nothing: toolgate is not in it and there is no backup.
    None,
    /// Written with this text.
    Write(String),
    /// Removed: it did not exist before the install, and nothing else is in it now.
    Remove,
}

pub(crate) fn run(global: &GlobalArgs, args: &UninstallArgs) -> anyhow::Result<ExitCode> {
    setup::init_logging(global, "warn");
    let target = args.target.target(&SystemEnvironment)?;
    let layout = target.client.layout;
    let current = read_text(&target.path)?.unwrap_or_default();
    let backup = read_text(&target.backup)?;
    let mut file = parse(&target, &current, &target.path)?;
    let mut gateways = Vec::new();
    let mut secrets = Vec::new();
    for (name, value) in file.entries() {
        if client_file::is_gateway(layout, &value) {
            secrets.extend(entry_env(&value).into_iter().map(|(_, secret)| secret));
            file.remove(&name);
            gateways.push(name);
        }
    }
    let mut restored = Vec::new();
    let change = match &backup {
        None if gateways.is_empty() => Change::None,
        None => Change::Write(file.render()),
        Some(backup) => {
            let before = parse(&target, backup, &target.backup)?;
            for (name, value) in before.entries() {
                if !file.holds_like(&name, &before) {
                    file.restore(&name, &value, &before);
                    restored.push(name);
                }
            }
            if backup.is_empty() && file.is_blank() {
                Change::Remove
            } else if file.meaning() == before.meaning() {
                Change::Write(backup.clone())
            } else {
                Change::Write(file.render())
            }
        }
    };

    let dry_run = args.target.dry_run;
    let diff = match &change {
        Change::Write(text) if *text != current => {
            Some(import::unified_diff(&current, text, &target.path))
        }
        Change::Remove => Some(import::unified_diff(&current, "", &target.path)),
        _ => None,
    }
    // The secrets stay in the client's file, but not on the terminal.
    .map(|mut diff| {
        for secret in secrets.iter().filter(|s| !s.expose().is_empty()) {
            diff = diff.replace(secret.expose(), "***");
        }
        diff
    });
    if !dry_run {
        match &change {
            Change::None => {}
            Change::Write(text) => {
                if *text != current {
                    import::write_file(&target.path, text)?;
                }
            }
            Change::Remove => std::fs::remove_file(&target.path).map_err(|error| {
                anyhow::anyhow!("cannot remove {}: {error}", target.path.display())
            })?,
        }
        if backup.is_some() {
            std::fs::remove_file(&target.backup).map_err(|error| {
                anyhow::anyhow!("cannot remove {}: {error}", target.backup.display())
            })?;
        }
    }

    let report = Report {
        target: &target,
        change: &change,
        had_backup: backup.is_some(),
        restored: &restored,
        dry_run,
    };
    if args.target.json {
        let mut value = report.json();
        value["diff"] = json!(diff.as_ref().filter(|_| dry_run));
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, &value)?;
        writeln!(out)?;
    } else {
        if dry_run && let Some(diff) = &diff {
            print!("{diff}");
        }
        report.text(&mut std::io::stderr().lock())?;
    }
    Ok(ExitCode::SUCCESS)
}

struct Report<'a> {
    target: &'a Target,
    change: &'a Change,
    had_backup: bool,
    restored: &'a [String],
    dry_run: bool,
}

impl Report<'_> {
    fn json(&self) -> Value {
        json!({
            "client": self.target.client.name,
            "file": self.target.path.display().to_string(),
            "backup": self.had_backup.then(|| self.target.backup.display().to_string()),
            "installed": !matches!(self.change, Change::None),
            "removed_file": matches!(self.change, Change::Remove),
            "restored": self.restored,
            "dry_run": self.dry_run,
        })
    }

    fn text(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        let title = self.target.client.title;
        let file = self.target.path.display();
        if matches!(self.change, Change::None) {
            return writeln!(out, "toolgate is not installed in {title} ({file}); nothing to do");
        }
        let verb = if self.dry_run { "would be" } else { "is" };
        if !self.had_backup {
            writeln!(
                out,
                "warning: no backup ({}): toolgate's entry {verb} removed, but {title}'s own \
                 servers are not put back (they are in toolgate.toml)",
                self.target.backup.display()
            )?;
        } else if matches!(self.change, Change::Remove) {
            writeln!(out, "{file} {verb} removed: it did not exist before the install")?;
        } else {
            writeln!(
                out,
                "{file} {verb} restored ({} servers back: {})",
                self.restored.len(),
                self.restored.join(", ")
            )?;
        }
        writeln!(out, "the servers stay in toolgate.toml; restart {title} to use its own again")
    }
}
