//! The errors that mean the command was used wrongly (a bad config, a bad pipeline, a bad
//! argument): they exit with [`EXIT_USAGE`] (see `setup::exit_code_for`).

use std::path::PathBuf;

/// Exit code for a bad config or bad usage (`EX_USAGE`).
pub(crate) const EXIT_USAGE: u8 = 64;

/// A config problem: exits with [`EXIT_USAGE`].
#[derive(Debug, thiserror::Error)]
#[error("invalid configuration{}:\n{errors}", source_suffix(.path))]
pub(crate) struct InvalidConfig {
    pub(crate) path: Option<PathBuf>,
    pub(crate) errors: toolgate_config::ConfigErrors,
}

/// `[[pipeline]]` entries that cannot be built: exits with [`EXIT_USAGE`].
#[derive(Debug, thiserror::Error)]
#[error("invalid pipeline:\n{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
pub(crate) struct InvalidPipeline(pub(crate) Vec<toolgate_interceptors::OptionError>);

/// A command used in a way it cannot work (a server that is not configured, no place for a
/// file): exits with [`EXIT_USAGE`].
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Usage(pub(crate) String);

/// A [`Usage`] error saying `message`.
pub(crate) fn usage(message: impl Into<String>) -> anyhow::Error {
    Usage(message.into()).into()
}

fn source_suffix(path: &Option<PathBuf>) -> String {
    path.as_ref().map(|p| format!(" in {}", p.display())).unwrap_or_default()
}
