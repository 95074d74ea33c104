//! goose's `config.yaml` (`~/.config/goose/config.yaml`): its `extensions` map, as goose's
//! configuration guide documents it.
//!
//! | goose | toolgate |
//! |---|---|
//! | the key under `extensions` | the server's name |
//! | `type: stdio`, `cmd`, `args`, `envs` | `command`, `args`, `env` |
//! | `env_keys` (variables goose passes through) | `env_pass` |
//! | `type: streamable_http` / `sse`, `uri`, `headers` | `url`, `transport = "streamable-http"` / `"sse"`, `headers` |
//! | `timeout` (seconds) | `timeout` |
//! | `enabled` | `enabled` |
//! | `available_tools` (empty: all) | `allow_tools` (the names, as written) |
//!
//! Extensions of type `builtin`, `platform`, `frontend` and `inline_python` run inside goose:
//! they are skipped with a warning. `name` (when it is not the key), `display_name`,
//! `description` and `bundled` only label the extension in goose: ignored with a warning.
//! Other keys in an extension are errors; goose's other top-level settings are ignored with a
//! warning. Where goose reads text, a number or boolean is read as its text (`PORT: 8080`).

use crate::check::{Checker, Entry, optional};
use crate::dialect::{http, seconds, server, stdio, tool_names};
use crate::error::key_path;
use crate::model::HttpTransport;
use crate::value::{Value, text, texts};

const EXTENSION_KEYS: &[&str] = &[
    "type",
    "name",
    "display_name",
    "description",
    "bundled",
    "enabled",
    "timeout",
    "cmd",
    "args",
    "envs",
    "env_keys",
    "uri",
    "headers",
    "available_tools",
];
/// Extensions that run inside goose.
const INTERNAL_TYPES: &[&str] = &["builtin", "platform", "frontend", "inline_python"];
const TYPES: &str = "stdio, streamable_http, sse, builtin, platform, frontend, inline_python";
const LABELS: &[&str] = &["display_name", "description", "bundled"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Stdio,
    Remote(HttpTransport),
}

/// Checks a whole goose `config.yaml`.
pub(crate) fn check(cx: &mut Checker<'_>, root: &Value) -> Vec<Entry> {
    let Value::Table(entries) = root else {
        cx.expected("", "a mapping at the top level", root);
        return Vec::new();
    };
    let mut servers = Vec::new();
    let mut found = false;
    for (key, value) in entries {
        if key != "extensions" {
            cx.warn(key, "ignored (a goose setting, not an extension)");
            continue;
        }
        found = true;
        if *value == Value::Null {
            continue;
        }
        let Some(table) = cx.table(value, key) else { continue };
        for (name, value) in table {
            servers.extend(check_extension(cx, name, value));
        }
    }
    if !found {
        cx.warn("", "no extensions: no servers defined");
    }
    servers
}

fn check_extension(cx: &mut Checker<'_>, name: &str, value: &Value) -> Option<Entry> {
    let path = key_path("extensions", name);
    let at = |key: &str| key_path(&path, key);
    let entries = cx.table(value, &path)?;
    let mut fields = cx.known_keys(entries, &path, EXTENSION_KEYS);
    // goose writes `null` for an optional setting it leaves out.
    fields.retain(|_, value| **value != Value::Null);

    let kind = match fields.get("type") {
        None => {
            cx.error(&path, format!("missing `type` (one of: {TYPES})"));
            return None;
        }
        Some(value) => match cx.string(value, &at("type"))? {
            "stdio" => Kind::Stdio,
            "streamable_http" => Kind::Remote(HttpTransport::StreamableHttp),
            "sse" => Kind::Remote(HttpTransport::Sse),
            internal if INTERNAL_TYPES.contains(&internal) => {
                cx.warn(
                    &path,
                    format_args!(
                        "skipped: a {internal} extension runs inside goose, not as an MCP server"
                    ),
                );
                return None;
            }
            other => {
                cx.error(&at("type"), format!("unknown type {other:?} (expected one of: {TYPES})"));
                return None;
            }
        },
    };
    let name_ok = cx.server_name(name, &path);
    if let Some(value) = fields.get("name")
        && let Some(label) = cx.string(&text(value), &at("name"))
        && label != name
    {
        cx.warn(&at("name"), format_args!("ignored: toolgate names this server {name:?}, its key"));
    }
    for key in LABELS.iter().filter(|key| fields.contains_key(*key)) {
        cx.warn(&at(key), "ignored (client-only setting)");
    }
    let stdio_ok = kind == Kind::Stdio;
    let (misplaced, needed, wanted) = if stdio_ok {
        (&["uri", "headers"][..], "cmd", "a remote extension")
    } else {
        (&["cmd", "args"][..], "uri", "a stdio extension")
    };
    for key in misplaced.iter().filter(|key| fields.contains_key(*key)) {
        cx.error(&at(key), format!("only for {wanted}"));
    }
    if !fields.contains_key(needed) {
        cx.error(&path, format!("needs `{needed}`"));
    }
    if !stdio_ok {
        // goose keeps `envs` and `env_keys` on remote extensions too, where no process uses them.
        for key in ["envs", "env_keys"] {
            if fields.get(key).is_some_and(|value| !is_empty(value)) {
                cx.warn(&at(key), "ignored: a remote extension starts no process");
            }
        }
    }
    let field = |key: &str, wanted: bool| fields.get(key).copied().filter(|_| wanted);

    let command = field("cmd", stdio_ok).map(|v| cx.command(&text(v), &at("cmd")));
    let args = optional(field("args", stdio_ok), |v| cx.args(&texts(v), &at("args")));
    let env = optional(field("envs", stdio_ok), |v| cx.env_vars(&texts(v), &at("envs")));
    let env_pass = optional(field("env_keys", stdio_ok), |v| cx.env_pass(v, &at("env_keys")));
    let url = field("uri", !stdio_ok).map(|v| cx.url(&text(v), &at("uri")));
    // A server's credentials are toolgate's secrets toward it: no stdio server inherits them.
    let headers = optional(field("headers", !stdio_ok), |v| {
        cx.secret(|cx| cx.headers(&texts(v), &at("headers")))
    });
    let timeout = optional(fields.get("timeout").copied(), |v| seconds(cx, v, &at("timeout")));
    let enabled = optional(fields.get("enabled").copied(), |v| cx.boolean(v, &at("enabled")));
    let allow = optional(fields.get("available_tools").copied(), |v| {
        tool_names(cx, &texts(v), &at("available_tools"))
    });
    let prefix = cx.default_prefix(name, &path);

    let transport = match kind {
        Kind::Stdio => stdio(
            command??,
            args?.unwrap_or_default(),
            env?.unwrap_or_default(),
            env_pass?.unwrap_or_default(),
            None,
        ),
        Kind::Remote(transport) => http(url??, transport, headers?.unwrap_or_default()),
    };
    let mut server = server(name_ok.then(|| name.to_owned())?, prefix, transport);
    server.timeout = timeout?.unwrap_or(server.timeout);
    server.enabled = enabled?.unwrap_or(true);
    server.tools.allow = allow?.unwrap_or_default();
    Some(Entry { server, place: cx.place(&path) })
}

/// An empty list or mapping.
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.is_empty(),
        Value::Table(entries) => entries.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
