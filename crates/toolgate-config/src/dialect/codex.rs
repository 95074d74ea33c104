//! Codex's `config.toml` (`~/.codex/config.toml`, a project's `.codex/config.toml`): its
//! `[mcp_servers.NAME]` tables, as Codex documents them.
//!
//! | Codex | toolgate |
//! |---|---|
//! | `command`, `args`, `env`, `cwd` | the same |
//! | `env_vars` (names of variables Codex passes through) | `env_pass` |
//! | `url` (streamable HTTP) | `url`, `transport = "streamable-http"` |
//! | `bearer_token_env_var = "VAR"` | `headers.Authorization = "Bearer ${VAR}"` |
//! | `http_headers` | `headers` |
//! | `env_http_headers` (header to variable name) | `headers.NAME = "${VAR}"`; an unset variable sends no header |
//! | `startup_timeout_sec` / `startup_timeout_ms` | `startup_timeout` |
//! | `tool_timeout_sec` | `timeout` |
//! | `enabled` | `enabled` |
//! | `required` | `required` |
//! | `enabled_tools` / `disabled_tools` | `allow_tools` / `deny_tools` (the names, as written) |
//!
//! `bearer_token` (a literal token, which Codex refuses) is an error; Codex's OAuth settings
//! (`scopes`, `oauth_resource`) are ignored with a warning, toolgate signing in by its own rules.
//! Other keys in a server table are errors; Codex's other top-level settings are ignored with
//! a warning.

use std::collections::BTreeMap;

use crate::check::{Checker, Entry, ServerKind, optional};
use crate::dialect::{
    add_authorization, bearer, http, is_var_name, seconds, server, stdio, tool_names,
};
use crate::error::key_path;
use crate::model::{HttpTransport, Secret};
use crate::value::Value;

const SERVER_KEYS: &[&str] = &[
    "command",
    "args",
    "env",
    "env_vars",
    "cwd",
    "url",
    "bearer_token_env_var",
    "bearer_token",
    "http_headers",
    "env_http_headers",
    "startup_timeout_sec",
    "startup_timeout_ms",
    "tool_timeout_sec",
    "enabled",
    "required",
    "enabled_tools",
    "disabled_tools",
    "scopes",
    "oauth_resource",
];
const STDIO_KEYS: &[&str] = &["args", "env", "env_vars", "cwd"];
const HTTP_KEYS: &[&str] =
    &["bearer_token_env_var", "bearer_token", "http_headers", "env_http_headers"];

/// Checks a whole Codex `config.toml`.
pub(crate) fn check(cx: &mut Checker<'_>, root: &Value) -> Vec<Entry> {
    let ignored = "ignored (a Codex setting, not an MCP server's)";
    super::servers_under(cx, root, "a table at the top level", "mcp_servers", ignored, check_server)
}

fn check_server(cx: &mut Checker<'_>, name: &str, value: &Value) -> Option<Entry> {
    let path = key_path("mcp_servers", name);
    let at = |key: &str| key_path(&path, key);
    let name_ok = cx.server_name(name, &path);
    let entries = cx.table(value, &path)?;
    let fields = cx.known_keys(entries, &path, SERVER_KEYS);
    let mode = cx.mode(&path, &fields, STDIO_KEYS, HTTP_KEYS);
    let stdio_ok = mode != Some(ServerKind::Http);
    let http_ok = mode != Some(ServerKind::Stdio);
    let field = |key: &str, wanted: bool| fields.get(key).copied().filter(|_| wanted);

    let command = field("command", true).map(|v| cx.command(v, &at("command")));
    let args = optional(field("args", stdio_ok), |v| cx.args(v, &at("args")));
    let env = optional(field("env", stdio_ok), |v| cx.env_vars(v, &at("env")));
    let env_pass = optional(field("env_vars", stdio_ok), |v| cx.env_pass(v, &at("env_vars")));
    let cwd = optional(field("cwd", stdio_ok), |v| cx.cwd(v, &at("cwd")));
    let url = field("url", true).map(|v| cx.url(v, &at("url")));
    let headers = optional(field("http_headers", http_ok), |v| {
        cx.secret(|cx| cx.headers(v, &at("http_headers")))
    });
    let env_headers = optional(field("env_http_headers", http_ok), |v| {
        env_headers(cx, v, &at("env_http_headers"))
    });
    let token = optional(field("bearer_token_env_var", http_ok), |v| {
        bearer_var(cx, v, &at("bearer_token_env_var"))
    });
    if fields.contains_key("bearer_token") {
        cx.error(
            &at("bearer_token"),
            "a token written in the file (Codex refuses it too): put it in a variable and name \
             it in bearer_token_env_var",
        );
    }
    for key in ["scopes", "oauth_resource"] {
        if fields.contains_key(key) {
            cx.warn(&at(key), "ignored (toolgate signs in to the server by its own OAuth rules)");
        }
    }
    let startup = startup_timeout(cx, &fields, &at);
    let timeout = optional(fields.get("tool_timeout_sec").copied(), |v| {
        seconds(cx, v, &at("tool_timeout_sec"))
    });
    let enabled = optional(fields.get("enabled").copied(), |v| cx.boolean(v, &at("enabled")));
    let required = optional(fields.get("required").copied(), |v| cx.boolean(v, &at("required")));
    let allow =
        optional(fields.get("enabled_tools").copied(), |v| tool_names(cx, v, &at("enabled_tools")));
    let deny = optional(fields.get("disabled_tools").copied(), |v| {
        tool_names(cx, v, &at("disabled_tools"))
    });
    let prefix = cx.default_prefix(name, &path);

    let transport = match mode? {
        ServerKind::Stdio => stdio(
            command??,
            args?.unwrap_or_default(),
            env?.unwrap_or_default(),
            env_pass?.unwrap_or_default(),
            cwd?,
        ),
        ServerKind::Http => {
            let mut headers = headers?.unwrap_or_default();
            for (header, value) in env_headers?.unwrap_or_default() {
                if headers.keys().any(|key| key.eq_ignore_ascii_case(&header)) {
                    cx.error(
                        &key_path(&at("env_http_headers"), &header),
                        "also set in http_headers",
                    );
                    return None;
                }
                headers.insert(header, value);
            }
            if let Some(token) = token? {
                add_authorization(cx, &mut headers, token, &at("bearer_token_env_var"));
            }
            http(url??, HttpTransport::StreamableHttp, headers)
        }
    };
    let mut server = server(name_ok.then(|| name.to_owned())?, prefix, transport);
    server.tools.allow = allow?.unwrap_or_default();
    server.tools.deny = deny?.unwrap_or_default();
    server.startup_timeout = startup?.unwrap_or(server.startup_timeout);
    server.timeout = timeout?.unwrap_or(server.timeout);
    server.enabled = enabled?.unwrap_or(true);
    server.required = required?.unwrap_or(false);
    Some(Entry { server, place: cx.place(&path) })
}

/// `startup_timeout_sec` or `startup_timeout_ms` (not both).
fn startup_timeout(
    cx: &mut Checker<'_>,
    fields: &BTreeMap<&str, &Value>,
    at: &dyn Fn(&str) -> String,
) -> Option<Option<std::time::Duration>> {
    match (fields.get("startup_timeout_sec"), fields.get("startup_timeout_ms")) {
        (Some(_), Some(_)) => {
            cx.error(&at("startup_timeout_ms"), "also given as startup_timeout_sec: keep one");
            None
        }
        (Some(value), None) => seconds(cx, value, &at("startup_timeout_sec")).map(Some),
        (None, Some(value)) => {
            crate::dialect::millis(cx, value, &at("startup_timeout_ms")).map(Some)
        }
        (None, None) => Some(None),
    }
}

/// A variable name, checked.
fn var_name<'v>(cx: &mut Checker<'_>, value: &'v Value, path: &str) -> Option<&'v str> {
    let name = cx.string(value, path)?;
    valid_var(cx, name, path).then_some(name)
}

/// Whether `name` is a variable name; reported at `path` when not.
fn valid_var(cx: &mut Checker<'_>, name: &str, path: &str) -> bool {
    let valid = is_var_name(name);
    if !valid {
        cx.error(path, format!("invalid variable name {name:?}"));
    }
    valid
}

/// `bearer_token_env_var`: the `Authorization` header, from the variable (which must be set).
fn bearer_var(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<Secret> {
    let name = var_name(cx, value, path)?;
    bearer(cx, &format!("${{{name}}}"), path)
}

/// `env_http_headers`: each header's value from a variable; an unset or empty variable sends no
/// header (reported).
fn env_headers(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<Vec<(String, Secret)>> {
    let pairs = cx.string_table(value, path)?;
    let mut out = Some(Vec::new());
    for (header, var) in pairs {
        let header_path = key_path(path, header);
        let valid_name = valid_var(cx, var, &header_path);
        if !crate::check::is_header_name(header) {
            cx.error(&header_path, "invalid header name");
            out = None;
            continue;
        }
        if !valid_name {
            out = None;
            continue;
        }
        let name = var;
        if cx.env().var(name).is_none_or(|text| text.is_empty()) {
            cx.warn(&header_path, format_args!("not sent: variable {name} is not set"));
            continue;
        }
        // The values are toolgate's secrets toward this server: no stdio server inherits them.
        let text = cx.secret(|cx| cx.interpolate(&format!("${{{name}}}"), &header_path));
        match (text, &mut out) {
            (Some(text), Some(out)) if crate::check::is_header_value(&text) => {
                out.push((header.to_owned(), Secret::new(text)));
            }
            (Some(_), _) => {
                cx.error(&header_path, "invalid header value (contains a control character)");
                out = None;
            }
            _ => out = None,
        }
    }
    out
}

#[cfg(test)]
mod tests;
