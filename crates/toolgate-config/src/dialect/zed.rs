//! Zed's `settings.json` (`~/.config/zed/settings.json`, a project's `.zed/settings.json`;
//! comments and trailing commas allowed): its `context_servers` map, as Zed documents it.
//!
//! | Zed | toolgate |
//! |---|---|
//! | the key under `context_servers` | the server's name |
//! | `command` (text), `args`, `env` | `command`, `args`, `env` |
//! | `command: {path, args, env}` (Zed's older form) | `command`, `args`, `env` |
//! | `url`, `headers` | `url`, `headers` |
//! | `enabled` | `enabled` |
//! | `source: "custom"` | (nothing: every server here is one) |
//!
//! A server an extension provides (`source: "extension"`, or only `settings`) is started by
//! that Zed extension, which toolgate cannot run: skipped with a warning. `settings` of a
//! custom server is ignored with a warning. Other keys in a server are errors; Zed's other
//! settings are ignored with a warning.

use std::collections::BTreeMap;

use crate::check::{Checker, Entry, ServerKind, optional};
use crate::dialect::{http, server, stdio};
use crate::error::key_path;
use crate::model::HttpTransport;
use crate::value::Value;

const SERVER_KEYS: &[&str] =
    &["source", "command", "args", "env", "url", "headers", "enabled", "settings"];
const COMMAND_KEYS: &[&str] = &["path", "args", "env"];
const STDIO_KEYS: &[&str] = &["args", "env"];
const HTTP_KEYS: &[&str] = &["headers"];

/// Checks a whole Zed `settings.json`.
pub(crate) fn check(cx: &mut Checker<'_>, root: &Value) -> Vec<Entry> {
    let ignored = "ignored (a Zed setting, not a context server)";
    super::servers_under(
        cx,
        root,
        "an object at the top level",
        "context_servers",
        ignored,
        check_server,
    )
}

fn check_server(cx: &mut Checker<'_>, name: &str, value: &Value) -> Option<Entry> {
    let path = key_path("context_servers", name);
    let at = |key: &str| key_path(&path, key);
    let entries = cx.table(value, &path)?;
    let mut fields = cx.known_keys(entries, &path, SERVER_KEYS);
    let source = match fields.get("source") {
        None => None,
        Some(value) => match cx.string(value, &at("source"))? {
            "custom" => Some("custom"),
            "extension" => Some("extension"),
            other => {
                cx.error(
                    &at("source"),
                    format!("unknown source {other:?} (expected custom or extension)"),
                );
                return None;
            }
        },
    };
    let runs_itself = fields.contains_key("command") || fields.contains_key("url");
    if source == Some("extension") || (source.is_none() && !runs_itself) {
        cx.warn(&path, "skipped: a Zed extension starts this server, which toolgate cannot run");
        return None;
    }
    if fields.get("settings").is_some_and(|value| !matches!(value, Value::Table(e) if e.is_empty()))
    {
        cx.warn(&at("settings"), "ignored (settings for a Zed extension)");
    }
    let name_ok = cx.server_name(name, &path);
    // The older form nests the command: `command: {path, args, env}`.
    let nested = match fields.get("command") {
        Some(Value::Table(entries)) => {
            let nested = cx.known_keys(entries, &at("command"), COMMAND_KEYS);
            for key in ["args", "env"] {
                if nested.contains_key(key) && fields.contains_key(key) {
                    cx.error(&at(key), format!("also given as command.{key}: keep one"));
                }
            }
            Some(nested)
        }
        _ => None,
    };
    let command_path = if nested.is_some() { at("command.path") } else { at("command") };
    let mut merged: BTreeMap<&str, &Value> = BTreeMap::new();
    if let Some(nested) = &nested {
        merged.extend(nested.iter().map(|(key, value)| (*key, *value)));
        match nested.get("path") {
            Some(path) => {
                merged.insert("command", *path);
            }
            None => cx.error(&at("command"), "missing `path`"),
        }
        merged.remove("path");
        fields.remove("command");
    }
    merged.extend(fields.iter().map(|(key, value)| (*key, *value)));
    if nested.is_some() && !merged.contains_key("command") {
        return None;
    }
    let mode = cx.mode(&path, &merged, STDIO_KEYS, HTTP_KEYS);
    let stdio_ok = mode != Some(ServerKind::Http);
    let http_ok = mode != Some(ServerKind::Stdio);
    let field = |key: &str, wanted: bool| merged.get(key).copied().filter(|_| wanted);
    let nested_has = |key: &str| nested.as_ref().is_some_and(|nested| nested.contains_key(key));
    let sub = |key: &str| if nested_has(key) { at(&format!("command.{key}")) } else { at(key) };
    let (args_path, env_path) = (sub("args"), sub("env"));

    let command = field("command", true).map(|v| cx.command(v, &command_path));
    let args = optional(field("args", stdio_ok), |v| cx.args(v, &args_path));
    let env = optional(field("env", stdio_ok), |v| cx.env_vars(v, &env_path));
    let url = field("url", true).map(|v| cx.url(v, &at("url")));
    let headers =
        optional(field("headers", http_ok), |v| cx.secret(|cx| cx.headers(v, &at("headers"))));
    let enabled = optional(merged.get("enabled").copied(), |v| cx.boolean(v, &at("enabled")));
    let prefix = cx.default_prefix(name, &path);

    let transport = match mode? {
        ServerKind::Stdio => {
            stdio(command??, args?.unwrap_or_default(), env?.unwrap_or_default(), Vec::new(), None)
        }
        ServerKind::Http => http(url??, HttpTransport::Auto, headers?.unwrap_or_default()),
    };
    let mut server = server(name_ok.then(|| name.to_owned())?, prefix, transport);
    server.enabled = enabled?.unwrap_or(true);
    Some(Entry { server, place: cx.place(&path) })
}

#[cfg(test)]
mod tests;
