//! Continue's `config.yaml` (`~/.continue/config.yaml`, or a block in `.continue/mcpServers/`):
//! its `mcpServers` list, as Continue's reference and schema document it. (Continue's JSON
//! blocks in `.continue/mcpServers/` are `{"mcpServers": {...}}` files, read by `client.rs`.)
//!
//! | Continue | toolgate |
//! |---|---|
//! | `name` | the server's name (characters a name cannot hold become `-`) |
//! | `command`, `args`, `env`, `cwd` (`type: stdio`) | the same |
//! | `url` with `type: sse` / `streamable-http` (or none) | `url`, `transport = "sse"` / `"streamable-http"` (`"auto"`) |
//! | `apiKey` | `headers.Authorization = "Bearer ..."` (a `requestOptions.headers` entry wins) |
//! | `requestOptions.headers` | `headers` |
//! | `connectionTimeout` (milliseconds) | `startup_timeout` |
//!
//! `uses` entries (blocks from Continue's hub) cannot be fetched: skipped with a warning.
//! `faviconUrl`, `serverName`, `sourceFile`, `sourceSlug` and the `requestOptions` toolgate has
//! no per-server setting for (`timeout`, `verifySsl`, `caBundlePath`, `proxy`, `noProxy`,
//! `extraBodyProperties`, `clientCertificate`) are ignored with a warning. Other keys in a
//! server are errors; Continue's other settings are ignored with a warning. Where Continue
//! reads text, a number or boolean is read as its text (`PORT: 8080`).

use crate::check::{Checker, Entry, ServerKind, optional};
use crate::dialect::{
    add_authorization, bearer, http, millis, server, server_name_from, skipped, stdio,
};
use crate::error::{index_path, key_path};
use crate::model::HttpTransport;
use crate::value::{Value, text, texts};

const SERVER_KEYS: &[&str] = &[
    "name",
    "type",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "apiKey",
    "requestOptions",
    "connectionTimeout",
    "faviconUrl",
    "serverName",
    "sourceFile",
    "sourceSlug",
];
const LABELS: &[&str] = &["faviconUrl", "serverName", "sourceFile", "sourceSlug"];
const REQUEST_KEYS: &[&str] = &[
    "headers",
    "timeout",
    "verifySsl",
    "caBundlePath",
    "proxy",
    "noProxy",
    "extraBodyProperties",
    "clientCertificate",
];
const STDIO_KEYS: &[&str] = &["args", "env", "cwd"];
const HTTP_KEYS: &[&str] = &["apiKey", "requestOptions"];
const TYPES: &str = "stdio, sse, streamable-http";

/// Checks a whole Continue `config.yaml`.
pub(crate) fn check(cx: &mut Checker<'_>, root: &Value) -> Vec<Entry> {
    let Value::Table(entries) = root else {
        cx.expected("", "a mapping at the top level", root);
        return Vec::new();
    };
    let mut servers = Vec::new();
    for (key, value) in entries {
        if key != "mcpServers" {
            cx.warn(key, "ignored (a Continue setting, not an MCP server's)");
            continue;
        }
        match value {
            Value::Null => {}
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    servers.extend(check_server(cx, i, item));
                }
            }
            other => cx.expected(key, "a list of servers (- name: ...)", other),
        }
    }
    servers
}

fn check_server(cx: &mut Checker<'_>, index: usize, value: &Value) -> Option<Entry> {
    let place = index_path("mcpServers", index);
    let entries = cx.table(value, &place)?;
    if entries.iter().any(|(key, _)| key == "uses") {
        skipped(
            cx,
            "mcpServers",
            index,
            "a block from Continue's hub, which toolgate cannot fetch",
        );
        return None;
    }
    let name = match entries.iter().find(|(key, _)| key == "name") {
        None => {
            cx.error(&place, "missing `name`");
            None
        }
        Some((_, value)) => {
            let at = key_path(&place, "name");
            cx.string(&text(value), &at)
                .map(str::to_owned)
                .and_then(|n| server_name_from(cx, &n, &at))
        }
    };
    let path = name.as_deref().map_or_else(|| place.clone(), |name| key_path("mcpServers", name));
    let at = |key: &str| key_path(&path, key);
    let mut fields = cx.known_keys(entries, &path, SERVER_KEYS);
    fields.retain(|_, value| **value != Value::Null);
    for key in LABELS.iter().filter(|key| fields.contains_key(*key)) {
        cx.warn(&at(key), "ignored (client-only setting)");
    }
    let mode = cx.mode(&path, &fields, STDIO_KEYS, HTTP_KEYS);
    let transport = optional(fields.get("type").copied(), |v| check_type(cx, v, &at("type"), mode));
    let stdio_ok = mode != Some(ServerKind::Http);
    let http_ok = mode != Some(ServerKind::Stdio);
    let field = |key: &str, wanted: bool| fields.get(key).copied().filter(|_| wanted);

    let command = field("command", true).map(|v| cx.command(&text(v), &at("command")));
    let args = optional(field("args", stdio_ok), |v| cx.args(&texts(v), &at("args")));
    let env = optional(field("env", stdio_ok), |v| cx.env_vars(&texts(v), &at("env")));
    let cwd = optional(field("cwd", stdio_ok), |v| cx.cwd(&text(v), &at("cwd")));
    let url = field("url", true).map(|v| cx.url(&text(v), &at("url")));
    let api_key = optional(field("apiKey", http_ok), |v| {
        let token = cx.string(&text(v), &at("apiKey")).map(str::to_owned)?;
        bearer(cx, &token, &at("apiKey"))
    });
    let headers = optional(field("requestOptions", http_ok), |v| {
        request_options(cx, v, &at("requestOptions"))
    });
    let startup = optional(fields.get("connectionTimeout").copied(), |v| {
        millis(cx, v, &at("connectionTimeout"))
    });

    let transport = match mode? {
        ServerKind::Stdio => {
            stdio(command??, args?.unwrap_or_default(), env?.unwrap_or_default(), Vec::new(), cwd?)
        }
        ServerKind::Http => {
            let mut headers = headers?.unwrap_or_default();
            if let Some(token) = api_key? {
                add_authorization(cx, &mut headers, token, &at("apiKey"));
            }
            http(url??, transport?.flatten().unwrap_or_default(), headers)
        }
    };
    let name = name?;
    let prefix = cx.default_prefix(&name, &path);
    let mut server = server(name, prefix, transport);
    server.startup_timeout = startup?.unwrap_or(server.startup_timeout);
    Some(Entry { server, place: cx.place(&path) })
}

/// `type`, which must agree with `command` / `url`. `Some(None)` for `stdio`.
fn check_type(
    cx: &mut Checker<'_>,
    value: &Value,
    path: &str,
    mode: Option<ServerKind>,
) -> Option<Option<HttpTransport>> {
    let (kind, transport) = match cx.string(value, path)? {
        "stdio" => (ServerKind::Stdio, None),
        "sse" => (ServerKind::Http, Some(HttpTransport::Sse)),
        "streamable-http" => (ServerKind::Http, Some(HttpTransport::StreamableHttp)),
        other => {
            cx.error(path, format!("unknown type {other:?} (expected one of: {TYPES})"));
            return None;
        }
    };
    match mode {
        Some(mode) if mode != kind => {
            let needs = if kind == ServerKind::Stdio { "command" } else { "url" };
            cx.error(path, format!("this type needs `{needs}`"));
            None
        }
        _ => Some(transport),
    }
}

/// `requestOptions`: its `headers`; the rest is reported as ignored.
fn request_options(
    cx: &mut Checker<'_>,
    value: &Value,
    path: &str,
) -> Option<std::collections::BTreeMap<String, crate::model::Secret>> {
    let entries = cx.table(value, path)?;
    let fields = cx.known_keys(entries, path, REQUEST_KEYS);
    for key in fields.keys().filter(|key| **key != "headers") {
        let message = match *key {
            "proxy" | "noProxy" => "ignored: toolgate's [proxy] (or HTTPS_PROXY) applies",
            "caBundlePath" | "clientCertificate" => {
                "ignored: write the server in toolgate.toml to give it tls settings"
            }
            "verifySsl" => "ignored: toolgate always verifies the server's certificate",
            _ => "ignored (no such per-server setting in toolgate)",
        };
        cx.warn(&key_path(path, key), message);
    }
    match fields.get("headers") {
        None => Some(Default::default()),
        // A server's credentials are toolgate's secrets toward it: no stdio server inherits them.
        Some(v) => cx.secret(|cx| cx.headers(&texts(v), &key_path(path, "headers"))),
    }
}

#[cfg(test)]
mod tests;
