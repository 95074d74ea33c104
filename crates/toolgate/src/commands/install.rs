//! `toolgate install --client NAME` and `toolgate uninstall --client NAME`: toolgate put into an
//! MCP client's config file as its one server, the client's own servers moved into
//! toolgate.toml first; and the client's file as it was, back.
//!
//! Install imports the servers (as `toolgate import` does), keeps the client's file as
//! `<file>.toolgate-backup`, and replaces the servers it moved with one entry running `toolgate
//! serve --stdio --config <toolgate.toml>`. A literal secret a server had moves into that
//! entry's environment, in the same file it was in, and toolgate.toml refers to it. Run again,
//! it changes nothing, or moves the servers added since (into the backup too). Uninstall takes
//! toolgate's entry out and puts the backup's servers back; a file nobody edited since is the
//! backup again, byte for byte (`uninstall.rs`).

mod target;
mod uninstall;

use target::{ClientArgs, Target, entry_env, parse, read_text};
pub(crate) use uninstall::{UninstallArgs, run as uninstall};

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use serde_json::{Value, json};
use toolgate_config::{Secret, SystemEnvironment};

use crate::GlobalArgs;
use crate::client_file::{self, ClientFile};
use crate::commands::import::{self, Import, Source};
use crate::gateway_entry::{self, GatewayEntry};
use crate::setup;

#[derive(Debug, Args)]
pub(crate) struct InstallArgs {
    #[command(flatten)]
    target: ClientArgs,
    /// Replace a server toolgate.toml already has under the same name with the client's
    /// (without it, install stops and says which).
    #[arg(long)]
    force: bool,
}

pub(crate) fn install(global: &GlobalArgs, args: &InstallArgs) -> anyhow::Result<ExitCode> {
    setup::init_logging(global, "warn");
    let env = SystemEnvironment;
    let target = args.target.target(&env)?;
    let config = import::target_path(global, &env)?;
    if import::same_file(&target.path, &config) {
        return Err(crate::usage::usage(format!(
            "{} is the client's file and toolgate's config at once: give toolgate.toml with --config",
            config.display()
        )));
    }
    let layout = target.client.layout;
    let original = read_text(&target.path)?;
    let text = original.clone().unwrap_or_default();
    let mut file = parse(&target, &text, &target.path)?;
    let entries = file.entries();
    let moved: Vec<(String, Value)> =
        entries.iter().filter(|(_, v)| client_file::is_server(layout, v)).cloned().collect();

    let import = if moved.is_empty() {
        Import::prepare(config.clone(), &[], args.force)?
    } else {
        let source = Source { label: target.client.name.to_owned(), path: target.path.clone() };
        Import::prepare(config.clone(), &[source], args.force)?
    };
    check_import(&import, &target, moved.len())?;

    // The gateway's entry: what an earlier install gave it stays (its variables), and this
    // one's secrets join them.
    let mut env_vars: Vec<(String, Secret)> = Vec::new();
    for (name, value) in &entries {
        if client_file::is_gateway(layout, value) {
            env_vars.extend(entry_env(value));
            file.remove(name);
        }
    }
    for secret in import.secrets() {
        env_vars.retain(|(name, _)| *name != secret.variable);
        env_vars.push((secret.variable.clone(), secret.literal.clone()));
    }
    for (name, _) in &moved {
        file.remove(name);
    }
    let exe = binary_path()?;
    let entry = GatewayEntry::new(&exe, &config, env_vars);
    file.put(gateway_entry::NAME, &client_file::gateway_value(layout, &entry));
    let new_text = file.render();
    let changed = new_text != text;

    let written = (changed || import.changed()) && !args.target.dry_run;
    if written {
        if import.changed() {
            import::write_file(&import.target, &import.new)?;
        }
        if changed {
            save_backup(
                &target,
                original.as_deref(),
                &moved,
                &parse(&target, &text, &target.path)?,
            )?;
            import::write_file(&target.path, &new_text)?;
        }
    }

    let report = InstallReport {
        target: &target,
        import: &import,
        moved: &moved,
        changed,
        written,
        comments_kept: file.keeps_comments(),
        dry_run: args.target.dry_run,
    };
    let client_diff = (args.target.dry_run && changed).then(|| {
        // The secrets stay in the client's file, but not on the terminal.
        let mut diff = import::unified_diff(&text, &new_text, &target.path);
        for secret in import.secrets().filter(|s| !s.literal.expose().is_empty()) {
            diff = diff.replace(secret.literal.expose(), "***");
        }
        diff
    });
    let config_diff = (args.target.dry_run && import.changed()).then(|| import.diff());
    if args.target.json {
        let mut value = report.json();
        value["diff"] = json!({ "config": config_diff, "client": client_diff });
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, &value)?;
        writeln!(out)?;
    } else {
        for diff in [&config_diff, &client_diff].into_iter().flatten() {
            print!("{diff}");
        }
        let mut err = std::io::stderr().lock();
        import.print_problems(&mut err)?;
        report.text(&mut err)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The path the client should run toolgate by: the `toolgate` found on PATH when it is this
/// very binary (a package manager's link, which outlives an upgrade), else this binary's own.
fn binary_path() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()
        .and_then(|exe| exe.canonicalize())
        .map_err(|error| anyhow::anyhow!("cannot tell where the toolgate binary is: {error}"))?;
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join("toolgate"))
        .find(|candidate| candidate.canonicalize().is_ok_and(|real| real == exe));
    Ok(on_path.unwrap_or(exe))
}

/// Stops the install when the servers cannot all move: the file has a server toolgate cannot
/// read, or toolgate.toml has another server of a name (the client's would not be reached).
fn check_import(import: &Import, target: &Target, expected: usize) -> anyhow::Result<()> {
    if !import.problems.is_empty() {
        let mut out = Vec::new();
        import.print_problems(&mut out)?;
        anyhow::bail!(
            "not installed: {} has servers toolgate cannot read, fix or remove them first:\n{}",
            target.path.display(),
            String::from_utf8_lossy(&out).trim_end()
        );
    }
    let skipped = import.skipped();
    if !skipped.is_empty() {
        return Err(crate::usage::usage(format!(
            "not installed: {} already has other servers called {} (rename them, or --force \
             replaces them with {}'s)",
            import.target.display(),
            skipped.join(", "),
            target.client.title
        )));
    }
    if import.found() != expected {
        anyhow::bail!(
            "not installed: toolgate reads {} servers in {} but found {expected} entries to move; \
             nothing was changed",
            import.found(),
            target.path.display()
        );
    }
    Ok(())
}

/// Keeps the client's file as it was before toolgate came, once: a later install adds the
/// servers it moves to that backup, so that uninstall puts them back too. A file that did not
/// exist is kept as an empty backup.
fn save_backup(
    target: &Target,
    original: Option<&str>,
    moved: &[(String, Value)],
    before: &ClientFile,
) -> anyhow::Result<()> {
    match read_text(&target.backup)? {
        None => {
            import::write_file(&target.backup, original.unwrap_or_default())?;
            copy_permissions(&target.path, &target.backup);
        }
        Some(backup) if !moved.is_empty() => {
            let mut file = parse(target, &backup, &target.backup)?;
            for (name, value) in moved {
                if !file.holds_like(name, before) {
                    file.restore(name, value, before);
                }
            }
            import::write_file(&target.backup, &file.render())?;
        }
        Some(_) => {}
    }
    Ok(())
}

/// Gives `to` the permissions of `from` (a client's file may be readable by its owner only).
fn copy_permissions(from: &Path, to: &Path) {
    if let Ok(meta) = std::fs::metadata(from) {
        let _ = std::fs::set_permissions(to, meta.permissions());
    }
}

/// What an install did, for people or as JSON.
struct InstallReport<'a> {
    target: &'a Target,
    import: &'a Import,
    moved: &'a [(String, Value)],
    changed: bool,
    written: bool,
    comments_kept: bool,
    dry_run: bool,
}

impl InstallReport<'_> {
    fn json(&self) -> Value {
        let secrets: Vec<Value> = self
            .import
            .secrets()
            .map(|s| json!({ "server": s.server, "field": s.field, "variable": s.variable }))
            .collect();
        json!({
            "client": self.target.client.name,
            "file": self.target.path.display().to_string(),
            "backup": self.target.backup.display().to_string(),
            "config": self.import.target.display().to_string(),
            "changed": self.changed || self.import.changed(),
            "written": self.written,
            "dry_run": self.dry_run,
            "moved": self.moved.iter().map(|(name, _)| name).collect::<Vec<_>>(),
            "comments_kept": self.comments_kept,
            "secrets": secrets,
            "import": self.import.report(self.written, self.dry_run).json(),
        })
    }

    fn text(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        let title = self.target.client.title;
        let file = self.target.path.display();
        if !self.changed && !self.import.changed() {
            return writeln!(
                out,
                "toolgate is already installed in {title} ({file}); nothing to change"
            );
        }
        if !self.moved.is_empty() {
            self.import.report(self.written, self.dry_run).without_secrets().text(out)?;
        }
        for secret in self.import.secrets() {
            writeln!(
                out,
                "secret: {} {} moves into toolgate's entry in {file} as {}",
                secret.server, secret.field, secret.variable
            )?;
        }
        if !self.comments_kept && self.changed {
            writeln!(
                out,
                "note: {file} is rewritten without its comments (the backup keeps them)"
            )?;
        }
        let verb = if self.dry_run { "would run" } else { "runs" };
        writeln!(
            out,
            "{title} {verb} toolgate ({} servers moved into {}); backup: {}",
            self.moved.len(),
            self.import.target.display(),
            self.target.backup.display()
        )?;
        if self.written {
            writeln!(
                out,
                "restart {title} to use it; `toolgate uninstall --client {}` undoes this",
                self.target.client.name
            )?;
        }
        Ok(())
    }
}
