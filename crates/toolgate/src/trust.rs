//! Which config files found in a working directory the user trusts.
//!
//! A `toolgate.toml` in the current directory belongs to whoever wrote that directory: in a
//! checkout of someone else's repository it can list servers (programs toolgate starts) and an
//! `[agent]` endpoint that gets an API key. So, as direnv and mise do, toolgate uses such a
//! file only once the user has trusted it with `toolgate trust`, which records the file's
//! canonical path and the digest of its content ([`toolgate_config::fingerprint`]: the file
//! and every file it imports) in the user's state directory: `$XDG_STATE_HOME/toolgate/`
//! (when absolute), else `~/.local/state/toolgate/`, file `trusted.json`, private to the user
//! (0600 in a 0700 folder). A file whose digest changed needs trust again. A file named by
//! `--config` or `$TOOLGATE_CONFIG`, and the user's own config file, need none: the user chose
//! them.
//!
//! Every command finds its config through [`discover`], which refuses an untrusted one before
//! anything is started or sent.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toolgate_config::{Environment, SystemEnvironment};

use crate::GlobalArgs;

/// The store's file name in the state folder.
const STORE_FILE: &str = "trusted.json";
/// The version of the store's format.
const STORE_VERSION: u32 = 1;

/// The config file this process uses, found as `toolgate_config::discover_file` finds it;
/// an error ([`Untrusted`]) when it was found in the working directory and is not trusted as
/// it is now.
pub(crate) fn discover(global: &GlobalArgs) -> anyhow::Result<Option<PathBuf>> {
    let env = SystemEnvironment;
    let found =
        toolgate_config::discover_file(global.config.as_deref(), &env).map_err(|error| {
            crate::usage::InvalidConfig { path: global.config.clone(), errors: error.into() }
        })?;
    let Some(found) = found else { return Ok(None) };
    if found.needs_trust() {
        require(&found.path, &env)?;
    }
    Ok(Some(found.path))
}

/// Ok when the file at `path` is trusted as it is now.
fn require(path: &Path, env: &dyn Environment) -> anyhow::Result<()> {
    let store = TrustStore::open(&TrustStore::location(env)?)?;
    let canonical = canonical(path)?;
    let fingerprint = toolgate_config::fingerprint(&canonical, env)
        .map_err(|error| anyhow::anyhow!("{}: {}", error.path, error.message))?;
    match store.get(&canonical) {
        Some(entry) if entry.digest == fingerprint.digest => Ok(()),
        Some(_) => Err(Untrusted::Changed { path: canonical }.into()),
        None => Err(Untrusted::New { path: canonical }.into()),
    }
}

/// A config found in the working directory that the user has not trusted: exits with
/// `EX_USAGE` (64), having started nothing.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Untrusted {
    /// Never trusted.
    #[error(
        "not using {}: a toolgate.toml found in the working directory is used only once you \
         trust it (it can start programs); review it, then run: toolgate trust {}",
        .path.display(), shell_word(.path)
    )]
    New {
        /// The file, canonical.
        path: PathBuf,
    },
    /// Trusted, then changed (or a file it imports changed).
    #[error(
        "not using {}: it changed since you trusted it (or a file it imports did); review it, \
         then run: toolgate trust {}",
        .path.display(), shell_word(.path)
    )]
    Changed {
        /// The file, canonical.
        path: PathBuf,
    },
}

/// `path` as one shell word: as it is when it holds nothing a shell reads specially, else in
/// single quotes.
pub(crate) fn shell_word(path: &Path) -> String {
    let text = path.display().to_string();
    let plain = !text.is_empty()
        && text.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c));
    if plain { text } else { format!("'{}'", text.replace('\'', r"'\''")) }
}

/// The file's canonical path (symbolic links and `..` resolved), as trust is recorded.
pub(crate) fn canonical(path: &Path) -> anyhow::Result<PathBuf> {
    std::fs::canonicalize(path)
        .map_err(|error| anyhow::anyhow!("cannot find {}: {}", path.display(), describe_io(&error)))
}

fn describe_io(error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_owned(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        _ => error.to_string(),
    }
}

/// One trusted file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Trusted {
    /// The config file, canonical.
    pub(crate) path: PathBuf,
    /// Its [`toolgate_config::Fingerprint`] digest when it was trusted.
    pub(crate) digest: String,
    /// The files the digest covers (the config, then its imports).
    pub(crate) files: Vec<PathBuf>,
    /// When, RFC 3339.
    pub(crate) trusted_at: String,
}

/// The store's file.
#[derive(Debug, Serialize, Deserialize)]
struct StoreFile {
    version: u32,
    trusted: Vec<Trusted>,
}

/// The trusted files, as recorded in the state directory.
#[derive(Debug)]
pub(crate) struct TrustStore {
    file: PathBuf,
    trusted: Vec<Trusted>,
}

/// Why the store could not be read or written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StoreError {
    /// Neither `$XDG_STATE_HOME` nor a home directory is known.
    #[error("no state directory to keep trusted configs in: set XDG_STATE_HOME or HOME")]
    NoStateDir,
    /// Reading failed.
    #[error("cannot read {}: {cause}", .file.display())]
    Read {
        /// The store's file.
        file: PathBuf,
        /// Why.
        cause: String,
    },
    /// Writing failed.
    #[error("cannot write {}: {cause}", .file.display())]
    Write {
        /// The store's file.
        file: PathBuf,
        /// Why.
        cause: String,
    },
}

impl TrustStore {
    /// `$XDG_STATE_HOME/toolgate/trusted.json` (when absolute), else
    /// `~/.local/state/toolgate/trusted.json`.
    pub(crate) fn location(env: &dyn Environment) -> Result<PathBuf, StoreError> {
        let state = env
            .var("XDG_STATE_HOME")
            .map(PathBuf::from)
            .filter(|dir| dir.is_absolute())
            .or_else(|| env.home_dir().map(|home| home.join(".local").join("state")))
            .ok_or(StoreError::NoStateDir)?;
        Ok(state.join("toolgate").join(STORE_FILE))
    }

    /// The store in `file`; empty when the file does not exist yet.
    pub(crate) fn open(file: &Path) -> Result<TrustStore, StoreError> {
        let read_error = |cause: String| StoreError::Read { file: file.to_path_buf(), cause };
        let trusted = match std::fs::read(file) {
            Ok(bytes) => {
                let store: StoreFile = serde_json::from_slice(&bytes)
                    .map_err(|error| read_error(format!("not a trust store ({error})")))?;
                if store.version != STORE_VERSION {
                    return Err(read_error(format!("unknown version {}", store.version)));
                }
                store.trusted
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(error) => return Err(read_error(describe_io(&error))),
        };
        Ok(TrustStore { file: file.to_path_buf(), trusted })
    }

    /// Where the store is kept.
    pub(crate) fn file(&self) -> &Path {
        &self.file
    }

    /// Every trusted file, in the order they were trusted.
    pub(crate) fn entries(&self) -> &[Trusted] {
        &self.trusted
    }

    /// The entry of the file at `canonical`.
    pub(crate) fn get(&self, canonical: &Path) -> Option<&Trusted> {
        self.trusted.iter().find(|entry| entry.path == canonical)
    }

    /// Records `entry`, replacing what was recorded for its file.
    pub(crate) fn trust(&mut self, entry: Trusted) {
        self.trusted.retain(|old| old.path != entry.path);
        self.trusted.push(entry);
    }

    /// Forgets the file at `path`; what was recorded for it, if anything.
    pub(crate) fn revoke(&mut self, path: &Path) -> Option<Trusted> {
        let at = self.trusted.iter().position(|entry| entry.path == path)?;
        Some(self.trusted.remove(at))
    }

    /// Writes the store: a new private file renamed over the old one, so that a reader never
    /// sees half of it, in a folder only the user can enter.
    pub(crate) fn save(&self) -> Result<(), StoreError> {
        let write_error = |cause: String| StoreError::Write { file: self.file.clone(), cause };
        let dir = self.file.parent().ok_or_else(|| write_error("no parent folder".to_owned()))?;
        private_dir(dir).map_err(|error| write_error(describe_io(&error)))?;
        let store = StoreFile { version: STORE_VERSION, trusted: self.trusted.clone() };
        let mut bytes = serde_json::to_vec_pretty(&store).expect("the store serializes");
        bytes.push(b'\n');
        let temporary = dir.join(format!(".{STORE_FILE}.{}.tmp", std::process::id()));
        let written = write_private(&temporary, &bytes)
            .and_then(|()| std::fs::rename(&temporary, &self.file));
        if let Err(error) = written {
            let _ = std::fs::remove_file(&temporary);
            return Err(write_error(describe_io(&error)));
        }
        Ok(())
    }
}

/// Creates `dir` (and its parents) when missing; a folder created here is 0700.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Writes `bytes` to a new file only the user can read.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
mod tests;
