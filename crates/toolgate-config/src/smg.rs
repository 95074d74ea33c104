//! smg-mcp's `mcp.yaml` as a whole `--config` file: the MCP layer of the Shepherd Model
//! Gateway (lightseekorg/smg), read as its `McpConfig` documents it and mapped onto toolgate's
//! own settings.
//!
//! | smg-mcp | toolgate |
//! |---|---|
//! | `servers[i]` with `name` | `[servers.NAME]` |
//! | `protocol: stdio`, `command`, `args`, `envs` | `command`, `args`, `env` |
//! | `protocol: sse` / `streamable`, `url`, `headers` | `url`, `transport = "sse"` / `"streamable-http"`, `headers` |
//! | `token` | `headers.Authorization = "Bearer ..."` (a `headers` entry wins, as in smg-mcp) |
//! | `required` | `required` |
//! | `proxy` (`http`, `https`, `no_proxy`, `username`, `password`), global and per server | `[proxy]`, a server's `proxy` |
//! | `tools.T.response_format` | `response_format` (`passthrough`: none) |
//! | `tools.T.alias`, `tools.T.arg_mapping.renames` / `defaults` | one `arg_map` pipeline entry |
//! | `policy` | one `policy` pipeline entry (`smg/policy.rs`) |
//!
//! What toolgate cannot do yet is reported at its path: a warning when ignoring it weakens
//! nothing (`pool`, `inventory`, `warmup`, `internal`, `builtin_type`), an error when it would
//! (`arg_mapping.overrides`, a policy it cannot express). Keys smg-mcp does not know are errors,
//! as in `toolgate.toml`. Where smg-mcp reads text, a number or boolean is read as its text
//! (`PORT: 8080`), as serde does; `${VAR}` is expanded as in `toolgate.toml`.

use std::collections::BTreeMap;

use serde_json::{Map, Value as Json};
use toolgate_core::ResultFormat;

use crate::check::{Checker, Entry, is_header_value, optional};
use crate::egress::{no_proxy_entry, proxy_url};
use crate::error::{index_path, key_path};
use crate::model::{
    HttpConfig, HttpTransport, InterceptorConfig, ProxyChoice, ProxyConfig, Secret, ServerConfig,
    StdioConfig, TransportConfig,
};
use crate::value::{Value, text, texts};

mod policy;

const TOP_KEYS: &[&str] = &["servers", "pool", "proxy", "warmup", "inventory", "policy"];
const SERVER_KEYS: &[&str] = &[
    "name",
    "protocol",
    "command",
    "args",
    "envs",
    "url",
    "token",
    "headers",
    "proxy",
    "required",
    "tools",
    "builtin_type",
    "builtin_tool_name",
    "internal",
];
const STDIO_KEYS: &[&str] = &["command", "args", "envs"];
const HTTP_KEYS: &[&str] = &["url", "token", "headers"];
const TOOL_KEYS: &[&str] = &["alias", "response_format", "arg_mapping"];
const ARG_MAPPING_KEYS: &[&str] = &["renames", "defaults", "overrides"];
const PROXY_KEYS: &[&str] = &["http", "https", "no_proxy", "username", "password"];
const POOL_KEYS: &[&str] = &["max_connections", "idle_timeout"];
const INVENTORY_KEYS: &[&str] =
    &["enable_refresh", "tool_ttl", "refresh_interval", "refresh_on_error"];
const WARMUP_KEYS: &[&str] = &["url", "label", "token"];
const BUILTIN_TYPES: &[&str] =
    &["web_search_preview", "code_interpreter", "file_search", "image_generation"];

/// What an `mcp.yaml` holds, once mapped. Parts that failed are left out; the checker has the
/// errors.
#[derive(Debug, Default)]
pub(crate) struct Document {
    pub(crate) servers: Vec<Entry>,
    /// The `policy` entry, then the `arg_map` entry when some tool has an alias or a mapping.
    pub(crate) pipeline: Vec<InterceptorConfig>,
    /// The global `proxy`, when it names a proxy.
    pub(crate) proxy: Option<ProxyConfig>,
    /// `pool`: the bounds on the connections to servers requests name by URL.
    pub(crate) pool: crate::llm::PoolConfig,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    Stdio,
    Sse,
    Streamable,
}

/// Checks and maps a whole `mcp.yaml` document.
pub(crate) fn check(cx: &mut Checker<'_>, root: &Value) -> Document {
    let mut document = Document::default();
    let Value::Table(entries) = root else {
        cx.expected("", "a mapping at the top level", root);
        return document;
    };
    let fields = cx.known_keys(entries, "", TOP_KEYS);
    if let Some(value) = fields.get("proxy") {
        document.proxy = proxy_table(cx, value, "proxy").flatten();
    }
    let mut maps = ArgMaps::default();
    let mut names = Vec::new();
    match fields.get("servers") {
        None => cx.warn("", "no servers: no servers defined"),
        Some(Value::Array(items)) => {
            names = items.iter().filter_map(name_of).collect();
            for (i, item) in items.iter().enumerate() {
                document.servers.extend(check_server(cx, i, item, &mut maps));
            }
        }
        Some(other) => cx.expected("servers", "a list of servers (- name: ...)", other),
    }
    let policy = fields.get("policy").copied().filter(|value| **value != Value::Null);
    document.pipeline.extend(policy::check(cx, policy, &names));
    document.pipeline.extend(maps.finish(cx));
    if let Some(value) = fields.get("pool") {
        document.pool = pool(cx, value);
    }
    if let Some(value) = fields.get("inventory") {
        let refresh = inventory(cx, value);
        for entry in &mut document.servers {
            entry.server.refresh = refresh;
        }
    }
    if let Some(value) = fields.get("warmup") {
        let why = "toolgate keeps a connection per tenant, and an mcp.yaml names none: write \
                   [pool] warmup entries with a tenant in toolgate.toml";
        warmup(cx, value, why);
    }
    document
}

/// The `name` of a server entry, when it is text.
fn name_of(item: &Value) -> Option<String> {
    let Value::Table(entries) = item else { return None };
    match entries.iter().find(|(key, _)| key == "name").map(|(_, value)| text(value)) {
        Some(Value::String(name)) => Some(name),
        _ => None,
    }
}

fn check_server(
    cx: &mut Checker<'_>,
    index: usize,
    value: &Value,
    maps: &mut ArgMaps,
) -> Option<Entry> {
    let place = index_path("servers", index);
    let entries = cx.table(value, &place)?;
    let name = match entries.iter().find(|(key, _)| key == "name") {
        None => {
            cx.error(&place, "missing `name`");
            None
        }
        Some((_, value)) => cx.string(&text(value), &key_path(&place, "name")).map(str::to_owned),
    };
    let path = name.as_deref().map_or_else(|| place.clone(), |name| key_path("servers", name));
    let at = |key: &str| key_path(&path, key);
    let name_ok = name.as_deref().is_some_and(|name| cx.server_name(name, &path));
    let mut fields = cx.known_keys(entries, &path, SERVER_KEYS);
    // serde reads a null as "not written" for every optional field; `proxy: null` says more.
    fields.retain(|key, value| **value != Value::Null || *key == "proxy");

    let protocol = match fields.get("protocol") {
        None => {
            cx.error(&path, "missing `protocol` (stdio, sse or streamable)");
            None
        }
        Some(value) => check_protocol(cx, value, &at("protocol")),
    };
    let (stdio, http) = match protocol {
        Some(Protocol::Stdio) => (true, false),
        Some(_) => (false, true),
        None => (false, false),
    };
    if let Some(protocol) = protocol {
        let (misplaced, wanted) =
            if stdio { (HTTP_KEYS, "sse or streamable") } else { (STDIO_KEYS, "stdio") };
        let name = protocol.as_str();
        for key in misplaced.iter().filter(|key| fields.contains_key(*key)) {
            cx.error(&at(key), format!("only for protocol {wanted} (this server's is {name})"));
        }
        let needed = if stdio { "command" } else { "url" };
        if !fields.contains_key(needed) {
            cx.error(&path, format!("protocol {name} needs `{needed}`"));
        }
    }
    let field = |key: &str, wanted: bool| fields.get(key).copied().filter(|_| wanted);
    let command = field("command", stdio).map(|v| cx.command(&text(v), &at("command")));
    let args = optional(field("args", stdio), |v| cx.args(&texts(v), &at("args")));
    let env = optional(field("envs", stdio), |v| cx.env_vars(&texts(v), &at("envs")));
    let url = field("url", http).map(|v| cx.url(&text(v), &at("url")));
    // A server's credentials are toolgate's secrets toward it: no stdio server inherits the
    // variables they come from.
    let headers =
        optional(field("headers", http), |v| cx.secret(|cx| cx.headers(&texts(v), &at("headers"))));
    let token = optional(field("token", http), |v| token(cx, &text(v), &at("token")));
    let proxy = match fields.get("proxy") {
        Some(_) if stdio => {
            cx.warn(&at("proxy"), "ignored: a stdio server makes no HTTP requests");
            Some(None)
        }
        value => optional(value.copied(), |v| server_proxy(cx, v, &at("proxy"))),
    };
    let required = optional(fields.get("required").copied(), |v| cx.boolean(v, &at("required")));
    if let Some(value) = fields.get("internal")
        && cx.boolean(value, &at("internal")) == Some(true)
    {
        cx.warn(
            &at("internal"),
            "not understood by toolgate yet: this server's tools are shown to clients like any \
             other's",
        );
    }
    builtin(cx, &fields, &at);
    let prefix = name.as_deref().map(|name| cx.default_prefix(name, &path));
    let formats = optional(fields.get("tools").copied(), |v| {
        check_tools(cx, v, &at("tools"), prefix.as_deref(), maps)
    });

    let headers = match (headers, token) {
        (Some(headers), Some(token)) => {
            let mut headers = headers.unwrap_or_default();
            if let Some(token) = token {
                match headers.keys().find(|key| key.eq_ignore_ascii_case("authorization")) {
                    Some(key) => cx.warn(
                        &at("token"),
                        format_args!("ignored: headers.{key} is sent instead, as in smg-mcp"),
                    ),
                    None => {
                        headers.insert("Authorization".to_owned(), token);
                    }
                }
            }
            Some(headers)
        }
        _ => None,
    };
    let transport = match protocol? {
        Protocol::Stdio => TransportConfig::Stdio(StdioConfig {
            command: command??,
            args: args?.unwrap_or_default(),
            env: env?.unwrap_or_default(),
            env_pass: Vec::new(),
            env_remove: Vec::new(),
            cwd: None,
            // Filled in once the whole document is read (`load::withhold`).
            withheld: Default::default(),
        }),
        http => TransportConfig::Http(HttpConfig {
            url: url??,
            transport: match http {
                Protocol::Sse => HttpTransport::Sse,
                _ => HttpTransport::StreamableHttp,
            },
            headers: headers?,
            pool: true,
            oauth: Default::default(),
            // The global proxy applies when the server has none of its own (`load`).
            proxy: proxy?.unwrap_or_default(),
            tls: Default::default(),
        }),
    };
    let server = ServerConfig {
        prefix: prefix?,
        required: required?.unwrap_or(false),
        response_format: formats?.unwrap_or_default(),
        ..ServerConfig::new(name.filter(|_| name_ok)?, transport)
    };
    Some(Entry { server, place: cx.place(&place) })
}

impl Protocol {
    fn as_str(self) -> &'static str {
        match self {
            Protocol::Stdio => "stdio",
            Protocol::Sse => "sse",
            Protocol::Streamable => "streamable",
        }
    }
}

fn check_protocol(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<Protocol> {
    match cx.string(value, path)? {
        "stdio" => Some(Protocol::Stdio),
        "sse" => Some(Protocol::Sse),
        "streamable" => Some(Protocol::Streamable),
        other => {
            cx.error(
                path,
                format!("unknown protocol {other:?} (expected stdio, sse or streamable)"),
            );
            None
        }
    }
}

/// `token`: the value of an `Authorization: Bearer` header, a secret.
fn token(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<Secret> {
    let token = cx.string(value, path)?;
    let token = cx.secret(|cx| cx.interpolate(token, path))?;
    let header = format!("Bearer {}", token.trim());
    if token.trim().is_empty() {
        cx.error(path, "is empty");
        return None;
    }
    if !is_header_value(&header) {
        cx.error(path, "invalid token (contains a control character)");
        return None;
    }
    Some(Secret::new(header))
}

/// `builtin_type` and `builtin_tool_name`: checked, then reported as not mapped.
fn builtin(cx: &mut Checker<'_>, fields: &BTreeMap<&str, &Value>, at: &dyn Fn(&str) -> String) {
    if let Some(value) = fields.get("builtin_type")
        && let Some(kind) = cx.string(value, &at("builtin_type"))
    {
        if BUILTIN_TYPES.contains(&kind) {
            cx.warn(
                &at("builtin_type"),
                "not understood by toolgate yet: requests' built-in tools are not routed to MCP \
                 servers",
            );
        } else {
            let known = BUILTIN_TYPES.join(", ");
            cx.error(
                &at("builtin_type"),
                format!("unknown builtin_type {kind:?} (expected one of: {known})"),
            );
        }
    }
    if let Some(value) = fields.get("builtin_tool_name")
        && cx.string(&text(value), &at("builtin_tool_name")).is_some()
    {
        cx.warn(&at("builtin_tool_name"), "not understood by toolgate yet (see builtin_type)");
    }
}

// === tools: response formats and the arg_map entry ===

/// One tool's `alias` and `arg_mapping`, under its exposed name.
#[derive(Debug)]
struct ToolMap {
    exposed: String,
    alias: Option<(String, String)>,
    rename: Vec<(String, String)>,
    defaults: Vec<(String, Json)>,
}

/// The `arg_map` entry being built from every server's `tools`.
#[derive(Debug, Default)]
struct ArgMaps {
    tools: Vec<ToolMap>,
}

impl ArgMaps {
    /// The `arg_map` entry, when some tool has something to map and no alias clashes.
    fn finish(self, cx: &mut Checker<'_>) -> Option<InterceptorConfig> {
        let before = cx.error_count();
        let mut aliases = BTreeMap::<&str, &str>::new();
        let mut map = Map::new();
        for tool in &self.tools {
            if let Some((alias, path)) = &tool.alias {
                if self.tools.iter().any(|other| other.exposed == *alias) {
                    cx.error(path, format!("{alias:?} is the name of another mapped tool"));
                } else if let Some(first) = aliases.insert(alias, path) {
                    cx.error(path, format!("{alias:?} is already the alias at {first}"));
                }
            }
            let mut entry = Map::new();
            if let Some((alias, _)) = &tool.alias {
                // smg-mcp lists the alias instead of the tool.
                entry.insert("alias".into(), alias.clone().into());
                entry.insert("hide_original".into(), true.into());
            }
            if !tool.rename.is_empty() {
                let rename = tool.rename.iter().map(|(from, to)| (from.clone(), to.clone().into()));
                entry.insert("rename".into(), Json::Object(rename.collect()));
            }
            if !tool.defaults.is_empty() {
                entry.insert(
                    "defaults".into(),
                    Json::Object(tool.defaults.iter().cloned().collect()),
                );
            }
            map.insert(tool.exposed.clone(), entry.into());
        }
        if map.is_empty() || cx.error_count() != before {
            return None;
        }
        let options = Map::from_iter([("map".to_owned(), Json::Object(map))]);
        Some(InterceptorConfig::new("servers.*.tools", "arg_map", options))
    }
}

/// A server's `tools`: its response formats, and what goes into the `arg_map` entry. `prefix`
/// is `None` when the server's name is unknown (its tools are still checked).
fn check_tools(
    cx: &mut Checker<'_>,
    value: &Value,
    path: &str,
    prefix: Option<&str>,
    maps: &mut ArgMaps,
) -> Option<Vec<(String, ResultFormat)>> {
    let entries = cx.table(value, path)?;
    let before = cx.error_count();
    let mut formats = Vec::new();
    for (tool, value) in entries {
        let at = key_path(path, tool);
        let Some(table) = cx.table(value, &at) else { continue };
        let mut fields = cx.known_keys(table, &at, TOOL_KEYS);
        fields.retain(|_, value| **value != Value::Null);
        if let Some(value) = fields.get("response_format")
            && let Some(Some(format)) =
                response_format(cx, value, &key_path(&at, "response_format"))
        {
            // A literal name, not a glob.
            formats.push((globset::escape(tool), format));
        }
        let alias_path = key_path(&at, "alias");
        let alias = optional(fields.get("alias").copied(), |v| alias(cx, &text(v), &alias_path));
        let mapping = optional(fields.get("arg_mapping").copied(), |v| {
            arg_mapping(cx, v, &key_path(&at, "arg_mapping"))
        });
        if let (Some(alias), Some(mapping), Some(prefix)) = (alias, mapping, prefix) {
            let (rename, defaults) = mapping.unwrap_or_default();
            if alias.is_some() || !rename.is_empty() || !defaults.is_empty() {
                maps.tools.push(ToolMap {
                    exposed: toolgate_core::name::exposed_name(prefix, tool),
                    alias: alias.map(|alias| (alias, cx.place(&alias_path))),
                    rename,
                    defaults,
                });
            }
        }
    }
    (cx.error_count() == before).then_some(formats)
}

/// A tool's `response_format`; `Some(None)` for `passthrough` (toolgate's default) and for
/// what toolgate cannot make (reported).
fn response_format(
    cx: &mut Checker<'_>,
    value: &Value,
    path: &str,
) -> Option<Option<ResultFormat>> {
    match cx.string(value, path)? {
        "passthrough" => Some(None),
        "web_search_call" => Some(Some(ResultFormat::WebSearchCall)),
        "file_search_call" => Some(Some(ResultFormat::FileSearchCall)),
        "code_interpreter_call" => Some(Some(ResultFormat::CodeInterpreterCall)),
        "image_generation_call" => {
            cx.warn(
                path,
                "not understood by toolgate yet: it makes no image_generation_call items, so \
                 this tool's results stay mcp_call items",
            );
            Some(None)
        }
        other => {
            cx.error(
                path,
                format!(
                    "unknown response_format {other:?} (expected passthrough, web_search_call, \
                     file_search_call, code_interpreter_call or image_generation_call)"
                ),
            );
            None
        }
    }
}

fn alias(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<String> {
    let alias = cx.string(value, path)?;
    if !toolgate_core::name::is_valid_exposed(alias) {
        cx.error(
            path,
            format!("{alias:?} is not a tool name toolgate can offer (1 to 64 of a-z, A-Z, 0-9, _ and -)"),
        );
        return None;
    }
    Some(alias.to_owned())
}

/// `arg_mapping`: `renames` (the model's name to the server's) and `defaults` (by the server's
/// name). `overrides` cannot be mapped, and leaving them out would let the model choose values
/// the config forces: an error.
#[allow(clippy::type_complexity)]
fn arg_mapping(
    cx: &mut Checker<'_>,
    value: &Value,
    path: &str,
) -> Option<(Vec<(String, String)>, Vec<(String, Json)>)> {
    let entries = cx.table(value, path)?;
    let before = cx.error_count();
    let mut fields = cx.known_keys(entries, path, ARG_MAPPING_KEYS);
    fields.retain(|_, value| **value != Value::Null);
    let mut rename: Vec<(String, String)> = Vec::new();
    if let Some(value) = fields.get("renames")
        && let Some(renames) = cx.string_table(&texts(value), &key_path(path, "renames"))
    {
        for (from, to) in &renames {
            let at = key_path(&key_path(path, "renames"), from);
            if from == to {
                cx.warn(&at, "renames an argument to itself: ignored");
            } else if to.is_empty() {
                cx.error(&at, "the server's argument name is empty");
            } else if let Some((first, _)) = rename.iter().find(|(_, target)| target == to) {
                cx.error(&at, format!("{to:?} is already the target of renames.{first}"));
            } else if renames.iter().any(|(other, _)| other == to) {
                cx.error(
                    &at,
                    format!("{to:?} is itself renamed; toolgate does not chain or swap names"),
                );
            } else {
                rename.push(((*from).to_owned(), (*to).to_owned()));
            }
        }
    }
    let mut defaults = Vec::new();
    if let Some(value) = fields.get("defaults")
        && let Some(table) = cx.table(value, &key_path(path, "defaults"))
    {
        for (name, value) in table {
            if let Some((_, to)) = rename.iter().find(|(from, _)| from == name) {
                cx.error(
                    &key_path(&key_path(path, "defaults"), name),
                    format!(
                        "{name:?} is the model's name (renamed to {to:?}); toolgate keys \
                         defaults by the server's name"
                    ),
                );
            } else {
                defaults.push((name.clone(), value.to_json()));
            }
        }
    }
    if let Some(value) = fields.get("overrides")
        && let Some(table) = cx.table(value, &key_path(path, "overrides"))
        && !table.is_empty()
    {
        cx.error(
            &key_path(path, "overrides"),
            "not understood by toolgate yet: it cannot force an argument's value, and ignoring \
             overrides would let the model choose them",
        );
    }
    (cx.error_count() == before).then_some((rename, defaults))
}

// === proxy, pool, inventory, warmup ===

/// A server's `proxy`: `null` goes direct, as smg-mcp documents it.
fn server_proxy(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<ProxyChoice> {
    if *value == Value::Null {
        cx.warn(
            path,
            "null: direct, as smg-mcp documents it (smg-mcp itself takes the global proxy here)",
        );
        return Some(ProxyChoice::Direct);
    }
    Some(proxy_table(cx, value, path)?.map_or(ProxyChoice::Environment, ProxyChoice::Via))
}

/// A `proxy` table. `Some(None)` when it names no proxy (null, or neither `http` nor `https`).
fn proxy_table(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<Option<ProxyConfig>> {
    if *value == Value::Null {
        return Some(None);
    }
    let entries = cx.table(value, path)?;
    let mut fields = cx.known_keys(entries, path, PROXY_KEYS);
    fields.retain(|_, value| **value != Value::Null);
    let at = |key: &str| key_path(path, key);
    let username = optional(fields.get("username").copied(), |v| {
        cx.interpolated_string(&text(v), &at("username"))
    });
    let password = optional(fields.get("password").copied(), |v| {
        cx.secret(|cx| cx.interpolated_string(&text(v), &at("password")))
    });
    let http = optional(fields.get("http").copied(), |v| proxy_url(cx, &text(v), &at("http")));
    let https = optional(fields.get("https").copied(), |v| proxy_url(cx, &text(v), &at("https")));
    let no_proxy = optional(fields.get("no_proxy").copied(), |v| no_proxy(cx, v, &at("no_proxy")));
    let credentials = match (username?, password?) {
        (Some(username), Some(password)) => Some((username, password)),
        (None, None) => None,
        _ => {
            cx.warn(
                path,
                "username without password or the other way round: ignored, as smg-mcp does",
            );
            None
        }
    };
    let (http, https) = (http?, https?);
    if http.is_none() && https.is_none() {
        cx.warn(
            path,
            "names no proxy (neither http nor https): the variables HTTP_PROXY, HTTPS_PROXY and \
             NO_PROXY apply, as in smg-mcp",
        );
        return Some(None);
    }
    let sign_in = |proxy: Secret| match &credentials {
        None => proxy,
        Some((username, password)) => {
            let mut url = url::Url::parse(proxy.expose()).expect("a proxy URL that was checked");
            let signed =
                url.set_username(username).is_ok() && url.set_password(Some(password)).is_ok();
            if signed { Secret::new(url.to_string()) } else { proxy }
        }
    };
    Some(Some(ProxyConfig {
        http: http.map(sign_in),
        https: https.map(sign_in),
        no_proxy: no_proxy?.unwrap_or_default(),
    }))
}

/// `no_proxy`: one comma-separated string. `*.domain` is read as `.domain` (the domain's
/// subdomains); an entry toolgate cannot read is left out with a warning (its hosts then go
/// through the proxy, which weakens nothing).
fn no_proxy(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<Vec<String>> {
    let text = cx.string(value, path)?;
    let text = cx.interpolate(text, path)?;
    let mut out = Vec::new();
    for entry in text.split(',').map(str::trim).filter(|entry| !entry.is_empty()) {
        let entry =
            entry.strip_prefix("*.").map_or_else(|| entry.to_owned(), |rest| format!(".{rest}"));
        match no_proxy_entry(&entry) {
            Ok(()) => out.push(entry),
            Err(why) => cx.warn(
                path,
                format_args!("{entry:?} ignored ({why}): those hosts go through the proxy"),
            ),
        }
    }
    Some(out)
}

/// `pool`: `max_connections` and `idle_timeout` (seconds, or a duration such as `"5m"`), the
/// bounds of toolgate's `[pool]`.
fn pool(cx: &mut Checker<'_>, value: &Value) -> crate::llm::PoolConfig {
    let mut pool = crate::llm::PoolConfig::default();
    let Some(entries) = cx.table(value, "pool") else { return pool };
    let fields = cx.known_keys(entries, "pool", POOL_KEYS);
    match fields.get("max_connections") {
        Some(Value::Integer(n)) if *n >= 1 => pool.max_connections = Some(*n as usize),
        Some(other) => cx.expected("pool.max_connections", "a positive integer", other),
        None => {}
    }
    match fields.get("idle_timeout") {
        Some(Value::Integer(secs)) if *secs >= 1 => {
            pool.idle_timeout = Some(std::time::Duration::from_secs(*secs as u64));
        }
        Some(value @ Value::String(_)) => {
            pool.idle_timeout = cx
                .duration(value, "pool.idle_timeout")
                .and_then(|idle| cx.positive(idle, "pool.idle_timeout"));
        }
        Some(other) => cx.expected("pool.idle_timeout", "seconds, or a duration", other),
        None => {}
    }
    pool
}

/// `inventory`: how every server's lists are kept fresh (`tool_ttl` and `refresh_interval` in
/// seconds or as durations, `refresh_on_error`); `enable_refresh: false` turns all of it off.
fn inventory(cx: &mut Checker<'_>, value: &Value) -> crate::model::Refresh {
    let Some(entries) = cx.table(value, "inventory") else { return Default::default() };
    let fields = cx.known_keys(entries, "inventory", INVENTORY_KEYS);
    let enabled = match fields.get("enable_refresh") {
        Some(value) => cx.boolean(value, "inventory.enable_refresh").unwrap_or(true),
        None => true,
    };
    let refresh = crate::inventory::refresh(cx, &fields, "inventory").unwrap_or_default();
    if enabled {
        refresh
    } else {
        let off = Some(std::time::Duration::ZERO);
        crate::model::Refresh { tool_ttl: off, interval: off, on_error: Some(false) }
    }
}

/// `warmup`: servers named by URL that smg-mcp connects at start; reported as not mapped.
fn warmup(cx: &mut Checker<'_>, value: &Value, why: &str) {
    let Value::Array(items) = value else {
        cx.expected("warmup", "a list of servers (- url: ...)", value);
        return;
    };
    for (i, item) in items.iter().enumerate() {
        let at = index_path("warmup", i);
        if let Some(entries) = cx.table(item, &at) {
            cx.known_keys(entries, &at, WARMUP_KEYS);
            cx.warn(&at, format_args!("not mapped yet ({why}): nothing is warmed up"));
        }
    }
}

#[cfg(test)]
mod tests;
