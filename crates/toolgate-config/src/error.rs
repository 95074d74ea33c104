//! Configuration errors: every problem found, each with the path of the key it is about.
//!
//! A path is written the way the key appears in the file (`servers.github.headers.Authorization`,
//! `servers.files.args[2]`); errors found in an imported file start with that file's name
//! (`claude.json: mcpServers.x.command`).

use std::fmt;
use std::path::{Path, PathBuf};

/// One problem in a configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Where: a key path such as `servers.github.url`, prefixed by the file for an imported one.
    /// Empty when the problem is about the document as a whole.
    pub path: String,
    /// What is wrong. Never contains the value of a secret.
    pub message: String,
}

impl ConfigError {
    /// An error about the key at `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError { path: path.into(), message: message.into() }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}

/// Every problem found in a configuration, in the order they were found. Never empty when
/// returned as an error.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigErrors {
    errors: Vec<ConfigError>,
    file: Option<PathBuf>,
}

impl ConfigErrors {
    /// The errors, in the order they were found.
    pub fn errors(&self) -> &[ConfigError] {
        &self.errors
    }

    /// How many errors there are.
    pub fn len(&self) -> usize {
        self.errors.len()
    }

    /// True when there is none (never the case for a returned error).
    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    /// The configuration file the errors are about, when they come from a file.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// Iterates over the errors.
    pub fn iter(&self) -> std::slice::Iter<'_, ConfigError> {
        self.errors.iter()
    }

    pub(crate) fn from_vec(errors: Vec<ConfigError>) -> Self {
        ConfigErrors { errors, file: None }
    }

    pub(crate) fn with_file(mut self, file: &Path) -> Self {
        self.file = Some(file.to_path_buf());
        self
    }
}

impl From<ConfigError> for ConfigErrors {
    fn from(error: ConfigError) -> Self {
        ConfigErrors::from_vec(vec![error])
    }
}

impl<'a> IntoIterator for &'a ConfigErrors {
    type Item = &'a ConfigError;
    type IntoIter = std::slice::Iter<'a, ConfigError>;

    fn into_iter(self) -> Self::IntoIter {
        self.errors.iter()
    }
}

impl IntoIterator for ConfigErrors {
    type Item = ConfigError;
    type IntoIter = std::vec::IntoIter<ConfigError>;

    fn into_iter(self) -> Self::IntoIter {
        self.errors.into_iter()
    }
}

/// One `path: message` per line.
impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, error) in self.errors.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

// === key paths ===

/// `parent.key`, quoting `key` as TOML would when it is not a bare key (`servers."my server"`).
pub(crate) fn key_path(parent: &str, key: &str) -> String {
    let bare =
        !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let key = if bare { key.to_owned() } else { format!("{key:?}") };
    if parent.is_empty() { key } else { format!("{parent}.{key}") }
}

/// `parent[index]`.
pub(crate) fn index_path(parent: &str, index: usize) -> String {
    format!("{parent}[{index}]")
}

/// A short, stable reason for an IO error.
pub(crate) fn io_reason(error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound => "file not found".to_owned(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        std::io::ErrorKind::IsADirectory => "is a directory".to_owned(),
        _ => error.to_string(),
    }
}
