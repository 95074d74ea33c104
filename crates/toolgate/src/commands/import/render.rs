//! One imported server as a `[servers.NAME]` table of toolgate.toml: variable references kept
//! as `${VAR}`, literal secrets replaced by a reference to a variable the user is told to set.
//!
//! Client files are read with [`References`], an environment whose every variable reads back
//! as a marker, so that the loader's interpolation leaves a findable trace of each reference
//! instead of its value.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use toml_edit::{Array, InlineTable, Item, Table, value};
use toolgate_config::{
    DEFAULT_CALL_TIMEOUT, DEFAULT_STARTUP_TIMEOUT, Environment, HttpTransport, Secret,
    ServerConfig, SystemEnvironment, TransportConfig,
};
use toolgate_secrets::{Detector, Selection};

const OPEN: &str = "tgimportref_";
const CLOSE: &str = "_tgimportend";

/// The environment client files are read in: each variable is a marker naming it.
#[derive(Default)]
pub(super) struct References {
    /// Every name looked up, to undo a lowercased marker (in a URL's host).
    asked: RefCell<BTreeSet<String>>,
}

impl Environment for References {
    fn var(&self, name: &str) -> Option<String> {
        // The loader reads the OpenTelemetry variables for `[telemetry]`, which a client's
        // file never has: they stay unset.
        if name.starts_with("OTEL_") {
            return None;
        }
        self.asked.borrow_mut().insert(name.to_owned());
        Some(format!("{OPEN}{name}{CLOSE}"))
    }

    fn current_dir(&self) -> Option<PathBuf> {
        SystemEnvironment.current_dir()
    }

    fn home_dir(&self) -> Option<PathBuf> {
        SystemEnvironment.home_dir()
    }
}

impl References {
    /// `text` as toolgate.toml writes it: `$` escaped, each marker back as `${NAME}`.
    /// Whether it held a reference.
    fn restore(&self, text: &str) -> (String, bool) {
        let escaped = text.replace('$', "$$");
        let lower = escaped.to_ascii_lowercase();
        let mut out = String::with_capacity(escaped.len());
        let mut at = 0;
        let mut found = false;
        while let Some(start) = lower[at..].find(OPEN).map(|i| i + at) {
            let body = start + OPEN.len();
            let Some(end) = lower[body..].find(CLOSE).map(|i| i + body) else { break };
            let written = &escaped[body..end];
            let asked = self.asked.borrow();
            let name = asked
                .iter()
                .find(|name| name.as_str() == written)
                .or_else(|| asked.iter().find(|name| name.eq_ignore_ascii_case(written)))
                .map_or(written, String::as_str);
            out.push_str(&escaped[at..start]);
            out.push_str("${");
            out.push_str(name);
            out.push('}');
            at = end + CLOSE.len();
            found = true;
        }
        out.push_str(&escaped[at..]);
        (out, found)
    }
}

/// A literal secret left out of the file, and the variable that now stands for it.
#[derive(Debug, Clone)]
pub(crate) struct SecretVar {
    pub(crate) server: String,
    /// Where it was: `env.GITHUB_TOKEN`, `headers.Authorization`, `args[3]`, `url`.
    pub(crate) field: String,
    pub(crate) variable: String,
    /// What the variable stands for (the token of `Bearer <token>`), for `toolgate install` to
    /// hand to toolgate's own entry in the client's file, where it was before.
    pub(crate) literal: Secret,
}

/// What decides that a literal is a secret.
pub(super) struct Secrets {
    detector: Detector,
}

impl Secrets {
    pub(super) fn new() -> Secrets {
        Secrets { detector: Detector::new(&Selection::all()) }
    }

    /// Whether the value of `key` (none for arguments and URLs) is a secret.
    fn is_secret(&self, key: Option<&str>, text: &str) -> bool {
        if text.is_empty() {
            return false;
        }
        let by_name = key.is_some_and(|key| {
            let key = key.to_ascii_uppercase();
            [
                "TOKEN",
                "KEY",
                "SECRET",
                "PASSWORD",
                "PASSWD",
                "AUTHORIZATION",
                "CREDENTIAL",
                "COOKIE",
            ]
            .iter()
            .any(|word| key.contains(word))
        });
        by_name || !self.detector.redact(text).counts.is_empty()
    }
}

/// A variable name made of `parts`: upper case, `_` for anything else than a letter or digit.
fn variable_name(parts: &[&str]) -> String {
    let joined = parts.join("_");
    let mut name: String = joined
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' })
        .collect();
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert(0, '_');
    }
    name
}

/// Builds the tables of one import, handing out variable names for secrets.
pub(super) struct Renderer<'a> {
    pub(super) references: &'a References,
    pub(super) secrets: &'a Secrets,
}

impl Renderer<'_> {
    /// `server`'s table, named `name`, and the secrets it left out.
    pub(super) fn table(&self, name: &str, server: &ServerConfig) -> (Table, Vec<SecretVar>) {
        let mut out = Vec::new();
        let mut table = Table::new();
        let mut text = |field: String, key: Option<&str>, raw: &str, var: &[&str]| -> String {
            let (restored, referenced) = self.references.restore(raw);
            if referenced || !self.secrets.is_secret(key, raw) {
                return restored;
            }
            let variable = variable_name(var);
            // `Bearer <token>` keeps its scheme.
            let (written, literal) = match raw.split_once(' ') {
                Some((scheme, rest))
                    if scheme.eq_ignore_ascii_case("bearer") && !rest.contains(' ') =>
                {
                    (format!("{scheme} ${{{variable}}}"), rest)
                }
                _ => (format!("${{{variable}}}"), raw),
            };
            out.push(SecretVar {
                server: name.to_owned(),
                field,
                variable,
                literal: Secret::new(literal),
            });
            written
        };
        match &server.transport {
            TransportConfig::Stdio(stdio) => {
                let command = text("command".into(), None, &stdio.command, &[name, "COMMAND"]);
                table.insert("command", value(command));
                if !stdio.args.is_empty() {
                    let index: Vec<String> = (0..stdio.args.len()).map(|i| i.to_string()).collect();
                    let args: Array = stdio
                        .args
                        .iter()
                        .zip(&index)
                        .map(|(arg, i)| text(format!("args[{i}]"), None, arg, &[name, "ARG", i]))
                        .collect();
                    table.insert("args", value(args));
                }
                if !stdio.env.is_empty() {
                    let env = secrets_table(&stdio.env, |key, secret| {
                        text(format!("env.{key}"), Some(key), secret.expose(), &[key])
                    });
                    table.insert("env", value(env));
                }
                for (key, list) in
                    [("env_pass", &stdio.env_pass), ("env_remove", &stdio.env_remove)]
                {
                    if !list.is_empty() {
                        table.insert(key, value(list.iter().collect::<Array>()));
                    }
                }
                if let Some(cwd) = &stdio.cwd {
                    let cwd = cwd.to_string_lossy();
                    table.insert("cwd", value(text("cwd".into(), None, &cwd, &[name, "CWD"])));
                }
            }
            TransportConfig::Http(http) => {
                table.insert(
                    "url",
                    value(text("url".into(), None, http.url.as_str(), &[name, "URL"])),
                );
                if http.transport != HttpTransport::Auto {
                    table.insert("transport", value(http.transport.as_str()));
                }
                if !http.headers.is_empty() {
                    let headers = secrets_table(&http.headers, |key, secret| {
                        text(format!("headers.{key}"), Some(key), secret.expose(), &[name, key])
                    });
                    table.insert("headers", value(headers));
                }
            }
            TransportConfig::InProcess(_) => {}
        }
        if server.prefix != name && server.prefix != server.name {
            table.insert("prefix", value(&server.prefix));
        }
        for (key, list) in
            [("allow_tools", &server.tools.allow), ("deny_tools", &server.tools.deny)]
        {
            if !list.is_empty() {
                table.insert(key, value(list.iter().collect::<Array>()));
            }
        }
        if server.startup_timeout != DEFAULT_STARTUP_TIMEOUT {
            table.insert("startup_timeout", duration(server.startup_timeout));
        }
        if server.timeout != DEFAULT_CALL_TIMEOUT {
            table.insert("timeout", duration(server.timeout));
        }
        if server.required {
            table.insert("required", value(true));
        }
        if !server.enabled {
            table.insert("enabled", value(false));
        }
        (table, out)
    }
}

fn secrets_table(
    map: &std::collections::BTreeMap<String, Secret>,
    mut each: impl FnMut(&str, &Secret) -> String,
) -> InlineTable {
    map.iter().map(|(key, secret)| (key.as_str(), each(key, secret))).collect()
}

/// Whole seconds as a number, anything finer as milliseconds.
fn duration(duration: Duration) -> Item {
    if duration.subsec_nanos() == 0 {
        value(i64::try_from(duration.as_secs()).unwrap_or(i64::MAX))
    } else {
        value(format!("{}ms", duration.as_millis()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_become_references_and_dollars_are_escaped() {
        let references = References::default();
        let marker = references.var("GitHub_PAT").expect("always set");
        let (text, found) = references.restore(&format!("a$b {marker}"));
        assert_eq!(text, "a$$b ${GitHub_PAT}");
        assert!(found);
        // A URL's host is lowercased: the name asked for comes back.
        let (text, _) = references.restore(&format!("https://{}/", marker.to_lowercase()));
        assert_eq!(text, "https://${GitHub_PAT}/");
        assert_eq!(references.restore("plain"), ("plain".to_owned(), false));
    }

    #[test]
    fn secrets_by_name_and_by_shape() {
        let secrets = Secrets::new();
        assert!(secrets.is_secret(Some("GITHUB_TOKEN"), "abc"));
        assert!(secrets.is_secret(Some("Authorization"), "Bearer x"));
        assert!(secrets.is_secret(None, "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"));
        assert!(!secrets.is_secret(Some("LOG_LEVEL"), "debug"));
        assert!(!secrets.is_secret(None, "-y"));
        assert_eq!(variable_name(&["my-server", "X-Api-Key"]), "MY_SERVER_X_API_KEY");
    }
}
