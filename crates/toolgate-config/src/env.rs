//! The environment a configuration is read in: variables, current directory, home directory.
//!
//! Everything that looks outside the config text goes through [`Environment`], so tests pass a
//! [`FixedEnvironment`] instead of touching the process.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// Where variables and directories come from.
pub trait Environment {
    /// The value of variable `name`, or `None` when it is unset (or not valid Unicode).
    fn var(&self, name: &str) -> Option<String>;

    /// The directory relative paths given on the command line are resolved against.
    fn current_dir(&self) -> Option<PathBuf>;

    /// The user's home directory.
    fn home_dir(&self) -> Option<PathBuf>;
}

/// The real process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemEnvironment;

impl Environment for SystemEnvironment {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    fn current_dir(&self) -> Option<PathBuf> {
        std::env::current_dir().ok()
    }

    fn home_dir(&self) -> Option<PathBuf> {
        dirs::home_dir()
    }
}

/// An environment given by value, for tests and embedding.
///
/// ```
/// use toolgate_config::{Environment, FixedEnvironment};
///
/// let env = FixedEnvironment::new().with_var("TOKEN", "abc").with_home_dir("/home/ada");
/// assert_eq!(env.var("TOKEN").as_deref(), Some("abc"));
/// assert_eq!(env.var("OTHER"), None);
/// ```
#[derive(Debug, Clone, Default)]
pub struct FixedEnvironment {
    vars: BTreeMap<String, String>,
    current_dir: Option<PathBuf>,
    home_dir: Option<PathBuf>,
}

impl FixedEnvironment {
    /// No variables, no current directory, no home directory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets variable `name`.
    pub fn with_var(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.vars.insert(name.into(), value.into());
        self
    }

    /// Sets the current directory.
    pub fn with_current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.current_dir = Some(dir.into());
        self
    }

    /// Sets the home directory.
    pub fn with_home_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.home_dir = Some(dir.into());
        self
    }
}

impl Environment for FixedEnvironment {
    fn var(&self, name: &str) -> Option<String> {
        self.vars.get(name).cloned()
    }

    fn current_dir(&self) -> Option<PathBuf> {
        self.current_dir.clone()
    }

    fn home_dir(&self) -> Option<PathBuf> {
        self.home_dir.clone()
    }
}
