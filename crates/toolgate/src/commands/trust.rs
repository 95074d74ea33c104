//! `toolgate trust`: trust a `toolgate.toml` found in a working directory, list what is
//! trusted, take trust back (the store and the rule are `crate::trust`).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use serde_json::json;
use toolgate_config::{FILE_NAME, SystemEnvironment};

use crate::GlobalArgs;
use crate::trust::{TrustStore, Trusted, canonical};

/// What `toolgate trust --help` says first (the subcommand's doc comment in `main.rs` would
/// otherwise be all of it).
pub(crate) const LONG_ABOUT: &str = "Trust a toolgate.toml found in a working directory, so that toolgate uses it.\n\n\
    A toolgate.toml in the current directory was written by whoever wrote that directory: in a \
    checkout of someone else's repository it can name programs for toolgate to start and an \
    endpoint to send an API key to. So toolgate uses such a file only once you have trusted \
    it, and every command refuses it until then, starting nothing. Review the file (and the \
    files it imports), then trust it.\n\n\
    Trust covers the file's content and the content of every file it imports: when any of \
    them changes, toolgate refuses the file again until you trust it again. Programs and \
    scripts the file names are not covered: trusting a config means trusting what it runs.\n\n\
    No trust is needed for a file named by --config or $TOOLGATE_CONFIG, or for your own \
    config file (~/.config/toolgate/toolgate.toml).\n\n\
    Trusted files are recorded (canonical path and SHA-256 digest) in \
    $XDG_STATE_HOME/toolgate/trusted.json, else ~/.local/state/toolgate/trusted.json, \
    readable by you only.";

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    toolgate trust                  trust ./toolgate.toml as it is now\n  \
    toolgate trust ~/src/project    trust ~/src/project/toolgate.toml\n  \
    toolgate trust --list           what is trusted, and whether it changed since\n  \
    toolgate trust --revoke         take trust back from ./toolgate.toml")]
pub(crate) struct TrustArgs {
    /// The config file to trust, or a folder holding a toolgate.toml [default: ./toolgate.toml].
    #[arg(value_name = "PATH")]
    path: Option<PathBuf>,
    /// List the trusted files, each with its state: trusted (unchanged), changed, or missing.
    #[arg(long, conflicts_with_all = ["path", "revoke"])]
    list: bool,
    /// Take trust back from PATH [default: ./toolgate.toml].
    #[arg(long)]
    revoke: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(global: &GlobalArgs, args: TrustArgs) -> anyhow::Result<ExitCode> {
    crate::setup::init_logging(global, "warn");
    let env = SystemEnvironment;
    let mut store = TrustStore::open(&TrustStore::location(&env)?)?;
    let mut out = std::io::stdout().lock();
    if args.list {
        return list(&store, args.json, &mut out);
    }
    let path = config_file(args.path.as_deref());
    if args.revoke {
        // A file that is gone is forgotten by the path it had.
        let key = canonical(&path).unwrap_or_else(|_| absolute(&path));
        let revoked = store.revoke(&key);
        if revoked.is_some() {
            store.save()?;
        }
        if args.json {
            writeln!(out, "{}", json!({"path": key, "revoked": revoked.is_some()}))?;
        } else if revoked.is_some() {
            writeln!(out, "no longer trusted: {}", key.display())?;
        } else {
            writeln!(out, "was not trusted: {}", key.display())?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let path = canonical(&path)?;
    let fingerprint = toolgate_config::fingerprint(&path, &env)
        .map_err(|error| anyhow::anyhow!("{}: {}", error.path, error.message))?;
    let entry = Trusted {
        path: path.clone(),
        digest: fingerprint.digest,
        files: fingerprint.files,
        trusted_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
    };
    store.trust(entry.clone());
    store.save()?;
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&entry)?)?;
    } else {
        writeln!(out, "trusted {} ({})", entry.path.display(), entry.digest)?;
        for import in &entry.files[1..] {
            writeln!(out, "  and what it imports: {}", import.display())?;
        }
        writeln!(out, "recorded in {}", store.file().display())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `PATH` as given (a folder means its `toolgate.toml`), else `./toolgate.toml`.
fn config_file(path: Option<&Path>) -> PathBuf {
    match path {
        Some(path) if path.is_dir() => path.join(FILE_NAME),
        Some(path) => path.to_path_buf(),
        None => PathBuf::from(FILE_NAME),
    }
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Each trusted file and whether it still holds.
fn list(store: &TrustStore, json: bool, out: &mut impl std::io::Write) -> anyhow::Result<ExitCode> {
    let env = SystemEnvironment;
    let rows: Vec<_> = store
        .entries()
        .iter()
        .map(|entry| {
            let state = match toolgate_config::fingerprint(&entry.path, &env) {
                Ok(now) if now.digest == entry.digest => "trusted",
                Ok(_) => "changed",
                Err(_) => "missing",
            };
            (entry, state)
        })
        .collect();
    if json {
        let rows: Vec<_> = rows
            .iter()
            .map(|(entry, state)| {
                json!({"path": entry.path, "state": state, "digest": entry.digest,
                    "files": entry.files, "trusted_at": entry.trusted_at})
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
    } else if rows.is_empty() {
        writeln!(out, "no config is trusted (store: {})", store.file().display())?;
    } else {
        writeln!(out, "{:8} {:20}  PATH", "STATE", "TRUSTED AT")?;
        for (entry, state) in rows {
            writeln!(out, "{state:8} {:20}  {}", entry.trusted_at, entry.path.display())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
