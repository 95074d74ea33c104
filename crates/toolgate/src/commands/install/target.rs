//! The client file `install` and `uninstall` edit, found from their shared arguments, and
//! what both read from it.

use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::Value;
use toolgate_config::{Environment, Secret, SystemEnvironment};

use crate::client_file::ClientFile;
use crate::clients::{self, Client};

/// Which client file to edit: shared by install and uninstall.
#[derive(Debug, Args)]
pub(crate) struct ClientArgs {
    /// The client: claude-desktop, claude-code, cursor, vscode, windsurf, gemini, zed,
    /// continue, goose or codex.
    #[arg(long, value_name = "CLIENT")]
    pub(crate) client: String,
    /// The client's file for this project (Claude Code's .mcp.json, Cursor's .cursor/mcp.json,
    /// VS Code's .vscode/mcp.json, Gemini CLI's .gemini/settings.json) instead of the
    /// user-wide one.
    #[arg(long, conflicts_with = "file")]
    pub(crate) project: bool,
    /// This file, in the client's format, instead of the client's standard one.
    #[arg(long, value_name = "FILE")]
    pub(crate) file: Option<PathBuf>,
    /// Print the changes as diffs and write nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The client file an install or uninstall edits.
pub(crate) struct Target {
    pub(crate) client: &'static Client,
    pub(crate) path: PathBuf,
    pub(crate) backup: PathBuf,
}

impl ClientArgs {
    pub(crate) fn target(&self, env: &dyn Environment) -> anyhow::Result<Target> {
        let client = clients::find(&self.client).ok_or_else(|| {
            crate::usage::usage(format!(
                "unknown client {:?} (clients: {})",
                self.client,
                clients::names()
            ))
        })?;
        let path = match &self.file {
            Some(file) => std::path::absolute(file)?,
            None => client
                .install_path(env.home_dir().as_deref(), env.current_dir().as_deref(), self.project)
                .ok_or_else(|| {
                    crate::usage::usage(if self.project {
                        format!(
                            "{} has no per-project file toolgate knows: leave out --project",
                            client.title
                        )
                    } else {
                        "no home directory (HOME is not set): give the file with --file".to_owned()
                    })
                })?,
        };
        let backup = backup_path(&path);
        Ok(Target { client, path, backup })
    }
}

/// `<file>.toolgate-backup`.
pub(crate) fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".toolgate-backup");
    PathBuf::from(name)
}

/// A file's text, empty when it does not exist.
pub(crate) fn read_text(path: &Path) -> anyhow::Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => anyhow::bail!("cannot read {}: {error}", path.display()),
    }
}

pub(crate) fn parse(target: &Target, text: &str, what: &Path) -> anyhow::Result<ClientFile> {
    let project = SystemEnvironment.current_dir();
    ClientFile::parse(target.client.layout, text, project.as_deref()).map_err(|error| {
        crate::usage::usage(format!(
            "{} is not a {} config file toolgate can edit: {error}",
            what.display(),
            target.client.title
        ))
    })
}

/// The variables an earlier install put into toolgate's entry.
pub(crate) fn entry_env(value: &Value) -> Vec<(String, Secret)> {
    let env = value.get("env").or_else(|| value.get("envs")).and_then(Value::as_object);
    env.into_iter()
        .flatten()
        .filter_map(|(name, value)| Some((name.clone(), Secret::new(value.as_str()?))))
        .collect()
}
