//! Which config a parsed document is, and what the MCP clients' readers share.
//!
//! A file's language comes from its extension ([`Format`]); which program wrote it comes from
//! its name and shape, so that `--config` and `import` take each client's file as it is:
//!
//! | language | recognised by | read as |
//! |---|---|---|
//! | TOML | a top-level `mcp_servers`, none of toolgate's own top-level keys, and a name other than `toolgate.toml` | Codex's `config.toml` (`dialect/codex.rs`) |
//! | TOML | anything else | `toolgate.toml` (`native.rs`) |
//! | JSON | a top-level `context_servers` and neither `mcpServers` nor `servers` | Zed's `settings.json` (`dialect/zed.rs`) |
//! | JSON | anything else | `mcpServers` / `servers` (`client.rs`): Claude Desktop, Cursor, Claude Code, VS Code, Windsurf, Gemini CLI |
//! | YAML | a top-level `extensions`, or a key starting with `GOOSE_` | goose's `config.yaml` (`dialect/goose.rs`) |
//! | YAML | a top-level `mcpServers` or `schema` | Continue's `config.yaml` (`dialect/continue_dev.rs`) |
//! | YAML | anything else | smg-mcp's `mcp.yaml` (`smg.rs`) |
//!
//! Windsurf (`serverUrl`) and Gemini CLI (`httpUrl`, `includeTools`, `excludeTools`) write
//! keys the other `mcpServers` clients do not use, so one JSON reader takes them all.
//! A client's file adds servers and nothing else: the rest of toolgate's settings stay at their
//! defaults, and the client's own settings are ignored with a warning.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use crate::Format;
use crate::check::{Checker, Entry};
use crate::error::index_path;
use crate::model::{HttpConfig, HttpTransport, Secret, ServerConfig, StdioConfig, TransportConfig};
use crate::value::Value;

pub(crate) mod codex;
pub(crate) mod continue_dev;
pub(crate) mod goose;
pub(crate) mod zed;

/// Who wrote a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// `toolgate.toml`.
    Native,
    /// Codex's `config.toml`.
    Codex,
    /// `{"mcpServers": ...}` or VS Code's `{"servers": ...}`.
    Client,
    /// Zed's `settings.json`.
    Zed,
    /// goose's `config.yaml`.
    Goose,
    /// Continue's `config.yaml`.
    Continue,
    /// smg-mcp's `mcp.yaml`.
    Smg,
}

impl Dialect {
    /// The dialect of `root`, a document in `format` read from `path` (when it came from a file).
    pub(crate) fn recognise(format: Format, path: Option<&Path>, root: &Value) -> Dialect {
        let keys: Vec<&str> = match root {
            Value::Table(entries) => entries.iter().map(|(key, _)| key.as_str()).collect(),
            _ => Vec::new(),
        };
        let has = |key: &str| keys.contains(&key);
        match format {
            Format::Toml => {
                let named_toolgate = path
                    .and_then(Path::file_name)
                    .is_some_and(|name| name.eq_ignore_ascii_case(crate::FILE_NAME));
                let own_keys = keys.iter().any(|key| crate::native::TOP_KEYS.contains(key));
                if has("mcp_servers") && !own_keys && !named_toolgate {
                    Dialect::Codex
                } else {
                    Dialect::Native
                }
            }
            Format::Json => {
                if has("context_servers") && !has("mcpServers") && !has("servers") {
                    Dialect::Zed
                } else {
                    Dialect::Client
                }
            }
            Format::Yaml => {
                if has("extensions") || keys.iter().any(|key| key.starts_with("GOOSE_")) {
                    Dialect::Goose
                } else if has("mcpServers") || has("schema") {
                    Dialect::Continue
                } else {
                    Dialect::Smg
                }
            }
        }
    }

    /// What the file is called in messages.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Dialect::Native => "a toolgate.toml",
            Dialect::Codex => "Codex's config.toml",
            Dialect::Client => "an MCP client's JSON config",
            Dialect::Zed => "Zed's settings.json",
            Dialect::Goose => "goose's config.yaml",
            Dialect::Continue => "Continue's config.yaml",
            Dialect::Smg => "smg-mcp's mcp.yaml",
        }
    }
}

/// A server read from a client's file: toolgate's defaults for everything such files cannot
/// say.
pub(crate) fn server(name: String, prefix: String, transport: TransportConfig) -> ServerConfig {
    ServerConfig { prefix, ..ServerConfig::new(name, transport) }
}

/// A child process as the clients start it: the SDKs' default variables, `env_pass` and `env`.
pub(crate) fn stdio(
    command: String,
    args: Vec<String>,
    env: BTreeMap<String, Secret>,
    env_pass: Vec<String>,
    cwd: Option<std::path::PathBuf>,
) -> TransportConfig {
    TransportConfig::Stdio(StdioConfig {
        command,
        args,
        env,
        env_pass,
        env_remove: Vec::new(),
        cwd,
        // Filled in once the whole document is read (`load::withhold`).
        withheld: Default::default(),
    })
}

/// A remote server; `[proxy]` of the importing file applies (`load`).
pub(crate) fn http(
    url: url::Url,
    transport: HttpTransport,
    headers: BTreeMap<String, Secret>,
) -> TransportConfig {
    TransportConfig::Http(HttpConfig {
        url,
        transport,
        headers,
        pool: true,
        oauth: Default::default(),
        proxy: Default::default(),
        tls: Default::default(),
    })
}

/// A list of tool names, as globs that match each name only.
pub(crate) fn tool_names(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<Vec<String>> {
    let names = cx.strings(value, path)?;
    Some(names.into_iter().map(globset::escape).collect())
}

/// A number of seconds (a fraction allowed), greater than zero.
pub(crate) fn seconds(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<Duration> {
    let seconds = match value {
        Value::Integer(n) => *n as f64,
        Value::Float(x) => *x,
        other => {
            cx.expected(path, "a number of seconds", other);
            return None;
        }
    };
    match Duration::try_from_secs_f64(seconds) {
        Ok(duration) => cx.positive(duration, path),
        Err(_) => {
            cx.error(path, "must be a number of seconds greater than zero");
            None
        }
    }
}

/// A number of milliseconds, greater than zero.
pub(crate) fn millis(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<Duration> {
    match value {
        Value::Integer(n) => match u64::try_from(*n) {
            Ok(n) => cx.positive(Duration::from_millis(n), path),
            Err(_) => {
                cx.error(path, "must be greater than zero");
                None
            }
        },
        other => {
            cx.expected(path, "a number of milliseconds", other);
            None
        }
    }
}

/// Whether `name` can be a variable in `${name}`: letters, digits and `_`, not starting with a
/// digit.
pub(crate) fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The value of `Authorization` for a bearer `token` text (interpolated; a secret), checked.
pub(crate) fn bearer(cx: &mut Checker<'_>, token: &str, path: &str) -> Option<Secret> {
    let token = cx.secret(|cx| cx.interpolate(token, path))?;
    let token = token.trim();
    if token.is_empty() {
        cx.error(path, "is empty");
        return None;
    }
    let header = format!("Bearer {token}");
    if !crate::check::is_header_value(&header) {
        cx.error(path, "invalid token (contains a control character)");
        return None;
    }
    Some(Secret::new(header))
}

/// Adds `Authorization: value` to `headers`, unless they already have one (then the setting at
/// `path` is reported as ignored).
pub(crate) fn add_authorization(
    cx: &mut Checker<'_>,
    headers: &mut BTreeMap<String, Secret>,
    value: Secret,
    path: &str,
) {
    match headers.keys().find(|key| key.eq_ignore_ascii_case("authorization")) {
        Some(key) => cx.warn(path, format_args!("ignored: the {key} header is sent instead")),
        None => {
            headers.insert("Authorization".to_owned(), value);
        }
    }
}

/// A client's display name made into a server name: characters other than `A-Z a-z 0-9 _ . -`
/// become `-` (reported at `path` when that changed anything).
pub(crate) fn server_name_from(cx: &mut Checker<'_>, name: &str, path: &str) -> Option<String> {
    let trimmed = name.trim();
    let made: String = trimmed
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') { c } else { '-' })
        .collect();
    if made.is_empty() {
        cx.error(path, "is empty");
        return None;
    }
    if made != name {
        cx.warn(path, format_args!("the server is named {made:?} in toolgate"));
    }
    Some(made)
}

/// Reports each item of a list of entries a reader skips, at `parent[i]`.
pub(crate) fn skipped(cx: &mut Checker<'_>, parent: &str, index: usize, why: &str) {
    cx.warn(&index_path(parent, index), format_args!("skipped: {why}"));
}

/// The servers of a client file that keeps them as a table under one top-level `key`
/// (Codex's `mcp_servers`, Zed's `context_servers`), each read by `server`; every other
/// top-level key belongs to the client and is ignored with `ignored` as the warning.
pub(crate) fn servers_under(
    cx: &mut Checker<'_>,
    root: &Value,
    top: &str,
    key: &str,
    ignored: &str,
    mut server: impl FnMut(&mut Checker<'_>, &str, &Value) -> Option<Entry>,
) -> Vec<Entry> {
    let Value::Table(entries) = root else {
        cx.expected("", top, root);
        return Vec::new();
    };
    let mut servers = Vec::new();
    for (name, value) in entries {
        if name != key {
            cx.warn(name, ignored);
            continue;
        }
        let Some(table) = cx.table(value, name) else { continue };
        for (name, value) in table {
            servers.extend(server(cx, name, value));
        }
    }
    servers
}

#[cfg(test)]
mod tests;
