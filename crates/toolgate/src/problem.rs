//! A problem with the config, at the path of what it is about (`pipeline[0].rules[2].decision`,
//! `audit.file`): what `config check` lists and what `serve` refuses to start with.

use std::fmt;

/// One problem: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    /// The key path; empty when the problem is about the file as a whole.
    pub(crate) path: String,
    /// What is wrong, and what was expected.
    pub(crate) message: String,
}

impl Problem {
    pub(crate) fn new(path: impl Into<String>, message: impl Into<String>) -> Problem {
        Problem { path: path.into(), message: message.into() }
    }
}

/// `path: message`, as config errors read everywhere.
impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl From<&toolgate_config::ConfigError> for Problem {
    fn from(error: &toolgate_config::ConfigError) -> Problem {
        Problem::new(&error.path, &error.message)
    }
}

impl From<toolgate_interceptors::OptionError> for Problem {
    fn from(error: toolgate_interceptors::OptionError) -> Problem {
        Problem::new(error.path, error.message)
    }
}
