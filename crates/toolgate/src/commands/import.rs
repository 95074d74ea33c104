//! `toolgate import [CLIENT | FILE]...`: the MCP servers of the clients' config files, written
//! into toolgate.toml as `[servers.NAME]` tables, the rest of the file kept as it was.
//!
//! A server found in several clients is written once; different servers with one name get
//! the client's name as a suffix; a server toolgate.toml already has with another definition
//! is left as it is (unless `--force`). Literal secrets are not copied: each becomes a
//! `${VAR}` reference, and the report says which variable to set (`render.rs`).

mod render;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use serde_json::json;
use toml_edit::{DocumentMut, Item, Table};
use toolgate_config::{Environment, SystemEnvironment};

use crate::GlobalArgs;
use crate::clients::{self, CLIENTS};
use crate::gateway_entry;
use crate::setup;
pub(crate) use render::SecretVar;
use render::{References, Renderer, Secrets};

#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    /// Clients (claude-desktop, claude-code, cursor, vscode, windsurf, gemini, zed, continue,
    /// goose, codex) or config files to import from. None: every client whose config file is
    /// found at its standard place (under $HOME, and the project's own in this directory).
    #[arg(value_name = "CLIENT | FILE")]
    sources: Vec<String>,
    /// Print the change to toolgate.toml as a diff and write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Replace a server toolgate.toml already has under the same name with another definition
    /// (without it, such a server is reported and left as it is).
    #[arg(long)]
    force: bool,
    /// Print the report as JSON on stdout: {"path", "written", "sources", "added", "merged",
    /// "renamed", "replaced", "unchanged", "skipped", "secrets", "diff"}.
    #[arg(long)]
    json: bool,
}

/// A config file to import from.
pub(crate) struct Source {
    /// The client's name, or the file's stem.
    pub(crate) label: String,
    pub(crate) path: PathBuf,
}

/// A server to write: its name in toolgate.toml and where it was found.
struct Planned {
    name: String,
    /// Its name in the client's file.
    original: String,
    table: Table,
    /// `table` as a value, to compare definitions.
    value: toml::Value,
    from: Vec<String>,
    secrets: Vec<SecretVar>,
}

/// What became of one [`Planned`] server.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Added,
    Replaced,
    Unchanged,
    Skipped,
}

pub(crate) fn run(global: &GlobalArgs, args: &ImportArgs) -> anyhow::Result<ExitCode> {
    setup::init_logging(global, "warn");
    let env = SystemEnvironment;
    let target = target_path(global, &env)?;
    let (sources, problems) = sources(&args.sources, &env)?;
    let mut import = Import::prepare(target, &sources, args.force)?;
    import.problems.splice(0..0, problems);
    let changed = import.changed();
    let written = changed && !args.dry_run;
    if written {
        write_file(&import.target, &import.new)?;
    }
    let diff = (args.dry_run && changed).then(|| import.diff());
    let report = import.report(written, args.dry_run);
    if args.json {
        let mut value = report.json();
        value["sources"] = json!(import.read);
        value["problems"] = json!(import.problems);
        value["warnings"] = json!(import.warnings);
        value["diff"] = json!(diff);
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, &value)?;
        writeln!(out)?;
    } else {
        if let Some(diff) = &diff {
            print!("{diff}");
        }
        let mut err = std::io::stderr().lock();
        import.print_problems(&mut err)?;
        report.text(&mut err)?;
    }
    Ok(if import.problems.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// One import worked out and not yet written: toolgate.toml's text before and after, and
/// what becomes of each server found.
pub(crate) struct Import {
    /// The toolgate.toml written to.
    pub(crate) target: PathBuf,
    pub(crate) old: String,
    pub(crate) new: String,
    plan: Vec<Planned>,
    outcomes: Vec<Outcome>,
    /// Each file read: its client, path and number of servers.
    pub(crate) read: Vec<serde_json::Value>,
    /// What stops the import from being whole (a server that could not be read).
    pub(crate) problems: Vec<String>,
    pub(crate) warnings: Vec<String>,
}

impl Import {
    /// The servers of `sources` merged into `target`'s text (read here; missing is empty).
    pub(crate) fn prepare(
        target: PathBuf,
        sources: &[Source],
        force: bool,
    ) -> anyhow::Result<Import> {
        let old = match std::fs::read_to_string(&target) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(error) => anyhow::bail!("cannot read {}: {error}", target.display()),
        };
        let mut doc: DocumentMut = old.parse().map_err(|error| {
            crate::usage::usage(format!("{} is not valid TOML: {error}", target.display()))
        })?;

        let references = References::default();
        let secrets = Secrets::new();
        let renderer = Renderer { references: &references, secrets: &secrets };
        let mut plan: Vec<Planned> = Vec::new();
        let mut read = Vec::new();
        let mut warnings = Vec::new();
        let mut problems = Vec::new();
        for source in sources {
            if same_file(&source.path, &target) {
                continue;
            }
            let checked = toolgate_config::check_file(&source.path, &references);
            for error in checked.errors.errors() {
                problems.push(format!("{}: {error}", source.path.display()));
            }
            warnings.extend(
                checked.config.warnings.iter().map(|w| format!("{}: {w}", source.path.display())),
            );
            // The entry `toolgate install` put there is toolgate itself, not a server for it.
            let servers: Vec<_> =
                checked.config.servers.iter().filter(|s| !gateway_entry::is_gateway(s)).collect();
            read.push(json!({
                "client": source.label,
                "path": source.path.display().to_string(),
                "servers": servers.len(),
            }));
            for server in servers {
                plan_server(&mut plan, &renderer, &source.label, server);
            }
        }

        let existing = existing_servers(&old);
        let servers = servers_table(&mut doc, &target)?;
        let mut outcomes = Vec::new();
        for planned in &plan {
            let outcome = match existing.get(&planned.name) {
                None => Outcome::Added,
                Some(value) if *value == planned.value => Outcome::Unchanged,
                Some(_) if force => Outcome::Replaced,
                Some(_) => Outcome::Skipped,
            };
            if matches!(outcome, Outcome::Added | Outcome::Replaced) {
                servers.insert(&planned.name, Item::Table(planned.table.clone()));
            }
            outcomes.push(outcome);
        }
        let new = doc.to_string();
        Ok(Import { target, old, new, plan, outcomes, read, problems, warnings })
    }

    /// Whether toolgate.toml changes.
    pub(crate) fn changed(&self) -> bool {
        self.new != self.old
    }

    /// The change to toolgate.toml, as a unified diff.
    pub(crate) fn diff(&self) -> String {
        unified_diff(&self.old, &self.new, &self.target)
    }

    /// How many servers were found.
    pub(crate) fn found(&self) -> usize {
        self.plan.len()
    }

    /// The servers left out because toolgate.toml has another of that name (without --force).
    pub(crate) fn skipped(&self) -> Vec<&str> {
        self.plan
            .iter()
            .zip(&self.outcomes)
            .filter(|(_, o)| **o == Outcome::Skipped)
            .map(|(p, _)| p.name.as_str())
            .collect()
    }

    /// The literal secrets left out of toolgate.toml, each with the variable standing for it.
    pub(crate) fn secrets(&self) -> impl Iterator<Item = &SecretVar> {
        self.plan
            .iter()
            .zip(&self.outcomes)
            .filter(|(_, o)| **o != Outcome::Skipped)
            .flat_map(|(p, _)| &p.secrets)
    }

    pub(crate) fn report(&self, written: bool, dry_run: bool) -> Report<'_> {
        Report {
            target: &self.target,
            plan: &self.plan,
            outcomes: &self.outcomes,
            written,
            dry_run,
            say_secrets: true,
        }
    }

    /// The warnings and problems, one line each.
    pub(crate) fn print_problems(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        for warning in &self.warnings {
            writeln!(out, "warning: {warning}")?;
        }
        for problem in &self.problems {
            writeln!(out, "error: {problem}")?;
        }
        Ok(())
    }
}

/// Where the servers are written: `--config`, else the config toolgate would use, else
/// `toolgate.toml` in the current directory.
pub(crate) fn target_path(global: &GlobalArgs, env: &dyn Environment) -> anyhow::Result<PathBuf> {
    let path = match &global.config {
        Some(path) => std::path::absolute(path)?,
        None => match toolgate_config::discover(None, env)? {
            Some(path) => path,
            None => std::path::absolute(toolgate_config::FILE_NAME)?,
        },
    };
    if path.extension().is_none_or(|ext| !ext.eq_ignore_ascii_case("toml")) {
        return Err(crate::usage::usage(format!(
            "{} is not a toolgate.toml: servers are imported into a .toml file (give one with --config)",
            path.display()
        )));
    }
    Ok(path)
}

/// The files the arguments name, and the problems finding them. An unknown argument is a
/// usage error.
fn sources(args: &[String], env: &dyn Environment) -> anyhow::Result<(Vec<Source>, Vec<String>)> {
    let home = env.home_dir();
    let project = env.current_dir();
    let of_client = |client: &clients::Client| {
        client
            .existing(home.as_deref(), project.as_deref())
            .into_iter()
            .map(|path| Source { label: client.name.to_owned(), path })
            .collect::<Vec<_>>()
    };
    let mut found = Vec::new();
    let mut problems = Vec::new();
    if args.is_empty() {
        found.extend(CLIENTS.iter().flat_map(of_client));
        if found.is_empty() {
            problems
                .push(format!("no MCP client's config file found (clients: {})", clients::names()));
        }
    }
    for arg in args {
        let path = Path::new(arg);
        if let Some(client) = clients::find(arg).filter(|_| !path.is_file()) {
            let files = of_client(client);
            if files.is_empty() {
                let looked: Vec<String> = client
                    .paths(home.as_deref(), project.as_deref())
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect();
                problems.push(format!(
                    "no config file of {} found (looked at {})",
                    client.title,
                    looked.join(", ")
                ));
            }
            found.extend(files);
        } else if path.is_file() {
            let label =
                path.file_stem().map_or("file".into(), |stem| stem.to_string_lossy().into_owned());
            found.push(Source { label, path: std::path::absolute(path)? });
        } else {
            return Err(crate::usage::usage(format!(
                "{arg:?} is neither a client ({}) nor a file",
                clients::names()
            )));
        }
    }
    Ok((found, problems))
}

pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// Adds `server`, read from `label`'s file, to `plan`: merged with the same server found
/// before, renamed when another has its name.
fn plan_server(
    plan: &mut Vec<Planned>,
    renderer: &Renderer<'_>,
    label: &str,
    server: &toolgate_config::ServerConfig,
) {
    let (table, secrets) = renderer.table(&server.name, server);
    let value = as_value(&server.name, &table);
    if let Some(same) = plan
        .iter_mut()
        .find(|p| p.original == server.name && p.value == value && p.name == server.name)
    {
        if !same.from.iter().any(|from| from == label) {
            same.from.push(label.to_owned());
        }
        return;
    }
    let mut name = server.name.clone();
    if plan.iter().any(|p| p.name == name) {
        let base = format!("{}-{label}", server.name);
        name = base.clone();
        let mut n = 2;
        while plan.iter().any(|p| p.name == name) {
            name = format!("{base}-{n}");
            n += 1;
        }
    }
    let (table, secrets, value) = if name == server.name {
        (table, secrets, value)
    } else {
        let (table, secrets) = renderer.table(&name, server);
        let value = as_value(&name, &table);
        (table, secrets, value)
    };
    plan.push(Planned {
        name,
        original: server.name.clone(),
        table,
        value,
        from: vec![label.to_owned()],
        secrets,
    });
}

/// `table` as the value `[servers.NAME]` holds.
fn as_value(name: &str, table: &Table) -> toml::Value {
    let mut doc = DocumentMut::new();
    let mut servers = Table::new();
    servers.insert(name, Item::Table(table.clone()));
    doc.insert("servers", Item::Table(servers));
    existing_servers(&doc.to_string()).remove(name).unwrap_or(toml::Value::Boolean(false))
}

/// The servers a toolgate.toml's text defines, by name.
fn existing_servers(text: &str) -> std::collections::BTreeMap<String, toml::Value> {
    let Ok(mut root) = toml::from_str::<toml::Table>(text) else { return Default::default() };
    match root.remove("servers") {
        Some(toml::Value::Table(servers)) => servers.into_iter().collect(),
        _ => Default::default(),
    }
}

/// `[servers]` of `doc`, made when missing.
fn servers_table<'d>(doc: &'d mut DocumentMut, target: &Path) -> anyhow::Result<&'d mut Table> {
    let item = doc.entry("servers").or_insert_with(|| {
        let mut table = Table::new();
        table.set_implicit(true);
        Item::Table(table)
    });
    item.as_table_mut().ok_or_else(|| {
        crate::usage::usage(format!(
            "{}: `servers` is not a table of [servers.NAME] sections; cannot add to it",
            target.display()
        ))
    })
}

/// Writes `text` to `path` through a file beside it, so that a failure leaves the old file;
/// an existing file keeps its permissions.
pub(crate) fn write_file(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut temp = path.as_os_str().to_owned();
    temp.push(".toolgate-import");
    let temp = PathBuf::from(temp);
    std::fs::write(&temp, text)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", temp.display()))?;
    // The file keeps who may read it (a client's file with secrets may be its owner's only).
    if let Ok(meta) = std::fs::metadata(path) {
        let _ = std::fs::set_permissions(&temp, meta.permissions());
    }
    std::fs::rename(&temp, path)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    Ok(())
}

pub(crate) fn unified_diff(old: &str, new: &str, path: &Path) -> String {
    let name = path.display().to_string();
    similar::TextDiff::from_lines(old, new).unified_diff().header(&name, &name).to_string()
}

/// What an import did, for people or as JSON.
pub(crate) struct Report<'a> {
    target: &'a Path,
    plan: &'a [Planned],
    outcomes: &'a [Outcome],
    written: bool,
    dry_run: bool,
    /// Whether the text tells the user to set each secret's variable (install sets them).
    say_secrets: bool,
}

impl Report<'_> {
    /// The report without the lines telling the user to set the secrets' variables.
    pub(crate) fn without_secrets(self) -> Self {
        Report { say_secrets: false, ..self }
    }

    fn each(&self, outcome: Outcome) -> impl Iterator<Item = &Planned> {
        self.plan.iter().zip(self.outcomes).filter(move |(_, o)| **o == outcome).map(|(p, _)| p)
    }

    /// The secrets of the servers that are in the file now.
    fn secrets(&self) -> impl Iterator<Item = &SecretVar> {
        self.plan
            .iter()
            .zip(self.outcomes)
            .filter(|(_, o)| **o != Outcome::Skipped)
            .flat_map(|(p, _)| &p.secrets)
    }

    pub(crate) fn json(&self) -> serde_json::Value {
        let names = |outcome| {
            self.each(outcome)
                .map(|p| json!({ "name": p.name, "from": p.from }))
                .collect::<Vec<_>>()
        };
        let merged: Vec<_> = self
            .plan
            .iter()
            .filter(|p| p.from.len() > 1)
            .map(|p| json!({ "name": p.name, "from": p.from }))
            .collect();
        let renamed: Vec<_> = self
            .plan
            .iter()
            .filter(|p| p.name != p.original)
            .map(|p| json!({ "name": p.name, "original": p.original, "from": p.from }))
            .collect();
        let secrets: Vec<_> = self
            .secrets()
            .map(|s| json!({ "server": s.server, "field": s.field, "variable": s.variable }))
            .collect();
        json!({
            "path": self.target.display().to_string(),
            "dry_run": self.dry_run,
            "written": self.written,
            "added": names(Outcome::Added),
            "replaced": names(Outcome::Replaced),
            "unchanged": names(Outcome::Unchanged),
            "skipped": names(Outcome::Skipped),
            "merged": merged,
            "renamed": renamed,
            "secrets": secrets,
        })
    }

    pub(crate) fn text(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        for (planned, outcome) in self.plan.iter().zip(self.outcomes) {
            let from = planned.from.join(", ");
            let verb = match outcome {
                Outcome::Added => "added",
                Outcome::Replaced => "replaced",
                Outcome::Unchanged => "unchanged",
                Outcome::Skipped => "skipped",
            };
            write!(out, "{verb} {} (from {from})", planned.name)?;
            if planned.from.len() > 1 {
                write!(out, ": the same server in {} clients, written once", planned.from.len())?;
            }
            if planned.name != planned.original {
                write!(out, ": renamed from {}, another server has that name", planned.original)?;
            }
            if *outcome == Outcome::Skipped {
                write!(
                    out,
                    ": {} already has a different server of that name (--force replaces it)",
                    self.target.display()
                )?;
            }
            writeln!(out)?;
        }
        for secret in self.secrets().filter(|_| self.say_secrets) {
            writeln!(
                out,
                "secret: {} {} was not copied; set {} in toolgate's environment",
                secret.server, secret.field, secret.variable
            )?;
        }
        let added = self.each(Outcome::Added).count() + self.each(Outcome::Replaced).count();
        let noun = if added == 1 { "server" } else { "servers" };
        if self.written {
            writeln!(out, "wrote {} ({added} {noun} added or replaced)", self.target.display())
        } else if self.dry_run && added > 0 {
            writeln!(
                out,
                "dry run: {} not written ({added} {noun} to add or replace)",
                self.target.display()
            )
        } else {
            writeln!(out, "{}: nothing to change", self.target.display())
        }
    }
}
