//! `[llm]`: the OpenAI-compatible endpoint (`/v1/responses`, `/v1/chat/completions`) that
//! `[gateway] llm_api = true` turns on.
//!
//! ```toml
//! [llm]
//! store = "sqlite:state/responses.db"     # or "postgres://user:${PG_PASS}@db/toolgate", or
//!                                         # "state" ([state] backend's), or "off"
//! allowed_server_urls = ["https://mcp.example.com/*"]   # servers a request may name by URL
//! max_tool_calls = 50                     # the most tool calls one response runs
//! store_ttl = "30d"                       # a stored response is gone after this (default 30d)
//! store_max_per_caller = 10000            # a caller's oldest beyond this are dropped (default)
//! max_in_flight = 64                      # responses being made at once; more get 429 (default)
//! max_in_flight_per_caller = 16           # the same for one caller (default)
//!
//! [llm.models.fast]                       # a request's `model: "fast"`
//! provider = "openai"                     # as `[agent] provider`
//! model = "gpt-4.1-mini"
//! base_url = "https://api.openai.com/v1"
//! api_key_env = "OPENAI_API_KEY"          # the variable holding the key, never the key
//! ```
//!
//! Everything is optional. A Postgres URL is a secret (it may hold a password): the variables
//! it interpolates are withheld from servers, as `api_key_env`'s are.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::agent::{check_api_key_env, check_provider};
use crate::check::Checker;
use crate::error::key_path;
use crate::model::Secret;
use crate::value::Value;

const LLM_KEYS: &[&str] = &[
    "store",
    "allowed_server_urls",
    "max_tool_calls",
    "store_ttl",
    "store_max_per_caller",
    "max_in_flight",
    "max_in_flight_per_caller",
    "models",
];
const MODEL_KEYS: &[&str] = &["provider", "model", "base_url", "api_key_env"];
const POOL_KEYS: &[&str] = &["max_connections", "idle_timeout", "warmup"];
const WARMUP_KEYS: &[&str] = &["url", "label", "token", "tenant"];
/// The most `[pool] max_connections` may say.
const MAX_POOL: i64 = 100_000;
/// The most `max_tool_calls` may say.
const MAX_TOOL_CALLS: u32 = 1000;
/// The most `store_max_per_caller` may say.
const MAX_STORED: i64 = 100_000_000;
/// The most `max_in_flight` and `max_in_flight_per_caller` may say.
const MAX_IN_FLIGHT: i64 = 100_000;
/// What `store` accepts, for its error message.
const STORE_FORMS: &str = "expected \"sqlite:PATH\", \"postgres://...\" (or \"postgresql://...\"), \
                           \"state\", or \"off\" (or false)";

/// `[llm]`: the OpenAI-compatible endpoint's settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LlmConfig {
    /// `store`: where stored responses live. `None` = the default (the binary decides: the
    /// shared state when `[state] backend` is Redis or PostgreSQL, else an SQLite file under
    /// the state folder).
    pub store: Option<ResponseStore>,
    /// `allowed_server_urls`: globs of MCP server URLs a request may name in a `server_url`
    /// (default none: only configured servers). Checked to compile as the config's other globs
    /// do (`*` also matches `/`).
    pub allowed_server_urls: Vec<String>,
    /// `max_tool_calls`: most tool calls one response runs (`None`: the endpoint's default).
    pub max_tool_calls: Option<u32>,
    /// `store_ttl`: how long a stored response is kept (`None`: the endpoint's default).
    pub store_ttl: Option<std::time::Duration>,
    /// `store_max_per_caller`: the most responses one caller has stored; each new one drops
    /// that caller's oldest beyond it (`None`: the endpoint's default).
    pub store_max_per_caller: Option<u64>,
    /// `max_in_flight`: the most responses being made at once, streamed ones until they end
    /// even if their client left; a request beyond it is answered 429 (`None`: the default).
    pub max_in_flight: Option<usize>,
    /// `max_in_flight_per_caller`: the same bound for one caller (`None`: the default).
    pub max_in_flight_per_caller: Option<usize>,
    /// `[llm.models.NAME]`: a request's `model` NAME mapped to a provider and model.
    pub models: BTreeMap<String, LlmModel>,
    /// `[pool]`: the connections to servers requests name by URL.
    pub pool: PoolConfig,
}

/// `[pool]` (smg-mcp's keys): the connections to the servers requests name by `server_url`,
/// one per server, credentials and tenant.
///
/// ```toml
/// [pool]
/// max_connections = 200          # least recently used closed first (default 200)
/// idle_timeout = "5m"            # closed after this long unused (default 5m)
/// warmup = [{ url = "https://mcp.example.com/mcp", label = "docs", token = "${DOCS_TOKEN}", tenant = "acme" }]
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PoolConfig {
    /// `max_connections` (`None`: the gateway's default).
    pub max_connections: Option<usize>,
    /// `idle_timeout` (`None`: the gateway's default).
    pub idle_timeout: Option<std::time::Duration>,
    /// `warmup`: connected when the gateway starts.
    pub warmup: Vec<Warmup>,
}

/// One `[pool] warmup` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Warmup {
    /// The server's URL.
    pub url: url::Url,
    /// Its label (a request's `server_label`).
    pub label: String,
    /// The bearer token sent to it.
    pub token: Option<Secret>,
    /// Whose connection it is: the tenant whose callers use it (a connection is never shared
    /// across tenants).
    pub tenant: Option<String>,
}

/// `[llm] store`: where stored responses live.
#[derive(Debug, Clone, PartialEq)]
pub enum ResponseStore {
    /// `"sqlite:PATH"`: an SQLite file, resolved against the config file's directory (`~/`
    /// is the home directory).
    Sqlite(PathBuf),
    /// `"postgres://..."` or `"postgresql://..."`: the whole URL, which may hold a password.
    Postgres(Secret),
    /// `"state"`: in what `[state] backend` names, which replicas behind one load balancer
    /// share (Redis or PostgreSQL); with the `memory` backend, this process's memory, gone
    /// with it. Responses are kept at most 30 days there, whatever `store_ttl` says.
    State,
    /// `"off"` or `false`: nothing is stored (requests with `store: true` are refused).
    Off,
}

/// `[llm.models.NAME]`: each field `None` when not written.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LlmModel {
    /// One of [`AGENT_PROVIDERS`](crate::AGENT_PROVIDERS).
    pub provider: Option<String>,
    /// The provider's name for the model.
    pub model: Option<String>,
    /// The API's base URL.
    pub base_url: Option<url::Url>,
    /// The name of the variable that holds the API key.
    pub api_key_env: Option<String>,
}

/// `[llm]`. `None` when something in it has a problem (the checker has it).
pub(crate) fn check_llm(cx: &mut Checker<'_>, value: &Value) -> Option<LlmConfig> {
    let entries = cx.table(value, "llm")?;
    let fields = cx.known_keys(entries, "llm", LLM_KEYS);
    let mut llm = LlmConfig::default();
    let mut ok = true;
    if let Some(value) = fields.get("store") {
        match store(cx, value, "llm.store") {
            Some(store) => llm.store = Some(store),
            None => ok = false,
        }
    }
    if let Some(value) = fields.get("allowed_server_urls") {
        match cx.globs(value, "llm.allowed_server_urls") {
            Some(globs) => llm.allowed_server_urls = globs,
            None => ok = false,
        }
    }
    match count(
        cx,
        fields.get("max_tool_calls").copied(),
        "llm.max_tool_calls",
        MAX_TOOL_CALLS.into(),
    ) {
        Ok(most) => llm.max_tool_calls = most.map(|n| n as u32),
        Err(()) => ok = false,
    }
    if let Some(value) = fields.get("store_ttl") {
        match cx.duration(value, "llm.store_ttl").and_then(|d| cx.positive(d, "llm.store_ttl")) {
            Some(ttl) => llm.store_ttl = Some(ttl),
            None => ok = false,
        }
    }
    let stored = count(
        cx,
        fields.get("store_max_per_caller").copied(),
        "llm.store_max_per_caller",
        MAX_STORED,
    );
    let in_flight =
        count(cx, fields.get("max_in_flight").copied(), "llm.max_in_flight", MAX_IN_FLIGHT);
    let per_caller = count(
        cx,
        fields.get("max_in_flight_per_caller").copied(),
        "llm.max_in_flight_per_caller",
        MAX_IN_FLIGHT,
    );
    match (stored, in_flight, per_caller) {
        (Ok(stored), Ok(in_flight), Ok(per_caller)) => {
            llm.store_max_per_caller = stored.map(|n| n as u64);
            llm.max_in_flight = in_flight.map(|n| n as usize);
            llm.max_in_flight_per_caller = per_caller.map(|n| n as usize);
        }
        _ => ok = false,
    }
    if let Some(value) = fields.get("models") {
        match cx.table(value, "llm.models") {
            Some(models) => {
                for (name, value) in models {
                    match model(cx, name, value) {
                        Some(model) => {
                            llm.models.insert(name.clone(), model);
                        }
                        None => ok = false,
                    }
                }
            }
            None => ok = false,
        }
    }
    ok.then_some(llm)
}

/// A count from 1 to `most` at `path`, if written; `Err` when it is something else (the checker
/// has it).
fn count(
    cx: &mut Checker<'_>,
    value: Option<&Value>,
    path: &str,
    most: i64,
) -> Result<Option<i64>, ()> {
    match value {
        None => Ok(None),
        Some(Value::Integer(n)) if (1..=most).contains(n) => Ok(Some(*n)),
        Some(Value::Integer(n)) => {
            cx.error(path, format!("{n} is out of range (1 to {most})"));
            Err(())
        }
        Some(other) => {
            cx.expected(path, "a positive integer", other);
            Err(())
        }
    }
}

/// `store`: `"sqlite:PATH"`, a Postgres URL, `"state"`, `"off"` or `false`.
fn store(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<ResponseStore> {
    let text = match value {
        Value::Boolean(false) => return Some(ResponseStore::Off),
        Value::Boolean(true) => {
            cx.error(path, format!("{STORE_FORMS}; leave it out for the default SQLite file"));
            return None;
        }
        Value::String(text) => text,
        other => {
            cx.expected(path, "a string or false", other);
            return None;
        }
    };
    if text == "off" {
        return Some(ResponseStore::Off);
    }
    if text == "state" {
        return Some(ResponseStore::State);
    }
    // A file's name is no secret: its variables (`${HOME}`) stay the servers' to inherit.
    if let Some(file) = sqlite_file(text) {
        let file = cx.interpolate(file, path)?;
        return sqlite(cx, &file, path);
    }
    // Anything else may be a database URL with a password (or a variable holding one).
    let text = cx.secret(|cx| cx.interpolate(text, path))?;
    if text == "off" {
        return Some(ResponseStore::Off);
    }
    if text == "state" {
        return Some(ResponseStore::State);
    }
    if let Some(file) = sqlite_file(&text) {
        return sqlite(cx, file, path);
    }
    if !(text.starts_with("postgres://") || text.starts_with("postgresql://")) {
        // Not quoted: it may be a URL with a password.
        cx.error(path, STORE_FORMS);
        return None;
    }
    match url::Url::parse(&text) {
        Ok(_) => Some(ResponseStore::Postgres(Secret::new(text))),
        Err(error) => {
            cx.error(path, format!("invalid Postgres URL: {error}"));
            None
        }
    }
}

/// The file of `sqlite:FILE` or `sqlite://FILE` (so `sqlite:///abs` is `/abs`, as sqlx reads
/// it).
fn sqlite_file(text: &str) -> Option<&str> {
    text.strip_prefix("sqlite://").or_else(|| text.strip_prefix("sqlite:"))
}

fn sqlite(cx: &mut Checker<'_>, file: &str, path: &str) -> Option<ResponseStore> {
    if file.is_empty() {
        cx.error(path, "no file after \"sqlite:\" (such as \"sqlite:state/responses.db\")");
        return None;
    }
    if file.starts_with(':') {
        cx.error(path, "an in-memory database keeps nothing: name a file, or say \"off\"");
        return None;
    }
    Some(ResponseStore::Sqlite(cx.resolve_path(file)))
}

/// `[pool]`. `None` when something in it has a problem (the checker has it).
pub(crate) fn check_pool(cx: &mut Checker<'_>, value: &Value) -> Option<PoolConfig> {
    let entries = cx.table(value, "pool")?;
    let fields = cx.known_keys(entries, "pool", POOL_KEYS);
    let mut pool = PoolConfig::default();
    let mut ok = true;
    match count(cx, fields.get("max_connections").copied(), "pool.max_connections", MAX_POOL) {
        Ok(most) => pool.max_connections = most.map(|n| n as usize),
        Err(()) => ok = false,
    }
    if let Some(value) = fields.get("idle_timeout") {
        match cx
            .duration(value, "pool.idle_timeout")
            .and_then(|d| cx.positive(d, "pool.idle_timeout"))
        {
            Some(idle) => pool.idle_timeout = Some(idle),
            None => ok = false,
        }
    }
    if let Some(value) = fields.get("warmup") {
        match value {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    match warmup(cx, item, &format!("pool.warmup[{i}]")) {
                        Some(entry) => pool.warmup.push(entry),
                        None => ok = false,
                    }
                }
            }
            other => {
                cx.expected("pool.warmup", "an array of {url, label, token, tenant}", other);
                ok = false;
            }
        }
    }
    ok.then_some(pool)
}

fn warmup(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<Warmup> {
    let entries = cx.table(value, path)?;
    let fields = cx.known_keys(entries, path, WARMUP_KEYS);
    let at = |key: &str| key_path(path, key);
    let Some(url_value) = fields.get("url") else {
        cx.error(&at("url"), "is required");
        return None;
    };
    let url = cx.url(url_value, &at("url"))?;
    let label = match fields.get("label") {
        Some(value) => cx.string(value, &at("label"))?.to_owned(),
        None => {
            cx.error(&at("label"), "is required (the server_label requests name it by)");
            return None;
        }
    };
    let token = match fields.get("token") {
        Some(value) => {
            let text = cx.string(value, &at("token"))?.to_owned();
            Some(Secret::new(cx.secret(|cx| cx.interpolate(&text, &at("token")))?))
        }
        None => None,
    };
    let tenant = match fields.get("tenant") {
        Some(value) => Some(cx.string(value, &at("tenant"))?.to_owned()),
        None => None,
    };
    Some(Warmup { url, label, token, tenant })
}

/// `[llm.models.NAME]`.
fn model(cx: &mut Checker<'_>, name: &str, value: &Value) -> Option<LlmModel> {
    let path = key_path("llm.models", name);
    let mut ok = true;
    if name.is_empty() {
        cx.error(&path, "a model's name must not be empty");
        ok = false;
    }
    let entries = cx.table(value, &path)?;
    let fields = cx.known_keys(entries, &path, MODEL_KEYS);
    let at = |key: &str| key_path(&path, key);
    let mut model = LlmModel::default();
    if let Some(value) = fields.get("provider") {
        match check_provider(cx, value, &at("provider")) {
            Some(provider) => model.provider = Some(provider),
            None => ok = false,
        }
    }
    if let Some(value) = fields.get("model") {
        match cx.interpolated_string(value, &at("model")) {
            Some(text) if text.is_empty() => {
                cx.error(&at("model"), "must not be empty");
                ok = false;
            }
            Some(text) => model.model = Some(text),
            None => ok = false,
        }
    }
    if let Some(value) = fields.get("base_url") {
        match cx.url(value, &at("base_url")) {
            Some(url) => model.base_url = Some(url),
            None => ok = false,
        }
    }
    if let Some(value) = fields.get("api_key_env") {
        match check_api_key_env(cx, value, &at("api_key_env")) {
            Some(name) => model.api_key_env = Some(name),
            None => ok = false,
        }
    }
    ok.then_some(model)
}

#[cfg(test)]
mod tests;
