//! The MCP client config dialects, as a whole file or imported into `toolgate.toml`:
//!
//! - Claude Desktop, Cursor, Claude Code (`.mcp.json`): `{"mcpServers": {"name": {...}}}`, with
//!   `command`/`args`/`env`/`cwd` or `url`/`headers` and an optional `type`
//!   (`stdio`, `http`, `streamable-http`, `sse`).
//! - Claude Code's `~/.claude.json`: the same `mcpServers` (user scope), and the local scope of
//!   the directory toolgate runs in, `projects.<directory>.mcpServers`, whose servers stand in
//!   for user-wide ones of their names.
//! - VS Code (`.vscode/mcp.json`): `{"servers": {...}, "inputs": [...]}`, the same entries.
//! - Windsurf (`~/.codeium/windsurf/mcp_config.json`): `serverUrl` is read as `url`.
//! - Gemini CLI (`~/.gemini/settings.json`): `httpUrl` is `url` with streamable HTTP;
//!   `includeTools` / `excludeTools` are `allow_tools` / `deny_tools` (the names, as written);
//!   its `mcp.allowed` / `mcp.excluded` lists of server names disable the other / those servers.
//!
//! `disabled`, a numeric `timeout` (milliseconds) and `disabledTools` are mapped; known
//! client-only settings (`trust`, `autoApprove`, a client's own OAuth settings, ...) are ignored
//! with a warning; other keys in a server entry are errors. A server has one of `command`,
//! `url`, `serverUrl` and `httpUrl`. Other top-level keys belong to the client application and
//! are ignored with a warning.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::check::{Checker, Entry, ServerKind, optional};
use crate::dialect::tool_names;
use crate::error::key_path;
use crate::model::{
    DEFAULT_CALL_TIMEOUT, HttpConfig, HttpTransport, ServerConfig, StdioConfig, ToolFilter,
    TransportConfig,
};
use crate::value::Value;

/// Keys of a server entry that toolgate understands.
const SERVER_KEYS: &[&str] = &[
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "type",
    "disabled",
    "timeout",
    "disabledTools",
    "serverUrl",
    "httpUrl",
    "includeTools",
    "excludeTools",
];
/// The keys that name a remote server's URL, one per client family.
const URL_KEYS: &[&str] = &["url", "serverUrl", "httpUrl"];
/// Keys of a server entry that only mean something to a client; ignored with a warning.
const CLIENT_ONLY_KEYS: &[&str] = &[
    "autoApprove",
    "alwaysAllow",
    "description",
    "icon",
    "envFile",
    "dev",
    "gallery",
    "version",
    "trust",
    "transportType",
    "oauth",
    "authProviderType",
    "targetAudience",
    "targetServiceAccount",
];
const STDIO_KEYS: &[&str] = &["args", "env", "cwd"];
const HTTP_KEYS: &[&str] = &["headers"];
const TYPES: &str = "stdio, http, streamable-http, sse";

/// Checks a whole client config document.
pub(crate) fn check(cx: &mut Checker<'_>, root: &Value) -> Vec<Entry> {
    let Value::Table(entries) = root else {
        cx.expected("", "an object at the top level", root);
        return Vec::new();
    };
    let mut servers = Vec::new();
    let mut found = false;
    let mut gemini = None;
    let mut projects = None;
    for (key, value) in entries {
        match key.as_str() {
            "mcp" => gemini = Some(value),
            "projects" => projects = Some(value),
            "mcpServers" | "servers" => {
                found = true;
                let Some(table) = cx.table(value, key) else { continue };
                for (name, value) in table {
                    servers.extend(check_server(cx, key, name, value));
                }
            }
            "inputs" => cx.warn(
                key,
                "ignored (VS Code inputs cannot be prompted for; use environment variables)",
            ),
            _ => cx.warn(key, "ignored (not an MCP server setting)"),
        }
    }
    if !found {
        cx.warn("", "no mcpServers or servers object: no servers defined");
    }
    if let Some(value) = projects {
        claude_code_local(cx, value, &mut servers);
    }
    if let Some(value) = gemini {
        gemini_lists(cx, value, &mut servers);
    }
    servers
}

/// Claude Code's local scope (where `claude mcp add` puts a server by default):
/// `projects.<directory>.mcpServers` of `~/.claude.json`, read for the directory toolgate runs
/// in. Such a server stands in for a user-wide one of its name, as in Claude Code; the other
/// projects' servers, and the rest of Claude Code's per-project state, are not this
/// directory's and are passed over in silence.
fn claude_code_local(cx: &mut Checker<'_>, value: &Value, servers: &mut Vec<Entry>) {
    let Value::Table(projects) = value else { return };
    let Some(dir) = cx.current_dir() else { return };
    let real = dir.canonicalize().ok();
    let here = |key: &str| {
        let key = std::path::Path::new(key);
        key == dir || real.as_deref() == Some(key)
    };
    let Some((key, Value::Table(project))) = projects.iter().find(|(key, _)| here(key)) else {
        return;
    };
    let Some((_, table)) = project.iter().find(|(field, _)| field == "mcpServers") else { return };
    let parent = key_path(&key_path("projects", key), "mcpServers");
    let Some(table) = cx.table(table, &parent) else { return };
    for (name, value) in table {
        if let Some(entry) = check_server(cx, &parent, name, value) {
            servers.retain(|other| other.server.name != entry.server.name);
            servers.push(entry);
        }
    }
}

/// Gemini CLI's `mcp` settings: `allowed` (only these servers run) and `excluded` (these do
/// not), applied as `enabled = false`; its other keys are ignored with a warning.
fn gemini_lists(cx: &mut Checker<'_>, value: &Value, servers: &mut [Entry]) {
    let Some(entries) = cx.table(value, "mcp") else { return };
    for (key, value) in entries {
        let path = key_path("mcp", key);
        let keep: fn(bool) -> bool = match key.as_str() {
            "allowed" => |listed| listed,
            "excluded" => |listed| !listed,
            _ => {
                cx.warn(&path, "ignored (not an MCP server setting)");
                continue;
            }
        };
        let Some(names) = cx.strings(value, &path) else { continue };
        for name in &names {
            if !servers.iter().any(|entry| entry.server.name == *name) {
                cx.warn(&path, format_args!("names no server defined here: {name:?}"));
            }
        }
        for entry in servers.iter_mut() {
            if !keep(names.contains(&entry.server.name.as_str())) {
                entry.server.enabled = false;
            }
        }
    }
}

fn check_server(cx: &mut Checker<'_>, parent: &str, name: &str, value: &Value) -> Option<Entry> {
    let path = key_path(parent, name);
    let at = |key: &str| key_path(&path, key);
    let name_ok = cx.server_name(name, &path);
    let entries = cx.table(value, &path)?;
    let mut fields = BTreeMap::new();
    let mut url_key = "url";
    for (key, value) in entries {
        if URL_KEYS.contains(&key.as_str()) {
            if fields.contains_key("url") {
                cx.error(&at(key), format!("also given as {url_key}: a server has one URL"));
                continue;
            }
            url_key = URL_KEYS.iter().find(|k| **k == key).copied().unwrap_or("url");
            fields.insert("url", value);
        } else if SERVER_KEYS.contains(&key.as_str()) {
            fields.insert(key.as_str(), value);
        } else if CLIENT_ONLY_KEYS.contains(&key.as_str()) {
            let message = match key.as_str() {
                "envFile" => "ignored (env files are not read; set the variables in env)",
                _ => "ignored (client-only setting)",
            };
            cx.warn(&at(key), message);
        } else {
            cx.unknown_key(&at(key), key, SERVER_KEYS);
        }
    }

    let mode = cx.mode(&path, &fields, STDIO_KEYS, HTTP_KEYS);
    let http_transport =
        optional(fields.get("type").copied(), |v| check_type(cx, v, &at("type"), mode));
    let stdio = mode != Some(ServerKind::Http);
    let http = mode != Some(ServerKind::Stdio);
    let field = |key: &str, wanted: bool| fields.get(key).copied().filter(|_| wanted);

    let command = field("command", true).map(|v| cx.command(v, &at("command")));
    let args = optional(field("args", stdio), |v| cx.args(v, &at("args")));
    let env = optional(field("env", stdio), |v| cx.env_vars(v, &at("env")));
    let cwd = optional(field("cwd", stdio), |v| cx.cwd(v, &at("cwd")));
    let url = field("url", true).map(|v| cx.url(v, &at(url_key)));
    // Gemini CLI's `httpUrl` is streamable HTTP; a `type` says the same or is an error.
    let http_transport = match (url_key, http_transport) {
        ("httpUrl", Some(None)) => Some(Some(Some(HttpTransport::StreamableHttp))),
        ("httpUrl", Some(Some(Some(HttpTransport::Sse)))) => {
            cx.error(&at("type"), "\"sse\" disagrees with httpUrl (streamable HTTP)");
            None
        }
        (_, other) => other,
    };
    // A server's credentials are a secret of toolgate's toward that server: no other (stdio)
    // server inherits the variables they come from unless it names them exactly.
    let headers =
        optional(field("headers", http), |v| cx.secret(|cx| cx.headers(v, &at("headers"))));
    let disabled = optional(field("disabled", true), |v| cx.boolean(v, &at("disabled")));
    let timeout = optional(field("timeout", true), |v| timeout(cx, v, &at("timeout")));
    let disabled_tools =
        optional(field("disabledTools", true), |v| tool_names(cx, v, &at("disabledTools")));
    let exclude = optional(field("excludeTools", true), |v| tool_names(cx, v, &at("excludeTools")));
    let allow = optional(field("includeTools", true), |v| tool_names(cx, v, &at("includeTools")));
    let prefix = cx.default_prefix(name, &path);

    let transport = match mode? {
        ServerKind::Stdio => TransportConfig::Stdio(StdioConfig {
            command: command??,
            args: args?.unwrap_or_default(),
            env: env?.unwrap_or_default(),
            // As the clients start it: the SDKs' default variables and the entry's `env`.
            env_pass: Vec::new(),
            env_remove: Vec::new(),
            cwd: cwd?,
            withheld: Default::default(),
        }),
        ServerKind::Http => TransportConfig::Http(HttpConfig {
            url: url??,
            transport: http_transport?.flatten().unwrap_or_default(),
            headers: headers?.unwrap_or_default(),
            pool: true,
            oauth: Default::default(),
            // `[proxy]` of the importing file applies (`load`).
            proxy: Default::default(),
            tls: Default::default(),
        }),
    };
    let server = ServerConfig {
        prefix,
        tools: ToolFilter {
            allow: allow?.unwrap_or_default(),
            deny: [disabled_tools?, exclude?].into_iter().flatten().flatten().collect(),
        },
        timeout: timeout?.unwrap_or(DEFAULT_CALL_TIMEOUT),
        enabled: !disabled?.unwrap_or(false),
        ..ServerConfig::new(name_ok.then(|| name.to_owned())?, transport)
    };
    Some(Entry { server, place: cx.place(&path) })
}

/// `type`, which must agree with `command` / `url` (`mode`, when known). `Some(None)` for
/// `"stdio"`, which has no HTTP transport.
fn check_type(
    cx: &mut Checker<'_>,
    value: &Value,
    path: &str,
    mode: Option<ServerKind>,
) -> Option<Option<HttpTransport>> {
    let text = cx.string(value, path)?;
    let declared = match text {
        "stdio" => (ServerKind::Stdio, None),
        "http" | "streamable-http" => (ServerKind::Http, Some(HttpTransport::StreamableHttp)),
        "sse" => (ServerKind::Http, Some(HttpTransport::Sse)),
        _ => {
            cx.error(path, format!("unknown type {text:?} (expected one of: {TYPES})"));
            return None;
        }
    };
    match (declared, mode) {
        ((ServerKind::Stdio, _), Some(ServerKind::Http)) => {
            cx.error(path, format!("type {text:?} needs command, but this server has url"));
            None
        }
        ((ServerKind::Http, _), Some(ServerKind::Stdio)) => {
            cx.error(path, format!("type {text:?} needs url, but this server has command"));
            None
        }
        ((_, transport), _) => Some(transport),
    }
}

/// `timeout`: a number of milliseconds, or a duration string.
fn timeout(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<Duration> {
    match value {
        Value::Integer(millis) => {
            let Ok(millis) = u64::try_from(*millis) else {
                cx.error(path, "must be greater than zero");
                return None;
            };
            if (1..1000).contains(&millis) {
                cx.warn(
                    path,
                    format_args!(
                        "read as {millis} milliseconds; write \"{millis}s\" if seconds were meant"
                    ),
                );
            }
            cx.positive(Duration::from_millis(millis), path)
        }
        Value::String(text) => match toolgate_core::duration::parse(text) {
            Ok(duration) => cx.positive(duration, path),
            Err(error) => {
                cx.error(path, format!("invalid duration {text:?}: {error}"));
                None
            }
        },
        other => {
            cx.expected(path, "a number of milliseconds", other);
            None
        }
    }
}

#[cfg(test)]
mod tests;
