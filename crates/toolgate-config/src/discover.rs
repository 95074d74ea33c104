//! Finding the configuration file: `--config`, then `TOOLGATE_CONFIG`, then `./toolgate.toml`,
//! then the user's config directory; and saying which of these it was ([`Origin`]), because a
//! `toolgate.toml` found in the current directory was put there by whoever wrote the directory
//! and is used only once the user trusts it (the binary's `trust` module decides).

use std::path::{Path, PathBuf};

use crate::env::Environment;
use crate::error::ConfigError;
use crate::error::io_reason;
use crate::load::absolute;

/// The file name looked for in the current and the user config directory.
pub const FILE_NAME: &str = "toolgate.toml";
/// The variable naming a config file.
pub const CONFIG_VAR: &str = "TOOLGATE_CONFIG";

/// Where a config file was found, which says whether the user chose it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Origin {
    /// Named by `--config`.
    Explicit,
    /// Named by `$TOOLGATE_CONFIG`.
    Variable,
    /// `toolgate.toml` in the current directory: whoever wrote the directory chose it (a
    /// checkout, a download), so it is used only once the user trusts it.
    WorkingDirectory,
    /// The user's own config file ([`user_config_file`]), also when the current directory is
    /// the folder it is in.
    UserConfig,
}

/// A config file found by [`discover_file`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovered {
    /// The file, absolute when the current directory is known.
    pub path: PathBuf,
    /// Where it was found.
    pub origin: Origin,
}

impl Discovered {
    /// Whether the file is used only once the user trusts it: a `toolgate.toml` found in the
    /// current directory that is not the user's own config file.
    pub fn needs_trust(&self) -> bool {
        self.origin == Origin::WorkingDirectory
    }
}

/// Finds the config file. See [`crate::discover()`].
pub(crate) fn discover(
    explicit: Option<&Path>,
    env: &dyn Environment,
) -> Result<Option<PathBuf>, ConfigError> {
    Ok(discover_file(explicit, env)?.map(|found| found.path))
}

/// Finds the config file and says where. See [`crate::discover_file`].
pub(crate) fn discover_file(
    explicit: Option<&Path>,
    env: &dyn Environment,
) -> Result<Option<Discovered>, ConfigError> {
    if let Some(path) = explicit {
        let path = named(path, env, "")?;
        return Ok(Some(Discovered { path, origin: Origin::Explicit }));
    }
    if let Some(path) = env.var(CONFIG_VAR).filter(|path| !path.is_empty()) {
        let path = named(Path::new(&path), env, " (named by TOOLGATE_CONFIG)")?;
        return Ok(Some(Discovered { path, origin: Origin::Variable }));
    }
    let user_file = user_config_file(env);
    if let Some(path) = env.current_dir().map(|dir| dir.join(FILE_NAME))
        && path.is_file()
    {
        let same_file = |a: &Path, b: &Path| matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b);
        let origin = match &user_file {
            Some(user_file) if same_file(&path, user_file) => Origin::UserConfig,
            _ => Origin::WorkingDirectory,
        };
        return Ok(Some(Discovered { path, origin }));
    }
    Ok(user_file
        .filter(|path| path.is_file())
        .map(|path| Discovered { path, origin: Origin::UserConfig }))
}

/// `$XDG_CONFIG_HOME/toolgate/toolgate.toml`, else `~/.config/toolgate/toolgate.toml`.
pub(crate) fn user_config_file(env: &dyn Environment) -> Option<PathBuf> {
    let config_dir = env
        .var("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .or_else(|| env.home_dir().map(|home| home.join(".config")))?;
    Some(config_dir.join("toolgate").join(FILE_NAME))
}

/// A path the user named: it must exist.
fn named(path: &Path, env: &dyn Environment, origin: &str) -> Result<PathBuf, ConfigError> {
    let path = absolute(path, env);
    let problem = match std::fs::metadata(&path) {
        Ok(metadata) if metadata.is_dir() => "is a directory, not a config file".to_owned(),
        Ok(_) => return Ok(path),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            "config file not found".to_owned()
        }
        Err(error) => format!("cannot read config file: {}", io_reason(&error)),
    };
    Err(ConfigError::new(path.display().to_string(), format!("{problem}{origin}")))
}

#[cfg(test)]
mod tests;
