//! The checker: walks a parsed document, turns values into typed settings and collects every
//! problem with its path instead of stopping at the first. Shared by the TOML, JSON and YAML
//! dialects.
//!
//! Each `check_*`-style method returns `None` after recording why, so callers evaluate every
//! field first and combine the results last.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::env::Environment;
use crate::error::{ConfigError, index_path, key_path};
use crate::filter::glob;
use crate::interpolate::interpolate;
use crate::model::{Secret, ServerConfig};
use crate::value::{Syntax, Value};

/// The longest prefix allowed.
pub(crate) const MAX_PREFIX_LEN: usize = 32;

/// A server that passed its checks, with the place it was defined (for duplicate reports).
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) server: ServerConfig,
    /// `servers.x`, or `claude.json: mcpServers.x` for an imported one.
    pub(crate) place: String,
}

/// Whether a server is a local command or a remote url.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ServerKind {
    Stdio,
    Http,
}

/// Checks a field that may be absent: `Some(None)` when absent, `None` when present and bad.
pub(crate) fn optional<T>(
    value: Option<&Value>,
    check: impl FnOnce(&Value) -> Option<T>,
) -> Option<Option<T>> {
    match value {
        None => Some(None),
        Some(value) => check(value).map(Some),
    }
}

/// Walks one document and collects its errors and warnings.
pub(crate) struct Checker<'a> {
    env: &'a dyn Environment,
    syntax: Syntax,
    /// The file name every path is prefixed with, for an imported file.
    file: Option<String>,
    /// Relative paths in the document are relative to this directory.
    base_dir: PathBuf,
    errors: Vec<ConfigError>,
    warnings: Vec<String>,
    /// Whether the text being interpolated is one of toolgate's own secrets ([`Self::secret`]).
    in_secret: bool,
    /// The variables toolgate's own secrets were interpolated from.
    secret_vars: BTreeSet<String>,
}

impl<'a> Checker<'a> {
    /// The directory toolgate runs in, as its environment says.
    pub(crate) fn current_dir(&self) -> Option<PathBuf> {
        self.env.current_dir()
    }

    pub(crate) fn new(
        env: &'a dyn Environment,
        syntax: Syntax,
        file: Option<String>,
        base_dir: &Path,
    ) -> Self {
        Checker {
            env,
            syntax,
            file,
            base_dir: base_dir.to_path_buf(),
            errors: Vec::new(),
            warnings: Vec::new(),
            in_secret: false,
            secret_vars: BTreeSet::new(),
        }
    }

    /// Runs `check` on a field that holds one of toolgate's own secrets (an admin token, the
    /// audit key, a webhook's headers): every variable it interpolates is remembered, so that
    /// no server inherits it ([`crate::Config::secret_env`]).
    pub(crate) fn secret<T>(&mut self, check: impl FnOnce(&mut Self) -> T) -> T {
        let outer = std::mem::replace(&mut self.in_secret, true);
        let out = check(self);
        self.in_secret = outer;
        out
    }

    /// The variables [`Self::secret`] fields were interpolated from, so far.
    pub(crate) fn secret_vars(&self) -> &BTreeSet<String> {
        &self.secret_vars
    }

    pub(crate) fn env(&self) -> &'a dyn Environment {
        self.env
    }

    /// `path` as shown to the user: prefixed by the file for an imported document.
    pub(crate) fn place(&self, path: &str) -> String {
        match &self.file {
            Some(file) if path.is_empty() => file.clone(),
            Some(file) => format!("{file}: {path}"),
            None => path.to_owned(),
        }
    }

    pub(crate) fn error(&mut self, path: &str, message: impl Into<String>) {
        let place = self.place(path);
        self.errors.push(ConfigError::new(place, message));
    }

    pub(crate) fn warn(&mut self, path: &str, message: impl std::fmt::Display) {
        let place = self.place(path);
        self.warnings.push(if place.is_empty() {
            message.to_string()
        } else {
            format!("{place}: {message}")
        });
    }

    /// Takes over the errors and warnings of a checker of an imported document.
    pub(crate) fn absorb(&mut self, other: Checker<'_>) {
        self.errors.extend(other.errors);
        self.warnings.extend(other.warnings);
    }

    /// How many errors were recorded so far: a part that added none is valid.
    pub(crate) fn error_count(&self) -> usize {
        self.errors.len()
    }

    pub(crate) fn finish(self) -> (Vec<ConfigError>, Vec<String>) {
        (self.errors, self.warnings)
    }

    // === types ===

    /// Records "expected `what`, found <type of `found`>".
    pub(crate) fn expected(&mut self, path: &str, what: &str, found: &Value) {
        let message = format!("expected {what}, found {}", found.kind(self.syntax));
        self.error(path, message);
    }

    fn table_word(&self) -> &'static str {
        match self.syntax {
            Syntax::Toml => "a table",
            Syntax::Json => "an object",
            Syntax::Yaml => "a mapping",
        }
    }

    pub(crate) fn table<'v>(
        &mut self,
        value: &'v Value,
        path: &str,
    ) -> Option<&'v [(String, Value)]> {
        match value {
            Value::Table(entries) => Some(entries),
            other => {
                let what = self.table_word();
                self.expected(path, what, other);
                None
            }
        }
    }

    pub(crate) fn string<'v>(&mut self, value: &'v Value, path: &str) -> Option<&'v str> {
        match value {
            Value::String(s) => Some(s),
            other => {
                self.expected(path, "a string", other);
                None
            }
        }
    }

    pub(crate) fn boolean(&mut self, value: &Value, path: &str) -> Option<bool> {
        match value {
            Value::Boolean(b) => Some(*b),
            other => {
                self.expected(path, "a boolean", other);
                None
            }
        }
    }

    /// An array of strings; each element that is not a string is reported at its index.
    pub(crate) fn strings<'v>(&mut self, value: &'v Value, path: &str) -> Option<Vec<&'v str>> {
        let Value::Array(items) = value else {
            self.expected(path, "an array of strings", value);
            return None;
        };
        let mut out = Some(Vec::with_capacity(items.len()));
        for (i, item) in items.iter().enumerate() {
            match (self.string(item, &index_path(path, i)), &mut out) {
                (Some(s), Some(out)) => out.push(s),
                _ => out = None,
            }
        }
        out
    }

    /// A table whose values are all strings; each value that is not is reported at its key.
    pub(crate) fn string_table<'v>(
        &mut self,
        value: &'v Value,
        path: &str,
    ) -> Option<Vec<(&'v str, &'v str)>> {
        let Value::Table(entries) = value else {
            let what = match self.syntax {
                Syntax::Toml => "a table of strings",
                Syntax::Json => "an object of strings",
                Syntax::Yaml => "a mapping of strings",
            };
            self.expected(path, what, value);
            return None;
        };
        let mut out = Some(Vec::with_capacity(entries.len()));
        for (key, item) in entries {
            match (self.string(item, &key_path(path, key)), &mut out) {
                (Some(s), Some(out)) => out.push((key.as_str(), s)),
                _ => out = None,
            }
        }
        out
    }

    /// Records that `key` (at `path`) is not one of `known`.
    pub(crate) fn unknown_key(&mut self, path: &str, key: &str, known: &[&str]) {
        let expected = known.join(", ");
        let message = match closest(key, known) {
            Some(near) => {
                format!("unknown key, did you mean {near}? (expected one of: {expected})")
            }
            None => format!("unknown key (expected one of: {expected})"),
        };
        self.error(path, message);
    }

    /// Splits `entries` into the known keys (returned) and the rest (reported).
    pub(crate) fn known_keys<'v>(
        &mut self,
        entries: &'v [(String, Value)],
        path: &str,
        known: &[&str],
    ) -> BTreeMap<&'v str, &'v Value> {
        let mut fields = BTreeMap::new();
        for (key, value) in entries {
            if known.contains(&key.as_str()) {
                fields.insert(key.as_str(), value);
            } else {
                self.unknown_key(&key_path(path, key), key, known);
            }
        }
        fields
    }

    // === interpolation ===

    /// Expands `${VAR}` references in `text`, reporting each unset variable at `path`.
    pub(crate) fn interpolate(&mut self, text: &str, path: &str) -> Option<String> {
        let env = self.env;
        let read = std::cell::RefCell::new(Vec::new());
        let expanded = interpolate(text, |name| {
            read.borrow_mut().push(name.to_owned());
            env.var(name)
        });
        if self.in_secret {
            self.secret_vars.extend(read.into_inner());
        }
        match expanded {
            Ok(text) => Some(text),
            Err(errors) => {
                for error in errors {
                    self.error(path, error.to_string());
                }
                None
            }
        }
    }

    pub(crate) fn interpolated_string(&mut self, value: &Value, path: &str) -> Option<String> {
        let text = self.string(value, path)?;
        self.interpolate(text, path)
    }

    // === server fields ===

    /// Whether the server at `path` is a command or a url server; reports keys that belong
    /// to the other kind (`stdio_keys`, `http_keys`).
    pub(crate) fn mode(
        &mut self,
        path: &str,
        fields: &BTreeMap<&str, &Value>,
        stdio_keys: &[&str],
        http_keys: &[&str],
    ) -> Option<ServerKind> {
        let (mode, misplaced, message) =
            match (fields.contains_key("command"), fields.contains_key("url")) {
                (true, true) => {
                    self.error(
                    path,
                    "has both command and url (a server is either a local command or a remote url)",
                );
                    return None;
                }
                (false, false) => {
                    self.error(
                        path,
                        "needs either command (a local process) or url (a remote server)",
                    );
                    return None;
                }
                (true, false) => (
                    ServerKind::Stdio,
                    http_keys,
                    "only valid for a url server (this one has command)",
                ),
                (false, true) => (
                    ServerKind::Http,
                    stdio_keys,
                    "only valid for a command server (this one has url)",
                ),
            };
        for key in misplaced.iter().filter(|key| fields.contains_key(*key)) {
            self.error(&key_path(path, key), message);
        }
        Some(mode)
    }

    /// A server name: the key under `servers`.
    pub(crate) fn server_name(&mut self, name: &str, path: &str) -> bool {
        let ok = !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
        if !ok {
            self.error(path, "invalid server name (allowed characters: A-Z a-z 0-9 _ . -)");
        }
        ok
    }

    /// The prefix used when none is written: the name, made into a valid prefix.
    pub(crate) fn default_prefix(&mut self, name: &str, path: &str) -> String {
        let prefix: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' })
            .take(MAX_PREFIX_LEN)
            .collect();
        if prefix != name {
            self.warn(
                path,
                format_args!(
                    "the server name is not a valid prefix, so its tools get prefix {prefix:?} (set prefix to choose another)"
                ),
            );
        }
        prefix
    }

    pub(crate) fn prefix(&mut self, value: &Value, path: &str) -> Option<String> {
        let prefix = self.string(value, path)?;
        if !prefix.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-')) {
            self.error(
                path,
                format!("invalid prefix {prefix:?} (allowed characters: A-Z a-z 0-9 _ -)"),
            );
            return None;
        }
        if prefix.len() > MAX_PREFIX_LEN {
            self.error(
                path,
                format!("prefix is {} characters long (at most {MAX_PREFIX_LEN})", prefix.len()),
            );
            return None;
        }
        Some(prefix.to_owned())
    }

    pub(crate) fn command(&mut self, value: &Value, path: &str) -> Option<String> {
        let command = self.interpolated_string(value, path)?;
        if command.trim().is_empty() {
            self.error(path, "must not be empty");
            return None;
        }
        Some(command)
    }

    pub(crate) fn args(&mut self, value: &Value, path: &str) -> Option<Vec<String>> {
        let args = self.strings(value, path)?;
        let mut out = Some(Vec::with_capacity(args.len()));
        for (i, arg) in args.into_iter().enumerate() {
            match (self.interpolate(arg, &index_path(path, i)), &mut out) {
                (Some(arg), Some(out)) => out.push(arg),
                _ => out = None,
            }
        }
        out
    }

    /// `env`: variable names to values, which are secrets.
    pub(crate) fn env_vars(
        &mut self,
        value: &Value,
        path: &str,
    ) -> Option<BTreeMap<String, Secret>> {
        let vars = self.string_table(value, path)?;
        let mut out = Some(BTreeMap::new());
        for (name, text) in vars {
            let var_path = key_path(path, name);
            let valid_name = !name.is_empty() && !name.contains(['=', '\0']);
            if !valid_name {
                self.error(&var_path, "invalid variable name (empty, or contains = or NUL)");
            }
            let mut text = self.interpolate(text, &var_path);
            if text.as_ref().is_some_and(|text| text.contains('\0')) {
                self.error(&var_path, "value contains a NUL character");
                text = None;
            }
            match (valid_name, text, &mut out) {
                (true, Some(text), Some(out)) => {
                    out.insert(name.to_owned(), Secret::new(text));
                }
                _ => out = None,
            }
        }
        out
    }

    /// `env_remove`: variable names or `*` globs.
    pub(crate) fn env_remove(&mut self, value: &Value, path: &str) -> Option<Vec<String>> {
        let names = self.strings(value, path)?;
        let mut ok = true;
        for (i, name) in names.iter().enumerate() {
            let problem = if name.is_empty() {
                Some("must not be empty".to_owned())
            } else {
                glob(name).err().map(|error| format!("invalid pattern {name:?}: {}", error.kind()))
            };
            if let Some(problem) = problem {
                self.error(&index_path(path, i), problem);
                ok = false;
            }
        }
        ok.then(|| names.into_iter().map(str::to_owned).collect())
    }

    /// `env_pass`: names or `*` globs of toolgate's variables the child inherits.
    pub(crate) fn env_pass(&mut self, value: &Value, path: &str) -> Option<Vec<String>> {
        let names = self.strings(value, path)?;
        let mut ok = true;
        for (i, name) in names.iter().enumerate() {
            let problem = if name.is_empty() {
                Some("must not be empty".to_owned())
            } else if name.contains(['=', '\0']) {
                Some(format!("invalid variable name {name:?} (contains = or NUL)"))
            } else {
                glob(name).err().map(|error| format!("invalid pattern {name:?}: {}", error.kind()))
            };
            if let Some(problem) = problem {
                self.error(&index_path(path, i), problem);
                ok = false;
            }
        }
        ok.then(|| names.into_iter().map(str::to_owned).collect())
    }

    /// `cwd`: relative to the directory of the file it is written in.
    pub(crate) fn cwd(&mut self, value: &Value, path: &str) -> Option<PathBuf> {
        let dir = self.interpolated_string(value, path)?;
        if dir.is_empty() {
            self.error(path, "must not be empty");
            return None;
        }
        Some(self.resolve_path(&dir))
    }

    /// `~/x` in the home directory, relative paths in the base directory.
    pub(crate) fn resolve_path(&self, text: &str) -> PathBuf {
        if let (Some(rest), Some(home)) = (text.strip_prefix("~/"), self.env.home_dir()) {
            return home.join(rest);
        }
        if text == "~"
            && let Some(home) = self.env.home_dir()
        {
            return home;
        }
        self.base_dir.join(text)
    }

    /// An `http` or `https` URL. Messages do not quote it: it may carry a token.
    pub(crate) fn url(&mut self, value: &Value, path: &str) -> Option<url::Url> {
        let text = self.interpolated_string(value, path)?;
        let text = text.trim();
        // `url` reads `https:///x` as host `x`; an empty authority is a mistake (often an
        // empty variable), not a host.
        if text.split_once("://").is_some_and(|(_, rest)| rest.is_empty() || rest.starts_with('/'))
        {
            self.error(path, "invalid URL: empty host");
            return None;
        }
        match url::Url::parse(text) {
            Ok(url) if !matches!(url.scheme(), "http" | "https") => {
                let scheme = url.scheme().to_owned();
                self.error(
                    path,
                    format!("unsupported URL scheme {scheme:?} (expected http or https)"),
                );
                None
            }
            Ok(url) => Some(url),
            Err(error) => {
                self.error(path, format!("invalid URL: {error}"));
                None
            }
        }
    }

    /// A socket address to listen on (`IP:port`): `[gateway] listen`, `[admin] listen`.
    pub(crate) fn listen(&mut self, value: &Value, path: &str) -> Option<SocketAddr> {
        let text = self.string(value, path)?;
        match text.parse() {
            Ok(addr) => Some(addr),
            Err(_) => {
                self.error(
                    path,
                    format!(
                        "invalid listen address {text:?} (expected IP:port, such as 127.0.0.1:8931)"
                    ),
                );
                None
            }
        }
    }

    /// `headers`: names to values, which are secrets.
    pub(crate) fn headers(
        &mut self,
        value: &Value,
        path: &str,
    ) -> Option<BTreeMap<String, Secret>> {
        let headers = self.string_table(value, path)?;
        let mut seen = BTreeMap::<String, &str>::new();
        let mut out = Some(BTreeMap::new());
        for (name, text) in headers {
            let header_path = key_path(path, name);
            let mut valid = true;
            if !is_header_name(name) {
                self.error(&header_path, "invalid header name");
                valid = false;
            } else if let Some(first) = seen.insert(name.to_ascii_lowercase(), name) {
                self.error(&header_path, format!("duplicate header (also written as {first:?})"));
                valid = false;
            }
            let value = self.interpolate(text, &header_path);
            if let Some(value) = &value
                && !is_header_value(value)
            {
                self.error(&header_path, "invalid header value (contains a control character)");
                valid = false;
            }
            match (valid, value, &mut out) {
                (true, Some(value), Some(out)) => {
                    out.insert(name.to_owned(), Secret::new(value));
                }
                _ => out = None,
            }
        }
        out
    }

    /// A duration: a string such as `"30s"`, or an integer number of seconds.
    pub(crate) fn duration(&mut self, value: &Value, path: &str) -> Option<Duration> {
        let duration = match value {
            Value::String(text) => match toolgate_core::duration::parse(text) {
                Ok(duration) => duration,
                Err(error) => {
                    self.error(path, format!("invalid duration {text:?}: {error}"));
                    return None;
                }
            },
            Value::Integer(seconds) => match u64::try_from(*seconds) {
                Ok(seconds) => Duration::from_secs(seconds),
                Err(_) => {
                    self.error(path, "must be greater than zero");
                    return None;
                }
            },
            other => {
                self.expected(path, "a duration (such as \"30s\") or a number of seconds", other);
                return None;
            }
        };
        self.positive(duration, path)
    }

    pub(crate) fn positive(&mut self, duration: Duration, path: &str) -> Option<Duration> {
        if duration.is_zero() {
            self.error(path, "must be greater than zero");
            return None;
        }
        Some(duration)
    }

    /// `allow_tools` / `deny_tools`: globs that must compile.
    pub(crate) fn globs(&mut self, value: &Value, path: &str) -> Option<Vec<String>> {
        let patterns = self.strings(value, path)?;
        let mut ok = true;
        for (i, pattern) in patterns.iter().enumerate() {
            if let Err(error) = glob(pattern) {
                self.error(
                    &index_path(path, i),
                    format!("invalid glob {pattern:?}: {}", error.kind()),
                );
                ok = false;
            }
        }
        ok.then(|| patterns.into_iter().map(str::to_owned).collect())
    }
}

/// An HTTP token (RFC 9110).
pub(crate) fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// What `http::HeaderValue` accepts: no control characters except tab.
pub(crate) fn is_header_value(value: &str) -> bool {
    value.bytes().all(|b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}

/// The known key closest to `key`, when it is close enough to be a likely typo.
fn closest<'k>(key: &str, known: &[&'k str]) -> Option<&'k str> {
    let key = key.to_ascii_lowercase();
    known
        .iter()
        .map(|&candidate| (edit_distance(&key, &candidate.to_ascii_lowercase()), candidate))
        .filter(|&(distance, candidate)| distance <= (candidate.len() / 2).min(2))
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, candidate)| candidate)
}

/// Levenshtein distance.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitution = previous + usize::from(ca != cb);
            previous = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(previous + 1);
        }
    }
    row[b.len()]
}

/// Reports prefixes used by more than one enabled server (an empty prefix may be shared).
pub(crate) fn duplicate_prefixes(entries: &[Entry]) -> Vec<ConfigError> {
    let mut errors = Vec::new();
    let mut seen = BTreeMap::<&str, &Entry>::new();
    for entry in entries.iter().filter(|e| e.server.enabled && !e.server.prefix.is_empty()) {
        match seen.get(entry.server.prefix.as_str()) {
            // Same name: already reported as a duplicate server.
            Some(first) if first.server.name == entry.server.name => {}
            Some(first) => errors.push(ConfigError::new(
                entry.place.clone(),
                format!("prefix {:?} is also used by {}", entry.server.prefix, first.place),
            )),
            None => {
                seen.insert(&entry.server.prefix, entry);
            }
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::{closest, edit_distance};

    #[test]
    fn edit_distances() {
        assert_eq!(edit_distance("url", "url"), 0);
        assert_eq!(edit_distance("urll", "url"), 1);
        assert_eq!(edit_distance("comand", "command"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn suggestions() {
        let known = ["command", "args", "url", "env", "env_remove"];
        assert_eq!(closest("urll", &known), Some("url"));
        assert_eq!(closest("comand", &known), Some("command"));
        assert_eq!(closest("Args", &known), Some("args"));
        assert_eq!(closest("envv", &known), Some("env"));
        assert_eq!(closest("pipeline", &known), None);
        assert_eq!(closest("x", &known), None);
    }
}
