//! What `doctor` found, and how it is printed: short text, one line per item with the next
//! step indented under a failure, or one JSON object (`--json`).

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use super::cause::Diagnosis;
use super::detect::Evidence;
use super::tools::Tool;

/// The whole report.
pub(crate) struct Report {
    pub(crate) toolgate: ToolgateSection,
    pub(crate) tools: Vec<Tool>,
    pub(crate) clients: Vec<ClientSection>,
    pub(crate) servers: Vec<ServerRow>,
}

/// toolgate itself.
pub(crate) struct ToolgateSection {
    pub(crate) version: &'static str,
    /// The config it would use; `None` when there is none.
    pub(crate) config: Option<PathBuf>,
    /// What `config check` refuses in it (or why it is not used).
    pub(crate) problems: Vec<String>,
    pub(crate) warnings: Vec<String>,
}

/// One MCP client.
pub(crate) struct ClientSection {
    pub(crate) name: &'static str,
    pub(crate) title: &'static str,
    pub(crate) evidence: Vec<Evidence>,
    pub(crate) files: Vec<FileSection>,
}

/// One config file of a client.
pub(crate) struct FileSection {
    pub(crate) path: PathBuf,
    /// A file of the working directory's, not the user's.
    pub(crate) project: bool,
    /// Its servers, toolgate's own entry left out.
    pub(crate) servers: usize,
    /// Whether toolgate is installed in it.
    pub(crate) toolgate: bool,
    pub(crate) problems: Vec<String>,
}

/// One server.
pub(crate) struct ServerRow {
    pub(crate) name: String,
    pub(crate) from: Vec<String>,
    /// `stdio`, `streamable-http`, ...; `None` when its definition is invalid.
    pub(crate) transport: Option<&'static str>,
    pub(crate) state: State,
}

/// What became of one server.
pub(crate) enum State {
    /// Being started (replaced by its outcome before anything is printed).
    Starting,
    Ok {
        server: Option<String>,
        version: Option<String>,
        tools: usize,
        startup: Duration,
    },
    Failed(Diagnosis),
    /// `enabled = false` (or the client's own switch).
    Disabled,
    /// Found only in the working directory's own files, and `--project` was not given.
    Skipped,
}

/// The next step for a [`State::Skipped`] server.
const SKIPPED_STEP: &str = "it is only in this directory's own client files, which whoever \
    wrote the directory chose: review them, then run toolgate doctor --project";

impl State {
    fn code(&self) -> &'static str {
        match self {
            State::Starting => "starting",
            State::Ok { .. } => "ok",
            State::Failed(_) => "failed",
            State::Disabled => "disabled",
            State::Skipped => "skipped",
        }
    }
}

impl Report {
    /// Whether nothing needs fixing: every server tried started, and the config is valid.
    pub(crate) fn healthy(&self) -> bool {
        self.toolgate.problems.is_empty()
            && self.servers.iter().all(|s| !matches!(s.state, State::Failed(_) | State::Starting))
    }
}

fn path_text(path: &std::path::Path) -> String {
    path.display().to_string()
}

pub(crate) fn write_json(out: &mut impl Write, report: &Report) -> std::io::Result<()> {
    let toolgate = &report.toolgate;
    let tools: Vec<Value> = report
        .tools
        .iter()
        .map(|tool| {
            json!({
                "name": tool.name,
                "path": tool.path.as_deref().map(path_text),
                "version": tool.version.as_ref().ok(),
                "error": tool.version.as_ref().err(),
            })
        })
        .collect();
    let clients: Vec<Value> = report
        .clients
        .iter()
        .map(|client| {
            let files: Vec<Value> = client
                .files
                .iter()
                .map(|file| {
                    json!({
                        "path": path_text(&file.path),
                        "project": file.project,
                        "servers": file.servers,
                        "toolgate": file.toolgate,
                        "problems": file.problems,
                    })
                })
                .collect();
            json!({
                "name": client.name,
                "title": client.title,
                "installed": !client.evidence.is_empty(),
                "evidence": client.evidence.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "files": files,
                "toolgate": client.files.iter().any(|f| f.toolgate),
            })
        })
        .collect();
    let servers: Vec<Value> = report.servers.iter().map(server_json).collect();
    let value = json!({
        "toolgate": {
            "version": toolgate.version,
            "config": toolgate.config.as_deref().map(path_text),
            "ok": toolgate.problems.is_empty(),
            "problems": toolgate.problems,
            "warnings": toolgate.warnings,
        },
        "tools": tools,
        "clients": clients,
        "servers": servers,
    });
    serde_json::to_writer_pretty(&mut *out, &value)?;
    writeln!(out)
}

fn server_json(row: &ServerRow) -> Value {
    let mut value = json!({
        "name": row.name,
        "from": row.from,
        "transport": row.transport,
        "state": row.state.code(),
        "server": null,
        "version": null,
        "tools": null,
        "startup_ms": null,
        "cause": null,
        "subject": null,
        "detail": null,
        "next_step": null,
    });
    match &row.state {
        State::Ok { server, version, tools, startup } => {
            value["server"] = json!(server);
            value["version"] = json!(version);
            value["tools"] = json!(tools);
            value["startup_ms"] = json!(u64::try_from(startup.as_millis()).unwrap_or(u64::MAX));
        }
        State::Failed(diagnosis) => {
            value["cause"] = json!(diagnosis.cause.code());
            value["subject"] = json!(diagnosis.subject);
            value["detail"] = json!(diagnosis.detail);
            value["next_step"] = json!(diagnosis.next_step);
        }
        State::Skipped => value["next_step"] = json!(SKIPPED_STEP),
        State::Starting | State::Disabled => {}
    }
    value
}

pub(crate) fn write_text(out: &mut impl Write, report: &Report) -> std::io::Result<()> {
    let toolgate = &report.toolgate;
    writeln!(out, "toolgate {}", toolgate.version)?;
    match (&toolgate.config, toolgate.problems.len()) {
        (None, 0) => writeln!(
            out,
            "  config: none found (toolgate import writes one with your clients' servers)"
        )?,
        (Some(path), 0) => writeln!(out, "  config: {}: ok", path.display())?,
        (path, count) => {
            let file = path.as_deref().map_or_else(|| "config".to_owned(), path_text);
            let noun = if count == 1 { "problem" } else { "problems" };
            writeln!(out, "  config: {file}: {count} {noun}")?;
            for problem in &toolgate.problems {
                writeln!(out, "    {problem}")?;
            }
        }
    }
    for warning in &toolgate.warnings {
        writeln!(out, "    warning: {warning}")?;
    }

    writeln!(out, "tools")?;
    for tool in &report.tools {
        match (&tool.path, &tool.version) {
            (Some(path), Ok(version)) => {
                writeln!(out, "  {:8} {version} ({})", tool.name, path.display())?;
            }
            (Some(path), Err(error)) => {
                writeln!(out, "  {:8} {} ({error})", tool.name, path.display())?;
            }
            (None, _) => writeln!(out, "  {:8} not found", tool.name)?,
        }
    }

    writeln!(out, "clients")?;
    for client in &report.clients {
        client_text(out, client)?;
    }

    writeln!(out, "servers")?;
    if report.servers.is_empty() {
        writeln!(out, "  none found")?;
    }
    for row in &report.servers {
        server_text(out, row)?;
    }
    let count = |code: &str| report.servers.iter().filter(|r| r.state.code() == code).count();
    let total = report.servers.len();
    let noun = if total == 1 { "server" } else { "servers" };
    write!(out, "{total} {noun}: {} ok, {} failed", count("ok"), count("failed"))?;
    for code in ["disabled", "skipped"] {
        if count(code) > 0 {
            write!(out, ", {} {code}", count(code))?;
        }
    }
    writeln!(out)
}

fn client_text(out: &mut impl Write, client: &ClientSection) -> std::io::Result<()> {
    let installed = if client.evidence.is_empty() {
        "not installed".to_owned()
    } else {
        let evidence: Vec<String> = client.evidence.iter().map(ToString::to_string).collect();
        format!("installed ({})", evidence.join(", "))
    };
    if client.files.is_empty() {
        return writeln!(out, "  {}: {installed}, no config file", client.title);
    }
    writeln!(out, "  {}: {installed}", client.title)?;
    for file in &client.files {
        let project = if file.project { " (this directory's)" } else { "" };
        let noun = if file.servers == 1 { "server" } else { "servers" };
        let toolgate = if file.toolgate { "toolgate installed" } else { "toolgate not in it" };
        writeln!(out, "    {}{project}: {} {noun}, {toolgate}", file.path.display(), file.servers)?;
        for problem in &file.problems {
            writeln!(out, "      problem: {problem}")?;
        }
    }
    Ok(())
}

fn server_text(out: &mut impl Write, row: &ServerRow) -> std::io::Result<()> {
    let head = format!("  {:8} {} [{}]", row.state.code(), row.name, row.from.join(", "));
    match &row.state {
        State::Ok { server, version, tools, startup } => {
            let who = match (server, version) {
                (Some(server), Some(version)) => format!("{server} {version}, "),
                (Some(server), None) => format!("{server}, "),
                _ => String::new(),
            };
            let noun = if *tools == 1 { "tool" } else { "tools" };
            writeln!(out, "{head}: {who}{tools} {noun}, {}ms", startup.as_millis())
        }
        State::Failed(diagnosis) => {
            match &diagnosis.subject {
                Some(subject) => writeln!(out, "{head}: {}: {subject}", diagnosis.cause.words())?,
                None => writeln!(out, "{head}: {}", diagnosis.cause.words())?,
            }
            writeln!(out, "             next: {}", diagnosis.next_step)
        }
        State::Skipped => {
            writeln!(out, "{head}")?;
            writeln!(out, "             next: {SKIPPED_STEP}")
        }
        State::Starting | State::Disabled => writeln!(out, "{head}"),
    }
}
