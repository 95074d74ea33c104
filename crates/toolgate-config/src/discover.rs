//! Finding the configuration file: `--config`, then `TOOLGATE_CONFIG`, then `./toolgate.toml`,
//! then the user's config directory.

use std::path::{Path, PathBuf};

use crate::env::Environment;
use crate::error::ConfigError;
use crate::load::{absolute, io_reason};

/// The file name looked for in the current and the user config directory.
pub const FILE_NAME: &str = "toolgate.toml";
/// The variable naming a config file.
pub const CONFIG_VAR: &str = "TOOLGATE_CONFIG";

/// Finds the config file. See [`crate::discover`].
pub(crate) fn discover(
    explicit: Option<&Path>,
    env: &dyn Environment,
) -> Result<Option<PathBuf>, ConfigError> {
    if let Some(path) = explicit {
        return named(path, env, "").map(Some);
    }
    if let Some(path) = env.var(CONFIG_VAR).filter(|path| !path.is_empty()) {
        return named(Path::new(&path), env, " (named by TOOLGATE_CONFIG)").map(Some);
    }
    let candidates = [env.current_dir().map(|dir| dir.join(FILE_NAME)), user_config_file(env)];
    Ok(candidates.into_iter().flatten().find(|path| path.is_file()))
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
