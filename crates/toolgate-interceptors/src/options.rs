//! Reading a kind's options from its `[[pipeline]]` table, with errors that name the field.

use std::fmt;
use std::time::Duration;

use serde_json::{Map, Value};
use toolgate_config::InterceptorConfig;
use toolgate_intercept::Descriptor;

/// A problem with one option, at its path (`pipeline[0].rules[2].decision`): a config error
/// like any other, so that `config check` lists them together.
pub use toolgate_config::ConfigError as OptionError;

/// A table of options being read; collects every error.
pub(crate) struct Options<'a> {
    path: String,
    map: &'a Map<String, Value>,
    pub(crate) errors: Vec<OptionError>,
}

impl<'a> Options<'a> {
    pub(crate) fn new(path: impl Into<String>, map: &'a Map<String, Value>) -> Options<'a> {
        Options { path: path.into(), map, errors: Vec::new() }
    }

    pub(crate) fn at(&self, key: &str) -> String {
        format!("{}.{key}", self.path)
    }

    pub(crate) fn error(&mut self, path: &str, message: impl Into<String>) {
        self.errors.push(OptionError::new(path, message));
    }

    /// Reports keys not in `known`.
    pub(crate) fn only(&mut self, known: &[&str]) {
        for key in self.map.keys() {
            if !known.contains(&key.as_str()) {
                let path = self.at(key);
                self.error(
                    &path,
                    format!("unknown option (expected one of: {})", known.join(", ")),
                );
            }
        }
    }

    /// Applies the settings every entry has (see [`crate::configure`]), keeping any errors.
    pub(crate) fn configure(
        &mut self,
        descriptor: Descriptor,
        entry: &InterceptorConfig,
    ) -> Option<Descriptor> {
        match crate::configure(descriptor, entry) {
            Ok(descriptor) => Some(descriptor),
            Err(mut errors) => {
                self.errors.append(&mut errors);
                None
            }
        }
    }

    /// The interceptor `build` makes of `descriptor`, or every error found.
    pub(crate) fn finish<T>(
        self,
        descriptor: Option<Descriptor>,
        build: impl FnOnce(Descriptor) -> T,
    ) -> Result<T, Vec<OptionError>> {
        match (descriptor, self.errors.is_empty()) {
            (Some(descriptor), true) => Ok(build(descriptor)),
            _ => Err(self.errors),
        }
    }

    pub(crate) fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }

    pub(crate) fn string(&mut self, key: &str) -> Option<&'a str> {
        let value = self.get(key)?;
        let text = value.as_str();
        if text.is_none() {
            let path = self.at(key);
            self.error(&path, format!("expected a string, found {value}"));
        }
        text
    }

    pub(crate) fn strings(&mut self, key: &str) -> Vec<String> {
        match self.get(key) {
            None => Vec::new(),
            Some(Value::Array(items)) if items.iter().all(Value::is_string) => {
                items.iter().filter_map(Value::as_str).map(str::to_owned).collect()
            }
            Some(other) => {
                let path = self.at(key);
                self.error(&path, format!("expected an array of strings, found {other}"));
                Vec::new()
            }
        }
    }

    /// A `true`/`false` option; `default` when absent (and, recorded as an error, when it is
    /// something else).
    pub(crate) fn boolean(&mut self, key: &str, default: bool) -> bool {
        match self.get(key) {
            None => default,
            Some(Value::Bool(value)) => *value,
            Some(other) => {
                let path = self.at(key);
                self.error(&path, format!("expected true or false, found {other}"));
                default
            }
        }
    }

    /// An integer option of at least `least` (and at most what `N` holds); `None` when absent
    /// or wrong (recorded as an error: `expected an integer of at least 1, found 0`, in the
    /// config's own word for it).
    pub(crate) fn integer<N>(&mut self, key: &str, least: N) -> Option<N>
    where
        N: TryFrom<u64> + PartialOrd + fmt::Display + Copy,
    {
        let value = self.get(key)?;
        match value.as_u64().and_then(|n| N::try_from(n).ok()).filter(|n| *n >= least) {
            Some(n) => Some(n),
            None => {
                let path = self.at(key);
                self.error(
                    &path,
                    format!("expected an integer of at least {least}, found {value}"),
                );
                None
            }
        }
    }

    /// A duration option (`"30s"`, `"5m"`, ...) of at least `least`; `None` when absent or
    /// wrong (recorded as an error).
    pub(crate) fn duration(&mut self, key: &str, least: Duration) -> Option<Duration> {
        let text = self.string(key)?;
        match positive_duration(text, least) {
            Ok(duration) => Some(duration),
            Err(problem) => {
                let path = self.at(key);
                self.error(&path, problem);
                None
            }
        }
    }

    pub(crate) fn table(&mut self, key: &str) -> Option<&'a Map<String, Value>> {
        let value = self.get(key)?;
        let table = value.as_object();
        if table.is_none() {
            let path = self.at(key);
            self.error(&path, format!("expected a table, found {value}"));
        }
        table
    }
}

/// The smallest duration most options take: anything above zero.
pub(crate) const ABOVE_ZERO: Duration = Duration::from_nanos(1);

/// `text` as a duration of at least `least`, or what is wrong with it in the one wording
/// every option uses (the config's own, `toolgate-config`'s).
pub(crate) fn positive_duration(text: &str, least: Duration) -> Result<Duration, String> {
    match toolgate_core::duration::parse(text) {
        Ok(duration) if duration >= least => Ok(duration),
        Ok(_) if least <= ABOVE_ZERO => Err("must be greater than zero".to_owned()),
        Ok(_) => Err(format!("must be at least {}", toolgate_core::duration::format(least))),
        Err(error) => Err(format!("invalid duration {text:?}: {error}")),
    }
}
